package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// memberCalls is the App as the member's listener (membership.WithListener). Each call is carried
// out on the loop's goroutine (onLoop): the consumer stops or starts fetching, the committed offsets
// of the tasks that start are read, and the App opens, keeps and closes the tasks' stores.
type memberCalls App

// OnTasksRevoked stops fetching the revoked tasks' records and commits their final positions
// (revokeTasks); when that fails the tasks are fetched again from where they stopped, since the
// member keeps them and retries the revocation.
func (m *memberCalls) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	a := (*App)(m)
	return a.onLoop(ctx, func(ctx context.Context) error {
		// On the loop no Batch is out, so the consumer's steps wait for nothing: they must not fail
		// half-way because the member gave up on the call (noWait).
		if err := a.cons.Stop(noWait(ctx), revoked); err != nil {
			return fmt.Errorf("stream: stopping the revoked tasks %v: %w", revoked, err)
		}
		err := a.revokeTasks(ctx, revoked)
		a.cons.Release(revoked, err == nil)
		return err
	})
}

// OnTasksAssigned reads what the assignment needs (the changelogs' bounds, the committed offsets
// and metadata of the tasks that start) before anything changes, has the App take the assignment
// (assignTasks), and the consumer fetch what it needs from where the committed offsets and the
// stores stand.
func (m *memberCalls) OnTasksAssigned(ctx context.Context, as tasks.Assignment, _ bool) error {
	a := (*App)(m)
	return a.onLoop(ctx, func(ctx context.Context) error {
		plan, err := a.cons.Plan(ctx, as)
		if err != nil {
			return a.assignmentFailed(err)
		}
		a.assignmentListed()
		committed := sm.CommittedInputs{Tasks: plan.Starting}
		if !plan.Starting.IsEmpty() {
			if committed.Offsets, committed.Metadata, err = a.commits.Committed(ctx, plan.Starting); err != nil {
				return fmt.Errorf("stream: reading the committed offsets of %v: %w", plan.Starting, err)
			}
		}
		stores, err := a.assignTasks(ctx, plan.Assignment, committed)
		if err != nil {
			return err
		}
		// The App took the assignment: the consumer follows it even if the member gave up on the
		// call meanwhile (its loss follows then, and drops both).
		if err := a.cons.Assign(noWait(ctx), plan, consume.Start{Committed: committed.Offsets, Stores: stores}); err != nil {
			a.fail(err)
			return err
		}
		return nil
	})
}

// OnAllTasksLost stops fetching and closes every task without committing (loseTasks).
func (m *memberCalls) OnAllTasksLost(ctx context.Context, _ tasks.Assignment) error {
	a := (*App)(m)
	return a.onLoop(ctx, func(ctx context.Context) error {
		if err := a.cons.DropAll(noWait(ctx)); err != nil {
			return fmt.Errorf("stream: stopping the lost tasks: %w", err)
		}
		a.loseTasks(ctx)
		return nil
	})
}

// revokeTasks runs once the consumer stopped the revoked tasks' records: the tasks stop (no
// punctuation writes for them any more) and the commit step commits their final positions (R2):
// under at-least-once everything produced made durable and checked (R1), their stores
// checkpointed, their offsets committed; under exactly-once the open transaction, which holds every
// task's work, committed with them. After a fatal error the open transaction is aborted instead
// (R7). A failed revocation is retried by the member (the tasks process again meanwhile). The tasks
// stay open until the next assignment says whether this process keeps them (as standby tasks their
// stores go on).
func (a *App) revokeTasks(ctx context.Context, revoked tasks.Set) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	// What the revoked tasks' processors hold back is written before they stop, to be committed
	// with them (Kafka Streams' prepareCommit flushes the caches of the revoked tasks). Under
	// exactly-once a fatal error aborts instead: nothing of the transaction is kept. A flush that
	// fails commits nothing: the next owner starts from the last commit.
	if !a.closingDirty() || !a.eos() {
		if err := a.flushTasks(&revoked); err != nil {
			return fmt.Errorf("stream: writing what the revoked tasks %v held: %w", revoked, err)
		}
	}
	var stopped []*task
	for id := range revoked.All() {
		if t := a.tasks[id]; t != nil && t.active {
			t.active = false
			stopped = append(stopped, t)
		}
	}
	d := a.drive(ctx, sm.Commit{Reason: sm.Revocation, Revoked: revoked, Dirty: a.closingDirty()})
	if d.Err != nil {
		if d.Fatal {
			a.fail(d.Err)
		}
		for _, t := range stopped {
			t.active = true
			// The consumer fetches them again from their positions: the records they held go.
			a.dropQueued(t)
		}
		return fmt.Errorf("stream: committing the revoked tasks %v: %w", revoked, d.Err)
	}
	for _, t := range stopped {
		a.stopTask(t)
	}
	return nil
}

// assignTasks opens the stores of new tasks, switches roles, and closes the tasks no longer
// assigned; the tasks that become active start from committed. It returns where each store of
// the assigned tasks stands in its changelog, for the consumer to fetch from there.
func (a *App) assignTasks(ctx context.Context, as tasks.Assignment, committed sm.CommittedInputs) (map[tasks.TopicPartition]int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// The assigned tasks' directories are this process's again: no thread's cleaner deletes one
	// before its thread opens it.
	for id := range as.All().All() {
		a.proc.keep(id)
	}
	// The machine decides what opens, suspends, closes and changes role (streammachine's task
	// lifecycle); this carries it out. ctx bounds only a wait for another thread's hand-over.
	if d := a.drive(ctx, sm.Assigned{Assignment: as, Committed: committed}); d.Err != nil {
		a.fail(d.Err)
		return nil, d.Err
	}
	stores := make(map[tasks.TopicPartition]int64, len(a.tasks))
	for _, t := range a.tasks {
		for _, s := range t.stores {
			if pos, ok := s.eng.Position(); ok {
				stores[s.changelog] = pos
			}
		}
	}
	return stores, nil
}

// loseTasks closes every task without a checkpoint: another member may own them already, and
// what this member wrote since its last commit may never reach the changelog. In-memory stores are
// dropped; persistent ones keep their last checkpoint and restore what follows it.
func (a *App) loseTasks(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mach.TxnOpen() { // R4: a member that lost its tasks never commits their work
		if err := a.abortOpen(ctx); err != nil {
			a.log.Warn("aborting the transaction of lost tasks failed; the broker aborts it after transaction.timeout.ms", "err", err)
		}
	}
	// Their positions and partition times go with them: they start again from their committed
	// offsets and metadata when they come back.
	a.drive(ctx, sm.AllLost{})
}

// openTask opens the stores of task id. A task with persistent stores first claims their directory
// from the process's other stream threads (the broker hands a task over only once the thread that
// had it released it, which closes it first, so the wait is short if any; ctx bounds it).
func (a *App) openTask(ctx context.Context, id tasks.ID) (*task, error) {
	t := &task{id: id, stores: map[string]*kvStore{}, byChangelog: map[string]*kvStore{}, streamTime: -1}
	if a.hasPersistent(id) {
		if err := a.proc.claim(ctx, id, a); err != nil {
			return nil, err
		}
	}
	for name, topic := range a.storesOf[id.Subtopology] {
		kind := a.kindOf(name)
		loc := store.Location{ApplicationID: a.cfg.ApplicationID, Task: id, Store: name}
		if kind.Persistent() {
			loc.Dir = filepath.Join(a.stateDir, store.TaskDir(id), name)
		}
		eng, err := a.openEngine(kind, loc)
		if err != nil {
			for _, s := range t.stores {
				s.eng.Close()
			}
			a.proc.release(id, a, a.now().Add(a.cfg.Runtime.StateCleanupDelay))
			return nil, err
		}
		s := &kvStore{app: a, task: t, name: name, changelog: tasks.TopicPartition{Topic: topic, Partition: id.Partition},
			kind: kind, loc: loc, eng: eng, checkpointed: -1}
		s.acked.Store(-1) // none since the store was opened
		if conn := a.connected[id.Subtopology]; conn != nil {
			s.timestamped, s.headers, s.logHeaders = conn.timestamped[name], conn.headers[name], conn.logHeaders[name]
			s.wallClock = conn.wallClock[name]
			if w, ok := conn.windows[name]; ok {
				s.timestamped = w.timestamped
				s.win = newWindowState(w, kind.Persistent())
			}
			if h, ok := conn.versioned[name]; ok {
				s.ver = &versionState{history: h}
			}
		}
		if a.eos() {
			s.pend = newOverlay()
		}
		if pos, ok := eng.Position(); ok {
			s.checkpointed = pos
		}
		t.stores[name] = s
		t.byChangelog[topic] = s
	}
	return t, nil
}

// hasPersistent reports whether task id has a persistent store.
func (a *App) hasPersistent(id tasks.ID) bool {
	for name := range a.storesOf[id.Subtopology] {
		if a.kindOf(name).Persistent() {
			return true
		}
	}
	return false
}

// openEngine opens a store, asking the store error handler what to do when it cannot.
func (a *App) openEngine(kind store.Kind, loc store.Location) (store.Engine, error) {
	eng, err := kind.Open(loc)
	if err == nil {
		return eng, nil
	}
	var se *store.Error
	if !errors.As(err, &se) {
		se = &store.Error{Op: "open", Loc: loc, Err: err}
	}
	// A full disk is not the store's damage: wiping would not make room (and would lose the data).
	if a.o.onStore == nil || errors.Is(err, syscall.ENOSPC) || a.o.onStore(se) != WipeAndRestore {
		return nil, se
	}
	a.log.Warn("wiping a store that cannot be opened; it restores from its changelog", "store", loc.String(), "err", err)
	if derr := kind.Destroy(loc); derr != nil {
		return nil, &store.Error{Op: "wipe", Loc: loc, Err: derr}
	}
	if eng, err = kind.Open(loc); err != nil {
		return nil, &store.Error{Op: "open", Loc: loc, Err: err}
	}
	return eng, nil
}

// closeTask closes t's stores, checkpointing them first when clean (everything acknowledged), and
// schedules the deletion of its persistent stores. It returns the first failure of a persistent
// store (logged too): its files may lack what was written since its last checkpoint, which the
// next start restores from the changelog. Called with a.mu held.
func (a *App) closeTask(t *task, clean bool) error {
	var first error
	for _, s := range t.stores {
		if clean && s.kind.Persistent() {
			if err := s.checkpoint(); err != nil {
				a.log.Warn("checkpoint at close failed", "store", s.loc.String(), "err", err)
				first = cmp.Or(first, err)
			}
		}
		if err := s.eng.Close(); err != nil {
			a.log.Warn("closing a store failed", "store", s.loc.String(), "err", err)
			if s.kind.Persistent() {
				first = cmp.Or(first, s.fail("close", err))
			}
		}
	}
	// Its directory is free for another thread, and deleted after state.cleanup.delay.ms unless the
	// task comes back to this process.
	a.proc.release(t.id, a, a.now().Add(a.cfg.Runtime.StateCleanupDelay))
	delete(a.tasks, t.id)
	a.stopTask(t)
	return first
}

// closeAllStores closes what is left when Run ends. The member's Close revoked (and so committed and
// checkpointed) every active task that could be; what remains is closed as it is. It returns the
// first persistent store that failed to close (a full disk, say): Run returns it rather than a
// clean stop, so that nobody mistakes it for one.
func (a *App) closeAllStores() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	clean := a.produceErr.Load() == nil
	var first error
	for _, t := range a.tasks {
		first = cmp.Or(first, a.closeTask(t, clean && !t.active))
	}
	return first
}

// scanOldTasks schedules the deletion of task directories left in state.dir by an earlier run: a
// task this process is not assigned again within state.cleanup.delay.ms of this start is deleted,
// as Kafka Streams' cleaner (first run state.cleanup.delay.ms after its start) deletes it. The
// delay counts from the start, not from the files' times, which all precede it: the group gets one
// whole delay to hand the task back.
func (a *App) scanOldTasks() {
	entries, err := os.ReadDir(a.stateDir)
	if err != nil {
		return
	}
	due := a.now().Add(a.cfg.Runtime.StateCleanupDelay)
	a.proc.mu.Lock()
	defer a.proc.mu.Unlock()
	for _, e := range entries {
		if id, err := tasks.ParseID(e.Name()); err == nil && e.IsDir() {
			a.proc.cleanups[id] = due
		}
	}
}

// cleanupDue deletes the directories of tasks whose cleanup time passed and that this process does
// not hold (no thread holds their persistent stores; this one holds none of their stores). Called
// with a.mu held; the process's lock is held meanwhile, so that no thread opens a task being
// deleted.
func (a *App) cleanupDue(now time.Time) {
	p := a.proc
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, at := range p.cleanups {
		if now.Before(at) || a.tasks[id] != nil || p.held[id] != nil {
			continue
		}
		delete(p.cleanups, id)
		dir := filepath.Join(a.stateDir, store.TaskDir(id))
		for name := range a.storesOf[id.Subtopology] {
			kind := a.kindOf(name)
			if !kind.Persistent() {
				continue
			}
			loc := store.Location{ApplicationID: a.cfg.ApplicationID, Task: id, Store: name, Dir: filepath.Join(dir, name)}
			if err := kind.Destroy(loc); err != nil {
				a.log.Warn("deleting the store of a task no longer owned failed", "store", loc.String(), "err", err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			a.log.Warn("deleting the directory of a task no longer owned failed", "dir", dir, "err", err)
			continue
		}
		a.log.Info("deleted the state of a task this process no longer owns", "task", id.String(), "dir", dir)
	}
}

// noWait is ctx for the consumer's steps on the loop: no Batch is out there, so they have nothing to
// wait for, and the end of the member's call must not stop one half-way.
func noWait(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
