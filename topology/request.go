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
	outer := javaTableSizeForCopy(t.copartitionedTopics(), t.java)
	for _, s := range t.subs {
		k := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		k.SubtopologyID = s.ID
		k.SourceTopics = append([]string{}, s.SourceTopics...)
		k.SourceTopicRegex = append([]string{}, s.SourceTopicRegexes...)
		k.RepartitionSinkTopics = append([]string{}, s.RepartitionSinkTopics...)
		k.RepartitionSourceTopics = toKmsgInfos(s.RepartitionSourceTopics)
		k.StateChangelogTopics = toKmsgInfos(s.StateChangelogTopics)
		k.CopartitionGroups = copartitionRequest(s, outer)
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

// copartitionedTopics counts the distinct topics of all copartition groups of the topology: Kafka
// Streams sizes the HashSet that holds every group of the topology from that number.
func (t *Topology) copartitionedTopics() int {
	seen := make(map[string]bool)
	for _, s := range t.subs {
		for _, g := range s.CopartitionGroups {
			for _, topic := range g {
				seen[topic] = true
			}
		}
	}
	return len(seen)
}

// copartitionRequest orders the subtopology's copartition groups, and the topics inside each, the
// way Kafka Streams iterates its HashSets, and turns topic names into indices into the sorted
// SourceTopics or RepartitionSourceTopics lists.
//
// Kafka Streams keeps every copartition group of the topology in one HashSet (built with the copy
// constructor from as many entries as there are copartitioned topics; outerBuckets is its table
// size), iterates it once, and gives each subtopology the groups that lie inside it, in that order.
// Each group is a HashSet of topic names filled by adds. Iteration order is bucket order, ties in
// insertion order: the caller's order of groups and of topics inside each.
func copartitionRequest(s Subtopology, outerBuckets int) []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup {
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
	for i, g := range s.CopartitionGroups {
		groupHashes[i] = javaSetHash(g)
	}
	for _, gi := range javaHashOrder(groupHashes, outerBuckets) {
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
