package machine

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// testTopology has two subtopologies: "0" reads t0, "1" reads t1 and a repartition topic.
var testTopology = topology.MustNew(
	topology.Subtopology{ID: "0", SourceTopics: []string{"t0"}, RepartitionSinkTopics: []string{"rep"}},
	topology.Subtopology{ID: "1", SourceTopics: []string{"t1"}, RepartitionSourceTopics: []topology.TopicInfo{{Name: "rep"}}},
)

const interval = 500 * time.Millisecond

// caps44 is what a Kafka 4.4 cluster says it supports.
var caps44 = heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}

// harness drives a Machine with scripted inputs and a fake clock, and keeps every action. The
// capability probe, offset collections and describes are answered by the harness as configured
// (caps, offs/ends, described); everything else is answered by the test.
type harness struct {
	t       *testing.T
	m       *Machine
	now     time.Time
	actions []Action

	sent     []*kmsg.StreamsGroupHeartbeatRequest
	seqs     []uint64
	consumed int // heartbeats already returned by tick/mustSend
	leaves   []SendLeave
	invokes  []Invoke
	events   []Event
	stopped  []Stopped
	probes   int
	collects int
	describe int

	caps           heartbeat.Capabilities
	capsErr        error
	offs, ends     tasks.Offsets
	holdOffs       bool // leave CollectOffsets unanswered until tick
	pendingCollect *CollectOffsets
	described      Described
}

func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	cfg := Config{
		Join: heartbeat.JoinInfo{Group: "app", MemberID: "member-1", ProcessID: "p-1", RebalanceTimeout: 30000,
			Topology: testTopology, ClientTags: map[string]string{}},
		Backoff: heartbeat.Backoff{Min: 100 * time.Millisecond, Max: time.Second},
	}
	for _, f := range mutate {
		f(&cfg)
	}
	return &harness{t: t, m: New(cfg), now: time.Unix(1_000_000, 0), caps: caps44,
		described: Described{Err: errors.New("not described in this test")}}
}

// step feeds one input and answers what the harness answers.
func (h *harness) step(in Input) []Action {
	as := h.m.Step(h.now, in)
	h.record(as)
	for _, a := range as {
		switch a := a.(type) {
		case ProbeCapabilities:
			h.step(CapabilitiesKnown{Caps: h.caps, Err: h.capsErr})
		case CollectOffsets:
			if h.holdOffs {
				h.pendingCollect = &a
			} else {
				h.step(OffsetsCollected{Seq: a.Seq, Offsets: h.offs, Ends: h.ends})
			}
		case Describe:
			h.step(h.described)
		}
	}
	return as
}

func (h *harness) record(as []Action) {
	for _, a := range as {
		switch a := a.(type) {
		case SendHeartbeat:
			h.sent = append(h.sent, a.Request)
			h.seqs = append(h.seqs, a.Seq)
		case SendLeave:
			h.leaves = append(h.leaves, a)
		case Invoke:
			h.invokes = append(h.invokes, a)
		case Emit:
			h.events = append(h.events, a.Event)
		case Stopped:
			h.stopped = append(h.stopped, a)
		case ProbeCapabilities:
			h.probes++
		case CollectOffsets:
			h.collects++
		case Describe:
			h.describe++
		}
	}
	h.actions = append(h.actions, as...)
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

// leaveAnswered answers the last leave heartbeat with code.
func (h *harness) leaveAnswered(code int16) []Action {
	h.t.Helper()
	if len(h.leaves) == 0 {
		h.t.Fatal("no leave heartbeat was sent")
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.ErrorCode, resp.MemberEpoch = code, heartbeat.EpochLeave
	return h.step(LeaveDone{Seq: h.leaves[len(h.leaves)-1].Seq, Response: resp})
}

// leaveFailed answers the last leave heartbeat with a failure to send it.
func (h *harness) leaveFailed(err error) []Action {
	h.t.Helper()
	if len(h.leaves) == 0 {
		h.t.Fatal("no leave heartbeat was sent")
	}
	return h.step(LeaveDone{Seq: h.leaves[len(h.leaves)-1].Seq, Err: err})
}

// start starts the member; the harness answers the probe with h.caps, so it joins at once.
func (h *harness) start() { h.step(Start{}) }

// tick lets time pass and returns the heartbeat sent since the last one returned, or nil.
func (h *harness) tick() *kmsg.StreamsGroupHeartbeatRequest {
	if len(h.sent) == h.consumed && h.pendingCollect == nil {
		h.step(Tick{})
	}
	if c := h.pendingCollect; c != nil && len(h.sent) == h.consumed {
		h.pendingCollect = nil
		h.step(OffsetsCollected{Seq: c.Seq, Offsets: h.offs, Ends: h.ends})
	}
	if len(h.sent) > h.consumed {
		h.consumed = len(h.sent)
		return h.sent[h.consumed-1]
	}
	return nil
}

// tickOffsets is tick with the provider reporting offs and ends.
func (h *harness) tickOffsets(offs, ends tasks.Offsets) *kmsg.StreamsGroupHeartbeatRequest {
	h.offs, h.ends = offs, ends
	return h.tick()
}

// mustSend ticks and fails unless a heartbeat goes out.
func (h *harness) mustSend() *kmsg.StreamsGroupHeartbeatRequest {
	h.t.Helper()
	req := h.tick()
	if req == nil {
		h.t.Fatalf("no heartbeat sent in state %s", h.m.State())
	}
	return req
}

func (h *harness) lastSeq() uint64 {
	if len(h.seqs) == 0 {
		return 0
	}
	return h.seqs[len(h.seqs)-1]
}

// answer feeds an answer to the last heartbeat sent.
func (h *harness) answer(r *kmsg.StreamsGroupHeartbeatResponse) {
	h.step(HeartbeatDone{Seq: h.lastSeq(), Response: r})
}

// fail answers the last heartbeat with an error code.
func (h *harness) fail(code int16) {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.ErrorCode = code
	h.answer(r)
}

// cut fails the last heartbeat without an answer.
func (h *harness) cut(err error) { h.step(HeartbeatDone{Seq: h.lastSeq(), Err: err}) }

func (h *harness) close(mode CloseMode) { h.step(Close{Mode: mode}) }

// owned returns what the application holds.
func (h *harness) owned() tasks.Assignment { return h.m.Snapshot().Owned }

// lastInvoke returns the outstanding callback.
func (h *harness) lastInvoke() Invoke {
	h.t.Helper()
	if len(h.invokes) == 0 {
		h.t.Fatal("no callback invoked")
	}
	return h.invokes[len(h.invokes)-1]
}

// complete finishes the outstanding callback with err.
func (h *harness) complete(err error) {
	h.t.Helper()
	h.step(CallbackDone{Seq: h.lastInvoke().Seq, Err: err})
}

func (h *harness) expectState(s State) {
	h.t.Helper()
	if h.m.State() != s {
		h.t.Fatalf("state %s, want %s", h.m.State(), s)
	}
}

func (h *harness) expectInvoke(kind CallbackKind, want string) Invoke {
	h.t.Helper()
	inv := h.lastInvoke()
	if inv.Kind != kind {
		h.t.Fatalf("callback %s, want %s", inv.Kind, kind)
	}
	var got string
	switch kind {
	case CallbackRevoked:
		got = inv.Tasks.String()
	default:
		got = inv.Assignment.String()
	}
	if got != want {
		h.t.Fatalf("%s got %s, want %s", kind, got, want)
	}
	return inv
}

func (h *harness) hasEvent(kind EventKind) bool { return h.countEvents(kind) > 0 }

func (h *harness) countEvents(kind EventKind) int {
	n := 0
	for _, e := range h.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func (h *harness) lastEvent(kind EventKind) Event {
	h.t.Helper()
	for i := len(h.events) - 1; i >= 0; i-- {
		if h.events[i].Kind == kind {
			return h.events[i]
		}
	}
	h.t.Fatalf("no %s event", kind)
	return Event{}
}

// set parses task IDs like "0_1".
func set(ids ...string) tasks.Set {
	out := make([]tasks.ID, 0, len(ids))
	for _, s := range ids {
		id, err := tasks.ParseID(s)
		if err != nil {
			panic(err)
		}
		out = append(out, id)
	}
	return tasks.NewSet(out...)
}

// resp builds an answer; a nil assignment leaves the three task lists null (unchanged).
func resp(epoch int32, a *tasks.Assignment, statuses ...heartbeat.Status) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "member-1"
	r.MemberEpoch = epoch
	r.HeartbeatIntervalMillis = int32(interval / time.Millisecond)
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	for _, s := range statuses {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: int8(s.Code), StatusDetail: s.Detail})
	}
	if a != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = a.Active.Kmsg(), a.Standby.Kmsg(), a.Warmup.Kmsg()
	}
	return r
}

func active(ids ...string) *tasks.Assignment  { return &tasks.Assignment{Active: set(ids...)} }
func standby(ids ...string) *tasks.Assignment { return &tasks.Assignment{Standby: set(ids...)} }
func warmup(ids ...string) *tasks.Assignment  { return &tasks.Assignment{Warmup: set(ids...)} }

// owned renders a request's owned task lists, or "null".
func owned(req *kmsg.StreamsGroupHeartbeatRequest) string {
	if req.ActiveTasks == nil && req.StandbyTasks == nil && req.WarmupTasks == nil {
		return "null"
	}
	return tasks.Assignment{Active: tasks.FromKmsg(req.ActiveTasks), Standby: tasks.FromKmsg(req.StandbyTasks),
		Warmup: tasks.FromKmsg(req.WarmupTasks)}.String()
}

// stableWith joins and reconciles to a, leaving the machine Stable at epoch 1 with a owned.
func (h *harness) stableWith(a *tasks.Assignment) {
	h.t.Helper()
	h.start()
	h.mustSend()
	h.answer(resp(1, a))
	h.complete(nil) // OnTasksAssigned
	h.mustSend()    // ack
	h.answer(resp(1, nil))
	h.expectState(Stable)
}

func static(c *Config) { c.Join.InstanceID = "instance-a" }

// expectPassedThrough fails unless the member was in state s at some point.
func (h *harness) expectPassedThrough(s State) {
	h.t.Helper()
	for _, e := range h.events {
		if e.Kind == EventStateChanged && e.State == s {
			return
		}
	}
	h.t.Fatalf("never in state %s", s)
}
