package topology

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request returns the topology as the StreamsGroupHeartbeat join request carries it, with the given
// topology epoch, in exactly the form Kafka Streams sends: subtopologies sorted by ID, topic lists
// sorted, internal topics sorted by name and their configs by key, copartition groups in Java HashSet
// order with indices into the sorted source and repartition source lists. Every list is non-nil.
// Each call returns a fresh value the caller may keep.
func (t *Topology) Request(epoch int32) *kmsg.StreamsGroupHeartbeatRequestTopology {
	v := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	out := &v
	out.Epoch = epoch
	out.Subtopologies = make([]kmsg.StreamsGroupHeartbeatRequestTopologySubtopology, 0, len(t.subs))
	for _, s := range t.subs {
		k := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		k.SubtopologyID = s.ID
		k.SourceTopics = append([]string{}, s.SourceTopics...)
		k.SourceTopicRegex = append([]string{}, s.SourceTopicRegexes...)
		k.RepartitionSinkTopics = append([]string{}, s.RepartitionSinkTopics...)
		k.RepartitionSourceTopics = toKmsgInfos(s.RepartitionSourceTopics)
		k.StateChangelogTopics = toKmsgInfos(s.StateChangelogTopics)
		k.CopartitionGroups = copartitionRequest(s)
		out.Subtopologies = append(out.Subtopologies, k)
	}
	return out
}

func toKmsgInfos(in []TopicInfo) []kmsg.TopicInfo {
	out := make([]kmsg.TopicInfo, 0, len(in))
	for _, ti := range in {
		k := kmsg.NewTopicInfo()
		k.Topic = ti.Name
		k.NumPartitions = ti.Partitions
		k.ReplicationFactor = ti.ReplicationFactor
		keys := make([]string, 0, len(ti.Configs))
		for key := range ti.Configs {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		k.Configs = make([]kmsg.TopicInfoConfig, 0, len(keys))
		for _, key := range keys {
			k.Configs = append(k.Configs, kmsg.TopicInfoConfig{Key: key, Value: ti.Configs[key]})
		}
		out = append(out, k)
	}
	return out
}

// copartitionRequest orders the subtopology's copartition groups, and the topics inside each, the
// way Kafka Streams iterates its HashSets, and turns topic names into indices into the sorted
// SourceTopics or RepartitionSourceTopics lists.
func copartitionRequest(s Subtopology) []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup {
	out := make([]kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup, 0, len(s.CopartitionGroups))
	if len(s.CopartitionGroups) == 0 {
		return out
	}
	sourceIdx := make(map[string]int16, len(s.SourceTopics))
	for i, n := range s.SourceTopics {
		sourceIdx[n] = int16(i)
	}
	repIdx := make(map[string]int16, len(s.RepartitionSourceTopics))
	for i, ti := range s.RepartitionSourceTopics {
		repIdx[ti.Name] = int16(i)
	}
	groupHashes := make([]int32, len(s.CopartitionGroups))
	entries := 0
	for i, g := range s.CopartitionGroups {
		groupHashes[i] = javaSetHash(g)
		entries += len(g)
	}
	for _, gi := range javaHashOrder(groupHashes, outerCopartitionBuckets(len(s.CopartitionGroups), entries)) {
		g := s.CopartitionGroups[gi]
		topicHashes := make([]int32, len(g))
		for i, topic := range g {
			topicHashes[i] = javaStringHash(topic)
		}
		k := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
		k.SourceTopics, k.SourceTopicRegex, k.RepartitionSourceTopics = []int16{}, []int16{}, []int16{}
		for _, ti := range javaHashOrder(topicHashes, javaTableSizeForAdds(len(g))) {
			topic := g[ti]
			if i, ok := sourceIdx[topic]; ok {
				k.SourceTopics = append(k.SourceTopics, i)
			} else if i, ok := repIdx[topic]; ok {
				k.RepartitionSourceTopics = append(k.RepartitionSourceTopics, i)
			}
		}
		out = append(out, k)
	}
	return out
}

// outerCopartitionBuckets is the bucket count of the HashSet that holds a subtopology's copartition
// groups in Kafka Streams.
func outerCopartitionBuckets(groups, entries int) int {
	_ = entries
	return javaTableSizeForAdds(groups)
}
