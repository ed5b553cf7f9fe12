package membership

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

const testGroup = "app"

// sessionConfigAnswer is a DescribeConfigs answer that gives group's streams.session.timeout.ms as
// value.
func sessionConfigAnswer(group, value string) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	r := kmsg.NewDescribeConfigsResponseResource()
	r.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	r.ResourceName = group
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = machine.KeyGroupSessionTimeout
	c.Value = kmsg.StringPtr(value)
	r.Configs = append(r.Configs, c)
	resp.Resources = append(resp.Resources, r)
	return resp
}

// lostClock records when OnAllTasksLost ran.
type lostClock struct {
	recordingListener
	lostAt []time.Time
}

func (l *lostClock) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	l.mu.Lock()
	l.lostAt = append(l.lostAt, time.Now())
	l.mu.Unlock()
	return l.recordingListener.OnAllTasksLost(ctx, a)
}

// Issue 11 §5 and issue 22 §2 through the Manager, in fake time: a member cut off from the
// coordinator learns the group's session timeout from the broker, calls OnAllTasksLost a tenth of
// it before the broker could expire its session (counted from the send of the last answered
// heartbeat), reports EventSessionLost, and keeps its membership: once the network is back the
// broker, which still has it, hands the tasks back at the same epoch, with no rejoin.
func TestManagerSessionGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &lostClock{}
		f.session = 3 * time.Second
		m := newTestManager(t, f, l)
		var kinds []EventKind
		var lostErr error
		drained := make(chan struct{})
		go func() {
			for e := range m.Events() {
				kinds = append(kinds, e.Kind)
				if e.Kind == EventSessionLost {
					lostErr = e.Err
				}
			}
			close(drained)
		}()
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if m.Snapshot().SessionTimeout != 3*time.Second {
			t.Fatalf("session timeout %v, want the broker's 3s", m.Snapshot().SessionTimeout)
		}
		cut := true
		var sends []time.Time
		f.mu.Lock()
		answeredSend := f.heartbeats[len(f.heartbeats)-1]
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			sends = append(sends, time.Now())
			if cut {
				return nil, errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
			}
			return okAnswer(req), nil
		}
		f.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		l.mu.Lock()
		lost := append([]time.Time(nil), l.lostAt...)
		l.mu.Unlock()
		if len(lost) != 1 {
			t.Fatalf("OnAllTasksLost ran %d times during the cut, want once", len(lost))
		}
		if got, want := lost[0].Sub(answeredSend), 2700*time.Millisecond; got != want {
			t.Fatalf("tasks given up %v after the last answered heartbeat was sent, want %v (3s session - 10%%)", got, want)
		}
		f.mu.Lock()
		cut = false
		f.mu.Unlock()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		f.mu.Lock()
		var joins []string
		for _, r := range f.requests {
			if r.MemberEpoch == 0 {
				joins = append(joins, r.MemberID)
			}
		}
		f.mu.Unlock()
		id, epoch := m.Member()
		if len(joins) != 1 || epoch != 1 {
			t.Errorf("%d heartbeats at epoch 0 and epoch %d now, want only the first join and epoch 1", len(joins), epoch)
		}
		for _, j := range joins {
			if j != id {
				t.Errorf("a join as %q, want the member's own ID %q", j, id)
			}
		}
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) || m.State() != Stable {
			t.Fatalf("after the network came back: %s %v", m.State(), a)
		}
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-drained
		if _, ok := errors.AsType[*SessionLostError](lostErr); !ok {
			t.Errorf("EventSessionLost with %v", lostErr)
		}
		if !slices.Contains(kinds, EventSessionLost) || slices.Contains(kinds, EventFenced) {
			t.Fatalf("events %v: want an EventSessionLost and no EventFenced", kinds)
		}
	})
}

// blockingAssign blocks its second OnTasksAssigned until ctx ends, and records that it did.
type blockingAssign struct {
	recordingListener
	assigns   int
	cancelled chan struct{}
}

func (l *blockingAssign) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	l.mu.Lock()
	l.assigns++
	n := l.assigns
	l.mu.Unlock()
	if n == 2 {
		<-ctx.Done()
		close(l.cancelled)
		return ctx.Err()
	}
	return l.recordingListener.OnTasksAssigned(ctx, a, ready)
}

// When the session guard fires while a callback runs, the Manager cancels that callback's context
// and Assignment shows the loss at once; OnAllTasksLost follows once the callback returned.
func TestManagerSessionGuardCancelsTheRunningCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBroker()
		f.session = 3 * time.Second
		l := &blockingAssign{cancelled: make(chan struct{})}
		m := newTestManager(t, f, l)
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) {
			t.Fatalf("owns %v", a)
		}
		moved := false
		f.mu.Lock()
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !moved {
				moved = true
				r := okAnswer(req)
				r.MemberEpoch = 2
				r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = set("0_0", "0_1", "1_0").Kmsg(), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
				return r, nil
			}
			return nil, errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
		}
		f.mu.Unlock()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case <-l.cancelled:
			t.Fatal("cancelled before the guard fired")
		default:
		}
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) {
			t.Fatalf("owns %v before the guard fired", a)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case <-l.cancelled:
		default:
			t.Fatal("the running OnTasksAssigned's context was not cancelled when the guard fired")
		}
		if a, _ := m.Assignment(); !a.IsEmpty() {
			t.Fatalf("Assignment shows %v after the guard fired", a)
		}
		l.mu.Lock()
		calls := slices.Clone(l.calls)
		l.mu.Unlock()
		if !slices.Contains(calls, "lost [0_0 0_1]") {
			t.Errorf("calls %v: want OnAllTasksLost for what the application held", calls)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Issue 22 §3 through the Manager: once the application polls, a loop that stops polling for
// max.poll.interval.ms loses its tasks and the member leaves (Stale); the next Poll rejoins it and it
// gets its tasks back. Before the first Poll the timer is off.
func TestManagerPollTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l, func(c *config.Config) { c.MaxPollInterval = 2 * time.Second })
		time.Sleep(5 * time.Second) // no Poll yet: the timer is off
		synctest.Wait()
		if m.State() != Stable {
			t.Fatalf("state %s without any Poll", m.State())
		}
		for range 10 {
			m.Poll()
			time.Sleep(500 * time.Millisecond)
		}
		synctest.Wait()
		if m.State() != Stable {
			t.Fatalf("state %s while polling", m.State())
		}
		time.Sleep(3 * time.Second) // the loop hangs
		synctest.Wait()
		if m.State() != Stale {
			t.Fatalf("state %s after 3 s without Poll, want STALE", m.State())
		}
		if a, _ := m.Assignment(); !a.IsEmpty() {
			t.Fatalf("owns %v in STALE", a)
		}
		f.mu.Lock()
		leaves := slices.Clone(f.leaves)
		f.mu.Unlock()
		if len(leaves) != 1 || leaves[0] != -1 {
			t.Fatalf("leaves %v, want one at epoch -1", leaves)
		}
		m.Poll()
		time.Sleep(time.Second)
		synctest.Wait()
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) || m.State() != Stable {
			t.Fatalf("after the next Poll: %s %v", m.State(), a)
		}
		if !slices.Contains(l.list(), "lost [0_0 0_1]") {
			t.Errorf("calls %v: want OnAllTasksLost", l.list())
		}
		m.Poll()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
