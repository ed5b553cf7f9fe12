package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// builtApp is the test App with its pieces built (client, committer, task offsets, consumer,
// member) on a kfake cluster; the member is not started, so it holds no tasks and commits nothing.
func builtApp(t *testing.T, procs Processors, opts ...Option) (*App, *fakeClock) {
	t.Helper()
	return builtAppWith(t, testConfig(), procs, opts...)
}

// builtAppWith is builtApp with the config cfg (its bootstrap servers replaced by the fake cluster's).
func builtAppWith(t *testing.T, cfg config.Config, procs Processors, opts ...Option) (*App, *fakeClock) {
	t.Helper()
	a, clk, _ := builtAppOn(t, cfg, procs, opts...)
	return a, clk
}

// builtAppOn is builtAppWith that returns the fake cluster too, for a test to control its answers.
func builtAppOn(t *testing.T, cfg config.Config, procs Processors, opts ...Option) (*App, *fakeClock, *kfake.Cluster) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in", repartTopc, countsLog, sumsLog))
	mustNotErr(t, err)
	t.Cleanup(c.Close)
	cfg.BootstrapServers = c.ListenAddrs()
	a, clk := newTestApp(t, cfg, procs, opts...)
	mustNotErr(t, a.build())
	t.Cleanup(func() {
		a.offsets.Close()
		a.cl.Close()
	})
	a.runCtx = context.Background()
	startClock(a, clk.t)
	return a, clk, c
}

func TestBetweenStartsTasksAndFiresWallClockPunctuations(t *testing.T) {
	var fired []time.Time
	p := &recorder{onInit: func(c *Context) error {
		_, err := c.Schedule(time.Second, WallClock, func(_ *Context, at time.Time) error {
			fired = append(fired, at)
			return nil
		})
		return err
	}}
	a, clk := builtApp(t, Processors{"0": p, "1": nopProc})
	t0 := restoringTask(t, a, tid("0", 0))
	sb := restoringTask(t, a, tid("0", 1))
	sb.active = false

	a.between()
	if len(p.inits) != 1 || p.inits[0] != tid("0", 0) || !running(a, t0) || running(a, sb) {
		t.Fatalf("inits %v", p.inits)
	}
	clk.t = clk.t.Add(999 * time.Millisecond)
	a.between()
	if len(fired) != 0 {
		t.Fatalf("fired %v before the interval", fired)
	}
	clk.t = clk.t.Add(time.Millisecond)
	a.between()
	if len(fired) != 1 || !fired[0].Equal(clk.t) || len(p.inits) != 1 {
		t.Fatalf("fired %v inits %v", fired, p.inits)
	}
	if a.fatalErr() != nil {
		t.Fatal(a.fatalErr())
	}
}

func TestBetweenFailsOnInitAndPunctuationErrors(t *testing.T) {
	a, _ := builtApp(t, Processors{"0": &recorder{initErr: errBoom}, "1": nopProc})
	restoringTask(t, a, tid("0", 0))
	a.between()
	var pe *ProcessingError
	if !errors.As(a.fatalErr(), &pe) {
		t.Fatalf("Init: fatal %v", a.fatalErr())
	}

	p := &recorder{onInit: func(c *Context) error {
		_, err := c.Schedule(time.Millisecond, WallClock, func(*Context, time.Time) error { return errBoom })
		return err
	}}
	b, clk := builtApp(t, Processors{"0": p, "1": nopProc})
	restoringTask(t, b, tid("0", 0))
	b.between()
	if b.fatalErr() != nil {
		t.Fatal(b.fatalErr())
	}
	clk.t = clk.t.Add(time.Millisecond)
	b.between()
	if !errors.As(b.fatalErr(), &pe) || !errors.Is(pe, errBoom) {
		t.Fatalf("punctuation: fatal %v", b.fatalErr())
	}
}

func TestBetweenCommitsEveryInterval(t *testing.T) {
	k := &fakeKind{persistent: true}
	logs, opt := recordLogs()
	a, clk := builtApp(t, testProcs(), WithStores(k, "counts"), opt)
	a.cfg.Runtime.CommitInterval = 10 * time.Second
	remachine(a)
	a.stateDir = t.TempDir()
	act := activeTask(t, a, tid("1", 0))
	act2 := activeTask(t, a, tid("1", 2))
	sb := activeTask(t, a, tid("1", 1))
	sb.active = false
	act.stores["counts"].ackedAt(4)
	act2.stores["counts"].ackedAt(4)
	sb.stores["counts"].ackedAt(4)
	start := clk.t

	clk.t = start.Add(10*time.Second - time.Millisecond)
	a.between()
	if act.stores["counts"].checkpointed != -1 || commitAttempts(a) != 0 {
		t.Fatal("committed before the interval")
	}
	clk.t = start.Add(10 * time.Second)
	a.between()
	if act.stores["counts"].checkpointed != 5 || a.Metrics().Commits != 1 {
		t.Fatalf("at the interval: checkpointed %d, %d commits", act.stores["counts"].checkpointed, a.Metrics().Commits)
	}
	if act2.stores["counts"].checkpointed != 5 {
		t.Error("a commit checkpoints every active task")
	}
	if sb.stores["counts"].checkpointed != -1 {
		t.Error("a commit checkpoints active tasks only")
	}

	// A failed checkpoint is retried at the next interval, not fatal.
	act.stores["counts"].ackedAt(9)
	act.stores["counts"].eng.(*countingEngine).err = errBoom
	clk.t = clk.t.Add(10 * time.Second)
	a.between()
	if a.fatalErr() != nil || a.Metrics().FailedCommits != 1 {
		t.Fatalf("fatal %v, %d failed commits", a.fatalErr(), a.Metrics().FailedCommits)
	}
	if w := logs.warnings(); len(w) != 1 || w[0] != "WARN commit failed; retrying" {
		t.Errorf("warnings %v", w)
	}
	// Once the run is ending, a failed commit is not worth a warning.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.runCtx = ctx
	clk.t = clk.t.Add(10 * time.Second)
	a.between()
	if w := logs.warnings(); len(w) != 0 || a.fatalErr() != nil {
		t.Errorf("warnings %v fatal %v", w, a.fatalErr())
	}
	a.runCtx = context.Background()

	// A checkpoint that failed for want of space is fatal (it does not recover by itself, and going
	// on would never commit again).
	act.stores["counts"].eng.(*countingEngine).err = fmt.Errorf("no room: %w", syscall.ENOSPC)
	act.stores["counts"].ackedAt(12)
	clk.t = clk.t.Add(10 * time.Second)
	a.between()
	if !errors.Is(a.fatalErr(), syscall.ENOSPC) {
		t.Fatalf("a checkpoint on a full disk: fatal %v; want its store error", a.fatalErr())
	}
	a.fatal.Store(nil) // as if it had not happened, for the next case
	a.failCtx, a.cancelFail = context.WithCancelCause(context.Background())
	clk.t = clk.t.Add(time.Minute) // past any backoff
	act.stores["counts"].eng.(*countingEngine).err = nil

	// A write that failed with a retriable error goes back to the last commit (RETRY), not fatal.
	a.produceErr.Store(&ProduceError{Topic: "out", Err: kerr.NotEnoughReplicas})
	clk.t = clk.t.Add(10 * time.Second)
	a.between()
	if a.fatalErr() != nil || a.produceErr.Load() != nil || a.Metrics().ProductionRetries != 1 {
		t.Fatalf("a retriable failed write: fatal %v, pending %v, retries %d; want the tasks back at their last commit",
			a.fatalErr(), a.produceErr.Load(), a.Metrics().ProductionRetries)
	}

	// Any other failed write is fatal.
	a.produceErr.Store(&ProduceError{Topic: "out", Err: kerr.MessageTooLarge})
	clk.t = clk.t.Add(10 * time.Second)
	a.between()
	var pe *ProduceError
	if !errors.As(a.fatalErr(), &pe) {
		t.Fatalf("fatal %v", a.fatalErr())
	}
}

// Failed commits back off on top of the interval with the member's backoff: retry.backoff.ms
// doubling to retry.backoff.max.ms, one jittered draw per failure (here the shortest jitter, 0.8 of
// the exponential value: 800 ms, 1.6 s, 2.4 s, 2.4 s); a success starts again from the minimum.
func TestFailedCommitsBackOffWithTheConfiguredBackoff(t *testing.T) {
	cfg := testConfig()
	cfg.RetryBackoff, cfg.RetryBackoffMax = 300*time.Millisecond, 7*time.Second
	if b, _ := newTestApp(t, cfg, testProcs()); b.backoff.Min != cfg.RetryBackoff || b.backoff.Max != cfg.RetryBackoffMax || b.backoff.Rand == nil {
		t.Fatalf("backoff %+v; want retry.backoff.ms to retry.backoff.max.ms, jittered", b.backoff)
	}

	k := &fakeKind{persistent: true}
	a, clk := builtApp(t, testProcs(), WithStores(k, "counts"), quiet())
	a.cfg.Runtime.CommitInterval = 10 * time.Second
	a.backoff.Min, a.backoff.Max = time.Second, 3*time.Second
	draws := 0
	a.backoff.Rand = func() float64 { draws++; return 0 }
	remachine(a)
	a.stateDir = t.TempDir()
	act := activeTask(t, a, tid("1", 0))
	act.stores["counts"].ackedAt(4)
	eng := act.stores["counts"].eng.(*countingEngine)
	eng.err = errBoom
	last := clk.t
	commitAfter := func(wait time.Duration) {
		t.Helper()
		n := commitAttempts(a)
		clk.t = last.Add(wait - time.Millisecond)
		a.between()
		if commitAttempts(a) != n {
			t.Fatalf("committed %v after the last one; want not before %v", wait-time.Millisecond, wait)
		}
		clk.t = last.Add(wait)
		a.between()
		if commitAttempts(a) != n+1 || a.fatalErr() != nil {
			t.Fatalf("no commit %v after the last one (fatal %v)", wait, a.fatalErr())
		}
		last = clk.t
	}
	commitAfter(10 * time.Second) // fails
	for i, d := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 2400 * time.Millisecond, 2400 * time.Millisecond} {
		commitAfter(10*time.Second + d) // fails again
		if draws != i+2 {
			t.Fatalf("%d jitter draws after %d failed commits", draws, i+2)
		}
	}
	eng.err = nil
	commitAfter(10*time.Second + 2400*time.Millisecond) // succeeds
	if a.Metrics().Commits != 1 {
		t.Fatalf("%d successful commits", a.Metrics().Commits)
	}
	eng.err = errBoom
	act.stores["counts"].ackedAt(9)
	commitAfter(10 * time.Second)                      // fails
	commitAfter(10*time.Second + 800*time.Millisecond) // from the minimum again
}

func TestBetweenMovesTheState(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	a.between()
	if a.State() != Created {
		t.Errorf("state %v: between does not start an App", a.State())
	}
	a.state.Store(int32(Running))
	a.between()
	if a.State() != Rebalancing {
		t.Errorf("state %v with a member that is not stable", a.State())
	}
}

func TestBetweenCleansUp(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, clk := builtApp(t, testProcs(), WithStores(k))
	a.stateDir = t.TempDir()
	dir := filepath.Join(a.stateDir, "1_0")
	mustNotErr(t, os.Mkdir(dir, 0o755))
	a.proc.cleanups[tid("1", 0)] = clk.t
	a.between()
	if _, err := os.Stat(dir); err == nil || len(a.proc.cleanups) != 0 {
		t.Errorf("the due task directory is kept: %v", a.proc.cleanups)
	}
}

func TestRevokedOffsetsStopsAndCheckpoints(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, _ := builtApp(t, testProcs(), WithStores(k))
	a.stateDir = t.TempDir()
	rev := activeTask(t, a, tid("1", 0))
	schedule(a, rev)
	kept := activeTask(t, a, tid("1", 1))
	for _, tk := range []*task{rev, kept} {
		tk.stores["counts"].ackedAt(2)
	}
	err := revoke(a, tasks.NewSet(tid("1", 0), tid("1", 7)))
	if err != nil {
		t.Fatalf("err %v", err)
	}
	if rev.active || running(a, rev) || scheduled(a, rev) != 0 || a.tasks[tid("1", 0)] != rev {
		t.Errorf("revoked task %+v: stops, stays open", rev)
	}
	if !kept.active || !running(a, kept) {
		t.Error("a task not revoked goes on")
	}
	if rev.stores["counts"].checkpointed != 3 || kept.stores["counts"].checkpointed != -1 {
		t.Errorf("checkpointed %d %d", rev.stores["counts"].checkpointed, kept.stores["counts"].checkpointed)
	}

	rev.stores["counts"].ackedAt(5)
	rev.stores["counts"].eng.(*countingEngine).err = errBoom
	if err := revoke(a, tasks.NewSet(tid("1", 0))); !errors.Is(err, errBoom) {
		t.Errorf("a failed checkpoint: %v", err)
	}
	a.produceErr.Store(&ProduceError{Err: kerr.MessageTooLarge})
	if err := revoke(a, tasks.NewSet(tid("1", 1))); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("after a failed write: %v", err)
	}
	if kept.stores["counts"].checkpointed != -1 {
		t.Error("checkpointed after a failed write")
	}
	// A write that failed with a retriable error (production.exception.handler's RETRY): nothing
	// more of the revoked task is committed, no error, and the kept tasks go back to their last
	// commit (Init again).
	a.produceErr.Store(&ProduceError{Err: context.DeadlineExceeded})
	if err := revoke(a, tasks.NewSet(tid("1", 1))); err != nil {
		t.Errorf("after a retriable failed write: err %v; want nothing committed and no error", err)
	}
	if a.produceErr.Load() != nil || a.Metrics().ProductionRetries != 1 {
		t.Errorf("after the retry: the failed write is still pending (%v), or not counted (%d)", a.produceErr.Load(), a.Metrics().ProductionRetries)
	}
}

func TestFlushAndCommitAfterAFailedWrite(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	mustNotErr(t, flushErr(a, context.Background())) // nothing buffered
	mustNotErr(t, a.commit(context.Background()))
	pe := &ProduceError{Err: errBoom}
	a.produceErr.Store(pe)
	if err := flushErr(a, context.Background()); err != error(pe) {
		t.Errorf("flush: %v", err)
	}
	if err := a.commit(context.Background()); err != error(pe) {
		t.Errorf("commit: %v", err)
	}
}

// A signal that arrives while a periodic commit runs does not fail the commit: a clean stop
// commits what it processed (under exactly-once a commit that failed would abort the transaction
// and drop the work). A fatal error does end it.
func TestACommitUnderWayOutlivesTheSignal(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, clk := builtApp(t, testProcs(), WithStores(k, "counts"), quiet())
	a.stateDir = t.TempDir()
	run, signal := context.WithCancel(context.Background())
	defer signal()
	a.runCtx = run
	act := activeTask(t, a, tid("1", 0))
	act.stores["counts"].ackedAt(4)
	act.stores["counts"].eng.(*countingEngine).onApply = signal // the checkpoint: mid-commit
	clk.t = clk.t.Add(a.cfg.Runtime.CommitInterval)
	a.between()
	if m := a.Metrics(); m.Commits != 1 || m.FailedCommits != 0 || act.stores["counts"].checkpointed != 5 {
		t.Fatalf("commits %d, failed %d, checkpointed %d: the signal during the commit failed it", m.Commits, m.FailedCommits, act.stores["counts"].checkpointed)
	}

	a.cfg.Runtime.CommitInterval = 0
	remachine(a)
	act.stores["counts"].ackedAt(9)
	act.stores["counts"].eng.(*countingEngine).onApply = func() { a.fail(errBoom) }
	a.between()
	if m := a.Metrics(); m.FailedCommits != 1 {
		t.Fatalf("failed commits %d: a fatal error during the commit did not end it", m.FailedCommits)
	}
}

// production.exception.handler under at-least-once: DefaultProductionExceptionHandler (the default)
// retries a write that failed with a retriable error (the tasks go back at the next commit) and
// fails on any other; LogAndContinueProductionExceptionHandler drops the record and goes on.
// Exactly-once keeps its own way (an abortable write aborts the transaction), whatever it says.
func TestProductionExceptionHandler(t *testing.T) {
	rec := &kgo.Record{Topic: "out", Partition: 1}
	for _, c := range []struct {
		policy           config.ErrorPolicy
		err              error
		pending, isFatal bool
	}{
		{config.RetryOrFail, context.DeadlineExceeded, true, false}, // delivery.timeout.ms passed
		{config.RetryOrFail, kerr.NotLeaderForPartition, true, false},
		{config.RetryOrFail, kerr.MessageTooLarge, true, true},
		{config.RetryOrFail, kerr.TopicAuthorizationFailed, true, true},
		{config.LogAndContinue, kerr.MessageTooLarge, false, false},
		{config.LogAndContinue, context.DeadlineExceeded, false, false},
		// Fatal whatever the handler says (Kafka Streams' RecordCollectorImpl.isFatalException).
		{config.LogAndContinue, kerr.TopicAuthorizationFailed, true, true},
		{config.LogAndContinue, kerr.UnknownServerError, true, true},
		{config.LogAndContinue, kerr.InvalidTopicException, true, true},
	} {
		cfg := testConfig()
		cfg.Runtime.OnProductionError = c.policy
		a, _ := newTestApp(t, cfg, testProcs())
		a.recordProduceErr(rec, c.err, 0)
		if got := a.produceErr.Load() != nil; got != c.pending {
			t.Errorf("%v, %v: a failed write pending %v, want %v", c.policy, c.err, got, c.pending)
		}
		if got := a.fatalErr() != nil; got != c.isFatal {
			t.Errorf("%v, %v: fatal %v, want %v", c.policy, c.err, a.fatalErr(), c.isFatal)
		}
		if c.policy == config.LogAndContinue && !c.isFatal && a.Metrics().Dropped != 1 {
			t.Errorf("%v, %v: dropped %d, want 1", c.policy, c.err, a.Metrics().Dropped)
		}
	}
}

// A write to retry is acted on before the tasks process more: between batches, and within a batch
// at the next look at the clock (every 64 records), as Kafka Streams stops at the next record.
func TestARetryIsNotLeftForTheNextCommit(t *testing.T) {
	p := &recorder{}
	a := processingApp(t, p, nil)
	a.cur = &consume.Batch{}
	a.produceErr.Store(&ProduceError{Topic: "out", Err: kerr.NotEnoughReplicas})
	got, paused := a.processUntil([]consume.Records{recs(tid("0", 0), "in", 0, make([]int64, 100)...)})
	if !paused || !maps.Equal(got, map[tasks.TopicPartition]int64{in(0): 64}) {
		t.Fatalf("paused %v at %v; want a pause after 64 records for the retry", paused, got)
	}
}

// A task that starts with the stream time of its committed metadata fires a stream-time
// punctuation that is due without waiting for a record, as Kafka Streams' punctuate does.
func TestBetweenFiresADueStreamTimePunctuation(t *testing.T) {
	var fired []int64
	p := &recorder{onInit: func(c *Context) error {
		_, err := c.Schedule(time.Second, StreamTime, func(_ *Context, at time.Time) error {
			fired = append(fired, at.UnixMilli())
			return nil
		})
		return err
	}}
	a, _ := builtApp(t, Processors{"0": p, "1": nopProc})
	restoringTask(t, a, tid("0", 0))
	startFrom(t, a, tid("0", 0), map[tasks.TopicPartition]string{in(0): "AgAAAAAAAAPo"}) // 1000, committed by the previous owner
	a.between()
	if len(fired) != 1 || fired[0] != 1000 {
		t.Fatalf("stream-time punctuations %v; want one at the restored stream time 1000", fired)
	}
}

// Under exactly-once a failed write of the open transaction's generation is pending (the next
// commit aborts); one of a generation aborted since is the abort's own, and is not.
func TestFailedWriteOfAnAbortedGenerationIsIgnored(t *testing.T) {
	cfg := testConfig()
	cfg.Runtime.Guarantee = config.ExactlyOnceV2
	cfg.Runtime.CommitInterval = config.DefaultCommitIntervalEOS
	a, _ := newTestApp(t, cfg, testProcs())
	a.txnGen.Store(3)
	rec := &kgo.Record{Topic: "out", Partition: 1}
	a.recordProduceErr(rec, kerr.NotLeaderForPartition, 2)
	if a.produceErr.Load() != nil {
		t.Fatal("a failure of an aborted generation is pending")
	}
	a.recordProduceErr(rec, kerr.NotLeaderForPartition, 3)
	if pe := a.produceErr.Load(); pe == nil || pe.Topic != "out" || pe.Partition != 1 || a.fatalErr() != nil {
		t.Fatalf("the open generation's failure: pending %v, fatal %v; want pending, not fatal", pe, a.fatalErr())
	}
}

// orphanedApp is the test app with task 1_1 restored with keys in both its stores (3 keys) and
// none of its inputs committed, 1_0 restored empty, 0_0 without stores: none has started.
func orphanedApp(t *testing.T, cfg config.Config, opts ...Option) (*App, *recorder) {
	t.Helper()
	p := &recorder{}
	a, _ := builtAppWith(t, cfg, Processors{"0": nopProc, "1": p}, opts...)
	restoringTask(t, a, tid("1", 0))
	full := restoringTask(t, a, tid("1", 1))
	restoringTask(t, a, tid("0", 0))
	var b store.Batch
	b.Put([]byte("k1"), []byte("1"))
	b.Put([]byte("k2"), []byte("2"))
	mustNotErr(t, full.stores["counts"].eng.Apply(&b, -1))
	b.Reset()
	b.Put([]byte("s"), []byte("3"))
	mustNotErr(t, full.stores["sums"].eng.Apply(&b, -1))
	return a, p
}

// A task whose stores hold restored state while none of its inputs has a committed offset does not
// start: the application stops with an *OrphanedStateError naming the group, the task, each store
// that holds data and its changelog, before any of its records is processed, and nothing is
// committed. Empty stores, or a task without stores, start.
func TestOrphanedStateIsRefused(t *testing.T) {
	a, p := orphanedApp(t, testConfig())
	b := &consume.Batch{Process: []consume.Records{recs(tid("1", 0), repartTopc, 0, 1), recs(tid("1", 1), repartTopc, 7, 1, 2)}}
	a.handle(b)
	var oe *OrphanedStateError
	if !errors.As(a.fatalErr(), &oe) {
		t.Fatalf("fatal error %v; want an *OrphanedStateError", a.fatalErr())
	}
	want := []OrphanedState{{Store: "counts", Changelog: tasks.TopicPartition{Topic: countsLog, Partition: 1}, Keys: 2},
		{Store: "sums", Changelog: tasks.TopicPartition{Topic: sumsLog, Partition: 1}, Keys: 1}}
	if oe.Group != testApp || oe.Task != tid("1", 1) || fmt.Sprint(oe.Stores) != fmt.Sprint(want) {
		t.Fatalf("error %+v; want group %s, task 1_1, stores %v", oe, testApp, want)
	}
	for _, s := range []string{"task 1_1", "store counts (changelog " + countsLog + "-1, about 2 keys)", "store sums",
		"--delete --group app --delete-all-internal-topics", countsLog + ", " + sumsLog, "--from-file",
		"allow.state.without.committed.offsets=true", "docs/upgrades.md"} {
		if !strings.Contains(oe.Error(), s) {
			t.Errorf("the error does not say %q: %s", s, oe)
		}
	}
	if len(p.seen) != 0 || running(a, a.tasks[tid("1", 1)]) {
		t.Errorf("processed %v, running %v; want nothing processed and 1_1 not started", p.seen, running(a, a.tasks[tid("1", 1)]))
	}
	if a.mach.HasCommitted(tid("1", 1)) || a.Metrics().Commits != 0 {
		t.Errorf("committed something (%d commits)", a.Metrics().Commits)
	}
}

// With allow.state.without.committed.offsets=true the task starts on its state, with an
// *OrphanedStateWarning, and its records are processed.
func TestOrphanedStateAllowedIsWarned(t *testing.T) {
	cfg := testConfig()
	cfg.Runtime.AllowStateWithoutCommittedOffsets = true
	var got []*OrphanedStateWarning
	a, p := orphanedApp(t, cfg, WithWarningListener(func(err error) {
		if w, ok := err.(*OrphanedStateWarning); ok {
			got = append(got, w)
		}
	}))
	a.handle(&consume.Batch{Process: []consume.Records{recs(tid("1", 0), repartTopc, 0, 1), recs(tid("1", 1), repartTopc, 7, 1, 2),
		recs(tid("0", 0), "in", 3, 1)}})
	if a.fatalErr() != nil {
		t.Fatal(a.fatalErr())
	}
	if len(got) != 1 || got[0].Task != tid("1", 1) || got[0].Keys != 3 || got[0].Group != testApp {
		t.Fatalf("warnings %+v; want one for 1_1 with 3 keys", got)
	}
	if !strings.Contains(got[0].Error(), "allow.state.without.committed.offsets=true") {
		t.Errorf("warning %q", got[0])
	}
	if fmt.Sprint(p.seen) != "[1_0@0 1_1@7 1_1@8]" {
		t.Errorf("processed %v", p.seen)
	}
}

// A task with a committed input offset starts without a commit of its starting positions; a fresh
// one whose records bring the first offset of each of its inputs commits them without listing
// anything (a listing is for inputs without records).
func TestStartingCommitsAndListsOnlyWhatIsNeeded(t *testing.T) {
	a, _, c := builtAppOn(t, testConfig(), Processors{"0": nopProc, "1": nopProc})
	var listings atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		listings.Add(1)
		return nil, nil, false
	})
	tk, err := a.openTask(context.Background(), tid("0", 0))
	mustNotErr(t, err)
	tk.active = true
	a.tasks[tk.id] = tk
	startFrom(t, a, tk.id, map[tasks.TopicPartition]string{{Topic: "in", Partition: 0}: ""}) // committed at 0
	a.handle(&consume.Batch{Process: []consume.Records{recs(tid("0", 0), "in", 0, 1)}})
	if a.fatalErr() != nil || !running(a, tk) || a.Metrics().Commits != 0 || listings.Load() != 0 {
		t.Fatalf("committed task: fatal %v, running %v, %d commits, %d listings; want it started with neither",
			a.fatalErr(), running(a, tk), a.Metrics().Commits, listings.Load())
	}
	fresh := restoringTask(t, a, tid("0", 1))
	a.handle(&consume.Batch{Process: []consume.Records{recs(tid("0", 1), "in", 4, 1)}})
	if a.fatalErr() != nil || !running(a, fresh) || a.Metrics().Commits != 1 || listings.Load() != 0 {
		t.Fatalf("fresh task: fatal %v, running %v, %d commits, %d listings; want one commit and no listing",
			a.fatalErr(), running(a, fresh), a.Metrics().Commits, listings.Load())
	}
}

// A listing of where fresh tasks' inputs start that fails — as a whole or for one partition —
// leaves the tasks unstarted and the batch to come again, and the next try waits retry.backoff.ms,
// then twice that: nothing is committed without every input's start.
func TestFailedStartListingBacksOff(t *testing.T) {
	cfg := testConfig()
	cfg.RetryBackoff, cfg.RetryBackoffMax = 100*time.Millisecond, 10*time.Second
	a, clk, c := builtAppOn(t, cfg, Processors{"0": nopProc, "1": nopProc})
	a.backoff.Rand = nil // no jitter: the delays are exact
	var listings atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		listings.Add(1)
		resp := req.(*kmsg.ListOffsetsRequest).ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.(*kmsg.ListOffsetsRequest).Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	tk := restoringTask(t, a, tid("0", 0))
	start := clk.t
	a.mu.Lock()
	err, again := a.startTasks(context.Background(), []tasks.ID{tk.id}, nil)
	a.mu.Unlock()
	if err == nil || !again || running(a, tk) || a.Metrics().Commits != 0 || listings.Load() == 0 {
		t.Fatalf("a listing with a partition error: %v, again %v, running %v, %d commits", err, again, running(a, tk), a.Metrics().Commits)
	}
	if d := a.startRetryAt.Sub(start); d != 100*time.Millisecond {
		t.Fatalf("the next try in %v; want retry.backoff.ms, 100ms", d)
	}
	n := listings.Load()
	a.mu.Lock()
	_, again = a.startTasks(context.Background(), []tasks.ID{tk.id}, nil) // too early: no listing
	a.mu.Unlock()
	if !again || listings.Load() != n {
		t.Fatalf("a try before the backoff: again %v, %d listings; want none", again, listings.Load()-n)
	}
	clk.t = a.startRetryAt
	a.mu.Lock()
	_, again = a.startTasks(context.Background(), []tasks.ID{tk.id}, nil)
	a.mu.Unlock()
	if !again || a.startRetryAt.Sub(clk.t) != 200*time.Millisecond {
		t.Fatalf("the second failure: again %v, next try in %v; want 200ms", again, a.startRetryAt.Sub(clk.t))
	}
}
