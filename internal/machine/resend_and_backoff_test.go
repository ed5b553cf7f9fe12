package machine

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The smaller deviations from the Java client of docs/choices.md (issue 22 §5), one test each,
// beside TestHeartbeatIntervalCountsFromTheSend (poll_test.go) and the session-timeout tests of
// session_test.go. Each fails if the member's behaviour changes either way: to Java's, or to
// something else.

// joinFields reports which join-only fields a heartbeat carries: rebalance timeout, process ID,
// endpoint, rack and client tags ("" when none of them; "all" when all, with the values the
// member was configured with; otherwise what it carries).
func joinFields(req *kmsg.StreamsGroupHeartbeatRequest) string {
	has := []bool{req.RebalanceTimeoutMillis != -1, req.ProcessID != nil, req.UserEndpoint != nil, req.RackID != nil, req.ClientTags != nil}
	n := 0
	for _, b := range has {
		if b {
			n++
		}
	}
	switch {
	case n == 0:
		return ""
	case n == len(has) && req.RebalanceTimeoutMillis == 30000 && *req.ProcessID == "p-1" &&
		req.UserEndpoint.Host == "h" && req.UserEndpoint.Port == 9 && *req.RackID == "r1" &&
		len(req.ClientTags) == 1 && req.ClientTags[0].Key == "zone" && req.ClientTags[0].Value == "z1":
		return "all"
	}
	return "some"
}

func describedMember(c *Config) {
	c.Join.Rack, c.Join.EndpointHost, c.Join.EndpointPort, c.Join.HasEndpoint = "r1", "h", 9, true
	c.Join.ClientTags = map[string]string{"zone": "z1"}
}

// Join-only fields after an error: after any error the next heartbeat carries the rebalance
// timeout, process ID, endpoint, rack and client tags again (and the owned task lists), without the
// topology; the heartbeat after that carries none of them again. Java sends them only when it
// joins. Every kind of error a member in the group survives without rejoining is here: a coordinator
// move (at once), a coordinator loading, a lost connection, an error that keeps state, an answer the
// member ignores, and an error while Close runs OnTasksRevoked.
func TestJoinFieldsResentAfterAnyError(t *testing.T) {
	ignored := func(h *harness) { h.answer(resp(-1, nil)) } // a success with a leave epoch
	for _, c := range []struct {
		name    string
		fail    func(h *harness)
		leaving bool
	}{
		{"NOT_COORDINATOR", func(h *harness) { h.fail(kerr.NotCoordinator.Code) }, false},
		{"COORDINATOR_NOT_AVAILABLE", func(h *harness) { h.fail(kerr.CoordinatorNotAvailable.Code) }, false},
		{"COORDINATOR_LOAD_IN_PROGRESS", func(h *harness) { h.fail(kerr.CoordinatorLoadInProgress.Code) }, false},
		{"TOPIC_AUTHORIZATION_FAILED", func(h *harness) { h.fail(kerr.TopicAuthorizationFailed.Code) }, false},
		{"UNKNOWN_SERVER_ERROR", func(h *harness) { h.fail(kerr.UnknownServerError.Code) }, false},
		{"no answer", func(h *harness) { h.cut(errors.New("connection reset")) }, false},
		{"ignored answer", ignored, false},
		{"while leaving", func(h *harness) { h.fail(kerr.CoordinatorLoadInProgress.Code) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, describedMember)
			h.start()
			if got := joinFields(h.mustSend()); got != "all" {
				t.Fatalf("the join carries %q of the join-only fields, want all", got)
			}
			h.answer(resp(1, active("0_0")))
			h.complete(nil)
			h.mustSend() // the ack
			h.answer(resp(1, nil))
			if c.leaving {
				h.close(CloseDefault) // OnTasksRevoked runs; heartbeats go on
				h.expectState(PrepareLeaving)
			}
			h.advance(interval)
			if req := h.mustSend(); joinFields(req) != "" || owned(req) != "null" {
				t.Fatalf("a steady heartbeat carries %q of the join-only fields, lists %s", joinFields(req), owned(req))
			}
			c.fail(h)
			h.advance(time.Second) // past any backoff
			req := h.mustSend()
			if got := joinFields(req); got != "all" || owned(req) != "active=[0_0] standby=[] warmup=[]" ||
				req.Topology != nil || req.MemberEpoch != 1 {
				t.Fatalf("after the error: join-only fields %q, lists %s, topology %v, epoch %d; want all of them, the owned lists, no topology, epoch 1",
					got, owned(req), req.Topology != nil, req.MemberEpoch)
			}
			h.answer(resp(1, nil))
			h.advance(interval)
			if req := h.mustSend(); joinFields(req) != "" || owned(req) != "null" {
				t.Fatalf("the heartbeat after the full one carries %q of the join-only fields, lists %s", joinFields(req), owned(req))
			}
		})
	}
}

// The first heartbeat after a join leaves the task lists null when nothing is owned: the join
// reported three empty lists, and null means "unchanged". Java sends [] again. Once something is
// owned, the lists go as soon as they change.
func TestFirstHeartbeatAfterAJoinLeavesEmptyListsNull(t *testing.T) {
	t.Run("nothing assigned", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		if join := h.mustSend(); owned(join) != "active=[] standby=[] warmup=[]" {
			t.Fatalf("the join reports %s, want three empty lists", owned(join))
		}
		h.answer(resp(1, active())) // an empty assignment
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[]")
		h.complete(nil)
		ack := h.mustSend()
		if ack.ActiveTasks != nil || ack.StandbyTasks != nil || ack.WarmupTasks != nil || ack.MemberEpoch != 1 {
			t.Fatalf("the first heartbeat after the join reports %s at epoch %d, want null lists", owned(ack), ack.MemberEpoch)
		}
		h.answer(resp(1, nil))
		h.expectState(Stable)
		h.advance(interval)
		if req := h.mustSend(); owned(req) != "null" {
			t.Fatalf("a steady heartbeat reports %s", owned(req))
		}
	})
	t.Run("assignment not yet computed", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.mustSend()
		h.answer(resp(1, nil)) // the join's answer leaves the lists null: nothing is assigned yet
		h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[]")
		h.complete(nil)
		if ack := h.mustSend(); ack.ActiveTasks != nil || ack.StandbyTasks != nil || ack.WarmupTasks != nil {
			t.Fatalf("the first heartbeat after the join reports %s, want null lists", owned(ack))
		}
	})
	t.Run("something assigned", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.mustSend()
		h.answer(resp(1, standby("0_0")))
		h.complete(nil)
		if ack := h.mustSend(); owned(ack) != "active=[] standby=[0_0] warmup=[]" {
			t.Fatalf("the ack reports %s", owned(ack))
		}
	})
}

// Backoff of JOINING and ACKNOWLEDGING retries and of repeated fencing. Java heartbeats at once in
// JOINING and ACKNOWLEDGING whatever failed before; this member keeps its backoff (retry.backoff.ms
// doubling, heartbeat.Backoff) there as in every state, so a broker that refuses every join is not
// sent one per round trip. A coordinator move and a fencing are retried at once the first time in a
// row (as Java), later ones backed off; a success starts the count again.
func TestJoiningAndAcknowledgingRetriesBackOff(t *testing.T) {
	const backoff = 100 * time.Millisecond // newHarness: retry.backoff.ms 100 ms, max 1 s, no jitter
	// waits fails unless the next heartbeat goes exactly d from now, and returns it.
	waits := func(h *harness, d time.Duration, what string) *kmsg.StreamsGroupHeartbeatRequest {
		h.t.Helper()
		if d > 0 {
			if h.tick() != nil {
				h.t.Fatalf("%s: retried at once, want after %v", what, d)
			}
			h.advance(d - time.Nanosecond)
			if h.tick() != nil {
				h.t.Fatalf("%s: retried before %v", what, d)
			}
			h.advance(time.Nanosecond)
		}
		req := h.tick()
		if req == nil {
			h.t.Fatalf("%s: not retried after %v", what, d)
		}
		return req
	}
	t.Run("joining", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.mustSend()
		h.fail(kerr.CoordinatorLoadInProgress.Code)
		h.expectState(Joining)
		waits(h, backoff, "the first failed join")
		h.fail(kerr.CoordinatorLoadInProgress.Code)
		waits(h, 2*backoff, "the second")
		h.cut(errors.New("connection reset"))
		waits(h, 4*backoff, "the third")
		h.fail(kerr.NotCoordinator.Code)
		if req := waits(h, 8*backoff, "a coordinator move after other failures"); req.MemberEpoch != 0 || req.Topology == nil {
			t.Fatalf("the retry is not a join: epoch %d", req.MemberEpoch)
		}
		h.answer(resp(1, nil)) // a success ends the row
		h.advance(interval)
		h.mustSend()
		h.fail(kerr.NotCoordinator.Code)
		waits(h, 0, "the first coordinator move after a success")
		h.fail(kerr.NotCoordinator.Code)
		waits(h, 2*backoff, "the second move in a row")
	})
	t.Run("acknowledging", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.mustSend()
		h.answer(resp(1, active("0_0")))
		h.advance(interval)
		h.mustSend() // a keepalive while OnTasksAssigned runs
		h.fail(kerr.CoordinatorLoadInProgress.Code)
		h.advance(backoff / 2)
		h.complete(nil) // OnTasksAssigned returns: the ack is due, but the member is backing off
		h.expectState(Acknowledging)
		if ack := waits(h, backoff/2, "the ack after a failure"); owned(ack) != "active=[0_0] standby=[] warmup=[]" {
			t.Fatalf("the ack reports %s", owned(ack))
		}
		h.expectState(Stable)
	})
	t.Run("repeated fencing", func(t *testing.T) {
		h := newHarness(t)
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.fail(kerr.FencedMemberEpoch.Code)
		h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
		h.complete(nil)
		if req := waits(h, 0, "the first fencing"); req.MemberEpoch != 0 {
			t.Fatalf("rejoin at epoch %d", req.MemberEpoch)
		}
		h.fail(kerr.UnknownMemberID.Code) // nothing held: no OnAllTasksLost, straight to the rejoin
		waits(h, backoff, "the second fencing in a row")
		h.fail(kerr.FencedMemberEpoch.Code)
		waits(h, 2*backoff, "the third")
		h.answer(resp(2, active())) // a success ends the row
		h.complete(nil)             // OnTasksAssigned([])
		h.mustSend()                // the ack
		h.answer(resp(2, nil))
		h.advance(interval)
		h.mustSend()
		h.fail(kerr.UnknownMemberID.Code)
		waits(h, 0, "the first fencing after a success")
	})
}

// OnAllTasksLost is skipped when nothing is held (as Java's, the member rejoins at once), and the
// epoch resets to 0 only once it returned: while it runs the member still shows its old epoch
// (Epoch, Snapshot; the Manager's Member and Snapshot read the latter). A commit from inside the
// callback is refused by the broker either way.
func TestAllTasksLostSkippedWhenNothingHeldAndTheEpochResetAfterIt(t *testing.T) {
	t.Run("nothing held", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.mustSend()
		h.answer(resp(4, active())) // nothing assigned
		h.complete(nil)             // OnTasksAssigned([])
		h.mustSend()                // the ack
		h.answer(resp(4, nil))
		h.expectState(Stable)
		h.advance(interval)
		h.mustSend()
		n := len(h.invokes)
		h.fail(kerr.FencedMemberEpoch.Code)
		if len(h.invokes) != n {
			t.Fatalf("a callback ran with nothing held: %+v", h.lastInvoke())
		}
		h.expectState(Joining)
		if req := h.tick(); req == nil || req.MemberEpoch != 0 || h.m.Epoch() != 0 {
			t.Fatal("a member that held nothing does not rejoin at epoch 0 at once")
		}
	})
	t.Run("tasks held", func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.mustSend()
		h.answer(resp(4, active("0_0")))
		h.complete(nil)
		h.mustSend()
		h.answer(resp(4, nil))
		h.advance(interval)
		h.mustSend()
		h.fail(kerr.FencedMemberEpoch.Code)
		h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
		if s := h.m.Snapshot(); h.m.Epoch() != 4 || s.Epoch != 4 || s.State != Fenced {
			t.Fatalf("while OnAllTasksLost runs: epoch %d, snapshot epoch %d in %s; want the old epoch 4 in FENCED", h.m.Epoch(), s.Epoch, s.State)
		}
		h.advance(time.Hour)
		if h.tick() != nil || h.m.Epoch() != 4 {
			t.Fatal("the member rejoined before OnAllTasksLost returned")
		}
		h.complete(nil)
		if s := h.m.Snapshot(); h.m.Epoch() != 0 || s.Epoch != 0 || s.State != Joining {
			t.Fatalf("after OnAllTasksLost: epoch %d in %s, want 0 in JOINING", s.Epoch, s.State)
		}
		if req := h.mustSend(); req.MemberEpoch != 0 {
			t.Fatalf("rejoin at epoch %d", req.MemberEpoch)
		}
	})
}
