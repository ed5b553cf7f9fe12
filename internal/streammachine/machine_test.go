package streammachine

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The commit step's tests script the machine's inputs and read its actions, with no broker: every
// path of both strategies and every error class. The expected orders and outcomes are Kafka
// Streams' (TaskManager.commit, StreamsProducer, TaskExecutor): at-least-once flushes, checkpoints,
// then commits the offsets; exactly-once commits the offsets in the transaction and ends it, aborts
// on anything the producer can go on from, replaces a fenced producer, and stops on the rest.

var (
	t0       = time.UnixMilli(1_000_000)
	tp0      = tasks.TopicPartition{Topic: "in", Partition: 0}
	tp1      = tasks.TopicPartition{Topic: "in", Partition: 1}
	offs     = commit.Offsets{tp0: 10, tp1: 20}
	tp2      = tasks.TopicPartition{Topic: "in", Partition: 2}
	task0    = tasks.ID{Subtopology: "0", Partition: 0}
	task1    = tasks.ID{Subtopology: "0", Partition: 1}
	errWrite = errors.New("write failed")
)

// backoff is the fixed (jitter-free) backoff of the tests: 100 ms doubling to 400 ms.
var backoff = heartbeat.Backoff{Min: 100 * time.Millisecond, Max: 400 * time.Millisecond, Rand: func() float64 { return 0.5 }}

type script struct {
	t   *testing.T
	m   *Machine
	now time.Time
	// done is the last Done seen.
	done *Done
}

func newScript(t *testing.T, g Guarantee, retry bool) *script {
	m := New(Config{Guarantee: g, CommitInterval: 10 * time.Second, Backoff: backoff, RetryProduction: retry, Inputs: testInputs})
	m.Step(t0, Started{})
	return &script{t: t, m: m, now: t0.Add(10 * time.Second)}
}

// testInputs are the test topology's input partitions of a task: task s_p reads partitions 2p and
// 2p+1 of topic "in" (task0: tp0 and tp1).
func testInputs(id tasks.ID) []tasks.TopicPartition {
	return []tasks.TopicPartition{{Topic: "in", Partition: 2 * id.Partition}, {Topic: "in", Partition: 2*id.Partition + 1}}
}

// activate assigns task0 as the only active task, starting from committed.
func (s *script) activate(committed CommittedInputs) {
	s.t.Helper()
	if st, ok := s.m.Task(task0); ok {
		role := "Role(0_0 active)"
		if st.Active() && committed.Tasks.Contains(task0) { // started again from its commit
			role = "Role(0_0 active stop)"
		}
		s.step(Assigned{Assignment: tasks.Assignment{Active: tasks.NewSet(task0)}, Committed: committed}, role, "Done")
		return
	}
	s.step(Assigned{Assignment: tasks.Assignment{Active: tasks.NewSet(task0)}, Committed: committed}, "Open(0_0)")
	s.step(TaskOpened{ID: task0}, "Role(0_0 active)", "Done")
}

// process says the records of each partition of o before its offset were processed.
func (s *script) process(o commit.Offsets) {
	for tp, next := range o {
		s.m.Processed(tp, next)
	}
}

// newCommitScript is a script whose task0 is active and processed up to offs (tp0 10, tp1 20),
// with nothing committed before.
func newCommitScript(t *testing.T, g Guarantee, retry bool) *script {
	s := newScript(t, g, retry)
	s.activate(CommittedInputs{})
	s.process(offs)
	return s
}

// txnInput is an input fed after records went into an open transaction (the shell's Begun and
// Produced, which happen while records are written, before the commit).
type txnInput struct {
	records int
	in      Input
}

func (txnInput) isInput() {}

// txnThen is in, after a transaction with records records was opened.
func txnThen(records int, in Input) Input { return txnInput{records, in} }

// open opens a transaction with records records of task0.
func (s *script) open(records int) {
	if !s.m.TxnOpen() {
		s.m.Begun()
	}
	for range records {
		s.m.Produced(task0)
	}
}

// feed steps the machine with in.
func (s *script) feed(in Input) []Action {
	if ti, ok := in.(txnInput); ok {
		s.open(ti.records)
		in = ti.in
	}
	return s.m.Step(s.now, in)
}

// step feeds in and checks the actions' descriptions.
func (s *script) step(in Input, want ...string) []Action {
	s.t.Helper()
	acts := s.feed(in)
	got := make([]string, len(acts))
	for i, a := range acts {
		got[i] = describe(a)
		if d, ok := a.(Done); ok {
			s.done = &d
			if i != len(acts)-1 {
				s.t.Errorf("Done is not the last action: %v", got)
			}
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		s.t.Fatalf("after %T: actions %v, want %v", in, got, want)
	}
	return acts
}

// doneDesc is how the next failed periodic commit's Done reads: its backoff grows with every
// failure in a row.
func (s *script) doneDesc() string {
	return fmt.Sprintf("Done(err, retry in %v)", 10*time.Second+s.m.cfg.Backoff.Delay(s.m.failures))
}

// describe renders an action for comparison.
func describe(a Action) string {
	switch a := a.(type) {
	case Checkpoint:
		if a.AllActive {
			return "Checkpoint(active)"
		}
		return fmt.Sprintf("Checkpoint(%v)", a.Only)
	case CommitOffsets:
		if a.Producer != nil {
			return fmt.Sprintf("CommitOffsets(txn %d/%d %d)", a.Producer.ID, a.Producer.Epoch, len(a.Offsets))
		}
		return fmt.Sprintf("CommitOffsets(%d)", len(a.Offsets))
	case EndTxn:
		if a.Commit {
			return "EndTxn(commit)"
		}
		return "EndTxn(abort)"
	case Wait:
		if a.Abort {
			return fmt.Sprintf("Wait(%v abort)", a.D)
		}
		return fmt.Sprintf("Wait(%v)", a.D)
	case Log:
		return "Log(" + a.Level.String() + ")"
	case RetryFromLastCommit:
		return "RetryFromLastCommit"
	case InitTask:
		return "Init(" + a.ID.String() + ")"
	case OpenTask:
		return "Open(" + a.ID.String() + ")"
	case SetRole:
		role := "standby"
		if a.Active {
			role = "active"
		}
		if a.Stop {
			role += " stop"
		}
		return "Role(" + a.ID.String() + " " + role + ")"
	case SuspendTask:
		return "Suspend(" + a.ID.String() + ")"
	case CloseTask:
		return "Close(" + a.ID.String() + ")"
	case Done:
		switch {
		case a.Err == nil:
			return "Done"
		case a.Fatal:
			return "Done(fatal)"
		case a.RetryIn > 0:
			return fmt.Sprintf("Done(err, retry in %v)", a.RetryIn)
		}
		return "Done(err)"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", a), "streammachine.")
}

func TestAtLeastOncePeriodicCommit(t *testing.T) {
	s := newCommitScript(t, AtLeastOnce, true)
	if s.m.CommitDue(s.now.Add(-time.Millisecond)) || !s.m.CommitDue(s.now) {
		t.Fatal("the periodic commit is due exactly commit.interval.ms after the start")
	}
	s.step(Commit{Reason: Periodic}, "Flush")
	if !s.m.Busy() {
		t.Error("not busy during a commit")
	}
	s.step(Flushed{}, "Checkpoint(active)")
	acts := s.step(Checkpointed{}, "CommitOffsets(2)")
	if c := acts[0].(CommitOffsets); c.Offsets[tp0] != 10 || c.Offsets[tp1] != 20 {
		t.Errorf("commits %v", c.Offsets)
	}
	s.step(OffsetsCommitted{}, "Done")
	if s.m.Busy() || s.m.CommitDue(s.now.Add(10*time.Second-time.Millisecond)) || !s.m.CommitDue(s.now.Add(10*time.Second)) {
		t.Error("the next commit is due one interval after this one started")
	}
	// Only what moved since is committed next time.
	s.now = s.now.Add(10 * time.Second)
	s.m.Processed(tp1, 25)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	if acts = s.step(Checkpointed{}, "CommitOffsets(1)"); acts[0].(CommitOffsets).Offsets[tp1] != 25 {
		t.Errorf("commits %v", acts[0].(CommitOffsets).Offsets)
	}
	s.step(OffsetsCommitted{}, "Done")
}

func TestAtLeastOnceRevocationCommitsTheRevokedTasksOnly(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.step(Assigned{Assignment: tasks.Assignment{Active: tasks.NewSet(task0, task1)}}, "Open(0_0)")
	s.step(TaskOpened{ID: task0}, "Open(0_1)")
	s.step(TaskOpened{ID: task1}, "Role(0_0 active)", "Role(0_1 active)", "Done")
	s.process(commit.Offsets{tp0: 3, tp2: 7}) // tp1 (task0's) has nothing: left out
	rev := tasks.NewSet(task0)
	s.step(Commit{Reason: Revocation, Revoked: rev}, "Flush")
	s.step(Flushed{}, "Checkpoint([0_0])")
	acts := s.step(Checkpointed{}, "CommitOffsets(1)")
	if c := acts[0].(CommitOffsets); c.Offsets[tp0] != 3 {
		t.Errorf("commits %v; want task0's tp0 alone", c.Offsets)
	}
	s.step(OffsetsCommitted{}, "Done")
	if !s.m.CommitDue(s.now) {
		t.Error("a revocation moved the periodic commit")
	}
	// A failed revocation is the member's to retry: no backoff on the periodic commit.
	s.step(Commit{Reason: Revocation, Revoked: rev}, "Flush")
	s.step(Flushed{}, "Checkpoint([0_0])")
	s.step(Checkpointed{Err: errWrite}, "Done(err)")
	if !s.m.CommitDue(s.now) {
		t.Error("a failed revocation delayed the periodic commit")
	}
}

// Partitions the member does not own at the moment of the commit are left out, once.
func TestAtLeastOnceLeavesOutPartitionsNotOwned(t *testing.T) {
	s := newCommitScript(t, AtLeastOnce, true)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	first := s.step(Checkpointed{}, "CommitOffsets(2)")[0].(CommitOffsets).Offsets
	notOwned := &commit.NotOwnedError{Partitions: []tasks.TopicPartition{tp1}}
	acts := s.step(OffsetsCommitted{Err: notOwned}, "CommitOffsets(1)")
	if c := acts[0].(CommitOffsets); c.Offsets[tp0] != 10 || len(c.Offsets) != 1 {
		t.Errorf("retried with %v", c.Offsets)
	}
	if len(first) != 2 {
		t.Error("the offsets of the first request were changed in place")
	}
	s.step(OffsetsCommitted{Err: notOwned}, "Done(err, retry in 10.1s)")

	// tp0 was committed and tp1 not: only tp1 is left; all of it not owned, nothing is left and
	// the commit is done.
	s.now = s.now.Add(time.Minute)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	s.step(Checkpointed{}, "CommitOffsets(2)") // the failed commit marked nothing committed
	s.step(OffsetsCommitted{Err: notOwned}, "CommitOffsets(1)")
	s.step(OffsetsCommitted{}, "Done")
	s.now = s.now.Add(time.Minute)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	if acts = s.step(Checkpointed{}, "CommitOffsets(1)"); acts[0].(CommitOffsets).Offsets[tp1] != 20 {
		t.Errorf("commits %v; want tp1's 20, left out before", acts[0].(CommitOffsets).Offsets)
	}
	s.step(OffsetsCommitted{Err: notOwned}, "Done")
}

// production.exception.handler under at-least-once: a retriable failed write goes back to the last
// commit (RETRY, the default); any other, or any with the handler off, stops the application. A
// flush that did not finish (the cluster away) is a failed commit, retried.
func TestAtLeastOnceFailedWrites(t *testing.T) {
	retriable := fmt.Errorf("out[0]: %w", kerr.NotEnoughReplicas)
	for _, c := range []struct {
		name   string
		retry  bool
		reason Reason
		in     Flushed
		want   []string
	}{
		{"retriable, RETRY", true, Periodic, Flushed{Err: retriable, Write: true}, []string{"RetryFromLastCommit", "Done(err)"}},
		{"retriable, RETRY, revocation", true, Revocation, Flushed{Err: retriable, Write: true}, []string{"RetryFromLastCommit", "Done"}},
		{"retriable, no RETRY", false, Periodic, Flushed{Err: retriable, Write: true}, []string{"Done(fatal)"}},
		{"too large", true, Periodic, Flushed{Err: kerr.MessageTooLarge, Write: true}, []string{"Done(fatal)"}},
		{"flush cut short", true, Periodic, Flushed{Err: io.EOF}, []string{"Done(err, retry in 10.1s)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScript(t, AtLeastOnce, c.retry)
			s.step(Commit{Reason: c.reason}, "Flush")
			acts := s.step(c.in, c.want...)
			if r, ok := acts[0].(RetryFromLastCommit); ok && r.Err != c.in.Err {
				t.Errorf("retries %v", r.Err)
			}
			if s.done.Err != nil && !errors.Is(s.done.Err, c.in.Err) {
				t.Errorf("ends with %v", s.done.Err)
			}
			if c.want[len(c.want)-1] == "Done(err)" && !s.m.CommitDue(s.now.Add(10*time.Second)) {
				t.Error("a retried write backs off")
			}
		})
	}
}

// Store errors: a checkpoint that failed is retried at the next interval, except on a full disk
// (it does not recover by itself); under exactly-once a store that cannot apply a committed
// transaction stops the application.
func TestStoreErrors(t *testing.T) {
	damaged := &store.Error{Op: "checkpoint", Err: errWrite}
	full := &store.Error{Op: "checkpoint", Err: fmt.Errorf("no room: %w", syscall.ENOSPC)}
	s := newScript(t, AtLeastOnce, true)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	s.step(Checkpointed{Err: damaged}, "Done(err, retry in 10.1s)")
	s.now = s.now.Add(time.Minute)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	s.step(Checkpointed{Err: full}, "Done(fatal)")

	e := newCommitScript(t, ExactlyOnce, false)
	e.step(Commit{}, "Flush")
	e.step(Flushed{}, "CommitOffsets(2)")
	e.step(OffsetsCommitted{}, "ForgetTxn", "Apply")
	e.step(Applied{Err: damaged}, "Done(fatal)")
	if !errors.Is(e.done.Err, errWrite) {
		t.Errorf("ends with %v", e.done.Err)
	}
}

// Failed periodic commits back off on top of the interval (retry.backoff.ms doubling to
// retry.backoff.max.ms; here 0.5 of the jitter range: 100, 200, 400, 400 ms); a success starts
// again from the minimum.
func TestFailedCommitsBackOff(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	fail := func(want time.Duration) {
		t.Helper()
		s.step(Commit{}, "Flush")
		s.step(Flushed{Err: io.EOF}, fmt.Sprintf("Done(err, retry in %v)", 10*time.Second+want))
		if s.m.CommitDue(s.now.Add(10*time.Second+want-time.Millisecond)) || !s.m.CommitDue(s.now.Add(10*time.Second+want)) {
			t.Fatalf("the next commit is not due %v after this one", 10*time.Second+want)
		}
		s.now = s.now.Add(10*time.Second + want)
	}
	for _, d := range []time.Duration{100, 200, 400, 400} {
		fail(d * time.Millisecond)
	}
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	s.step(Checkpointed{}, "CommitOffsets(0)")
	s.step(OffsetsCommitted{}, "Done")
	if !s.m.CommitDue(s.now.Add(10 * time.Second)) {
		t.Error("the backoff outlived a successful commit")
	}
	s.now = s.now.Add(10 * time.Second)
	fail(100 * time.Millisecond)
}

func TestExactlyOnceCommit(t *testing.T) {
	s := newCommitScript(t, ExactlyOnce, false)
	s.open(4)
	if !s.m.TxnOpen() {
		t.Fatal("no transaction open after Begun")
	}
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "LoadProducer")
	s.step(ProducerLoaded{}, "CommitOffsets(txn 0/0 2)")
	s.step(OffsetsCommitted{}, "EndTxn(commit)")
	s.step(TxnEnded{}, "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")
	if s.m.TxnOpen() {
		t.Error("a transaction is open after its commit")
	}
	// Nothing moved, nothing written: an empty plain commit.
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "CommitOffsets(0)")
	s.step(OffsetsCommitted{}, "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")

	s.process(commit.Offsets{tp0: 11, tp1: 21})
	s.step(Commit{}, "Flush")
	s.step(txnThen(7, Flushed{}), "LoadProducer")
	acts := s.step(ProducerLoaded{Producer: commit.Producer{TransactionalID: "app-p-1", ID: 5, Epoch: 2}}, "CommitOffsets(txn 5/2 2)")
	if p := acts[0].(CommitOffsets).Producer; p.TransactionalID != "app-p-1" {
		t.Errorf("producer %+v", p)
	}
	if o := acts[0].(CommitOffsets).Offsets; o[tp0] != 11 || o[tp1] != 21 {
		t.Errorf("commits %v", o)
	}
	s.step(OffsetsCommitted{}, "EndTxn(commit)")
	s.step(TxnEnded{}, "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")

	// A revocation's final positions go into the one transaction, moved or not.
	s.step(Commit{Reason: Revocation, Revoked: tasks.NewSet(task0)}, "Flush")
	// No transaction open: a plain commit of the offsets.
	acts = s.step(Flushed{}, "CommitOffsets(2)")
	if o := acts[0].(CommitOffsets).Offsets; o[tp0] != 11 || o[tp1] != 21 {
		t.Errorf("a revocation commits %v", o)
	}
	s.step(OffsetsCommitted{}, "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")

	// A transaction nothing was produced into ends without a request, then the offsets go plain.
	s.process(commit.Offsets{tp0: 12})
	s.step(Commit{}, "Flush")
	s.step(txnThen(0, Flushed{}), "EndTxn(commit)")
	s.step(TxnEnded{}, "CommitOffsets(1)")
	s.step(OffsetsCommitted{}, "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")
}

// Every error the producer can go on from aborts the transaction: the work since the last commit
// is dropped and done again, and the commit counts as failed (backoff).
func TestExactlyOnceAbortsAndRedoes(t *testing.T) {
	for _, c := range []struct {
		name string
		open int     // records in the transaction open at the start; -1: none open
		to   []Input // the inputs up to the failure
		err  error
	}{
		{"flush", 1, []Input{Flushed{Err: io.EOF, Write: true}}, io.EOF},
		{"epoch moved", 1, []Input{Flushed{}, ProducerLoaded{Err: errWrite}}, errWrite},
		{"TxnOffsetCommit", 1, []Input{Flushed{}, ProducerLoaded{}, OffsetsCommitted{Err: kerr.TransactionAbortable}}, kerr.TransactionAbortable},
		{"EndTxn refused", 1, []Input{Flushed{}, ProducerLoaded{}, OffsetsCommitted{}, TxnEnded{Err: kerr.ConcurrentTransactions}}, kerr.ConcurrentTransactions},
		{"empty EndTxn", 0, []Input{Flushed{}, TxnEnded{Err: io.ErrUnexpectedEOF}}, io.ErrUnexpectedEOF},
		{"plain commit", -1, []Input{Flushed{}, OffsetsCommitted{Err: kerr.CoordinatorNotAvailable}}, kerr.CoordinatorNotAvailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newCommitScript(t, ExactlyOnce, false)
			if c.open >= 0 {
				s.open(c.open)
			}
			s.feed(Commit{})
			for _, in := range c.to[:len(c.to)-1] {
				s.feed(in)
			}
			if c.open < 0 { // nothing to end: what is pending is dropped
				s.step(c.to[len(c.to)-1], "Log(WARN)", "ForgetTxn", "DropPending", "Done(err, retry in 10.1s)")
			} else {
				s.step(c.to[len(c.to)-1], "Log(WARN)", "StartAbort")
				s.step(AbortStarted{}, "EndTxn(abort)")
				s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done(err, retry in 10.1s)")
			}
			if !errors.Is(s.done.Err, c.err) {
				t.Errorf("ends with %v, want %v", s.done.Err, c.err)
			}
			// Nothing was committed before: the work is done again from where consumption started.
			if s.m.HasCommitted(task0) || s.m.collectOffsetsLen() != 0 {
				t.Errorf("after the abort: committed %v, %d positions to commit; want none", s.m.HasCommitted(task0), s.m.collectOffsetsLen())
			}
		})
	}
}

// collectOffsetsLen is how many positions a periodic commit would commit now.
func (m *Machine) collectOffsetsLen() int {
	o, _ := m.collectOffsets(tasks.Set{}, false)
	return len(o)
}

// A task that leaves this member while its records are in the open transaction (lost, or
// suspended) aborts it: its offsets cannot be committed with them (R4).
func TestExactlyOnceTaskLostMidTransaction(t *testing.T) {
	s := newCommitScript(t, ExactlyOnce, false)
	s.open(2)
	s.step(Assigned{}, "Suspend(0_0)", "Done")
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Log(WARN)", "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done(err, retry in 10.1s)")
	if s.done.Err == nil || !strings.Contains(s.done.Err.Error(), "task 0_0 was lost while its transaction was open") {
		t.Errorf("ends with %v", s.done.Err)
	}
}

// An abort that fails for a reason the producer can go on from is retried with the backoff within
// AbortRetryBound (a broker restart); the application stops only past it, or when the producer is
// done for.
func TestExactlyOnceAbortRetries(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: io.EOF}, "Log(WARN)", "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: io.EOF}, "Log(WARN)", "Wait(100ms abort)")
	s.step(Waited{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: io.EOF}, "Log(WARN)", "Wait(200ms abort)")
	s.step(Waited{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done(err, retry in 10.1s)")

	// Past the bound: a fatal failure that says the abort failed.
	s.now = s.now.Add(time.Hour)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: io.EOF}, "Log(WARN)", "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.now = s.now.Add(AbortRetryBound - 399*time.Millisecond)
	s.step(TxnEnded{Err: io.EOF}, "Log(WARN)", "Wait(100ms abort)")
	s.step(Waited{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: io.EOF}, "Log(WARN)", "Wait(200ms abort)")
	s.step(Waited{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: io.EOF}, "ForgetTxn", "DropPending", "Done(fatal)")
	var f *TxnFailure
	if !errors.As(s.done.Err, &f) || !errors.Is(f, ErrAbortFailed) || !errors.Is(f, io.EOF) {
		t.Errorf("ends with %v", s.done.Err)
	}

	// The application stops during the wait: the abort ends with the last error.
	s.now = s.now.Add(time.Hour)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: io.EOF}, "Log(WARN)", "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: kerr.CoordinatorLoadInProgress}, "Log(WARN)", "Wait(100ms abort)")
	s.step(Waited{Err: errors.New("stopped")}, "ForgetTxn", "DropPending", "Done(fatal)")
	if !errors.Is(s.done.Err, kerr.CoordinatorLoadInProgress) {
		t.Errorf("ends with %v", s.done.Err)
	}

	// The buffered records could not be failed: no EndTxn, a fatal failure.
	s.now = s.now.Add(time.Hour)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: io.EOF}, "Log(WARN)", "StartAbort")
	s.step(AbortStarted{Err: errWrite}, "ForgetTxn", "DropPending", "Done(fatal)")

	// A fenced producer during the abort is replaced instead.
	s.now = s.now.Add(time.Hour)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: io.EOF}, "Log(WARN)", "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: kerr.ProducerFenced}, "ForgetTxn", "DropPending", "Log(WARN)", "RenewProducer")
	s.step(ProducerRenewed{}, "ForgetTxn", "DropPending", "Done(err, retry in 10.2s)") // the second failure in a row
}

// An error no retry can help aborts what is open and stops the application with it.
func TestExactlyOnceFatalErrorAbortsAndStops(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: kerr.TransactionalIDAuthorizationFailed, Write: true}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: kerr.TransactionalIDAuthorizationFailed}, "ForgetTxn", "DropPending", "Done(fatal)")
	var f *TxnFailure
	if !errors.As(s.done.Err, &f) || !errors.Is(f, kerr.TransactionalIDAuthorizationFailed) {
		t.Errorf("ends with %v", s.done.Err)
	}
	s.now = s.now.Add(time.Hour)
	s.open(1)
	s.step(Commit{}, "Flush")
	s.step(Flushed{Err: kerr.MessageTooLarge, Write: true}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done(fatal)")
	if !errors.As(s.done.Err, &f) || !errors.Is(f, kerr.MessageTooLarge) {
		t.Errorf("ends with %v", s.done.Err)
	}
}

// A fenced producer is replaced and the work redone; a process fenced more than MaxFences times
// within FenceWindow shares its transactional.id with another and stops.
func TestExactlyOnceRenewsAFencedProducer(t *testing.T) {
	s := newCommitScript(t, ExactlyOnce, false)
	fenced := func(want ...string) {
		t.Helper()
		s.process(offs) // again after each drop
		s.step(Commit{}, "Flush")
		s.step(txnThen(1, Flushed{}), "LoadProducer")
		s.step(ProducerLoaded{}, "CommitOffsets(txn 0/0 2)")
		s.step(OffsetsCommitted{Err: kerr.ProducerFenced}, want...)
	}
	for i := range MaxFences {
		fenced("Log(WARN)", "RenewProducer")
		s.step(ProducerRenewed{}, "ForgetTxn", "DropPending", fmt.Sprintf("Done(err, retry in %v)", 10*time.Second+backoff.Delay(i)))
		if !errors.Is(s.done.Err, kerr.ProducerFenced) {
			t.Fatalf("ends with %v", s.done.Err)
		}
		s.now = s.now.Add(time.Second)
	}
	fenced("ForgetTxn", "DropPending", "Done(fatal)")
	if !strings.Contains(s.done.Err.Error(), fmt.Sprintf("fenced %d times within %v", MaxFences+1, FenceWindow)) {
		t.Errorf("ends with %v", s.done.Err)
	}
	// Fences FenceWindow old are forgotten: three renewals, then, when the first is exactly
	// FenceWindow old, a fourth is the third within the window; a fifth half a second later is the
	// fourth.
	s.now = s.now.Add(time.Hour)
	first := s.now
	for range MaxFences {
		fenced("Log(WARN)", "RenewProducer")
		s.step(ProducerRenewed{}, "ForgetTxn", "DropPending", s.doneDesc())
		s.now = s.now.Add(time.Second)
	}
	s.now = first.Add(FenceWindow)
	fenced("Log(WARN)", "RenewProducer")
	s.step(ProducerRenewed{}, "ForgetTxn", "DropPending", s.doneDesc())
	s.now = s.now.Add(500 * time.Millisecond)
	fenced("ForgetTxn", "DropPending", "Done(fatal)")
	s.now = s.now.Add(time.Hour)
	fenced("Log(WARN)", "RenewProducer")
	// A new producer that cannot be initialized stops the application with the shell's error.
	initErr := errors.New("stream: exactly-once with transactional.id …")
	s.step(ProducerRenewed{Err: initErr}, "ForgetTxn", "DropPending", "Done(fatal)")
	if s.done.Err != initErr {
		t.Errorf("ends with %v", s.done.Err)
	}
}

// An EndTxn commit whose outcome is unknown (the broker went away) is told from the committed
// offsets after an abort: all committed, none, or some (a restart must sort it out).
func TestExactlyOnceUnknownOutcome(t *testing.T) {
	// upTo processes up to to, then revokes task0 and fails its transaction commit with cause; the
	// abort that follows ends, and the committed offsets of the partitions that moved (moved) are
	// read.
	upTo := func(s *script, cause error, to, moved commit.Offsets) {
		t.Helper()
		s.process(to)
		s.step(Commit{Reason: Revocation, Revoked: tasks.NewSet(task0)}, "Flush")
		s.step(txnThen(3, Flushed{}), "LoadProducer")
		s.step(ProducerLoaded{}, "CommitOffsets(txn 0/0 2)") // the revoked task's final positions, moved or not
		s.step(OffsetsCommitted{}, "EndTxn(commit)")
		s.step(TxnEnded{Err: cause}, "StartAbort")
		s.step(AbortStarted{}, "EndTxn(abort)")
		acts := s.step(TxnEnded{}, "ForgetTxn", "ReadCommitted")
		if got := acts[1].(ReadCommitted).Moved; !maps.Equal(got, moved) {
			t.Fatalf("reads %v; want %v", got, moved)
		}
	}
	s := newScript(t, ExactlyOnce, false)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 5, tp1: 20}})
	upTo(s, io.EOF, commit.Offsets{tp0: 10}, commit.Offsets{tp0: 10})
	s.step(CommittedRead{Offsets: commit.Offsets{tp0: 10}}, "Log(INFO)", "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")

	upTo(s, kerr.UnknownServerError, commit.Offsets{tp0: 11}, commit.Offsets{tp0: 11})
	s.step(CommittedRead{Err: io.EOF}, "Log(WARN)", "Wait(100ms)")
	s.step(Waited{}, "ReadCommitted")
	s.step(CommittedRead{Err: io.EOF}, "Log(WARN)", "Wait(200ms)")
	s.step(Waited{}, "ReadCommitted")
	acts := s.step(CommittedRead{Offsets: commit.Offsets{tp0: 10}}, "Log(WARN)", "DropPending", "Done(err)")
	if !errors.Is(s.done.Err, kerr.UnknownServerError) {
		t.Errorf("ends with %v", s.done.Err)
	}
	// The commit aborted: the inputs go back to the last one that committed, the resolved one.
	if to := acts[1].(DropPending).To; !maps.Equal(to, commit.Offsets{tp0: 10, tp1: 20}) {
		t.Errorf("rewinds to %v", to)
	}

	// Two partitions moved, one committed: unknown, fatal.
	s.now = s.now.Add(time.Hour)
	upTo(s, io.EOF, commit.Offsets{tp0: 12, tp1: 22}, commit.Offsets{tp0: 12, tp1: 22})
	s.step(CommittedRead{Offsets: commit.Offsets{tp0: 12, tp1: 20}}, "DropPending", "Done(fatal)")
	if !errors.Is(s.done.Err, ErrOutcomeUnknown) || !strings.Contains(s.done.Err.Error(), "some of its offsets are committed and others not") {
		t.Errorf("ends with %v", s.done.Err)
	}
	// The tasks were lost meanwhile: they go, nothing fatal.
	upTo(s, io.EOF, commit.Offsets{tp0: 12}, commit.Offsets{tp0: 12})
	lost := &commit.LostError{Tasks: tasks.NewSet(task0), Err: kerr.FencedMemberEpoch}
	s.step(CommittedRead{Err: lost}, "DropPending", "Done(err)")
	// The broker stays away past the bound: unknown, fatal.
	upTo(s, io.EOF, commit.Offsets{tp0: 12}, commit.Offsets{tp0: 12})
	s.now = s.now.Add(AbortRetryBound)
	s.step(CommittedRead{Err: io.EOF}, "DropPending", "Done(fatal)")
	// The application stops while waiting: unknown, fatal.
	upTo(s, io.EOF, commit.Offsets{tp0: 12}, commit.Offsets{tp0: 12})
	s.step(CommittedRead{Err: io.EOF}, "Log(WARN)", "Wait(100ms)")
	s.step(Waited{Err: errors.New("stopped")}, "DropPending", "Done(fatal)")
	// The abort fails: fatal.
	s.process(commit.Offsets{tp0: 12})
	s.step(Commit{}, "Flush")
	s.step(txnThen(3, Flushed{}), "LoadProducer")
	s.step(ProducerLoaded{}, "CommitOffsets(txn 0/0 1)")
	s.step(OffsetsCommitted{}, "EndTxn(commit)")
	s.step(TxnEnded{Err: io.EOF}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: kerr.TransactionalIDAuthorizationFailed}, "ForgetTxn", "DropPending", "Done(fatal)")
}

// With nothing moved, an unknown outcome cannot be told.
func TestExactlyOnceUnknownOutcomeWithoutOffsets(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	s.activate(CommittedInputs{})
	s.step(Commit{}, "Flush")
	s.step(txnThen(3, Flushed{}), "LoadProducer")
	s.step(ProducerLoaded{}, "CommitOffsets(txn 0/0 0)")
	s.step(OffsetsCommitted{}, "EndTxn(commit)")
	s.step(TxnEnded{Err: io.EOF}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done(fatal)")
	if !errors.Is(s.done.Err, ErrOutcomeUnknown) || !errors.Is(s.done.Err, io.EOF) {
		t.Errorf("ends with %v", s.done.Err)
	}
	// An EndTxn error the broker did answer is not unknown: INVALID_TXN_STATE replaces the producer.
	s.now = s.now.Add(time.Hour)
	s.process(offs)
	s.step(Commit{}, "Flush")
	s.step(txnThen(3, Flushed{}), "LoadProducer")
	s.step(ProducerLoaded{}, "CommitOffsets(txn 0/0 2)")
	s.step(OffsetsCommitted{}, "EndTxn(commit)")
	s.step(TxnEnded{Err: kerr.InvalidTxnState}, "Log(WARN)", "RenewProducer")
}

// R7: after a fatal error a revocation under exactly-once aborts and commits nothing; under
// at-least-once the records processed before the failure are committed as usual.
func TestDirtyRevocation(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	s.open(2)
	s.step(Commit{Reason: Revocation, Revoked: tasks.NewSet(task0), Dirty: true}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done")
	if s.m.TxnOpen() {
		t.Error("a transaction is open after the abort")
	}
	// Nothing open: nothing to end, what is pending is still dropped.
	s.step(Commit{Reason: Revocation, Revoked: tasks.NewSet(task0), Dirty: true}, "ForgetTxn", "DropPending", "Done")
	s.open(0)
	s.step(Commit{Reason: Revocation, Revoked: tasks.NewSet(task0), Dirty: true}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	// A failed abort does not fail a dirty close: nothing is committed either way.
	s.step(TxnEnded{Err: kerr.TransactionalIDAuthorizationFailed}, "ForgetTxn", "DropPending", "Log(WARN)", "Done")

	a := newScript(t, AtLeastOnce, true)
	a.step(Commit{Reason: Revocation, Revoked: tasks.NewSet(task0), Dirty: true}, "Flush")
}

func TestAbortOpen(t *testing.T) {
	a := newScript(t, AtLeastOnce, true)
	a.step(AbortOpen{}, "Done")
	if a.m.Busy() {
		t.Error("busy after an abort under at-least-once")
	}
	s := newScript(t, ExactlyOnce, false)
	s.step(AbortOpen{}, "Done") // nothing open, nothing dropped
	s.open(1)
	s.step(AbortOpen{}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done")
	s.open(1)
	s.step(AbortOpen{}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{Err: kerr.TransactionalIDAuthorizationFailed}, "ForgetTxn", "DropPending", "Done(err)")
	if !s.m.CommitDue(s.now) || s.m.CommitDue(s.now.Add(-time.Millisecond)) {
		t.Error("an abort moved the periodic commit")
	}
}

// Inputs out of turn are the shell's bug: a fatal, typed end, never a panic.
func TestInputsOutOfTurn(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	s.step(Flushed{}, "Done(fatal)")
	s.step(Commit{}, "Flush")
	s.step(Commit{}, "Done(fatal)")
	s.step(Applied{}, "Done(fatal)")
	if s.m.Busy() {
		t.Error("busy after a fatal end")
	}
	for _, in := range []Input{Checkpointed{}, ProducerLoaded{}, OffsetsCommitted{}, TxnEnded{},
		AbortStarted{}, CommittedRead{}, ProducerRenewed{}, Waited{}} {
		s.m.Step(s.now, Commit{})
		s.step(in, "Done(fatal)")
		if !strings.Contains(s.done.Err.Error(), "out of turn") {
			t.Errorf("%T: %v", in, s.done.Err)
		}
	}
}
