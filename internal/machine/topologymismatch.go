package machine

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/topology"
)

// TopologyMismatch puts the group's topology next to the member's, when the broker says they differ
// (STALE_TOPOLOGY, or a refused topology): topology.Compare's verdict (GroupID is zero when the
// group could not be described or has no topology; LocalID and LocalEpoch are this member's), and
// what differs.
type TopologyMismatch struct {
	topology.Comparison
	// Differences lists how the member's topology differs from the group's as the broker describes it
	// (topology.Diff): subtopologies, topics, configs, replication factors and fixed partition counts,
	// one line each. Empty when the group could not be described, or when the topologies differ only
	// where the description does not show (copartition groups).
	Differences []string
}

// maxDifferencesShown caps the differences String repeats; Differences keeps them all.
const maxDifferencesShown = 10

// String is the comparison ("the group runs topology X at epoch N; this member runs Y at epoch M:
// <action>") followed by the differences, at most maxDifferencesShown of them.
func (t *TopologyMismatch) String() string {
	s := t.Comparison.String()
	if len(t.Differences) > 0 {
		s += "; differences: " + topology.JoinDiff(t.Differences, maxDifferencesShown)
	}
	return s
}

// TopologyError is the fatal error of a member whose topology the group refused. It unwraps to the
// heartbeat error (so errors.Is(err, heartbeat.ErrTopologyMismatch) holds).
type TopologyError struct {
	Mismatch TopologyMismatch
	Err      error
}

func (e *TopologyError) Error() string { return e.Mismatch.String() }

// Unwrap returns the heartbeat error.
func (e *TopologyError) Unwrap() error { return e.Err }

// compareTopologies compares the member's topology with the group's as the broker described it (g
// nil: not described).
func compareTopologies(g *kmsg.StreamsGroupDescribeResponseGroup, local *topology.Topology, localEpoch int32, situation topology.Situation) TopologyMismatch {
	var group *topology.Described
	if g != nil {
		if d, err := topology.FromDescribe(g.Topology); err == nil {
			group = d
		}
	}
	return TopologyMismatch{Comparison: topology.Compare(group, local, localEpoch, situation), Differences: topology.Diff(group, local)}
}
