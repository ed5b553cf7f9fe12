package machine

import (
	"fmt"
	"strings"
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// jobOp says which callback a job runs and what follows it. Pending work is this data, not a
// closure: callbackDone dispatches on it.
type jobOp int

const (
	opRevoke         jobOp = iota + 1 // reconciliation: OnTasksRevoked, then opAssign
	opAssign                          // reconciliation: OnTasksAssigned with the captured target, then acknowledge
	opLoseThenRejoin                  // fenced: OnAllTasksLost, then rejoin
	opLoseThenStop                    // fatal: OnAllTasksLost, then stop
	opLeave                           // leaving: OnTasksRevoked (or OnAllTasksLost at epoch 0), then the leave heartbeat
	opLoseLocally                     // session guard: OnAllTasksLost, then reconcile once the broker answers
)

func (o jobOp) String() string {
	switch o {
	case opRevoke:
		return "revoke"
	case opAssign:
		return "assign"
	case opLoseThenRejoin:
		return "lose-then-rejoin"
	case opLoseThenStop:
		return "lose-then-stop"
	case opLeave:
		return "leave"
	case opLoseLocally:
		return "lose-locally"
	}
	return fmt.Sprintf("jobOp(%d)", int(o))
}

// job is one callback to run. Its arguments are decided when it starts, from what the application
// holds then (an earlier callback may have changed that).
type job struct {
	seq   uint64
	op    jobOp
	recon uint64 // the reconciliation an opRevoke/opAssign belongs to

	kind       CallbackKind // decided at start
	tasks      tasks.Set
	assignment tasks.Assignment
	ready      bool
}

func (j job) String() string {
	s := fmt.Sprintf("#%d %s", j.seq, j.op)
	if j.kind != 0 {
		s += " " + j.kind.String()
		switch j.kind {
		case CallbackRevoked:
			s += brief(j.tasks)
		default:
			s += "{" + briefAssignment(j.assignment) + "}"
		}
	}
	return s
}

// briefLimit is how many tasks of a set pending work names before it only counts the rest: the
// Manager renders the pending work into every snapshot, which must not cost a string per task of a
// member that owns thousands.
const briefLimit = 8

// brief renders s like Set.String, naming at most briefLimit tasks and counting the others.
func brief(s tasks.Set) string {
	if s.Len() <= briefLimit {
		return s.String()
	}
	var b strings.Builder
	b.WriteByte('[')
	i := 0
	for id := range s.All() {
		if i == briefLimit {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(id.String())
		i++
	}
	fmt.Fprintf(&b, " … %d more]", s.Len()-briefLimit)
	return b.String()
}

// briefAssignment renders a like Assignment.String with brief sets.
func briefAssignment(a tasks.Assignment) string {
	return "active=" + brief(a.Active) + " standby=" + brief(a.Standby) + " warmup=" + brief(a.Warmup)
}

// jobQueue runs callbacks one at a time, in order (invariant 3).
type jobQueue struct {
	seq     uint64
	running *job
	waiting []job
}

func (m *Machine) pendingString() string {
	var parts []string
	if j := m.jobs.running; j != nil {
		parts = append(parts, "running "+j.String())
	}
	for _, j := range m.jobs.waiting {
		parts = append(parts, "waiting "+j.String())
	}
	if r := m.rec.running; r != nil {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

// enqueue queues a job and starts it if no callback is outstanding.
func (m *Machine) enqueue(j job) []Action {
	m.jobs.seq++
	j.seq = m.jobs.seq
	m.jobs.waiting = append(m.jobs.waiting, j)
	return m.startJobs(m.now)
}

// startJobs hands out the next callback if none is outstanding. A job with nothing to do (its
// reconciliation was aborted, or nothing is held to lose or revoke) is completed without a callback.
func (m *Machine) startJobs(now time.Time) []Action {
	var out []Action
	for m.jobs.running == nil && len(m.jobs.waiting) > 0 && !m.stopped {
		j := m.jobs.waiting[0]
		m.jobs.waiting = m.jobs.waiting[1:]
		if !m.prepare(&j) {
			out = append(out, m.jobDone(now, j, nil)...)
			continue
		}
		m.jobs.running = &j
		out = append(out, Invoke{Seq: j.seq, Kind: j.kind, Tasks: j.tasks, Assignment: j.assignment, Ready: j.ready})
	}
	return out
}

// prepare decides a job's callback and arguments; false when there is nothing to call.
func (m *Machine) prepare(j *job) bool {
	switch j.op {
	case opRevoke:
		r := m.reconciling(j.recon)
		if r == nil {
			return false
		}
		j.kind, j.tasks = CallbackRevoked, r.revoking.Difference(m.rec.revoked)
		return !j.tasks.IsEmpty()
	case opAssign:
		r := m.reconciling(j.recon)
		if r == nil {
			return false
		}
		j.kind, j.assignment, j.ready = CallbackAssigned, r.target, r.ready
		return true
	case opLoseThenRejoin, opLoseThenStop, opLoseLocally:
		h := m.held()
		if !m.rec.hasCurrent || h.IsEmpty() {
			return false
		}
		j.kind, j.assignment = CallbackLost, h
		return true
	case opLeave:
		h := m.held()
		switch {
		case !m.rec.hasCurrent:
			return false
		case !h.Active.IsEmpty() && m.epoch > 0 && !m.leave.fenced && !m.leave.poll:
			j.kind, j.tasks = CallbackRevoked, h.Active
			return true
		case !h.IsEmpty():
			j.kind, j.assignment = CallbackLost, h
			return true
		}
	}
	return false
}

// callbackDone takes the result of the outstanding callback and goes on with what follows it.
func (m *Machine) callbackDone(now time.Time, in CallbackDone) []Action {
	j := m.jobs.running
	if j == nil || j.seq != in.Seq {
		return nil
	}
	m.jobs.running = nil
	out := m.jobDone(now, *j, in.Err)
	return append(out, m.startJobs(now)...)
}

// jobDone goes on after a job's callback returned err (nil also when no callback ran).
func (m *Machine) jobDone(now time.Time, j job, err error) []Action {
	switch j.op {
	case opRevoke, opAssign:
		switch {
		case j.kind == 0:
			// Skipped: its reconciliation was aborted. (A revocation is never left with nothing to
			// revoke: maybeReconcile revokes only what the application holds, and starts it at once.)
			return nil
		case j.op == opRevoke:
			return m.revokeDone(now, j, err)
		}
		return m.assignDone(now, j, err)
	case opLoseThenRejoin:
		return m.lostThenRejoin(now, j, err)
	case opLoseThenStop:
		return m.lostThenStop(j, err)
	case opLeave:
		return m.leaveRevoked(now, j, err)
	case opLoseLocally:
		return m.lostLocally(j, err)
	}
	return nil
}
