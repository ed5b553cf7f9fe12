package machine

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The conformance scenarios of PROTOCOL §11.1 and §11.2 (membership, heartbeat sender, and the
// Kafka 4.4 task-offset additions), named after the Java tests they mirror, each driving the state
// machine with scripted inputs. This file is the scenario table.
var scenarios = []struct {
	name string
	run  func(h *harness)
}{
	// Setup and response validation
	{"testJoining", func(h *harness) {
		h.start()
		h.expectState(Joining)
		req := h.mustSend()
		if req.MemberEpoch != 0 || req.Topology == nil || req.ActiveTasks == nil || len(req.ActiveTasks) != 0 ||
			req.StandbyTasks == nil || req.WarmupTasks == nil || req.RebalanceTimeoutMillis != 30000 || req.ProcessID == nil {
			h.t.Fatalf("join request is not a full join: %+v", req)
		}
		if req.MemberID != "member-1" || req.Group != "app" || req.EndpointInformationEpoch != -1 {
			h.t.Fatalf("identity fields: %+v", req)
		}
	}},
	{"testActiveTasksAreNullInHeartbeatResponse", func(h *harness) {
		h.start()
		h.mustSend()
		r := resp(1, active("0_0"))
		r.ActiveTasks = nil
		h.answer(r)
		h.expectState(Fatal)
		var pe *heartbeat.ProtocolError
		if len(h.stopped) != 1 || !errors.As(h.stopped[0].Err, &pe) {
			h.t.Fatalf("want one Done with a ProtocolError, got %+v", h.stopped)
		}
	}},
	{"testWarmupTasksAreNullInHeartbeatResponse", func(h *harness) {
		h.start()
		h.mustSend()
		r := resp(1, active("0_0"))
		r.WarmupTasks = nil
		h.answer(r)
		h.expectState(Fatal)
	}},
	{"testKnownTasksAlongsideUnknownSubtopologyInHeartbeatResponseFailMember", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, &tasks.Assignment{Active: set("0_0", "9_0")}))
		h.expectState(Fatal)
		var ue *tasks.UnknownSubtopologyError
		if len(h.stopped) != 1 || !errors.As(h.stopped[0].Err, &ue) || ue.Task.Subtopology != "9" {
			h.t.Fatalf("want a typed unknown-subtopology error, got %+v", h.stopped)
		}
		if len(h.invokes) != 0 {
			h.t.Fatal("no callback may run for an assignment the member cannot process")
		}
	}},
	{"testStandbyTaskOfUnknownSubtopologyInHeartbeatResponseFailsMember", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, standby("7_1")))
		h.expectState(Fatal)
	}},

	// Active-task reconciliation
	{"testReconcilingEmptyToSingleActiveTask", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.expectState(Reconciling)
		h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
		h.complete(nil)
		h.expectPassedThrough(Acknowledging)
		req := h.sent[len(h.sent)-1] // sent at once, without waiting for the interval
		if owned(req) != "active=[0_0] standby=[] warmup=[]" || req.MemberEpoch != 1 {
			h.t.Fatalf("ack carries %s at epoch %d", owned(req), req.MemberEpoch)
		}
		h.expectState(Stable)
	}},
	{"testReconcilingActiveTaskToDifferentActiveTask", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.complete(nil)
		h.expectInvoke(CallbackAssigned, "active=[0_1] standby=[] warmup=[]")
	}},
	{"testReconcilingSingleActiveTaskToAdditionalActiveTask", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		n := len(h.invokes)
		h.answer(resp(2, active("0_0", "0_1")))
		if len(h.invokes) != n+1 || h.lastInvoke().Kind != CallbackAssigned {
			h.t.Fatal("adding a task must not revoke anything")
		}
		h.expectInvoke(CallbackAssigned, "active=[0_0 0_1] standby=[] warmup=[]")
	}},
	{"testReconcilingMultipleActiveTaskToSingleActiveTask", func(h *harness) {
		h.stableWith(active("0_0", "0_1", "1_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.expectInvoke(CallbackRevoked, "[0_0 1_0]")
		h.complete(nil)
		h.expectInvoke(CallbackAssigned, "active=[0_1] standby=[] warmup=[]")
	}},
	{"testReconcilingEmptyToMultipleActiveTaskOfDifferentSubtopologies", func(h *harness) {
		h.stableWith(active("0_0", "1_2"))
		a := h.owned()
		parts, err := tasks.InputPartitions(testTopology, a.Active)
		if err != nil || len(parts) != 3 || parts["t0"][0] != 0 || parts["t1"][0] != 2 || parts["rep"][0] != 2 {
			h.t.Fatalf("input partitions %v (%v)", parts, err)
		}
	}},
	{"testReconcilingActiveTaskToStandbyTask", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, standby("0_0")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.complete(nil)
		h.expectInvoke(CallbackAssigned, "active=[] standby=[0_0] warmup=[]")
	}},
	{"testReconcilingActiveTaskToWarmupTask", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, warmup("0_0")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.complete(nil)
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[0_0]")
	}},

	// Standby and warm-up reconciliation: never a revoke callback
	{"testReconcilingEmptyToSingleStandbyTask", func(h *harness) {
		h.stableWith(standby("0_0"))
		if h.invokes[0].Kind != CallbackAssigned || len(h.invokes) != 1 {
			h.t.Fatalf("invokes %+v", h.invokes)
		}
	}},
	{"testReconcilingStandbyTaskToDifferentStandbyTask", func(h *harness) {
		h.stableWith(standby("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, standby("0_1")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[0_1] warmup=[]")
	}},
	{"testReconcilingMultipleStandbyTaskToSingleStandbyTask", func(h *harness) {
		h.stableWith(standby("0_0", "0_1"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, standby("0_1")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[0_1] warmup=[]")
	}},
	{"testReconcilingStandbyTaskToActiveTask", func(h *harness) {
		h.stableWith(standby("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0")))
		h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
	}},
	{"testReconcilingStandbyTaskToWarmupTask", func(h *harness) {
		h.stableWith(standby("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, warmup("0_0")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[0_0]")
	}},
	{"testReconcilingWarmupTaskToDifferentWarmupTask", func(h *harness) {
		h.stableWith(warmup("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, warmup("0_1")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[0_1]")
	}},
	{"testReconcilingSingleWarmupTaskToAdditionalWarmupTask", func(h *harness) {
		h.stableWith(warmup("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, warmup("0_0", "0_1")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[0_0 0_1]")
	}},
	{"testReconcilingWarmupTaskToActiveTask", func(h *harness) {
		h.stableWith(warmup("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0")))
		h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
	}},
	{"testReconcilingWarmupTaskToStandbyTask", func(h *harness) {
		h.stableWith(warmup("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, standby("0_0")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[0_0] warmup=[]")
	}},
	{"shouldDropStandbyAndWarmupForTaskThatIsAlsoAssignedAsActive", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, &tasks.Assignment{Active: set("0_0"), Standby: set("0_0", "0_1"), Warmup: set("0_0")}))
		h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[0_1] warmup=[]")
	}},

	// Callback failures and aborted reconciliations
	{"testReconcilingAndAssignmentCallbackFails", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.complete(errors.New("boom"))
		h.expectState(Reconciling)
		if a := h.owned(); !a.IsEmpty() {
			h.t.Fatalf("a failed OnTasksAssigned must not change what is owned: %v", a)
		}
		var ce *CallbackError
		if !h.hasEvent(EventError) || !errors.As(h.events[len(h.events)-1].Err, &ce) || ce.Callback != CallbackAssigned {
			h.t.Fatal("the failure must surface as an error event naming the callback")
		}
		n := len(h.invokes)
		h.advance(100 * time.Millisecond) // the backoff
		h.tick()
		if len(h.invokes) != n+1 {
			h.t.Fatal("the reconciliation was not retried")
		}
		h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
		h.complete(nil)
		h.expectPassedThrough(Acknowledging)
		if owned(h.mustSend()) != "active=[0_0] standby=[] warmup=[]" {
			h.t.Fatal("the retried reconciliation was not acknowledged")
		}
	}},
	{"testReconcilingAndRevocationCallbackFails", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.complete(errors.New("commit failed"))
		if h.lastInvoke().Kind != CallbackRevoked {
			h.t.Fatal("OnTasksAssigned must not run after a failed revocation")
		}
		h.advance(100 * time.Millisecond)
		h.tick()
		h.expectInvoke(CallbackRevoked, "[0_0]")
	}},
	{"testReconcilingWhenReconciliationAbortedBeforeAssignmentDueToRejoin", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code)) // fenced while the revocation runs
		h.complete(nil)                            // the revocation returns: the application holds nothing
		if h.lastInvoke().Kind != CallbackRevoked {
			h.t.Fatalf("OnAllTasksLost must not name tasks already revoked: %+v", h.lastInvoke())
		}
		h.expectState(Joining)
		for _, inv := range h.invokes {
			if inv.Kind == CallbackAssigned && inv.Assignment.Active.Contains(tasks.ID{Subtopology: "0", Partition: 1}) {
				h.t.Fatal("the aborted reconciliation went on to assign")
			}
		}
	}},
	{"testReconcilingWhenReconciliationAbortedAfterAssignmentDueToRejoin", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0", "0_1")))
		h.expectInvoke(CallbackAssigned, "active=[0_0 0_1] standby=[] warmup=[]")
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.UnknownMemberID.Code))
		h.complete(nil) // OnTasksAssigned returns after the fencing
		h.expectState(Fenced)
		// The application holds what it was handed, so OnAllTasksLost covers it (invariant 1).
		h.expectInvoke(CallbackLost, "active=[0_0 0_1] standby=[] warmup=[]")
	}},
	{"newerTargetDuringRevocationFinishesTheCapturedTarget", func(h *harness) {
		// Issue 9 item 1.2: owned {0_0 0_1}, target {0_1}, then target {0_2} during the revocation.
		h.stableWith(active("0_0", "0_1"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.advance(interval)
		h.mustSend() // heartbeats go on while the callback runs
		h.answer(resp(3, active("0_2")))
		h.complete(nil)
		// The captured target is finished first (as the Java client does), and acknowledged.
		h.expectInvoke(CallbackAssigned, "active=[0_1] standby=[] warmup=[]")
		h.complete(nil)
		if owned(h.sent[len(h.sent)-1]) != "active=[0_1] standby=[] warmup=[]" {
			h.t.Fatal("the captured target was not acknowledged")
		}
		// Then the newer one: only 0_1 is revoked, 0_0 never again.
		h.expectInvoke(CallbackRevoked, "[0_1]")
		h.complete(nil)
		h.expectInvoke(CallbackAssigned, "active=[0_2] standby=[] warmup=[]")
		revoked := 0
		for _, inv := range h.invokes {
			if inv.Kind == CallbackRevoked && inv.Tasks.Contains(tasks.ID{Subtopology: "0", Partition: 0}) {
				revoked++
			}
		}
		if revoked != 1 {
			h.t.Fatalf("0_0 revoked %d times", revoked)
		}
	}},
	{"newerTargetDuringAssignmentIsReconciledAfterTheAck", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0", "0_1")))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(3, active("0_1")))
		h.complete(nil) // assigned {0_0, 0_1}
		h.expectPassedThrough(Acknowledging)
		req := h.mustSend()
		if owned(req) != "active=[0_0 0_1] standby=[] warmup=[]" {
			h.t.Fatalf("ack must report what the application owns now: %s", owned(req))
		}
		h.expectState(Reconciling)
		h.expectInvoke(CallbackRevoked, "[0_0]")
	}},

	// Leaving
	{"testLeaveGroupWhenNotInGroup", func(h *harness) {
		h.close(CloseDefault)
		if len(h.sent) != 0 || len(h.stopped) != 1 || h.stopped[0].Err != nil {
			h.t.Fatalf("leave while unsubscribed: sent %d, done %+v", len(h.sent), h.stopped)
		}
	}},
	{"testIgnoreLeaveResponseWhenNotLeavingGroup", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(-1, nil))
		h.expectState(Stable)
		if h.m.Epoch() != 1 {
			h.t.Fatalf("epoch changed to %d", h.m.Epoch())
		}
		if h.tick() != nil {
			h.t.Fatal("an ignored answer must not make the member heartbeat at once")
		}
	}},
	{"testLeaveGroupWhenNotInGroupAndFenced", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.expectState(Fenced)
		h.close(CloseDefault)
		if len(h.stopped) != 1 {
			h.t.Fatal("leave while fenced must complete at once")
		}
	}},
	{"testLeaveGroupWhenInGroupWithAssignment", func(h *harness) {
		h.stableWith(active("0_0"))
		h.close(CloseDefault)
		h.expectState(PrepareLeaving)
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.complete(nil)
		h.expectState(Leaving)
		if len(h.leaves) != 1 {
			h.t.Fatalf("%d leave heartbeats", len(h.leaves))
		}
		last := h.leaves[0].Request
		if last.MemberEpoch != heartbeat.EpochLeave || last.Topology != nil || last.ActiveTasks != nil || h.leaves[0].Timeout != DefaultLeaveBudget {
			h.t.Fatalf("leave heartbeat %+v", h.leaves[0])
		}
		if len(h.stopped) != 0 {
			h.t.Fatal("stopped before the leave was answered")
		}
		h.leaveAnswered(0)
		h.expectState(Unsubscribed)
		if len(h.stopped) != 1 || h.stopped[0].Err != nil || h.lastEvent(EventLeft).Message != "left the group" {
			h.t.Fatal("leave must end with Stopped(nil) and a left event")
		}
	}},
	{"testLeaveGroupEpochIsStaticMemberEpochForStaticMember", func(h *harness) {
		h = newHarness(h.t, static)
		h.stableWith(active("0_0"))
		h.close(CloseDefault)
		h.complete(nil)
		last := h.leaves[len(h.leaves)-1].Request
		if last.MemberEpoch != heartbeat.EpochLeaveStatic || last.InstanceID == nil || *last.InstanceID != "instance-a" {
			h.t.Fatalf("static leave: %+v", last)
		}
	}},
	{"testStaticMemberUsesExpectedLeaveEpochOnClose", func(h *harness) {
		h = newHarness(h.t, static)
		h.stableWith(active("0_0"))
		h.close(CloseLeaveGroup)
		h.complete(nil)
		if last := h.leaves[len(h.leaves)-1].Request; last.MemberEpoch != heartbeat.EpochLeave {
			h.t.Fatalf("LEAVE_GROUP must use -1, got %d", last.MemberEpoch)
		}
	}},
	{"testLeaveGroupOnCloseWithRemainInGroupSkipsLeaveHeartbeat", func(h *harness) {
		h.stableWith(active("0_0"))
		n := len(h.sent)
		h.close(CloseRemainInGroup)
		h.complete(nil)
		if len(h.sent) != n || len(h.leaves) != 0 || len(h.stopped) != 1 {
			h.t.Fatal("a dynamic member remaining in the group sends no leave heartbeat")
		}
		if h.lastEvent(EventLeft).Message != "remaining in the group until the session times out" {
			h.t.Fatal("the left event must say the member remains")
		}
	}},
	{"testLeaveWhileJoiningBeforeAnyAnswer", func(h *harness) {
		h.start()
		h.mustSend()
		h.close(CloseDefault)
		// The leave waits for the join's answer: sent beside it, it could reach the broker first,
		// and the join would then put the member back in the group.
		if len(h.leaves) != 0 {
			h.t.Fatal("the leave went while the join heartbeat was out")
		}
		h.answer(resp(1, active("0_0"))) // the join answered: the member may be registered
		if len(h.leaves) != 1 || h.leaves[0].Request.MemberEpoch != heartbeat.EpochLeave {
			h.t.Fatal("a joining member that may be registered must still send a leave")
		}
		if len(h.invokes) != 0 {
			h.t.Fatal("an answer while leaving started a reconciliation")
		}
	}},

	// Heartbeat outcomes by state
	{"testOnHeartbeatSuccessWhenInFatal", func(h *harness) {
		h.start()
		h.mustSend()
		h.fail(int16(kerr.GroupMaxSizeReached.Code))
		h.answer(resp(5, active("0_0")))
		if h.m.Epoch() == 5 || len(h.invokes) != 0 {
			h.t.Fatal("a fatal member must ignore answers")
		}
	}},
	{"testOnHeartbeatSuccessWhenInReconciling", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.complete(nil)
		h.mustSend()
		h.answer(resp(1, nil))
		h.expectState(Stable)
	}},
	{"testOnHeartbeatRequestGeneratedWhenInAcknowledging", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		if owned(h.mustSend()) != "null" { // keepalive while the callback runs: nothing owned changed
			h.t.Fatal("a keepalive during reconciliation must not report owned tasks")
		}
		h.answer(resp(1, nil))
		h.complete(nil)
		h.expectPassedThrough(Acknowledging)
		h.mustSend()
		h.expectState(Stable)
	}},

	// Fencing and fatal
	{"testOnFencedWhenInStable", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.expectState(Fenced)
		if h.tick() != nil {
			h.t.Fatal("no heartbeat while fenced")
		}
		h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
		h.complete(nil)
		h.expectState(Joining)
		req := h.mustSend() // no backoff
		if req.MemberEpoch != 0 || req.MemberID != "member-1" || req.Topology == nil || len(req.ActiveTasks) != 0 {
			h.t.Fatalf("rejoin must be a join with the same member ID: %+v", req)
		}
	}},
	{"testOnFencedWhenInJoining", func(h *harness) {
		h.start()
		h.mustSend()
		h.fail(int16(kerr.UnknownMemberID.Code))
		h.expectState(Joining) // nothing owned: rejoin at once
		if h.mustSend().MemberEpoch != 0 {
			h.t.Fatal("rejoin epoch")
		}
	}},
	{"testOnFencedWhenInLeaving", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.close(CloseDefault) // PrepareLeaving, revoke running
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.complete(nil)
		if len(h.stopped) != 1 {
			h.t.Fatal("the pending leave must complete")
		}
		h.expectState(Unsubscribed)
	}},
	{"testTransitionToFatalWhenInStable", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.GroupAuthorizationFailed.Code))
		h.expectState(Fatal)
		h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
		if len(h.stopped) != 0 {
			h.t.Fatal("Done must wait for OnAllTasksLost")
		}
		h.complete(nil)
		if len(h.stopped) != 1 || !errors.Is(h.stopped[0].Err, kerr.GroupAuthorizationFailed) || !h.hasEvent(EventFatal) {
			h.t.Fatalf("done %+v", h.stopped)
		}
		h.close(CloseDefault)
		h.answer(resp(9, nil))
		if len(h.stopped) != 1 {
			h.t.Fatal("exactly one Done after a fatal error")
		}
	}},
	{"testTransitionToFatalWhenInUnsubscribe", func(h *harness) {
		h.caps = heartbeat.Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 0}
		h.start()
		h.expectState(Fatal)
		if len(h.invokes) != 0 || len(h.stopped) != 1 {
			h.t.Fatal("nothing owned: no OnAllTasksLost, one Done")
		}
	}},

	// Group readiness
	{"testIsGroupReadyWithMissingSourceTopicsStatus", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active(), heartbeat.Status{Code: heartbeat.MissingSourceTopics, Detail: "Source topics t0 are missing."}))
		if inv := h.lastInvoke(); inv.Ready {
			h.t.Fatal("missing source topics: group not ready")
		}
		if !h.hasEvent(EventMissingSourceTopics) {
			h.t.Fatal("no missing-source-topics event")
		}
		for _, e := range h.events {
			if e.Kind == EventMissingSourceTopics && (len(e.Topics) != 1 || e.Topics[0] != "t0") {
				h.t.Fatalf("event names topics %v", e.Topics)
			}
		}
	}},
	{"testIsGroupReadyWithAssignmentDelayedStatus", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active(), heartbeat.Status{Code: heartbeat.AssignmentDelayed}))
		if h.lastInvoke().Ready {
			h.t.Fatal("assignment delayed: group not ready")
		}
	}},
	{"testStreamsRebalanceDelayWhenJoiningEmptyGroupWithNonZeroEpoch", func(h *harness) {
		// The member side: a group that was emptied keeps its epoch, so the join is answered at
		// epoch 6 with no tasks and ASSIGNMENT_DELAYED. The member holds nothing, is not ready,
		// heartbeats at epoch 6, and takes the assignment when the delay is over.
		h.start()
		h.mustSend()
		h.answer(resp(6, active(), heartbeat.Status{Code: heartbeat.AssignmentDelayed}))
		if inv := h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[]"); inv.Ready {
			h.t.Fatal("assignment delayed: group not ready")
		}
		h.complete(nil)
		if ack := h.mustSend(); ack.MemberEpoch != 6 {
			h.t.Fatalf("ack at epoch %d, want 6", ack.MemberEpoch)
		}
		h.answer(resp(6, nil, heartbeat.Status{Code: heartbeat.AssignmentDelayed}))
		h.expectState(Stable)
		h.advance(interval)
		if req := h.mustSend(); req.MemberEpoch != 6 {
			h.t.Fatalf("heartbeat at epoch %d, want 6", req.MemberEpoch)
		}
		h.answer(resp(7, active("0_0", "0_1")))
		if inv := h.expectInvoke(CallbackAssigned, "active=[0_0 0_1] standby=[] warmup=[]"); !inv.Ready {
			h.t.Fatal("the delay is over: the group is ready")
		}
		h.complete(nil)
		if ack := h.mustSend(); ack.MemberEpoch != 7 || owned(ack) != "active=[0_0 0_1] standby=[] warmup=[]" {
			h.t.Fatalf("ack at epoch %d owning %s", ack.MemberEpoch, owned(ack))
		}
	}},
	{"testIsGroupReadyWithOtherStatuses", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active(), heartbeat.Status{Code: heartbeat.StaleTopology}))
		if !h.lastInvoke().Ready {
			h.t.Fatal("STALE_TOPOLOGY does not block readiness")
		}
		if !h.hasEvent(EventStaleTopology) {
			h.t.Fatal("no stale-topology event")
		}
	}},
	{"testIsGroupReadyChangeWhenTasksAreNull", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.AssignmentDelayed}))
		h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
		if h.lastInvoke().Ready {
			h.t.Fatal("readiness change alone must re-run OnTasksAssigned with ready=false")
		}
	}},

	// Statuses
	{"unknownStatusIgnoredAndReportedOnce", func(h *harness) {
		h.stableWith(active("0_0"))
		for range 3 {
			h.advance(interval)
			h.mustSend()
			h.answer(resp(1, nil, heartbeat.Status{Code: 42, Detail: "future"}))
			h.advance(interval)
			h.mustSend()
			h.answer(resp(1, nil))
		}
		if n := h.countEvents(EventUnknownStatus); n != 1 {
			h.t.Fatalf("unknown status reported %d times, want once", n)
		}
		h.expectState(Stable)
	}},
	{"steadyStateEmitsNoEvents", func(h *harness) {
		h.stableWith(active("0_0"))
		n := len(h.events)
		for range 10 {
			h.advance(interval)
			h.mustSend()
			h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.StaleTopology}))
		}
		if got := len(h.events) - n; got != 1 {
			h.t.Fatalf("%d events over 10 identical heartbeats, want 1 (the status appearing)", got)
		}
	}},
	{"missingSourceTopicsTimeoutAfterTwoIntervals", func(h *harness) {
		h.start()
		h.mustSend()
		missing := heartbeat.Status{Code: heartbeat.MissingSourceTopics, Detail: "Source topics a, b are missing."}
		h.answer(resp(1, active(), missing))
		h.complete(nil)
		h.mustSend()
		h.answer(resp(1, nil, missing))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, nil, missing))
		if h.hasEvent(EventMissingSourceTopicsTimeout) {
			h.t.Fatal("reported before two intervals passed")
		}
		h.advance(interval)
		h.tick()
		if !h.hasEvent(EventMissingSourceTopicsTimeout) {
			h.t.Fatal("not reported after two intervals")
		}
		h.advance(interval)
		h.tick()
		if h.countEvents(EventMissingSourceTopicsTimeout) != 1 {
			h.t.Fatal("reported more than once")
		}
		h.answer(resp(1, nil)) // the heartbeat sent with the first timeout tick
		if !h.hasEvent(EventStatusCleared) {
			h.t.Fatal("the status clearing was not reported")
		}
	}},
	{"missingInternalTopicsWarnedAfterTwoIntervals", func(h *harness) {
		// The event comes at once (the Manager logs it at INFO); a WARN log only when the topics
		// are still missing two heartbeat intervals later, once per spell.
		warns := func() int {
			return h.countActions(func(a Action) bool {
				l, ok := a.(Log)
				return ok && l.Level == slog.LevelWarn && strings.Contains(l.Msg, "internal topics")
			})
		}
		h.start()
		h.mustSend()
		missing := heartbeat.Status{Code: heartbeat.MissingInternalTopics, Detail: "Internal topics are missing: [app-s-changelog]"}
		h.answer(resp(1, active(), missing))
		h.complete(nil)
		if !h.hasEvent(EventMissingInternalTopics) || warns() != 0 {
			h.t.Fatalf("event %v, %d warnings at once; want the event and no warning", h.hasEvent(EventMissingInternalTopics), warns())
		}
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, nil, missing))
		if warns() != 0 {
			h.t.Fatal("warned before two intervals passed")
		}
		h.advance(interval)
		h.step(Tick{})
		if warns() != 1 {
			h.t.Fatalf("%d warnings after two intervals; want 1", warns())
		}
		h.advance(interval)
		h.step(Tick{})
		if warns() != 1 {
			h.t.Fatal("warned more than once")
		}
		// Cleared, then missing again: a new spell, warned again only after its own two intervals.
		h.answer(resp(1, nil))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, nil, missing))
		h.advance(interval)
		h.step(Tick{})
		if warns() != 1 {
			h.t.Fatal("the second spell warned before two intervals")
		}
		h.advance(interval)
		h.step(Tick{})
		if warns() != 2 {
			h.t.Fatalf("%d warnings after the second spell's two intervals; want 2", warns())
		}
	}},
	{"testStreamsGroupMemberRequestingShutdownApplication", func(h *harness) {
		h.stableWith(active("0_0"))
		h.step(RequestShutdown{})
		req := h.mustSend() // at once
		if !req.ShutdownApplication {
			h.t.Fatal("ShutdownApplication not set")
		}
		h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.ShutdownApplication}))
		if !h.hasEvent(EventShutdownRequested) {
			h.t.Fatal("no shutdown event")
		}
		h.advance(interval)
		if !h.mustSend().ShutdownApplication {
			h.t.Fatal("every later heartbeat must carry the request")
		}
	}},
}

func TestScenarios(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			s.run(newHarness(t))
		})
	}
}

// Heartbeat sender scenarios (§11.2).
func TestSenderScenarios(t *testing.T) {
	cases := []struct {
		name string
		run  func(h *harness)
	}{
		{"testNoHeartbeatIfHeartbeatSkipped", func(h *harness) {
			if h.tick() != nil {
				h.t.Fatal("unsubscribed member sent a heartbeat")
			}
		}},
		{"testNotSendingHeartbeatIfMemberIsJoiningOrAcknowledgingWhenHeartbeatInFlight", func(h *harness) {
			h.start()
			h.mustSend()
			if h.tick() != nil {
				h.t.Fatal("two heartbeats in flight")
			}
		}},
		{"testNotSendingHeartbeatIfHeartbeatCannotBeSent", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval - time.Millisecond)
			if h.tick() != nil {
				h.t.Fatal("sent before the interval")
			}
			if next := h.m.Next(); !next.Equal(h.now.Add(time.Millisecond)) {
				h.t.Fatalf("Next() = %v, want the interval's end", next.Sub(h.now))
			}
			h.advance(time.Millisecond)
			h.mustSend()
		}},
		{"testBuildingHeartbeatAssignmentSentWhenChanged", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			if owned(h.mustSend()) != "null" {
				h.t.Fatal("unchanged owned lists must be null")
			}
		}},
		{"testBuildingHeartbeatAllOwnedTaskListsSentWhenOnlyOneRoleChanges", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			h.answer(resp(2, &tasks.Assignment{Active: set("0_0"), Standby: set("1_0")}))
			h.complete(nil)
			req := h.mustSend()
			if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
				h.t.Fatal("all three lists must be sent together")
			}
		}},
		{"testResettingHeartbeatState", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			h.fail(int16(kerr.CoordinatorNotAvailable.Code))
			h.advance(time.Second)
			req := h.mustSend()
			if owned(req) != "active=[0_0] standby=[] warmup=[]" || req.RebalanceTimeoutMillis != 30000 || req.ProcessID == nil || req.Topology != nil {
				h.t.Fatalf("after an error the heartbeat must be full (without topology): %+v", req)
			}
		}},
		{"testCoordinatorLoadInProgressErrorResponse", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			h.fail(int16(kerr.CoordinatorLoadInProgress.Code))
			h.expectState(Stable)
			if h.tick() != nil {
				h.t.Fatal("retried without backoff")
			}
			h.advance(100 * time.Millisecond)
			h.mustSend()
			h.fail(int16(kerr.CoordinatorLoadInProgress.Code))
			h.advance(100 * time.Millisecond)
			if h.tick() != nil {
				h.t.Fatal("the backoff must grow")
			}
			h.advance(100 * time.Millisecond)
			h.mustSend()
		}},
		{"testTopicAuthorizationFailedErrorResponse", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			h.fail(int16(kerr.TopicAuthorizationFailed.Code))
			h.expectState(Stable)
			if a := h.owned(); !a.Active.Equal(set("0_0")) || !h.hasEvent(EventError) {
				h.t.Fatal("keep state and report")
			}
			h.advance(time.Second)
			h.mustSend()
		}},
		{"testKnownFatalErrorResponse", func(h *harness) {
			for _, code := range []int16{42, 81, 130, 131, 132, 30, 31, 82, 111, 69} {
				h := newHarness(h.t)
				h.start()
				h.mustSend()
				h.fail(code)
				h.expectState(Fatal)
				if len(h.stopped) != 1 || h.stopped[0].Err == nil {
					h.t.Fatalf("code %d: no typed fatal error", code)
				}
			}
		}},
		{"testOtherErrorResponse", func(h *harness) {
			h.start()
			h.mustSend()
			h.fail(9999)
			h.expectState(Fatal)
		}},
		{"testUnsupportedVersionFailureWhileSending", func(h *harness) {
			h.start()
			h.mustSend()
			h.fail(int16(kerr.UnsupportedVersion.Code))
			err := h.stopped[0].Err
			if !errors.Is(err, heartbeat.ErrNotSupported) || !strings.Contains(err.Error(), "streams.version >= 1") {
				h.t.Fatalf("unsupported: %v", err)
			}
		}},
		{"testCoordinatorDisconnectFailureWhileSending", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			h.cut(errors.New("connection reset"))
			h.expectState(Stable)
			h.advance(100 * time.Millisecond)
			h.mustSend()
		}},
		{"testStreamsRebalanceDataHeartbeatIntervalMsUpdatedOnSuccess", func(h *harness) {
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			r := resp(1, nil)
			r.HeartbeatIntervalMillis = 2000
			h.answer(r)
			h.advance(1999 * time.Millisecond)
			if h.tick() != nil {
				h.t.Fatal("the new interval was not taken")
			}
			h.advance(time.Millisecond)
			h.mustSend()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(newHarness(t)) })
	}
}

// Task offset scenarios of PROTOCOL §8 / §11.2 (Kafka 4.4 additions).

func offsetsHarness(t *testing.T) *harness {
	h := newHarness(t, func(c *Config) { c.ReportsOffsets = true })
	h.holdOffs = true // the provider answers at the next tick, with what tickOffsets gives
	return h
}

// resp44 is an answer of a 4.4 broker: recovery lag 100, offset interval 15 s.
func (h *harness) answer44(epoch int32, a *tasks.Assignment) {
	r := resp(epoch, a)
	r.AcceptableRecoveryLag = 100
	r.TaskOffsetIntervalMillis = 15000
	h.answer(r)
}

func offs(pairs ...any) tasks.Offsets {
	o := tasks.Offsets{}
	for i := 0; i < len(pairs); i += 2 {
		id, _ := tasks.ParseID(pairs[i].(string))
		o[id] = int64(pairs[i+1].(int))
	}
	return o
}

func TestTaskOffsetScenarios(t *testing.T) {
	cases := []struct {
		name string
		run  func(h *harness)
	}{
		{"testJoiningRecordsSentOffsetsSoFollowUpHeartbeatSkipsUnchanged", func(h *harness) {
			h.start()
			if !h.m.wantsOffsets(h.now) {
				h.t.Fatal("a join wants offsets")
			}
			req := h.tickOffsets(offs("0_0", 5), offs("0_0", 9))
			if len(req.TaskOffsets) != 1 || len(req.TaskEndOffsets) != 1 {
				h.t.Fatal("join carries offsets")
			}
			h.answer44(1, active("0_0"))
			h.complete(nil)
			req = h.tickOffsets(offs("0_0", 5), offs("0_0", 9)) // the ack: assignment changed, offsets unchanged
			if req.TaskOffsets != nil || req.TaskEndOffsets != nil {
				h.t.Fatal("unchanged offsets were resent")
			}
		}},
		{"testTaskOffsetIntervalNotAdvancedWhenNothingSent", func(h *harness) {
			h.start()
			h.tick() // join without offsets (no provider data)
			h.answer44(1, active("0_0"))
			h.complete(nil)
			h.tick()
			h.answer44(1, nil)
			h.advance(15 * time.Second)
			if !h.m.wantsOffsets(h.now) {
				h.t.Fatal("nothing was ever sent, so offsets are due")
			}
		}},
		{"testTaskOffsetReportingCadenceConditionsInterplay", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 1), offs("0_0", 1000))
			h.answer44(1, active("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 1), offs("0_0", 1000))
			h.answer44(1, nil)
			h.advance(interval)
			if h.m.wantsOffsets(h.now) {
				h.t.Fatal("no trigger holds: offsets must not be asked for")
			}
			if req := h.tickOffsets(offs("0_0", 2), offs("0_0", 1000)); req.TaskOffsets != nil {
				h.t.Fatal("changed offsets are not sent before the interval")
			}
			h.answer44(1, nil)
			h.advance(15 * time.Second)
			if req := h.tickOffsets(offs("0_0", 2), offs("0_0", 1000)); req.TaskOffsets == nil || req.TaskEndOffsets != nil {
				h.t.Fatal("after the interval only the changed list goes")
			}
		}},
		{"testTaskOffsetsReportedForStandbyAndWarmupTasks", func(h *harness) {
			// The member owns one task of each role: the provider is asked for all three, and the
			// offsets of the standby and the warm-up go with the heartbeat like the active's.
			h.start()
			h.tickOffsets(nil, nil)
			owns := &tasks.Assignment{Active: set("0_0"), Standby: set("1_0"), Warmup: set("0_1")}
			h.answer44(1, owns)
			h.complete(nil)
			h.step(Tick{}) // the ack is due: the provider is asked
			if h.pendingCollect == nil || !h.pendingCollect.Owned.Equal(*owns) {
				h.t.Fatalf("offsets asked for %v; want every owned task %v", h.pendingCollect, owns)
			}
			all := offs("0_0", 1, "1_0", 2, "0_1", 3)
			req := h.tickOffsets(all, offs("0_0", 10, "1_0", 20, "0_1", 30))
			if got := tasks.OffsetsFromKmsg(req.TaskOffsets); !got.Equal(all) || len(req.TaskEndOffsets) != 3 {
				h.t.Fatalf("sent offsets %v ends %d; want %v and three ends", got, len(req.TaskEndOffsets), all)
			}
		}},
		{"testHotWarmupTaskTriggersSendWhenLagAtOrBelowThreshold", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, warmup("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, nil)
			h.advance(interval)
			if !h.m.wantsOffsets(h.now) {
				h.t.Fatal("a member with warm-ups checks their lag every heartbeat")
			}
			if req := h.tickOffsets(offs("0_0", 850), offs("0_0", 1000)); req.TaskOffsets != nil {
				h.t.Fatal("lag 150 > 100: not hot yet")
			}
			h.answer44(1, nil)
			h.advance(interval)
			if req := h.tickOffsets(offs("0_0", 900), offs("0_0", 1000)); req.TaskOffsets == nil {
				h.t.Fatal("lag 100 <= 100: hot, offsets go at once")
			}
		}},
		{"testHotWarmupTaskDisabledWhenOffsetOrEndOffsetOverflowed", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, warmup("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
			h.answer44(1, nil)
			h.advance(interval)
			over := tasks.Offsets{{Subtopology: "0", Partition: 0}: tasks.UnknownOffset}
			if h.m.hotWarmup(over, offs("0_0", 5)) || h.m.hotWarmup(offs("0_0", 5), over) || h.m.hotWarmup(nil, offs("0_0", 5)) ||
				h.m.hotWarmup(offs("1_0", 5), offs("1_0", 5)) {
				h.t.Fatal("unknown or missing offsets never make a warm-up hot")
			}
			h.m.offsets.acceptableLag = -1
			if h.m.hotWarmup(offs("0_0", 5), offs("0_0", 5)) {
				h.t.Fatal("a negative acceptable lag disables hot warm-ups")
			}
		}},
		{"testTaskOffsetsResentAfterReset", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
			h.answer44(1, active("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
			h.fail(int16(kerr.NotCoordinator.Code))
			h.advance(time.Second)
			if req := h.tickOffsets(offs("0_0", 1), offs("0_0", 2)); req.TaskOffsets == nil || req.TaskEndOffsets == nil {
				h.t.Fatal("after an error offsets are resent in full")
			}
		}},
		{"olderBrokerGetsNoOffsets", func(h *harness) {
			h.start()
			h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
			r := resp(1, active("0_0"))
			r.Version = 0 // 4.2/4.3: v0 answer, no recovery lag
			h.answer(r)
			h.complete(nil)
			if h.m.wantsOffsets(h.now) {
				h.t.Fatal("a v0 broker must never be asked for offsets")
			}
			if req := h.tickOffsets(offs("0_0", 1), offs("0_0", 2)); req.TaskOffsets != nil {
				h.t.Fatal("offsets sent to a v0 broker")
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(offsetsHarness(t)) })
	}
}
