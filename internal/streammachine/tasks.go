package streammachine

import (
	"fmt"
	"slices"
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// The task lifecycle: which tasks this member holds and in what role, decided from the member's
// assignments. A task is opened (its stores) when first assigned; it is active or standby (a
// warm-up is a standby) as each assignment says; when it leaves the assignment it is suspended,
// stopped but with its stores kept open for KeepSuspended, since a broker may take a standby away
// in one assignment and hand it back as active in the next (Kafka 4.2 and 4.3 promote standbys that
// way) and a kept store restores only what it missed; past that it is closed. An active task restores
// first (the consumer says when its stores caught up: Ready), then its processor's Init runs and it
// processes (running); whatever stops it (an abort, a retry of a failed write, a revocation, a
// demotion) takes it back to restoring, so that its Init runs again before it processes, as Kafka
// Streams revives a task.

// KeepSuspended is how long a task that left the assignment keeps its stores open.
const KeepSuspended = 30 * time.Second

// TaskState is where a held task is, as Kafka Streams' Task.State with the standby role apart (a
// closed task is not held).
type TaskState int

const (
	// TaskRestoring: assigned as active, not processing: its stores restoring, or restored and its
	// processor's Init not run yet (again, after it was stopped).
	TaskRestoring TaskState = iota + 1
	// TaskRunning: active and processing: restored, its Init ran.
	TaskRunning
	// TaskStandby: assigned as standby or warm-up: its stores follow the changelog.
	TaskStandby
	// TaskSuspended: no longer assigned; stopped, its stores kept open until KeepSuspended passed.
	TaskSuspended
)

// String names the state.
func (s TaskState) String() string {
	switch s {
	case TaskRestoring:
		return "restoring"
	case TaskRunning:
		return "running"
	case TaskStandby:
		return "standby"
	case TaskSuspended:
		return "suspended"
	}
	return fmt.Sprintf("TaskState(%d)", int(s))
}

// Active reports whether the state is an active task's (restoring or running).
func (s TaskState) Active() bool { return s == TaskRestoring || s == TaskRunning }

// heldTask is one task this member holds.
type heldTask struct {
	state TaskState
	// since is when the task was suspended.
	since time.Time
}

// assigning is an assignment being carried out: the tasks still to open, then the roles to set.
type assigning struct {
	as        tasks.Assignment
	committed CommittedInputs
	toOpen    []tasks.ID
}

// Assigned is the member's new assignment (OnTasksAssigned): the tasks in it are opened when new
// and take their roles; the tasks not in it are suspended, or closed once suspended past
// KeepSuspended. Committed is what the group's committed offsets held for the inputs of the tasks
// that start processing: an active task starts its positions and partition times there.
type Assigned struct {
	Assignment tasks.Assignment
	Committed  CommittedInputs
}

// AllLost says the member lost every task (OnAllTasksLost): they are closed.
type AllLost struct{}

// CloseExpired closes the tasks suspended past KeepSuspended (the loop asks between batches).
type CloseExpired struct{}

// TaskOpened is OpenTask's result.
type TaskOpened struct {
	ID  tasks.ID
	Err error
}

func (Assigned) isInput()     {}
func (AllLost) isInput()      {}
func (CloseExpired) isInput() {}
func (TaskOpened) isInput()   {}

// OpenTask opens task ID's stores (→ TaskOpened).
type OpenTask struct{ ID tasks.ID }

// SetRole makes task ID active or standby. Stop says it was active and stops processing (a
// demotion, or a task the consumer starts again from its committed offsets): its Init runs again
// before it processes again.
type SetRole struct {
	ID     tasks.ID
	Active bool
	Stop   bool
}

// SuspendTask stops task ID (no processing, no punctuation) and keeps its stores open.
type SuspendTask struct{ ID tasks.ID }

// CloseTask closes task ID's stores without a checkpoint (what was written since the last one is
// restored from the changelog) and schedules the deletion of its persistent state.
type CloseTask struct{ ID tasks.ID }

func (OpenTask) isAction()    {}
func (SetRole) isAction()     {}
func (SuspendTask) isAction() {}
func (CloseTask) isAction()   {}

// Task returns the state of task id, and false when this member does not hold it.
func (m *Machine) Task(id tasks.ID) (TaskState, bool) {
	if t := m.held[id]; t != nil {
		return t.state, true
	}
	return 0, false
}

// Held returns the tasks this member holds, in order.
func (m *Machine) Held() []tasks.ID {
	ids := make([]tasks.ID, 0, len(m.held))
	for id := range m.held {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, tasks.ID.Compare)
	return ids
}

// assigned starts carrying out an assignment: suspensions and closes of the tasks that left it,
// then the new tasks opened one at a time (a failure stops there), then every role set.
func (m *Machine) assigned(now time.Time, as tasks.Assignment, committed CommittedInputs) []Action {
	if m.assigning != nil {
		return []Action{Done{Err: fmt.Errorf("streammachine: an assignment arrived while another is carried out"), Fatal: true}}
	}
	var acts []Action
	all := as.All()
	for _, id := range m.Held() {
		if all.Contains(id) {
			continue
		}
		acts = append(acts, m.leave(now, id)...)
	}
	a := &assigning{as: as, committed: committed}
	for id := range all.All() {
		if m.held[id] == nil {
			a.toOpen = append(a.toOpen, id)
		}
	}
	m.assigning = a
	return append(acts, m.openNext()...)
}

// leave is what becomes of a held task that is not assigned: suspended, or closed once it was
// suspended past KeepSuspended (at once under CloseLeaving).
func (m *Machine) leave(now time.Time, id tasks.ID) []Action {
	t := m.held[id]
	m.dropInputs(id)
	if m.cfg.CloseLeaving {
		m.Unschedule(id)
		delete(m.held, id)
		return []Action{CloseTask{ID: id}}
	}
	if t.state != TaskSuspended {
		m.Unschedule(id)
		t.state, t.since = TaskSuspended, now
		return []Action{SuspendTask{ID: id}}
	}
	if now.Sub(t.since) >= KeepSuspended {
		delete(m.held, id)
		return []Action{CloseTask{ID: id}}
	}
	return nil
}

// openNext opens the next new task of the assignment, or, once all are open, sets the roles.
func (m *Machine) openNext() []Action {
	a := m.assigning
	if len(a.toOpen) > 0 {
		return []Action{OpenTask{ID: a.toOpen[0]}}
	}
	m.assigning = nil
	var acts []Action
	for id := range a.as.All().All() {
		t := m.held[id]
		active := a.as.Active.Contains(id)
		restart := active && (!t.state.Active() || a.committed.Tasks.Contains(id))
		stop := t.state.Active() && (!active || restart)
		switch {
		case restart:
			m.startInputs(id, a.committed)
			t.state = TaskRestoring
		case !active:
			m.dropInputs(id)
			t.state = TaskStandby
		}
		if stop {
			m.Unschedule(id)
		}
		t.since = time.Time{}
		acts = append(acts, SetRole{ID: id, Active: active, Stop: stop})
	}
	return append(acts, Done{})
}

func (m *Machine) opened(in TaskOpened) []Action {
	a := m.assigning
	if a == nil || len(a.toOpen) == 0 || a.toOpen[0] != in.ID {
		return []Action{Done{Err: fmt.Errorf("streammachine: TaskOpened %s out of turn", in.ID), Fatal: true}}
	}
	if in.Err != nil {
		m.assigning = nil
		return []Action{Done{Err: in.Err, Fatal: true}}
	}
	a.toOpen = a.toOpen[1:]
	// Opened, its role not yet set: standby until then (nothing processes before the roles).
	m.held[in.ID] = &heldTask{state: TaskStandby}
	return m.openNext()
}

// closeExpired closes the tasks suspended past KeepSuspended.
// The loop asks between batches, so nothing is allocated or sorted unless a task is due.
func (m *Machine) closeExpired(now time.Time) []Action {
	var due []tasks.ID
	for id, t := range m.held {
		if t.state == TaskSuspended && now.Sub(t.since) >= KeepSuspended {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, tasks.ID.Compare)
	acts := make([]Action, 0, len(due)+1)
	for _, id := range due {
		delete(m.held, id)
		acts = append(acts, CloseTask{ID: id})
	}
	return append(acts, Done{})
}

// allLost closes every task.
func (m *Machine) allLost() []Action {
	var acts []Action
	for _, id := range m.Held() {
		acts = append(acts, CloseTask{ID: id})
	}
	clear(m.held)
	clear(m.schedules)
	clear(m.positions)
	clear(m.inputsOf)
	clear(m.meta)
	m.assigning = nil
	return append(acts, Done{})
}

// Ready says the active tasks Tasks may process: their stores are restored (the consumer hands out
// their records). Those not running have their processor's Init run first, one at a time (→
// InitTask); the others and any that is not active are left as they are.
type Ready struct{ Tasks tasks.Set }

// TaskInitialized is InitTask's result: Err, the shell's error for a failed Init, stops the
// application (the tasks after it in Ready are not started).
type TaskInitialized struct {
	ID  tasks.ID
	Err error
}

func (Ready) isInput()           {}
func (TaskInitialized) isInput() {}

// InitTask runs task ID's processor Init, which starts it processing (→ TaskInitialized).
type InitTask struct{ ID tasks.ID }

func (InitTask) isAction() {}

// Running reports whether task id is active and processing here (restored, its Init ran).
func (m *Machine) Running(id tasks.ID) bool {
	t := m.held[id]
	return t != nil && t.state == TaskRunning
}

// ready starts the tasks of in that are restoring.
func (m *Machine) ready(in Ready) []Action {
	if m.starting != nil {
		return []Action{Done{Err: fmt.Errorf("streammachine: Ready while tasks are being started"), Fatal: true}}
	}
	var ids []tasks.ID
	for id := range in.Tasks.All() {
		if t := m.held[id]; t != nil && t.state == TaskRestoring {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return []Action{Done{}}
	}
	m.starting = ids
	return []Action{InitTask{ID: ids[0]}}
}

func (m *Machine) initialized(in TaskInitialized) []Action {
	if len(m.starting) == 0 || m.starting[0] != in.ID {
		return []Action{Done{Err: fmt.Errorf("streammachine: TaskInitialized %s out of turn", in.ID), Fatal: true}}
	}
	if in.Err != nil {
		m.starting = nil
		return []Action{Done{Err: in.Err, Fatal: true}}
	}
	if t := m.held[in.ID]; t != nil && t.state == TaskRestoring {
		t.state = TaskRunning
	}
	m.starting = m.starting[1:]
	if len(m.starting) == 0 {
		m.starting = nil
		return []Action{Done{}}
	}
	return []Action{InitTask{ID: m.starting[0]}}
}

// stopAll stops every active task (the work since the last commit is done again: their Init runs
// again, their punctuations are scheduled anew).
func (m *Machine) stopAll() {
	for id := range m.held {
		m.stop(id)
	}
}

// stopRevoked stops the revoked tasks once their revocation committed: they process no more until
// an assignment says what becomes of them.
func (m *Machine) stopRevoked(revoked tasks.Set) {
	for id := range revoked.All() {
		m.stop(id)
	}
}

// stop takes active task id back to restoring, without its punctuations. Others are left alone.
func (m *Machine) stop(id tasks.ID) {
	if t := m.held[id]; t != nil && t.state.Active() {
		t.state = TaskRestoring
		m.Unschedule(id)
	}
}
