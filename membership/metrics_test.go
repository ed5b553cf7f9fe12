package membership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The metrics tests run the Manager in synctest bubbles against a scripted transport: time is fake,
// so a heartbeat that takes 30 ms takes exactly 30 ms and every duration is known in advance.

// coordTransport is a fake broker that reports its coordinator (CoordinatorReporter): node(n)
// after heartbeat n was answered, where a negative node means none is known.
type coordTransport struct {
	*fakeBroker
	node func(n int) int32
}

func (c coordTransport) Coordinator() (int32, bool) {
	c.mu.Lock()
	n := c.returned - 1
	c.mu.Unlock()
	node := c.node(n)
	return node, node >= 0
}

// errAnswer is an answer carrying an error code.
func errAnswer(code int16) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.ErrorCode = code
	return r
}

// timedListener sleeps in each callback for the time given, and fails OnTasksAssigned the first
// failAssign times.
type timedListener struct {
	revoke, assign, lose time.Duration
	failAssign           int

	mu sync.Mutex
}

func (l *timedListener) OnTasksRevoked(ctx context.Context, s tasks.Set) error {
	time.Sleep(l.revoke)
	return nil
}

func (l *timedListener) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	time.Sleep(l.assign)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failAssign > 0 {
		l.failAssign--
		return errors.New("scripted failure")
	}
	return nil
}

func (l *timedListener) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	time.Sleep(l.lose)
	return nil
}

// hookRecorder implements every hook and records what it is told, one line each.
type hookRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (h *hookRecorder) add(format string, args ...any) {
	h.mu.Lock()
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
	h.mu.Unlock()
}

func (h *hookRecorder) OnHeartbeatSent() { h.add("sent") }
func (h *hookRecorder) OnHeartbeatAnswered(rtt time.Duration, class heartbeat.Class, err error) {
	if class == 0 {
		h.add("answered %v ok", rtt)
		return
	}
	h.add("answered %v %s: %v", rtt, class, err != nil)
}
func (h *hookRecorder) OnRebalanceStarted()                  { h.add("rebalance started") }
func (h *hookRecorder) OnRebalanceCompleted(d time.Duration) { h.add("rebalance completed %v", d) }
func (h *hookRecorder) OnRebalanceFailed(d time.Duration)    { h.add("rebalance failed %v", d) }
func (h *hookRecorder) OnCallbackDone(k CallbackKind, took time.Duration, err error) {
	h.add("callback %s %v err=%v", k, took, err != nil)
}
func (h *hookRecorder) OnStateChanged(s State, epoch int32) { h.add("state %s %d", s, epoch) }
func (h *hookRecorder) OnFenced()                           { h.add("fenced") }
func (h *hookRecorder) OnCoordinatorChanged(node int32)     { h.add("coordinator %d", node) }
func (h *hookRecorder) OnAssignmentChanged(a tasks.Assignment) {
	h.add("owned %d/%d/%d", a.Active.Len(), a.Standby.Len(), a.Warmup.Len())
}

// matching returns the recorded lines that start with one of the prefixes, in order.
func (h *hookRecorder) matching(prefixes ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range h.lines {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func newMetricsManager(t *testing.T, tr Transport, l Listener, hooks ...Hook) *Manager {
	t.Helper()
	cfg := config.Default("app")
	cfg.RetryBackoff, cfg.RetryBackoffMax = 100*time.Millisecond, time.Second
	cfg.StateDir = t.TempDir()
	m, err := New(nil, cfg, testTopology, WithTransport(tr), WithListener(l), WithMemberID("member-1"),
		WithHooks(hooks...), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func closeManager(t *testing.T, m *Manager) {
	t.Helper()
	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// waitFor advances fake time in steps of 100 ms until cond holds, at most 30 s of fake time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 300 {
		synctest.Wait()
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("not reached within 30 s of fake time: %s", what)
}

// A member's life — join, a revocation, three error answers of three classes, a fencing and the
// rejoin — as Stats and the hooks see it. Each heartbeat takes 30 ms, OnTasksRevoked 20 ms,
// OnTasksAssigned 50 ms and OnAllTasksLost 10 ms, so every duration is exact.
func TestMetricsThroughAMembersLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		joined := tasks.Assignment{Active: set("0_0", "0_1"), Standby: set("1_0"), Warmup: set("1_1")}
		narrowed := tasks.Assignment{Active: set("0_0"), Standby: set("1_0")}
		tr := scriptedBroker(30 * time.Millisecond)
		tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			switch {
			case n == 0:
				return resp(1, &joined), nil
			case n == 2:
				return resp(2, &narrowed), nil // revokes 0_1, drops the warm-up
			case n == 4:
				return errAnswer(kerr.CoordinatorLoadInProgress.Code), nil // Retry
			case n == 5:
				return errAnswer(kerr.NotCoordinator.Code), nil // Rediscover
			case n == 6:
				return errAnswer(kerr.FencedMemberEpoch.Code), nil // Fenced
			case req.MemberEpoch == 0:
				return resp(3, active("0_0", "0_1")), nil // the rejoin
			case n < 6:
				return resp(2, nil), nil
			}
			return resp(3, nil), nil
		}
		l := &timedListener{revoke: 20 * time.Millisecond, assign: 50 * time.Millisecond, lose: 10 * time.Millisecond}
		rec := &hookRecorder{}
		m := newMetricsManager(t, tr, l, rec)
		if s := m.Stats(); s.State != Unsubscribed || s.HeartbeatsSent != 0 || s.Coordinator != -1 {
			t.Fatalf("before Start: %+v", s)
		}
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stable at epoch 3", func() bool { s := m.Stats(); return s.State == Stable && s.Epoch == 3 })
		defer closeManager(t, m)

		s := m.Stats()
		calls, returned, lastOK := tr.counts()
		if s.HeartbeatsSent != uint64(calls) {
			t.Errorf("HeartbeatsSent %d, the transport was called %d times", s.HeartbeatsSent, calls)
		}
		wantFailed := map[heartbeat.Class]uint64{heartbeat.Retry: 1, heartbeat.Rediscover: 1, heartbeat.Fenced: 1}
		if fmt.Sprint(s.HeartbeatsFailed) != fmt.Sprint(wantFailed) {
			t.Errorf("HeartbeatsFailed %v, want %v", s.HeartbeatsFailed, wantFailed)
		}
		if s.HeartbeatsSucceeded+3 != uint64(returned) {
			t.Errorf("HeartbeatsSucceeded %d + 3 failed, but %d answers came back", s.HeartbeatsSucceeded, returned)
		}
		if s.LastHeartbeatRTT != 30*time.Millisecond || s.MaxHeartbeatRTT != 30*time.Millisecond ||
			s.HeartbeatRTTTotal != time.Duration(returned)*30*time.Millisecond {
			t.Errorf("RTT last %v max %v total %v, want 30ms 30ms and %d × 30ms", s.LastHeartbeatRTT, s.MaxHeartbeatRTT, s.HeartbeatRTTTotal, returned)
		}
		if !s.LastHeartbeatAnswered.Equal(lastOK) {
			t.Errorf("LastHeartbeatAnswered %v, the last success left the transport at %v", s.LastHeartbeatAnswered, lastOK)
		}
		if since, ok := s.SinceLastHeartbeatAnswered(); !ok || since != s.At.Sub(lastOK) {
			t.Errorf("SinceLastHeartbeatAnswered %v %v", since, ok)
		}
		// Rebalances: the join (OnTasksAssigned: 50 ms), the narrowing (OnTasksRevoked then
		// OnTasksAssigned: 70 ms) and the rejoin after the fencing (50 ms); the ack goes at once.
		if s.RebalancesStarted != 3 || s.RebalancesCompleted != 3 || s.RebalancesFailed != 0 {
			t.Errorf("rebalances started %d completed %d failed %d, want 3 3 0", s.RebalancesStarted, s.RebalancesCompleted, s.RebalancesFailed)
		}
		if s.LastRebalanceLatency != 50*time.Millisecond || s.MaxRebalanceLatency != 70*time.Millisecond ||
			s.RebalanceLatencyTotal != 170*time.Millisecond {
			t.Errorf("rebalance latency last %v max %v total %v, want 50ms 70ms 170ms",
				s.LastRebalanceLatency, s.MaxRebalanceLatency, s.RebalanceLatencyTotal)
		}
		want := map[CallbackKind]CallbackStats{
			CallbackAssigned: {Calls: 3, Last: 50 * time.Millisecond, Max: 50 * time.Millisecond, Total: 150 * time.Millisecond},
			CallbackRevoked:  {Calls: 1, Last: 20 * time.Millisecond, Max: 20 * time.Millisecond, Total: 20 * time.Millisecond},
			CallbackLost:     {Calls: 1, Last: 10 * time.Millisecond, Max: 10 * time.Millisecond, Total: 10 * time.Millisecond},
		}
		for kind, w := range want {
			if got := s.Callback(kind); got != w {
				t.Errorf("%s: %+v, want %+v", kind, got, w)
			}
		}
		if s.ActiveTasks != 2 || s.StandbyTasks != 0 || s.WarmupTasks != 0 || s.Fencings != 1 {
			t.Errorf("tasks %d/%d/%d fencings %d, want 2/0/0 and 1", s.ActiveTasks, s.StandbyTasks, s.WarmupTasks, s.Fencings)
		}
		if a, _ := m.Assignment(); a.Active.Len() != s.ActiveTasks {
			t.Errorf("Assignment %v, Stats says %d active", a, s.ActiveTasks)
		}
		if s.Coordinator != -1 || s.CoordinatorChanges != 0 {
			t.Errorf("a transport that does not report its coordinator: %d, %d changes", s.Coordinator, s.CoordinatorChanges)
		}

		gotSeq := rec.matching("rebalance", "callback", "owned", "fenced")
		wantSeq := []string{
			"rebalance started",
			"callback OnTasksAssigned 50ms err=false",
			"rebalance completed 50ms",
			"owned 2/1/1",
			"rebalance started",
			"callback OnTasksRevoked 20ms err=false",
			"owned 1/1/1",
			"callback OnTasksAssigned 50ms err=false",
			"rebalance completed 70ms",
			"owned 1/1/0",
			"fenced",
			"callback OnAllTasksLost 10ms err=false",
			"owned 0/0/0",
			"rebalance started",
			"callback OnTasksAssigned 50ms err=false",
			"rebalance completed 50ms",
			"owned 2/0/0",
		}
		if !slices.Equal(gotSeq, wantSeq) {
			t.Errorf("hooks told\n  %s\nwant\n  %s", strings.Join(gotSeq, "\n  "), strings.Join(wantSeq, "\n  "))
		}
		answers := rec.matching("answered")
		if len(answers) != returned || answers[0] != "answered 30ms ok" {
			t.Errorf("%d answers told, %d came back: %v", len(answers), returned, answers)
		}
		for _, class := range []heartbeat.Class{heartbeat.Retry, heartbeat.Rediscover, heartbeat.Fenced} {
			if !slices.Contains(answers, fmt.Sprintf("answered 30ms %s: true", class)) {
				t.Errorf("no %s answer told: %v", class, answers)
			}
		}
		if sent := rec.matching("sent"); len(sent) != calls {
			t.Errorf("%d sends told, %d made", len(sent), calls)
		}
		states := rec.matching("state")
		for _, w := range []string{"state FENCED 2", "state JOINING 0", "state STABLE 3"} {
			if !slices.Contains(states, w) {
				t.Errorf("no %q among %v", w, states)
			}
		}
		if states[len(states)-1] != "state STABLE 3" {
			t.Errorf("last state told %q", states[len(states)-1])
		}
	})
}

// A failed OnTasksAssigned is a failed rebalance; the retry completes it.
func TestMetricsFailedRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := scriptedBroker(10 * time.Millisecond)
		tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			if n == 0 {
				return resp(1, active("0_0")), nil
			}
			return resp(1, nil), nil
		}
		rec := &hookRecorder{}
		m := newMetricsManager(t, tr, &timedListener{assign: 40 * time.Millisecond, failAssign: 1}, rec)
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stable", func() bool { return m.Stats().State == Stable })
		defer closeManager(t, m)
		s := m.Stats()
		if s.RebalancesStarted != 2 || s.RebalancesFailed != 1 || s.RebalancesCompleted != 1 {
			t.Errorf("rebalances started %d failed %d completed %d, want 2 1 1", s.RebalancesStarted, s.RebalancesFailed, s.RebalancesCompleted)
		}
		if s.Assigned.Calls != 2 || s.Assigned.Failed != 1 {
			t.Errorf("OnTasksAssigned %+v, want 2 calls of which 1 failed", s.Assigned)
		}
		got := rec.matching("rebalance", "callback")
		want := []string{
			"rebalance started",
			"callback OnTasksAssigned 40ms err=true",
			"rebalance failed 40ms",
		}
		if len(got) < 3 || !slices.Equal(got[:3], want) {
			t.Errorf("hooks told %v, want it to start with %v", got, want)
		}
		if !strings.HasPrefix(got[len(got)-1], "rebalance completed") {
			t.Errorf("the retry did not complete: %v", got)
		}
	})
}

// A heartbeat failure that meets a rebalance in progress (OnTasksAssigned still runs, 2 s, while the
// heartbeats go on every 500 ms) fails that rebalance when it is fatal, as Java's
// failed-rebalance-total counts it (StreamsMembershipManagerTest.testOnHeartbeatFailure): Stats and
// the hook say failed, with the time from the target's arrival. A retriable one (the connection
// dropped) fails nothing: the rebalance completes once the callback returns.
func TestMetricsHeartbeatFailureDuringARebalance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func() (*kmsg.StreamsGroupHeartbeatResponse, error)
		fatal bool
	}{
		{"fatal", func() (*kmsg.StreamsGroupHeartbeatResponse, error) {
			return errAnswer(kerr.GroupAuthorizationFailed.Code), nil
		}, true},
		{"retriable", func() (*kmsg.StreamsGroupHeartbeatResponse, error) {
			return nil, errors.New("connection reset by peer")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := scriptedBroker(10 * time.Millisecond)
				tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
					switch n {
					case 0:
						return resp(1, active("0_0")), nil
					case 1:
						return tc.fail()
					}
					return resp(1, nil), nil
				}
				rec := &hookRecorder{}
				m := newMetricsManager(t, tr, &timedListener{assign: 2 * time.Second}, rec)
				if err := m.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				var s Stats
				if tc.fatal {
					// Stopped once OnTasksAssigned returned and OnAllTasksLost ran.
					waitFor(t, "stopped", func() bool { return m.Err() != nil })
					s = m.Stats()
					if !errors.Is(m.Err(), kerr.GroupAuthorizationFailed) {
						t.Fatalf("Err() = %v, want the fatal GROUP_AUTHORIZATION_FAILED", m.Err())
					}
					closeManager(t, m)
				} else {
					waitFor(t, "stable", func() bool { return m.Stats().State == Stable })
					s = m.Stats()
					closeManager(t, m)
				}
				wantFailed, wantCompleted := uint64(0), uint64(1)
				want := []string{"rebalance started", "callback OnTasksAssigned 2s err=false", "rebalance completed 2s"}
				if tc.fatal {
					// Failed when the error answer arrived, one heartbeat interval (500 ms, counted
					// from the sending of the heartbeat before) after the target's; the callback
					// that was running returns later and completes nothing.
					wantFailed, wantCompleted = 1, 0
					want = []string{"rebalance started", "rebalance failed 500ms", "callback OnTasksAssigned 2s err=false"}
				}
				if s.RebalancesStarted != 1 || s.RebalancesFailed != wantFailed || s.RebalancesCompleted != wantCompleted {
					t.Errorf("rebalances started %d failed %d completed %d, want 1 %d %d",
						s.RebalancesStarted, s.RebalancesFailed, s.RebalancesCompleted, wantFailed, wantCompleted)
				}
				if got := rec.matching("rebalance", "callback OnTasksAssigned"); !slices.Equal(got, want) {
					t.Errorf("hooks told %v, want %v", got, want)
				}
			})
		})
	}
}

// The assigned-task gauges (Java's assigned-partitions) read 0 before the member starts and then
// follow what the application holds, role by role: each change is counted and told once.
func TestMetricsAssignedTaskCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		joined := tasks.Assignment{Active: set("0_0", "0_1"), Standby: set("1_0"), Warmup: set("1_1")}
		narrowed := tasks.Assignment{Active: set("0_0"), Warmup: set("1_0", "1_1")}
		tr := scriptedBroker(10 * time.Millisecond)
		tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			switch n {
			case 0:
				return resp(1, &joined), nil
			case 2:
				return resp(2, &narrowed), nil
			}
			return resp(max(1, req.MemberEpoch), nil), nil
		}
		rec := &hookRecorder{}
		m := newMetricsManager(t, tr, &timedListener{}, rec)
		if s := m.Stats(); s.ActiveTasks != 0 || s.StandbyTasks != 0 || s.WarmupTasks != 0 {
			t.Fatalf("before Start: tasks %d/%d/%d", s.ActiveTasks, s.StandbyTasks, s.WarmupTasks)
		}
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stable with the first assignment", func() bool {
			s := m.Stats()
			return s.State == Stable && s.ActiveTasks == 2
		})
		if s := m.Stats(); s.StandbyTasks != 1 || s.WarmupTasks != 1 {
			t.Errorf("after the join: tasks %d/%d/%d, want 2/1/1", s.ActiveTasks, s.StandbyTasks, s.WarmupTasks)
		}
		waitFor(t, "stable at epoch 2", func() bool { s := m.Stats(); return s.State == Stable && s.Epoch == 2 })
		defer closeManager(t, m)
		if s := m.Stats(); s.ActiveTasks != 1 || s.StandbyTasks != 0 || s.WarmupTasks != 2 {
			t.Errorf("after the narrowing: tasks %d/%d/%d, want 1/0/2", s.ActiveTasks, s.StandbyTasks, s.WarmupTasks)
		}
		// OnTasksRevoked hands back 0_1 before the new target is assigned: three changes in all.
		want := []string{"owned 2/1/1", "owned 1/1/1", "owned 1/0/2"}
		if got := rec.matching("owned"); !slices.Equal(got, want) {
			t.Errorf("OnAssignmentChanged told %v, want %v", got, want)
		}
	})
}

// With a transport that reports its coordinator, the first one known and every move are told and
// counted; forgetting the coordinator and finding the same one again is no change.
func TestMetricsCoordinatorChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := scriptedBroker(5 * time.Millisecond)
		st.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			if n == 0 {
				return resp(1, active("0_0")), nil
			}
			return resp(1, nil), nil
		}
		tr := coordTransport{fakeBroker: st, node: func(n int) int32 {
			switch {
			case n < 3:
				return 1
			case n == 3:
				return -1 // forgotten
			case n < 6:
				return 1 // found again: the same node
			}
			return 2 // moved
		}}
		rec := &hookRecorder{}
		m := newMetricsManager(t, tr, &timedListener{}, rec)
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "eight answers", func() bool { _, r, _ := st.counts(); return r >= 8 })
		defer closeManager(t, m)
		s := m.Stats()
		if s.Coordinator != 2 || s.CoordinatorChanges != 1 {
			t.Errorf("coordinator %d after %d changes, want 2 after 1", s.Coordinator, s.CoordinatorChanges)
		}
		if got := rec.matching("coordinator"); !slices.Equal(got, []string{"coordinator 1", "coordinator 2"}) {
			t.Errorf("hooks told %v", got)
		}
	})
}

// Hooks that implement nothing are ignored, a Manager without hooks keeps Stats, and a snapshot is
// the caller's own copy.
func TestMetricsWithoutHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := scriptedBroker(0)
		tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			switch n {
			case 0:
				return resp(1, active("0_0")), nil
			case 2:
				return errAnswer(kerr.CoordinatorLoadInProgress.Code), nil
			}
			return resp(1, nil), nil
		}
		m := newMetricsManager(t, tr, &timedListener{}, struct{}{}, 42)
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a failed heartbeat", func() bool { return m.Stats().HeartbeatsFailed[heartbeat.Retry] == 1 })
		defer closeManager(t, m)
		s := m.Stats()
		s.HeartbeatsFailed[heartbeat.Retry] = 99
		if m.Stats().HeartbeatsFailed[heartbeat.Retry] != 1 {
			t.Fatal("changing a snapshot changed the member's counters")
		}
		if s.ActiveTasks != 1 || s.RebalancesCompleted != 1 {
			t.Errorf("without hooks: %d active, %d rebalances", s.ActiveTasks, s.RebalancesCompleted)
		}
	})
}

// SinceLastHeartbeatAnswered grows while the coordinator cannot be reached, and heartbeats that
// did not reach it count as failed by their class.
func TestMetricsSinceLastAnswerGrowsWhileUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down sync.Mutex
		unreachable := false
		tr := scriptedBroker(10 * time.Millisecond)
		tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			down.Lock()
			defer down.Unlock()
			if unreachable {
				return nil, errors.New("dial tcp: connection refused") // a raw failure to reach the broker
			}
			if n == 0 {
				return resp(1, active("0_0")), nil
			}
			return resp(1, nil), nil
		}
		m := newMetricsManager(t, tr, &timedListener{})
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stable", func() bool { return m.Stats().State == Stable })
		defer closeManager(t, m)
		down.Lock()
		unreachable = true
		down.Unlock()
		_, _, lastOK := tr.counts()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		s := m.Stats()
		since, ok := s.SinceLastHeartbeatAnswered()
		if !ok || !s.LastHeartbeatAnswered.Equal(lastOK) || since != time.Since(lastOK) || since < 3*time.Second {
			t.Errorf("since the last answer %v (%v), last success %v, the transport's %v", since, ok, s.LastHeartbeatAnswered, lastOK)
		}
		if s.HeartbeatsFailed[heartbeat.Rediscover] == 0 || s.LastHeartbeatRTT != 10*time.Millisecond {
			t.Errorf("failed %v, last rtt %v", s.HeartbeatsFailed, s.LastHeartbeatRTT)
		}
	})
}

// An epoch change without a state change still reaches Stats and the state hook.
func TestStatsFollowEpochWithinAState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l)
		if s := m.Stats(); s.Epoch != 1 || s.State != Stable {
			t.Fatalf("stats %d %s", s.Epoch, s.State)
		}
		f.mu.Lock()
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.MemberEpoch = 5
			return r, nil
		}
		f.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if s := m.Stats(); s.Epoch != 5 || s.State != Stable {
			t.Fatalf("stats after the epoch moved: %d %s", s.Epoch, s.State)
		}
		m.Close(t.Context())
	})
}
