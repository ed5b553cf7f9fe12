package membership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The Manager tests run in synctest bubbles: time is fake and advances only when every goroutine of
// the bubble is blocked, so "10 s of heartbeats" takes no real time and counts are exact.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBroker scripts the coordinator, the one fake Transport of the package's tests: a join gets
// active tasks 0_0 and 0_1 at epoch 1; answer, when set, replaces every answer but a leave's; script,
// when set, answers every heartbeat, leaves included, by its number n (counting from 0); each answer
// takes rtt (fake time). Describe and leave can be made to block until their ctx ends; with capsErr
// the cluster cannot be reached (every capability probe fails with it, and is counted).
type fakeBroker struct {
	mu           sync.Mutex
	caps         heartbeat.Capabilities
	capsErr      error
	probes       int
	rtt          time.Duration
	calls        int       // heartbeats sent, leaves included
	returned     int       // their answers (or errors) returned
	lastOK       time.Time // when the last successful answer left the broker
	heartbeats   []time.Time
	requests     []*kmsg.StreamsGroupHeartbeatRequest
	leaves       []int32
	describes    int
	answer       func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)
	script       func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)
	blockLeave   bool
	blockDescrib bool
	session      time.Duration // the group's session timeout GroupConfigs gives; 0: it fails
}

func newFakeBroker() *fakeBroker { return &fakeBroker{caps: caps44} }

// scriptedBroker is a fake broker whose answers take rtt; set its script before the member starts.
func scriptedBroker(rtt time.Duration) *fakeBroker {
	f := newFakeBroker()
	f.rtt = rtt
	return f
}

func okAnswer(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = req.MemberID
	r.MemberEpoch = 1
	r.HeartbeatIntervalMillis = 100
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if req.MemberEpoch == 0 {
		r.ActiveTasks = set("0_0", "0_1").Kmsg()
		r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	return r
}

func (f *fakeBroker) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (r *kmsg.StreamsGroupHeartbeatResponse, err error) {
	f.mu.Lock()
	n := f.calls
	f.calls++
	if req.MemberEpoch < 0 {
		f.leaves = append(f.leaves, req.MemberEpoch)
	} else {
		f.heartbeats = append(f.heartbeats, time.Now())
		f.requests = append(f.requests, req)
	}
	answer, script, block := f.answer, f.script, f.blockLeave
	f.mu.Unlock()
	if f.rtt > 0 {
		time.Sleep(f.rtt)
	}
	switch {
	case script != nil:
		r, err = script(n, req)
	case req.MemberEpoch < 0 && block: // a leave without an answer until ctx ends
		<-ctx.Done()
		r, err = nil, ctx.Err()
	case req.MemberEpoch < 0:
		r = leaveTaken(req)
	case answer != nil:
		r, err = answer(req)
	default:
		r = okAnswer(req)
	}
	f.mu.Lock()
	f.returned++
	if err == nil && r != nil && r.ErrorCode == 0 {
		f.lastOK = time.Now()
	}
	f.mu.Unlock()
	return r, err
}

// counts returns how many heartbeats were sent and answered, and when the last success left.
func (f *fakeBroker) counts() (calls, returned int, lastOK time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.returned, f.lastOK
}

// leaveTaken is the broker's answer to a leave heartbeat it took.
func leaveTaken(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version, r.MemberID, r.MemberEpoch = 1, req.MemberID, req.MemberEpoch
	return r
}

func (f *fakeBroker) Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	f.mu.Lock()
	f.describes++
	block := f.blockDescrib
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("not scripted")
}

func (f *fakeBroker) Capabilities(ctx context.Context) (heartbeat.Capabilities, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes++
	if f.capsErr != nil {
		return heartbeat.Capabilities{}, f.capsErr
	}
	return f.caps, nil
}

func (f *fakeBroker) CoordinatorConfigs(context.Context, ...string) (*kmsg.DescribeConfigsResponse, error) {
	return nil, errors.New("coordinator configs are not scripted")
}

// GroupConfigs answers with f.session as the group's session timeout, or fails when it is 0.
func (f *fakeBroker) GroupConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error) {
	f.mu.Lock()
	d := f.session
	f.mu.Unlock()
	if d == 0 {
		return nil, errors.New("not scripted")
	}
	return sessionConfigAnswer(testGroup, strconv.Itoa(int(d.Milliseconds()))), nil
}

func (f *fakeBroker) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.heartbeats)
}

func (f *fakeBroker) leaveEpochs() []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int32(nil), f.leaves...)
}

// recordingListener records callbacks; revoke and lost, when set, run inside OnTasksRevoked and
// OnAllTasksLost.
type recordingListener struct {
	mu     sync.Mutex
	calls  []string
	revoke func(ctx context.Context)
	lost   func(ctx context.Context)
}

func (l *recordingListener) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *recordingListener) OnTasksRevoked(ctx context.Context, s tasks.Set) error {
	l.add("revoked " + s.String())
	if l.revoke != nil {
		l.revoke(ctx)
	}
	return nil
}

func (l *recordingListener) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	l.add("assigned " + a.Active.String())
	return nil
}

func (l *recordingListener) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	l.add("lost " + a.Active.String())
	if l.lost != nil {
		l.lost(ctx)
	}
	return nil
}

func (l *recordingListener) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func newTestManager(t *testing.T, f Transport, l Listener, mutate ...func(*config.Config)) *Manager {
	t.Helper()
	cfg := config.Default("app")
	cfg.RetryBackoff, cfg.RetryBackoffMax = 100*time.Millisecond, time.Second
	cfg.StateDir = t.TempDir()
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

// stableManager starts a member in a bubble and waits until it holds its tasks.
func stableManager(t *testing.T, f *fakeBroker, l *recordingListener, mutate ...func(*config.Config)) *Manager {
	t.Helper()
	m := newTestManager(t, f, l, mutate...)
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	synctest.Wait()
	if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) || m.State() != Stable {
		t.Fatalf("not stable with its tasks: %s %v", m.State(), a)
	}
	return m
}

func TestManagerLifecycleLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l)
		drained := make(chan struct{})
		go func() {
			for range m.Events() { // closed once everything was delivered
			}
			close(drained)
		}()
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-drained
		if got := f.leaveEpochs(); len(got) != 1 || got[0] != heartbeat.EpochLeave {
			t.Fatalf("leave epochs %v", got)
		}
		if got := l.list(); len(got) != 2 || got[0] != "assigned [0_0 0_1]" || got[1] != "revoked [0_0 0_1]" {
			t.Fatalf("callbacks %v", got)
		}
		if m.Err() != nil || m.State() != Unsubscribed {
			t.Fatalf("after close: %v %s", m.Err(), m.State())
		}
	})
}

// Issue 9 item 1.1: a revocation longer than the session timeout must not get the member expired,
// during a rebalance and during Close.
func TestManagerHeartbeatsContinueWhileCallbackRuns(t *testing.T) {
	for _, closing := range []bool{false, true} {
		name := map[bool]string{false: "reconciling", true: "closing"}[closing]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, l := newFakeBroker(), &recordingListener{}
				l.revoke = func(ctx context.Context) { time.Sleep(10 * time.Second) }
				m := stableManager(t, f, l)
				before := f.count()
				if closing {
					go m.Close(t.Context())
				} else {
					f.mu.Lock()
					f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
						r := okAnswer(req)
						r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = set("0_1").Kmsg(), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
						return r, nil
					}
					f.mu.Unlock()
				}
				time.Sleep(9 * time.Second) // inside the revocation
				synctest.Wait()
				// 100 ms interval: ~90 heartbeats in 9 s; the bound leaves room for the first
				// round trip. A member that stops heartbeating sends 0 or 1.
				if got := f.count() - before; got < 80 {
					t.Fatalf("%d heartbeats during a 9 s revocation, want about 90", got)
				}
				if m.State() != map[bool]State{false: Reconciling, true: PrepareLeaving}[closing] {
					t.Fatalf("state %s", m.State())
				}
				m.Close(t.Context())
			})
		})
	}
}

// Issue 9 §3: Close is bounded by its ctx even when a listener ignores ctx.
func TestManagerCloseBoundedWhenListenerIgnoresCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		release := make(chan struct{})
		l.revoke = func(context.Context) { <-release } // ignores ctx
		m := stableManager(t, f, l)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := m.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v, want the ctx error", err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Fatalf("Close took %v of fake time, want exactly its ctx's 2 s", took)
		}
		select {
		case <-m.Done():
		default:
			t.Fatal("the member is not stopped after Close returned")
		}
		close(release) // the abandoned callback finishes in the background
		synctest.Wait()
	})
}

// Issue 9 item 1.7: a leave that gets no answer is bounded by the leave budget.
func TestManagerCloseBoundedWhenCoordinatorUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l)
		f.mu.Lock()
		f.blockLeave = true
		f.mu.Unlock()
		start := time.Now()
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err) // the leave failing is not Close failing: the session expires the member
		}
		if took := time.Since(start); took != machine.DefaultLeaveBudget {
			t.Fatalf("Close took %v of fake time, want the leave budget %v", took, machine.DefaultLeaveBudget)
		}
	})
}

// Issue 9 §2: whatever the transport answers, the member never heartbeats in a loop, never panics,
// and reports a typed error.
func TestManagerMalformedAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)
		typed  func(error) bool
	}{
		{"interval 0", func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.HeartbeatIntervalMillis = 0
			return r, nil
		}, isProtocolError},
		{"epoch -1 without error", func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.MemberEpoch = -1
			return r, nil
		}, isProtocolError},
		{"neither answer nor error", func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			return nil, nil
		}, isProtocolError},
		{"negative endpoint partition", func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{{
				ActivePartitions: []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: "t0", Partitions: []int32{-3}}},
			}}
			return r, nil
		}, isProtocolError},
		{"some task lists null", func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, nil, []kmsg.TaskIDs{}
			return r, nil
		}, isProtocolError},
		{"unknown subtopology", func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = set("7_0").Kmsg(), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
			return r, nil
		}, func(err error) bool { _, ok := errors.AsType[*tasks.UnknownSubtopologyError](err); return ok }},
		{"NOT_COORDINATOR forever", func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
			r.ErrorCode = kerr.NotCoordinator.Code
			return r, nil
		}, func(err error) bool { return err == nil }},
		{"UNKNOWN_MEMBER_ID forever", func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
			r.ErrorCode = kerr.UnknownMemberID.Code
			return r, nil
		}, func(err error) bool { return err == nil }},
		{"connection refused forever", func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		}, func(err error) bool { return err == nil }},
	}
	const window = 10 * time.Second
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeBroker()
				f.answer = c.answer
				m := newTestManager(t, f, &recordingListener{})
				events := m.Events()
				var mu sync.Mutex
				var errs []error
				go func() {
					for e := range events {
						if e.Err != nil {
							mu.Lock()
							errs = append(errs, e.Err)
							mu.Unlock()
						}
					}
				}()
				if err := m.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				time.Sleep(window)
				synctest.Wait()
				// retry.backoff.ms is 100 ms: at most one heartbeat per 100 ms, plus the one
				// immediate retry the protocol allows after each backoff.
				if got, limit := f.count(), 2*int(window/(100*time.Millisecond))+1; got > limit {
					t.Fatalf("%d heartbeats in %v, more than %d", got, window, limit)
				}
				m.Close(t.Context())
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if m.Err() != nil {
					errs = append(errs, m.Err())
				}
				found := false
				for _, err := range errs {
					found = found || c.typed(err)
				}
				if !found && !c.typed(nil) {
					t.Fatalf("no typed error reported; got %v", errs)
				}
			})
		})
	}
}

func isProtocolError(err error) bool {
	_, ok := errors.AsType[*heartbeat.ProtocolError](err)
	return ok
}

// Issue 9 item 1.8: describing the group for STALE_TOPOLOGY must not hold up heartbeats.
func TestManagerStaleTopologyDescribeDoesNotBlockHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l, func(c *config.Config) { c.RequestTimeout = 20 * time.Second })
		events := m.Events()
		f.mu.Lock()
		f.blockDescrib = true
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: int8(heartbeat.StaleTopology), StatusDetail: "stale"}}
			return r, nil
		}
		f.mu.Unlock()
		before := f.count()
		time.Sleep(10 * time.Second) // the describe hangs until its 20 s request timeout
		synctest.Wait()
		if got := f.count() - before; got < 90 {
			t.Fatalf("%d heartbeats in 10 s while the describe hangs, want about 100", got)
		}
		time.Sleep(11 * time.Second) // the describe times out; the event goes out without the group's topology
		synctest.Wait()
		go m.Close(t.Context())
		var stale []Event
		for e := range events {
			if e.Kind == EventStaleTopology {
				stale = append(stale, e)
			}
		}
		if len(stale) != 1 || stale[0].GroupTopology == nil || !stale[0].GroupTopology.GroupID.IsZero() {
			t.Fatalf("stale events %+v", stale)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.describes != 1 {
			t.Fatalf("%d describes for one status", f.describes)
		}
	})
}

func TestManagerFatalThenCloseReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l)
		f.mu.Lock()
		f.answer = func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
			r.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return r, nil
		}
		f.mu.Unlock()
		<-m.Done()
		if !errors.Is(m.Err(), kerr.GroupAuthorizationFailed) {
			t.Fatalf("Err = %v", m.Err())
		}
		if got := l.list(); got[len(got)-1] != "lost [0_0 0_1]" {
			t.Fatalf("callbacks %v", got)
		}
		start := time.Now()
		if err := m.Close(t.Context()); err != nil || time.Since(start) != 0 || len(f.leaveEpochs()) != 0 {
			t.Fatalf("Close after fatal: %v after %v, leaves %v", err, time.Since(start), f.leaveEpochs())
		}
	})
}

func TestManagerCloseBeforeStartAndTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBroker()
		m := newTestManager(t, f, nil)
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(t.Context()); err == nil {
			t.Fatal("Start after Close must fail")
		}
		if f.count() != 0 {
			t.Fatal("a member closed before Start sent heartbeats")
		}
		m2 := stableManager(t, f, &recordingListener{})
		if err := m2.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := m2.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(f.leaveEpochs()) != 1 {
			t.Fatalf("leaves %v", f.leaveEpochs())
		}
	})
}

// A capability probe that keeps failing is retried with backoff and Close ends it without a leave.
func TestManagerCloseWhileClusterUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := newFakeBroker()
		u.capsErr = errors.New("dial tcp: connection refused")
		m := newTestManager(t, u, nil)
		m.Start(t.Context())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		u.mu.Lock()
		probes, sent := u.probes, len(u.requests)+len(u.leaves)+u.describes
		u.mu.Unlock()
		if sent != 0 {
			t.Fatalf("%d requests besides the probes before the cluster answered", sent)
		}
		// 100 ms doubling to 1 s with ±20% jitter: 8 probes (0, 0.12, 0.36, 0.84, 1.8, 2.8, 3.8,
		// 4.8 s at the longest waits) or 9 (0, 0.08, 0.24, 0.56, 1.2, 2.0, 2.8, 3.6, 4.4 s at the
		// shortest). A probe without backoff would make thousands.
		if probes < 8 || probes > 9 {
			m.Close(t.Context())
			t.Fatalf("%d probes in 5 s, want 8 or 9", probes)
		}
		if err := m.Close(t.Context()); err != nil || m.Err() != nil {
			t.Fatalf("close: %v, err %v", err, m.Err())
		}
	})
}

func TestManagerRefusesWhatTheClusterCannotDo(t *testing.T) {
	cases := []struct {
		name string
		caps heartbeat.Capabilities
		cfg  func(*config.Config)
	}{
		{"streams.version 0", heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 0}, nil},
		{"no heartbeat API", heartbeat.Capabilities{HeartbeatMaxVersion: -1, StreamsVersion: 1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeBroker()
				f.caps = c.caps
				var mutate []func(*config.Config)
				if c.cfg != nil {
					mutate = append(mutate, c.cfg)
				}
				m := newTestManager(t, f, nil, mutate...)
				m.Start(t.Context())
				<-m.Done()
				if !errors.Is(m.Err(), heartbeat.ErrNotSupported) || f.count() != 0 {
					t.Fatalf("Err = %v after %d heartbeats", m.Err(), f.count())
				}
				m.Close(t.Context())
			})
		})
	}
}

// failingListener fails or panics in the callbacks it is told to, once each.
type failingListener struct {
	recordingListener
	failAssigned, panicRevoked, failLost bool
}

func (l *failingListener) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	l.add("assigned " + a.Active.String())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failAssigned {
		l.failAssigned = false
		return errors.New("assign failed")
	}
	return nil
}

func (l *failingListener) OnTasksRevoked(ctx context.Context, s tasks.Set) error {
	l.add("revoked " + s.String())
	l.mu.Lock()
	p := l.panicRevoked
	l.panicRevoked = false
	l.mu.Unlock()
	if p {
		panic("revoke exploded")
	}
	return nil
}

func (l *failingListener) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	l.add("lost " + a.Active.String())
	if l.failLost {
		return errors.New("lost failed")
	}
	return nil
}

// testInvoke{TasksAssigned,TasksRevoked,AllTasksLost}WithOtherException, testOnAllTasksLostWithException:
// an error or a panic in a callback is caught, reported and retried; a failing OnAllTasksLost does
// not stop the rejoin.
func TestManagerListenerErrorsAndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeBroker()
		l := &failingListener{failAssigned: true, panicRevoked: true, failLost: true}
		m := newTestManager(t, f, l)
		var mu sync.Mutex
		var errs []error
		done := make(chan struct{})
		events := m.Events() // before Start, to see every event
		go func() {
			defer close(done)
			for e := range events {
				if e.Kind == EventError {
					mu.Lock()
					errs = append(errs, e.Err)
					mu.Unlock()
				}
			}
		}()
		m.Start(t.Context())
		time.Sleep(time.Second) // assign fails, is retried after backoff and succeeds
		synctest.Wait()
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) {
			t.Fatalf("holds %v after the retried assignment", a)
		}
		f.mu.Lock()
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = set("0_1").Kmsg(), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
			return r, nil
		}
		f.mu.Unlock()
		time.Sleep(time.Second) // the revocation panics, is retried and succeeds
		synctest.Wait()
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_1")) {
			t.Fatalf("holds %v after the retried revocation", a)
		}
		f.mu.Lock()
		fenceOnce := true
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			if fenceOnce && req.MemberEpoch > 0 {
				fenceOnce = false
				r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
				r.ErrorCode = kerr.FencedMemberEpoch.Code
				return r, nil
			}
			return okAnswer(req), nil
		}
		f.mu.Unlock()
		time.Sleep(time.Second) // fenced: OnAllTasksLost fails, the member rejoins all the same
		synctest.Wait()
		if a, _ := m.Assignment(); !a.Active.Equal(set("0_0", "0_1")) || m.State() != Stable {
			t.Fatalf("after the failed OnAllTasksLost: %s %v", m.State(), a)
		}
		m.Close(t.Context())
		<-done
		mu.Lock()
		defer mu.Unlock()
		var kinds []CallbackKind
		for _, err := range errs {
			var ce *CallbackError
			if errors.As(err, &ce) {
				kinds = append(kinds, ce.Callback)
			}
		}
		if len(kinds) != 2 || kinds[0] != CallbackAssigned || kinds[1] != CallbackRevoked ||
			!strings.Contains(errs[1].Error(), "panic: revoke exploded") {
			t.Fatalf("callback errors %v (%v)", kinds, errs)
		}
		if got := l.list(); !slices.Contains(got, "lost [0_1]") {
			t.Fatalf("callbacks %v", got)
		}
	})
}

type fixedOffsets struct{ offs, ends tasks.Offsets }

func (f fixedOffsets) TaskOffsets(tasks.Assignment) (tasks.Offsets, tasks.Offsets) {
	return f.offs, f.ends
}

// A TaskOffsetsProvider's offsets reach the broker (4.4), and a member without one reports none.
func TestManagerReportsTaskOffsetsFromItsProvider(t *testing.T) {
	for _, withProvider := range []bool{true, false} {
		t.Run(map[bool]string{true: "provider", false: "none"}[withProvider], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeBroker()
				cfg := config.Default("app")
				cfg.StateDir = t.TempDir()
				opts := []Option{WithTransport(f), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
				if withProvider {
					opts = append(opts, WithTaskOffsets(fixedOffsets{offs("0_0", 5), offs("0_0", 9)}))
				}
				m, err := New(nil, cfg, testTopology, opts...)
				if err != nil {
					t.Fatal(err)
				}
				m.Start(t.Context())
				time.Sleep(time.Second)
				synctest.Wait()
				f.mu.Lock()
				join := f.requests[0]
				f.mu.Unlock()
				if got := join.TaskOffsets != nil && join.TaskEndOffsets != nil; got != withProvider {
					t.Fatalf("join offsets %v / %v with provider %v", join.TaskOffsets, join.TaskEndOffsets, withProvider)
				}
				m.Close(t.Context())
			})
		})
	}
}

// Close says what kept it past its ctx: a callback still running after the member stopped, or
// events nobody read.
func TestManagerCloseNamesWhatItWaitedFor(t *testing.T) {
	t.Run("callback", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f, l := newFakeBroker(), &blockingLost{release: make(chan struct{})}
			m := newTestManager(t, f, l)
			m.Start(t.Context())
			time.Sleep(time.Second)
			synctest.Wait()
			f.mu.Lock()
			f.answer = func(*kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
				r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
				r.ErrorCode = kerr.FencedMemberEpoch.Code
				return r, nil
			}
			f.mu.Unlock()
			time.Sleep(time.Second) // fenced: OnAllTasksLost blocks, ignoring ctx
			synctest.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			err := m.Close(ctx) // a fenced member stops at once; the callback goes on
			if err == nil || !strings.Contains(err.Error(), "listener callback is still running") {
				t.Fatalf("Close = %v", err)
			}
			close(l.release)
			synctest.Wait()
		})
	})
	t.Run("events", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f, l := newFakeBroker(), &recordingListener{}
			m := newTestManager(t, f, l)
			m.Events() // subscribed, never read
			m.Start(t.Context())
			time.Sleep(time.Second)
			synctest.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if err := m.Close(ctx); err == nil || !strings.Contains(err.Error(), "events were left unread") {
				t.Fatalf("Close = %v", err)
			}
		})
	})
}

type blockingLost struct {
	recordingListener
	release chan struct{}
}

func (l *blockingLost) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	<-l.release
	return nil
}

// Issue 22 §5 (docs/choices.md) through the Manager: while OnAllTasksLost runs after a fencing,
// Member and Snapshot still show the old epoch and the member sends no rejoin; the epoch goes to 0
// and the rejoin goes only once the callback returned.
func TestManagerMemberKeepsTheOldEpochWhileOnAllTasksLostRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		fence := make(chan struct{}, 1) // one fencing answer, when filled
		f.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := okAnswer(req)
			r.MemberEpoch = 5
			if req.MemberEpoch != 0 {
				select {
				case <-fence:
					r = kmsg.NewPtrStreamsGroupHeartbeatResponse()
					r.ErrorCode = kerr.FencedMemberEpoch.Code
				default:
				}
			}
			return r, nil
		}
		joins := func() int {
			f.mu.Lock()
			defer f.mu.Unlock()
			n := 0
			for _, r := range f.requests {
				if r.MemberEpoch == 0 {
					n++
				}
			}
			return n
		}
		var m *Manager
		var member, snapshot []int32
		var state State
		var joinsDuring []int
		l.lost = func(ctx context.Context) {
			_, e := m.Member()
			s := m.Snapshot()
			member, snapshot, state = append(member, e), append(snapshot, s.Epoch), s.State
			joinsDuring = append(joinsDuring, joins())
			time.Sleep(time.Second) // a slow callback: no rejoin meanwhile
			_, e = m.Member()
			member, joinsDuring = append(member, e), append(joinsDuring, joins())
		}
		m = stableManager(t, f, l)
		if _, e := m.Member(); e != 5 {
			t.Fatalf("epoch %d, want 5", e)
		}
		fence <- struct{}{}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := l.list(); len(got) < 2 || got[1] != "lost [0_0 0_1]" {
			t.Fatalf("callbacks %v, want OnAllTasksLost after the fencing", got)
		}
		if !slices.Equal(member, []int32{5, 5}) || !slices.Equal(snapshot, []int32{5}) || state != Fenced {
			t.Fatalf("inside OnAllTasksLost: Member epochs %v, Snapshot epochs %v in %s; want the old epoch 5 in FENCED", member, snapshot, state)
		}
		if !slices.Equal(joinsDuring, []int{1, 1}) || joins() != 2 {
			t.Fatalf("joins sent: %v while OnAllTasksLost ran, %d in all; want only the first join before it returned, and the rejoin after", joinsDuring, joins())
		}
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// Changed is closed when the member's epoch, ID or state moves (here: the join), and not before;
// a channel taken after the change waits for the next one.
func TestManagerChangedClosesWhenTheEpochMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := newTestManager(t, f, l)
		before := m.Changed()
		if m.Changed() != before {
			t.Fatal("two calls before any change gave two channels")
		}
		select {
		case <-before:
			t.Fatal("closed before the member started")
		default:
		}
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-before:
		default:
			t.Fatalf("not closed after the join (state %s, epoch %d)", m.State(), m.Snapshot().Epoch)
		}
		after := m.Changed()
		time.Sleep(time.Second) // heartbeats at the same epoch change nothing
		synctest.Wait()
		select {
		case <-after:
			t.Fatalf("closed without a change of epoch, ID or state (state %s, epoch %d)", m.State(), m.Snapshot().Epoch)
		default:
		}
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-after:
		default:
			t.Fatal("not closed when the member left")
		}
	})
}

// The interactive-query map (testStreamsGroupEndpointInformationIncludesNewMember, client side):
// an answer that carries PartitionsByUserEndpoint is published as one EventEndpointsChanged with
// the entries of one endpoint merged, an answer without it publishes nothing, and a later map
// replaces the earlier one.
func TestManagerPublishesEndpointsWhenTheBrokerSendsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep := func(host string, port uint16, active ...int32) kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
			e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
			e.UserEndpoint.Host, e.UserEndpoint.Port = host, port
			e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: "in", Partitions: active}}
			return e
		}
		tr := scriptedBroker(10 * time.Millisecond)
		tr.script = func(n int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			r := resp(1, nil)
			switch n {
			case 0:
				r = resp(1, active("0_0", "0_1"))
				r.EndpointInformationEpoch = 1
				r.PartitionsByUserEndpoint = append(r.PartitionsByUserEndpoint, ep("a", 1, 1), ep("a", 1, 0)) // two members of one process
			case 3:
				r.EndpointInformationEpoch = 2
				r.PartitionsByUserEndpoint = append(r.PartitionsByUserEndpoint, ep("a", 1, 0), ep("b", 2, 1))
			}
			return r, nil
		}
		m := newMetricsManager(t, tr, &timedListener{})
		events := m.Events()
		var got []map[heartbeat.Endpoint]heartbeat.EndpointPartitions
		done := make(chan struct{})
		go func() {
			defer close(done)
			for e := range events {
				if e.Kind == EventEndpointsChanged {
					got = append(got, e.Endpoints)
				}
			}
		}()
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "six answers", func() bool { _, returned, _ := tr.counts(); return returned >= 6 })
		closeManager(t, m)
		<-done
		want := []string{"map[a:1:{map[in:[0 1]] map[]}]", "map[a:1:{map[in:[0]] map[]} b:2:{map[in:[1]] map[]}]"}
		var gotS []string
		for _, g := range got {
			gotS = append(gotS, fmt.Sprint(g))
		}
		if !slices.Equal(gotS, want) {
			t.Fatalf("endpoints published %v, want %v", gotS, want)
		}
	})
}

// Poll is called for every batch a runtime processes: while the member is in the group it only
// records the time and does not wake the member's loop; only a member left STALE by the poll timer
// has its next Poll fed to the loop (to rejoin).
func TestPollWakesTheLoopOnlyWhenStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, l := newFakeBroker(), &recordingListener{}
		m := stableManager(t, f, l)
		m.Poll() // the first one after Start may be fed
		synctest.Wait()
		for range 100 {
			m.Poll()
			synctest.Wait()
			if m.pollSignal.Load() {
				t.Fatalf("in %s the loop asks to be woken by the next Poll", m.State())
			}
		}
		if err := m.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// MISSING_INTERNAL_TOPICS is logged at INFO while the broker creates the topics (a first start
// reports it every time) and at WARN when the broker may not create them.
func TestMissingInternalTopicsLogLevels(t *testing.T) {
	var buf strings.Builder
	m := newTestManager(t, newFakeBroker(), &recordingListener{})
	m.log = slog.New(slog.NewTextHandler(&buf, nil))
	m.publish(Event{Kind: EventMissingInternalTopics, Topics: []string{"app-s-changelog"}})
	m.publish(Event{Kind: EventMissingInternalTopics, Topics: []string{"app-s-changelog"}, Err: &InternalTopicsDeniedError{ApplicationID: "app", Topics: []string{"app-s-changelog"}}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[1], "level=WARN") ||
		!strings.Contains(lines[1], "CREATE") {
		t.Fatalf("logged:\n%s\nwant the creation at INFO, the denial at WARN with its error", buf.String())
	}
}
