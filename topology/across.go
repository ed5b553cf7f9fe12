package topology

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// This file holds the rules that compare subtopologies with each other. They follow what Kafka
// Streams builds (every topic read in one subtopology, every state store in one) and what the
// broker does with a topology after accepting it (gc/streams/topics in Kafka 4.4: RepartitionTopics
// derives repartition partition counts from the user source topics, ChangelogTopics sizes each
// changelog by its subtopology's task count, CopartitionedTopicsEnforcer compares fixed counts).

// maxListed caps the subtopology IDs or counts one message lists.
const maxListed = 5

// listIDs renders subtopology IDs for a message, quoted, at most maxListed of them.
func listIDs(ids []string) string {
	n := min(len(ids), maxListed)
	parts := make([]string, n)
	for i, id := range ids[:n] {
		parts[i] = quote(id)
	}
	s := strings.Join(parts, ", ")
	if len(ids) > n {
		s += fmt.Sprintf(" and %d more", len(ids)-n)
	}
	return s
}

// reader is one subtopology reading a topic.
type reader struct {
	sub         string
	repartition bool
	partitions  int32 // for a repartition source topic
}

func checkAcross(subs []Subtopology, add func(sub, topic string, err error)) {
	// Who reads each topic, in declaration order; a subtopology that lists a topic twice counts
	// once (that is a problem of its own, reported by validate).
	readers := make(map[string][]reader)
	var topics []string
	written := make(map[string]bool) // repartition sink topics of any subtopology
	for _, s := range subs {
		seen := make(map[string]bool)
		note := func(topic string, r reader) {
			if seen[topic] || ValidTopicName(topic) != nil {
				return
			}
			seen[topic] = true
			if _, ok := readers[topic]; !ok {
				topics = append(topics, topic)
			}
			readers[topic] = append(readers[topic], r)
		}
		for _, t := range s.SourceTopics {
			note(t, reader{sub: s.ID})
		}
		for _, ti := range s.RepartitionSourceTopics {
			note(ti.Name, reader{sub: s.ID, repartition: true, partitions: ti.Partitions})
		}
		for _, t := range s.RepartitionSinkTopics {
			written[t] = true
		}
	}

	repartition := make(map[string]bool) // read as a repartition source somewhere
	for _, topic := range topics {
		rs := readers[topic]
		var ids []string
		kinds := make(map[bool]bool)
		counts := make(map[int32][]string)
		for _, r := range rs {
			ids = append(ids, r.sub)
			kinds[r.repartition] = true
			if r.repartition {
				repartition[topic] = true
				counts[r.partitions] = append(counts[r.partitions], r.sub)
			}
		}
		if len(rs) < 2 {
			continue
		}
		switch {
		case len(kinds) == 2:
			add(rs[1].sub, topic, fmt.Errorf("%w (read by subtopologies %s)", ErrSourceIsRepartition, listIDs(ids)))
		case !rs[0].repartition:
			add(rs[1].sub, topic, fmt.Errorf("%w (read by subtopologies %s)", ErrSourceReadTwice, listIDs(ids)))
		default:
			add(rs[1].sub, topic, fmt.Errorf("%w (read by subtopologies %s)", ErrRepartitionReadTwice, listIDs(ids)))
			if len(counts) > 1 {
				var parts []string
				for _, n := range slices.Sorted(maps.Keys(counts)) {
					parts = append(parts, fmt.Sprintf("%d in subtopology %s", n, listIDs(counts[n])))
				}
				add(rs[1].sub, topic, fmt.Errorf("%w: %s", ErrRepartitionCounts, strings.Join(parts, ", ")))
			}
		}
	}

	checkChangelogsAcross(subs, readers, repartition, written, add)
	checkDerivable(subs, written, add)
	checkCopartitionCounts(subs, add)
}

// checkChangelogsAcross: a changelog belongs to one subtopology and is no other kind of topic.
func checkChangelogsAcross(subs []Subtopology, readers map[string][]reader, repartition, written map[string]bool,
	add func(sub, topic string, err error)) {
	owners := make(map[string][]string)
	infos := make(map[string][]TopicInfo)
	var order []string
	for _, s := range subs {
		seen := make(map[string]bool)
		for _, ti := range s.StateChangelogTopics {
			if seen[ti.Name] || ValidTopicName(ti.Name) != nil {
				continue
			}
			seen[ti.Name] = true
			if _, ok := owners[ti.Name]; !ok {
				order = append(order, ti.Name)
			}
			owners[ti.Name] = append(owners[ti.Name], s.ID)
			infos[ti.Name] = append(infos[ti.Name], ti)

			switch {
			case repartition[ti.Name] || written[ti.Name]:
				add(s.ID, ti.Name, fmt.Errorf("%w: it is a repartition topic too", ErrChangelogConflict))
			default:
				var others []string
				for _, r := range readers[ti.Name] {
					if !r.repartition && r.sub != s.ID {
						others = append(others, r.sub)
					}
				}
				if len(others) > 0 {
					add(s.ID, ti.Name, fmt.Errorf("%w: it is a source topic of subtopology %s", ErrChangelogConflict, listIDs(others)))
				}
			}
		}
	}
	for _, name := range order {
		ids := owners[name]
		if len(ids) < 2 {
			continue
		}
		detail := "the same configs"
		for _, ti := range infos[name][1:] {
			if !ti.equalDeclaration(infos[name][0]) {
				detail = "different configs"
				break
			}
		}
		add(ids[1], name, fmt.Errorf("%w (listed by subtopologies %s, with %s)", ErrChangelogShared, listIDs(ids), detail))
	}
}

// equalDeclaration compares what a subtopology declares about a topic: replication factor (0 and -1
// alike) and configs.
func (ti TopicInfo) equalDeclaration(o TopicInfo) bool {
	rf := func(r int16) int16 {
		if r == 0 {
			return -1
		}
		return r
	}
	return rf(ti.ReplicationFactor) == rf(o.ReplicationFactor) && maps.Equal(ti.Configs, o.Configs)
}

// checkDerivable runs the broker's derivation of repartition partition counts (RepartitionTopics in
// Kafka 4.4) on the topology alone: a count is known when fixed, and a repartition sink topic's
// count becomes known once a subtopology writing it reads a user source topic (which exists by the
// time the broker derives) or a repartition topic whose count is known. What stays unknown makes the
// broker fail the topology.
func checkDerivable(subs []Subtopology, written map[string]bool, add func(sub, topic string, err error)) {
	known := make(map[string]bool)
	readBy := make(map[string][]int) // repartition topic → the subtopologies reading it
	for i, s := range subs {
		for _, ti := range s.RepartitionSourceTopics {
			if ti.Partitions > 0 {
				known[ti.Name] = true
			}
			readBy[ti.Name] = append(readBy[ti.Name], i)
		}
	}
	// A worklist of fed subtopologies (the broker iterates to a fixed point; the result is the same,
	// and this stays linear in the size of the topology whatever the declaration order).
	fed := make([]bool, len(subs))
	var queue []int
	for i, s := range subs {
		if len(s.SourceTopics)+len(s.SourceTopicRegexes) > 0 ||
			slices.ContainsFunc(s.RepartitionSourceTopics, func(ti TopicInfo) bool { return known[ti.Name] }) {
			fed[i] = true
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, sink := range subs[i].RepartitionSinkTopics {
			if known[sink] {
				continue
			}
			known[sink] = true
			for _, r := range readBy[sink] {
				if !fed[r] {
					fed[r] = true
					queue = append(queue, r)
				}
			}
		}
	}
	for _, s := range subs {
		reported := make(map[string]bool)
		for _, ti := range s.RepartitionSourceTopics {
			if known[ti.Name] || ti.Partitions < 0 || reported[ti.Name] || ValidTopicName(ti.Name) != nil {
				continue
			}
			reported[ti.Name] = true
			if written[ti.Name] {
				add(s.ID, ti.Name, ErrRepartitionCycle)
			} else {
				add(s.ID, ti.Name, ErrRepartitionNotWritten)
			}
		}
	}
}

// checkCopartitionCounts refuses copartition groups whose fixed repartition counts cannot all hold,
// as the broker's CopartitionedTopicsEnforcer (Kafka 4.4) does.
func checkCopartitionCounts(subs []Subtopology, add func(sub, topic string, err error)) {
	fixed := make(map[string]int32) // the first declared fixed count of each repartition topic
	var fixedNames []string
	for _, s := range subs {
		for _, ti := range s.RepartitionSourceTopics {
			if _, ok := fixed[ti.Name]; !ok && ti.Partitions > 0 {
				fixed[ti.Name] = ti.Partitions
				fixedNames = append(fixedNames, ti.Name)
			}
		}
	}
	describe := func(names []string) string {
		sort.Strings(names)
		n := min(len(names), maxListed)
		parts := make([]string, n)
		for i, name := range names[:n] {
			parts[i] = fmt.Sprintf("%s=%d", quote(name), fixed[name])
		}
		s := strings.Join(parts, ", ")
		if len(names) > n {
			s += fmt.Sprintf(" and %d more", len(names)-n)
		}
		return s
	}
	topologyCounts := make(map[int32]bool)
	for _, name := range fixedNames {
		topologyCounts[fixed[name]] = true
	}
	for _, s := range subs {
		isRepartition := make(map[string]bool)
		for _, ti := range s.RepartitionSourceTopics {
			isRepartition[ti.Name] = true
		}
		for _, g := range s.CopartitionGroups {
			var inGroup []string
			counts := make(map[int32]bool)
			onlyRepartition := len(g) > 0
			for _, topic := range g {
				if n, ok := fixed[topic]; ok && isRepartition[topic] && !slices.Contains(inGroup, topic) {
					inGroup = append(inGroup, topic)
					counts[n] = true
				}
				onlyRepartition = onlyRepartition && isRepartition[topic]
			}
			switch {
			case len(counts) > 1:
				add(s.ID, inGroup[0], fmt.Errorf("%w: %s", ErrCopartitionFixedCounts, describe(inGroup)))
			case onlyRepartition && len(topologyCounts) > 1:
				add(s.ID, g[0], fmt.Errorf("%w: this copartition group has only repartition topics, and for such a group the broker "+
					"requires every repartition topic of the topology with a fixed count to have the same count: %s",
					ErrCopartitionFixedCounts, describe(slices.Clone(fixedNames))))
			}
		}
	}
}
