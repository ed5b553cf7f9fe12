package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func assign(active, standby []tasks.ID) tasks.Assignment {
	return tasks.Assignment{Active: tasks.NewSet(active...), Standby: tasks.NewSet(standby...)}
}

func TestOnTasksAssignedOpensSwitchesAndCloses(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, clk := builtApp(t, testProcs(), WithStores(k))
	a.stateDir = t.TempDir()
	a.cfg.Runtime.StateCleanupDelay = time.Minute
	cb := (*taskCalls)(a)
	ctx := context.Background()

	mustNotErr(t, cb.OnTasksAssigned(ctx, assign([]tasks.ID{tid("1", 0), tid("0", 0)}, []tasks.ID{tid("1", 1)}), false))
	if len(a.tasks) != 3 || !a.tasks[tid("1", 0)].active || a.tasks[tid("1", 1)].active || !a.tasks[tid("0", 0)].active {
		t.Fatalf("tasks %v", a.tasks)
	}
	t10 := a.tasks[tid("1", 0)]
	if len(t10.stores) != 2 || t10.byChangelog[countsLog] != t10.stores["counts"] || t10.byChangelog[sumsLog] != t10.stores["sums"] {
		t.Fatalf("stores of 1_0: %v", t10.stores)
	}
	s := t10.stores["counts"]
	if s.changelog != (tasks.TopicPartition{Topic: countsLog, Partition: 0}) || s.loc.Dir != filepath.Join(a.stateDir, "1_0", "counts") ||
		s.loc.ApplicationID != testApp || s.loc.Task != tid("1", 0) || s.loc.Store != "counts" || s.acked.Load() != -1 || s.checkpointed != -1 {
		t.Errorf("store %+v", s)
	}
	if len(a.tasks[tid("1", 1)].stores) != 2 || len(a.tasks[tid("0", 0)].stores) != 0 || len(k.opened) != 4 {
		t.Errorf("a standby's stores are opened too: %d opens", len(k.opened))
	}
	if a.tasks[tid("0", 0)].streamTime != -1 {
		t.Error("a new task has no stream time")
	}

	// 1_0 becomes a standby, 1_1 active: the former active task stops processing.
	startRunning(t, a, t10.id)
	schedule(a, t10)
	t11 := a.tasks[tid("1", 1)]
	mustNotErr(t, cb.OnTasksAssigned(ctx, assign([]tasks.ID{tid("1", 1), tid("0", 0)}, []tasks.ID{tid("1", 0)}), false))
	if a.tasks[tid("1", 0)] != t10 || t10.active || running(a, t10) || scheduled(a, t10) != 0 {
		t.Errorf("active → standby: %+v", t10)
	}
	if a.tasks[tid("1", 1)] != t11 || !t11.active || len(k.opened) != 4 {
		t.Errorf("standby → active keeps its stores: %+v, %d opens", t11, len(k.opened))
	}
	// Staying active keeps its state.
	startRunning(t, a, t11.id)
	mustNotErr(t, cb.OnTasksAssigned(ctx, assign([]tasks.ID{tid("1", 1), tid("0", 0)}, []tasks.ID{tid("1", 0)}), false))
	if !running(a, t11) {
		t.Error("an active task that stays active keeps processing")
	}

	// 1_0 and 0_0 leave: kept, stopped, for keepSuspended (a standby may come straight back as
	// active); an assignment after that closes them, and their directories are scheduled for
	// deletion.
	mustNotErr(t, cb.OnTasksAssigned(ctx, assign([]tasks.ID{tid("1", 1)}, nil), false))
	if kept := a.tasks[tid("1", 0)]; kept != t10 || kept.active || taskState(a, tid("1", 0)) != sm.TaskSuspended || len(a.tasks) != 3 {
		t.Fatalf("a task that leaves is kept a while: tasks %v", a.tasks)
	}
	if t10.stores["counts"].eng.(*countingEngine).closes != 0 {
		t.Fatal("a kept task's stores were closed")
	}
	if t00 := a.tasks[tid("0", 0)]; t00.active || running(a, t00) || taskState(a, tid("0", 0)) != sm.TaskSuspended {
		t.Errorf("an active task that leaves stops: %+v", t00)
	}
	clk.t = clk.t.Add(sm.KeepSuspended)
	mustNotErr(t, cb.OnTasksAssigned(ctx, assign([]tasks.ID{tid("1", 1)}, nil), false))
	if a.tasks[tid("1", 0)] != nil || a.tasks[tid("0", 0)] != nil || len(a.tasks) != 1 {
		t.Fatalf("tasks %v", a.tasks)
	}
	for _, e := range k.engines[:2] {
		if e.closes != 1 {
			t.Errorf("engine closed %d times", e.closes)
		}
	}
	if at, ok := a.proc.cleanups[tid("1", 0)]; !ok || !at.Equal(clk.t.Add(time.Minute)) || len(a.proc.cleanups) != 1 {
		t.Errorf("cleanups %v", a.proc.cleanups)
	}
	// Assigned again before its cleanup: the cleanup is dropped.
	mustNotErr(t, cb.OnTasksAssigned(ctx, assign([]tasks.ID{tid("1", 1)}, []tasks.ID{tid("1", 0)}), false))
	if _, ok := a.proc.cleanups[tid("1", 0)]; ok || a.tasks[tid("1", 0)] == nil {
		t.Errorf("cleanups %v", a.proc.cleanups)
	}

	mustNotErr(t, cb.OnTasksRevoked(ctx, tasks.NewSet(tid("1", 1))))
	mustNotErr(t, cb.OnAllTasksLost(ctx, tasks.Assignment{}))
	if len(a.tasks) != 0 || len(a.proc.cleanups) != 2 {
		t.Errorf("after losing all: tasks %v cleanups %v", a.tasks, a.proc.cleanups)
	}
	for i, e := range k.engines {
		if e.closes != 1 {
			t.Errorf("engine %d closed %d times", i, e.closes)
		}
	}
	if k.destroyed != nil {
		t.Error("closing a task destroys nothing")
	}
}

func TestClosingMemoryTasksSchedulesNoCleanup(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	cb := (*taskCalls)(a)
	mustNotErr(t, cb.OnTasksAssigned(context.Background(), assign([]tasks.ID{tid("1", 0)}, nil), false))
	mustNotErr(t, cb.OnAllTasksLost(context.Background(), tasks.Assignment{}))
	if len(a.proc.cleanups) != 0 || len(a.tasks) != 0 {
		t.Errorf("cleanups %v tasks %v", a.proc.cleanups, a.tasks)
	}
}

func TestOnTasksAssignedFailsWhenAStoreCannotOpen(t *testing.T) {
	k := &fakeKind{openErrs: []error{nil, errBoom}}
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(k))
	err := (*taskCalls)(a).OnTasksAssigned(context.Background(), assign([]tasks.ID{tid("1", 0)}, nil), false)
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "open" || !errors.Is(err, errBoom) || a.fatalErr() != err {
		t.Fatalf("got %v, fatal %v", err, a.fatalErr())
	}
	if len(a.tasks) != 0 || len(k.engines) != 1 || k.engines[0].closes != 1 {
		t.Errorf("the store opened before the failure is closed: tasks %v, engines %d", a.tasks, len(k.engines))
	}
}

func TestOpenTaskStartsFromTheEnginePosition(t *testing.T) {
	pos := int64(42)
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(&fakeKind{position: &pos}))
	stores, err := a.assignTasks(context.Background(), tasks.Assignment{Active: tasks.NewSet(tid("1", 1))}, sm.CommittedInputs{})
	mustNotErr(t, err)
	tk := a.tasks[tid("1", 1)]
	if tk.stores["counts"].checkpointed != 42 || tk.stores["counts"].loc.Dir != "" {
		t.Errorf("checkpointed %d dir %q", tk.stores["counts"].checkpointed, tk.stores["counts"].loc.Dir)
	}
	// The consumer fetches each changelog from where its store stands, and nothing else.
	want := map[tasks.TopicPartition]int64{{Topic: sumsLog, Partition: 1}: 42, {Topic: countsLog, Partition: 1}: 42}
	if !maps.Equal(stores, want) {
		t.Errorf("store positions %v, want %v", stores, want)
	}
	// A new memory store has no position: its changelog is read from its first offset.
	b, _ := newTestApp(t, testConfig(), testProcs())
	stores, err = b.assignTasks(context.Background(), tasks.Assignment{Active: tasks.NewSet(tid("1", 1))}, sm.CommittedInputs{})
	mustNotErr(t, err)
	if len(stores) != 0 {
		t.Errorf("new memory stores have positions %v", stores)
	}
}

func TestOpenEngineDefaultFails(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	loc := store.Location{Task: tid("1", 0), Store: "counts"}
	k := &fakeKind{openErrs: []error{errBoom}}
	_, err := a.openEngine(k, loc)
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "open" || se.Loc != loc || !errors.Is(err, errBoom) || len(k.destroyed) != 0 {
		t.Fatalf("got %v", err)
	}
	inner := &store.Error{Op: "read", Loc: loc, Err: store.ErrCorrupt}
	_, err = a.openEngine(&fakeKind{openErrs: []error{inner}}, loc)
	if err != inner {
		t.Errorf("a store.Error is passed on as it is: %v", err)
	}
}

func TestOpenEngineWipeAndRestore(t *testing.T) {
	var asked []*store.Error
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStoreErrorHandler(func(err *store.Error) StoreAction {
		asked = append(asked, err)
		return WipeAndRestore
	}))
	loc := store.Location{Task: tid("1", 0), Store: "counts", Dir: "/d"}
	k := &fakeKind{openErrs: []error{store.ErrCorrupt}}
	eng, err := a.openEngine(k, loc)
	if err != nil || eng == nil {
		t.Fatalf("got %v", err)
	}
	if len(asked) != 1 || asked[0].Op != "open" || !errors.Is(asked[0], store.ErrCorrupt) || len(k.destroyed) != 1 || k.destroyed[0] != loc || len(k.opened) != 2 {
		t.Errorf("asked %v destroyed %v opened %d", asked, k.destroyed, len(k.opened))
	}

	_, err = a.openEngine(&fakeKind{openErrs: []error{store.ErrCorrupt}, destroyErr: errBoom}, loc)
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "wipe" || !errors.Is(err, errBoom) {
		t.Errorf("a failed wipe: %v", err)
	}
	_, err = a.openEngine(&fakeKind{openErrs: []error{store.ErrCorrupt, errBoom}}, loc)
	if !errors.As(err, &se) || se.Op != "open" || !errors.Is(err, errBoom) {
		t.Errorf("a failed reopen: %v", err)
	}

	b, _ := newTestApp(t, testConfig(), testProcs(), WithStoreErrorHandler(func(*store.Error) StoreAction { return FailOnStoreError }))
	k = &fakeKind{openErrs: []error{store.ErrCorrupt}}
	if _, err := b.openEngine(k, loc); !errors.Is(err, store.ErrCorrupt) || len(k.destroyed) != 0 {
		t.Errorf("FailOnStoreError: %v", err)
	}
}

func TestCleanupDue(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, clk := newTestApp(t, testConfig(), testProcs(), WithStores(k, "counts"))
	a.stateDir = t.TempDir()
	for _, d := range []string{"1_0", "1_1", "1_2", "1_3"} {
		mustNotErr(t, os.MkdirAll(filepath.Join(a.stateDir, d, "counts"), 0o755))
	}
	now := clk.t
	a.proc.cleanups[tid("1", 0)] = now.Add(-time.Second) // due
	a.proc.cleanups[tid("1", 1)] = now                   // due now
	a.proc.cleanups[tid("1", 2)] = now.Add(time.Millisecond)
	a.proc.cleanups[tid("1", 3)] = now.Add(-time.Second) // due, but held again
	a.tasks[tid("1", 3)] = &task{id: tid("1", 3)}
	a.cleanupDue(now)
	for d, want := range map[string]bool{"1_0": false, "1_1": false, "1_2": true, "1_3": true} {
		if _, err := os.Stat(filepath.Join(a.stateDir, d)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", d, err == nil, want)
		}
	}
	if len(a.proc.cleanups) != 2 {
		t.Errorf("cleanups left %v", a.proc.cleanups)
	}
	// Only the persistent store is destroyed, at its own directory.
	if len(k.destroyed) != 2 {
		t.Fatalf("destroyed %v", k.destroyed)
	}
	for _, loc := range k.destroyed {
		if loc.Store != "counts" || loc.ApplicationID != testApp || loc.Dir != filepath.Join(a.stateDir, loc.Task.String(), "counts") {
			t.Errorf("destroyed %+v", loc)
		}
	}
	k.destroyErr = errBoom
	a.cleanupDue(now.Add(time.Hour)) // a failed Destroy still removes the directory
	if _, err := os.Stat(filepath.Join(a.stateDir, "1_2")); err == nil || len(a.proc.cleanups) != 1 {
		t.Errorf("1_2 kept after a failed Destroy; cleanups %v", a.proc.cleanups)
	}
}

func TestScanOldTasks(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	a.cfg.Runtime.StateCleanupDelay = time.Hour
	a.stateDir = t.TempDir()
	for _, d := range []string{"1_0", "junk", "0_7"} {
		mustNotErr(t, os.Mkdir(filepath.Join(a.stateDir, d), 0o755))
	}
	mustNotErr(t, os.WriteFile(filepath.Join(a.stateDir, "1_1"), nil, 0o644))
	// The files' times do not matter: one older than the start, one newer (a clock set back).
	old, newer := a.now().Add(-24*time.Hour), a.now().Add(24*time.Hour)
	mustNotErr(t, os.Chtimes(filepath.Join(a.stateDir, "1_0"), old, old))
	mustNotErr(t, os.Chtimes(filepath.Join(a.stateDir, "0_7"), newer, newer))
	a.scanOldTasks()
	due := a.now().Add(time.Hour)
	if len(a.proc.cleanups) != 2 || !a.proc.cleanups[tid("1", 0)].Equal(due) || !a.proc.cleanups[tid("0", 7)].Equal(due) {
		t.Errorf("cleanups %v; want 1_0 and 0_7 (not the file 1_1 or junk) due one delay after the start, %v", a.proc.cleanups, due)
	}
	b, _ := newTestApp(t, testConfig(), testProcs())
	b.stateDir = filepath.Join(t.TempDir(), "missing")
	b.scanOldTasks()
	if len(b.proc.cleanups) != 0 {
		t.Error("a missing directory has no tasks")
	}
}

func TestCloseAllStoresCheckpointsStandbysWhenClean(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(k))
	a.stateDir = t.TempDir()
	act := activeTask(t, a, tid("1", 0))
	sb := activeTask(t, a, tid("1", 1))
	sb.active = false
	for _, tk := range []*task{act, sb} {
		for _, s := range tk.stores {
			s.ackedAt(4)
		}
	}
	a.closeAllStores()
	if len(a.tasks) != 0 {
		t.Fatalf("tasks %v", a.tasks)
	}
	for _, s := range sb.stores {
		if s.checkpointed != 5 {
			t.Errorf("standby %s checkpointed %d, want 5", s.name, s.checkpointed)
		}
	}
	for _, s := range act.stores {
		if s.checkpointed != -1 {
			t.Errorf("an active task left at close was revoked (checkpointed) already, or failed: %s checkpointed %d", s.name, s.checkpointed)
		}
	}

	// After a failed write nothing is checkpointed.
	b, _ := newTestApp(t, testConfig(), testProcs(), WithStores(&fakeKind{persistent: true}))
	b.stateDir = t.TempDir()
	sb = activeTask(t, b, tid("1", 1))
	sb.active = false
	sb.stores["counts"].ackedAt(4)
	b.produceErr.Store(&ProduceError{Err: errBoom})
	b.closeAllStores()
	if sb.stores["counts"].checkpointed != -1 {
		t.Error("checkpointed after a failed write")
	}

	// Memory stores are never checkpointed.
	c, _ := newTestApp(t, testConfig(), testProcs(), WithStores(&fakeKind{}))
	sb = activeTask(t, c, tid("1", 1))
	sb.active = false
	sb.stores["counts"].ackedAt(4)
	c.closeAllStores()
	if sb.stores["counts"].checkpointed != -1 {
		t.Error("a memory store was checkpointed")
	}
}

func TestCheckpointOfATaskSkipsMemoryStores(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(k, "counts"))
	a.stateDir = t.TempDir()
	tk := activeTask(t, a, tid("1", 0))
	tk.stores["counts"].ackedAt(1)
	tk.stores["sums"].ackedAt(1)
	mustNotErr(t, a.checkpoint(tk))
	if tk.stores["counts"].checkpointed != 2 || tk.stores["sums"].checkpointed != -1 {
		t.Errorf("checkpointed %d %d", tk.stores["counts"].checkpointed, tk.stores["sums"].checkpointed)
	}
	tk.stores["counts"].ackedAt(5)
	k.engines[0].err = errBoom
	if err := a.checkpoint(tk); !errors.Is(err, errBoom) {
		t.Errorf("got %v", err)
	}
}

// A restarted process must keep the state of its tasks at least until the group had a chance to
// assign them again (Kafka Streams' cleaner first runs state.cleanup.delay.ms after start), and a
// store written a minute ago is not "unchanged for state.cleanup.delay.ms".
func TestRestartKeepsRecentlyWrittenTaskState(t *testing.T) {
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	taskDir := filepath.Join(cfg.StateDir, testApp, "1_0")
	mustNotErr(t, os.MkdirAll(filepath.Join(taskDir, "counts"), 0o755))
	data := filepath.Join(taskDir, "counts", "data")
	mustNotErr(t, os.WriteFile(data, []byte("written a minute ago"), 0o644))
	now := time.Now()
	old := now.Add(-time.Hour) // the task's directory was created an hour ago ...
	mustNotErr(t, os.Chtimes(taskDir, old, old))
	recent := now.Add(-time.Minute) // ... and its store was written a minute ago
	mustNotErr(t, os.Chtimes(data, recent, recent))

	a, clk := newTestApp(t, cfg, testProcs(), WithStores(&fakeKind{persistent: true}))
	clk.t = now
	mustNotErr(t, a.openStateDir())
	defer a.lock.release()
	a.mu.Lock()
	a.cleanupDue(a.now()) // the first between(), before the member's first assignment
	a.mu.Unlock()
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("BUG (stream/callbacks.go scanOldTasks/cleanupDue): the store of task 1_0, written a minute ago, was deleted "+
			"at the first loop iteration after a restart, before the group could assign the task back: scanOldTasks dates a "+
			"task by its directory's mtime (which changes only when an entry is added or removed directly in it, not when the "+
			"store's files change) and cleanupDue deletes at once what is past that date + state.cleanup.delay.ms (%v)", err)
	}
}

func TestCloseAndCleanupWarnOnlyOnFailures(t *testing.T) {
	logs, opt := recordLogs()
	k := &fakeKind{persistent: true}
	a, clk := newTestApp(t, testConfig(), testProcs(), WithStores(k, "counts"), opt)
	a.stateDir = t.TempDir()
	sb := activeTask(t, a, tid("1", 0))
	sb.active = false
	sb.stores["counts"].ackedAt(1)
	if err := a.closeAllStores(); err != nil {
		t.Fatalf("a clean close: %v", err)
	}
	if w := logs.warnings(); len(w) != 0 {
		t.Fatalf("a clean close warned: %v", w)
	}
	// A checkpoint that fails and a store that fails to close are logged, and the task still goes.
	sb = activeTask(t, a, tid("1", 0))
	sb.active = false
	sb.stores["counts"].ackedAt(5)
	sb.stores["counts"].eng.(*countingEngine).err = errBoom
	mustNotErr(t, sb.stores["sums"].eng.Close())
	// The persistent store's failure is Run's error (a full disk must not look like a clean stop);
	// the in-memory one's is only logged.
	var se *store.Error
	if err := a.closeAllStores(); !errors.As(err, &se) || se.Loc.Store != "counts" || !errors.Is(err, errBoom) {
		t.Fatalf("closeAllStores after a failed checkpoint: %v; want the persistent store's *store.Error", err)
	}
	w := logs.warnings()
	if len(w) != 2 || len(a.tasks) != 0 {
		t.Fatalf("warnings %v tasks %v", w, a.tasks)
	}
	for _, want := range []string{"WARN checkpoint at close failed", "WARN closing a store failed"} {
		if w[0] != want && w[1] != want {
			t.Errorf("warnings %v, want %q", w, want)
		}
	}

	// Cleanup: a clean deletion is an INFO, a failed Destroy or RemoveAll a WARN.
	mustNotErr(t, os.MkdirAll(filepath.Join(a.stateDir, "1_0"), 0o755))
	a.proc.cleanups = map[tasks.ID]time.Time{tid("1", 0): clk.t}
	logs.take()
	a.cleanupDue(clk.t)
	if m := logs.take(); len(m) != 1 || m[0] != "INFO deleted the state of a task this process no longer owns" {
		t.Errorf("clean deletion logged %v", m)
	}
	k.destroyErr = errBoom
	a.proc.cleanups = map[tasks.ID]time.Time{tid("1", 0): clk.t}
	a.cleanupDue(clk.t)
	if m := logs.take(); len(m) != 2 || m[0] != "WARN deleting the store of a task no longer owned failed" {
		t.Errorf("failed Destroy logged %v", m)
	}
	k.destroyErr = nil
	file := filepath.Join(t.TempDir(), "file")
	mustNotErr(t, os.WriteFile(file, nil, 0o644))
	a.stateDir = file // RemoveAll(file/1_0) fails: not a directory
	a.proc.cleanups = map[tasks.ID]time.Time{tid("1", 0): clk.t}
	a.cleanupDue(clk.t)
	if m := logs.take(); len(m) != 1 || m[0] != "WARN deleting the directory of a task no longer owned failed" {
		t.Errorf("failed RemoveAll logged %v", m)
	}
}

// A store that cannot open for want of space is not wiped, whatever the store error handler says:
// wiping would not make room, and would lose the data.
func TestOpenEngineDoesNotWipeOnAFullDisk(t *testing.T) {
	k := &fakeKind{persistent: true, openErrs: []error{fmt.Errorf("no room: %w", syscall.ENOSPC)}}
	asked := 0
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(k), WithStoreErrorHandler(func(*store.Error) StoreAction {
		asked++
		return WipeAndRestore
	}))
	_, err := a.openEngine(k, store.Location{ApplicationID: testApp, Task: tid("1", 0), Store: "counts", Dir: t.TempDir()})
	if !errors.Is(err, syscall.ENOSPC) || asked != 0 || len(k.destroyed) != 0 {
		t.Fatalf("open on a full disk: %v, handler asked %d times, %d stores destroyed; want the error, nothing asked or wiped", err, asked, len(k.destroyed))
	}
}

// Lost tasks under exactly-once abort the open transaction (R4), and a successful abort says
// nothing (only a failed one is worth a warning: the broker aborts it after
// transaction.timeout.ms).
func TestLostTasksAbortTheOpenTransaction(t *testing.T) {
	logs, opt := recordLogs()
	a := eosApp(t, testProcs(), opt)
	activeTask(t, a, tid("0", 0))
	a.mu.Lock()
	a.ensureTxn("out") // a transaction begun, as a first write does
	a.mu.Unlock()
	if !a.mach.TxnOpen() {
		t.Fatal("no transaction open")
	}
	logs.take()
	mustNotErr(t, (*taskCalls)(a).OnAllTasksLost(context.Background(), tasks.Assignment{}))
	if a.mach.TxnOpen() || len(a.mach.Held()) != 0 {
		t.Errorf("after the loss: transaction open %v, tasks held %v", a.mach.TxnOpen(), a.mach.Held())
	}
	if w := logs.warnings(); len(w) != 0 {
		t.Errorf("a successful abort warned: %v", w)
	}
}
