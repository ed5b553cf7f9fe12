package stream

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A member's call while the loop serves waits for the loop: it ends the loop's wait for records
// (the poll's context, with the cause errCallWaiting), runs only when the loop serves calls, and
// its caller gets fn's error. Calls run in the order they came.
func TestMemberCallsRunWhenTheLoopServesThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a App
		a.startServing()
		pctx, done := a.pollContext(context.Background())
		var ran []string
		errFirst := errors.New("first failed")
		first, second := make(chan error, 1), make(chan error, 1)
		go func() {
			first <- a.onLoop(context.Background(), func(context.Context) error { ran = append(ran, "first"); return errFirst })
		}()
		synctest.Wait()
		go func() {
			second <- a.onLoop(context.Background(), func(context.Context) error { ran = append(ran, "second"); return nil })
		}()
		synctest.Wait()
		if len(ran) != 0 {
			t.Fatalf("calls ran before the loop served them: %v", ran)
		}
		select {
		case <-pctx.Done():
			if cause := context.Cause(pctx); cause != errCallWaiting {
				t.Errorf("the poll ended with %v, want errCallWaiting", cause)
			}
		default:
			t.Fatal("a waiting call did not end the loop's wait for records")
		}
		done()
		a.serveCalls()
		if len(ran) != 2 || ran[0] != "first" || ran[1] != "second" {
			t.Fatalf("served %v, want first then second", ran)
		}
		if err := <-first; err != errFirst {
			t.Errorf("the first caller got %v, want its call's error", err)
		}
		if err := <-second; err != nil {
			t.Errorf("the second caller got %v", err)
		}
	})
}

// A call that waits already when the loop starts waiting for records ends that wait at once; a wait
// with no call waiting lasts.
func TestPollContextEndsAtOnceWhenACallWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a App
		a.startServing()
		quiet, done := a.pollContext(context.Background())
		if quiet.Err() != nil {
			t.Fatal("a wait with no call waiting ended")
		}
		done()
		result := make(chan error, 1)
		go func() { result <- a.onLoop(context.Background(), func(context.Context) error { return nil }) }()
		synctest.Wait() // the call waits
		pctx, done := a.pollContext(context.Background())
		defer done()
		if context.Cause(pctx) != errCallWaiting {
			t.Fatalf("the wait began with a call waiting: cause %v, want errCallWaiting", context.Cause(pctx))
		}
		a.serveCalls()
		if err := <-result; err != nil {
			t.Fatal(err)
		}
	})
}

// A call whose context ends before the loop took it is withdrawn: it never runs, and its caller gets
// the context's error.
func TestMemberCallWithdrawnWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a App
		a.startServing()
		ctx, cancel := context.WithCancel(context.Background())
		ran := false
		result := make(chan error, 1)
		go func() { result <- a.onLoop(ctx, func(context.Context) error { ran = true; return nil }) }()
		synctest.Wait()
		cancel()
		if err := <-result; !errors.Is(err, context.Canceled) {
			t.Fatalf("withdrawn call returned %v, want context.Canceled", err)
		}
		a.serveCalls()
		if ran {
			t.Fatal("a withdrawn call ran")
		}
	})
}

// A call the loop took runs to its end even if its context ends meanwhile (the call sees that
// context), and its caller gets its result: a revocation half done is never reported as not done.
func TestMemberCallTakenRunsToItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a App
		a.startServing()
		ctx, cancel := context.WithCancel(context.Background())
		errSeen := errors.New("saw the end")
		result := make(chan error, 1)
		go func() {
			result <- a.onLoop(ctx, func(ctx context.Context) error {
				cancel() // the member gives up while the call runs
				<-ctx.Done()
				return errSeen
			})
		}()
		synctest.Wait()
		a.serveCalls()
		if err := <-result; err != errSeen {
			t.Fatalf("the caller got %v, want the call's own result", err)
		}
	})
}

// Before the loop serves and once it stopped, a call runs on its caller's goroutine at once; the
// calls waiting when the loop stops are served by it first.
func TestMemberCallsOutsideTheLoopRunAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a App
		ran := 0
		if err := a.onLoop(context.Background(), func(context.Context) error { ran++; return nil }); err != nil || ran != 1 {
			t.Fatalf("before the loop: %v, ran %d", err, ran)
		}
		a.startServing()
		result := make(chan error, 1)
		go func() { result <- a.onLoop(context.Background(), func(context.Context) error { ran++; return nil }) }()
		synctest.Wait()
		if ran != 1 {
			t.Fatal("a call ran while the loop serves, without the loop")
		}
		a.stopServing()
		if err := <-result; err != nil || ran != 2 {
			t.Fatalf("the call waiting when the loop stopped: %v, ran %d", err, ran)
		}
		if err := a.onLoop(context.Background(), func(context.Context) error { ran++; return nil }); err != nil || ran != 3 {
			t.Fatalf("after the loop: %v, ran %d", err, ran)
		}
	})
}

// consumingApp gives a a consumer that holds ids as active (nothing committed; its client's broker
// cannot be reached, so nothing is fetched), as the member's calls find it.
func consumingApp(t *testing.T, a *App, ids ...tasks.ID) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	mustNotErr(t, err)
	t.Cleanup(cl.Close)
	cons, err := consume.New(cl, a.topo, nothingCommitted{}, consume.WithLogger(a.log))
	mustNotErr(t, err)
	mustNotErr(t, cons.OnTasksAssigned(context.Background(), tasks.Assignment{Active: tasks.NewSet(ids...)}, true))
	a.cons = cons
}

// The member's revocation through the App: the revoked task stops in the App and the consumer
// forgets it once its commit succeeded (no record of it is fetched again); the task not revoked goes
// on in both.
func TestMemberRevocationStopsTheTaskInTheAppAndTheConsumer(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	rev, kept := activeTask(t, a, tid("0", 0)), activeTask(t, a, tid("0", 1))
	consumingApp(t, a, rev.id, kept.id)
	mustNotErr(t, (*memberCalls)(a).OnTasksRevoked(context.Background(), tasks.NewSet(rev.id)))
	if rev.active || running(a, rev) || !kept.active || !running(a, kept) {
		t.Errorf("in the App: revoked task active %v running %v; kept task active %v running %v", rev.active, running(a, rev), kept.active, running(a, kept))
	}
	if a.cons.Active(rev.id) || !a.cons.Active(kept.id) {
		t.Errorf("in the consumer: revoked task active %v, kept task active %v; want only the kept one", a.cons.Active(rev.id), a.cons.Active(kept.id))
	}
}

// The member's loss through the App: every task goes from the App and from the consumer, and the
// call succeeds (the member then joins again).
func TestMemberLossDropsEveryTask(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	activeTask(t, a, tid("0", 0))
	consumingApp(t, a, tid("0", 0))
	if err := (*memberCalls)(a).OnAllTasksLost(context.Background(), tasks.Assignment{Active: tasks.NewSet(tid("0", 0))}); err != nil {
		t.Fatalf("the loss failed: %v", err)
	}
	if len(a.mach.Held()) != 0 || a.cons.Active(tid("0", 0)) {
		t.Errorf("after the loss: the App holds %v, the consumer holds 0_0: %v", a.mach.Held(), a.cons.Active(tid("0", 0)))
	}
}
