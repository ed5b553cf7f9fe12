package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
)

// The leave's policy is the machine's (issue 21 §2): whether the leave heartbeat goes, how its
// answer is read, when it is sent again and when it is given up. The runner only sends it.

// leaving brings a member with one active task to LEAVING: Close, and OnTasksRevoked returned.
func leaving(h *harness) {
	h.t.Helper()
	h.stableWith(active("0_0"))
	h.close(CloseDefault)
	h.complete(nil)
	h.expectState(Leaving)
}

func TestLeaveIsNotSentWithoutAKnownCoordinator(t *testing.T) {
	cases := []struct {
		name string
		last func(h *harness)
	}{
		{"the last heartbeat could not be sent", func(h *harness) { h.cut(errors.New("dial tcp: connection refused")) }},
		// The first answer that the coordinator moved is retried at once; the second gets backoff,
		// and no heartbeat is out when the member leaves.
		{"the last heartbeat said NOT_COORDINATOR", func(h *harness) { h.fail(kerr.NotCoordinator.Code); h.fail(kerr.NotCoordinator.Code) }},
		{"the last heartbeat said COORDINATOR_NOT_AVAILABLE", func(h *harness) {
			h.fail(kerr.CoordinatorNotAvailable.Code)
			h.fail(kerr.CoordinatorNotAvailable.Code)
		}},
		// A coordinator that answers, even with an error, is known.
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			c.last(h)
			if h.m.hb.inFlight {
				t.Fatal("a heartbeat is out: the case does not test what it says")
			}
			h.close(CloseDefault)
			h.complete(nil)
			if len(h.leaves) != 0 {
				t.Fatalf("%d leave heartbeats without a known coordinator, want none", len(h.leaves))
			}
			h.expectPassedThrough(Leaving)
			h.expectState(Unsubscribed)
			if len(h.stopped) != 1 || h.stopped[0].Err != nil {
				t.Fatalf("stopped %+v, want one Stopped(nil)", h.stopped)
			}
			if left := h.lastEvent(EventLeft); !errors.Is(left.Err, errNoCoordinator) {
				t.Fatalf("EventLeft error %v, want %v", left.Err, errNoCoordinator)
			}
		})
	}
}

// A coordinator that answered the last heartbeat, even with an error, is known: the leave goes.
func TestLeaveIsSentToACoordinatorThatAnswered(t *testing.T) {
	for _, code := range []int16{0, kerr.CoordinatorLoadInProgress.Code} {
		t.Run(fmt.Sprintf("code %d", code), func(t *testing.T) {
			h := newHarness(t)
			h.stableWith(active("0_0"))
			h.advance(interval)
			h.mustSend()
			if code == 0 {
				h.answer(resp(1, nil))
			} else {
				h.fail(code)
			}
			h.close(CloseDefault)
			h.complete(nil)
			if len(h.leaves) != 1 {
				t.Fatalf("%d leave heartbeats, want 1", len(h.leaves))
			}
		})
	}
}

// A heartbeat still out when the leave is due may reach the broker after a leave sent at once (each
// request goes from its own goroutine; one still looking up its coordinator goes after a later one):
// a join heartbeat arriving after the leave would put the member back in the group. So the leave
// waits for that heartbeat's answer, then goes to the coordinator it reached, and is skipped when it
// reached none; the heartbeat not answered within the leave budget gives the leave up unsent.
func TestLeaveWaitsForTheHeartbeatThatIsOut(t *testing.T) {
	// outAtLeave brings a member whose coordinator was forgotten to LEAVING with a heartbeat out
	// that looks it up again, and checks that no leave went yet.
	outAtLeave := func(t *testing.T) *harness {
		h := newHarness(t)
		h.stableWith(active("0_0"))
		h.advance(interval)
		h.mustSend()
		h.cut(errors.New("dial tcp: connection refused")) // the coordinator is forgotten...
		h.advance(time.Second)
		h.mustSend() // ...and the next heartbeat looks it up again: out when the member leaves
		h.close(CloseDefault)
		h.complete(nil)
		h.expectState(Leaving)
		if len(h.leaves) != 0 {
			t.Fatalf("%d leave heartbeats while a heartbeat is out, want none yet", len(h.leaves))
		}
		return h
	}
	t.Run("answered: the leave goes", func(t *testing.T) {
		h := outAtLeave(t)
		h.advance(time.Second)
		h.answer(resp(1, nil))
		if len(h.leaves) != 1 || h.leaves[0].Request.MemberEpoch != -1 {
			t.Fatalf("leaves %+v, want one at epoch -1", h.leaves)
		}
		// The leave has what is left of its budget, counted from the revocation's end.
		if want := h.m.cfg.LeaveBudget - time.Second; h.leaves[0].Timeout != want {
			t.Fatalf("leave timeout %v, want %v", h.leaves[0].Timeout, want)
		}
		h.leaveAnswered(0)
		h.expectState(Unsubscribed)
		if len(h.stopped) != 1 || h.stopped[0].Err != nil {
			t.Fatalf("stopped %+v, want one Stopped(nil)", h.stopped)
		}
		if left := h.lastEvent(EventLeft); left.Err != nil {
			t.Fatalf("EventLeft error %v, want none", left.Err)
		}
	})
	t.Run("answered with an error from the coordinator: the leave goes", func(t *testing.T) {
		h := outAtLeave(t)
		h.fail(kerr.CoordinatorLoadInProgress.Code)
		if len(h.leaves) != 1 {
			t.Fatalf("%d leave heartbeats, want 1", len(h.leaves))
		}
	})
	t.Run("not sent: no coordinator is known, the leave is skipped", func(t *testing.T) {
		h := outAtLeave(t)
		h.cut(errors.New("dial tcp: connection refused"))
		if len(h.leaves) != 0 {
			t.Fatalf("%d leave heartbeats, want none", len(h.leaves))
		}
		h.expectState(Unsubscribed)
		if left := h.lastEvent(EventLeft); !errors.Is(left.Err, errNoCoordinator) {
			t.Fatalf("EventLeft error %v, want %v", left.Err, errNoCoordinator)
		}
	})
	t.Run("not answered within the leave budget: given up unsent", func(t *testing.T) {
		h := outAtLeave(t)
		if next := h.m.Next(); !next.Equal(h.now.Add(h.m.cfg.LeaveBudget)) {
			t.Fatalf("next wake-up in %v, want the leave budget %v", next.Sub(h.now), h.m.cfg.LeaveBudget)
		}
		h.advance(h.m.cfg.LeaveBudget - time.Millisecond)
		h.step(Tick{})
		h.expectState(Leaving)
		h.advance(time.Millisecond)
		h.step(Tick{})
		if len(h.leaves) != 0 {
			t.Fatalf("%d leave heartbeats, want none", len(h.leaves))
		}
		h.expectState(Unsubscribed)
		if len(h.stopped) != 1 || h.stopped[0].Err != nil {
			t.Fatalf("stopped %+v, want one Stopped(nil)", h.stopped)
		}
		if left := h.lastEvent(EventLeft); !errors.Is(left.Err, errHeartbeatOut) {
			t.Fatalf("EventLeft error %v, want %v", left.Err, errHeartbeatOut)
		}
		// Its answer coming later changes nothing.
		h.answer(resp(1, nil))
		if len(h.leaves) != 0 || len(h.stopped) != 1 {
			t.Fatalf("a late answer sent %d leaves, stopped %d times", len(h.leaves), len(h.stopped))
		}
	})
}

// Every answer to the leave heartbeat, read by the machine: which ones end the leave (and how), and
// which are sent again.
func TestLeaveAnswers(t *testing.T) {
	failed := int16(-1) // no answer: the send failed and may pass
	cases := []struct {
		name   string
		codes  []int16
		wantIs error // nil: the leave was taken
	}{
		{"taken", []int16{0}, nil},
		{"the member is gone already", []int16{kerr.UnknownMemberID.Code}, nil},
		{"the group is gone already", []int16{kerr.GroupIDNotFound.Code}, nil},
		{"moves, loads and failures are sent again", []int16{kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, failed, kerr.CoordinatorNotAvailable.Code, 0}, nil},
		{"a refusal ends it", []int16{kerr.CoordinatorLoadInProgress.Code, kerr.GroupAuthorizationFailed.Code}, kerr.GroupAuthorizationFailed},
		{"fenced is not taken", []int16{kerr.FencedMemberEpoch.Code}, kerr.FencedMemberEpoch},
		{"a closed client ends it", []int16{-2}, kgo.ErrClientClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			leaving(h)
			for i, code := range c.codes {
				if len(h.leaves) != i+1 {
					t.Fatalf("before answer %d: %d leave heartbeats, want %d", i, len(h.leaves), i+1)
				}
				switch code {
				case failed:
					h.leaveFailed(errors.New("dial tcp: connection refused"))
				case -2:
					h.leaveFailed(kgo.ErrClientClosed)
				default:
					h.leaveAnswered(code)
				}
				if next := h.m.Next(); i < len(c.codes)-1 && !next.IsZero() {
					h.now = next
					h.step(Tick{})
				}
			}
			if len(h.leaves) != len(c.codes) {
				t.Fatalf("%d leave heartbeats, want %d", len(h.leaves), len(c.codes))
			}
			for _, l := range h.leaves {
				if l.Request.MemberEpoch != heartbeat.EpochLeave || l.Request.MemberID != "member-1" {
					t.Fatalf("leave heartbeat epoch %d member %q", l.Request.MemberEpoch, l.Request.MemberID)
				}
			}
			h.expectState(Unsubscribed)
			if len(h.stopped) != 1 || h.stopped[0].Err != nil {
				t.Fatalf("stopped %+v: a leave that was not taken still ends the member without an error", h.stopped)
			}
			left := h.lastEvent(EventLeft)
			if c.wantIs == nil && left.Err != nil || c.wantIs != nil && !errors.Is(left.Err, c.wantIs) {
				t.Fatalf("EventLeft error %v, want %v", left.Err, c.wantIs)
			}
		})
	}
}

// The retries are paced by the backoff of retry.backoff.ms, except one at once after the first
// NOT_COORDINATOR (the coordinator moved: look it up and send again, as a heartbeat does).
func TestLeaveRetriesArePacedByTheBackoff(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Backoff = heartbeat.Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0.5 }}
	})
	leaving(h)
	at := h.now
	h.leaveAnswered(kerr.NotCoordinator.Code)
	if len(h.leaves) != 2 {
		t.Fatalf("%d leave heartbeats after the first NOT_COORDINATOR, want the retry at once (2)", len(h.leaves))
	}
	b := h.m.cfg.Backoff
	for n := range 3 {
		h.leaveAnswered(kerr.CoordinatorLoadInProgress.Code)
		want := h.now.Add(b.Delay(n + 1)) // the NOT_COORDINATOR was failure 1
		if next := h.m.Next(); !next.Equal(want) {
			t.Fatalf("retry %d due at +%v, want +%v", n+1, next.Sub(h.now), want.Sub(h.now))
		}
		h.now = want.Add(-time.Nanosecond)
		if h.step(Tick{}); len(h.leaves) != n+2 {
			t.Fatalf("retry %d went before its backoff", n+1)
		}
		h.now = want
		if h.step(Tick{}); len(h.leaves) != n+3 {
			t.Fatalf("retry %d did not go at its backoff", n+1)
		}
	}
	if h.now.Sub(at) >= DefaultLeaveBudget {
		t.Fatalf("the test ran past the leave budget (%v)", h.now.Sub(at))
	}
}

// Every attempt is bounded by what is left of the leave budget (and at most a request timeout);
// once the next retry would fall after the budget, the leave is given up and the last failure that
// was not the budget's end is named.
func TestLeaveIsBoundedByItsBudget(t *testing.T) {
	const budget = 2 * time.Second
	h := newHarness(t, func(c *Config) {
		c.LeaveBudget, c.RequestTimeout = budget, 700*time.Millisecond
		c.Backoff = heartbeat.Backoff{Min: 100 * time.Millisecond, Max: 400 * time.Millisecond, Rand: func() float64 { return 0.5 }}
	})
	leaving(h)
	start := h.now
	for range 100 {
		if len(h.stopped) > 0 {
			break
		}
		l := h.leaves[len(h.leaves)-1]
		left := start.Add(budget).Sub(h.now)
		if want := min(left, 700*time.Millisecond); l.Timeout != want {
			t.Fatalf("attempt %d has timeout %v, want %v (%v of the budget left)", len(h.leaves), l.Timeout, want, left)
		}
		if len(h.leaves)%2 == 1 {
			h.leaveAnswered(kerr.CoordinatorLoadInProgress.Code)
		} else {
			h.advance(l.Timeout) // the attempt used its whole timeout
			h.leaveFailed(context.DeadlineExceeded)
		}
		if len(h.stopped) == 0 {
			h.now = h.m.Next()
			if h.now.After(start.Add(budget)) {
				t.Fatalf("a retry at +%v, after the leave budget of %v", h.now.Sub(start), budget)
			}
			h.step(Tick{})
		}
	}
	if len(h.stopped) != 1 || h.stopped[0].Err != nil {
		t.Fatalf("stopped %+v, want one Stopped(nil)", h.stopped)
	}
	left := h.lastEvent(EventLeft)
	if left.Err == nil || !strings.Contains(left.Err.Error(), "leave budget of 2s") || !strings.Contains(left.Err.Error(), "COORDINATOR_LOAD_IN_PROGRESS") {
		t.Fatalf("EventLeft error %v: want the budget and the last failure before it named", left.Err)
	}
	if len(h.leaves) < 3 {
		t.Fatalf("%d leave heartbeats within a budget of %v, want retries", len(h.leaves), budget)
	}
}

// An answer to a leave heartbeat the member no longer waits for changes nothing.
func TestLeaveIgnoresStaleAnswers(t *testing.T) {
	h := newHarness(t)
	leaving(h)
	h.leaveAnswered(kerr.CoordinatorLoadInProgress.Code)
	stale := h.leaves[0].Seq
	if as := h.step(LeaveDone{Seq: stale}); len(as) != 0 {
		t.Fatalf("the answer to the first attempt, after it was answered: %+v", as)
	}
	h.now = h.m.Next()
	h.step(Tick{})
	if as := h.step(LeaveDone{Seq: stale, Err: kgo.ErrClientClosed}); len(as) != 0 || h.m.State() != Leaving {
		t.Fatalf("a stale answer while the retry is out: %+v, state %s", as, h.m.State())
	}
	h.leaveAnswered(0)
	h.expectState(Unsubscribed)
}

// The answer to the leave heartbeat is read only for its error code: the interval, the recovery lag
// and the task-offset interval it carries update nothing (Kafka's
// testDoesNotLogOrUpdateGroupConfigOnLeaveResponse), and nothing but the leave's end is reported.
func TestLeaveAnswerUpdatesNoGroupConfig(t *testing.T) {
	h := newHarness(t)
	leaving(h)
	before := h.m.Snapshot()
	n := len(h.actions)
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.MemberID, r.MemberEpoch = "member-1", heartbeat.EpochLeave
	r.HeartbeatIntervalMillis, r.AcceptableRecoveryLag, r.TaskOffsetIntervalMillis = 9999, 12345, 7777
	h.step(LeaveDone{Seq: h.leaves[0].Seq, Response: r})
	after := h.m.Snapshot()
	if after.TaskOffsetInterval != before.TaskOffsetInterval || after.AcceptableRecoveryLag != before.AcceptableRecoveryLag || h.m.interval != interval {
		t.Fatalf("the leave's answer changed the group's config: offsets every %v → %v, lag %d → %d, interval %v",
			before.TaskOffsetInterval, after.TaskOffsetInterval, before.AcceptableRecoveryLag, after.AcceptableRecoveryLag, h.m.interval)
	}
	for _, a := range h.actions[n:] {
		switch a := a.(type) {
		case Emit:
			if a.Event.Kind != EventStateChanged && a.Event.Kind != EventLeft {
				t.Fatalf("the leave's answer reported %s", a.Event.Kind)
			}
		case Log:
			t.Fatalf("the leave's answer logged %q", a.Msg)
		case Stopped:
		default:
			t.Fatalf("the leave's answer asked for %T", a)
		}
	}
}

// A retry due before the budget ended but run by a step that came after it (a late tick) is not
// sent with a negative timeout: the leave is given up, naming the last failure.
func TestLeaveRetryRunLateIsGivenUp(t *testing.T) {
	h := newHarness(t)
	leaving(h)
	h.leaveAnswered(kerr.CoordinatorLoadInProgress.Code)
	if h.m.Next().IsZero() {
		t.Fatal("no retry scheduled")
	}
	h.advance(DefaultLeaveBudget + time.Millisecond) // the step comes only after the budget
	h.step(Tick{})
	if len(h.leaves) != 1 {
		t.Fatalf("%d leave heartbeats, want the first only (last timeout %v)", len(h.leaves), h.leaves[len(h.leaves)-1].Timeout)
	}
	h.expectState(Unsubscribed)
	left := h.lastEvent(EventLeft)
	if left.Err == nil || !strings.Contains(left.Err.Error(), "leave budget") || !errors.Is(left.Err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("EventLeft error %v, want the budget and COORDINATOR_LOAD_IN_PROGRESS", left.Err)
	}
}

// OnTasksRevoked failing during the leave is reported (a *CallbackError, "the member leaves
// anyway") and the leave goes on; a revocation that succeeds reports no error.
func TestLeaveRevocationErrorIsReportedAndTheLeaveGoesOn(t *testing.T) {
	for _, fails := range []bool{false, true} {
		h := newHarness(t)
		h.stableWith(active("0_0"))
		h.close(CloseDefault)
		var err error
		if fails {
			err = errors.New("commit failed")
		}
		h.complete(err)
		h.expectState(Leaving)
		if len(h.leaves) != 1 {
			t.Fatalf("fails=%v: %d leave heartbeats, want 1", fails, len(h.leaves))
		}
		n := h.countEvents(EventError)
		if !fails && n != 0 {
			t.Fatalf("a revocation that succeeded reported %d errors", n)
		}
		if fails {
			e := h.lastEvent(EventError)
			ce, ok := errors.AsType[*CallbackError](e.Err)
			if n != 1 || !ok || ce.Callback != CallbackRevoked || !errors.Is(e.Err, err) || e.Message != "the member leaves anyway" {
				t.Fatalf("%d errors, last %+v", n, e)
			}
		}
	}
}

// Without a leave budget of its own the leave gets request.timeout.ms when that is shorter than
// DefaultLeaveBudget (Kafka's leave is one request), else DefaultLeaveBudget.
func TestLeaveBudgetDefaultsToTheShorterOfRequestTimeoutAndFiveSeconds(t *testing.T) {
	for _, c := range []struct{ request, want time.Duration }{{2 * time.Second, 2 * time.Second}, {30 * time.Second, DefaultLeaveBudget}} {
		h := newHarness(t, func(cfg *Config) { cfg.RequestTimeout = c.request })
		leaving(h)
		if got := h.leaves[0].Timeout; got != c.want {
			t.Errorf("request timeout %v: the leave's timeout is %v, want %v", c.request, got, c.want)
		}
	}
}
