package machine

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/topology"
)

// statusState is the statuses as last reported, for change events.
type statusState struct {
	last            []heartbeat.Status
	missingSince    time.Time
	missingReported bool
	// internalSince is when MISSING_INTERNAL_TOPICS was first reported (zero: it is not), and
	// internalWarned whether its lasting has been logged at WARN.
	internalSince  time.Time
	internalWarned bool
	unknownSeen    map[heartbeat.StatusCode]bool
}

// statusEvents maps each known status to the event that reports it.
var statusEvents = map[heartbeat.StatusCode]EventKind{
	heartbeat.StaleTopology:                EventStaleTopology,
	heartbeat.MissingSourceTopics:          EventMissingSourceTopics,
	heartbeat.IncorrectlyPartitionedTopics: EventIncorrectlyPartitionedTopics,
	heartbeat.MissingInternalTopics:        EventMissingInternalTopics,
	heartbeat.ShutdownApplication:          EventShutdownRequested,
	heartbeat.AssignmentDelayed:            EventAssignmentDelayed,
	heartbeat.MissingClientTags:            EventMissingClientTags,
}

// updateStatuses turns the answer's statuses into events when they change (no repeats in the steady
// state), and tracks how long source topics have been missing. STALE_TOPOLOGY is reported once the
// group was described, so that the event can say which topology the group runs; the heartbeats do
// not wait for that.
func (m *Machine) updateStatuses(now time.Time, statuses []heartbeat.Status) []Action {
	st := &m.status
	if slices.Equal(statuses, st.last) {
		return nil
	}
	var out []Action
	for _, s := range statuses {
		if slices.Contains(st.last, s) {
			continue
		}
		ev := Event{Status: &s, Topics: s.Topics(), Message: s.Detail}
		kind, known := statusEvents[s.Code]
		switch {
		case kind == EventStaleTopology:
			m.describe.stale = &s
			out = append(out, m.requestDescribe()...)
			continue
		case known:
			ev.Kind = kind
			if denied := s.CreateDenied(); len(denied) > 0 {
				ev.Err = &InternalTopicsDeniedError{ApplicationID: m.cfg.Join.Group, Topics: denied}
			}
		case st.unknownSeen[s.Code]:
			continue
		default:
			st.unknownSeen[s.Code] = true
			ev.Kind = EventUnknownStatus
		}
		out = append(out, m.emit(ev))
	}
	for _, s := range st.last {
		if slices.Contains(statuses, s) || !s.Code.Known() {
			continue
		}
		if s.Code == heartbeat.StaleTopology && m.describe.stale != nil {
			m.describe.stale = nil // cleared before it was reported: nothing to clear
			continue
		}
		out = append(out, m.emit(Event{Kind: EventStatusCleared, Status: &s, Topics: s.Topics(), Message: s.Detail}))
	}
	st.last = slices.Clone(statuses)
	missing := slices.ContainsFunc(statuses, func(s heartbeat.Status) bool { return s.Code == heartbeat.MissingSourceTopics })
	switch {
	case missing && st.missingSince.IsZero():
		st.missingSince = now
	case !missing:
		st.missingSince, st.missingReported = time.Time{}, false
	}
	internal := slices.ContainsFunc(statuses, func(s heartbeat.Status) bool { return s.Code == heartbeat.MissingInternalTopics })
	switch {
	case internal && st.internalSince.IsZero():
		st.internalSince = now
	case !internal:
		st.internalSince, st.internalWarned = time.Time{}, false
	}
	return out
}

// internalWarnAt is when internal topics still missing are logged at WARN: the broker creates them
// as soon as it reports them missing, which normally takes well under a heartbeat interval, so the
// report itself is no cause for alarm (its event is logged at INFO) but its lasting two heartbeat
// intervals is (zero: not scheduled).
func (m *Machine) internalWarnAt() time.Time {
	st := &m.status
	if st.internalSince.IsZero() || st.internalWarned || m.interval <= 0 {
		return time.Time{}
	}
	return st.internalSince.Add(2 * m.interval)
}

func (m *Machine) internalWarn(now time.Time) []Action {
	st := &m.status
	st.internalWarned = true
	var topics []string
	for _, s := range st.last {
		if s.Code == heartbeat.MissingInternalTopics {
			topics = s.Topics()
		}
	}
	return []Action{Log{Level: slog.LevelWarn, Msg: "the broker has still not created the group's internal topics; the members get " +
		"no tasks until it has (check the brokers' logs, and that they may create topics)",
		Attrs: []any{"topics", topics, "since", now.Sub(st.internalSince).Round(time.Millisecond)}}}
}

// InternalTopicsDeniedError is the error of an EventMissingInternalTopics when the broker may not
// create the internal topics: it creates them as the member's principal, which has CREATE neither
// on the cluster nor on Topics. The member stays in the group without tasks until they exist.
type InternalTopicsDeniedError struct {
	ApplicationID string
	Topics        []string // the internal topics the broker may not create for this member
}

func (e *InternalTopicsDeniedError) Error() string {
	return fmt.Sprintf("the broker may not create the internal topics %v as this member's principal: grant it CREATE on them "+
		"(a PREFIXED ACL on topics %q covers every internal topic of the application) or on the cluster, or create them "+
		"yourself as the topology declares them; the member waits in the group and gets its tasks once they exist",
		e.Topics, e.ApplicationID+"-")
}

// missingTimeoutAt is when missing source topics are reported as a timeout: after two heartbeat
// intervals, where Kafka Streams fails its thread (zero: not scheduled).
func (m *Machine) missingTimeoutAt() time.Time {
	st := &m.status
	if st.missingSince.IsZero() || st.missingReported || m.interval <= 0 {
		return time.Time{}
	}
	return st.missingSince.Add(2 * m.interval)
}

func (m *Machine) missingTimeout() []Action {
	m.status.missingReported = true
	var topics []string
	for _, s := range m.status.last {
		if s.Code == heartbeat.MissingSourceTopics {
			topics = s.Topics()
		}
	}
	return []Action{m.emit(Event{Kind: EventMissingSourceTopicsTimeout, Topics: topics,
		Err: fmt.Errorf("source topics %v are still missing after two heartbeat intervals: create them; "+
			"the member keeps waiting and gets tasks once they exist", topics)})}
}

// describeState is a Describe action in flight and what its answer is for.
type describeState struct {
	inFlight bool
	stale    *heartbeat.Status // a STALE_TOPOLOGY status to report with the group's topology
}

// requestDescribe asks for the group's description unless a request is already in flight (its
// answer serves every purpose).
func (m *Machine) requestDescribe() []Action {
	if m.describe.inFlight {
		return nil
	}
	m.describe.inFlight = true
	return []Action{Describe{Timeout: m.cfg.RequestTimeout}}
}

func isTopologyMismatch(err error) bool { return errors.Is(err, heartbeat.ErrTopologyMismatch) }

// described reports what waited for the group's description: a STALE_TOPOLOGY event, a refused
// topology's fatal error.
func (m *Machine) described(in Described) []Action {
	if !m.describe.inFlight {
		return nil
	}
	m.describe.inFlight = false
	var out []Action
	if in.Err != nil {
		out = append(out, Log{Level: slog.LevelWarn, Msg: "could not describe the group to compare topologies", Attrs: []any{"err", in.Err}})
	}
	if s := m.describe.stale; s != nil {
		m.describe.stale = nil
		tm := compareTopologies(in.Group, m.cfg.Join.Topology, m.cfg.Join.TopologyEpoch, topology.StaleStatus)
		out = append(out, m.emit(Event{Kind: EventStaleTopology, Status: s, Message: s.Detail, GroupTopology: &tm}))
	}
	if f := m.fatal; f != nil && f.describing {
		f.describing = false
		tm := compareTopologies(in.Group, m.cfg.Join.Topology, m.cfg.Join.TopologyEpoch, topology.RefusedJoin)
		f.err = &TopologyError{Mismatch: tm, Err: f.err}
		out = append(out, m.maybeStopFatal()...)
	}
	return out
}
