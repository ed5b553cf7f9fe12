package topology

import "fmt"

// Situation says when a comparison is made: what the broker has already said decides part of the
// verdict when its description of the group cannot.
type Situation int

const (
	// BeforeJoin: a plain comparison, before any member of this topology joins (the streams-groups
	// tool, a roll-out plan). A nil group topology means the group has none yet.
	BeforeJoin Situation = iota
	// StaleStatus: the broker answered the member with STALE_TOPOLOGY (its topology.epoch is older
	// than the group's). A nil group topology means the group could not be described.
	StaleStatus
	// RefusedJoin: the broker refused the member's topology ("Topology updates are not supported
	// yet": the group runs another topology, or this one at another epoch). A nil group topology
	// means the group could not be described.
	RefusedJoin
)

func (s Situation) String() string {
	switch s {
	case BeforeJoin:
		return "before-join"
	case StaleStatus:
		return "stale-status"
	case RefusedJoin:
		return "refused-join"
	}
	return fmt.Sprintf("Situation(%d)", int(s))
}

// Verdict is how a local topology and epoch relate to the group's.
type Verdict int

const (
	// NoGroupTopology: the group has no topology yet; the first member to join sets it.
	NoGroupTopology Verdict = iota + 1
	// Same: same topology ID and epoch; members join normally. (The ID leaves out copartition groups
	// and resolved partition counts, which the broker also compares: see SameIDDifferentDetail.)
	Same
	// Newer: the local epoch is higher than the group's. Brokers up to Kafka 4.4 refuse such a member,
	// even with the group's very topology: they keep a group's first topology (Kafka's
	// GroupMetadataManager.maybeUpdateTopology).
	Newer
	// Older: the local epoch is lower than the group's; the broker keeps the group's topology and
	// answers the member with STALE_TOPOLOGY.
	Older
	// ChangedWithoutEpochBump: same epoch, different topology ID; the broker refuses the member.
	ChangedWithoutEpochBump
	// SameIDDifferentDetail: same topology ID and epoch, yet the topologies differ where the ID does
	// not look: a fixed partition count of a repartition topic, or the copartition groups. Detected
	// when the description shows another fixed count, or when the broker refused the member
	// (RefusedJoin); the description has no copartition groups to compare.
	SameIDDifferentDetail
	// Unknown: the broker said the topologies differ (StaleStatus, RefusedJoin) but the group's
	// topology could not be read.
	Unknown
)

func (v Verdict) String() string {
	switch v {
	case NoGroupTopology:
		return "no-group-topology"
	case Same:
		return "same"
	case Newer:
		return "newer"
	case Older:
		return "older"
	case ChangedWithoutEpochBump:
		return "changed-without-epoch-bump"
	case SameIDDifferentDetail:
		return "same-id-different-detail"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Comparison puts a group's topology next to a local one, with the verdict and one sentence saying
// what to do. GroupID is zero (and GroupEpoch 0) when the group has no topology or it is unknown.
type Comparison struct {
	Verdict    Verdict
	GroupID    ID
	GroupEpoch int32
	LocalID    ID
	LocalEpoch int32
	Action     string
}

// String reads "the group runs topology X at epoch N; this member runs Y at epoch M: <Action>".
func (c Comparison) String() string {
	group := fmt.Sprintf("the group runs topology %s at epoch %d", c.GroupID, c.GroupEpoch)
	switch {
	case c.Verdict == NoGroupTopology:
		group = "the group has no topology"
	case c.GroupID.IsZero():
		group = "the group's topology is unknown (the group could not be described)"
	}
	return fmt.Sprintf("%s; this member runs %s at epoch %d: %s", group, c.LocalID, c.LocalEpoch, c.Action)
}

// The advice, in one place. The upgrade that works on every broker up to Kafka 4.4 is a new group.
const (
	newGroupAdvice = "the broker keeps a group's first topology and does not update it (Kafka up to 4.4), so the group must be " +
		"created again: stop every member; to keep the state and the input position, save the positions " +
		"(streams-groups --reset-offsets --group <application.id> --all-input-topics --to-current --dry-run --export > positions.csv), " +
		"delete the group (streams-groups --delete --group <application.id>, with --delete-all-internal-topics if the new " +
		"topology's state must start empty), put the positions back (streams-groups --reset-offsets --group <application.id> " +
		"--from-file positions.csv --execute) and start the new topology; to compute everything again from the input instead, " +
		"delete the group with its internal topics (--delete --group <application.id> --delete-all-internal-topics) and start it; " +
		"never delete the group alone and start, which processes the input again onto the old state (docs/upgrades.md); " +
		"or use a new application.id"
	describeAdvice = "describe the group (streams-groups --describe --group <application.id> --topology) to see its topology and epoch"
)

// Compare compares the local topology at localEpoch with the group's topology as the broker
// describes it (FromDescribe), or nil when there is none. situation says when the comparison is
// made: it decides the verdict when the description cannot (a nil group topology after
// STALE_TOPOLOGY or a refused join is Unknown, not NoGroupTopology; the same ID and epoch after a
// refused join is SameIDDifferentDetail). The verdicts and their actions follow the broker's rules
// (KIP-1071; Kafka's GroupMetadataManager.maybeUpdateTopology): an older epoch gets STALE_TOPOLOGY,
// any difference at an equal or higher epoch is refused.
func Compare(group *Described, local *Topology, localEpoch int32, situation Situation) Comparison {
	c := Comparison{LocalEpoch: localEpoch}
	if local != nil {
		c.LocalID = local.ID()
	}
	if group == nil {
		if situation == BeforeJoin {
			c.Verdict = NoGroupTopology
			c.Action = fmt.Sprintf("the group has no topology yet: the first member to join sets it, "+
				"so this topology at topology.epoch %d becomes the group's", localEpoch)
			return c
		}
		c.Verdict = Unknown
		if situation == StaleStatus {
			c.Action = fmt.Sprintf("the group runs a newer topology.epoch than this member's %d but could not be described: %s, "+
				"and deploy that topology and epoch to this process", localEpoch, describeAdvice)
		} else {
			c.Action = "the broker refused this topology but the group could not be described: " + describeAdvice +
				"; to run this topology instead, " + newGroupAdvice
		}
		return c
	}
	c.GroupID, c.GroupEpoch = group.ID, group.Epoch
	sameID := c.GroupID == c.LocalID
	switch {
	case localEpoch < c.GroupEpoch:
		c.Verdict = Older
		c.Action = fmt.Sprintf("the group runs topology.epoch %d and keeps its topology, so members with epoch %d are told STALE_TOPOLOGY: "+
			"deploy the group's topology %s with topology.epoch %d to this process", c.GroupEpoch, localEpoch, c.GroupID, c.GroupEpoch)
	case localEpoch > c.GroupEpoch && sameID:
		c.Verdict = Newer
		c.Action = fmt.Sprintf("the broker refuses a higher topology.epoch even for the group's own topology: use topology.epoch %d", c.GroupEpoch)
	case localEpoch > c.GroupEpoch:
		c.Verdict = Newer
		c.Action = fmt.Sprintf("topology.epoch %d is newer than the group's %d, but %s", localEpoch, c.GroupEpoch, newGroupAdvice)
	case !sameID:
		c.Verdict = ChangedWithoutEpochBump
		c.Action = fmt.Sprintf("the broker refuses a different topology at the group's topology.epoch %d: give this topology "+
			"topology.epoch %d, and since %s", c.GroupEpoch, c.GroupEpoch+1, newGroupAdvice)
	case situation == RefusedJoin || fixedCountsDiffer(group, local):
		c.Verdict = SameIDDifferentDetail
		c.Action = "the topology has the group's ID but differs in repartition topic partition counts or copartition groups, " +
			"which the broker compares too: make it identical to the group's"
	default:
		c.Verdict = Same
		c.Action = "the group runs this topology at this topology.epoch: members join normally"
	}
	return c
}

// fixedCountsDiffer reports whether a repartition source topic has a fixed partition count locally and
// another count in the group's description. A count of 0 (derived by the broker) on either side tells
// nothing: the description shows the count the broker resolved.
func fixedCountsDiffer(group *Described, local *Topology) bool {
	if local == nil {
		return false
	}
	described := make(map[string]int32)
	for _, s := range group.Subtopologies {
		for _, ti := range s.RepartitionSourceTopics {
			described[s.ID+"\x00"+ti.Name] = ti.Partitions
		}
	}
	for _, s := range local.subs {
		for _, ti := range s.RepartitionSourceTopics {
			if n := described[s.ID+"\x00"+ti.Name]; ti.Partitions > 0 && n > 0 && n != ti.Partitions {
				return true
			}
		}
	}
	return false
}
