package membership

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBroker scripts the coordinator: it assigns every task of subtopology "0" (4 partitions) to the
// single member, and can be told to fail or to answer with a given error.
type fakeBroker struct {
	mu         sync.Mutex
	caps       heartbeat.Capabilities
	heartbeats int
	leaves     []int32
	failWith   int16
	epoch      int32
	next       *tasks.Assignment // when set, non-join heartbeats are answered with this target
	requests   []*kmsg.StreamsGroupHeartbeatRequest
}

func (f *fakeBroker) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heartbeats++
	f.requests = append(f.requests, req)
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.HeartbeatIntervalMillis = 20
	r.AcceptableRecoveryLag = -1
	if f.failWith != 0 {
		r.ErrorCode = f.failWith
		return r, nil
	}
	if req.MemberEpoch == 0 {
		f.epoch++
		r.ActiveTasks = tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 0}, tasks.ID{Subtopology: "0", Partition: 1}).Kmsg()
		r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	if req.MemberEpoch > 0 && f.next != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = f.next.Active.Kmsg(), f.next.Standby.Kmsg(), f.next.Warmup.Kmsg()
	}
	r.MemberEpoch = max(f.epoch, 1)
	return r, nil
}

func (f *fakeBroker) Leave(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, _ heartbeat.Backoff) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaves = append(f.leaves, req.MemberEpoch)
	return nil
}

func (f *fakeBroker) Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	return nil, errors.New("not scripted")
}

func (f *fakeBroker) Capabilities(ctx context.Context) (heartbeat.Capabilities, error) {
	return f.caps, nil
}

func (f *fakeBroker) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heartbeats
}

// slowListener blocks in OnTasksRevoked until released, and records the order of callbacks.
type slowListener struct {
	mu      sync.Mutex
	calls   []string
	running atomic.Int32
	overlap atomic.Bool
	release chan struct{}
}

func (l *slowListener) enter(name string) func() {
	if l.running.Add(1) > 1 {
		l.overlap.Store(true)
	}
	l.mu.Lock()
	l.calls = append(l.calls, name)
	l.mu.Unlock()
	return func() { l.running.Add(-1) }
}

func (l *slowListener) OnTasksRevoked(ctx context.Context, s tasks.Set) error {
	defer l.enter("revoked " + s.String())()
	if l.release != nil {
		select {
		case <-l.release:
		case <-ctx.Done():
		}
	}
	return nil
}

func (l *slowListener) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	defer l.enter("assigned " + a.Active.String())()
	return nil
}

func (l *slowListener) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	defer l.enter("lost " + a.Active.String())()
	return nil
}

func newTestManager(t *testing.T, f *fakeBroker, l Listener, mutate ...func(*config.Config)) *Manager {
	t.Helper()
	cfg := config.Default("app")
	cfg.RetryBackoff, cfg.RetryBackoffMax = time.Millisecond, 10*time.Millisecond
	for _, fn := range mutate {
		fn(&cfg)
	}
	m, err := New(nil, cfg, testTopology, WithTransport(f), WithListener(l),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestManagerLifecycleLeavesNoGoroutine(t *testing.T) {
	f := &fakeBroker{caps: heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}}
	l := &slowListener{}
	m := newTestManager(t, f, l)
	events := m.Events()
	var kinds []EventKind
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for e := range events {
			kinds = append(kinds, e.Kind)
		}
	}()
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err == nil {
		t.Fatal("a second Start must fail")
	}
	waitFor(t, "stable with two tasks", func() bool {
		a, _ := m.Assignment()
		return m.State() == Stable && a.Active.Len() == 2
	})
	id, epoch := m.Member()
	if id == "" || epoch < 1 {
		t.Fatalf("Member() = %q %d", id, epoch)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-evDone
	if len(f.leaves) != 1 || f.leaves[0] != -1 {
		t.Fatalf("leaves %v, want one with epoch -1", f.leaves)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) != 2 || l.calls[0] != "assigned [0_0 0_1]" || l.calls[1] != "revoked [0_0 0_1]" {
		t.Fatalf("callbacks %v", l.calls)
	}
	if kinds[len(kinds)-1] != EventStateChanged || !contains(kinds, EventLeft) || !contains(kinds, EventAssigned) {
		t.Fatalf("events %v", kinds)
	}
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
	// goleak (TestMain) checks that nothing of the member is left.
}

func contains(ks []EventKind, k EventKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// startStableWithBlockingRevoke starts a member over a 4.4 fake broker whose listener blocks in
// OnTasksRevoked until l.release is closed, and waits until it is stable.
func startStableWithBlockingRevoke(t *testing.T) (*fakeBroker, *slowListener, *Manager) {
	t.Helper()
	f := &fakeBroker{caps: heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}}
	l := &slowListener{release: make(chan struct{})}
	m := newTestManager(t, f, l)
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "stable", func() bool { return m.State() == Stable })
	return f, l, m
}

func TestManagerHeartbeatsContinueWhileCallbackRuns(t *testing.T) {
	_, l, m := startStableWithBlockingRevoke(t)
	closed := make(chan error, 1)
	go func() { closed <- m.Close(context.Background()) }()
	waitFor(t, "the revocation to start", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.calls) == 2 })
	if m.State() != PrepareLeaving {
		t.Fatalf("state %s while revoking", m.State())
	}
	close(l.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if l.overlap.Load() {
		t.Fatal("callbacks overlapped")
	}
}

func TestManagerSlowRevocationKeepsHeartbeating(t *testing.T) {
	f, l, m := startStableWithBlockingRevoke(t)
	// Take every task away; OnTasksRevoked blocks, and heartbeats must keep flowing meanwhile.
	f.mu.Lock()
	f.next = &tasks.Assignment{}
	f.mu.Unlock()
	waitFor(t, "the revocation to start", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.calls) >= 2 })
	start := f.count()
	waitFor(t, "heartbeats while OnTasksRevoked blocks", func() bool { return f.count() >= start+5 })
	if m.State() != Reconciling {
		t.Fatalf("state %s while revoking", m.State())
	}
	close(l.release)
	waitFor(t, "the reconciliation to finish", func() bool {
		a, _ := m.Assignment()
		return m.State() == Stable && a.Active.IsEmpty()
	})
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestManagerFatalErrorThenCloseReturnsAtOnce(t *testing.T) {
	f := &fakeBroker{caps: heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}, failWith: int16(kerr.GroupAuthorizationFailed.Code)}
	m := newTestManager(t, f, &slowListener{})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not stop on a fatal error")
	}
	var he *heartbeat.Error
	if !errors.As(m.Err(), &he) || !errors.Is(m.Err(), kerr.GroupAuthorizationFailed) || he.Action == "" {
		t.Fatalf("Err() = %v", m.Err())
	}
	if m.State() != Fatal {
		t.Fatalf("state %s", m.State())
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestManagerStaticMembershipNeedsKafka44(t *testing.T) {
	f := &fakeBroker{caps: heartbeat.Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 1}}
	m := newTestManager(t, f, nil, func(c *config.Config) { c.GroupInstanceID = "i-1" })
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-m.Done()
	if !errors.Is(m.Err(), heartbeat.ErrNotSupported) || f.count() != 0 {
		t.Fatalf("want ErrNotSupported before any heartbeat, got %v after %d heartbeats", m.Err(), f.count())
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestManagerFeatureOff(t *testing.T) {
	f := &fakeBroker{caps: heartbeat.Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 0}}
	m := newTestManager(t, f, nil)
	_ = m.Start(context.Background())
	<-m.Done()
	if !errors.Is(m.Err(), heartbeat.ErrNotSupported) {
		t.Fatalf("Err() = %v", m.Err())
	}
	_ = m.Close(context.Background())
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(nil, config.Config{}, testTopology); err == nil {
		t.Fatal("an invalid config must be refused before any I/O")
	}
	if _, err := New(nil, config.Default("app"), nil); err == nil {
		t.Fatal("a nil topology must be refused")
	}
	if _, err := New(nil, config.Default("app"), testTopology); err == nil {
		t.Fatal("a nil client without a transport must be refused")
	}
	m := newTestManager(t, &fakeBroker{}, nil)
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close before Start: %v", err)
	}
}

func TestCloseWithExpiredContextStopsByForce(t *testing.T) {
	f := &fakeBroker{caps: heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}}
	l := &slowListener{release: make(chan struct{})} // OnTasksRevoked never returns on its own
	m := newTestManager(t, f, l)
	_ = m.Start(context.Background())
	waitFor(t, "stable", func() bool { return m.State() == Stable })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := m.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the context's error", err)
	}
}

// unreachable is a transport whose cluster never answers.
type unreachable struct{ fakeBroker }

func (u *unreachable) Capabilities(ctx context.Context) (heartbeat.Capabilities, error) {
	return heartbeat.Capabilities{}, errors.New("dial tcp: connection refused")
}

func TestCloseWhileTheClusterNeverAnswered(t *testing.T) {
	u := &unreachable{}
	m := newTestManager(t, &u.fakeBroker, nil)
	m.o.transport = u
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.RequestShutdown()
	done := make(chan error, 1)
	go func() { done <- m.Close(context.Background()) }()
	select {
	case err := <-done:
		if err != nil || m.Err() != nil {
			t.Fatalf("Close = %v, Err = %v", err, m.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung while the member was still waiting for the cluster")
	}
}
