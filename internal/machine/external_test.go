package machine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// This test uses only the exported API: the Machine can be driven from outside the package, as
// the Manager and the micro-benchmarks drive it (issue 9 §3).

var extTopology = topology.MustNew(
	topology.Subtopology{ID: "0", SourceTopics: []string{"orders"}},
	topology.Subtopology{ID: "1", SourceTopics: []string{"payments"}},
)

var extCaps = heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1} // Kafka 4.4

func extTasks(ids ...string) tasks.Set {
	var out []tasks.ID
	for _, s := range ids {
		id, err := tasks.ParseID(s)
		if err != nil {
			panic(err)
		}
		out = append(out, id)
	}
	return tasks.NewSet(out...)
}

// extAnswer is a broker's successful answer; a nil assignment leaves the three task lists null.
func extAnswer(epoch int32, a *tasks.Assignment) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "m-1"
	r.MemberEpoch = epoch
	r.HeartbeatIntervalMillis = 500
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if a != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = a.Active.Kmsg(), a.Standby.Kmsg(), a.Warmup.Kmsg()
	}
	return r
}

// only returns the one action of type A among as, failing unless there is exactly one.
func only[A machine.Action](t *testing.T, as []machine.Action) A {
	t.Helper()
	var found []A
	for _, a := range as {
		if x, ok := a.(A); ok {
			found = append(found, x)
		}
	}
	if len(found) != 1 {
		var zero A
		t.Fatalf("want one %T among the actions, got %d: %+v", zero, len(found), as)
	}
	return found[0]
}

func none[A machine.Action](t *testing.T, as []machine.Action) {
	t.Helper()
	for _, a := range as {
		if _, ok := a.(A); ok {
			t.Fatalf("unexpected %T among %+v", a, as)
		}
	}
}

// states returns the states entered, in order, from the EventStateChanged events among as.
func states(as []machine.Action) []machine.State {
	var out []machine.State
	for _, a := range as {
		if e, ok := a.(machine.Emit); ok && e.Event.Kind == machine.EventStateChanged {
			out = append(out, e.Event.State)
		}
	}
	return out
}

func owned(req *kmsg.StreamsGroupHeartbeatRequest) string {
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
		return fmt.Sprintf("null lists (%v %v %v)", req.ActiveTasks == nil, req.StandbyTasks == nil, req.WarmupTasks == nil)
	}
	return tasks.Assignment{Active: tasks.FromKmsg(req.ActiveTasks), Standby: tasks.FromKmsg(req.StandbyTasks),
		Warmup: tasks.FromKmsg(req.WarmupTasks)}.String()
}

// TestMachineDrivenFromOutside runs a member's whole life — join, assignment, ack, stable, Close,
// revocation, leave — with nothing but Machine.Step and the exported inputs and actions.
func TestMachineDrivenFromOutside(t *testing.T) {
	m := machine.New(machine.Config{
		Join: heartbeat.JoinInfo{Group: "app", MemberID: "m-1", ProcessID: "p-1", RebalanceTimeout: 30000,
			Topology: extTopology, ClientTags: map[string]string{}},
		Backoff: heartbeat.Backoff{Min: 100 * time.Millisecond, Max: time.Second},
	})
	now := time.Unix(1_000_000, 0)

	// Start: the cluster is probed before anything is sent.
	as := m.Step(now, machine.Start{})
	only[machine.ProbeCapabilities](t, as)
	none[machine.SendHeartbeat](t, as)

	// The cluster runs streams groups: join at once with epoch 0, the topology and three empty lists.
	as = m.Step(now, machine.CapabilitiesKnown{Caps: extCaps})
	if got := states(as); !slices.Equal(got, []machine.State{machine.Joining}) {
		t.Fatalf("states %v, want [JOINING]", got)
	}
	join := only[machine.SendHeartbeat](t, as)
	req := join.Request
	if req.Group != "app" || req.MemberID != "m-1" || req.MemberEpoch != 0 {
		t.Fatalf("join %s/%s at epoch %d", req.Group, req.MemberID, req.MemberEpoch)
	}
	if req.Topology == nil || len(req.Topology.Subtopologies) != 2 || req.Topology.Epoch != 0 {
		t.Fatalf("join topology %+v", req.Topology)
	}
	if owned(req) != "active=[] standby=[] warmup=[]" || len(req.ActiveTasks) != 0 {
		t.Fatalf("join owned lists: %s", owned(req))
	}
	if req.RebalanceTimeoutMillis != 30000 || req.ProcessID == nil || *req.ProcessID != "p-1" || req.InstanceID != nil {
		t.Fatalf("join fields: rebalance timeout %d, process %v, instance %v", req.RebalanceTimeoutMillis, req.ProcessID, req.InstanceID)
	}

	// The broker assigns: OnTasksAssigned with the whole target, and the group is ready.
	target := tasks.Assignment{Active: extTasks("0_0", "1_1"), Standby: extTasks("0_1")}
	as = m.Step(now, machine.HeartbeatDone{Seq: join.Seq, Response: extAnswer(1, &target)})
	if got := states(as); !slices.Equal(got, []machine.State{machine.Reconciling}) {
		t.Fatalf("states %v, want [RECONCILING]", got)
	}
	assign := only[machine.Invoke](t, as)
	if assign.Kind != machine.CallbackAssigned || !assign.Assignment.Equal(target) || !assign.Ready {
		t.Fatalf("callback %s %v ready=%v, want OnTasksAssigned %v ready", assign.Kind, assign.Assignment, assign.Ready, target)
	}
	none[machine.SendHeartbeat](t, as)
	if snap := m.Snapshot(); !snap.Owned.IsEmpty() || snap.Epoch != 1 {
		t.Fatalf("before OnTasksAssigned returns: owned %v epoch %d", snap.Owned, snap.Epoch)
	}

	// OnTasksAssigned returns: ACKNOWLEDGING, the ack goes at once with the owned lists, and building
	// it makes the member STABLE.
	as = m.Step(now, machine.CallbackDone{Seq: assign.Seq})
	if got := states(as); !slices.Equal(got, []machine.State{machine.Acknowledging, machine.Stable}) {
		t.Fatalf("states %v, want [ACKNOWLEDGING STABLE]", got)
	}
	ack := only[machine.SendHeartbeat](t, as)
	if ack.Request.MemberEpoch != 1 || ack.Request.Topology != nil {
		t.Fatalf("ack at epoch %d with topology %v", ack.Request.MemberEpoch, ack.Request.Topology != nil)
	}
	if got := owned(ack.Request); got != "active=[0_0 1_1] standby=[0_1] warmup=[]" {
		t.Fatalf("ack owned lists: %s", got)
	}
	if snap := m.Snapshot(); !snap.Owned.Equal(target) || snap.State != machine.Stable {
		t.Fatalf("after the ack: %+v", snap)
	}
	as = m.Step(now, machine.HeartbeatDone{Seq: ack.Seq, Response: extAnswer(1, nil)})
	if len(states(as)) != 0 || m.State() != machine.Stable {
		t.Fatalf("the ack's answer moved the member: %v, %s", states(as), m.State())
	}

	// Nothing is due before the interval; at the interval a heartbeat with nothing changed goes.
	if next := m.Next(); !next.Equal(now.Add(500 * time.Millisecond)) {
		t.Fatalf("next step at %v, want the interval", next.Sub(now))
	}
	none[machine.SendHeartbeat](t, m.Step(now.Add(499*time.Millisecond), machine.Tick{}))
	now = now.Add(500 * time.Millisecond)
	steady := only[machine.SendHeartbeat](t, m.Step(now, machine.Tick{}))
	if steady.Request.MemberEpoch != 1 || steady.Request.ActiveTasks != nil || steady.Request.ProcessID != nil {
		t.Fatalf("steady heartbeat: epoch %d, owned %s, process %v", steady.Request.MemberEpoch, owned(steady.Request), steady.Request.ProcessID)
	}
	m.Step(now, machine.HeartbeatDone{Seq: steady.Seq, Response: extAnswer(1, nil)})

	// Close: PREPARE_LEAVING, the held active tasks revoked first.
	as = m.Step(now, machine.Close{Mode: machine.CloseDefault})
	if got := states(as); !slices.Equal(got, []machine.State{machine.PrepareLeaving}) {
		t.Fatalf("states %v, want [PREPARE_LEAVING]", got)
	}
	revoke := only[machine.Invoke](t, as)
	if revoke.Kind != machine.CallbackRevoked || !revoke.Tasks.Equal(target.Active) {
		t.Fatalf("callback %s %v, want OnTasksRevoked %v", revoke.Kind, revoke.Tasks, target.Active)
	}
	none[machine.SendLeave](t, as)

	// OnTasksRevoked returns: LEAVING, and the leave heartbeat (epoch -1, identity only).
	as = m.Step(now, machine.CallbackDone{Seq: revoke.Seq})
	if got := states(as); !slices.Equal(got, []machine.State{machine.Leaving}) {
		t.Fatalf("states %v, want [LEAVING]", got)
	}
	leave := only[machine.SendLeave](t, as)
	if r := leave.Request; r.MemberEpoch != heartbeat.EpochLeave || r.MemberID != "m-1" || r.Group != "app" ||
		r.Topology != nil || r.ActiveTasks != nil || r.ProcessID != nil {
		t.Fatalf("leave request %+v", r)
	}
	if leave.Timeout <= 0 {
		t.Fatalf("leave timeout %v", leave.Timeout)
	}
	none[machine.Stopped](t, as)
	if snap := m.Snapshot(); !snap.Owned.IsEmpty() {
		t.Fatalf("the application still holds %v after the leave's revocation", snap.Owned)
	}

	// The broker takes the leave: UNSUBSCRIBED, EventLeft, and Stopped(nil) as the last action.
	took := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	took.MemberEpoch = heartbeat.EpochLeave
	as = m.Step(now, machine.LeaveDone{Seq: leave.Seq, Response: took})
	if got := states(as); !slices.Equal(got, []machine.State{machine.Unsubscribed}) {
		t.Fatalf("states %v, want [UNSUBSCRIBED]", got)
	}
	left := false
	for _, a := range as {
		if e, ok := a.(machine.Emit); ok && e.Event.Kind == machine.EventLeft {
			left = e.Event.Err == nil
		}
	}
	if !left {
		t.Fatalf("no EventLeft without error among %+v", as)
	}
	if stop, ok := as[len(as)-1].(machine.Stopped); !ok || stop.Err != nil {
		t.Fatalf("last action %+v, want Stopped(nil)", as[len(as)-1])
	}
	only[machine.Stopped](t, as)
	if !m.Snapshot().Stopped || !m.Next().IsZero() {
		t.Fatal("the machine is not stopped")
	}
	if as := m.Step(now.Add(time.Hour), machine.Tick{}); len(as) != 0 {
		t.Fatalf("actions after Stopped: %+v", as)
	}
}
