package streammachine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The task lifecycle as Kafka Streams keeps it on a member (TaskManager.handleAssignment): new
// tasks are created, tasks that change role are recycled without closing their stores, tasks that
// leave are suspended, and closed once they stayed away past KeepSuspended (Kafka Streams closes
// them at once; keeping them a while spares a restore when a 4.2 or 4.3 broker takes a standby away
// and hands it back as active in the next assignment).

func ids(s ...string) tasks.Set {
	out := make([]tasks.ID, len(s))
	for i, x := range s {
		id, err := tasks.ParseID(x)
		if err != nil {
			panic(err)
		}
		out[i] = id
	}
	return tasks.NewSet(out...)
}

func id(s string) tasks.ID {
	x, err := tasks.ParseID(s)
	if err != nil {
		panic(err)
	}
	return x
}

func held(m *Machine) string {
	var out []string
	for _, x := range m.Held() {
		st, _ := m.Task(x)
		out = append(out, x.String()+":"+st.String())
	}
	return strings.Join(out, " ")
}

func TestTaskLifecycle(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_0", "0_0"), Standby: ids("1_1")}}, "Open(0_0)")
	s.step(TaskOpened{ID: id("0_0")}, "Open(1_0)")
	s.step(TaskOpened{ID: id("1_0")}, "Open(1_1)")
	s.step(TaskOpened{ID: id("1_1")}, "Role(0_0 active)", "Role(1_0 active)", "Role(1_1 standby)", "Done")
	if got := held(s.m); got != "0_0:restoring 1_0:restoring 1_1:standby" {
		t.Fatalf("held %s", got)
	}

	// Roles change without reopening: the active task that becomes a standby stops processing.
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1", "0_0"), Warmup: ids("1_0")}},
		"Role(0_0 active)", "Role(1_0 standby stop)", "Role(1_1 active)", "Done")

	// 1_0 and 0_0 leave: suspended at once, kept until KeepSuspended passed, then closed.
	left := s.now
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1")}}, "Suspend(0_0)", "Suspend(1_0)", "Role(1_1 active)", "Done")
	if got := held(s.m); got != "0_0:suspended 1_0:suspended 1_1:restoring" {
		t.Fatalf("held %s", got)
	}
	if KeepSuspended != 30*time.Second {
		t.Fatalf("KeepSuspended is %v; the docs say a suspended task is kept 30 s", KeepSuspended)
	}
	s.now = left.Add(KeepSuspended - time.Millisecond)
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1")}}, "Role(1_1 active)", "Done")
	s.step(CloseExpired{}, "Done")
	// 1_0 comes back before its time: its stores were kept, no reopening.
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1", "1_0")}}, "Role(1_0 active)", "Role(1_1 active)", "Done")
	s.now = left.Add(KeepSuspended)
	s.step(CloseExpired{}, "Close(0_0)", "Done")
	if got := held(s.m); got != "1_0:restoring 1_1:restoring" {
		t.Fatalf("held %s", got)
	}
	// 1_0 leaves again: its suspension starts anew (KeepSuspended from now), and an assignment past
	// it closes it.
	again := s.now
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1")}}, "Suspend(1_0)", "Role(1_1 active)", "Done")
	s.now = again.Add(KeepSuspended - time.Millisecond)
	s.step(CloseExpired{}, "Done")
	s.now = again.Add(KeepSuspended)
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1")}}, "Close(1_0)", "Role(1_1 active)", "Done")
	if _, ok := s.m.Task(id("1_0")); ok {
		t.Error("a closed task is still held")
	}

	// Losing every task closes them all.
	s.step(AllLost{}, "Close(1_1)", "Done")
	if len(s.m.Held()) != 0 {
		t.Errorf("held after losing all: %s", held(s.m))
	}
}

// With several stream threads in the process (CloseLeaving), a task that leaves the assignment is
// closed at once, before any new task opens: the thread handed it next opens its store directory,
// which is open in one thread at a time. Roles still change without reopening.
func TestTaskLifecycleClosingLeavers(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.m = New(Config{Guarantee: AtLeastOnce, CommitInterval: 10 * time.Second, Backoff: backoff, CloseLeaving: true})
	s.m.Step(t0, Started{})
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0"), Standby: ids("1_1")}}, "Open(0_0)")
	s.step(TaskOpened{ID: id("0_0")}, "Open(1_1)")
	s.step(TaskOpened{ID: id("1_1")}, "Role(0_0 active)", "Role(1_1 standby)", "Done")
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("1_1"), Standby: ids("0_0")}},
		"Role(0_0 standby stop)", "Role(1_1 active)", "Done")
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_1")}}, "Close(0_0)", "Close(1_1)", "Open(0_1)")
	s.step(TaskOpened{ID: id("0_1")}, "Role(0_1 active)", "Done")
	if got := held(s.m); got != "0_1:restoring" {
		t.Fatalf("held %s", got)
	}
	s.step(CloseExpired{}, "Done")
}

// A task whose stores cannot be opened stops the application at that task: the tasks after it are
// not opened and no role is set; what was opened is held (its stores close with the rest).
func TestTaskThatCannotOpen(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	boom := errors.New("damaged")
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0", "0_1", "0_2")}}, "Open(0_0)")
	s.step(TaskOpened{ID: id("0_0")}, "Open(0_1)")
	s.step(TaskOpened{ID: id("0_1"), Err: boom}, "Done(fatal)")
	if s.done.Err != boom {
		t.Errorf("ends with %v", s.done.Err)
	}
	if got := held(s.m); got != "0_0:standby" {
		t.Errorf("held %s; want the opened task, with no role (nothing processes)", got)
	}
	// The next assignment opens what is missing.
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0", "0_1")}}, "Open(0_1)")
	s.step(TaskOpened{ID: id("0_1")}, "Role(0_0 active)", "Role(0_1 active)", "Done")
}

// Results out of turn are the shell's bug: a fatal, typed end, never a panic.
func TestTaskInputsOutOfTurn(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.step(TaskOpened{ID: id("0_0")}, "Done(fatal)")
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0", "0_1")}}, "Open(0_0)")
	s.step(TaskOpened{ID: id("0_1")}, "Done(fatal)")
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0")}}, "Done(fatal)")
	if !strings.Contains(s.done.Err.Error(), "while another") {
		t.Errorf("ends with %v", s.done.Err)
	}
	// Losing everything ends the assignment under way.
	s.step(AllLost{}, "Done")
	s.step(Assigned{Assignment: tasks.Assignment{Standby: ids("0_1")}}, "Open(0_1)")
	s.step(TaskOpened{ID: id("0_1")}, "Role(0_1 standby)", "Done")
	for _, st := range []TaskState{TaskRestoring, TaskRunning, TaskStandby, TaskSuspended, 0} {
		if st.String() == "" || slices.Contains([]string{"restoring", "running", "standby", "suspended"}, st.String()) != (st != 0) {
			t.Errorf("state %d named %q", int(st), st.String())
		}
	}
}

// An active task restores first and processes once the consumer says its stores caught up: its
// Init runs then, one task at a time, as Kafka Streams moves a task from RESTORING to RUNNING;
// whatever stops it takes it back, so that its Init runs again.
func TestTasksStartOnceRestored(t *testing.T) {
	s := newScript(t, ExactlyOnce, false)
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0", "0_1"), Standby: ids("1_1")}}, "Open(0_0)")
	s.step(TaskOpened{ID: id("0_0")}, "Open(0_1)")
	s.step(TaskOpened{ID: id("0_1")}, "Open(1_1)")
	s.step(TaskOpened{ID: id("1_1")}, "Role(0_0 active)", "Role(0_1 active)", "Role(1_1 standby)", "Done")
	if got := held(s.m); got != "0_0:restoring 0_1:restoring 1_1:standby" {
		t.Fatalf("held %s", got)
	}
	// A standby and a task not held are not started; 0_1 is still restoring.
	s.step(Ready{Tasks: ids("0_0", "1_1", "9_9")}, "Init(0_0)")
	s.step(Ready{Tasks: ids("0_1")}, "Done(fatal)") // the shell's bug: a Ready inside a Ready
	s.step(TaskInitialized{ID: id("0_1")}, "Done(fatal)")
	s.step(TaskInitialized{ID: id("0_0")}, "Done")
	if got := held(s.m); got != "0_0:running 0_1:restoring 1_1:standby" || !s.m.Running(id("0_0")) || s.m.Running(id("0_1")) {
		t.Fatalf("held %s", got)
	}
	s.step(Ready{Tasks: ids("0_0")}, "Done") // running already
	s.step(Ready{Tasks: ids("0_0", "0_1")}, "Init(0_1)")
	boom := errors.New("Init failed")
	s.step(TaskInitialized{ID: id("0_1"), Err: boom}, "Done(fatal)")
	if s.done.Err != boom || s.m.Running(id("0_1")) {
		t.Fatalf("ends with %v, 0_1 running %v", s.done.Err, s.m.Running(id("0_1")))
	}
	s.step(Ready{Tasks: ids("0_1")}, "Init(0_1)")
	s.step(TaskInitialized{ID: id("0_1")}, "Done")

	// An abort stops every running task: their punctuations go, their Init runs again.
	s.m.Schedule(id("0_0"), false, time.Second, 0)
	s.open(1)
	s.step(AbortOpen{}, "StartAbort")
	s.step(AbortStarted{}, "EndTxn(abort)")
	s.step(TxnEnded{}, "ForgetTxn", "DropPending", "Done")
	if got := held(s.m); got != "0_0:restoring 0_1:restoring 1_1:standby" || len(s.m.Schedules(id("0_0"))) != 0 {
		t.Fatalf("after an abort: held %s, punctuations %d", got, len(s.m.Schedules(id("0_0"))))
	}
	s.step(Ready{Tasks: ids("0_0", "0_1")}, "Init(0_0)")
	s.step(TaskInitialized{ID: id("0_0")}, "Init(0_1)")
	s.step(TaskInitialized{ID: id("0_1")}, "Done")

	// A revocation that committed stops the revoked tasks; one that failed stops nothing.
	s.step(Commit{Reason: Revocation, Revoked: ids("0_1")}, "Flush")
	s.step(Flushed{Err: kerr.TransactionAbortable, Write: true}, "Log(WARN)", "ForgetTxn", "DropPending", "Done(err)")
	s.step(Ready{Tasks: ids("0_0", "0_1")}, "Init(0_0)")
	s.step(TaskInitialized{ID: id("0_0")}, "Init(0_1)")
	s.step(TaskInitialized{ID: id("0_1")}, "Done")
	s.step(Commit{Reason: Revocation, Revoked: ids("0_1")}, "Flush")
	s.step(Flushed{}, "CommitOffsets(0)")
	s.step(OffsetsCommitted{}, "ForgetTxn", "Apply")
	s.step(Applied{}, "Done")
	if got := held(s.m); got != "0_0:running 0_1:restoring 1_1:standby" {
		t.Fatalf("after a revocation: held %s", got)
	}

	// A task the consumer starts again from its committed offsets stops; a demoted one too.
	s.m.Schedule(id("0_0"), false, time.Second, 0)
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0", "0_1"), Standby: ids("1_1")}, Committed: CommittedInputs{Tasks: ids("0_0")}},
		"Role(0_0 active stop)", "Role(0_1 active)", "Role(1_1 standby)", "Done")
	if got := held(s.m); got != "0_0:restoring 0_1:restoring 1_1:standby" || len(s.m.Schedules(id("0_0"))) != 0 {
		t.Fatalf("after a restart: held %s, punctuations %d", got, len(s.m.Schedules(id("0_0"))))
	}
	s.step(Ready{Tasks: ids("0_0")}, "Init(0_0)")
	s.step(TaskInitialized{ID: id("0_0")}, "Done")
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_1"), Standby: ids("0_0", "1_1")}},
		"Role(0_0 standby stop)", "Role(0_1 active)", "Role(1_1 standby)", "Done")
	// A suspended task keeps no punctuation.
	s.step(Assigned{Assignment: tasks.Assignment{Active: ids("0_0")}}, "Suspend(0_1)", "Suspend(1_1)", "Role(0_0 active)", "Done")
	s.step(Ready{Tasks: ids("0_0")}, "Init(0_0)")
	s.step(TaskInitialized{ID: id("0_0")}, "Done")
	s.m.Schedule(id("0_0"), false, time.Second, 0)
	s.step(Assigned{}, "Suspend(0_0)", "Done")
	if len(s.m.Schedules(id("0_0"))) != 0 || s.m.Running(id("0_0")) {
		t.Error("a suspended task is running or keeps its punctuations")
	}
}

// RETRY of a failed write found between batches takes the tasks back to their last commit, as the
// commit step's does; during a commit it is the shell's bug.
func TestRetryWriteBetweenBatches(t *testing.T) {
	s := newCommitScript(t, AtLeastOnce, true)
	s.step(Ready{Tasks: ids("0_0")}, "Init(0_0)")
	s.step(TaskInitialized{ID: task0}, "Done")
	acts := s.step(RetryWrite{Err: errRetriable}, "RetryFromLastCommit", "Done")
	if r := acts[0].(RetryFromLastCommit); r.Err != errRetriable || len(r.To) != 0 {
		t.Errorf("retries %v from %v; want the error, from where consumption started", r.Err, r.To)
	}
	if s.m.Running(task0) || s.m.collectOffsetsLen() != 0 {
		t.Error("the task goes on running, or its positions were not taken back")
	}
	s.step(Commit{}, "Flush")
	s.step(RetryWrite{Err: errRetriable}, "Done(fatal)")
}
