package machine

import (
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The allocation guard (issue 12, part 4): the two hot paths of a member in the steady state may not
// allocate more than they do today plus a little. Allocation counts are the same on any machine, so
// they can fail a test; times are not, so no time is checked here (make bench and make bench-compare
// measure them).
//
//	steady heartbeat, built and encoded          ≤ 2 allocations
//	one machine step: Tick, then HeartbeatDone   ≤ 5 allocations
//
// Both use the member of BenchmarkMachineStep: 1,000 active tasks over 20 subtopologies.
const (
	allocLimitHeartbeat   = 2
	allocLimitMachineStep = 5
)

func TestAllocations(t *testing.T) {
	if raceEnabled() {
		// The race detector's instrumentation allocates on its own; make test also runs this test
		// without -race (make alloc-guard), where the counts are the real ones.
		t.Skip("allocation counts are not meaningful under -race; run without -race (make alloc-guard)")
	}
	t.Run("heartbeat build+encode", func(t *testing.T) {
		join, owned := allocMember()
		b := heartbeat.NewBuilder(join)
		b.Build(heartbeat.Report{Epoch: heartbeat.EpochJoin})
		b.Build(heartbeat.Report{Epoch: 1, Owned: owned}) // the owned lists go once
		buf := make([]byte, 0, 1<<16)
		got := testing.AllocsPerRun(200, func() {
			req := b.Build(heartbeat.Report{Epoch: 1, Owned: owned})
			buf = req.AppendTo(buf[:0])
		})
		if req := b.Build(heartbeat.Report{Epoch: 1, Owned: owned}); req.ActiveTasks != nil {
			t.Fatal("the steady heartbeat carries the owned tasks again: not the steady state")
		}
		if got > allocLimitHeartbeat {
			t.Errorf("a steady-state heartbeat (build + encode) allocates %.0f times, limit %d", got, allocLimitHeartbeat)
		}
		t.Logf("steady heartbeat build+encode: %.0f allocations (limit %d)", got, allocLimitHeartbeat)
	})
	t.Run("machine step", func(t *testing.T) {
		m, step := allocStableMachine(t)
		got := testing.AllocsPerRun(200, step)
		if m.State() != Stable {
			t.Fatalf("state %s after the steady heartbeats, want Stable", m.State())
		}
		if got > allocLimitMachineStep {
			t.Errorf("one steady machine step (Tick, then HeartbeatDone) allocates %.0f times, limit %d", got, allocLimitMachineStep)
		}
		t.Logf("steady machine step: %.0f allocations (limit %d)", got, allocLimitMachineStep)
	})
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// allocMember is a member that owns 1,000 active tasks over 20 subtopologies.
func allocMember() (heartbeat.JoinInfo, tasks.Assignment) {
	var subs []topology.Subtopology
	var ids []tasks.ID
	for s := range 20 {
		id := strconv.Itoa(s)
		subs = append(subs, topology.Subtopology{ID: id, SourceTopics: []string{"topic-" + id}})
		for p := range int32(50) {
			ids = append(ids, tasks.ID{Subtopology: id, Partition: p})
		}
	}
	join := heartbeat.JoinInfo{Group: "app", MemberID: "member-1", ProcessID: "p", RebalanceTimeout: 1000,
		Topology: topology.MustNew(subs...)}
	return join, tasks.Assignment{Active: tasks.NewSet(ids...)}
}

// allocAnswer is a successful answer at epoch 1 with a 500 ms interval; a nil assignment leaves the
// task lists null (unchanged), as the broker answers a steady heartbeat.
func allocAnswer(a *tasks.Assignment) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "member-1"
	r.MemberEpoch = 1
	r.HeartbeatIntervalMillis = 500
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if a != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = a.Active.Kmsg(), a.Standby.Kmsg(), a.Warmup.Kmsg()
	}
	return r
}

// allocStableMachine drives a machine to Stable with 1,000 owned tasks (the setup of
// BenchmarkMachineStep) and returns it with one steady step: the Tick that sends the heartbeat and
// the HeartbeatDone that reads its answer.
func allocStableMachine(t *testing.T) (*Machine, func()) {
	t.Helper()
	join, big := allocMember()
	m := New(Config{
		Join:    join,
		Backoff: heartbeat.Backoff{Min: time.Millisecond, Max: time.Second},
	})
	now := time.Unix(0, 0)
	var seq uint64
	var inv *Invoke
	feed := func(in Input) {
		for _, a := range m.Step(now, in) {
			switch a := a.(type) {
			case SendHeartbeat:
				seq = a.Seq
			case Invoke:
				inv = &a
			}
		}
	}
	feed(Start{})
	feed(CapabilitiesKnown{Caps: heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}})
	feed(HeartbeatDone{Seq: seq, Response: allocAnswer(&big)})
	if inv == nil || inv.Assignment.Active.Len() != 1000 {
		t.Fatalf("no OnTasksAssigned for 1,000 tasks: %+v", inv)
	}
	feed(CallbackDone{Seq: inv.Seq}) // the ack goes
	steady := allocAnswer(nil)
	feed(HeartbeatDone{Seq: seq, Response: steady})
	if m.State() != Stable || m.Snapshot().Owned.Active.Len() != 1000 {
		t.Fatalf("state %s, owned %d; want Stable with 1,000 tasks", m.State(), m.Snapshot().Owned.Active.Len())
	}
	return m, func() {
		now = now.Add(500 * time.Millisecond)
		sent := seq
		feed(Tick{})
		if seq == sent {
			t.Fatal("the Tick sent no heartbeat")
		}
		feed(HeartbeatDone{Seq: seq, Response: steady})
	}
}
