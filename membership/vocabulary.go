package membership

import "github.com/streamsgroup/streamsgroup/internal/machine"

// The application's vocabulary: what a Manager reports (State, Event, Snapshot), how it is closed
// (CloseMode), and the errors an application tests for. The machine that makes every decision
// (internal/machine) defines them, because it fills them in; these aliases are the names an
// application uses, so errors.As(err, new(*membership.TopologyError)) and a switch over
// membership.State work as they always did.

// State is where a member is in its life (KIP-1071; Kafka's MemberState). The names are those of
// the Java client; String returns them in Kafka's upper-case spelling (STABLE), as the Java client
// logs them. The group's state in a describe (admin.Group.State) is another concept with its own
// spelling (Stable).
//
// Java's STALE state (left because the application stopped polling) does not exist here: a Go
// application has no poll loop for the member to watch, and the broker still enforces the
// rebalance timeout.
type State = machine.State

const (
	// Unsubscribed: not in the group (before the cluster answered, and after a leave).
	Unsubscribed State = machine.Unsubscribed
	// Joining: sending epoch-0 heartbeats with the topology until the broker answers.
	Joining State = machine.Joining
	// Reconciling: the broker's target assignment differs from what the application owns; the
	// revoke and assign callbacks are running.
	Reconciling State = machine.Reconciling
	// Acknowledging: the callbacks are done; the next heartbeat (sent at once) reports the new
	// owned assignment.
	Acknowledging State = machine.Acknowledging
	// Stable: the application owns the target assignment; heartbeats at the broker's interval.
	Stable State = machine.Stable
	// Fenced: the broker fenced the member; it loses its tasks and rejoins with the same member ID.
	Fenced State = machine.Fenced
	// PrepareLeaving: revoking tasks before leaving; heartbeats go on at the normal interval.
	PrepareLeaving State = machine.PrepareLeaving
	// Leaving: the leave heartbeat is on its way.
	Leaving State = machine.Leaving
	// Fatal: stopped for good by an error that retrying cannot fix.
	Fatal State = machine.Fatal
	// Stale: left because the application did not call Poll within max.poll.interval.ms; the next
	// Poll rejoins (see Manager.Poll).
	Stale State = machine.Stale
)

// CloseMode says what Close does about the group (Kafka 4.4 CloseOptions).
type CloseMode = machine.CloseMode

const (
	// CloseDefault leaves the group: a dynamic member with epoch -1, a static member with epoch -2,
	// which keeps its tasks reserved until its session times out (it can come back and get them).
	CloseDefault CloseMode = machine.CloseDefault
	// CloseLeaveGroup leaves for good with epoch -1, static members too.
	CloseLeaveGroup CloseMode = machine.CloseLeaveGroup
	// CloseRemainInGroup sends no leave for a dynamic member: the group keeps it until its session
	// times out. A static member leaves with -2 as in CloseDefault.
	CloseRemainInGroup CloseMode = machine.CloseRemainInGroup
)

// EventKind says what an Event reports.
type EventKind = machine.EventKind

const (
	// EventStateChanged: the member moved to another State.
	EventStateChanged EventKind = machine.EventStateChanged
	// EventAssigned: the application now owns Assignment (after OnTasksAssigned returned).
	EventAssigned EventKind = machine.EventAssigned
	// EventGroupReadyChanged: the group became ready or not ready (Ready).
	EventGroupReadyChanged EventKind = machine.EventGroupReadyChanged
	// EventStaleTopology: the group runs a newer topology epoch than this member (STALE_TOPOLOGY).
	// GroupTopology tells which, when the group could be described.
	EventStaleTopology EventKind = machine.EventStaleTopology
	// EventMissingSourceTopics: source topics do not exist (Topics); the group gets no tasks until
	// they are created.
	EventMissingSourceTopics EventKind = machine.EventMissingSourceTopics
	// EventMissingSourceTopicsTimeout: source topics have been missing for two heartbeat intervals;
	// Kafka Streams fails its thread here. Err says what to do; the member keeps running.
	EventMissingSourceTopicsTimeout EventKind = machine.EventMissingSourceTopicsTimeout
	// EventIncorrectlyPartitionedTopics: copartitioned topics differ in partition count, or an
	// internal topic has the wrong count (Topics). The group cannot be assigned until fixed.
	EventIncorrectlyPartitionedTopics EventKind = machine.EventIncorrectlyPartitionedTopics
	// EventMissingInternalTopics: the broker is creating the internal topics (Topics), or cannot
	// (the status's detail says why; when the member's principal lacks CREATE, Err is an
	// *InternalTopicsDeniedError saying what to grant).
	EventMissingInternalTopics EventKind = machine.EventMissingInternalTopics
	// EventShutdownRequested: a member of the group asked the whole application to shut down. Stop
	// processing and call Close.
	EventShutdownRequested EventKind = machine.EventShutdownRequested
	// EventAssignmentDelayed: the broker holds back the assignment (initial delay or batching).
	EventAssignmentDelayed EventKind = machine.EventAssignmentDelayed
	// EventMissingClientTags: Kafka 4.4 rack-aware assignment needs client tags this member lacks.
	EventMissingClientTags EventKind = machine.EventMissingClientTags
	// EventUnknownStatus: the broker sent a status code this library does not know; it is ignored.
	EventUnknownStatus EventKind = machine.EventUnknownStatus
	// EventStatusCleared: a status that was reported before is gone (Status says which).
	EventStatusCleared EventKind = machine.EventStatusCleared
	// EventEndpointsChanged: the interactive-query map of which endpoint holds which partitions.
	EventEndpointsChanged EventKind = machine.EventEndpointsChanged
	// EventFenced: the broker fenced the member; its tasks were lost and it rejoins.
	EventFenced EventKind = machine.EventFenced
	// EventError: a problem the member survives (a failed callback, a topic authorization error).
	EventError EventKind = machine.EventError
	// EventFatal: the member stopped for good; Err is the typed error (also returned by Err()).
	EventFatal EventKind = machine.EventFatal
	// EventLeft: the member left the group (Close).
	EventLeft EventKind = machine.EventLeft
	// EventSessionLost: no heartbeat was answered for nearly the group's session timeout, so the
	// broker may be about to expire the member and give its tasks to others. The member gave them up
	// first (Assignment shows nothing at once, a running callback's ctx is cancelled, OnAllTasksLost
	// follows, all before the broker can reassign them) but keeps its member ID and epoch and goes on
	// heartbeating: if the broker still has it, the next answer hands the tasks back
	// (OnTasksAssigned); if the broker expired it, the broker fences it and it rejoins at epoch 0. A
	// static member thus never rejoins while the broker may still hold its group.instance.id. Err is
	// a *SessionLostError saying for how long and what to check.
	EventSessionLost EventKind = machine.EventSessionLost
	// EventPollTimerExpired: the application did not call Poll within max.poll.interval.ms; its
	// tasks were lost (OnAllTasksLost), the member left the group and waits in Stale until the next
	// Poll. Err is a *PollTimeoutError.
	EventPollTimerExpired EventKind = machine.EventPollTimerExpired
)

// Event is something the application may want to know or act on. Every event carries the member's
// state, ID and epoch at the time; the other fields depend on Kind.
type Event = machine.Event

// Snapshot is what an observer may read about a member at one moment.
type Snapshot = machine.Snapshot

// CallbackKind names the listener callback an Invoke action runs.
type CallbackKind = machine.CallbackKind

const (
	CallbackRevoked  CallbackKind = machine.CallbackRevoked  // OnTasksRevoked(Tasks)
	CallbackAssigned CallbackKind = machine.CallbackAssigned // OnTasksAssigned(Assignment, Ready)
	CallbackLost     CallbackKind = machine.CallbackLost     // OnAllTasksLost(Assignment)
)

// CallbackError is a listener callback that returned an error (or panicked).
type CallbackError = machine.CallbackError

// TopologyMismatch puts the group's topology next to the member's, when the broker says they differ
// (STALE_TOPOLOGY, or a refused topology). It is topology.Compare's verdict, with the field names
// this package has always used.
type TopologyMismatch = machine.TopologyMismatch

// TopologyError is the fatal error of a member whose topology the group refused. It unwraps to the
// heartbeat error (so errors.Is(err, heartbeat.ErrTopologyMismatch) holds).
type TopologyError = machine.TopologyError

// SessionLostError is the error of an EventSessionLost: no heartbeat sent in the last Unanswered
// was answered, and the broker may expire the member SessionTimeout after the last answered one was
// sent.
type SessionLostError = machine.SessionLostError

// PollTimeoutError is the error of an EventPollTimerExpired.
type PollTimeoutError = machine.PollTimeoutError

// InternalTopicsDeniedError is the error of an EventMissingInternalTopics when the broker may not
// create the internal topics as the member's principal (no CREATE on the cluster or on the topics).
type InternalTopicsDeniedError = machine.InternalTopicsDeniedError
