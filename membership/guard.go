package membership

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/topology"
)

// TopologyMismatch puts the group's topology next to the member's, when the broker says they differ
// (STALE_TOPOLOGY, or a refused topology).
type TopologyMismatch struct {
	GroupEpoch      int32
	GroupTopologyID topology.ID // zero when the group could not be described or has no topology
	MemberEpoch     int32
	MemberTopology  topology.ID
	Action          string // what to do about it
}

func (t *TopologyMismatch) String() string {
	group := "unknown (the group could not be described)"
	if !t.GroupTopologyID.IsZero() {
		group = fmt.Sprintf("%s at epoch %d", t.GroupTopologyID, t.GroupEpoch)
	}
	return fmt.Sprintf("the group runs topology %s; this member runs %s at epoch %d: %s",
		group, t.MemberTopology, t.MemberEpoch, t.Action)
}

// TopologyError is the fatal error of a member whose topology the group refused. It unwraps to the
// heartbeat error (so errors.Is(err, heartbeat.ErrTopologyMismatch) holds).
type TopologyError struct {
	Mismatch TopologyMismatch
	Err      error
}

func (e *TopologyError) Error() string { return e.Mismatch.String() }
func (e *TopologyError) Unwrap() error { return e.Err }

// compareTopologies builds the mismatch report from the broker's description of the group.
func compareTopologies(g *kmsg.StreamsGroupDescribeResponseGroup, local *topology.Topology, localEpoch int32, stale bool) TopologyMismatch {
	tm := TopologyMismatch{MemberEpoch: localEpoch, MemberTopology: local.ID()}
	if g != nil {
		if d, err := topology.FromDescribe(g.Topology); err == nil {
			tm.GroupEpoch, tm.GroupTopologyID = d.Epoch, d.ID
		}
	}
	switch {
	case stale:
		tm.Action = fmt.Sprintf("this member's topology.epoch %d is older than the group's, which keeps its own topology; "+
			"deploy the group's topology and epoch to this process", localEpoch)
	case !tm.GroupTopologyID.IsZero() && tm.GroupTopologyID == tm.MemberTopology:
		tm.Action = "the topologies have the same ID but differ in partition counts or copartition groups; make them identical"
	default:
		tm.Action = "the broker keeps a group's first topology and does not update it yet: use a new application.id, " +
			"or stop every member, delete the group (streams-groups --delete), and start the new topology"
	}
	return tm
}
