package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
)

// fakeApp is a kfake cluster holding real topics, records and commits, whose StreamsGroupDescribe
// answers with group "app" in state (changeable) and a topology reading "in" and "in2", with a
// repartition topic, a changelog, and a changelog named like another application's. DeleteGroups is
// answered with deleteCode for every group asked, and the groups asked are kept in order.
type fakeApp struct {
	c          *kfake.Cluster
	adm        *Client
	cl         *kgo.Client
	state      atomic.Value // string
	deleteCode atomic.Int32 // the error code of DeleteGroups' answers

	mu          sync.Mutex
	deleteAsked []string // the groups DeleteGroups was asked to delete, across requests
}

const (
	tIn     = "in"
	tIn2    = "in2"
	tRep    = "app-KSTREAM-REPARTITION-0000000003-repartition"
	tLog    = "app-counts-changelog"
	tShared = "shared-changelog" // in the topology, but not named as app's: never deleted
	tOther  = "other-counts-changelog"
)

func newFakeApp(t *testing.T) *fakeApp {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := ctx(t)
	if err := kfakestreams.Advertise(ctx, c, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	f := &fakeApp{c: c}
	f.state.Store("Empty")
	c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.StreamsGroupDescribeRequest)
		resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range r.Groups {
			if g != "app" {
				resp.Groups = append(resp.Groups, kmsg.StreamsGroupDescribeResponseGroup{Group: g, ErrorCode: kerr.GroupIDNotFound.Code})
				continue
			}
			topo := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
				{SubtopologyID: "0", SourceTopics: []string{tIn, tIn2}, RepartitionSinkTopics: []string{tRep}},
				{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: tRep, NumPartitions: 2}},
					StateChangelogTopics: []kmsg.TopicInfo{{Topic: tLog}, {Topic: tShared}}},
			}}
			state := f.state.Load().(string)
			grp := kmsg.StreamsGroupDescribeResponseGroup{Group: g, State: state, Topology: topo}
			if state != "Empty" {
				grp.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{{MemberID: "m1"}}
			}
			resp.Groups = append(resp.Groups, grp)
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.DeleteGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.DeleteGroupsRequest)
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		f.mu.Lock()
		f.deleteAsked = append(f.deleteAsked, r.Groups...)
		f.mu.Unlock()
		for _, g := range r.Groups {
			resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: int16(f.deleteCode.Load())})
		}
		return resp, nil, true
	})
	f.cl, err = kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.cl.Close)
	f.adm = NewClient(f.cl)
	adm := kadm.NewClient(f.cl)
	for topic, n := range map[string]int32{tIn: 3, tIn2: 1, tRep: 2, tLog: 2, tShared: 1, tOther: 1} {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// 10 records on each partition of in (timestamps 1000..1009 s), 4 on in2.
	for p := range int32(3) {
		for i := range 10 {
			rec := &kgo.Record{Topic: tIn, Partition: p, Value: []byte("v"), Timestamp: time.Unix(int64(1000+i), 0)}
			if err := f.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 4 {
		if err := f.cl.ProduceSync(ctx, &kgo.Record{Topic: tIn2, Value: []byte("v"), Timestamp: time.Unix(int64(1000+i), 0)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// asked returns the groups DeleteGroups was asked to delete so far.
func (f *fakeApp) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deleteAsked...)
}

func (f *fakeApp) commit(t *testing.T, offs map[string]map[int32]int64) {
	t.Helper()
	var o kadm.Offsets
	for topic, ps := range offs {
		for p, at := range ps {
			o.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	resp, err := kadm.NewClient(f.cl).CommitOffsets(ctx(t), "app", o)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
}

func (f *fakeApp) committed(t *testing.T) string {
	t.Helper()
	r, err := kadm.NewClient(f.cl).FetchOffsets(ctx(t), "app")
	if err != nil {
		t.Fatal(err)
	}
	var s string
	for _, o := range r.Sorted() {
		s += fmt.Sprintf("%s-%d=%d ", o.Topic, o.Partition, o.At)
	}
	return s
}

func planString(p []NewOffset) string {
	var s string
	for _, o := range p {
		if o.Unset {
			s += fmt.Sprintf("%s-%d=unset ", o.Topic, o.Partition)
			continue
		}
		s += fmt.Sprintf("%s-%d=%d ", o.Topic, o.Partition, o.Offset)
	}
	return s
}

func TestResetKinds(t *testing.T) {
	f := newFakeApp(t)
	ends := endOffsets(t, f)
	// in2-0 is committed at 0: a commit at offset 0 is a commit, not the absence of one.
	f.commit(t, map[string]map[int32]int64{tIn: {0: 5, 1: 6}, tIn2: {0: 0}, tRep: {0: 0}})
	in := func(o0, o1, o2, o3 int64) string {
		return fmt.Sprintf("in-0=%d in-1=%d in-2=%d in2-0=%d ", o0, o1, o2, o3)
	}
	e0, e1, e2, e3 := ends["in-0"], ends["in-1"], ends["in-2"], ends["in2-0"]
	for _, tc := range []struct {
		name string
		r    Reset
		want string
	}{
		{"earliest", Reset{Kind: ToEarliest}, in(0, 0, 0, 0)},
		{"latest", Reset{Kind: ToLatest}, in(e0, e1, e2, e3)},
		{"current: the committed offset, none where none", Reset{Kind: ToCurrent}, "in-0=5 in-1=6 in-2=unset in2-0=0 "},
		{"offset, kept inside the log", Reset{Kind: ToOffset, Offset: 3}, in(3, 3, 3, min(3, e3))},
		{"offset beyond the end is the end", Reset{Kind: ToOffset, Offset: 1 << 40}, in(e0, e1, e2, e3)},
		{"offset below the start is the start", Reset{Kind: ToOffset, Offset: -7}, in(0, 0, 0, 0)},
		{"one topic, some partitions", Reset{Kind: ToEarliest, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{1}}}}, "in-1=0 "},
		{"a repartition topic when named", Reset{Kind: ToLatest, Topics: []TopicPartitions{{Topic: tRep}}}, tRep + "-0=0 " + tRep + "-1=0 "},
		{"shift back", Reset{Kind: ShiftBy, Offset: -2, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{0, 1}}}}, "in-0=3 in-1=4 "},
		{"shift forward", Reset{Kind: ShiftBy, Offset: 2, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{0}}}}, "in-0=7 "},
		{"shift from a commit at 0", Reset{Kind: ShiftBy, Offset: 1, Topics: []TopicPartitions{{Topic: tIn2}}}, "in2-0=1 "},
		{"shift beyond the end", Reset{Kind: ShiftBy, Offset: 1<<63 - 1, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{0}}}}, fmt.Sprintf("in-0=%d ", e0)},
		{"plan", Reset{Kind: FromPlan, Plan: map[string]map[int32]int64{tIn: {2: 4}, tIn2: {0: 99}}}, fmt.Sprintf("in-2=4 in2-0=%d ", e3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := f.adm.PlanReset(ctx(t), "app", tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if got := planString(p); got != tc.want {
				t.Fatalf("plan %q, want %q", got, tc.want)
			}
		})
	}
	before := f.committed(t)
	if _, err := f.adm.PlanReset(ctx(t), "app", Reset{Kind: ToLatest}); err != nil {
		t.Fatal(err)
	}
	if after := f.committed(t); after != before {
		t.Fatalf("a plan changed the commits: %s -> %s", before, after)
	}
}

func endOffsets(t *testing.T, f *fakeApp) map[string]int64 {
	t.Helper()
	l, err := kadm.NewClient(f.cl).ListEndOffsets(ctx(t), tIn, tIn2)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	l.Each(func(o kadm.ListedOffset) { out[fmt.Sprintf("%s-%d", o.Topic, o.Partition)] = o.Offset })
	return out
}

// --to-current and --shift-by start from the group's settled offsets: while an exactly-once
// member's last commit is still pending (its markers on their way), the broker answers the previous
// commit to a plain fetch and UNSTABLE_OFFSET_COMMIT to one requiring stable offsets; the plan
// waits for the settled commit rather than taking the previous one.
func TestResetFromCurrentWaitsForPendingCommits(t *testing.T) {
	f := newFakeApp(t)
	f.commit(t, map[string]map[int32]int64{tIn: {0: 5, 1: 6}})
	topics, err := kadm.NewClient(f.cl).ListTopics(ctx(t), tIn)
	if err != nil {
		t.Fatal(err)
	}
	id := topics[tIn].ID
	for _, tc := range []struct {
		name string
		r    Reset
		want string
	}{
		{"current", Reset{Kind: ToCurrent, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{0, 1}}}}, "in-0=5 in-1=6 "},
		{"shift", Reset{Kind: ShiftBy, Offset: 1, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{0, 1}}}}, "in-0=6 in-1=7 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pendingAnswers atomic.Int32
			f.c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
				r := req.(*kmsg.OffsetFetchRequest)
				if r.RequireStable && pendingAnswers.Load() == 2 {
					return nil, nil, false // settled: the cluster's own answer (control ends)
				}
				f.c.KeepControl()
				resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
				g := kmsg.NewOffsetFetchResponseGroup()
				g.Group = r.Groups[0].Group
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = tIn, id
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 3, -1 // the previous commit
				if r.RequireStable {
					pendingAnswers.Add(1)
					rp.Offset, rp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
				g.Topics = append(g.Topics, rt)
				resp.Groups = append(resp.Groups, g)
				return resp, nil, true
			})
			p, err := f.adm.PlanReset(ctx(t), "app", tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if got := planString(p); got != tc.want {
				t.Errorf("plan %q while a commit was pending; want %q (the settled commit)", got, tc.want)
			}
			if n := pendingAnswers.Load(); n != 2 {
				t.Errorf("%d fetches answered pending; want the plan to ask until settled (2)", n)
			}
		})
	}
}

func TestResetByTimestamp(t *testing.T) {
	f := newFakeApp(t)
	// in2 has 4 records at 1000..1003 s: 1002 s is offset 2; after the last, the end.
	p, err := f.adm.PlanReset(ctx(t), "app", Reset{Kind: ToTimestamp, Timestamp: time.Unix(1002, 0), Topics: []TopicPartitions{{Topic: tIn2}}})
	if err != nil || planString(p) != "in2-0=2 " {
		t.Fatalf("at 1002 s: %q %v", planString(p), err)
	}
	p, err = f.adm.PlanReset(ctx(t), "app", Reset{Kind: ToTimestamp, Timestamp: time.Unix(5000, 0), Topics: []TopicPartitions{{Topic: tIn2}}})
	if err != nil || planString(p) != "in2-0=4 " {
		t.Fatalf("after the last record: %q %v", planString(p), err)
	}
	// Before the first record: offset 0, a real answer, not "no record" (which would be the end).
	p, err = f.adm.PlanReset(ctx(t), "app", Reset{Kind: ToTimestamp, Timestamp: time.Unix(999, 0), Topics: []TopicPartitions{{Topic: tIn2}}})
	if err != nil || planString(p) != "in2-0=0 " {
		t.Fatalf("before the first record: %q %v", planString(p), err)
	}
}

func TestResetExecuteCommits(t *testing.T) {
	f := newFakeApp(t)
	f.commit(t, map[string]map[int32]int64{tIn: {0: 5}})
	p, err := f.adm.ResetOffsets(ctx(t), "app", Reset{Kind: ToOffset, Offset: 2, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{0, 2}}}})
	if err != nil || planString(p) != "in-0=2 in-2=2 " {
		t.Fatalf("reset: %q %v", planString(p), err)
	}
	if got := f.committed(t); got != "in-0=2 in-2=2 " {
		t.Fatalf("committed after the reset: %s", got)
	}
	// The reset knows no leader epoch for the offsets it commits, so it commits none (-1): a made-up
	// epoch would have consumers fence themselves against it.
	r, err := kadm.NewClient(f.cl).FetchOffsets(ctx(t), "app")
	if err != nil {
		t.Fatal(err)
	}
	r.Each(func(o kadm.OffsetResponse) {
		if o.LeaderEpoch != -1 {
			t.Errorf("%s-%d committed with leader epoch %d; want -1", o.Topic, o.Partition, o.LeaderEpoch)
		}
	})
}

// --to-current executed leaves a partition the group never committed without an offset (Kafka's
// tool would commit its log end, skipping its records); the others keep theirs. With none
// committed at all, it commits nothing.
func TestResetToCurrentLeavesUncommittedPartitionsUnset(t *testing.T) {
	f := newFakeApp(t)
	f.commit(t, map[string]map[int32]int64{tIn: {0: 5, 1: 6}})
	p, err := f.adm.ResetOffsets(ctx(t), "app", Reset{Kind: ToCurrent, Topics: []TopicPartitions{{Topic: tIn}}})
	if err != nil || planString(p) != "in-0=5 in-1=6 in-2=unset " || p[2].Offset != -1 {
		t.Fatalf("reset: %q (%+v) %v; want in-2 unset, at offset -1", planString(p), p, err)
	}
	if got := f.committed(t); got != "in-0=5 in-1=6 " {
		t.Fatalf("committed after the reset: %s; want in-2 still without an offset", got)
	}
	p, err = f.adm.ResetOffsets(ctx(t), "app", Reset{Kind: ToCurrent, Topics: []TopicPartitions{{Topic: tIn2}}})
	if err != nil || planString(p) != "in2-0=unset " || f.committed(t) != "in-0=5 in-1=6 " {
		t.Fatalf("reset of a topic never committed: %q %v, committed %s", planString(p), err, f.committed(t))
	}
}

// A group that does not exist takes offsets with an explicit scope (putting saved positions back
// after a delete), checked against the cluster only; without a scope it is ErrGroupNotFound.
func TestResetOfAGroupThatDoesNotExist(t *testing.T) {
	f := newFakeApp(t)
	p, err := f.adm.ResetOffsets(ctx(t), "new", Reset{Kind: FromPlan, Plan: map[string]map[int32]int64{tIn: {1: 4}}})
	if err != nil || planString(p) != "in-1=4 " {
		t.Fatalf("plan for a new group: %q %v", planString(p), err)
	}
	r, err := kadm.NewClient(f.cl).FetchOffsets(ctx(t), "new")
	if o, ok := r.Lookup(tIn, 1); err != nil || !ok || o.At != 4 {
		t.Fatalf("committed: %+v %v", o, err)
	}
	if _, err := f.adm.PlanReset(ctx(t), "new2", Reset{Kind: ToEarliest, Topics: []TopicPartitions{{Topic: "missing"}}}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("a missing topic for a new group: %v", err)
	}
	if _, err := f.adm.PlanReset(ctx(t), "new3", Reset{Kind: ToEarliest}); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("no scope for a new group: %v", err)
	}
}

func TestResetRefusals(t *testing.T) {
	f := newFakeApp(t)
	f.commit(t, map[string]map[int32]int64{tIn: {0: 5}})
	before := f.committed(t)
	for _, tc := range []struct {
		name  string
		group string
		r     Reset
		want  error
	}{
		{"a topic that is not an input", "app", Reset{Kind: ToEarliest, Topics: []TopicPartitions{{Topic: tOther}}}, ErrNotInputTopic},
		{"a partition that does not exist", "app", Reset{Kind: ToEarliest, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{3}}}}, ErrUnknownPartition},
		{"shift without a committed offset", "app", Reset{Kind: ShiftBy, Offset: 1, Topics: []TopicPartitions{{Topic: tIn, Partitions: []int32{1}}}}, ErrNoCommittedOffset},
		{"an empty plan", "app", Reset{Kind: FromPlan}, ErrNoPlan},
		{"a plan naming a missing partition", "app", Reset{Kind: FromPlan, Plan: map[string]map[int32]int64{tIn: {7: 1}}}, ErrUnknownPartition},
		{"no such group", "nope", Reset{Kind: ToEarliest}, ErrGroupNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.adm.ResetOffsets(ctx(t), tc.group, tc.r)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	// A Reset without a kind (its zero value) or with one past the last is refused, not read as some
	// kind.
	for _, k := range []ResetKind{0, FromPlan + 1} {
		_, err := f.adm.ResetOffsets(ctx(t), "app", Reset{Kind: k, Topics: []TopicPartitions{{Topic: tIn}}})
		if want := fmt.Sprintf(`reset of "app": unknown reset kind %d`, k); err == nil || err.Error() != want {
			t.Errorf("kind %d: %v; want %q", k, err, want)
		}
	}
	f.state.Store("Stable")
	_, err := f.adm.ResetOffsets(ctx(t), "app", Reset{Kind: ToEarliest})
	var ge *GroupError
	if !errors.As(err, &ge) || !errors.Is(err, ErrGroupNotEmpty) || ge.Group != "app" {
		t.Fatalf("a group with members: %v", err)
	}
	if _, err := f.adm.DeleteOffsets(ctx(t), "app", nil); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("delete offsets of a group with members: %v", err)
	}
	if _, err := f.adm.DeleteInternalTopics(ctx(t), "app", false); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("delete internal topics of a group with members: %v", err)
	}
	if after := f.committed(t); after != before {
		t.Fatalf("a refused operation changed the commits: %s -> %s", before, after)
	}
}

func TestDeleteOffsets(t *testing.T) {
	f := newFakeApp(t)
	// in-2 is committed at 0, which is a commit like any other and is deleted with the rest.
	f.commit(t, map[string]map[int32]int64{tIn: {0: 1, 1: 2, 2: 0}, tIn2: {0: 3}, tRep: {0: 1}})
	res, err := f.adm.DeleteOffsets(ctx(t), "app", []TopicPartitions{{Topic: tIn, Partitions: []int32{1}}, {Topic: "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Topic != tIn || res[0].Partition != 1 || res[0].Err != nil ||
		res[1].Topic != "missing" || res[1].Partition != -1 || !errors.Is(res[1].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("results: %+v", res)
	}
	if got := f.committed(t); got != "app-KSTREAM-REPARTITION-0000000003-repartition-0=1 in-0=1 in-2=0 in2-0=3 " {
		t.Fatalf("after deleting in-1: %s", got)
	}
	// All input topics: the source topics' commits go, the repartition topic's stays (it is internal).
	res, err = f.adm.DeleteOffsets(ctx(t), "app", nil)
	if err != nil || resultString(res) != "in-0:<nil> in-2:<nil> in2-0:<nil> " {
		t.Fatalf("all input topics: %s %v; want in-0, in-2 and in2-0 deleted, in that order", resultString(res), err)
	}
	if got := f.committed(t); got != "app-KSTREAM-REPARTITION-0000000003-repartition-0=1 " {
		t.Fatalf("after deleting all input offsets: %s", got)
	}
}

// resultString writes results as "topic-partition:error " each, in their order.
func resultString(res []PartitionResult) string {
	var s string
	for _, r := range res {
		s += fmt.Sprintf("%s-%d:%v ", r.Topic, r.Partition, r.Err)
	}
	return s
}

func TestInternalTopicNames(t *testing.T) {
	for _, tc := range []struct {
		topic, app string
		want       bool
	}{
		{"app-store-changelog", "app", true},
		{"app-KSTREAM-AGGREGATE-0000000003-repartition", "app", true},
		{"app-x-subscription-registration-topic", "app", true},
		{"app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000012-topic", "app", true},
		{"app-v2-store-changelog", "app-v2", true},
		{"app-store-changelog", "ap", false},
		{"appx-store-changelog", "app", false},
		{"app-input", "app", false},
		{"other-store-changelog", "app", false},
		{"app-changelog-data", "app", false},
	} {
		if got := IsInternalTopicName(tc.topic, tc.app); got != tc.want {
			t.Errorf("IsInternalTopicName(%q, %q) = %v", tc.topic, tc.app, got)
		}
	}
}

func TestDeleteInternalTopics(t *testing.T) {
	f := newFakeApp(t)
	res, err := f.adm.DeleteInternalTopics(ctx(t), "app", true)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Deleted, res.NotInferred, res.Absent) != fmt.Sprint([]string{tRep, tLog}, []string{tShared}, []string(nil)) {
		t.Fatalf("dry run: %+v", res)
	}
	if got := topicNames(t, f); got != "app-KSTREAM-REPARTITION-0000000003-repartition app-counts-changelog in in2 other-counts-changelog shared-changelog" {
		t.Fatalf("a dry run deleted topics: %s", got)
	}
	res, err = f.adm.DeleteInternalTopics(ctx(t), "app", false)
	if err != nil || res.Err() != nil || len(res.Deleted) != 2 {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if got := topicNames(t, f); got != "in in2 other-counts-changelog shared-changelog" {
		t.Fatalf("topics left: %s", got)
	}
	res, err = f.adm.DeleteInternalTopics(ctx(t), "app", false)
	if err != nil || len(res.Deleted) != 0 || len(res.Absent) != 2 {
		t.Fatalf("again: %+v %v", res, err)
	}
	// A dry run reports the topics that are gone as absent, not as topics it would delete. A fresh
	// client, as in topicNames: f.cl's metadata cache may still hold the deleted topics.
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.cl.OptValue(kgo.SeedBrokers).([]string)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err = NewClient(cl).DeleteInternalTopics(ctx(t), "app", true)
	if err != nil || fmt.Sprint(res.Deleted, res.Absent) != fmt.Sprint([]string(nil), []string{tRep, tLog}) {
		t.Fatalf("dry run once deleted: %+v %v", res, err)
	}
}

func topicNames(t *testing.T, f *fakeApp) string {
	t.Helper()
	// A fresh client: kgo may answer a metadata request from its cache, which can predate a deletion.
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.cl.OptValue(kgo.SeedBrokers).([]string)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(td.Names(), " ")
}

// Offsets reports every partition of the group's input topics (source and repartition source),
// sorted by topic and partition: the committed offset and its leader epoch, -1 for both where
// nothing is committed, and the lag to the log end (the whole log where nothing is committed). A
// commit at offset 0 is a commit.
func TestOffsetsAndLag(t *testing.T) {
	f := newFakeApp(t)
	f.commit(t, map[string]map[int32]int64{tIn: {0: 4, 2: 0}, tIn2: {0: 3}})
	g, err := f.adm.Describe(ctx(t), "app")
	if err != nil {
		t.Fatal(err)
	}
	offs, err := f.adm.Offsets(ctx(t), g)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, o := range offs {
		got += fmt.Sprintf("%s-%d committed %d epoch %d end %d lag %d\n", o.Topic, o.Partition, o.Committed, o.LeaderEpoch, o.End, o.Lag)
	}
	want := tRep + "-0 committed -1 epoch -1 end 0 lag 0\n" +
		tRep + "-1 committed -1 epoch -1 end 0 lag 0\n" +
		"in-0 committed 4 epoch -1 end 10 lag 6\n" +
		"in-1 committed -1 epoch -1 end 10 lag 10\n" +
		"in-2 committed 0 epoch -1 end 10 lag 10\n" +
		"in2-0 committed 3 epoch -1 end 4 lag 1\n"
	if got != want {
		t.Fatalf("offsets:\n%s\nwant:\n%s", got, want)
	}
	if offs, err := f.adm.Offsets(ctx(t), &Group{ID: "app"}); offs != nil || err != nil {
		t.Fatalf("a group without topology: %v %v; want nothing", offs, err)
	}
}

// TopicsResult.Err is nil without failures, and otherwise joins the request's error and each
// refused topic's, by topic name.
func TestTopicsResultErr(t *testing.T) {
	if err := (*TopicsResult)(nil).Err(); err != nil {
		t.Errorf("nil result: %v", err)
	}
	if err := (&TopicsResult{Deleted: []string{"a"}, Failed: map[string]error{}}).Err(); err != nil {
		t.Errorf("no failures: %v", err)
	}
	err := (&TopicsResult{Failed: map[string]error{"b": kerr.TopicAuthorizationFailed, "a": kerr.PolicyViolation}}).Err()
	want := `deleting topic "a": ` + kerr.PolicyViolation.Error() + "\n" + `deleting topic "b": ` + kerr.TopicAuthorizationFailed.Error()
	if err == nil || err.Error() != want || !errors.Is(err, kerr.PolicyViolation) || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("failed topics: %v; want %q", err, want)
	}
	req := errors.New("no route to the controller")
	if err := (&TopicsResult{Failed: map[string]error{}, Request: req}).Err(); !errors.Is(err, req) || err.Error() != req.Error() {
		t.Errorf("request failed: %v", err)
	}
}

// DeleteWithInternalTopics deletes the empty group and then its internal topics (never the ones not
// named as its own), reports a group that cannot be deleted without touching anything of it, leaves
// a group's topics alone when DeleteGroups refuses the group, and in a dry run deletes nothing but
// reports what it would.
func TestDeleteWithInternalTopics(t *testing.T) {
	f := newFakeApp(t)
	all := "app-KSTREAM-REPARTITION-0000000003-repartition app-counts-changelog in in2 other-counts-changelog shared-changelog"
	check := func(what string, errs map[string]error, topics map[string]*TopicsResult, err error, appErr error, appTopics string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if e, ok := errs["app"]; len(errs) != 2 || !ok || !errors.Is(e, appErr) {
			t.Errorf("%s: errors %v; want app: %v", what, errs, appErr)
		}
		if !errors.Is(errs["nope"], ErrGroupNotFound) {
			t.Errorf("%s: nope: %v", what, errs["nope"])
		}
		var got string
		if r, ok := topics["app"]; ok {
			got = fmt.Sprint(r.Deleted, r.Absent, r.NotInferred, r.Err())
		}
		if len(topics) > 1 || got != appTopics {
			t.Errorf("%s: topics %v (app: %q); want app: %q", what, topics, got, appTopics)
		}
	}

	errs, topics, err := f.adm.DeleteWithInternalTopics(ctx(t), true, "app", "nope")
	check("dry run", errs, topics, err, nil, fmt.Sprint([]string{tRep, tLog}, []string(nil), []string{tShared}, nil))
	if asked := f.asked(); len(asked) != 0 || topicNames(t, f) != all {
		t.Fatalf("a dry run deleted: groups %v, topics left %s", asked, topicNames(t, f))
	}

	f.deleteCode.Store(int32(kerr.GroupAuthorizationFailed.Code))
	errs, topics, err = f.adm.DeleteWithInternalTopics(ctx(t), false, "app", "nope")
	check("group refused", errs, topics, err, kerr.GroupAuthorizationFailed, "")
	if topicNames(t, f) != all {
		t.Fatalf("the topics of a group not deleted were deleted: %s", topicNames(t, f))
	}

	f.deleteCode.Store(0)
	errs, topics, err = f.adm.DeleteWithInternalTopics(ctx(t), false, "app", "nope")
	check("delete", errs, topics, err, nil, fmt.Sprint([]string{tRep, tLog}, []string(nil), []string{tShared}, nil))
	if asked := fmt.Sprint(f.asked()); asked != "[app app]" {
		t.Errorf("DeleteGroups asked for %s; want app, once per deleting call", asked)
	}
	if got := topicNames(t, f); got != "in in2 other-counts-changelog shared-changelog" {
		t.Fatalf("topics left: %s", got)
	}

	f.state.Store("Stable")
	errs, topics, err = f.adm.DeleteWithInternalTopics(ctx(t), false, "app")
	if err != nil || len(errs) != 1 || !errors.Is(errs["app"], ErrGroupNotEmpty) || len(topics) != 0 || len(f.asked()) != 2 {
		t.Fatalf("a group with members: %v %v %v, DeleteGroups asked for %v", errs, topics, err, f.asked())
	}
}
