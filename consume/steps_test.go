package consume

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The steps an owner of the consumer calls itself (the stream runtime, on its loop): Plan reads
// what the assignment needs and changes nothing; Assign starts the inputs from the committed
// offsets and the changelogs from the store positions it is handed (no listener, no committer read,
// no ChangelogStart hook involved).
func TestPlanThenAssignWithTheOwnersStart(t *testing.T) {
	e := newEnv(t)
	e.commits.fetchErr = errors.New("the consumer must not read committed offsets itself")
	e.list.start[tp(cl0, 0)], e.list.end[tp(cl0, 0)] = 2, 9
	p, err := e.c.Plan(context.Background(), tasks.Assignment{Active: set("0_0", "1_0")})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Starting.Equal(set("0_0", "1_0")) {
		t.Errorf("starting %v, want both tasks", p.Starting)
	}
	if ops := e.cl.takeOps(); len(ops) != 0 || len(e.app.calls) != 0 {
		t.Fatalf("a plan changed something: client %q app %q", ops, e.app.calls)
	}
	err = e.c.Assign(context.Background(), p, Start{
		Committed: commit.Offsets{tp("in", 0): 4, tp("other", 0): 7},
		Stores:    map[tasks.TopicPartition]int64{tp(cl0, 0): 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	// 0_0 restores from its store's position 5 up to the end 9, its input paused meanwhile.
	eq(t, "client calls", e.cl.takeOps(), []string{"pause in[0]", "add app-st-changelog[0]@5,in[0]@4,other[0]@7"})
	if len(e.app.calls) != 0 {
		t.Errorf("the application's listener was called: %q", e.app.calls)
	}
	// An assignment that changes nothing starts nothing.
	if p, err = e.c.Plan(context.Background(), tasks.Assignment{Active: set("0_0", "1_0")}); err != nil || !p.Starting.IsEmpty() {
		t.Fatalf("plan of the same assignment: %v, starting %v", err, p.Starting)
	}
}

// Stop stops fetching the revoked active tasks; Release forgets them once committed, or fetches them
// again from where they stopped when the commit failed. A task stopped twice is stopped once.
func TestStopThenRelease(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {3, 4}})
	e.poll().Done()
	e.app.calls = nil
	ctx := context.Background()
	mustStop := func() {
		t.Helper()
		if err := e.c.Stop(ctx, set("1_0")); err != nil {
			t.Fatal(err)
		}
	}
	mustStop()
	mustStop()
	eq(t, "stopped", e.cl.takeOps(), []string{"remove other[0]"})
	if e.app.calls != nil {
		t.Errorf("the application's listener was called: %q", e.app.calls)
	}
	e.c.Release(set("1_0"), false)
	eq(t, "commit failed: fetched again", e.cl.takeOps(), []string{"add other[0]@5"})
	mustStop()
	e.cl.takeOps()
	e.c.Release(set("1_0"), true)
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Errorf("a committed revocation fetched again: %q", ops)
	}
	if e.c.Active(tid("1_0")) || !e.c.Active(tid("1_1")) {
		t.Errorf("after the revocation: 1_0 active %v, 1_1 active %v", e.c.Active(tid("1_0")), e.c.Active(tid("1_1")))
	}
	// DropAll stops everything without the listener.
	if err := e.c.DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	eq(t, "lost", e.cl.takeOps(), []string{"remove other[1]"})
	if e.c.Active(tid("1_1")) || e.app.calls != nil {
		t.Errorf("after DropAll: 1_1 active %v, listener calls %q", e.c.Active(tid("1_1")), e.app.calls)
	}
}

// The listener wrappers call the application's listener only while no Batch is out, for all three
// callbacks: a hand-written app's listener (opening stores, committing) never runs beside its own
// processing of a batch.
func TestListenerNeverRunsWhileABatchIsOut(t *testing.T) {
	for _, call := range []string{"assigned", "revoked", "lost"} {
		t.Run(call, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				e.assign(tasks.Assignment{Active: set("1_0")})
				e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0}})
				b := e.poll()
				e.app.mu.Lock()
				e.app.calls = nil
				e.app.mu.Unlock()
				done := make(chan error, 1)
				go func() {
					ctx := context.Background()
					switch call {
					case "assigned":
						done <- e.c.OnTasksAssigned(ctx, tasks.Assignment{Active: set("1_0", "1_1")}, true)
					case "revoked":
						done <- e.c.OnTasksRevoked(ctx, set("1_0"))
					default:
						done <- e.c.OnAllTasksLost(ctx, tasks.Assignment{Active: set("1_0")})
					}
				}()
				synctest.Wait()
				e.app.mu.Lock()
				early := len(e.app.calls)
				e.app.mu.Unlock()
				if early != 0 {
					t.Fatalf("the listener ran while a batch was out: %q", e.app.calls)
				}
				b.Done()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if len(e.app.calls) != 1 {
					t.Fatalf("listener calls after the batch: %q", e.app.calls)
				}
			})
		})
	}
}
