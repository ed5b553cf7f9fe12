package heartbeat

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

var topo = topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}})

func member() JoinInfo {
	return JoinInfo{Group: "g", MemberID: "m", ProcessID: "p", RebalanceTimeout: 1000, Topology: topo, TopologyEpoch: 2,
		Rack: "r1", EndpointHost: "h", EndpointPort: 9, HasEndpoint: true, ClientTags: map[string]string{"b": "2", "a": "1"}}
}

func a(ids ...int32) tasks.Assignment {
	var s []tasks.ID
	for _, p := range ids {
		s = append(s, tasks.ID{Subtopology: "0", Partition: p})
	}
	return tasks.Assignment{Active: tasks.NewSet(s...)}
}

func TestBuilderJoinCarriesEverything(t *testing.T) {
	b := NewBuilder(member())
	req := b.Build(Report{Epoch: EpochJoin, EndpointEpoch: -1})
	if req.Topology == nil || req.Topology.Epoch != 2 {
		t.Fatal("join must carry the topology with topology.epoch")
	}
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil || len(req.ActiveTasks)+len(req.StandbyTasks)+len(req.WarmupTasks) != 0 {
		t.Fatal("join must carry three empty, non-null task lists")
	}
	if req.RebalanceTimeoutMillis != 1000 || *req.ProcessID != "p" || *req.RackID != "r1" || req.UserEndpoint.Port != 9 {
		t.Fatalf("join fields: %+v", req)
	}
	if len(req.ClientTags) != 2 || req.ClientTags[0].Key != "a" {
		t.Fatalf("client tags must be a sorted list: %+v", req.ClientTags)
	}
	if req.InstanceID != nil || req.TaskOffsets != nil {
		t.Fatal("no instance ID for a dynamic member, no offsets when unsupported")
	}
}

func TestBuilderDeltasAndReset(t *testing.T) {
	b := NewBuilder(member())
	b.Build(Report{Epoch: 0})
	req := b.Build(Report{Epoch: 1, Owned: tasks.Assignment{}})
	if req.ActiveTasks != nil || req.Topology != nil || req.RebalanceTimeoutMillis != -1 || req.ProcessID != nil || req.ClientTags != nil {
		t.Fatalf("a steady-state heartbeat carries only what changed: %+v", req)
	}
	req = b.Build(Report{Epoch: 1, Owned: a(0)})
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
		t.Fatal("a changed assignment sends all three lists")
	}
	if req = b.Build(Report{Epoch: 1, Owned: a(0)}); req.ActiveTasks != nil {
		t.Fatal("unchanged lists must be null")
	}
	b.Reset()
	req = b.Build(Report{Epoch: 1, Owned: a(0)})
	if req.ActiveTasks == nil || req.ProcessID == nil || req.RebalanceTimeoutMillis != 1000 || req.Topology != nil {
		t.Fatalf("after Reset the request is full except the topology: %+v", req)
	}
	leave := b.Build(Report{Epoch: EpochLeave, Owned: a(0), Shutdown: true})
	if leave.MemberEpoch != -1 || leave.ActiveTasks != nil || leave.ProcessID != nil || !leave.ShutdownApplication {
		t.Fatalf("leave: %+v", leave)
	}
	m := member()
	m.InstanceID = "i"
	if req := NewBuilder(m).Build(Report{Epoch: EpochLeaveStatic}); req.InstanceID == nil || *req.InstanceID != "i" {
		t.Fatal("a static member sends its instance ID on every heartbeat")
	}
}

func TestBuilderOffsets(t *testing.T) {
	m := member()
	b := NewBuilder(m)
	offs := tasks.Offsets{{Subtopology: "0", Partition: 0}: 10}
	ends := tasks.Offsets{{Subtopology: "0", Partition: 0}: 20}
	req := b.Build(Report{Epoch: 0, Offsets: offs, EndOffsets: ends})
	if len(req.TaskOffsets) != 1 || len(req.TaskEndOffsets) != 1 {
		t.Fatal("offsets go with the join")
	}
	if req := b.Build(Report{Epoch: 1, Offsets: offs, EndOffsets: ends, SendOffsets: true}); req.TaskOffsets != nil || req.TaskEndOffsets != nil {
		t.Fatal("unchanged offsets must not be resent")
	}
	offs2 := tasks.Offsets{{Subtopology: "0", Partition: 0}: 11}
	if req := b.Build(Report{Epoch: 1, Offsets: offs2, EndOffsets: ends, SendOffsets: false}); req.TaskOffsets != nil {
		t.Fatal("offsets are sent only when due")
	}
	req = b.Build(Report{Epoch: 1, Offsets: offs2, EndOffsets: ends, SendOffsets: true})
	if req.TaskOffsets == nil || req.TaskEndOffsets != nil {
		t.Fatal("each list is sent only when it changed")
	}
	b.Reset()
	if req := b.Build(Report{Epoch: 1, Offsets: offs2, EndOffsets: ends, SendOffsets: true}); req.TaskOffsets == nil || req.TaskEndOffsets == nil {
		t.Fatal("after a reset offsets are resent in full")
	}
	if req := b.Build(Report{Epoch: 0}); req.TaskOffsets != nil || req.TaskEndOffsets != nil {
		t.Fatal("no offsets given, none sent, even on a join")
	}
}

func response() *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version, r.MemberEpoch, r.HeartbeatIntervalMillis = 1, 3, 500
	return r
}

func TestParse(t *testing.T) {
	r := response()
	r.AcceptableRecoveryLag = 100
	r.TaskOffsetIntervalMillis = 15000
	r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1, 0}}}
	r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 5}, {StatusCode: 99, StatusDetail: "new"}}
	r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
		{UserEndpoint: kmsg.Endpoint{Host: "h", Port: 1}, ActivePartitions: []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: "in", Partitions: []int32{2}}}},
		{UserEndpoint: kmsg.Endpoint{Host: "h", Port: 1}, ActivePartitions: []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: "in", Partitions: []int32{0, 2}}}},
	}
	p, err := parse(r, topo)
	if err != nil {
		t.Fatal(err)
	}
	if p.Epoch != 3 || p.Interval != 500*time.Millisecond || p.Assignment.Active.Len() != 2 || p.AcceptableRecoveryLag != 100 || p.TaskOffsetInterval != 15*time.Second {
		t.Fatalf("parsed %+v", p)
	}
	if p.Ready() || !p.Has(AssignmentDelayed) || p.Statuses[1].Code.Known() {
		t.Fatal("statuses")
	}
	if got := p.Endpoints[Endpoint{"h", 1}].Active["in"]; !reflect.DeepEqual(got, []int32{0, 2}) {
		t.Fatalf("entries of one endpoint must merge: %v", got)
	}
	r.Version = 0
	if p, _ := parse(r, topo); p.AcceptableRecoveryLag != -1 {
		t.Fatal("a v0 answer has no recovery lag")
	}
}

func TestParseRejectsMalformedAnswers(t *testing.T) {
	r := response()
	r.ActiveTasks = []kmsg.TaskIDs{}
	var pe *ProtocolError
	if _, err := parse(r, topo); !errors.As(err, &pe) {
		t.Fatalf("partial task lists: %v", err)
	}
	r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{-1}}}
	if _, err := parse(r, topo); !errors.As(err, &pe) {
		t.Fatalf("negative partition: %v", err)
	}
	r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "5", Partitions: []int32{0}}}
	var ue *tasks.UnknownSubtopologyError
	if _, err := parse(r, topo); !errors.As(err, &ue) {
		t.Fatalf("unknown subtopology: %v", err)
	}
	r = response()
	r.ErrorCode = 16
	if _, err := parse(r, topo); !errors.As(err, &pe) {
		t.Fatal("an error answer is not a success")
	}
	r = response()
	r.HeartbeatIntervalMillis = -5
	if _, err := parse(r, topo); !errors.As(err, &pe) {
		t.Fatal("negative interval")
	}
}

func TestStatusTopics(t *testing.T) {
	cases := []struct {
		s    Status
		want []string
	}{
		{Status{MissingSourceTopics, "Source topics b, a are missing."}, []string{"a", "b"}},
		{Status{MissingSourceTopics, "Source topics in are missing."}, []string{"in"}},
		{Status{MissingInternalTopics, "Internal topics are missing: app-x-changelog, app-y-repartition; Unauthorized to CREATE on topics app-x-changelog."},
			[]string{"app-x-changelog", "app-y-repartition"}},
		{Status{IncorrectlyPartitionedTopics, "Following topics do not have the same number of partitions: [l, r]"}, []string{"l", "r"}},
		{Status{AssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay."}, nil},
	}
	for _, c := range cases {
		if got := c.s.Topics(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.s.Detail, got, c.want)
		}
	}
	if StatusCode(6).String() != "MISSING_CLIENT_TAGS" || StatusCode(77).String() != "UNKNOWN_STATUS_77" {
		t.Error("status names")
	}
}

func TestErrorClasses(t *testing.T) {
	msg := "Topology updates are not supported yet."
	cases := []struct {
		code  int16
		msg   *string
		class Class
		is    error
	}{
		{14, nil, Retry, kerr.CoordinatorLoadInProgress},
		{15, nil, Rediscover, kerr.CoordinatorNotAvailable},
		{16, nil, Rediscover, kerr.NotCoordinator},
		{25, nil, Fenced, kerr.UnknownMemberID},
		{110, nil, Fenced, kerr.FencedMemberEpoch},
		{29, nil, KeepState, kerr.TopicAuthorizationFailed},
		{-1, nil, KeepState, kerr.UnknownServerError},
		{30, nil, Fatal, kerr.GroupAuthorizationFailed},
		{35, nil, Fatal, ErrNotSupported},
		{42, &msg, Fatal, ErrTopologyMismatch},
		{130, nil, Fatal, kerr.StreamsInvalidTopology},
		{82, nil, Fatal, kerr.FencedInstanceID},
		{111, nil, Fatal, kerr.UnreleasedInstanceID},
		{12345, nil, Fatal, nil},
	}
	for _, c := range cases {
		e := ErrorFor(c.code, c.msg)
		if e.Class != c.class {
			t.Errorf("code %d: class %s, want %s", c.code, e.Class, c.class)
		}
		if c.is != nil && !errors.Is(e, c.is) {
			t.Errorf("code %d: errors.Is(%v) is false", c.code, c.is)
		}
		if e.Class == Fatal && e.Action == "" {
			t.Errorf("code %d: a fatal error must say what to do", c.code)
		}
	}
	if ErrorFor(0, nil) != nil {
		t.Error("code 0 is no error")
	}
	static := "Static membership is not yet supported."
	if e := ErrorFor(42, &static); !errors.Is(e, ErrNotSupported) || !strings.Contains(e.Error(), "Kafka 4.4+") {
		t.Errorf("static membership on an old broker: %v", e)
	}
	if !strings.Contains(ErrorFor(35, nil).Error(), "streams.version >= 1") {
		t.Error("the unsupported-version message must say what the cluster needs")
	}
}

func TestClassifyTransport(t *testing.T) {
	if c := ClassifyTransport(errors.New("read: connection reset by peer")); c.Class != Rediscover {
		t.Errorf("connection errors are retried against a rediscovered coordinator: %s", c.Class)
	}
	tooOld := ClassifyTransport(errors.New("broker is too old; the broker has a max version of -1"))
	if tooOld.Class != Fatal || !errors.Is(tooOld, ErrNotSupported) || !strings.Contains(tooOld.Error(), "Kafka 4.2+") {
		t.Errorf("a broker without the API is fatal and says why: %v", tooOld)
	}
}

func TestCapabilities(t *testing.T) {
	if err := (Capabilities{HeartbeatMaxVersion: -1}).Check(); !errors.Is(err, ErrNotSupported) {
		t.Error("no heartbeat API")
	}
	if err := (Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 0}).Check(); !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "streams.version") {
		t.Error("feature off")
	}
	c := Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}
	if c.Check() != nil || !c.StaticMembership() || !c.TaskOffsets() {
		t.Error("a 4.4 cluster")
	}
}

// A member with 1,000 tasks over 20 subtopologies.
func benchMember() (JoinInfo, tasks.Assignment) {
	var subs []topology.Subtopology
	var ids []tasks.ID
	for s := range 20 {
		id := string(rune('a' + s))
		subs = append(subs, topology.Subtopology{ID: id, SourceTopics: []string{"in-" + id}})
		for p := range 50 {
			ids = append(ids, tasks.ID{Subtopology: id, Partition: int32(p)})
		}
	}
	m := member()
	m.Topology = topology.MustNew(subs...)
	return m, tasks.Assignment{Active: tasks.NewSet(ids...)}
}

func BenchmarkBuildEncodeSteadyState(b *testing.B) {
	m, owned := benchMember()
	bl := NewBuilder(m)
	bl.Build(Report{Epoch: 0})
	bl.Build(Report{Epoch: 1, Owned: owned})
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		req := bl.Build(Report{Epoch: 1, Owned: owned})
		buf = req.AppendTo(buf[:0])
	}
}

func BenchmarkBuildEncodeFull(b *testing.B) {
	m, owned := benchMember()
	bl := NewBuilder(m)
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		bl.Reset()
		req := bl.Build(Report{Epoch: 3, Owned: owned})
		buf = req.AppendTo(buf[:0])
	}
}

func BenchmarkBuildEncodeJoin(b *testing.B) {
	m, _ := benchMember()
	bl := NewBuilder(m)
	buf := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		req := bl.Build(Report{Epoch: 0})
		buf = req.AppendTo(buf[:0])
	}
}

func BenchmarkParseChangedAssignment(b *testing.B) {
	m, owned := benchMember()
	r := response()
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = owned.Active.Kmsg(), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	raw := r.AppendTo(nil)
	b.ReportAllocs()
	for b.Loop() {
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.Version = 1
		if err := resp.ReadFrom(raw); err != nil {
			b.Fatal(err)
		}
		if _, err := parse(resp, m.Topology); err != nil {
			b.Fatal(err)
		}
	}
}
