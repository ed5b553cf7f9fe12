package topology

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Described is a group's topology as the broker describes it (StreamsGroupDescribe): the epoch and
// the subtopologies the group runs. Internal topics carry the partition counts the broker resolved,
// and there are no copartition groups, so it is not a Topology; its ID is comparable with one.
type Described struct {
	Epoch         int32
	Subtopologies []Subtopology // as described, sorted by ID
	ID            ID
}

// ErrNoTopology is returned by FromDescribe when the group has no topology (for example it never had
// a member).
var ErrNoTopology = errors.New("the group has no topology")

// FromDescribe reads the topology of one group of a StreamsGroupDescribe response. The broker's
// answer is taken as it is; only a missing topology or an empty subtopology ID is an error.
func FromDescribe(t *kmsg.StreamsGroupDescribeResponseGroupTopology) (*Described, error) {
	if t == nil {
		return nil, ErrNoTopology
	}
	d := &Described{Epoch: t.Epoch}
	for _, s := range t.Subtopologies {
		if s.SubtopologyID == "" {
			return nil, fmt.Errorf("described topology: %w", ErrEmptySubtopologyID)
		}
		d.Subtopologies = append(d.Subtopologies, canonical(Subtopology{
			ID:                      s.SubtopologyID,
			SourceTopics:            s.SourceTopics,
			RepartitionSinkTopics:   s.RepartitionSinkTopics,
			RepartitionSourceTopics: fromKmsgInfos(s.RepartitionSourceTopics),
			StateChangelogTopics:    fromKmsgInfos(s.StateChangelogTopics),
		}))
	}
	sortSubs(d.Subtopologies)
	d.ID = computeID(d.Subtopologies)
	return d, nil
}

func fromKmsgInfos(in []kmsg.TopicInfo) []TopicInfo {
	out := make([]TopicInfo, len(in))
	for i, ti := range in {
		out[i] = TopicInfo{Name: ti.Topic, Partitions: ti.NumPartitions, ReplicationFactor: ti.ReplicationFactor}
		if len(ti.Configs) > 0 {
			out[i].Configs = make(map[string]string, len(ti.Configs))
			for _, c := range ti.Configs {
				out[i].Configs[c.Key] = c.Value
			}
		}
	}
	return out
}
