package membership

import (
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Metrics. The Manager measures (it is the executor: it knows when a heartbeat left and its answer
// came back, when a callback started and returned) and counts, but classifies nothing: how a
// heartbeat answer was read comes from the machine's HeartbeatResult action, a reconciliation's
// progress from its Rebalance actions, and state, epoch and assignment from its Snapshot.
//
// Two ways to read them: Manager.Stats, a snapshot of counters and gauges, always kept (a few
// additions per heartbeat); and hooks (WithHooks), values that implement any of the Hook interfaces
// below and are told as things happen, as franz-go's kgo hooks are. A Manager without hooks calls
// none. The Prometheus adapter (module github.com/streamsgroup/streamsgroup/plugin/sgprom) is such a
// hook.
//
// Hooks are called on the member's loop goroutine, one at a time and in the order things happened,
// never with a lock held (a hook may call Stats, Assignment, Member or State). They must return
// quickly: heartbeats wait while a hook runs.

// Hook is a value that implements one or more of the Hook* interfaces; WithHooks installs it. A
// value that implements none of them is ignored.
type Hook any

// HookHeartbeatSent is told when a heartbeat is handed to the transport (not the leave heartbeat).
type HookHeartbeatSent interface {
	OnHeartbeatSent()
}

// HookHeartbeatAnswered is told how each heartbeat's result was read: class 0 is a success; any
// other class (heartbeat.Retry, Rediscover, Fenced, KeepState, Fatal) is a failure and err says why
// (an error code in the answer, or a failure to reach the coordinator). rtt is the time from the
// heartbeat's sending to its result. Results the member no longer waited for are not reported.
type HookHeartbeatAnswered interface {
	OnHeartbeatAnswered(rtt time.Duration, class heartbeat.Class, err error)
}

// HookRebalanceStarted is told when a reconciliation starts: callbacks begin toward a new target.
type HookRebalanceStarted interface {
	OnRebalanceStarted()
}

// HookRebalanceCompleted is told when a reconciliation completed (its acknowledgement was built);
// latency runs from the arrival of the target it reconciled toward.
type HookRebalanceCompleted interface {
	OnRebalanceCompleted(latency time.Duration)
}

// HookRebalanceFailed is told when a reconciliation failed: a callback failed (it is retried after
// backoff), or a fencing or a fatal heartbeat error ended it; latency runs from the arrival of its
// target (0 when unknown).
type HookRebalanceFailed interface {
	OnRebalanceFailed(latency time.Duration)
}

// HookCallbackDone is told when a listener callback returned (err is its error, or the panic it
// raised), with how long it ran. Callbacks whose results were discarded (Close ran out of time) are
// not reported.
type HookCallbackDone interface {
	OnCallbackDone(kind CallbackKind, took time.Duration, err error)
}

// HookStateChanged is told when the member's state or epoch changed, with both.
type HookStateChanged interface {
	OnStateChanged(state State, epoch int32)
}

// HookFenced is told when the broker fenced the member (it loses its tasks and rejoins).
type HookFenced interface {
	OnFenced()
}

// HookCoordinatorChanged is told the group coordinator's node ID when it becomes known for the first
// time and each time it is another node. It needs a Transport that implements CoordinatorReporter.
type HookCoordinatorChanged interface {
	OnCoordinatorChanged(node int32)
}

// HookAssignmentChanged is told what the application holds whenever that changes: after
// OnTasksAssigned, OnTasksRevoked or OnAllTasksLost returned.
type HookAssignmentChanged interface {
	OnAssignmentChanged(owned tasks.Assignment)
}

// CoordinatorReporter is an optional interface of a Transport: the node ID of the group coordinator
// it sends heartbeats to, and whether one is known now. The Manager asks after every heartbeat
// result, on its loop goroutine, so it must answer at once (a cached value). Without it, coordinator
// changes are not counted.
type CoordinatorReporter interface {
	Coordinator() (node int32, known bool)
}

// WithHooks adds hooks (see Hook). Each is told, in the order given, about what it implements.
func WithHooks(hooks ...Hook) Option {
	return func(o *options) { o.hooks = append(o.hooks, hooks...) }
}

// Stats is a snapshot of a member's metrics (Manager.Stats). Counters count from the Manager's
// creation; times are zero until the first occurrence.
type Stats struct {
	// At is when the snapshot was taken.
	At time.Time

	State State
	Epoch int32

	// HeartbeatsSent counts heartbeats handed to the transport (the leave heartbeat is not counted).
	HeartbeatsSent uint64
	// HeartbeatsSucceeded counts results read as a success; HeartbeatsFailed the others, by class.
	// A heartbeat sent but not answered yet, or answered after the member stopped waiting for it,
	// is in neither.
	HeartbeatsSucceeded uint64
	HeartbeatsFailed    map[heartbeat.Class]uint64
	// LastHeartbeatRTT, MaxHeartbeatRTT and HeartbeatRTTTotal: time from sending a heartbeat to its
	// result, successes and failures alike (average = HeartbeatRTTTotal / (HeartbeatsSucceeded + the
	// sum of HeartbeatsFailed)).
	LastHeartbeatRTT, MaxHeartbeatRTT, HeartbeatRTTTotal time.Duration
	// LastHeartbeatSent is when the last heartbeat was sent; LastHeartbeatAnswered when the last
	// successful answer arrived.
	LastHeartbeatSent, LastHeartbeatAnswered time.Time

	// Rebalances (reconciliations): started, completed (acknowledgement built) and failed: a callback
	// failed (the reconciliation is retried, and the retry counts as another start), or a fencing
	// or a fatal heartbeat error (an error answer, or a send that cannot be retried) ended it, as
	// Java's failed-rebalance-total counts. One ended by Close, the session guard or the poll timer
	// is neither completed nor failed; each start ends at most once.
	RebalancesStarted, RebalancesCompleted, RebalancesFailed uint64
	// Latency of completed rebalances, from the arrival of the target to its acknowledgement: the
	// last one, the largest and the sum (average = RebalanceLatencyTotal / RebalancesCompleted).
	LastRebalanceLatency, MaxRebalanceLatency, RebalanceLatencyTotal time.Duration
	// LastRebalance is when the last rebalance completed.
	LastRebalance time.Time

	// Listener callbacks, per kind.
	Revoked, Assigned, Lost CallbackStats

	// Tasks the application holds now.
	ActiveTasks, StandbyTasks, WarmupTasks int

	// Fencings counts the times the broker fenced the member.
	Fencings uint64
	// Coordinator is the node ID of the coordinator the transport last reported (-1 before that, or
	// always when the transport does not report it: CoordinatorReporter); CoordinatorChanges counts
	// moves to another node after the first one was known.
	Coordinator        int32
	CoordinatorChanges uint64
}

// CallbackStats is what Stats says about one kind of listener callback.
type CallbackStats struct {
	Calls, Failed    uint64        // returned, and of those returned an error or panicked
	Last, Max, Total time.Duration // how long they ran (average = Total / Calls)
}

// SinceLastHeartbeatAnswered is how long before At the last successful answer arrived; false when
// none has.
func (s Stats) SinceLastHeartbeatAnswered() (time.Duration, bool) {
	if s.LastHeartbeatAnswered.IsZero() {
		return 0, false
	}
	return s.At.Sub(s.LastHeartbeatAnswered), true
}

// Callback returns the stats of one kind of callback.
func (s Stats) Callback(kind CallbackKind) CallbackStats {
	switch kind {
	case CallbackRevoked:
		return s.Revoked
	case CallbackAssigned:
		return s.Assigned
	case CallbackLost:
		return s.Lost
	}
	return CallbackStats{}
}

// Stats returns a snapshot of the member's metrics.
func (m *Manager) Stats() Stats { return m.metrics.snapshot(time.Now()) }
