package machine

import (
	"fmt"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The Machine is the member's state machine: a plain value that takes inputs (Step) and returns
// actions (io.go lists the pairs). It decides everything: when to probe, heartbeat, describe or
// leave, what each request carries, how an answer or error is classified, which callback runs with
// which tasks, and every error text. It has no goroutines, clock or I/O: time comes in with each
// input and randomness only through the backoff's Rand, so a test drives it step by step. The
// Manager runs it, as etcd raft's node drives its RawNode. Pending work is data (job, reconciliation,
// leaveIntent, fatalStop values), never a closure, so it can be printed (String).
//
// Invariants (each has a test; property_test.go checks 1–4, 6, 9 and 10 after every step of random
// input sequences):
//
//  1. The member reports as owned only tasks the application was handed by OnTasksAssigned; it stops
//     reporting an active task only after OnTasksRevoked (or OnAllTasksLost) for it returned. A
//     callback never names a task the application does not hold: once OnTasksRevoked returned for a
//     task, no later OnTasksRevoked or OnAllTasksLost names it until it is assigned again.
//  2. Revocation before assignment, always; OnTasksAssigned receives the whole target assignment.
//  3. At most one callback is outstanding at a time, and callbacks never wait for heartbeats or
//     block them: heartbeats are due by time alone while a callback runs (PrepareLeaving included).
//  4. After any error the next heartbeat is a full one (every join field except the topology, all
//     three owned task lists, and task offsets when the broker takes them).
//  5. Fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): OnAllTasksLost, then rejoin at epoch 0 with
//     the same member ID.
//  6. A fatal error stops the member after OnAllTasksLost and produces exactly one Stopped with a
//     typed error; every input after that is ignored.
//  7. Unknown status codes are ignored (reported once); a task of an unknown subtopology is a fatal,
//     typed error, never a panic.
//  8. The machine is deterministic: the same inputs at the same times give the same actions.
//  9. Never two heartbeats in flight, and never a heartbeat sooner than the rules allow: after a
//     success at the broker's interval (which must be > 0), after an error only after backoff,
//     except one immediate retry after a fencing or a coordinator move.
//  10. Only the transitions of Kafka's MemberState happen (canTransition); every state change goes
//     through transition.
type Machine struct {
	cfg Config
	b   *heartbeat.Builder

	state         State
	epoch         int32
	endpointEpoch int32
	interval      time.Duration // the broker's, from the last answer; 0 before the first
	shutdown      bool

	probe    probeState
	hb       heartbeatTiming
	rec      reconcileState
	jobs     jobQueue
	leave    *leaveIntent
	leaveSeq uint64 // of the last SendLeave (a member that left for the poll timer may leave again)
	fatal    *fatalStop
	describe describeState
	status   statusState
	offsets  offsetState
	session  sessionState
	poll     pollState

	stopped bool
	now     time.Time          // the time of the input being handled
	parsed  heartbeat.Response // the last answer read, reused so the steady heartbeat does not allocate
	// sendBuf and resultBuf hold the one action of a steady heartbeat step, so it needs no slice.
	sendBuf, resultBuf [1]Action
}

// Config is what the machine needs to know up front.
type Config struct {
	// Join describes the member as it joins; it does not change during its life.
	Join heartbeat.JoinInfo
	// Backoff paces retries after errors (retry.backoff.ms, retry.backoff.max.ms).
	Backoff heartbeat.Backoff
	// TaskOffsetInterval from the config: 0 follows the broker; never below the broker's.
	TaskOffsetInterval time.Duration
	// ReportsOffsets says the application reports task offsets (a TaskOffsetsProvider is set).
	ReportsOffsets bool
	// OffsetsWait bounds how long a heartbeat waits for CollectOffsets; after it the heartbeat goes
	// without offsets. 0 means DefaultOffsetsWait.
	OffsetsWait time.Duration
	// RequestTimeout (request.timeout.ms) is the Timeout of every network action: the most one
	// request (with its coordinator look-up) may take. 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// LeaveBudget bounds the leave: the wait for a heartbeat still out, every attempt at the leave
	// heartbeat and the backoff between them end within it from the revocation's end. 0 means
	// DefaultLeaveBudget or RequestTimeout, whichever is shorter.
	LeaveBudget time.Duration
}

// Defaults for Config.
const (
	DefaultOffsetsWait    = 250 * time.Millisecond
	DefaultLeaveBudget    = 5 * time.Second
	DefaultRequestTimeout = 30 * time.Second // request.timeout.ms's default
)

// New returns a machine in Unsubscribed; feed it Start.
func New(cfg Config) *Machine {
	if cfg.OffsetsWait <= 0 {
		cfg.OffsetsWait = DefaultOffsetsWait
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.LeaveBudget <= 0 {
		cfg.LeaveBudget = min(DefaultLeaveBudget, cfg.RequestTimeout)
	}
	m := &Machine{
		cfg:           cfg,
		b:             heartbeat.NewBuilder(cfg.Join), // sends the offsets it is given; offsetState decides
		endpointEpoch: -1,
		status:        statusState{unknownSeen: make(map[heartbeat.StatusCode]bool)},
		offsets:       offsetState{trigger: true}, // acceptableLag is read only once an answer set it
	}
	return m
}

// Snapshot is what an observer may read about a member at one moment.
type Snapshot struct {
	State    State
	MemberID string
	Epoch    int32
	// Owned is what the application holds (after OnTasksAssigned, minus tasks revoked since);
	// Ready whether the group was ready at that assignment.
	Owned   tasks.Assignment
	Ready   bool
	Stopped bool
	// TaskOffsetInterval and AcceptableRecoveryLag are the broker's, from its last answer (Kafka
	// 4.4; 0 and -1 before an answer and from older brokers): how often the group wants task offsets,
	// and how far behind a warm-up may be to take over.
	TaskOffsetInterval    time.Duration
	AcceptableRecoveryLag int64
	// SessionTimeout is the session timeout the session guard works with (the group's, as read from
	// the broker); 0 while unknown, when the guard is off.
	SessionTimeout time.Duration
}

// Snapshot returns the member's current state.
func (m *Machine) Snapshot() Snapshot {
	return Snapshot{
		State: m.state, MemberID: m.cfg.Join.MemberID, Epoch: m.epoch,
		Owned: m.published(), Ready: m.rec.currentReady, Stopped: m.stopped,
		TaskOffsetInterval: m.offsets.brokerEvery, AcceptableRecoveryLag: m.acceptableLag(),
		SessionTimeout: m.session.timeout,
	}
}

// State returns the current state.
func (m *Machine) State() State { return m.state }

// Pending describes the outstanding and queued callbacks and the reconciliation, for logs and tests
// ("" when none). It is rendered on demand, not in every Snapshot: the Manager takes a snapshot
// after every step, and nothing reads this on that path.
func (m *Machine) Pending() string { return m.pendingString() }

// acceptableLag is the broker's acceptable recovery lag, -1 until an answer said.
func (m *Machine) acceptableLag() int64 {
	if m.interval == 0 {
		return -1
	}
	return m.offsets.acceptableLag
}

// Epoch returns the member epoch.
func (m *Machine) Epoch() int32 { return m.epoch }

// Step feeds one input at time now and returns the actions to carry out, in order. After the input
// it does whatever has come due by now (a heartbeat, a retried reconciliation, a probe). The slice
// is valid until the next call of Step: carry the actions out (or copy them) before feeding the
// next input.
func (m *Machine) Step(now time.Time, in Input) []Action {
	if m.stopped {
		return nil
	}
	m.now = now
	var out []Action
	switch in := in.(type) {
	case Start:
		out = m.start(now)
	case Tick:
	case CapabilitiesKnown:
		out = m.capabilitiesKnown(now, in)
	case OffsetsCollected:
		out = m.offsetsCollected(now, in)
	case HeartbeatDone:
		out = m.heartbeatDone(now, in)
	case LeaveDone:
		out = m.leaveDone(now, in)
	case Described:
		out = m.described(in)
	case SessionDescribed:
		out = m.sessionDescribed(now, in)
	case CallbackDone:
		out = m.callbackDone(now, in)
	case Close:
		out = m.close(now, in.Mode)
	case RequestShutdown:
		out = m.requestShutdown(now)
	case Stop:
		out = m.stop()
	case Polled:
		out = m.polled(now, in)
	default:
		panic(fmt.Sprintf("membership: unknown input %T", in)) // a bug in the caller's code
	}
	return cat(out, m.due(now))
}

// Next returns when Step must next be called (with Tick) if no other input arrives; the zero time
// means only another input can make anything happen.
func (m *Machine) Next() time.Time {
	if m.stopped {
		return time.Time{}
	}
	var next time.Time
	for _, t := range m.timers() {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// timers lists when each kind of timed work is due (zero when not scheduled). It is the one place
// that says when; due acts on the same answers.
func (m *Machine) timers() [9]time.Time {
	return [9]time.Time{m.probeAt(), m.heartbeatAt(), m.reconcileRetryAt(), m.missingTimeoutAt(), m.internalWarnAt(), m.guardAt(),
		m.sessionAskAt(), m.pollAt(), m.leaveRetryAt()}
}

// due does the timed work that has come due by now.
func (m *Machine) due(now time.Time) []Action {
	var out []Action
	if at := m.probeAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.sendProbe())
	}
	if at := m.reconcileRetryAt(); !at.IsZero() && !now.Before(at) {
		m.rec.retryAt = time.Time{}
		out = cat(out, m.maybeReconcile())
	}
	if at := m.missingTimeoutAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.missingTimeout())
	}
	if at := m.internalWarnAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.internalWarn(now))
	}
	if at := m.guardAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.sessionLost(now))
	}
	if at := m.sessionAskAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.askSession())
	}
	if at := m.pollAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.askPoll())
	}
	if at := m.leaveRetryAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.sendLeave(now))
	}
	if at := m.heartbeatAt(); !at.IsZero() && !now.Before(at) {
		out = cat(out, m.heartbeat(now))
	}
	return out
}

// cat appends b to a without copying when a is empty: most steps produce one short list, and the
// steady heartbeat path should not allocate for joining lists.
func cat(a, b []Action) []Action {
	if len(a) == 0 {
		return b
	}
	return append(a, b...)
}

func (m *Machine) transition(to State) []Action {
	if m.state == to {
		return nil
	}
	if !canTransition(m.state, to) {
		panic(fmt.Sprintf("membership: illegal transition %s -> %s", m.state, to)) // a bug in this package
	}
	m.state = to
	return []Action{m.emit(Event{Kind: EventStateChanged})}
}

func (m *Machine) emit(e Event) Emit {
	e.State, e.MemberID, e.Epoch = m.state, m.cfg.Join.MemberID, m.epoch
	return Emit{Event: e}
}

// finish stops the machine: the last action it ever returns.
func (m *Machine) finish(err error) []Action {
	if m.stopped {
		return nil
	}
	m.stopped = true
	m.jobs = jobQueue{}
	return []Action{Stopped{Err: err}}
}

// stop ends the member at once (Close ran out of time). A member already failing stops with its
// fatal error (invariant 6), which has not been reported yet.
func (m *Machine) stop() []Action {
	var err error
	switch {
	case m.fatal != nil:
		err = m.fatal.err
	case m.leave != nil && m.leave.fatal != nil:
		err = m.leave.fatal
	default:
		return m.finish(nil)
	}
	out := m.transition(Fatal)
	out = append(out, m.emit(Event{Kind: EventFatal, Err: err}))
	return append(out, m.finish(err)...)
}

// start probes the cluster before joining: a member that cannot join (streams groups off, static
// membership unsupported) fails before it sends a heartbeat.
func (m *Machine) start(now time.Time) []Action {
	if m.probe.started {
		return nil
	}
	m.probe.started = true
	m.probe.at = now
	return nil
}
