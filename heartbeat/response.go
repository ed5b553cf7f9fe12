package heartbeat

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// StatusCode is a status the broker attaches to a heartbeat answer (KIP-1071; Kafka's
// StreamsGroupHeartbeatResponse.Status).
type StatusCode int8

// Status codes known to this version of the library. Others are passed through as unknown.
const (
	StaleTopology                StatusCode = 0 // the member's topology epoch is older than the group's
	MissingSourceTopics          StatusCode = 1
	IncorrectlyPartitionedTopics StatusCode = 2
	MissingInternalTopics        StatusCode = 3
	ShutdownApplication          StatusCode = 4
	AssignmentDelayed            StatusCode = 5
	MissingClientTags            StatusCode = 6 // Kafka 4.4, v1 answers only
)

// Known reports whether the library knows the code.
func (c StatusCode) Known() bool { return c >= StaleTopology && c <= MissingClientTags }

func (c StatusCode) String() string {
	switch c {
	case StaleTopology:
		return "STALE_TOPOLOGY"
	case MissingSourceTopics:
		return "MISSING_SOURCE_TOPICS"
	case IncorrectlyPartitionedTopics:
		return "INCORRECTLY_PARTITIONED_TOPICS"
	case MissingInternalTopics:
		return "MISSING_INTERNAL_TOPICS"
	case ShutdownApplication:
		return "SHUTDOWN_APPLICATION"
	case AssignmentDelayed:
		return "ASSIGNMENT_DELAYED"
	case MissingClientTags:
		return "MISSING_CLIENT_TAGS"
	}
	return fmt.Sprintf("UNKNOWN_STATUS_%d", int8(c))
}

// BlocksReadiness reports whether the status means the group is not ready to process: its members
// get empty or held-back assignments until it clears.
func (c StatusCode) BlocksReadiness() bool {
	switch c {
	case MissingSourceTopics, MissingInternalTopics, IncorrectlyPartitionedTopics, AssignmentDelayed:
		return true
	}
	return false
}

// Status is one status of an answer with the broker's detail text.
type Status struct {
	Code   StatusCode
	Detail string
}

// Topics pulls topic names out of the broker's detail text, e.g. "Source topics a, b are missing."
// or "Internal topics are missing: a, b; Unauthorized to CREATE on topics a.". It returns nil when
// the text names none.
func (s Status) Topics() []string {
	d := s.Detail
	switch {
	case strings.HasPrefix(d, "Source topics "):
		// "Source topics are missing." names none: cut after the prefix, so the text cannot overlap.
		var ok bool
		if d, _, ok = strings.Cut(strings.TrimPrefix(d, "Source topics "), " are missing"); !ok {
			return nil
		}
	case strings.Contains(d, "are missing:"):
		d = d[strings.Index(d, "are missing:")+len("are missing:"):]
		if i := strings.IndexByte(d, ';'); i >= 0 {
			d = d[:i]
		}
		// Beyond three topics the broker names three and counts the others ("a, b, c and 2
		// additional topics"): the words of the count are no topics.
		d = moreTopics.ReplaceAllString(d, "")
	case s.Code == IncorrectlyPartitionedTopics && strings.HasPrefix(d, "Existing topic "):
		// An internal topic of the wrong size: "Existing topic <t> has different number of
		// partitions: expected 2, found 1" (the words and counts after the colon are no topics).
		d, _, _ = strings.Cut(strings.TrimPrefix(d, "Existing topic "), " ")
	case s.Code == IncorrectlyPartitionedTopics:
		// e.g. "Following topics do not have the same number of partitions: [a, b]"
		if i := strings.IndexByte(d, '['); i >= 0 {
			d = strings.TrimSuffix(strings.TrimSpace(d[i+1:]), "]")
			if j := strings.IndexByte(d, ']'); j >= 0 {
				d = d[:j]
			}
		} else if i := strings.LastIndexByte(d, ':'); i >= 0 {
			d = d[i+1:]
		} else {
			return nil
		}
	default:
		return nil
	}
	return topicNames(d)
}

// moreTopics is the count of topics the broker leaves unnamed in a status detail.
var moreTopics = regexp.MustCompile(`\s+and \d+ additional topics\b`)

// CreateDenied lists the internal topics that the broker may not create for this member, as a
// MISSING_INTERNAL_TOPICS detail names them ("…; Unauthorized to CREATE on topics a, b."): the
// member's principal has CREATE neither on the cluster nor on those topics, and the broker creates
// internal topics as the member's principal. It returns nil for any other status or detail.
func (s Status) CreateDenied() []string {
	_, d, ok := strings.Cut(s.Detail, "Unauthorized to CREATE on topics ")
	if s.Code != MissingInternalTopics || !ok {
		return nil
	}
	if i := strings.IndexByte(d, ';'); i >= 0 {
		d = d[:i]
	}
	return topicNames(d)
}

// topicNames reads a list of topic names separated by commas or spaces, as the broker writes them
// in a status detail (sorted, each once; tokens that cannot be topic names are left out).
func topicNames(d string) []string {
	var out []string
	for _, t := range strings.FieldsFunc(d, func(r rune) bool { return r == ',' || r == ' ' }) {
		t = strings.Trim(t, " .[]{}")
		if t != "" && topology.ValidTopicName(t) == nil {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// EndpointPartitions are the partitions an interactive-query endpoint holds, by role.
type EndpointPartitions struct {
	Active  map[string][]int32
	Standby map[string][]int32 // includes warm-up tasks' partitions
}

// Endpoint is an application.server host and port.
type Endpoint struct {
	Host string
	Port uint16
}

func (e Endpoint) String() string { return fmt.Sprintf("%s:%d", e.Host, e.Port) }

// Response is a successful heartbeat answer, read into typed values.
type Response struct {
	Version  int16
	MemberID string
	Epoch    int32
	Interval time.Duration
	// Assignment is the new target assignment, or nil when unchanged.
	Assignment *tasks.Assignment
	Statuses   []Status // known and unknown codes, in the broker's order
	// EndpointEpoch and Endpoints: the interactive-query map; Endpoints is nil when unchanged.
	EndpointEpoch int32
	Endpoints     map[Endpoint]EndpointPartitions
	// AcceptableRecoveryLag is -1 when the broker does not place warm-ups (before 4.4).
	AcceptableRecoveryLag int64
	// TaskOffsetInterval is 0 when the broker does not take task offsets (before 4.4).
	TaskOffsetInterval          time.Duration
	TopologyDescriptionRequired bool
}

// Has reports whether the answer carries the status.
func (r *Response) Has(c StatusCode) bool {
	return slices.ContainsFunc(r.Statuses, func(s Status) bool { return s.Code == c })
}

// Ready reports whether none of the statuses blocks the group's readiness.
func (r *Response) Ready() bool {
	return !slices.ContainsFunc(r.Statuses, func(s Status) bool { return s.Code.BlocksReadiness() })
}

// ProtocolError is an answer that breaks the protocol's rules; the member cannot act on it.
type ProtocolError struct {
	Reason string
}

func (e *ProtocolError) Error() string {
	return "malformed streams group heartbeat answer: " + e.Reason
}

// ClassifyInto is the one pure entry point for a heartbeat's raw result, as a transport returns it
// (an answer, or an error when there was none): a failure to get an answer is a *TransportError
// (ClassifyTransport), no answer and no error a *ProtocolError, an answer with an error code an
// *Error (ErrorFor), and a successful answer is read into dst (ParseInto). An err that is already
// one of the typed errors of this package is returned as it is, not wrapped again. dst is
// overwritten only by a success, so a caller that reads one answer at a time reuses one Response
// (the member's state machine does, to keep its steady heartbeat free of allocations).
func ClassifyInto(dst *Response, resp *kmsg.StreamsGroupHeartbeatResponse, err error, topo *topology.Topology) error {
	if err != nil {
		if _, ok := errors.AsType[*TransportError](err); ok {
			return err
		}
		if _, ok := errors.AsType[*Error](err); ok {
			return err
		}
		if _, ok := errors.AsType[*ProtocolError](err); ok {
			return err
		}
		return ClassifyTransport(err)
	}
	if resp == nil {
		return &ProtocolError{Reason: "no answer and no error"}
	}
	if resp.ErrorCode != 0 {
		return ErrorFor(resp.ErrorCode, resp.ErrorMessage)
	}
	return ParseInto(dst, resp, topo)
}

// ParseInto reads a heartbeat answer whose error code is 0 into dst, which it overwrites only when
// the answer is valid. A success must carry a member epoch >= 0 and
// a heartbeat interval > 0 (else the member could not pace its next heartbeat), and no negative task
// offset interval. Task lists must come all three or none; partitions, in task lists and in the
// endpoint map, must not be negative; every task must belong to a subtopology of topo (else a
// *tasks.UnknownSubtopologyError). Any other broken rule is a *ProtocolError. Unknown status codes are
// kept, never an error.
//
// An answer to a leave (epoch -1 or -2) carries the leave epoch and is not a success to ParseInto: the
// member does not act on it.
func ParseInto(dst *Response, resp *kmsg.StreamsGroupHeartbeatResponse, topo *topology.Topology) error {
	if resp == nil {
		return &ProtocolError{Reason: "no answer given to ParseInto"}
	}
	if resp.ErrorCode != 0 {
		return &ProtocolError{Reason: fmt.Sprintf("error code %d given to ParseInto", resp.ErrorCode)}
	}
	if resp.MemberEpoch < 0 {
		return &ProtocolError{Reason: fmt.Sprintf("member epoch %d in a successful answer; it must be 0 or more", resp.MemberEpoch)}
	}
	if resp.HeartbeatIntervalMillis <= 0 {
		return &ProtocolError{Reason: fmt.Sprintf("heartbeat interval %d ms in a successful answer; it must be more than 0", resp.HeartbeatIntervalMillis)}
	}
	if resp.TaskOffsetIntervalMillis < 0 {
		return &ProtocolError{Reason: fmt.Sprintf("task offset interval %d ms; it must not be negative", resp.TaskOffsetIntervalMillis)}
	}
	r := Response{
		Version:                     resp.Version,
		MemberID:                    resp.MemberID,
		Epoch:                       resp.MemberEpoch,
		Interval:                    time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond,
		EndpointEpoch:               resp.EndpointInformationEpoch,
		AcceptableRecoveryLag:       -1,
		TaskOffsetInterval:          time.Duration(resp.TaskOffsetIntervalMillis) * time.Millisecond,
		TopologyDescriptionRequired: resp.TopologyDescriptionRequired,
	}
	if resp.Version >= 1 {
		r.AcceptableRecoveryLag = resp.AcceptableRecoveryLag
	}
	for _, s := range resp.Status {
		r.Statuses = append(r.Statuses, Status{Code: StatusCode(s.StatusCode), Detail: s.StatusDetail})
	}
	nulls := 0
	for _, l := range [][]kmsg.TaskIDs{resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks} {
		if l == nil {
			nulls++
		}
	}
	switch nulls {
	case 3:
	case 0:
		a := tasks.Assignment{
			Active:  tasks.FromKmsg(resp.ActiveTasks),
			Standby: tasks.FromKmsg(resp.StandbyTasks),
			Warmup:  tasks.FromKmsg(resp.WarmupTasks),
		}
		for _, l := range [][]kmsg.TaskIDs{resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks} {
			for _, t := range l {
				if slices.ContainsFunc(t.Partitions, func(p int32) bool { return p < 0 }) {
					return &ProtocolError{Reason: fmt.Sprintf("negative partition in subtopology %q", t.SubtopologyID)}
				}
			}
		}
		if err := tasks.CheckKnown(topo, a.All()); err != nil {
			return err
		}
		r.Assignment = &a
	default:
		return &ProtocolError{Reason: "some task lists are null and others are not; all three or none must be set"}
	}
	if resp.PartitionsByUserEndpoint != nil {
		r.Endpoints = make(map[Endpoint]EndpointPartitions)
		for _, e := range resp.PartitionsByUserEndpoint {
			ep := Endpoint{Host: e.UserEndpoint.Host, Port: e.UserEndpoint.Port}
			cur, ok := r.Endpoints[ep]
			if !ok {
				cur = EndpointPartitions{Active: map[string][]int32{}, Standby: map[string][]int32{}}
			}
			// One entry per member: entries of one endpoint (several members of a process) are merged.
			for _, p := range e.ActivePartitions {
				if err := nonNegative(ep, p.Topic, p.Partitions); err != nil {
					return err
				}
				cur.Active[p.Topic] = mergeSorted(cur.Active[p.Topic], p.Partitions)
			}
			for _, p := range e.StandbyPartitions {
				if err := nonNegative(ep, p.Topic, p.Partitions); err != nil {
					return err
				}
				cur.Standby[p.Topic] = mergeSorted(cur.Standby[p.Topic], p.Partitions)
			}
			r.Endpoints[ep] = cur
		}
	}
	*dst = r
	return nil
}

func nonNegative(ep Endpoint, topic string, partitions []int32) error {
	if slices.ContainsFunc(partitions, func(p int32) bool { return p < 0 }) {
		return &ProtocolError{Reason: fmt.Sprintf("negative partition of topic %q for endpoint %s", topic, ep)}
	}
	return nil
}

func mergeSorted(a, b []int32) []int32 {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
