package membership

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The Machine is the member's state machine: a plain value that takes inputs (a heartbeat answer or
// failure, a finished callback, a close or shutdown request, the passing of time) and returns
// actions (send this heartbeat, run this callback, publish this event, stop). It has no goroutines,
// clock or I/O: time comes in as an argument and randomness through the backoff's Rand, so a test
// can drive it step by step and get the same result every time. The Manager runs it.
//
// Invariants (each has a test in machine_test.go or property_test.go):
//
//  1. The member reports as owned only tasks the application was handed by OnTasksAssigned; it stops
//     reporting an active task only after OnTasksRevoked (or OnAllTasksLost) for it returned.
//  2. Revocation before assignment, always; OnTasksAssigned receives the whole target assignment.
//  3. At most one callback is outstanding at a time, and callbacks never wait for heartbeats or
//     block them: heartbeats are due by time alone while a callback runs.
//  4. After any error the next heartbeat is a full one (every join field except the topology).
//  5. Fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): OnAllTasksLost, then rejoin at epoch 0 with
//     the same member ID.
//  6. A fatal error stops the member after OnAllTasksLost and produces exactly one Done with a typed
//     error; every input after that is ignored.
//  7. Unknown status codes are ignored (reported once); a task of an unknown subtopology is a fatal,
//     typed error, never a panic.
//  8. The machine is deterministic: the same inputs at the same times give the same actions.
//  9. Never two heartbeats in flight (a leave may overtake a stuck heartbeat, whose answer is then
//     ignored).
//  10. Only the transitions of PROTOCOL §6 happen (CanTransition).
type Machine struct {
	cfg MachineConfig
	b   *heartbeat.Builder

	state         State
	epoch         int32
	endpointEpoch int32
	interval      time.Duration
	nextAt        time.Time // when the next heartbeat is due (Stable/Reconciling, or after a failure)
	inFlight      bool
	failures      int // heartbeats failed in a row, for backoff
	shutdown      bool

	// current is what the application owns (reconciled); hasCurrent is false until the first
	// OnTasksAssigned, so the first answer always reconciles and tells the application readiness.
	current      tasks.Assignment
	currentReady bool
	hasCurrent   bool
	// target is the broker's latest target; targetGen counts its changes (tasks or readiness).
	target      tasks.Assignment
	targetReady bool
	hasTarget   bool
	targetGen   uint64
	recon       *reconciliation
	retryRecon  time.Time // a failed reconciliation is retried at this time

	seq     uint64       // last callback sequence number
	pending *callback    // the outstanding callback
	queue   []*callback  // callbacks waiting for the outstanding one
	leave   *leaveIntent // set by Leave
	done    bool

	// statuses as last reported, for change events
	statuses        []heartbeat.Status
	missingSince    time.Time
	missingReported bool
	unknownSeen     map[heartbeat.StatusCode]bool

	// task offsets (Kafka 4.4)
	offsetsSupported   bool
	acceptableLag      int64
	brokerOffsetEvery  time.Duration
	lastOffsetsAt      time.Time
	offsetsAfterChange bool // the owned assignment changed since offsets were last sent
}

// MachineConfig is what the machine needs to know up front.
type MachineConfig struct {
	Member  heartbeat.Member
	Backoff heartbeat.Backoff
	// TaskOffsetInterval from the config: 0 follows the broker; never below the broker's.
	TaskOffsetInterval time.Duration
}

type reconciliation struct {
	target    tasks.Assignment
	ready     bool
	gen       uint64
	assigning bool // false while revoking
}

type leaveIntent struct {
	epoch int32 // EpochLeave or EpochLeaveStatic
	skip  bool  // remain in group: no leave heartbeat
}

// CallbackKind names the listener callback an Invoke action runs.
type CallbackKind int

const (
	CallbackRevoked  CallbackKind = iota + 1 // OnTasksRevoked(Tasks)
	CallbackAssigned                         // OnTasksAssigned(Assignment, Ready)
	CallbackLost                             // OnAllTasksLost(Assignment)
)

func (k CallbackKind) String() string {
	switch k {
	case CallbackRevoked:
		return "OnTasksRevoked"
	case CallbackAssigned:
		return "OnTasksAssigned"
	case CallbackLost:
		return "OnAllTasksLost"
	}
	return fmt.Sprintf("CallbackKind(%d)", int(k))
}

type callback struct {
	seq        uint64
	kind       CallbackKind
	tasks      tasks.Set
	assignment tasks.Assignment
	ready      bool
	then       func(m *Machine, now time.Time, err error) []Action // continuation
	// fill, when set, decides the callback's arguments from what is owned at the moment it starts
	// (an earlier callback may have changed that); false skips the callback and runs then at once.
	fill func(m *Machine, cb *callback) bool
}

// Action is what the Manager must do for the machine.
type Action interface{ isAction() }

// Send asks the Manager to send a heartbeat. A leave (Leave true) is retried by the transport and
// its answer is not fed back.
type Send struct {
	Request *kmsg.StreamsGroupHeartbeatRequest
	Leave   bool
}

// Invoke asks the Manager to run a listener callback and to report CallbackDone{Seq, Err}.
type Invoke struct {
	Seq        uint64
	Kind       CallbackKind
	Tasks      tasks.Set        // CallbackRevoked
	Assignment tasks.Assignment // CallbackAssigned (whole target), CallbackLost (what was owned)
	Ready      bool             // CallbackAssigned
}

// Emit asks the Manager to publish an event.
type Emit struct{ Event Event }

// Done says the member has stopped: Err is nil after a leave, the typed error after a fatal one.
type Done struct{ Err error }

func (Send) isAction()   {}
func (Invoke) isAction() {}
func (Emit) isAction()   {}
func (Done) isAction()   {}

// NewMachine returns a machine in Unsubscribed.
func NewMachine(cfg MachineConfig) *Machine {
	return &Machine{
		cfg:                cfg,
		b:                  heartbeat.NewBuilder(cfg.Member),
		endpointEpoch:      -1,
		acceptableLag:      -1,
		offsetsSupported:   cfg.Member.SupportsV1Offsets,
		unknownSeen:        make(map[heartbeat.StatusCode]bool),
		offsetsAfterChange: true,
	}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Epoch returns the member epoch.
func (m *Machine) Epoch() int32 { return m.epoch }

// MemberID returns the member ID (fixed for the member's life).
func (m *Machine) MemberID() string { return m.cfg.Member.MemberID }

// Owned returns the assignment the application owns.
func (m *Machine) Owned() (tasks.Assignment, bool) { return m.current, m.currentReady }

// Done reports whether the machine has stopped.
func (m *Machine) Done() bool { return m.done }

// InFlight reports whether a heartbeat is awaiting its answer.
func (m *Machine) InFlight() bool { return m.inFlight }

func (m *Machine) transition(to State) []Action {
	if m.state == to {
		return nil
	}
	if !CanTransition(m.state, to) {
		panic(fmt.Sprintf("membership: illegal transition %s -> %s", m.state, to)) // a bug in this file
	}
	m.state = to
	return []Action{m.emit(Event{Kind: EventStateChanged})}
}

func (m *Machine) emit(e Event) Emit {
	e.State, e.MemberID, e.Epoch = m.state, m.cfg.Member.MemberID, m.epoch
	return Emit{Event: e}
}

// invoke queues a callback; it is handed to the Manager when no other is outstanding (invariant 3).
func (m *Machine) invoke(now time.Time, cb *callback) []Action {
	m.seq++
	cb.seq = m.seq
	m.queue = append(m.queue, cb)
	return m.drain(now)
}

// drain starts the next queued callback if none is outstanding.
func (m *Machine) drain(now time.Time) []Action {
	var out []Action
	for m.pending == nil && len(m.queue) > 0 && !m.done {
		cb := m.queue[0]
		m.queue = m.queue[1:]
		if cb.fill != nil && !cb.fill(m, cb) {
			if cb.then != nil {
				out = append(out, cb.then(m, now, nil)...)
			}
			continue
		}
		m.pending = cb
		out = append(out, Invoke{Seq: cb.seq, Kind: cb.kind, Tasks: cb.tasks, Assignment: cb.assignment, Ready: cb.ready})
	}
	return out
}

// fillLost makes a callback OnAllTasksLost(everything owned), skipped when nothing is owned.
func fillLost(m *Machine, cb *callback) bool {
	if !m.hasCurrent || m.current.IsEmpty() {
		return false
	}
	cb.kind, cb.assignment = CallbackLost, m.current
	return true
}

// SetTaskOffsetsSupported says, before Start, whether the cluster takes task offsets (Kafka 4.4+), as
// learned from ApiVersions; later the broker's answers keep it current.
func (m *Machine) SetTaskOffsetsSupported(ok bool) {
	m.offsetsSupported = ok
	m.b.SetSupportsOffsets(ok)
}

// Start begins joining the group: the first heartbeat is due at once.
func (m *Machine) Start(now time.Time) []Action {
	if m.state != Unsubscribed || m.done {
		return nil
	}
	m.epoch = heartbeat.EpochJoin
	m.nextAt = now
	return m.transition(Joining)
}

// Next returns when Tick must next be called; the zero time means only another input can make
// anything happen.
func (m *Machine) Next() time.Time {
	if m.done {
		return time.Time{}
	}
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if m.canHeartbeat() && !m.inFlight {
		consider(m.nextAt)
	}
	if m.state == Reconciling && m.recon == nil && m.pending == nil {
		consider(m.retryRecon)
	}
	if !m.missingSince.IsZero() && !m.missingReported {
		consider(m.missingSince.Add(2 * m.interval))
	}
	return next
}

func (m *Machine) canHeartbeat() bool {
	switch m.state {
	case Joining, Reconciling, Acknowledging, Stable, Leaving:
		return true
	}
	return false
}

// WantsOffsets reports whether the next heartbeat may carry task offsets, so the Manager asks the
// application for them only then.
func (m *Machine) WantsOffsets(now time.Time) bool {
	if !m.offsetsSupported || m.state == Leaving || !m.canHeartbeat() {
		return false
	}
	return m.state == Joining || m.offsetsAfterChange || !m.current.Warmup.IsEmpty() || m.offsetsIntervalDue(now)
}

func (m *Machine) offsetsInterval() time.Duration {
	every := m.brokerOffsetEvery
	if m.cfg.TaskOffsetInterval > every {
		every = m.cfg.TaskOffsetInterval
	}
	return every
}

func (m *Machine) offsetsIntervalDue(now time.Time) bool {
	every := m.offsetsInterval()
	return every > 0 && !now.Before(m.lastOffsetsAt.Add(every))
}

// hotWarmup reports whether a warm-up task is within the acceptable recovery lag, in which case the
// broker wants offsets at once to move the active task (PROTOCOL §8).
func (m *Machine) hotWarmup(offsets, ends tasks.Offsets) bool {
	if m.acceptableLag < 0 || offsets == nil || ends == nil {
		return false
	}
	for id := range m.current.Warmup.All() {
		o, ok1 := offsets[id]
		e, ok2 := ends[id]
		if !ok1 || !ok2 || o == tasks.UnknownOffset || e == tasks.UnknownOffset || o < 0 || e < 0 {
			continue
		}
		if e-o <= m.acceptableLag {
			return true
		}
	}
	return false
}

// Tick lets time pass: it sends a heartbeat when one is due, retries a failed reconciliation, and
// reports source topics missing for too long. offsets and ends are the application's task offsets,
// or nil when WantsOffsets was false or no provider is set.
func (m *Machine) Tick(now time.Time, offsets, ends tasks.Offsets) []Action {
	if m.done {
		return nil
	}
	var out []Action
	if !m.missingSince.IsZero() && !m.missingReported && m.interval > 0 && !now.Before(m.missingSince.Add(2*m.interval)) {
		m.missingReported = true
		topics := m.statusTopics(heartbeat.MissingSourceTopics)
		out = append(out, m.emit(Event{Kind: EventMissingSourceTopicsTimeout, Topics: topics,
			Err: fmt.Errorf("source topics %v are still missing after two heartbeat intervals: create them; "+
				"the member keeps waiting and gets tasks once they exist", topics)}))
	}
	if m.state == Reconciling && m.recon == nil && m.pending == nil && !m.retryRecon.IsZero() && !now.Before(m.retryRecon) {
		m.retryRecon = time.Time{}
		out = append(out, m.maybeReconcile(now)...)
	}
	if m.heartbeatDue(now) {
		out = append(out, m.sendHeartbeat(now, offsets, ends)...)
	}
	return out
}

func (m *Machine) heartbeatDue(now time.Time) bool {
	if !m.canHeartbeat() {
		return false
	}
	if m.state == Leaving {
		return true // a leave goes at once, even past a stuck heartbeat
	}
	if m.inFlight {
		return false
	}
	if m.failures > 0 && now.Before(m.nextAt) {
		return false // backing off after an error
	}
	switch m.state {
	case Joining, Acknowledging:
		return true
	}
	return !now.Before(m.nextAt)
}

func (m *Machine) sendHeartbeat(now time.Time, offsets, ends tasks.Offsets) []Action {
	if m.state == Leaving {
		req := m.b.Build(heartbeat.State{Epoch: m.leave.epoch, EndpointEpoch: m.endpointEpoch, Shutdown: m.shutdown})
		out := []Action{Send{Request: req, Leave: true}}
		out = append(out, m.transition(Unsubscribed)...)
		return append(out, m.finish(nil)...)
	}
	sendOffsets := m.offsetsSupported && offsets != nil &&
		(m.offsetsAfterChange || m.offsetsIntervalDue(now) || m.hotWarmup(offsets, ends))
	req := m.b.Build(heartbeat.State{
		Epoch:         m.epoch,
		EndpointEpoch: m.endpointEpoch,
		Owned:         m.current,
		Shutdown:      m.shutdown,
		Offsets:       offsets,
		EndOffsets:    ends,
		SendOffsets:   sendOffsets,
	})
	if sendOffsets {
		m.offsetsAfterChange = false // the assignment-change trigger is used up
	}
	if req.TaskOffsets != nil || req.TaskEndOffsets != nil {
		m.lastOffsetsAt = now // the interval clock moves only when offsets were sent
	}
	m.inFlight = true
	out := []Action{Send{Request: req}}
	if m.state == Acknowledging {
		if m.targetDiffers() {
			out = append(out, m.transition(Reconciling)...)
			out = append(out, m.maybeReconcile(now)...)
		} else {
			out = append(out, m.transition(Stable)...)
		}
	}
	return out
}

// targetDiffers reports whether the target (tasks or readiness) differs from what is owned.
func (m *Machine) targetDiffers() bool {
	return m.hasTarget && (!m.hasCurrent || !m.current.Equal(m.target) || m.currentReady != m.targetReady)
}

// HeartbeatAnswered feeds a successful answer (error code 0), already parsed.
func (m *Machine) HeartbeatAnswered(now time.Time, r *heartbeat.Response) []Action {
	m.inFlight = false
	if m.done || r.Epoch < 0 {
		return nil
	}
	m.failures = 0
	switch m.state {
	case Joining, Reconciling, Acknowledging, Stable:
	default:
		return nil // Unsubscribed, Fenced, Fatal, Stale, PrepareLeaving, Leaving ignore answers
	}
	var out []Action
	m.epoch = r.Epoch
	if r.Interval > 0 {
		m.interval = r.Interval
	}
	m.nextAt = now.Add(m.interval)
	m.endpointEpoch = r.EndpointEpoch
	if r.Endpoints != nil {
		out = append(out, m.emit(Event{Kind: EventEndpointsChanged, Endpoints: r.Endpoints}))
	}
	supported := r.Version >= 1 && r.AcceptableRecoveryLag >= 0
	if supported != m.offsetsSupported {
		m.offsetsSupported = supported
		m.b.SetSupportsOffsets(supported)
	}
	m.acceptableLag = r.AcceptableRecoveryLag
	m.brokerOffsetEvery = r.TaskOffsetInterval
	out = append(out, m.updateStatuses(now, r.Statuses)...)

	ready := r.Ready()
	newTarget := m.target
	if r.Assignment != nil {
		newTarget = r.Assignment.Normalize()
	}
	if !m.hasTarget || !newTarget.Equal(m.target) || ready != m.targetReady {
		m.target, m.targetReady, m.hasTarget = newTarget, ready, true
		m.targetGen++
	}
	if m.targetDiffers() {
		if m.state != Acknowledging {
			out = append(out, m.transition(Reconciling)...)
			out = append(out, m.maybeReconcile(now)...)
		}
		// In Acknowledging the ack heartbeat goes first; building it moves on to Reconciling.
	} else if m.state == Joining || (m.state == Reconciling && m.recon == nil && m.pending == nil) {
		out = append(out, m.transition(Stable)...)
	}
	return out
}

// maybeReconcile starts a reconciliation toward the target when none runs (PROTOCOL §6): revoke the
// active tasks no longer assigned, then hand the whole target to OnTasksAssigned.
func (m *Machine) maybeReconcile(now time.Time) []Action {
	if m.state != Reconciling || m.recon != nil || !m.retryRecon.IsZero() {
		return nil
	}
	if !m.targetDiffers() {
		return m.transition(Stable)
	}
	r := &reconciliation{target: m.target, ready: m.targetReady, gen: m.targetGen}
	m.recon = r
	revoked := m.current.Active.Difference(r.target.Active)
	if m.hasCurrent && !revoked.IsEmpty() {
		return m.invoke(now, &callback{kind: CallbackRevoked, tasks: revoked, then: func(m *Machine, now time.Time, err error) []Action {
			return m.revokeDone(now, r, err)
		}})
	}
	return m.assign(now, r)
}

func (m *Machine) assign(now time.Time, r *reconciliation) []Action {
	r.assigning = true
	return m.invoke(now, &callback{kind: CallbackAssigned, assignment: r.target, ready: r.ready,
		then: func(m *Machine, now time.Time, err error) []Action { return m.assignDone(now, r, err) }})
}

func (m *Machine) aborted(r *reconciliation) bool { return m.recon != r || m.state != Reconciling }

func (m *Machine) revokeDone(now time.Time, r *reconciliation, err error) []Action {
	if m.aborted(r) {
		return nil
	}
	if err != nil {
		return m.reconcileFailed(now, CallbackRevoked, err)
	}
	if r.gen != m.targetGen {
		// A newer target arrived while revoking: start over from it. What was revoked stays revoked
		// for the application; the new target's OnTasksAssigned hands back whatever it still holds.
		m.recon = nil
		return m.maybeReconcile(now)
	}
	return m.assign(now, r)
}

func (m *Machine) assignDone(now time.Time, r *reconciliation, err error) []Action {
	if err != nil {
		if m.aborted(r) {
			return nil
		}
		return m.reconcileFailed(now, CallbackAssigned, err)
	}
	// The application holds the target now, whatever happened meanwhile (invariant 1): a later
	// OnAllTasksLost or leave must cover it.
	changed := !m.hasCurrent || !m.current.Equal(r.target)
	readyChanged := !m.hasCurrent || m.currentReady != r.ready
	m.current, m.currentReady, m.hasCurrent = r.target, r.ready, true
	if changed {
		m.offsetsAfterChange = true
	}
	if m.aborted(r) {
		return nil
	}
	m.recon = nil
	out := []Action{m.emit(Event{Kind: EventAssigned, Assignment: r.target, Ready: r.ready})}
	if readyChanged {
		out = append(out, m.emit(Event{Kind: EventGroupReadyChanged, Ready: r.ready}))
	}
	// Acknowledge at once, even when a newer target is already known: the broker must learn what the
	// application owns now. Building the ack moves on to Reconciling if the target moved.
	return append(out, m.transition(Acknowledging)...)
}

func (m *Machine) reconcileFailed(now time.Time, kind CallbackKind, err error) []Action {
	m.recon = nil
	m.retryRecon = now.Add(m.cfg.Backoff.Delay(0))
	return []Action{m.emit(Event{Kind: EventError, Err: &CallbackError{Callback: kind, Err: err},
		Message: "the reconciliation is retried; the member keeps its previous assignment meanwhile"})}
}

// CallbackError is a listener callback that returned an error (or panicked).
type CallbackError struct {
	Callback CallbackKind
	Err      error
}

func (e *CallbackError) Error() string { return fmt.Sprintf("%s failed: %v", e.Callback, e.Err) }
func (e *CallbackError) Unwrap() error { return e.Err }

// CallbackDone feeds the result of the callback with sequence number seq.
func (m *Machine) CallbackDone(now time.Time, seq uint64, err error) []Action {
	if m.pending == nil || m.pending.seq != seq {
		return nil
	}
	cb := m.pending
	m.pending = nil
	var out []Action
	if cb.then != nil {
		out = cb.then(m, now, err)
	}
	return append(out, m.drain(now)...)
}

// HeartbeatFailed feeds a heartbeat that failed: an answer with an error code (*heartbeat.Error),
// no answer (*heartbeat.TransportError), or an answer the member cannot use (*heartbeat.ProtocolError,
// *tasks.UnknownSubtopologyError).
func (m *Machine) HeartbeatFailed(now time.Time, err error) []Action {
	m.inFlight = false
	if m.done {
		return nil
	}
	switch m.state {
	case Joining, Reconciling, Acknowledging, Stable:
	case PrepareLeaving, Leaving:
		if classOf(err) == heartbeat.Fenced {
			// Fenced while leaving: the broker already forgot us; the leave is complete.
			m.leave = &leaveIntent{skip: true, epoch: heartbeat.EpochLeave}
		}
		return nil
	default:
		return nil
	}
	m.b.Reset() // invariant 4: after any error the next heartbeat is full
	switch classOf(err) {
	case heartbeat.Retry, heartbeat.Rediscover:
		m.failures++
		m.nextAt = now.Add(m.cfg.Backoff.Delay(m.failures - 1))
		return nil
	case heartbeat.KeepState:
		m.failures++
		m.nextAt = now.Add(m.cfg.Backoff.Delay(m.failures - 1))
		return []Action{m.emit(Event{Kind: EventError, Err: err})}
	case heartbeat.Fenced:
		return m.fence(now, err)
	default:
		return m.fail(now, err)
	}
}

func classOf(err error) heartbeat.Class {
	if he, ok := errors.AsType[*heartbeat.Error](err); ok {
		return he.Class
	}
	if te, ok := errors.AsType[*heartbeat.TransportError](err); ok {
		return te.Class
	}
	return heartbeat.Fatal
}

// fence: lose everything, then rejoin at epoch 0 with the same member ID, without backoff.
func (m *Machine) fence(now time.Time, err error) []Action {
	out := m.transition(Fenced)
	out = append(out, m.emit(Event{Kind: EventFenced, Err: err}))
	m.recon, m.retryRecon = nil, time.Time{}
	rejoin := func(m *Machine, now time.Time, _ error) []Action {
		if m.state != Fenced {
			return nil
		}
		m.current, m.currentReady, m.hasCurrent = tasks.Assignment{}, false, false
		m.hasTarget, m.target = false, tasks.Assignment{}
		m.epoch = heartbeat.EpochJoin
		m.failures = 0
		m.nextAt = now
		m.offsetsAfterChange = true
		return m.transition(Joining)
	}
	return append(out, m.invoke(now, &callback{fill: fillLost, then: rejoin})...)
}

// fail stops the member for good (invariant 6).
func (m *Machine) fail(now time.Time, err error) []Action {
	out := m.transition(Fatal)
	m.recon = nil
	stop := func(m *Machine, _ time.Time, _ error) []Action {
		m.current, m.hasCurrent = tasks.Assignment{}, false
		return append([]Action{m.emit(Event{Kind: EventFatal, Err: err})}, m.finish(err)...)
	}
	return append(out, m.invoke(now, &callback{fill: fillLost, then: stop})...)
}

// Fail stops the member with err from outside the heartbeat path (for example the cluster turned out
// not to support what the configuration asks for).
func (m *Machine) Fail(now time.Time, err error) []Action {
	if m.done || m.state == Fatal {
		return nil
	}
	if m.state == Fenced || m.state == Stale {
		m.state = Unsubscribed // nothing owned is left to lose; Fatal is reachable from here
	}
	return m.fail(now, err)
}

func (m *Machine) finish(err error) []Action {
	if m.done {
		return nil
	}
	m.done = true
	m.pending, m.queue = nil, nil
	return []Action{Done{Err: err}}
}

// RequestShutdown makes every following heartbeat ask the group to shut down; one goes at once.
func (m *Machine) RequestShutdown(now time.Time) []Action {
	if m.done || m.shutdown {
		return nil
	}
	m.shutdown = true
	m.nextAt = now
	return nil
}

// Leave starts leaving: revoke the owned active tasks (OnTasksRevoked, or OnAllTasksLost when the
// member never got past epoch 0), then send the leave heartbeat. static says whether the member has
// a group.instance.id.
func (m *Machine) Leave(now time.Time, mode CloseMode) []Action {
	if m.done {
		return nil
	}
	static := m.cfg.Member.InstanceID != ""
	intent := &leaveIntent{epoch: heartbeat.EpochLeave}
	switch {
	case static && mode != CloseLeaveGroup:
		intent.epoch = heartbeat.EpochLeaveStatic
	case !static && mode == CloseRemainInGroup:
		intent.skip = true
	}
	switch m.state {
	case Unsubscribed, Fenced, Stale:
		// Not in the group: nothing to send (a fenced member's tasks are already being lost).
		out := []Action{}
		if m.state == Fenced {
			m.state = Unsubscribed // Fenced -> Unsubscribed is allowed; no event needed for a member that stops
		}
		return append(out, m.finish(nil)...)
	case Fatal, PrepareLeaving, Leaving:
		return nil
	}
	m.leave = intent
	m.recon, m.retryRecon = nil, time.Time{}
	out := m.transition(PrepareLeaving)
	proceed := func(m *Machine, now time.Time, _ error) []Action {
		if m.state != PrepareLeaving {
			return nil
		}
		m.current, m.currentReady, m.hasCurrent = tasks.Assignment{}, false, false
		if m.leave.skip {
			out := m.transition(Unsubscribed)
			out = append(out, m.emit(Event{Kind: EventLeft, Message: "remaining in the group until the session times out"}))
			return append(out, m.finish(nil)...)
		}
		out := m.transition(Leaving)
		out = append(out, m.emit(Event{Kind: EventLeft}))
		return append(out, m.sendHeartbeat(now, nil, nil)...)
	}
	// Revoke what is owned once any outstanding callback is done (it may still change that).
	return append(out, m.invoke(now, &callback{fill: fillLeaveRevoke, then: proceed})...)
}

// fillLeaveRevoke makes the leave's callback: OnTasksRevoked(owned active tasks) for a member that
// got past epoch 0, else OnAllTasksLost(everything owned); skipped when nothing is owned.
func fillLeaveRevoke(m *Machine, cb *callback) bool {
	switch {
	case m.hasCurrent && !m.current.Active.IsEmpty() && m.epoch > 0:
		cb.kind, cb.tasks = CallbackRevoked, m.current.Active
		return true
	case m.hasCurrent && !m.current.IsEmpty():
		cb.kind, cb.assignment = CallbackLost, m.current
		return true
	}
	return false
}

// statusEvents maps each known status to the event that reports it.
var statusEvents = map[heartbeat.StatusCode]EventKind{
	heartbeat.StaleTopology:                EventStaleTopology,
	heartbeat.MissingSourceTopics:          EventMissingSourceTopics,
	heartbeat.IncorrectlyPartitionedTopics: EventIncorrectlyPartitionedTopics,
	heartbeat.MissingInternalTopics:        EventMissingInternalTopics,
	heartbeat.ShutdownApplication:          EventShutdownRequested,
	heartbeat.AssignmentDelayed:            EventAssignmentDelayed,
	heartbeat.MissingClientTags:            EventMissingClientTags,
}

// updateStatuses turns the answer's statuses into events when they change (no repeats in the steady
// state), and tracks how long source topics have been missing.
func (m *Machine) updateStatuses(now time.Time, statuses []heartbeat.Status) []Action {
	if slices.Equal(statuses, m.statuses) {
		return nil
	}
	var out []Action
	for _, s := range statuses {
		if slices.Contains(m.statuses, s) {
			continue
		}
		st := s
		ev := Event{Status: &st, Topics: s.Topics(), Message: s.Detail}
		if kind, ok := statusEvents[s.Code]; ok {
			ev.Kind = kind
		} else {
			if m.unknownSeen[s.Code] {
				continue
			}
			m.unknownSeen[s.Code] = true
			ev.Kind = EventUnknownStatus
		}
		out = append(out, m.emit(ev))
	}
	for _, s := range m.statuses {
		if !slices.Contains(statuses, s) && s.Code.Known() {
			st := s
			out = append(out, m.emit(Event{Kind: EventStatusCleared, Status: &st, Topics: s.Topics(), Message: s.Detail}))
		}
	}
	m.statuses = slices.Clone(statuses)
	missing := slices.ContainsFunc(statuses, func(s heartbeat.Status) bool { return s.Code == heartbeat.MissingSourceTopics })
	switch {
	case missing && m.missingSince.IsZero():
		m.missingSince = now
	case !missing:
		m.missingSince, m.missingReported = time.Time{}, false
	}
	return out
}

func (m *Machine) statusTopics(c heartbeat.StatusCode) []string {
	for _, s := range m.statuses {
		if s.Code == c {
			return s.Topics()
		}
	}
	return nil
}
