package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// threadsConfig is the test config with n stream threads.
func threadsConfig(n int) config.Config {
	c := testConfig()
	c.Runtime.NumStreamThreads = n
	return c
}

// twoThreads builds thread 1 and thread 2 of one process, as Run does, on a state directory of the
// test's, with persistent stores (k).
func twoThreads(t *testing.T, k *fakeKind, opts ...Option) (a, b *App) {
	t.Helper()
	a, clk := newTestApp(t, threadsConfig(2), testProcs(), append([]Option{WithStores(k)}, opts...)...)
	a.stateDir = t.TempDir()
	a.cfg.ProcessID = "p"
	a.nameThread(true)
	b = a.sibling(2)
	b.now = clk.now
	a.proc.publish()
	return a, b
}

// Each stream thread is a member of its own, named as Kafka Streams names its threads' clients; the
// threads share what New derived, the state directory and the process ID.
func TestThreadsOfAProcess(t *testing.T) {
	cfg := threadsConfig(3)
	cfg.GroupInstanceID = "web-7"
	cfg.ProcessID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	a, _ := newTestApp(t, cfg, testProcs())
	a.stateDir = "/state/app"
	a.nameThread(true)
	b, c := a.sibling(2), a.sibling(3)
	a.proc.publish()
	if got := a.proc.all(); len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
		t.Fatalf("threads %v", got)
	}
	for i, th := range []*App{a, b, c} {
		n := string(rune('1' + i))
		if th.index != i+1 || th.cfg.ClientID != testApp+"-StreamThread-"+n || th.cfg.GroupInstanceID != "web-7-"+n ||
			th.transactionalID() != testApp+"-6ba7b810-9dad-11d1-80b4-00c04fd430c8-"+n || th.cfg.ProcessID != cfg.ProcessID || th.stateDir != "/state/app" || th.proc != a.proc {
			t.Errorf("thread %d: index %d client %q instance %q transactional.id %q process %q dir %q", i+1, th.index,
				th.cfg.ClientID, th.cfg.GroupInstanceID, th.transactionalID(), th.cfg.ProcessID, th.stateDir)
		}
		if !th.machineConfig().CloseLeaving {
			t.Errorf("thread %d keeps tasks that left it: another thread could not open their stores", i+1)
		}
	}
	if b.storesOf["1"]["counts"] != countsLog || b.mach == a.mach || b.cons != nil {
		t.Errorf("thread 2: stores %v, its own machine %v", b.storesOf, b.mach != a.mach)
	}
	// A client ID of the application's own is the base of the threads'.
	cfg.ClientID = "mine"
	cfg.GroupInstanceID = ""
	cfg.ProcessID = ""
	d, _ := newTestApp(t, cfg, testProcs())
	d.nameThread(true)
	if d.cfg.ClientID != "mine-StreamThread-1" || d.cfg.GroupInstanceID != "" {
		t.Errorf("client %q instance %q", d.cfg.ClientID, d.cfg.GroupInstanceID)
	}
	// One thread (the default) keeps a task that left a while and its client ID; its static member
	// is <group.instance.id>-1, as Kafka Streams names it, so that adding threads renames none.
	cfg = testConfig()
	cfg.GroupInstanceID = "solo"
	one, _ := newTestApp(t, cfg, testProcs())
	one.nameThread(false)
	if one.machineConfig().CloseLeaving || one.cfg.ClientID != "" || one.transactionalID() != testApp+"--1" || one.cfg.GroupInstanceID != "solo-1" {
		t.Errorf("one thread: close leaving %v, client %q, transactional.id %q, instance %q", one.machineConfig().CloseLeaving,
			one.cfg.ClientID, one.transactionalID(), one.cfg.GroupInstanceID)
	}
}

// The App's state is its least advanced thread's: Rebalancing while any rebalances, Running only
// when all run; a failing thread shows at once.
func TestAppStateFollowsItsThreads(t *testing.T) {
	var changes []string
	a, b := twoThreads(t, &fakeKind{}, WithStateListener(func(from, to State) { changes = append(changes, to.String()) }))
	a.setState(Rebalancing)
	b.setState(Rebalancing)
	a.setState(Running)
	if a.State() != Rebalancing {
		t.Errorf("state %v with thread 2 rebalancing", a.State())
	}
	b.setState(Restoring)
	b.setState(Running)
	a.setState(Rebalancing)
	a.setState(Running)
	b.setState(PendingError)
	a.setState(PendingShutdown)
	want := "REBALANCING RESTORING RUNNING REBALANCING RUNNING PENDING_ERROR"
	if got := strings.Join(changes, " "); got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
	if a.State() != PendingError || b.State() != PendingError {
		t.Errorf("state %v", a.State())
	}

	// A thread not started yet is taken as rebalancing: the App never goes back to CREATED.
	changes = nil
	c, d := twoThreads(t, &fakeKind{}, WithStateListener(func(from, to State) { changes = append(changes, to.String()) }))
	c.setState(Rebalancing)
	c.setState(Running)
	if c.State() != Rebalancing || strings.Join(changes, " ") != "REBALANCING" {
		t.Errorf("state %v, changes %v, with thread 2 not started", c.State(), changes)
	}
	// A fatal error of any thread: the App is stopping on it, whatever the others' states.
	d.setState(Running)
	d.fail(errBoom)
	c.setState(Rebalancing)
	if c.State() != PendingError {
		t.Errorf("state %v after thread 2 failed", c.State())
	}
}

// A task moved from one thread of the process to another: the second waits for the first to close
// it (a store directory is open in one thread at a time), then opens it; the first's next
// assignment closes it at once.
func TestTaskMovesBetweenThreads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &fakeKind{persistent: true}
		a, b := twoThreads(t, k)
		ctx := context.Background()
		x := tid("1", 0)
		mustNotErr(t, (*taskCalls)(a).OnTasksAssigned(ctx, assign([]tasks.ID{x}, nil), false))

		done := make(chan error, 1)
		go func() { done <- (*taskCalls)(b).OnTasksAssigned(ctx, assign([]tasks.ID{x}, nil), false) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("thread 2 opened %s while thread 1 held its stores: %v", x, err)
		default:
		}
		// Thread 1's next assignment lacks the task: it is closed at once, and thread 2 goes on.
		mustNotErr(t, (*taskCalls)(a).OnTasksAssigned(ctx, assign(nil, nil), false))
		synctest.Wait()
		mustNotErr(t, <-done)
		if a.tasks[x] != nil || b.tasks[x] == nil || !b.tasks[x].active {
			t.Fatalf("thread 1 holds %v, thread 2 %v", a.tasks, b.tasks)
		}
		if len(k.opened) != 4 || k.engines[0].closes != 1 || k.engines[1].closes != 1 || k.engines[2].closes != 0 {
			t.Errorf("%d opens; closes %d %d %d", len(k.opened), k.engines[0].closes, k.engines[1].closes, k.engines[2].closes)
		}
		if a.proc.held[x] != b || len(a.proc.cleanups) != 0 {
			t.Errorf("held %v cleanups %v", a.proc.held, a.proc.cleanups)
		}
		// The directory is not deleted while thread 2 holds it, whatever thread 1's cleaner says.
		a.proc.cleanups[x] = a.now().Add(-time.Hour)
		mustNotErr(t, os.MkdirAll(filepath.Join(a.stateDir, x.String(), "counts"), 0o755))
		a.mu.Lock()
		a.cleanupDue(a.now())
		a.mu.Unlock()
		if _, err := os.Stat(filepath.Join(a.stateDir, x.String())); err != nil || k.destroyed != nil {
			t.Errorf("thread 1's cleaner deleted a task thread 2 holds: %v", err)
		}
	})
}

// A thread that holds a task's stores and never gives them up: the thread handed the task waits a
// bounded time, then stops with an error that says so.
func TestTaskNeverHandedOverStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoThreads(t, &fakeKind{persistent: true})
		ctx := context.Background()
		x := tid("1", 1)
		mustNotErr(t, (*taskCalls)(a).OnTasksAssigned(ctx, assign(nil, []tasks.ID{x}), false))
		start := time.Now()
		err := (*taskCalls)(b).OnTasksAssigned(ctx, assign([]tasks.ID{x}, nil), false)
		if err == nil || !strings.Contains(err.Error(), "another stream thread of this process held its stores") {
			t.Fatalf("got %v", err)
		}
		if waited := time.Since(start); waited != handOverBound {
			t.Errorf("waited %v, want %v", waited, handOverBound)
		}
		if !errors.Is(b.fatalErr(), err) && b.fatalErr() == nil {
			t.Error("the thread did not fail")
		}
	})
}

// A fatal error in one thread stops the others cleanly (their own error stays nil: they commit),
// and is the process's error.
func TestFailingThreadStopsTheOthers(t *testing.T) {
	a, b := twoThreads(t, &fakeKind{})
	root, cancel := context.WithCancelCause(context.Background())
	a.proc.cancel = cancel
	for _, th := range []*App{a, b} {
		th.runCtx, th.cancelRun = context.WithCancelCause(root)
	}
	b.fail(errBoom)
	if a.runCtx.Err() == nil || context.Cause(a.runCtx) != errBoom {
		t.Errorf("thread 1 goes on: %v", context.Cause(a.runCtx))
	}
	if a.fatalErr() != nil || a.closingDirty() || b.fatalErr() != errBoom || !b.closingDirty() || a.proc.firstErr() != errBoom {
		t.Errorf("thread 1 %v, thread 2 %v, process %v", a.fatalErr(), b.fatalErr(), a.proc.firstErr())
	}
	a.fail(errors.New("later"))
	if a.proc.firstErr() != errBoom {
		t.Errorf("process error %v, want the first", a.proc.firstErr())
	}
}

// Queries and metrics see every thread's tasks and counts.
func TestQueriesAndMetricsSpanTheThreads(t *testing.T) {
	a, b := twoThreads(t, &fakeKind{})
	activeTask(t, a, tid("1", 0))
	activeTask(t, b, tid("1", 1))
	if got, err := (localStore{a: a, name: "counts"}).stores(); err != nil || len(got) != 2 || got[0].task.id != tid("1", 0) || got[1].task.id != tid("1", 1) {
		t.Errorf("stores %v", got)
	}
	a.metrics.processed.Add(3)
	b.metrics.processed.Add(4)
	b.metrics.commits.Add(2)
	b.metrics.pollTime.Add(int64(time.Second))
	if m := a.Metrics(); m.Processed != 7 || m.Commits != 2 || m.PollTime != time.Second {
		t.Errorf("metrics %+v", m)
	}
}

// Each thread's static member is group.instance.id-<thread>: an ID that would pass Kafka's limit
// with the suffix is refused at New, naming the key.
func TestInstanceIDLeavesRoomForTheThread(t *testing.T) {
	cfg := threadsConfig(12)
	cfg.GroupInstanceID = strings.Repeat("i", config.MaxInstanceIDLength-2)
	_, err := New(cfg, testTopo(), testProcs(), quiet())
	var ce *config.Error
	if !errors.As(err, &ce) || !ce.Has(config.KeyGroupInstanceID) {
		t.Fatalf("got %v; want a config error on group.instance.id", err)
	}
	cfg.GroupInstanceID = strings.Repeat("i", config.MaxInstanceIDLength-3)
	if _, err := New(cfg, testTopo(), testProcs(), quiet()); err != nil {
		t.Fatalf("an ID that fits with -12: %v", err)
	}
}

// Run starts num.stream.threads members, each with its own static member ID (and, under
// exactly-once, transactional.id) and all with the process's ID; when the broker refuses them, Run
// returns the first thread's fatal error after every thread stopped, and the state ends in ERROR.
func TestRunStartsEveryThread(t *testing.T) {
	for _, eos := range []bool{false, true} {
		t.Run(fmt.Sprintf("eos=%v", eos), func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in", repartTopc, countsLog, sumsLog))
			mustNotErr(t, err)
			defer c.Close()
			mustNotErr(t, kfakestreams.Advertise(context.Background(), c, 1, 1, 1))
			var mu sync.Mutex
			instances, processes, txnIDs := map[string]bool{}, map[string]bool{}, map[string]bool{}
			c.ControlKey(int16(kmsg.StreamsGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				hb := req.(*kmsg.StreamsGroupHeartbeatRequest)
				mu.Lock()
				if hb.InstanceID != nil {
					instances[*hb.InstanceID] = true
				}
				if hb.ProcessID != nil {
					processes[*hb.ProcessID] = true
				}
				all := len(instances) == 3
				mu.Unlock()
				// Retriable until every thread's member has shown up, then fatal.
				resp := hb.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
				if all {
					resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				}
				return resp, nil, true
			})
			c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				if id := req.(*kmsg.InitProducerIDRequest).TransactionalID; id != nil {
					mu.Lock()
					txnIDs[*id] = true
					mu.Unlock()
				}
				return nil, nil, false
			})
			cfg := threadsConfig(3)
			cfg.BootstrapServers = c.ListenAddrs()
			cfg.StateDir = t.TempDir()
			cfg.GroupInstanceID = "web"
			cfg.ProcessID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
			if eos {
				cfg.Runtime.Guarantee = config.ExactlyOnceV2
				cfg.Runtime.CommitInterval = config.DefaultCommitIntervalEOS
			}
			var states []State
			a, _ := newTestApp(t, cfg, testProcs(), WithStateListener(func(_, to State) { states = append(states, to) }))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Queries and metrics on another goroutine while Run builds and stops the threads
			// (go test -race tells a data race).
			queried := make(chan struct{})
			ran := make(chan struct{})
			go func() {
				defer close(queried)
				st, _ := a.Store("counts")
				for {
					_ = a.Metrics()
					_, _, _ = st.Get([]byte("k"))
					select {
					case <-ran:
						return
					default:
					}
				}
			}()
			err = a.Run(ctx)
			close(ran)
			<-queried
			if !errors.Is(err, kerr.GroupAuthorizationFailed) || a.proc.firstErr() != err {
				t.Fatalf("Run: %v", err)
			}
			if got := fmt.Sprint(states); got != "[REBALANCING PENDING_ERROR ERROR]" {
				t.Errorf("states %s", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(instances) != "map[web-1:true web-2:true web-3:true]" || fmt.Sprint(processes) != "map["+cfg.ProcessID+":true]" {
				t.Errorf("members: instances %v, processes %v", instances, processes)
			}
			wantTxn := ""
			if eos {
				wantTxn = fmt.Sprintf("%[1]s-%[2]s-1:true %[1]s-%[2]s-2:true %[1]s-%[2]s-3:true", testApp, cfg.ProcessID)
			}
			if fmt.Sprint(txnIDs) != "map["+wantTxn+"]" {
				t.Errorf("transactional IDs %v", txnIDs)
			}
			// The thread refused first stopped on its error, the others (if not refused yet) cleanly.
			failed := 0
			for i, th := range a.proc.all() {
				want := PendingShutdown
				if th.fatalErr() != nil {
					want = PendingError
				}
				if th.index != i+1 || th.stateOf() != want {
					t.Errorf("thread %d (index %d, error %v) ended in %v, want %v", i+1, th.index, th.fatalErr(), th.stateOf(), want)
				}
				if th.stateOf() == PendingError {
					failed++
				}
			}
			if failed == 0 || len(a.proc.all()) != 3 {
				t.Errorf("%d threads, %d failed", len(a.proc.all()), failed)
			}
		})
	}
}
