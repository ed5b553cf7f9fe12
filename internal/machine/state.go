package machine

import "fmt"

// State is where a member is in its life (KIP-1071; Kafka's MemberState). The names are those of
// the Java client; String returns them in Kafka's upper-case spelling (STABLE), as the Java client
// logs them. The group's state in a describe (admin.Group.State) is another concept with its own
// spelling (Stable).
//
// Stale is Java's STALE: left because the application stopped polling (poll.go); it exists only for
// an application that calls Manager.Poll.
type State int

const (
	// Unsubscribed: not in the group (before the cluster answered, and after a leave).
	Unsubscribed State = iota
	// Joining: sending epoch-0 heartbeats with the topology until the broker answers.
	Joining
	// Reconciling: the broker's target assignment differs from what the application owns; the
	// revoke and assign callbacks are running.
	Reconciling
	// Acknowledging: the callbacks are done; the next heartbeat (sent at once) reports the new
	// owned assignment.
	Acknowledging
	// Stable: the application owns the target assignment; heartbeats at the broker's interval.
	Stable
	// Fenced: the broker fenced the member; it loses its tasks and rejoins with the same member ID.
	Fenced
	// PrepareLeaving: revoking tasks before leaving; heartbeats go on at the normal interval.
	PrepareLeaving
	// Leaving: the leave heartbeat is on its way.
	Leaving
	// Fatal: stopped for good by an error that retrying cannot fix.
	Fatal
	// Stale: left the group because the application did not poll within max.poll.interval.ms; it
	// rejoins on the next poll (poll.go).
	Stale
)

// states lists every State, for tests and tables.
var states = []State{Unsubscribed, Joining, Reconciling, Acknowledging, Stable, Fenced, PrepareLeaving, Leaving, Fatal, Stale}

func (s State) String() string {
	switch s {
	case Unsubscribed:
		return "UNSUBSCRIBED"
	case Joining:
		return "JOINING"
	case Reconciling:
		return "RECONCILING"
	case Acknowledging:
		return "ACKNOWLEDGING"
	case Stable:
		return "STABLE"
	case Fenced:
		return "FENCED"
	case PrepareLeaving:
		return "PREPARE_LEAVING"
	case Leaving:
		return "LEAVING"
	case Fatal:
		return "FATAL"
	case Stale:
		return "STALE"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// allowedFrom lists, for each state, the states a member may move to it from (Kafka's MemberState). Every state change of the machine goes through transition, which checks this
// table.
var allowedFrom = map[State][]State{
	Joining:        {Fenced, Unsubscribed, Stale},
	Reconciling:    {Stable, Joining, Acknowledging, Reconciling},
	Acknowledging:  {Reconciling},
	Stable:         {Joining, Acknowledging, Reconciling},
	Fenced:         {Joining, Stable, Reconciling, Acknowledging, PrepareLeaving, Leaving},
	PrepareLeaving: {Joining, Stable, Reconciling, Acknowledging, Unsubscribed},
	Leaving:        {PrepareLeaving},
	Unsubscribed:   {PrepareLeaving, Leaving, Fenced},
	Stale:          {Leaving},
	Fatal:          {Joining, Stable, Reconciling, Acknowledging, PrepareLeaving, Leaving, Unsubscribed},
}

// canTransition reports whether the protocol allows moving from one state to another.
func canTransition(from, to State) bool {
	for _, s := range allowedFrom[to] {
		if s == from {
			return true
		}
	}
	return false
}

// CloseMode says what Close does about the group (Kafka 4.4 CloseOptions).
type CloseMode int

const (
	// CloseDefault leaves the group: a dynamic member with epoch -1, a static member with epoch -2,
	// which keeps its tasks reserved until its session times out (it can come back and get them).
	CloseDefault CloseMode = iota
	// CloseLeaveGroup leaves for good with epoch -1, static members too.
	CloseLeaveGroup
	// CloseRemainInGroup sends no leave for a dynamic member: the group keeps it until its session
	// times out. A static member leaves with -2 as in CloseDefault.
	CloseRemainInGroup
)

func (m CloseMode) String() string {
	switch m {
	case CloseDefault:
		return "default"
	case CloseLeaveGroup:
		return "leave-group"
	case CloseRemainInGroup:
		return "remain-in-group"
	}
	return fmt.Sprintf("CloseMode(%d)", int(m))
}
