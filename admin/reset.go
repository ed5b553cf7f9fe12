package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/internal/stableoffsets"
)

// Errors of the offset operations, for errors.Is. Each comes wrapped with the group, topic or
// partition it is about.
var (
	// ErrNoTopology: the group has no topology, so its input and internal topics are not known.
	ErrNoTopology = errors.New("the group has no topology")
	// ErrNotInputTopic: a topic named for a reset is not an input topic of the group's topology.
	ErrNotInputTopic = errors.New("not an input topic of the group")
	// ErrUnknownPartition: a partition named does not exist, or a topic named has no partitions.
	ErrUnknownPartition = errors.New("no such partition")
	// ErrNoCommittedOffset: --shift-by needs a committed offset to shift, and the partition has none.
	ErrNoCommittedOffset = errors.New("no committed offset to shift")
	// ErrNoPlan: a reset plan (from a file) has no line for the group.
	ErrNoPlan = errors.New("the reset plan has no offsets for the group")
)

// ResetKind says where a reset moves each partition's committed offset.
type ResetKind int

// The reset specifications of Kafka's kafka-streams-groups.sh --reset-offsets.
const (
	ToEarliest  ResetKind = iota + 1 // the log start offset
	ToLatest                         // the log end offset
	ToCurrent                        // the committed offset (none where none is committed: see NewOffset.Unset)
	ToOffset                         // Reset.Offset, kept inside [log start, log end]
	ShiftBy                          // the committed offset plus Reset.Offset, kept inside [log start, log end]
	ToTimestamp                      // the first offset at or after Reset.Timestamp (the log end offset if none)
	FromPlan                         // Reset.Plan, each kept inside [log start, log end]
)

// TopicPartitions names a topic and some of its partitions; no partitions means all of them.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// Reset is a reset specification and its scope.
type Reset struct {
	Kind      ResetKind
	Offset    int64     // ToOffset: the offset; ShiftBy: the shift (negative moves back)
	Timestamp time.Time // ToTimestamp
	// Plan is FromPlan's offsets, topic -> partition -> offset; it is its own scope (Topics is not used).
	Plan map[string]map[int32]int64
	// Topics is the scope: nil for every partition of the group's source topics (Kafka's
	// --all-input-topics; repartition topics are internal and left out, as Kafka's tool does), or the
	// topics (source or repartition source topics of the group) and partitions named.
	Topics []TopicPartitions
}

// NewOffset is the offset a reset gives one partition.
type NewOffset struct {
	Topic     string
	Partition int32
	Offset    int64
	// Unset says the partition keeps no committed offset (Offset is -1): a ToCurrent reset of a
	// partition the group never committed. Kafka's tool sets such a partition to its log end,
	// which skips every record on it that the application never processed; here it is left
	// without an offset, so that the application starts it where auto.offset.reset says (the
	// earliest offset by default), as it would have without the reset.
	Unset bool
}

// PlanReset computes the offsets a reset would commit, without committing them. The group must
// exist, be a streams group and be empty (no members): a member would overwrite the offsets with its
// next commit. A group with members is a *GroupError with ErrGroupNotEmpty.
//
// A group that does not exist can be given offsets with an explicit scope (Reset.Topics or a plan),
// as Kafka's tool allows: that is how positions saved before deleting a group are put back for the
// new version that will join under the same ID (the commit creates an empty group holding only
// offsets, which the first streams member takes over). The topics are then checked against the
// cluster only, there being no topology.
func (c *Client) PlanReset(ctx context.Context, group string, r Reset) ([]NewOffset, error) {
	g, err := c.emptyGroup(ctx, group)
	var ge *GroupError
	if errors.As(err, &ge) && ge.Kind == ErrGroupNotFound && (r.Kind == FromPlan || r.Topics != nil) {
		g, err = &Group{ID: group, State: "Dead"}, nil
	}
	if err != nil {
		return nil, err
	}
	return c.plan(ctx, g, r)
}

// ResetOffsets commits the offsets PlanReset computes and returns them. The group's emptiness is
// checked first, and a member that joins before the commit makes the broker refuse it (also
// reported as ErrGroupNotEmpty).
func (c *Client) ResetOffsets(ctx context.Context, group string, r Reset) ([]NewOffset, error) {
	plan, err := c.PlanReset(ctx, group, r)
	if err != nil || len(plan) == 0 {
		return plan, err
	}
	var offs kadm.Offsets
	for _, p := range plan {
		if !p.Unset {
			offs.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: -1})
		}
	}
	if len(offs) == 0 {
		return plan, nil
	}
	resp, err := kadm.NewClient(c.cl).CommitOffsets(ctx, group, offs)
	if err != nil {
		return nil, fmt.Errorf("committing the new offsets of %q: %w", group, c.commitError(group, err))
	}
	if err := resp.Error(); err != nil {
		return nil, fmt.Errorf("committing the new offsets of %q: %w", group, c.commitError(group, err))
	}
	return plan, nil
}

// commitError names a commit refused because the group gained members since it was checked.
func (c *Client) commitError(group string, err error) error {
	for _, k := range []error{kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.StaleMemberEpoch, kerr.RebalanceInProgress} {
		if errors.Is(err, k) {
			return &GroupError{Group: group, Kind: ErrGroupNotEmpty, Kafka: err}
		}
	}
	return err
}

// emptyGroup describes group and refuses it unless it is empty (Dead counts as empty, as in Kafka's
// tool: it has no members either).
func (c *Client) emptyGroup(ctx context.Context, group string) (*Group, error) {
	g, err := c.Describe(ctx, group)
	if err != nil {
		return nil, err
	}
	if g.State != "Empty" && g.State != "Dead" {
		return nil, &GroupError{Group: group, Kind: ErrGroupNotEmpty, Kafka: kerr.NonEmptyGroup}
	}
	return g, nil
}

// sourceTopics returns the source topics and the repartition source topics of g's topology.
func sourceTopics(g *Group) (sources, repartition []string) {
	if g.Topology == nil {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, s := range g.Topology.Subtopologies {
		for _, t := range s.SourceTopics {
			if !seen[t] {
				seen[t] = true
				sources = append(sources, t)
			}
		}
	}
	for _, s := range g.Topology.Subtopologies {
		for _, t := range s.RepartitionSourceTopics {
			if !seen[t.Name] {
				seen[t.Name] = true
				repartition = append(repartition, t.Name)
			}
		}
	}
	sort.Strings(sources)
	sort.Strings(repartition)
	return sources, repartition
}

type tp struct {
	topic     string
	partition int32
}

// scope resolves r's partitions against the group's topology and the cluster's metadata.
func (c *Client) scope(ctx context.Context, g *Group, r Reset) ([]tp, error) {
	if g.Topology == nil && r.Kind != FromPlan && r.Topics == nil {
		return nil, fmt.Errorf("group %q: %w; its input topics are not known", g.ID, ErrNoTopology)
	}
	sources, repartition := sourceTopics(g)
	var want []TopicPartitions
	switch {
	case r.Kind == FromPlan:
		for _, t := range sortedKeys(r.Plan) {
			tps := TopicPartitions{Topic: t}
			for p := range r.Plan[t] {
				tps.Partitions = append(tps.Partitions, p)
			}
			want = append(want, tps)
		}
	case r.Topics == nil:
		for _, t := range sources {
			want = append(want, TopicPartitions{Topic: t})
		}
	case g.Topology == nil:
		want = r.Topics // a group that does not exist: nothing to check the topics against
	default:
		inputs := map[string]bool{}
		for _, t := range append(sources, repartition...) {
			inputs[t] = true
		}
		for _, t := range r.Topics {
			if !inputs[t.Topic] {
				return nil, fmt.Errorf("group %q: topic %q: %w (its input topics are %v)", g.ID, t.Topic, ErrNotInputTopic, append(sources, repartition...))
			}
		}
		want = r.Topics
	}
	var names []string
	for _, t := range want {
		names = append(names, t.Topic)
	}
	parts, err := c.partitions(ctx, names)
	if err != nil {
		return nil, err
	}
	seen := map[tp]bool{}
	var out []tp
	for _, t := range want {
		have := parts[t.Topic]
		if len(have) == 0 {
			return nil, fmt.Errorf("group %q: topic %q: %w (the topic does not exist)", g.ID, t.Topic, ErrUnknownPartition)
		}
		list := t.Partitions
		if len(list) == 0 {
			list = have
		}
		for _, p := range list {
			if p < 0 || int(p) >= len(have) {
				return nil, fmt.Errorf("group %q: partition %s-%d: %w (the topic has %d)", g.ID, t.Topic, p, ErrUnknownPartition, len(have))
			}
			if k := (tp{t.Topic, p}); !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out, nil
}

// partitions returns the partition numbers of each existing topic of names (0..n-1).
func (c *Client) partitions(ctx context.Context, names []string) (map[string][]int32, error) {
	out := map[string][]int32{}
	if len(names) == 0 {
		return out, nil
	}
	td, err := kadm.NewClient(c.cl).ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("reading the partitions of %v: %w", names, err)
	}
	for _, t := range td {
		if t.Err != nil {
			if errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
				continue
			}
			return nil, fmt.Errorf("reading the partitions of %q: %w", t.Topic, t.Err)
		}
		for p := range t.Partitions {
			out[t.Topic] = append(out[t.Topic], p)
		}
		sort.Slice(out[t.Topic], func(i, j int) bool { return out[t.Topic][i] < out[t.Topic][j] })
	}
	return out, nil
}

func (c *Client) plan(ctx context.Context, g *Group, r Reset) ([]NewOffset, error) {
	if r.Kind < ToEarliest || r.Kind > FromPlan {
		return nil, fmt.Errorf("reset of %q: unknown reset kind %d", g.ID, r.Kind)
	}
	if r.Kind == FromPlan && len(r.Plan) == 0 {
		return nil, fmt.Errorf("group %q: %w", g.ID, ErrNoPlan)
	}
	parts, err := c.scope(ctx, g, r)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, nil
	}
	topics := map[string]bool{}
	var names []string
	for _, p := range parts {
		if !topics[p.topic] {
			topics[p.topic] = true
			names = append(names, p.topic)
		}
	}
	adm := kadm.NewClient(c.cl)
	offsets := func(what string, list func() (kadm.ListedOffsets, error)) (map[tp]int64, error) {
		l, err := list()
		if err != nil {
			return nil, fmt.Errorf("listing the %s offsets of %v: %w", what, names, err)
		}
		out := map[tp]int64{}
		for _, p := range parts {
			o, ok := l.Lookup(p.topic, p.partition)
			if !ok {
				return nil, fmt.Errorf("listing the %s offset of %s-%d: no answer", what, p.topic, p.partition)
			}
			if o.Err != nil {
				return nil, fmt.Errorf("listing the %s offset of %s-%d: %w", what, p.topic, p.partition, o.Err)
			}
			out[p] = o.Offset
		}
		return out, nil
	}
	start, err := offsets("start", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, names...) })
	if err != nil {
		return nil, err
	}
	end, err := offsets("end", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, names...) })
	if err != nil {
		return nil, err
	}
	clamp := func(p tp, o int64) int64 { return min(max(o, start[p]), end[p]) }
	var committed kadm.OffsetResponses
	if r.Kind == ToCurrent || r.Kind == ShiftBy {
		// Stable offsets: right after an exactly-once member stopped, its last commit's markers may
		// still be on their way, and the previous commit would be taken for the current position.
		committed, err = stableoffsets.Fetch(ctx, adm, g.ID)
		if err != nil {
			return nil, fmt.Errorf("fetching the committed offsets of %q: %w", g.ID, err)
		}
	}
	current := func(p tp) (int64, bool) {
		o, ok := committed.Lookup(p.topic, p.partition)
		if !ok || o.Err != nil || o.At < 0 {
			return 0, false
		}
		return o.At, true
	}
	var byTime map[tp]int64
	if r.Kind == ToTimestamp {
		// Before 1970 is the start: a negative timestamp would name one of ListOffsets' special offsets.
		l, err := adm.ListOffsetsAfterMilli(ctx, max(r.Timestamp.UnixMilli(), 0), names...)
		if err != nil {
			return nil, fmt.Errorf("listing the offsets of %v at %s: %w", names, r.Timestamp.Format(time.RFC3339Nano), err)
		}
		byTime = map[tp]int64{}
		for _, p := range parts {
			o, ok := l.Lookup(p.topic, p.partition)
			switch {
			case !ok:
				return nil, fmt.Errorf("listing the offset of %s-%d by time: no answer", p.topic, p.partition)
			case o.Err != nil:
				return nil, fmt.Errorf("listing the offset of %s-%d by time: %w", p.topic, p.partition, o.Err)
			case o.Offset < 0:
				byTime[p] = end[p] // no record at or after the time: the end, as Kafka's tool does
			default:
				byTime[p] = o.Offset
			}
		}
	}
	out := make([]NewOffset, 0, len(parts))
	for _, p := range parts {
		var o int64
		switch r.Kind {
		case ToEarliest:
			o = start[p]
		case ToLatest:
			o = end[p]
		case ToCurrent:
			cur, ok := current(p)
			if !ok {
				out = append(out, NewOffset{Topic: p.topic, Partition: p.partition, Offset: -1, Unset: true})
				continue
			}
			o = cur
		case ToOffset:
			o = clamp(p, r.Offset)
		case ShiftBy:
			cur, ok := current(p)
			if !ok {
				return nil, fmt.Errorf("group %q: partition %s-%d: %w", g.ID, p.topic, p.partition, ErrNoCommittedOffset)
			}
			o = clamp(p, satAdd(cur, r.Offset))
		case ToTimestamp:
			o = byTime[p]
		case FromPlan:
			o = clamp(p, r.Plan[p.topic][p.partition])
		}
		out = append(out, NewOffset{Topic: p.topic, Partition: p.partition, Offset: o})
	}
	return out, nil
}

// satAdd adds without wrapping: a shift of math.MaxInt64 from offset 5 is the end, not a negative offset.
func satAdd(a, b int64) int64 {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		if b > 0 {
			return 1<<63 - 1
		}
		return -1 << 63
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
