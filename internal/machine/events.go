package machine

import (
	"fmt"
	"strings"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventStateChanged: the member moved to another State.
	EventStateChanged EventKind = iota + 1
	// EventAssigned: the application now owns Assignment (after OnTasksAssigned returned).
	EventAssigned
	// EventGroupReadyChanged: the group became ready or not ready (Ready).
	EventGroupReadyChanged
	// EventStaleTopology: the group runs a newer topology epoch than this member (STALE_TOPOLOGY).
	// GroupTopology tells which, when the group could be described.
	EventStaleTopology
	// EventMissingSourceTopics: source topics do not exist (Topics); the group gets no tasks until
	// they are created.
	EventMissingSourceTopics
	// EventMissingSourceTopicsTimeout: source topics have been missing for two heartbeat intervals;
	// Kafka Streams fails its thread here. Err says what to do; the member keeps running.
	EventMissingSourceTopicsTimeout
	// EventIncorrectlyPartitionedTopics: copartitioned topics differ in partition count, or an
	// internal topic has the wrong count (Topics). The group cannot be assigned until fixed.
	EventIncorrectlyPartitionedTopics
	// EventMissingInternalTopics: the broker is creating the internal topics (Topics), or cannot
	// (the status's detail says why; when the member's principal lacks CREATE, Err is an
	// *InternalTopicsDeniedError saying what to grant).
	EventMissingInternalTopics
	// EventShutdownRequested: a member of the group asked the whole application to shut down. Stop
	// processing and call Close.
	EventShutdownRequested
	// EventAssignmentDelayed: the broker holds back the assignment (initial delay or batching).
	EventAssignmentDelayed
	// EventMissingClientTags: Kafka 4.4 rack-aware assignment needs client tags this member lacks.
	EventMissingClientTags
	// EventUnknownStatus: the broker sent a status code this library does not know; it is ignored.
	EventUnknownStatus
	// EventStatusCleared: a status that was reported before is gone (Status says which).
	EventStatusCleared
	// EventEndpointsChanged: the interactive-query map of which endpoint holds which partitions.
	EventEndpointsChanged
	// EventFenced: the broker fenced the member; its tasks were lost and it rejoins.
	EventFenced
	// EventError: a problem the member survives (a failed callback, a topic authorization error).
	EventError
	// EventFatal: the member stopped for good; Err is the typed error (also returned by Err()).
	EventFatal
	// EventLeft: the member left the group (Close).
	EventLeft
	// EventSessionLost: no heartbeat was answered for nearly the group's session timeout, so the
	// broker may be about to expire the member and give its tasks to others. The member gave them up
	// up first (OnAllTasksLost, before the broker can reassign them) and keeps heartbeating at its
	// epoch (session.go). Err is a *SessionLostError saying for how long and what to check.
	EventSessionLost
	// EventPollTimerExpired: the application did not poll within max.poll.interval.ms (poll.go);
	// the member lost its tasks, left the group and rejoins on the next poll. Err is a
	// *PollTimeoutError.
	EventPollTimerExpired
)

func (k EventKind) String() string {
	names := map[EventKind]string{
		EventStateChanged: "state-changed", EventAssigned: "assigned", EventGroupReadyChanged: "group-ready-changed",
		EventStaleTopology: "stale-topology", EventMissingSourceTopics: "missing-source-topics",
		EventMissingSourceTopicsTimeout: "missing-source-topics-timeout", EventIncorrectlyPartitionedTopics: "incorrectly-partitioned-topics",
		EventMissingInternalTopics: "missing-internal-topics", EventShutdownRequested: "shutdown-requested",
		EventAssignmentDelayed: "assignment-delayed", EventMissingClientTags: "missing-client-tags",
		EventUnknownStatus: "unknown-status", EventStatusCleared: "status-cleared", EventEndpointsChanged: "endpoints-changed",
		EventFenced: "fenced", EventError: "error", EventFatal: "fatal", EventLeft: "left", EventSessionLost: "session-lost",
		EventPollTimerExpired: "poll-timer-expired",
	}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is something the application may want to know or act on. Every event carries the member's
// state, ID and epoch at the time; the other fields depend on Kind.
type Event struct {
	Kind     EventKind
	State    State
	MemberID string
	Epoch    int32

	Assignment tasks.Assignment  // EventAssigned
	Ready      bool              // EventAssigned, EventGroupReadyChanged
	Status     *heartbeat.Status // status events: the broker's status and detail text
	Topics     []string          // topics named by a status
	Endpoints  map[heartbeat.Endpoint]heartbeat.EndpointPartitions
	// GroupTopology is set on EventStaleTopology and topology errors: what the group runs, from the
	// StreamsGroupDescribe the machine asked for, beside this member's topology.
	GroupTopology *TopologyMismatch
	Err           error // EventError, EventFatal, EventMissingSourceTopicsTimeout, EventFenced, EventSessionLost, EventMissingInternalTopics (CREATE denied)
	Message       string
}

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s state=%s epoch=%d", e.Kind, e.State, e.Epoch)
	switch e.Kind {
	case EventAssigned:
		fmt.Fprintf(&b, " %v ready=%v", e.Assignment, e.Ready)
	case EventGroupReadyChanged:
		fmt.Fprintf(&b, " ready=%v", e.Ready)
	}
	if len(e.Topics) > 0 {
		fmt.Fprintf(&b, " topics=%v", e.Topics)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}
