package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/coordinator"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Client runs streams-group admin requests over the caller's *kgo.Client.
type Client struct {
	cl    *kgo.Client
	coord *coordinator.Cache
}

// NewClient returns a Client over cl.
func NewClient(cl *kgo.Client) *Client {
	return &Client{cl: cl, coord: coordinator.NewCache(cl)}
}

// Errors a caller can test with errors.Is.
var (
	// ErrGroupNotFound: no group has this ID.
	ErrGroupNotFound = errors.New("group not found")
	// ErrNotStreamsGroup: the ID belongs to a group of another type (consumer, classic, share).
	ErrNotStreamsGroup = errors.New("not a streams group")
	// ErrGroupNotEmpty: a group with members cannot be deleted, nor its offsets reset or deleted, nor
	// its internal topics deleted.
	ErrGroupNotEmpty = errors.New("group is not empty")
	// ErrWrongGroup: the broker answered about another group than the one asked for (or left the
	// asked one out); the answer is not used.
	ErrWrongGroup = errors.New("the broker answered about another group")
)

// GroupError is a per-group failure. It unwraps to one of the Err… values above where one applies,
// and to the Kafka error.
type GroupError struct {
	Group    string
	Type     string // for ErrNotStreamsGroup: the group's actual type
	Kind     error  // ErrGroupNotFound, ErrNotStreamsGroup, ErrGroupNotEmpty, ErrWrongGroup or nil
	Kafka    error  // the broker's error, if any (an *heartbeat.UnknownCodeError for a code kerr does not know)
	Answered string // for ErrWrongGroup: the group the answer was about ("" when none was)
}

func (e *GroupError) Error() string {
	switch {
	case errors.Is(e.Kind, ErrNotStreamsGroup):
		return fmt.Sprintf("group %q is a %s group, not a streams group", e.Group, e.Type)
	case errors.Is(e.Kind, ErrGroupNotFound):
		return fmt.Sprintf("group %q does not exist", e.Group)
	case errors.Is(e.Kind, ErrGroupNotEmpty):
		return fmt.Sprintf("group %q still has members; stop them first (only an empty group can be deleted, "+
			"have its offsets reset or deleted, or its internal topics deleted)", e.Group)
	case errors.Is(e.Kind, ErrWrongGroup) && e.Answered == "":
		return fmt.Sprintf("group %q: the broker's answer left this group out; nothing was assumed about it", e.Group)
	case errors.Is(e.Kind, ErrWrongGroup):
		return fmt.Sprintf("group %q: the broker answered about group %q instead; the answer was not used", e.Group, e.Answered)
	}
	return fmt.Sprintf("group %q: %v", e.Group, e.Kafka)
}

// Unwrap returns the kind and the Kafka error.
func (e *GroupError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Kafka != nil {
		out = append(out, e.Kafka)
	}
	return out
}

// Group is a described streams group.
type Group struct {
	ID                   string
	State                string // Empty, NotReady, Assigning, Reconciling, Stable, Dead
	Epoch                int32
	AssignmentEpoch      int32
	Topology             *topology.Described // nil when the group has no topology
	Members              []Member            // sorted by member ID
	Coordinator          int32               // node ID of the group coordinator
	CoordinatorHost      string
	CoordinatorPort      int32
	AuthorizedOperations int32
	AssignorName         string // Kafka 4.4+
}

// Member is one member of a described group.
type Member struct {
	MemberID         string
	MemberEpoch      int32
	InstanceID       string
	RackID           string
	ClientID         string
	ClientHost       string
	TopologyEpoch    int32
	ProcessID        string
	Endpoint         string // host:port of application.server, "" when not set
	ClientTags       map[string]string
	TaskOffsets      tasks.Offsets
	TaskEndOffsets   tasks.Offsets
	Assignment       tasks.Assignment
	TargetAssignment tasks.Assignment
	IsClassic        bool
}

// describeBackoff paces Describe's retries while the coordinator moves, loads or cannot be reached:
// the defaults of retry.backoff.ms and retry.backoff.max.ms, with the member's jitter.
var describeBackoff = heartbeat.Backoff{Min: config.DefaultRetryBackoff, Max: config.DefaultRetryBackoffMax, Rand: rand.Float64}

// Describe describes one streams group at its coordinator, retrying until ctx ends while the
// coordinator moves, loads or cannot be reached (internal/coordinator.Describe, shared with the
// member). A per-group error code is a *GroupError.
func (c *Client) Describe(ctx context.Context, group string) (*Group, error) {
	g, node, err := coordinator.Describe(ctx, c.coord, group, true, describeBackoff.Delay)
	if de, ok := errors.AsType[*coordinator.DescribeError](err); ok {
		return nil, c.groupError(ctx, group, de.Code, de.Message)
	}
	if err != nil {
		return nil, err
	}
	if g.Group != group {
		return nil, &GroupError{Group: group, Kind: ErrWrongGroup, Answered: g.Group}
	}
	return c.convert(g, node)
}

// groupError turns a per-group error code into a *GroupError. GROUP_ID_NOT_FOUND means either no
// group or a group of another type; a ListGroups tells which.
func (c *Client) groupError(ctx context.Context, group string, code int16, msg *string) error {
	kafka := heartbeat.KafkaError(code)
	if msg != nil && *msg != "" {
		kafka = fmt.Errorf("%w: %s", kafka, *msg)
	}
	e := &GroupError{Group: group, Kafka: kafka}
	switch kerr.ErrorForCode(code) {
	case kerr.GroupIDNotFound:
		e.Kind = ErrGroupNotFound
		if typ, err := c.groupType(ctx, group); err == nil && typ != "" && typ != "streams" {
			e.Kind, e.Type = ErrNotStreamsGroup, typ
		}
	case kerr.NonEmptyGroup:
		e.Kind = ErrGroupNotEmpty
	}
	return e
}

// groupType returns the type of group (consumer, classic, share, streams) or "" if there is none.
func (c *Client) groupType(ctx context.Context, group string) (string, error) {
	typ, _, err := c.listed(ctx, group)
	return typ, err
}

// listed returns group's type (consumer, classic, share, streams; "" if ListGroups does not list
// it) and its state as ListGroups reports them. A group listed without a type is a classic group.
func (c *Client) listed(ctx context.Context, group string) (typ, state string, err error) {
	all, err := c.listAll(ctx)
	if err != nil {
		return "", "", err
	}
	for _, g := range all {
		if g.Group == group {
			return cmp.Or(g.GroupType, "classic"), g.GroupState, nil
		}
	}
	return "", "", nil
}

func (c *Client) listAll(ctx context.Context) ([]kmsg.ListGroupsResponseGroup, error) {
	req := kmsg.NewPtrListGroupsRequest()
	shards := c.cl.RequestSharded(ctx, req)
	var out []kmsg.ListGroupsResponseGroup
	for _, s := range shards {
		if s.Err != nil {
			return nil, s.Err
		}
		r := s.Resp.(*kmsg.ListGroupsResponse)
		if err := heartbeat.KafkaError(r.ErrorCode); err != nil {
			return nil, err
		}
		out = append(out, r.Groups...)
	}
	return out, nil
}

func (c *Client) convert(g *kmsg.StreamsGroupDescribeResponseGroup, node int32) (*Group, error) {
	out := &Group{
		ID: g.Group, State: g.State, Epoch: g.Epoch, AssignmentEpoch: g.AssignmentEpoch,
		Coordinator: node, AuthorizedOperations: g.AuthorizedOperations,
	}
	if g.AssignorName != nil {
		out.AssignorName = *g.AssignorName
	}
	if b, ok := c.coord.Cached(g.Group); ok && b.Node == node {
		out.CoordinatorHost, out.CoordinatorPort = b.Host, b.Port
	}
	if g.Topology != nil {
		d, err := topology.FromDescribe(g.Topology)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", g.Group, err)
		}
		out.Topology = d
	}
	for _, m := range g.Members {
		mm := Member{
			MemberID: m.MemberID, MemberEpoch: m.MemberEpoch, ClientID: m.ClientID, ClientHost: m.ClientHost,
			TopologyEpoch: m.TopologyEpoch, ProcessID: m.ProcessID, IsClassic: m.IsClassic,
			TaskOffsets: tasks.OffsetsFromKmsg(m.TaskOffsets), TaskEndOffsets: tasks.OffsetsFromKmsg(m.TaskEndOffsets),
			Assignment:       assignment(m.Assignment),
			TargetAssignment: assignment(m.TargetAssignment),
		}
		if m.InstanceID != nil {
			mm.InstanceID = *m.InstanceID
		}
		if m.RackID != nil {
			mm.RackID = *m.RackID
		}
		if m.UserEndpoint != nil && m.UserEndpoint.Host != "" {
			mm.Endpoint = fmt.Sprintf("%s:%d", m.UserEndpoint.Host, m.UserEndpoint.Port)
		}
		if len(m.ClientTags) > 0 {
			mm.ClientTags = make(map[string]string, len(m.ClientTags))
			for _, t := range m.ClientTags {
				mm.ClientTags[t.Key] = t.Value
			}
		}
		out.Members = append(out.Members, mm)
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].MemberID < out.Members[j].MemberID })
	return out, nil
}

func assignment(a kmsg.StreamsAssignment) tasks.Assignment {
	return tasks.Assignment{
		Active:  tasks.FromKmsg(a.ActiveTasks),
		Standby: tasks.FromKmsg(a.StandbyTasks),
		Warmup:  tasks.FromKmsg(a.WarmupTasks),
	}
}

// Listed is a streams group as ListGroups reports it.
type Listed struct {
	ID    string
	State string
}

// List lists the streams groups of the cluster, sorted by ID; with states, only groups in one of them
// (matched case-insensitively, e.g. "stable").
func (c *Client) List(ctx context.Context, states ...string) ([]Listed, error) {
	all, err := c.listAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	want := make(map[string]bool)
	for _, s := range states {
		want[normState(s)] = true
	}
	var out []Listed
	for _, g := range all {
		if g.GroupType != "streams" {
			continue
		}
		if len(want) > 0 && !want[normState(g.GroupState)] {
			continue
		}
		out = append(out, Listed{ID: g.Group, State: g.GroupState})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// deletableState returns the state of streams group g (lower case) from its description or, when
// the describe is refused because streams groups are off, from ListGroups.
func (c *Client) deletableState(ctx context.Context, g string) (string, error) {
	d, err := c.Describe(ctx, g)
	if err == nil {
		return normState(d.State), nil
	}
	if !errors.Is(err, kerr.UnsupportedVersion) {
		return "", err
	}
	typ, state, lerr := c.listed(ctx, g)
	switch {
	case lerr != nil:
		return "", errors.Join(err, fmt.Errorf("listing groups instead: %w", lerr))
	case typ == "":
		return "", &GroupError{Group: g, Kind: ErrGroupNotFound}
	case typ != "streams":
		return "", &GroupError{Group: g, Kind: ErrNotStreamsGroup, Type: typ}
	}
	return normState(state), nil
}

func normState(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

// Delete deletes streams groups. Only empty groups can be deleted. The result maps each group to its
// error (nil when deleted); the error is for the request as a whole.
//
// Each group is checked first (DeleteGroups would delete a consumer group just as well): described,
// or, when the cluster has streams groups turned off (streams.version 0, so the describe is answered
// UNSUPPORTED_VERSION), found in ListGroups as a streams group, with its state, as Kafka's tool does.
func (c *Client) Delete(ctx context.Context, groups ...string) (map[string]error, error) {
	out := make(map[string]error, len(groups))
	var toDelete []string
	for _, g := range groups {
		state, err := c.deletableState(ctx, g)
		switch {
		case err != nil:
			out[g] = err
		case state != "empty" && state != "dead":
			out[g] = &GroupError{Group: g, Kind: ErrGroupNotEmpty, Kafka: kerr.NonEmptyGroup}
		default:
			toDelete = append(toDelete, g)
		}
	}
	if len(toDelete) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = toDelete
	asked := make(map[string]bool, len(toDelete))
	for _, g := range toDelete {
		asked[g] = true
	}
	answered := make(map[string]bool, len(toDelete))
	var stray []string // answers about groups not asked for
	for _, s := range c.cl.RequestSharded(ctx, req) {
		if s.Err != nil {
			return out, fmt.Errorf("deleting groups: %w", s.Err)
		}
		for _, r := range s.Resp.(*kmsg.DeleteGroupsResponse).Groups {
			if !asked[r.Group] {
				stray = append(stray, r.Group)
				continue
			}
			answered[r.Group] = true
			if r.ErrorCode != 0 {
				out[r.Group] = c.groupError(ctx, r.Group, r.ErrorCode, nil)
			} else {
				out[r.Group] = nil
			}
		}
	}
	var missing []string
	for _, g := range toDelete {
		if !answered[g] {
			missing = append(missing, g)
		}
	}
	for _, g := range missing {
		e := &GroupError{Group: g, Kind: ErrWrongGroup}
		if len(missing) == 1 && len(stray) == 1 {
			e.Answered = stray[0] // the one answer that came instead
		}
		out[g] = e
	}
	return out, nil
}
