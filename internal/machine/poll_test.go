package machine

import (
	"errors"
	"testing"
	"time"
)

// pollHarness is a member Stable with 0_0 whose application polls (max.poll.interval.ms 30 s).
func pollHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.step(Polled{At: h.now})
	return h
}

// Issue 22 §3, as Java's onPollTimerExpired: an application that stops polling for
// max.poll.interval.ms loses its tasks (OnAllTasksLost, not a revocation: it may be hung), the member
// leaves with epoch -1 and waits in STALE, and the next poll rejoins at epoch 0 with the same member
// ID. Polls the machine did not hear of are asked for before it expires.
func TestPollTimerExpiresAndTheNextPollRejoins(t *testing.T) {
	h := pollHarness(t)
	start := h.now
	for h.now.Before(start.Add(29 * time.Second)) {
		if req := h.tick(); req != nil {
			h.answer(resp(1, nil))
		}
		h.now = h.m.Next()
	}
	// The deadline from the first poll comes: the member asks; the application polled meanwhile.
	h.now = start.Add(30 * time.Second)
	as := h.step(Tick{})
	if !hasAction[AskPoll](as) {
		t.Fatalf("no AskPoll at the deadline: %v", as)
	}
	h.step(Polled{At: start.Add(20 * time.Second)})
	if h.hasEvent(EventPollTimerExpired) {
		t.Fatal("expired although the application polled 10 s ago")
	}
	for h.now.Before(start.Add(50 * time.Second)) {
		if req := h.tick(); req != nil {
			h.answer(resp(1, nil))
		}
		h.now = h.m.Next()
	}
	as = h.step(Tick{})
	if !hasAction[AskPoll](as) {
		t.Fatalf("no AskPoll at the second deadline, at %v", h.now.Sub(start))
	}
	h.step(Polled{At: start.Add(20 * time.Second)}) // no poll since
	var pe *PollTimeoutError
	if !errors.As(h.lastEvent(EventPollTimerExpired).Err, &pe) || pe.Since != 30*time.Second {
		t.Fatalf("event %+v", h.lastEvent(EventPollTimerExpired))
	}
	h.expectState(PrepareLeaving)
	h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
	h.complete(nil)
	h.expectState(Leaving)
	if h.tick() != nil { // a keepalive sent while OnAllTasksLost ran: the leave waits for its answer
		if len(h.leaves) != 0 {
			t.Fatal("the leave went while a heartbeat was out")
		}
		h.answer(resp(1, nil))
	}
	if l := h.leaves[len(h.leaves)-1]; l.Request.MemberEpoch != -1 {
		t.Fatalf("leave epoch %d, want -1", l.Request.MemberEpoch)
	}
	h.leaveAnswered(0)
	h.expectState(Stale)
	if len(h.stopped) != 0 {
		t.Fatal("the member stopped")
	}
	h.advance(time.Hour)
	if h.tick() != nil || !h.m.Next().IsZero() {
		t.Fatal("a STALE member heartbeats or waits for time")
	}
	h.step(Polled{At: h.now})
	h.expectState(Joining)
	req := h.mustSend()
	if req.MemberEpoch != 0 || req.MemberID != "member-1" || req.Topology == nil {
		t.Fatalf("rejoin epoch %d member %q", req.MemberEpoch, req.MemberID)
	}
	h.answer(resp(3, active("0_0")))
	h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
}

// The timer runs only for an application that polls: one that never calls Poll keeps its tasks
// however long it runs (the behaviour before the timer; documented on Manager.Poll).
func TestPollTimerOffWithoutPolls(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	start := h.now
	for h.now.Before(start.Add(10 * time.Minute)) {
		if req := h.tick(); req != nil {
			h.answer(resp(1, nil))
		}
		h.now = h.m.Next()
	}
	if h.countActions(func(a Action) bool { _, ok := a.(AskPoll); return ok }) != 0 || h.hasEvent(EventPollTimerExpired) {
		t.Fatal("the poll timer ran for an application that never polled")
	}
}

// A static member leaves with -2 (Java's leaveGroupEpoch), so its tasks stay reserved until it
// rejoins; Close while STALE ends the member at once.
func TestPollTimerStaticMemberAndClose(t *testing.T) {
	h := newHarness(t, static)
	h.stableWith(active("0_0"))
	h.step(Polled{At: h.now})
	h.now = h.now.Add(30 * time.Second)
	h.step(Tick{})
	h.step(Polled{})
	h.complete(nil)
	if h.tick() != nil { // a keepalive out: the leave waits for its answer
		h.answer(resp(1, nil))
	}
	if l := h.leaves[len(h.leaves)-1]; l.Request.MemberEpoch != -2 {
		t.Fatalf("static leave epoch %d, want -2", l.Request.MemberEpoch)
	}
	h.leaveAnswered(0)
	h.expectState(Stale)
	h.close(CloseDefault)
	if len(h.stopped) != 1 || h.stopped[0].Err != nil {
		t.Fatalf("Close in STALE: %+v", h.stopped)
	}
}

func hasAction[T Action](as []Action) bool {
	for _, a := range as {
		if _, ok := a.(T); ok {
			return true
		}
	}
	return false
}

// Issue 22 §5: the heartbeat period is the broker's interval counted from the send, as Java resets
// its heartbeat timer on the send attempt, not the interval plus the round trip.
func TestHeartbeatIntervalCountsFromTheSend(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	sent := h.now
	h.advance(200 * time.Millisecond) // the round trip
	h.answer(resp(1, nil))
	if got := h.m.Next(); !got.Equal(sent.Add(interval)) {
		t.Fatalf("next heartbeat %v after the send, want the interval %v", got.Sub(sent), interval)
	}
	h.now = h.m.Next()
	h.mustSend()
	h.advance(2 * interval) // a round trip longer than the interval
	h.answer(resp(1, nil))
	if h.tick() == nil {
		t.Fatal("the next heartbeat did not go at once after an answer slower than the interval")
	}
}
