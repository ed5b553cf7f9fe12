package machine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Edge scenarios of the member's life beside scenarios_test.go's table: heartbeats while leaving,
// fencing and fatal errors in PrepareLeaving and Leaving, backoff after transport, callback and
// fencing failures, stale and refused topologies, reconciliations aborted midway, group readiness
// and hot warm-ups. Each pins a rule of Kafka's StreamsMembershipManager or heartbeat request
// manager.
var edgeScenarios = []struct {
	name string
	run  func(h *harness)
}{
	// 1.1: heartbeats at the normal interval while Close runs OnTasksRevoked.
	{"heartbeatsContinueInPrepareLeaving", func(h *harness) {
		h.stableWith(active("0_0"))
		h.close(CloseDefault)
		h.expectState(PrepareLeaving)
		for i := range 3 {
			h.advance(interval)
			req := h.mustSend()
			if req.MemberEpoch != min(int32(i)+1, 2) || req.ShutdownApplication {
				h.t.Fatalf("keepalive while leaving: %+v", req)
			}
			r := resp(2, active("0_1")) // the epoch moves on; the assignment is ignored
			h.answer(r)
		}
		if h.m.Epoch() != 2 || len(h.invokes) != 2 {
			h.t.Fatalf("epoch %d, %d callbacks: answers while leaving keep the epoch current and start nothing", h.m.Epoch(), len(h.invokes))
		}
		if h.tick() != nil {
			h.t.Fatal("sent before the interval")
		}
		h.complete(nil)
		h.expectState(Leaving)
		if h.tick() != nil {
			h.t.Fatal("no regular heartbeat while LEAVING (testOnHeartbeatRequestSkippedWhenInLeaving)")
		}
	}},
	// 1.3: offsets resent after an error, through wantsOffsets, and the interval clock restored.
	{"offsetsResentAfterErrorAndClockRestored", func(h *harness) {
		h.m.cfg.ReportsOffsets = true
		h.holdOffs = true
		h.start()
		h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
		h.answer44(1, active("0_0"))
		h.complete(nil)
		h.tickOffsets(offs("0_0", 1), offs("0_0", 2)) // the ack: nothing changed, nothing sent
		h.answer44(1, nil)
		h.advance(15 * time.Second)
		req := h.tickOffsets(offs("0_0", 3), offs("0_0", 4)) // the interval: changed offsets go
		if req == nil || req.TaskOffsets == nil {
			h.t.Fatal("offsets not sent at the interval")
		}
		h.cut(errors.New("connection reset")) // that heartbeat failed: its offsets did not count
		if !h.m.offsets.lastAt.Equal(h.now.Add(-15*time.Second)) && !h.m.offsets.lastAt.IsZero() {
			h.t.Fatalf("the interval clock moved on a failed heartbeat: %v", h.m.offsets.lastAt)
		}
		h.advance(100 * time.Millisecond) // the backoff
		if !h.m.wantsOffsets(h.now) {
			h.t.Fatal("after an error offsets are wanted again")
		}
		req = h.tickOffsets(offs("0_0", 3), offs("0_0", 4))
		if req == nil || len(req.TaskOffsets) != 1 || len(req.TaskEndOffsets) != 1 {
			h.t.Fatalf("after an error both lists are resent in full: %+v", req)
		}
	}},
	// 1.4: a coordinator move is retried at once, once; a second in a row gets backoff.
	{"coordinatorMovedRetriesAtOnceOnce", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.NotCoordinator.Code))
		req := h.tick()
		if req == nil || owned(req) != "active=[0_0] standby=[] warmup=[]" || req.ProcessID == nil {
			h.t.Fatal("NOT_COORDINATOR: a full heartbeat goes at once to the new coordinator")
		}
		h.fail(int16(kerr.CoordinatorNotAvailable.Code))
		if h.tick() != nil {
			h.t.Fatal("the second move in a row must back off")
		}
		h.advance(200*time.Millisecond - time.Nanosecond) // failures=2: 100 ms doubled
		if h.tick() != nil {
			h.t.Fatal("sent before the backoff ended")
		}
		h.advance(time.Nanosecond)
		h.mustSend()
		h.answer(resp(1, nil))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.NotCoordinator.Code))
		if h.tick() == nil {
			h.t.Fatal("after a success the next move is retried at once again")
		}
	}},
	{"transportErrorBacksOff", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.cut(errors.New("connection reset"))
		if h.tick() != nil {
			h.t.Fatal("no answer: the look-up is paced by the backoff")
		}
		h.advance(100 * time.Millisecond)
		h.mustSend()
	}},
	// 1.6 (tasks.Normalize): a task both standby and warm-up is only standby.
	{"standbyAndWarmupReportedOnce", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, &tasks.Assignment{Standby: set("0_0"), Warmup: set("0_0", "0_1")}))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[0_0] warmup=[0_1]")
		h.complete(nil)
		if got := owned(h.sent[len(h.sent)-1]); got != "active=[] standby=[0_0] warmup=[0_1]" {
			h.t.Fatalf("ack reports %s", got)
		}
	}},
	// 1.8: STALE_TOPOLOGY is reported with the group's topology once described; heartbeats do not wait.
	{"staleTopologyDescribedWithoutBlocking", func(h *harness) {
		h.stableWith(active("0_0"))
		h.described = Described{} // answered below, not by the harness
		h.advance(interval)
		h.mustSend()
		n := h.describe
		as := h.m.Step(h.now, HeartbeatDone{Seq: h.lastSeq(), Response: resp(1, nil, heartbeat.Status{Code: heartbeat.StaleTopology, Detail: "stale"})})
		h.record(as)
		if h.describe != n+1 || h.hasEvent(EventStaleTopology) {
			h.t.Fatal("the describe must be asked for, and the event wait for it")
		}
		for range 3 { // heartbeats go on while the describe is out
			h.advance(interval)
			h.mustSend()
			h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.StaleTopology, Detail: "stale"}))
		}
		if h.describe != n+1 {
			h.t.Fatal("one describe per appearance of the status")
		}
		h.step(Described{Err: errors.New("timeout")})
		ev := h.lastEvent(EventStaleTopology)
		if ev.GroupTopology == nil || ev.GroupTopology.LocalID != testTopology.ID() || ev.Status == nil {
			h.t.Fatalf("stale event %+v", ev)
		}
	}},
	{"staleTopologyClearedBeforeDescribedIsNotReported", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.record(h.m.Step(h.now, HeartbeatDone{Seq: h.lastSeq(), Response: resp(1, nil, heartbeat.Status{Code: heartbeat.StaleTopology})}))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, nil))
		h.step(Described{})
		if h.hasEvent(EventStaleTopology) || h.hasEvent(EventStatusCleared) {
			h.t.Fatal("a status gone before it was reported is neither reported nor cleared")
		}
	}},
	{"refusedTopologyNamesBothTopologies", func(h *harness) {
		h.start()
		h.mustSend()
		msg := "Topology updates are not supported yet."
		r := resp(0, nil)
		r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, &msg
		h.described = Described{}
		h.record(h.m.Step(h.now, HeartbeatDone{Seq: h.lastSeq(), Response: r}))
		h.expectState(Fatal)
		if len(h.stopped) != 0 {
			h.t.Fatal("the error must wait for the description")
		}
		h.step(Described{Err: errors.New("unreachable")})
		var te *TopologyError
		if len(h.stopped) != 1 || !errors.As(h.stopped[0].Err, &te) || !errors.Is(te, heartbeat.ErrTopologyMismatch) ||
			te.Mismatch.LocalID != testTopology.ID() {
			h.t.Fatalf("stopped %+v", h.stopped)
		}
		if ev := h.lastEvent(EventFatal); ev.GroupTopology == nil {
			h.t.Fatal("the fatal event carries the mismatch")
		}
	}},
	// 1.9: a shutdown request respects a backoff in progress.
	{"requestShutdownRespectsBackoff", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.CoordinatorLoadInProgress.Code))
		h.step(RequestShutdown{})
		if h.tick() != nil {
			h.t.Fatal("the shutdown request skipped the backoff")
		}
		h.advance(100 * time.Millisecond)
		if req := h.mustSend(); !req.ShutdownApplication {
			h.t.Fatal("ShutdownApplication not set")
		}
	}},
	// 1.10: fenced while leaving does not claim to remain in the group.
	{"testOnFencedWhenInPrepareLeaving", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.close(CloseDefault)
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.advance(interval)
		if h.tick() != nil {
			h.t.Fatal("no heartbeat after being fenced while leaving")
		}
		h.complete(nil)
		h.expectState(Unsubscribed)
		ev := h.lastEvent(EventLeft)
		if ev.Message == "remaining in the group until the session times out" || len(h.leaves) != 0 || len(h.stopped) != 1 {
			h.t.Fatalf("left event %q, %d leaves", ev.Message, len(h.leaves))
		}
	}},
	{"testTransitionToFatalWhenInPrepareLeaving", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.close(CloseDefault)
		h.fail(int16(kerr.GroupAuthorizationFailed.Code))
		h.complete(nil) // the revocation finishes
		h.expectState(Fatal)
		if len(h.leaves) != 0 || len(h.stopped) != 1 || !errors.Is(h.stopped[0].Err, kerr.GroupAuthorizationFailed) {
			h.t.Fatalf("leaves %d, stopped %+v", len(h.leaves), h.stopped)
		}
	}},
	{"testOnFencedWhenInLeaving", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.close(CloseDefault)
		h.complete(nil)
		h.expectState(Leaving)
		h.fail(int16(kerr.FencedMemberEpoch.Code)) // the stuck heartbeat's answer: ignored
		h.expectState(Leaving)
		h.leaveAnswered(kerr.UnknownMemberID.Code)
		h.expectState(Unsubscribed)
		if len(h.stopped) != 1 || h.stopped[0].Err != nil || len(h.invokes) != 2 {
			h.t.Fatal("the pending leave completes normally")
		}
	}},
	{"testOnHeartbeatFailureAfterLeaveRequestGenerated", func(h *harness) {
		h.stableWith(active("0_0"))
		h.close(CloseDefault)
		h.complete(nil)
		h.advance(DefaultLeaveBudget) // no answer within the whole budget
		h.leaveFailed(context.DeadlineExceeded)
		h.expectState(Unsubscribed)
		if len(h.stopped) != 1 || h.stopped[0].Err != nil || h.lastEvent(EventLeft).Err == nil {
			h.t.Fatal("a failed leave still completes the leave, and says it was not confirmed")
		}
	}},
	{"staticRemainInGroupLeavesWithMinusTwo", func(h *harness) {
		h = newHarness(h.t, static)
		h.stableWith(active("0_0"))
		h.close(CloseRemainInGroup)
		h.complete(nil)
		if len(h.leaves) != 1 || h.leaves[0].Request.MemberEpoch != heartbeat.EpochLeaveStatic {
			h.t.Fatalf("static + REMAIN_IN_GROUP: %+v", h.leaves)
		}
	}},
	{"leaveAtEpochZeroLosesInsteadOfRevoking", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.complete(nil)
		h.fail(int16(kerr.UnknownMemberID.Code)) // the ack fenced: rejoining
		h.complete(nil)                          // OnAllTasksLost
		h.expectState(Joining)
		h.close(CloseDefault)
		if h.invokes[len(h.invokes)-1].Kind != CallbackLost {
			h.t.Fatal("a member at epoch 0 holds nothing to revoke")
		}
		if h.tick() != nil { // the rejoin is out: the leave waits for its answer
			if len(h.leaves) != 0 {
				h.t.Fatal("the leave went beside the rejoin heartbeat")
			}
			h.answer(resp(2, nil))
		}
		if len(h.leaves) != 1 {
			h.t.Fatal("a member at epoch 0 holds nothing to revoke and sends the leave at once")
		}
	}},
	{"repeatedFencingBacksOff", func(h *harness) {
		h.start()
		h.mustSend()
		h.fail(int16(kerr.UnknownMemberID.Code))
		if h.tick() == nil {
			h.t.Fatal("the first fencing rejoins at once")
		}
		h.fail(int16(kerr.UnknownMemberID.Code))
		if h.tick() != nil {
			h.t.Fatal("a second fencing in a row must back off")
		}
		h.advance(100 * time.Millisecond)
		h.mustSend()
	}},
	{"endpointEpochEchoed", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		r := resp(1, nil)
		r.EndpointInformationEpoch = 7
		h.answer(r)
		h.advance(interval)
		if req := h.mustSend(); req.EndpointInformationEpoch != 7 {
			h.t.Fatalf("endpoint epoch %d, want the group's 7", req.EndpointInformationEpoch)
		}
	}},
	{"offsetsGoWithoutWaitingForASlowProvider", func(h *harness) {
		h.m.cfg.ReportsOffsets = true
		h.holdOffs = true
		h.start()
		if h.collects != 1 || len(h.sent) != 0 {
			h.t.Fatal("the join waits for the offsets")
		}
		h.advance(DefaultOffsetsWait)
		h.step(Tick{})
		if len(h.sent) != 1 || h.sent[0].TaskOffsets != nil {
			h.t.Fatal("after OffsetsWait the join goes without offsets")
		}
		h.step(OffsetsCollected{Seq: h.pendingCollect.Seq, Offsets: offs("0_0", 1)})
		if len(h.sent) != 1 {
			h.t.Fatal("late offsets must not send a second heartbeat")
		}
	}},
	{"probeRetriedWithBackoff", func(h *harness) {
		h.capsErr = errors.New("connection refused")
		h.start()
		h.advance(99 * time.Millisecond)
		h.step(Tick{})
		if h.probes != 1 {
			h.t.Fatalf("%d probes before the backoff ended", h.probes)
		}
		h.capsErr = nil
		h.advance(time.Millisecond)
		h.step(Tick{})
		if h.probes != 2 || h.m.State() != Joining || len(h.sent) != 1 {
			h.t.Fatalf("probes %d, state %s", h.probes, h.m.State())
		}
	}},
	{"callbackFailuresBackOff", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.complete(errors.New("boom"))
		h.advance(100 * time.Millisecond)
		h.step(Tick{})
		h.complete(errors.New("boom"))
		n := len(h.invokes)
		h.advance(100 * time.Millisecond)
		h.step(Tick{})
		if len(h.invokes) != n {
			h.t.Fatal("a second failure in a row must wait longer")
		}
		h.advance(100 * time.Millisecond)
		h.step(Tick{})
		if len(h.invokes) != n+1 {
			h.t.Fatal("not retried after the grown backoff")
		}
	}},

	{"assignFailsAfterRevokeDoesNotRevokeAgain", func(h *harness) {
		h.stableWith(active("0_0", "0_1"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.complete(nil)
		h.expectInvoke(CallbackAssigned, "active=[0_1] standby=[] warmup=[]")
		h.complete(errors.New("boom"))
		if a := h.owned(); !a.Active.Equal(set("0_1")) {
			h.t.Fatalf("the application holds %v after giving up 0_0", a)
		}
		h.advance(100 * time.Millisecond)
		h.step(Tick{})
		h.expectInvoke(CallbackAssigned, "active=[0_1] standby=[] warmup=[]") // the retry: no second revocation
		h.complete(nil)
		if n := len(h.invokes); n != 4 {
			h.t.Fatalf("%d callbacks, want revoke, assign, assign after the initial assign", n)
		}
	}},

	// PROTOCOL §11 items the first table left out.
	{"testReconcilingSingleStandbyTaskToAdditionalStandbyTask", func(h *harness) {
		h.stableWith(standby("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, standby("0_0", "0_1")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[0_0 0_1] warmup=[]")
	}},
	{"testReconcilingMultipleWarmupTaskToSingleWarmupTask", func(h *harness) {
		h.stableWith(warmup("0_0", "0_1"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, warmup("0_1")))
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[0_1]")
	}},
	{"testReconcilingWhenReconciliationAbortedBeforeAssignmentDueToNotInReconciling", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1")))
		h.expectInvoke(CallbackRevoked, "[0_0]")
		h.close(CloseDefault) // leaves Reconciling while the revocation runs
		h.complete(nil)
		for _, inv := range h.invokes {
			if inv.Kind == CallbackAssigned && inv.Assignment.Active.Contains(tasks.ID{Subtopology: "0", Partition: 1}) {
				h.t.Fatal("the aborted reconciliation went on to assign")
			}
		}
		if len(h.leaves) != 1 || len(h.invokes) != 2 {
			h.t.Fatalf("the leave must follow without revoking 0_0 again: %+v", h.invokes)
		}
	}},
	{"testReconcilingWhenReconciliationAbortedAfterAssignmentDueToNotInReconciling", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0", "0_1")))
		h.close(CloseDefault)
		h.complete(nil) // OnTasksAssigned returns after the close
		if h.hasEvent(EventAssigned) && h.lastEvent(EventAssigned).Assignment.Active.Len() == 2 {
			h.t.Fatal("no acknowledgement for an aborted reconciliation")
		}
		h.expectInvoke(CallbackRevoked, "[0_0 0_1]") // what the application holds now
	}},
	{"testTaskOffsetsForAllWarmupsAreReportedWhenAtLeastOneIsHot", func(h *harness) {
		h.m.cfg.ReportsOffsets = true
		h.holdOffs = true
		h.start()
		h.tickOffsets(nil, nil)
		h.answer44(1, warmup("0_0", "0_1"))
		h.complete(nil)
		h.tickOffsets(offs("0_0", 0, "0_1", 0), offs("0_0", 1000, "0_1", 1000))
		h.answer44(1, nil)
		h.advance(interval)
		req := h.tickOffsets(offs("0_0", 950, "0_1", 10), offs("0_0", 1000, "0_1", 1000))
		if req == nil || len(req.TaskOffsets) != 2 {
			h.t.Fatalf("one hot warm-up sends the offsets of all warm-ups: %+v", req)
		}
	}},
	{"testOnHeartbeatSuccessWhenInFenced", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.expectState(Fenced)
		h.answer(resp(9, active("0_1"))) // a late answer while OnAllTasksLost runs
		h.expectState(Fenced)
		if h.m.Epoch() != 1 || len(h.invokes) != 2 {
			h.t.Fatalf("epoch %d, %d callbacks: an answer while fenced changes nothing", h.m.Epoch(), len(h.invokes))
		}
	}},
	{"testOnFencedWhenInAcknowledging", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0", "0_1")))
		h.advance(interval)
		h.mustSend() // in flight while OnTasksAssigned runs
		h.complete(nil)
		h.expectState(Acknowledging) // the ack waits for the heartbeat in flight
		h.fail(int16(kerr.UnknownMemberID.Code))
		h.expectState(Fenced)
		h.expectInvoke(CallbackLost, "active=[0_0 0_1] standby=[] warmup=[]")
		h.complete(nil)
		h.expectState(Joining)
		if req := h.mustSend(); req.MemberEpoch != 0 || req.MemberID != "member-1" {
			h.t.Fatalf("rejoin %+v", req)
		}
	}},
	{"testTransitionToFatalWhenInLeaving", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.close(CloseDefault)
		h.complete(nil)
		h.expectState(Leaving)
		h.fail(int16(kerr.GroupAuthorizationFailed.Code)) // the stuck heartbeat's answer
		h.expectState(Leaving)
		h.leaveAnswered(0)
		if len(h.stopped) != 1 || h.stopped[0].Err != nil {
			h.t.Fatalf("the pending leave completes normally: %+v", h.stopped)
		}
	}},
	{"testOnAllTasksLostCallbackCompletedWhenCallbackFails", func(h *harness) {
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.complete(errors.New("lost failed"))
		h.expectState(Joining) // a failing OnAllTasksLost is logged; fencing still rejoins
		if !h.owned().IsEmpty() {
			h.t.Fatal("the tasks are gone whatever OnAllTasksLost returned")
		}
		logged := false
		for _, a := range h.actions {
			if l, ok := a.(Log); ok && l.Msg == "OnAllTasksLost failed; rejoining anyway" {
				logged = true
			}
		}
		if !logged {
			h.t.Fatal("the failure is not logged")
		}
	}},
	{"testConsumerPollWhenNotJoining", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.expectState(Reconciling)
		n := len(h.sent)
		h.start() // a second Start changes nothing
		h.expectState(Reconciling)
		if len(h.sent) != n || h.probes != 1 {
			h.t.Fatal("a second Start restarted joining")
		}
	}},
	{"testIsGroupReadyWithMissingInternalTopicsStatus", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active(), heartbeat.Status{Code: heartbeat.MissingInternalTopics, Detail: "Internal topics are missing: app-x-changelog"}))
		if h.lastInvoke().Ready || !h.hasEvent(EventMissingInternalTopics) {
			h.t.Fatal("missing internal topics: group not ready, and reported")
		}
		if ev := h.lastEvent(EventMissingInternalTopics); len(ev.Topics) != 1 || ev.Topics[0] != "app-x-changelog" {
			h.t.Fatalf("topics %v", ev.Topics)
		}
	}},
	{"internalTopicsCreateDeniedSaysWhatToGrant", func(h *harness) {
		// AuthorizerIntegrationTest testStreamsGroupHeartbeatWithoutInternalTopicCreateAcl: the
		// broker may not create the internal topics as this member's principal. The event carries a
		// typed error naming them and the ACL to grant; the member stays, not ready; once the broker
		// creates them (the detail loses its CREATE part) the event carries no error, and the status
		// clears when they exist.
		denied := "Internal topics are missing: app-s-changelog, app-a-repartition; Unauthorized to CREATE on topics app-s-changelog, app-a-repartition."
		h.start()
		h.mustSend()
		h.answer(resp(1, active(), heartbeat.Status{Code: heartbeat.MissingInternalTopics, Detail: denied}))
		ev := h.lastEvent(EventMissingInternalTopics)
		de, ok := errors.AsType[*InternalTopicsDeniedError](ev.Err)
		if !ok || !slices.Equal(de.Topics, []string{"app-a-repartition", "app-s-changelog"}) || de.ApplicationID != "app" ||
			!strings.Contains(ev.Err.Error(), `CREATE`) || !strings.Contains(ev.Err.Error(), `PREFIXED ACL on topics "app-"`) {
			h.t.Fatalf("event %v: want an *InternalTopicsDeniedError naming both topics and the ACL to grant", ev)
		}
		if ev.Message != denied || !slices.Equal(ev.Topics, de.Topics) {
			h.t.Fatalf("event %v: want the broker's detail and the missing topics", ev)
		}
		h.complete(nil) // OnTasksAssigned, not ready
		if h.lastInvoke().Ready {
			h.t.Fatal("the group is not ready while its internal topics are missing")
		}
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.MissingInternalTopics, Detail: "Internal topics are missing: app-s-changelog, app-a-repartition"}))
		if ev := h.lastEvent(EventMissingInternalTopics); ev.Err != nil || h.countEvents(EventMissingInternalTopics) != 2 {
			h.t.Fatalf("creating: event %v, %d such events; want a second one without an error", ev, h.countEvents(EventMissingInternalTopics))
		}
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_0")))
		if h.countEvents(EventStatusCleared) != 2 || h.countEvents(EventFatal) != 0 {
			h.t.Fatalf("events %v: want both details cleared and no fatal error", h.events)
		}
	}},
	{"testIsGroupReadyWithIncorrectlyPartitionedTopicsStatus", func(h *harness) {
		// Also testStreamsProtocolIncorrectlyPartitionedTopics: the status is reported at once.
		h.start()
		h.mustSend()
		h.answer(resp(1, active(), heartbeat.Status{Code: heartbeat.IncorrectlyPartitionedTopics,
			Detail: "Following topics do not have the same number of partitions: [t0, t1]"}))
		if h.lastInvoke().Ready {
			h.t.Fatal("incorrectly partitioned topics: group not ready")
		}
		if ev := h.lastEvent(EventIncorrectlyPartitionedTopics); len(ev.Topics) != 2 || ev.Topics[0] != "t0" || ev.Topics[1] != "t1" {
			h.t.Fatalf("topics %v", ev.Topics)
		}
	}},
	{"testLeaveGroupOnCloseWithRemainInGroupSkipsLeaveHeartbeatWhenNotInGroup", func(h *harness) {
		h.close(CloseRemainInGroup)
		if len(h.sent) != 0 || len(h.leaves) != 0 || len(h.stopped) != 1 || h.stopped[0].Err != nil {
			h.t.Fatal("closing a member not in the group sends nothing and stops")
		}
	}},
	{"rackAndEndpointSentOnlyWhenJoining", func(h *harness) {
		h = newHarness(h.t, func(c *Config) {
			c.Join.Rack, c.Join.EndpointHost, c.Join.EndpointPort, c.Join.HasEndpoint = "r1", "h", 9, true
		})
		h.start()
		join := h.mustSend()
		if join.RackID == nil || *join.RackID != "r1" || join.UserEndpoint == nil || join.UserEndpoint.Host != "h" || join.UserEndpoint.Port != 9 {
			h.t.Fatalf("join %+v", join)
		}
		h.answer(resp(1, active("0_0")))
		h.complete(nil)
		ack := h.mustSend()
		h.answer(resp(1, nil))
		h.advance(interval)
		h.mustSend()
		if ack.RackID != nil || ack.UserEndpoint != nil || h.sent[len(h.sent)-1].RackID != nil || h.sent[len(h.sent)-1].UserEndpoint != nil {
			h.t.Fatal("rack and endpoint go only with the join (and after an error)")
		}
	}},
	{"testHotWarmupTaskDisabledWhenEndOffsetMissing", func(h *harness) {
		h.m.cfg.ReportsOffsets = true
		h.holdOffs = true
		h.start()
		h.tickOffsets(nil, nil)
		h.answer44(1, warmup("0_0"))
		h.complete(nil)
		h.tickOffsets(offs("0_0", 0), offs("0_0", 1000))
		h.answer44(1, nil)
		h.advance(interval)
		if req := h.tickOffsets(offs("0_0", 1000), tasks.Offsets{}); req == nil || req.TaskOffsets != nil {
			h.t.Fatal("a warm-up without an end offset is not hot")
		}
	}},
	{"testHotWarmupTaskDisabledWhenOffsetMissing", func(h *harness) {
		// The warm-up has an end offset but no offset of its own (the provider reports another
		// task): it is not hot, however small its end offset, so nothing goes before the interval.
		h.m.cfg.ReportsOffsets = true
		h.holdOffs = true
		h.start()
		h.tickOffsets(nil, nil)
		h.answer44(1, &tasks.Assignment{Active: set("1_0"), Warmup: set("0_0")})
		h.complete(nil)
		h.tickOffsets(offs("1_0", 0), offs("1_0", 0))
		h.answer44(1, nil)
		h.advance(interval)
		if req := h.tickOffsets(offs("1_0", 5), offs("0_0", 50, "1_0", 5)); req == nil || req.TaskOffsets != nil || req.TaskEndOffsets != nil {
			h.t.Fatal("a warm-up without an offset is not hot")
		}
	}},
	{"testOnHeartbeatRetriableFailure", func(h *harness) {
		// Heartbeats that fail and are retried while OnTasksAssigned runs do not fail the
		// rebalance (the failed-rebalance metric counts Rebalance{Failed}): it completes once.
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.CoordinatorLoadInProgress.Code))
		h.advance(time.Second)
		h.mustSend()
		h.cut(errors.New("connection reset"))
		h.complete(nil)
		h.advance(time.Second) // past the retry backoff
		h.mustSend()           // the acknowledgement completes the rebalance
		if want := []RebalancePhase{RebalanceStarted, RebalanceCompleted}; !slices.Equal(rebalancePhases(h), want) {
			h.t.Fatalf("rebalance phases %v, want %v", rebalancePhases(h), want)
		}
	}},
	{"testOnHeartbeatFatalFailure", func(h *harness) {
		// A fatal heartbeat error that meets a reconciliation under way (OnTasksAssigned runs) fails
		// that rebalance, as Java's failed-rebalance-total counts it: started, then failed, and the
		// callback's late return completes nothing.
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.GroupAuthorizationFailed.Code))
		h.expectState(Fatal)
		h.complete(nil) // OnTasksAssigned returns after the failure
		if want := []RebalancePhase{RebalanceStarted, RebalanceFailed}; !slices.Equal(rebalancePhases(h), want) {
			h.t.Fatalf("rebalance phases %v, want %v", rebalancePhases(h), want)
		}
	}},
	{"fatalSendFailureFailsTheRebalance", func(h *harness) {
		// A send that cannot be retried (the client was closed) is a fatal heartbeat failure too.
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		h.mustSend()
		h.cut(kgo.ErrClientClosed)
		h.expectState(Fatal)
		if want := []RebalancePhase{RebalanceStarted, RebalanceFailed}; !slices.Equal(rebalancePhases(h), want) {
			h.t.Fatalf("rebalance phases %v, want %v", rebalancePhases(h), want)
		}
	}},
	{"fencingDuringReconciliationFailsTheRebalance", func(h *harness) {
		// Java counts a fencing answer that meets a rebalance in progress as a failed rebalance (it
		// is an error answer); the pass after the rejoin starts and completes on its own.
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.complete(nil) // OnTasksAssigned of the aborted pass
		h.complete(nil) // OnAllTasksLost
		h.expectState(Joining)
		h.mustSend()
		h.answer(resp(3, active("0_0")))
		h.complete(nil) // OnTasksAssigned
		h.mustSend()    // the acknowledgement
		want := []RebalancePhase{RebalanceStarted, RebalanceFailed, RebalanceStarted, RebalanceCompleted}
		if !slices.Equal(rebalancePhases(h), want) {
			h.t.Fatalf("rebalance phases %v, want %v", rebalancePhases(h), want)
		}
	}},
	{"fatalErrorOutsideARebalanceFailsNone", func(h *harness) {
		// No rebalance in progress (STABLE, or ACKNOWLEDGING: the acknowledgement was built), no
		// failed rebalance; nor for a malformed answer during one, which Java fails the member on
		// without counting.
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(int16(kerr.GroupAuthorizationFailed.Code))
		h.expectState(Fatal)
		if want := []RebalancePhase{RebalanceStarted, RebalanceCompleted}; !slices.Equal(rebalancePhases(h), want) {
			h.t.Fatalf("stable member: rebalance phases %v, want %v", rebalancePhases(h), want)
		}
	}},
	{"malformedAnswerDuringARebalanceFailsNone", func(h *harness) {
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(1, active("9_0"))) // a task of a subtopology this member does not have
		h.expectState(Fatal)
		if want := []RebalancePhase{RebalanceStarted}; !slices.Equal(rebalancePhases(h), want) {
			h.t.Fatalf("rebalance phases %v, want %v", rebalancePhases(h), want)
		}
	}},
	{"testMissingClientTagsStatusLogsWarningOnlyOnce", func(h *harness) {
		h.stableWith(active("0_0"))
		for range 3 {
			h.advance(interval)
			h.mustSend()
			h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.MissingClientTags, Detail: "rack tags missing"}))
		}
		if n := h.countEvents(EventMissingClientTags); n != 1 {
			h.t.Fatalf("reported %d times", n)
		}
	}},
	{"testNoWarningWhenClientTagsPresent", func(h *harness) {
		h.stableWith(active("0_0"))
		for range 3 {
			h.advance(interval)
			h.mustSend()
			h.answer(resp(1, nil))
		}
		if h.hasEvent(EventMissingClientTags) {
			h.t.Fatal("no status, no event")
		}
	}},
}

func TestEdgeScenarios(t *testing.T) {
	for _, s := range edgeScenarios {
		t.Run(s.name, func(t *testing.T) { s.run(newHarness(t)) })
	}
}

func TestStopWhileFailingKeepsTheFatalError(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	h.fail(int16(kerr.GroupAuthorizationFailed.Code)) // OnAllTasksLost starts
	h.step(Stop{})                                    // Close's ctx ends before it returns
	if len(h.stopped) != 1 || !errors.Is(h.stopped[0].Err, kerr.GroupAuthorizationFailed) || !h.hasEvent(EventFatal) {
		t.Fatalf("stopped %+v", h.stopped)
	}
	h.complete(nil)
	if len(h.stopped) != 1 {
		t.Fatal("exactly one Stopped")
	}
}

// rebalancePhases lists the phases of the Rebalance actions the machine returned, in order.
func rebalancePhases(h *harness) []RebalancePhase {
	var phases []RebalancePhase
	for _, a := range h.actions {
		if r, ok := a.(Rebalance); ok {
			phases = append(phases, r.Phase)
		}
	}
	return phases
}
