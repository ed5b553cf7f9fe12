package machine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Every I/O of a member is a pair: the Machine returns an Action, whoever runs the machine (the
// Manager, or a test) carries it out and feeds the result back as an Input to Step. The machine
// never waits: between an action and its input any other input may arrive. Every network action
// carries its request (or what to ask) and its Timeout, the most it may take: the runner bounds the
// call by it and decides nothing, and the raw result comes back for the machine to read.
//
//	action              input fed back
//	ProbeCapabilities   CapabilitiesKnown
//	CollectOffsets      OffsetsCollected
//	SendHeartbeat       HeartbeatDone
//	SendLeave           LeaveDone
//	Describe            Described
//	DescribeSession     SessionDescribed   (session.go)
//	Invoke              CallbackDone
//	CancelCallback      (none: the callback's CallbackDone follows when it returns)
//	Emit, Log           (none)
//	HeartbeatResult     (none: how an answer was read, for metrics)
//	Rebalance           (none: a reconciliation's progress, for metrics)
//	Stopped             (none: the member is done)

// Input is something that happened to the member; feed it to Machine.Step.
type Input interface{ isInput() }

// Start begins the member's life: the machine probes the cluster, then joins.
type Start struct{}

// Tick says only that time passed; Step does whatever is due at its now.
type Tick struct{}

// CapabilitiesKnown is the result of a ProbeCapabilities action: what the cluster supports, or why
// it could not be asked (the machine retries after backoff).
type CapabilitiesKnown struct {
	Caps heartbeat.Capabilities
	Err  error
}

// OffsetsCollected is the result of a CollectOffsets action with the same Seq: the task offsets and
// end offsets of the owned tasks (nil when unknown).
type OffsetsCollected struct {
	Seq           uint64
	Offsets, Ends tasks.Offsets
}

// HeartbeatDone is the raw result of the SendHeartbeat action with the same Seq: the broker's
// answer (error code included) or the error that kept it from arriving. The machine classifies and
// parses it.
type HeartbeatDone struct {
	Seq      uint64
	Response *kmsg.StreamsGroupHeartbeatResponse
	Err      error
}

// LeaveDone is the raw result of the SendLeave action with the same Seq: the broker's answer (error
// code included) or the error that kept it from arriving. The machine reads it and decides whether
// the leave is done, is tried again, or is given up (leave.go).
type LeaveDone struct {
	Seq      uint64
	Response *kmsg.StreamsGroupHeartbeatResponse
	Err      error
}

// Described is the result of a Describe action: the broker's description of the group, or why it
// could not be had.
type Described struct {
	Group *kmsg.StreamsGroupDescribeResponseGroup
	Err   error
}

// CallbackDone is the result of the Invoke action with the same Seq.
type CallbackDone struct {
	Seq uint64
	Err error
}

// Close asks the member to leave the group as Mode says and stop.
type Close struct{ Mode CloseMode }

// RequestShutdown asks every member of the group to shut down (SHUTDOWN_APPLICATION).
type RequestShutdown struct{}

// Stop ends the member at once, without leaving (the Manager's Close ran out of time).
type Stop struct{}

func (Start) isInput()             {}
func (Tick) isInput()              {}
func (CapabilitiesKnown) isInput() {}
func (OffsetsCollected) isInput()  {}
func (HeartbeatDone) isInput()     {}
func (LeaveDone) isInput()         {}
func (Described) isInput()         {}
func (CallbackDone) isInput()      {}
func (Close) isInput()             {}
func (RequestShutdown) isInput()   {}
func (Stop) isInput()              {}

// Action is what the machine asks its runner to do.
type Action interface{ isAction() }

// ProbeCapabilities asks what the cluster supports (ApiVersions, one attempt, for at most
// Timeout); answer with CapabilitiesKnown.
type ProbeCapabilities struct{ Timeout time.Duration }

// CollectOffsets asks the application's TaskOffsetsProvider for the offsets of Owned; answer with
// OffsetsCollected{Seq}. The heartbeat waits for them, but not longer than OffsetsWait.
type CollectOffsets struct {
	Seq   uint64
	Owned tasks.Assignment
}

// SendHeartbeat asks to send Request once to the group coordinator (looked up first when not known),
// for at most Timeout; answer with HeartbeatDone{Seq}.
type SendHeartbeat struct {
	Seq     uint64
	Request *kmsg.StreamsGroupHeartbeatRequest
	Timeout time.Duration
}

// SendLeave asks to send the leave heartbeat Request once, as SendHeartbeat sends a heartbeat, for
// at most Timeout; answer with LeaveDone{Seq}. Whether it goes at all, and whether it is sent again
// after a failure, the machine decides.
type SendLeave struct {
	Seq     uint64
	Request *kmsg.StreamsGroupHeartbeatRequest
	Timeout time.Duration
}

// Describe asks for the broker's description of the group (StreamsGroupDescribe), for at most
// Timeout (what may pass is retried within it); answer with Described.
type Describe struct{ Timeout time.Duration }

// Invoke asks to run a listener callback and to report CallbackDone{Seq}. Callbacks are handed out
// one at a time: the next comes only after the previous one's CallbackDone.
type Invoke struct {
	Seq        uint64
	Kind       CallbackKind
	Tasks      tasks.Set        // CallbackRevoked
	Assignment tasks.Assignment // CallbackAssigned (whole target), CallbackLost (what was held)
	Ready      bool             // CallbackAssigned
}

// CancelCallback asks to cancel the context of the running callback Invoke{Seq}: the session guard
// gave its tasks up while it ran. The callback's CallbackDone still follows when it returns.
type CancelCallback struct{ Seq uint64 }

// Emit asks to publish an event to the application.
type Emit struct{ Event Event }

// Log asks to log a line that is not an event (for example a heartbeat retried after an error).
type Log struct {
	Level slog.Level
	Msg   string
	Attrs []any
}

// HeartbeatResult reports how the machine read the answer to SendHeartbeat{Seq}: Class is 0 for a
// success, else the error's class. It is for metrics and needs nothing carried out.
type HeartbeatResult struct {
	Seq   uint64
	Class heartbeat.Class
	Err   error
}

// RebalancePhase is a step of a reconciliation, for metrics.
type RebalancePhase int

// The phases a Rebalance action reports.
const (
	RebalanceStarted   RebalancePhase = iota + 1 // callbacks start toward a new target
	RebalanceCompleted                           // the acknowledgement was built
	RebalanceFailed                              // a callback failed (retried after backoff), or a fencing or fatal heartbeat error ended it
)

func (p RebalancePhase) String() string {
	switch p {
	case RebalanceStarted:
		return "started"
	case RebalanceCompleted:
		return "completed"
	case RebalanceFailed:
		return "failed"
	}
	return fmt.Sprintf("RebalancePhase(%d)", int(p))
}

// Rebalance reports a reconciliation's progress, for metrics: TargetAt is when the broker's answer
// with the target it reconciles toward arrived, so now − TargetAt is the rebalance latency.
type Rebalance struct {
	Phase    RebalancePhase
	TargetAt time.Time
}

// Stopped says the member is done: Err is nil after a leave or a forced stop, the typed error after a
// fatal one. No action follows it.
type Stopped struct{ Err error }

func (ProbeCapabilities) isAction() {}
func (CollectOffsets) isAction()    {}
func (SendHeartbeat) isAction()     {}
func (SendLeave) isAction()         {}
func (Describe) isAction()          {}
func (Invoke) isAction()            {}
func (CancelCallback) isAction()    {}
func (Emit) isAction()              {}
func (Log) isAction()               {}
func (Stopped) isAction()           {}
func (HeartbeatResult) isAction()   {}
func (Rebalance) isAction()         {}

// CallbackKind names the listener callback an Invoke action runs.
type CallbackKind int

// The callbacks of a Listener.
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

// CallbackError is a listener callback that returned an error (or panicked).
type CallbackError struct {
	Callback CallbackKind
	Err      error
}

func (e *CallbackError) Error() string { return fmt.Sprintf("%s failed: %v", e.Callback, e.Err) }

// Unwrap returns the callback's error.
func (e *CallbackError) Unwrap() error { return e.Err }
