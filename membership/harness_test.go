package membership

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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

// harness drives a Machine with scripted inputs and a fake clock, and keeps every action.
type harness struct {
	t       *testing.T
	m       *Machine
	now     time.Time
	actions []Action
	sent    []*kmsg.StreamsGroupHeartbeatRequest
	invokes []Invoke
	events  []Event
	done    []Done
}

func newHarness(t *testing.T, mutate ...func(*MachineConfig)) *harness {
	cfg := MachineConfig{
		Member: heartbeat.Member{Group: "app", MemberID: "member-1", ProcessID: "p-1", RebalanceTimeout: 30000,
			Topology: testTopology, ClientTags: map[string]string{}},
		Backoff: heartbeat.Backoff{Min: 100 * time.Millisecond, Max: time.Second},
	}
	for _, f := range mutate {
		f(&cfg)
	}
	return &harness{t: t, m: NewMachine(cfg), now: time.Unix(1_000_000, 0)}
}

func (h *harness) record(as []Action) []Action {
	for _, a := range as {
		switch a := a.(type) {
		case Send:
			h.sent = append(h.sent, a.Request)
		case Invoke:
			h.invokes = append(h.invokes, a)
		case Emit:
			h.events = append(h.events, a.Event)
		case Done:
			h.done = append(h.done, a)
		}
	}
	h.actions = append(h.actions, as...)
	return as
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) start() { h.record(h.m.Start(h.now)) }

// tick lets time pass and returns the heartbeat sent, or nil.
func (h *harness) tick() *kmsg.StreamsGroupHeartbeatRequest {
	return h.tickOffsets(nil, nil)
}

func (h *harness) tickOffsets(offs, ends tasks.Offsets) *kmsg.StreamsGroupHeartbeatRequest {
	n := len(h.sent)
	h.record(h.m.Tick(h.now, offs, ends))
	if len(h.sent) > n {
		return h.sent[len(h.sent)-1]
	}
	return nil
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

// answer feeds a successful answer.
func (h *harness) answer(r *kmsg.StreamsGroupHeartbeatResponse) {
	h.t.Helper()
	parsed, err := heartbeat.Parse(r, testTopology)
	if err != nil {
		h.record(h.m.HeartbeatFailed(h.now, err))
		return
	}
	h.record(h.m.HeartbeatAnswered(h.now, parsed))
}

// fail feeds an answer with an error code.
func (h *harness) fail(code int16) {
	h.record(h.m.HeartbeatFailed(h.now, heartbeat.ErrorFor(code, nil)))
}

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
	h.record(h.m.CallbackDone(h.now, h.lastInvoke().Seq, err))
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

func (h *harness) hasEvent(kind EventKind) bool {
	for _, e := range h.events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func (h *harness) countEvents(kind EventKind) int {
	n := 0
	for _, e := range h.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
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

func isErr(err, target error) bool { return errors.Is(err, target) }

var _ = fmt.Sprint
var _ = kerr.UnknownMemberID
