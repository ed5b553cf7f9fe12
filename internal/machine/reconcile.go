package machine

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// reconcileState is what the application owns and what the broker wants it to own.
type reconcileState struct {
	// current is the reconciled assignment, reported to the broker as owned; hasCurrent is false
	// until the first OnTasksAssigned, so the first answer always reconciles and tells the
	// application the group's readiness.
	current      tasks.Assignment
	currentReady bool
	hasCurrent   bool
	// revoked are active tasks of current for which OnTasksRevoked returned: the application no
	// longer holds them, but they are reported as owned until the assignment that follows (the
	// broker learns of a revocation with the acknowledgement, as from Kafka Streams).
	revoked tasks.Set
	// target is the broker's latest target and its readiness; targetAt when it arrived.
	target      tasks.Assignment
	targetReady bool
	hasTarget   bool
	targetAt    time.Time
	// lost says the session guard gave everything held up: the application is told with
	// OnAllTasksLost, and Assignment shows nothing owned from the moment it fired.
	lost bool
	// ackedTargetAt is targetAt of the reconciliation awaiting its acknowledgement.
	ackedTargetAt time.Time
	// running is the reconciliation in progress, nil when none.
	running  *reconciliation
	lastID   uint64
	failures int       // failed reconciliations in a row, for backoff
	retryAt  time.Time // a failed reconciliation is retried then
}

// reconciliation is one pass toward a target captured when it started: revoke, then assign. A newer
// target waits for the next pass (the Java client does the same).
type reconciliation struct {
	id       uint64
	target   tasks.Assignment
	ready    bool
	targetAt time.Time
	revoking tasks.Set // what OnTasksRevoked is asked to give up; empty when nothing is
}

func (r *reconciliation) String() string {
	return fmt.Sprintf("reconciliation#%d toward {%s ready=%v} revoking %s", r.id, briefAssignment(r.target), r.ready, brief(r.revoking))
}

// held is what the application holds: the reconciled assignment minus the revoked tasks.
// published is what the member says it holds (Snapshot.Owned): nothing once the session guard
// decided the tasks are lost, even while a callback that was running then has not returned yet. The
// heartbeats go on reporting them until OnAllTasksLost returned (invariant 1): the broker must not
// hand an active task to another member while this application may still process it.
func (m *Machine) held() tasks.Assignment {
	h := m.rec.current
	h.Active = h.Active.Difference(m.rec.revoked)
	return h
}

// targetDiffers reports whether the target (tasks or readiness) differs from what is owned: what
// the broker was told (current) or what the application holds (current minus revoked tasks, which a
// failed OnTasksAssigned may have left behind).
func (m *Machine) targetDiffers() bool {
	r := &m.rec
	return r.hasTarget && (r.lost || !r.hasCurrent || !r.current.Equal(r.target) || !r.revoked.IsEmpty() || r.currentReady != r.targetReady)
}

// newTarget records the answer's target and readiness and starts reconciling toward it.
func (m *Machine) newTarget(r *heartbeat.Response) []Action {
	rec := &m.rec
	target := rec.target
	if r.Assignment != nil {
		target = r.Assignment.Normalize()
	}
	if !rec.hasTarget || !target.Equal(rec.target) || r.Ready() != rec.targetReady {
		rec.targetAt = m.now
	}
	rec.target, rec.targetReady, rec.hasTarget = target, r.Ready(), true
	switch {
	case m.targetDiffers():
		if m.state == Acknowledging {
			return nil // the ack goes first; building it moves on to Reconciling
		}
		out := m.transition(Reconciling)
		return append(out, m.maybeReconcile()...)
	case m.state == Joining || (m.state == Reconciling && rec.running == nil):
		rec.retryAt = time.Time{}
		return m.transition(Stable)
	}
	return nil
}

// reconcileRetryAt is when a failed reconciliation is retried (zero: not scheduled).
func (m *Machine) reconcileRetryAt() time.Time {
	if m.state != Reconciling || m.rec.running != nil {
		return time.Time{}
	}
	return m.rec.retryAt
}

// maybeReconcile starts a reconciliation toward the target when none runs (Kafka's
// StreamsMembershipManager.maybeReconcile): revoke the
// active tasks the application holds that the target does not, then hand the whole target to
// OnTasksAssigned.
func (m *Machine) maybeReconcile() []Action {
	rec := &m.rec
	if m.state != Reconciling || rec.running != nil || !rec.retryAt.IsZero() || rec.lost || m.session.tripped {
		// A loss decided by the session guard runs first, and the target is taken back only once
		// the broker answered (session.go).
		return nil
	}
	if !m.targetDiffers() {
		return m.transition(Stable)
	}
	rec.lastID++
	r := &reconciliation{id: rec.lastID, target: rec.target, ready: rec.targetReady, targetAt: rec.targetAt}
	rec.running = r
	started := Rebalance{Phase: RebalanceStarted, TargetAt: r.targetAt}
	if rec.hasCurrent {
		r.revoking = m.held().Active.Difference(r.target.Active)
	}
	if !r.revoking.IsEmpty() {
		return append([]Action{started}, m.enqueue(job{op: opRevoke, recon: r.id})...)
	}
	return append([]Action{started}, m.enqueue(job{op: opAssign, recon: r.id})...)
}

// reconciling returns the running reconciliation if id is still it, nil when it was aborted (the
// member rejoined, left, was fenced or failed meanwhile).
func (m *Machine) reconciling(id uint64) *reconciliation {
	if r := m.rec.running; r != nil && r.id == id && m.state == Reconciling {
		return r
	}
	return nil
}

func (m *Machine) revokeDone(now time.Time, j job, err error) []Action {
	if err == nil {
		m.rec.revoked = m.rec.revoked.Union(j.tasks) // the application gave them up, whatever comes next
	}
	r := m.reconciling(j.recon)
	if r == nil {
		return nil
	}
	if err != nil {
		return m.reconcileFailed(now, CallbackRevoked, err)
	}
	// Assign the target this pass captured, even if a newer one arrived: the next pass revokes
	// from what the application then holds, so no task is revoked twice.
	return m.enqueue(job{op: opAssign, recon: r.id})
}

func (m *Machine) assignDone(now time.Time, j job, err error) []Action {
	rec := &m.rec
	if err != nil {
		if m.reconciling(j.recon) == nil {
			return nil
		}
		return m.reconcileFailed(now, CallbackAssigned, err)
	}
	// The application holds the target now, whatever happened meanwhile (invariant 1): a later
	// OnAllTasksLost or leave must cover it.
	changed := !rec.hasCurrent || !rec.current.Equal(j.assignment)
	readyChanged := !rec.hasCurrent || rec.currentReady != j.ready
	rec.current, rec.currentReady, rec.hasCurrent = j.assignment, j.ready, true
	rec.revoked = tasks.Set{}
	if changed {
		m.offsets.trigger = true
	}
	if m.reconciling(j.recon) == nil {
		return nil
	}
	rec.ackedTargetAt = m.reconcilingTargetAt(j.recon)
	rec.running, rec.failures = nil, 0
	out := []Action{m.emit(Event{Kind: EventAssigned, Assignment: j.assignment, Ready: j.ready})}
	if readyChanged {
		out = append(out, m.emit(Event{Kind: EventGroupReadyChanged, Ready: j.ready}))
	}
	// Acknowledge at once, even when a newer target is already known: the broker must learn what
	// the application owns now.
	m.sendSoon(now)
	return append(out, m.transition(Acknowledging)...)
}

// reconcileFailed: a callback failed; the member keeps its previous assignment and retries the
// reconciliation after backoff (the Java client retries on the next poll).
func (m *Machine) reconcileFailed(now time.Time, kind CallbackKind, err error) []Action {
	rec := &m.rec
	failed := Rebalance{Phase: RebalanceFailed}
	if rec.running != nil {
		failed.TargetAt = rec.running.targetAt
	}
	rec.running = nil
	rec.failures++
	rec.retryAt = now.Add(m.cfg.Backoff.Delay(rec.failures - 1))
	return []Action{failed, m.emit(Event{Kind: EventError, Err: &CallbackError{Callback: kind, Err: err},
		Message: "the reconciliation is retried; the member keeps its previous assignment meanwhile"})}
}

// reconcilingTargetAt is when the target of reconciliation id arrived.
func (m *Machine) reconcilingTargetAt(id uint64) time.Time {
	if r := m.reconciling(id); r != nil {
		return r.targetAt
	}
	return time.Time{}
}

// abortReconciliation forgets the running reconciliation and any retry: a callback of it that is
// still running finds it gone when it returns.
func (m *Machine) abortReconciliation() {
	m.rec.running, m.rec.retryAt, m.rec.failures = nil, time.Time{}, 0
}

// loseAll records that the application holds nothing any more (after OnAllTasksLost or a leave).
func (m *Machine) loseAll() {
	rec := &m.rec
	rec.current, rec.currentReady, rec.hasCurrent, rec.revoked = tasks.Assignment{}, false, false, tasks.Set{}
}

func (m *Machine) published() tasks.Assignment {
	if m.rec.lost {
		return tasks.Assignment{}
	}
	return m.held()
}

// loseLocally gives up what the application holds without leaving the group (the session guard,
// session.go): the callback running now is asked to stop (its context cancelled), the loss shows at
// once, OnAllTasksLost follows for whatever the application holds when it starts, and the member
// stays in the group at its epoch, RECONCILING toward the target it takes back after an answer.
func (m *Machine) loseLocally(ev Event) []Action {
	m.abortReconciliation()
	m.rec.lost = true
	out := m.transition(Reconciling)
	out = append(out, m.emit(ev))
	if j := m.jobs.running; j != nil {
		out = append(out, CancelCallback{Seq: j.seq})
	}
	return append(out, m.enqueue(job{op: opLoseLocally})...)
}

// lostLocally goes on once OnAllTasksLost of the session guard returned: the target is reconciled
// again as soon as the broker answered.
func (m *Machine) lostLocally(j job, err error) []Action {
	var out []Action
	if err != nil {
		out = append(out, Log{Level: slog.LevelWarn, Msg: "OnAllTasksLost failed", Attrs: []any{"err", err}})
	}
	m.loseAll()
	m.rec.lost = false
	return append(out, m.maybeReconcile()...)
}

// fence: lose everything, then rejoin at epoch 0 with the same member ID (Kafka's
// StreamsMembershipManager.onFenced).
func (m *Machine) fence(now time.Time, err error) []Action {
	m.hb.failures++
	if m.hb.failures > 1 {
		m.hb.rejoinDelay = m.cfg.Backoff.Delay(m.hb.failures - 2)
	}
	return m.loseThenRejoin(Event{Kind: EventFenced, Err: err})
}

// loseThenRejoin moves to FENCED, reports ev, drops the reconciliation under way and queues
// OnAllTasksLost followed by a rejoin at epoch 0: what a fencing by the broker and a session the
// member gave up (session.go) have in common.
func (m *Machine) loseThenRejoin(ev Event) []Action {
	out := m.transition(Fenced)
	out = append(out, m.emit(ev))
	m.abortReconciliation()
	return append(out, m.enqueue(job{op: opLoseThenRejoin})...)
}

func (m *Machine) lostThenRejoin(now time.Time, j job, err error) []Action {
	var out []Action
	if err != nil {
		out = append(out, Log{Level: slog.LevelWarn, Msg: "OnAllTasksLost failed; rejoining anyway", Attrs: []any{"err", err}})
	}
	m.loseAll()
	if m.state != Fenced {
		return out
	}
	m.rec.hasTarget, m.rec.target = false, tasks.Assignment{}
	m.session.rejoined()
	m.epoch = heartbeat.EpochJoin
	m.hb.at = now.Add(m.hb.rejoinDelay)
	m.offsets.trigger = true
	return append(out, m.transition(Joining)...)
}

// fatalStop is a fatal error on its way to stopping the member: OnAllTasksLost runs first, and for
// a refused topology the group is described so that the error can name both topologies.
type fatalStop struct {
	err        error
	lostDone   bool
	describing bool
}

// fail stops the member for good (invariant 6).
func (m *Machine) fail(err error) []Action {
	if m.state == Fatal {
		return nil
	}
	out := m.transition(Fatal)
	m.abortReconciliation()
	m.fatal = &fatalStop{err: err}
	if isTopologyMismatch(err) {
		m.fatal.describing = true
		out = append(out, m.requestDescribe()...)
	}
	return append(out, m.enqueue(job{op: opLoseThenStop})...)
}

func (m *Machine) lostThenStop(j job, err error) []Action {
	var out []Action
	if err != nil {
		out = append(out, Log{Level: slog.LevelWarn, Msg: "OnAllTasksLost failed", Attrs: []any{"err", err}})
	}
	m.loseAll()
	m.fatal.lostDone = true
	return append(out, m.maybeStopFatal()...)
}

func (m *Machine) maybeStopFatal() []Action {
	f := m.fatal
	if f == nil || !f.lostDone || f.describing {
		return nil
	}
	ev := Event{Kind: EventFatal, Err: f.err}
	if te, ok := errors.AsType[*TopologyError](f.err); ok {
		ev.GroupTopology = &te.Mismatch
	}
	return append([]Action{m.emit(ev)}, m.finish(f.err)...)
}
