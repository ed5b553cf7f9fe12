package topology

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Diff lists how the local topology differs from the group's, as the broker describes it
// (FromDescribe), one readable line per difference: a subtopology only on one side; a source topic,
// source topic regex, repartition sink topic, repartition source topic or changelog topic only on one
// side; and for an internal topic on both sides its replication factor, each topic config, and its
// partition count. Lines come in subtopology ID order, topics by name. Identical topologies, or a
// nil argument, give nil.
//
// Only what the description carries can be compared. It has no copartition groups, and it shows the
// partition counts the broker resolved, so a count is a difference only where the local topology
// fixes one (not 0) and the group's differs. Topologies that differ only there have the same ID;
// the broker still refuses the member (see SameIDDifferentDetail).
func Diff(group *Described, local *Topology) []string {
	if group == nil || local == nil {
		return nil
	}
	groupSubs := make(map[string]Subtopology, len(group.Subtopologies))
	for _, s := range group.Subtopologies {
		groupSubs[s.ID] = s
	}
	var ids []string
	for _, s := range group.Subtopologies {
		ids = append(ids, s.ID)
	}
	for _, s := range local.subs {
		if _, ok := groupSubs[s.ID]; !ok {
			ids = append(ids, s.ID)
		}
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)

	var out []string
	for _, id := range ids {
		g, inGroup := groupSubs[id]
		l, inLocal := local.Subtopology(id)
		prefix := "subtopology " + quote(id)
		switch {
		case !inGroup:
			out = append(out, fmt.Sprintf("%s is only in this topology (it reads %s)", prefix, listTopics(l.InputTopics())))
			continue
		case !inLocal:
			out = append(out, fmt.Sprintf("%s is only in the group's topology (it reads %s)", prefix, listTopics(g.InputTopics())))
			continue
		}
		out = append(out, diffNames(prefix, "source topic", g.SourceTopics, l.SourceTopics)...)
		out = append(out, diffNames(prefix, "source topic regex", g.SourceTopicRegexes, l.SourceTopicRegexes)...)
		out = append(out, diffNames(prefix, "repartition sink topic", g.RepartitionSinkTopics, l.RepartitionSinkTopics)...)
		out = append(out, diffInfos(prefix, "repartition source topic", g.RepartitionSourceTopics, l.RepartitionSourceTopics, true)...)
		out = append(out, diffInfos(prefix, "changelog topic", g.StateChangelogTopics, l.StateChangelogTopics, false)...)
	}
	return out
}

// listTopics renders topic names for a Diff line, at most maxListed of them.
func listTopics(names []string) string {
	if len(names) == 0 {
		return "no topic"
	}
	return listIDs(names)
}

func diffNames(prefix, what string, group, local []string) []string {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, n := range list {
			m[n] = true
		}
		return m
	}
	g, l := in(group), in(local)
	var out []string
	for _, n := range slices.Sorted(maps.Keys(l)) {
		if !g[n] {
			out = append(out, fmt.Sprintf("%s: %s %s is only in this topology", prefix, what, quote(n)))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(g)) {
		if !l[n] {
			out = append(out, fmt.Sprintf("%s: %s %s is only in the group's topology", prefix, what, quote(n)))
		}
	}
	return out
}

func diffInfos(prefix, what string, group, local []TopicInfo, partitions bool) []string {
	g := make(map[string]TopicInfo, len(group))
	for _, ti := range group {
		g[ti.Name] = ti
	}
	l := make(map[string]TopicInfo, len(local))
	for _, ti := range local {
		l[ti.Name] = ti
	}
	var names []string
	for n := range l {
		names = append(names, n)
	}
	for n := range g {
		if _, ok := l[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		gt, inGroup := g[n]
		lt, inLocal := l[n]
		topic := fmt.Sprintf("%s: %s %s", prefix, what, quote(n))
		switch {
		case !inGroup:
			out = append(out, topic+" is only in this topology")
			continue
		case !inLocal:
			out = append(out, topic+" is only in the group's topology")
			continue
		}
		rf := func(r int16) int16 {
			if r == 0 {
				return -1
			}
			return r
		}
		if rf(gt.ReplicationFactor) != rf(lt.ReplicationFactor) {
			out = append(out, fmt.Sprintf("%s: replication factor %d in this topology, %d in the group's", topic, rf(lt.ReplicationFactor), rf(gt.ReplicationFactor)))
		}
		if partitions && lt.Partitions > 0 && gt.Partitions > 0 && lt.Partitions != gt.Partitions {
			out = append(out, fmt.Sprintf("%s: %d partitions in this topology, %d in the group's", topic, lt.Partitions, gt.Partitions))
		}
		keys := slices.Collect(maps.Keys(lt.Configs))
		for k := range gt.Configs {
			if _, ok := lt.Configs[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			lv, inL := lt.Configs[k]
			gv, inG := gt.Configs[k]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("%s: config %s=%s only in this topology", topic, quote(k), quote(lv)))
			case !inL:
				out = append(out, fmt.Sprintf("%s: config %s=%s only in the group's topology", topic, quote(k), quote(gv)))
			case lv != gv:
				out = append(out, fmt.Sprintf("%s: config %s is %s in this topology, %s in the group's", topic, quote(k), quote(lv), quote(gv)))
			}
		}
	}
	return out
}

// JoinDiff renders Diff lines for one message: at most max of them joined with "; ", and how many
// more there are.
func JoinDiff(lines []string, max int) string {
	n := min(len(lines), max)
	s := strings.Join(lines[:n], "; ")
	if len(lines) > n {
		s += fmt.Sprintf("; and %d more differences", len(lines)-n)
	}
	return s
}
