package topology

import (
	"slices"
	"strconv"
	"time"
)

// Helpers for the internal topics and copartition groups that Kafka Streams DSL operations add, so
// a Go member can declare the topology a Kafka Streams application sends without reverse
// engineering it. Every value here was checked against what Kafka Streams 4.4 sends (captured from
// the StreamsRebalanceData of real applications, integration/javapeer/DslPeer.java) and against a
// 4.4 broker, which accepts a Go member into the Java application's group only when the two are
// identical (integration/javapeer_dsl_test.go).
//
// The helpers take the names the DSL code gives (Grouped.as, Materialized.as, StreamJoined.as,
// TableJoined.as, Suppressed.withName, Repartitioned.as). Unnamed operations get generated names
// with node numbers (e.g. KSTREAM-AGGREGATE-STATE-STORE-0000000002); read them from
// Topology.describe() and pass them the same way.
//
// Copartition groups: a DSL join whose inputs must be copartitioned registers the input topics of
// both sides (the source topics, or the repartition topics a re-keying before the join created):
// KStream-KStream joins, KStream-KTable joins, KTable-KTable primary-key joins, and each side of a
// foreign-key join (its own input with the subscription topic it reads). Joins with a GlobalKTable
// do not copartition. Kafka Streams merges the groups that share a topic (CopartitionGroups) and
// puts each group in the subtopology that reads all its topics. The groups are not in describe(),
// in the broker's description of the group, or in the topology ID, but the broker compares them.

// JoinWindowChangelog returns the TopicInfo Kafka Streams sends for the changelog of a
// stream-stream join's window store (a store that keeps duplicates): cleanup.policy=delete (not
// compact,delete as for windowed aggregations: compaction would drop the duplicates), retention.ms =
// the store's retention plus one day (windowstore.changelog.additional.retention.ms), and
// message.timestamp.type=CreateTime. The retention of a join store is the JoinWindows size (before +
// after) plus its grace period.
func (n Names) JoinWindowChangelog(store string, retentionMs int64) TopicInfo {
	return n.changelog(store, "cleanup.policy", "delete",
		"retention.ms", formatMs(retentionMs+defaultAdditionalRetentionMs))
}

// ReusingSource returns ti as Kafka Streams sends a KTable's changelog when the table reuses its
// source topic as changelog (topology.optimization=all or reuse.ktable.source.topics): named after
// the source topic, with the store's configs. Without that optimization (the default) a KTable's store
// has its own <application.id>-<store>-changelog.
func (ti TopicInfo) ReusingSource(sourceTopic string) TopicInfo {
	c := ti.clone()
	c.Name = sourceTopic
	return c
}

// SuppressChangelog returns the TopicInfo of the changelog of a suppress() buffer named name
// (Suppressed.withName(name)): its store is <name>-store, a key-value changelog
// (cleanup.policy=compact). An unnamed suppress has a generated store name
// (KTABLE-SUPPRESS-STATE-STORE-<n>); pass it to KeyValueChangelog.
func (n Names) SuppressChangelog(name string) TopicInfo { return n.KeyValueChangelog(name + "-store") }

// JoinKind is the kind of a KStream-KStream join.
type JoinKind int

const (
	// InnerJoin is KStream.join.
	InnerJoin JoinKind = iota
	// LeftJoin is KStream.leftJoin.
	LeftJoin
	// OuterJoin is KStream.outerJoin.
	OuterJoin
)

// StreamStreamJoin describes a windowed KStream-KStream join as written in the DSL.
type StreamStreamJoin struct {
	// StoreName is the name given with StreamJoined.as(name) or StreamJoined.withStoreName(name).
	StoreName string
	// Kind is InnerJoin, LeftJoin or OuterJoin.
	Kind JoinKind
	// Before, After and Grace are the JoinWindows: JoinWindows.ofTimeDifferenceAndGrace(d, g) (and
	// ofTimeDifferenceWithNoGrace(d), grace 0) has Before = After = d; .before(…) and .after(…)
	// change one side.
	Before, After, Grace time.Duration
	// Left and Right are the source nodes of the two joined streams (left.join(right, …)) and the
	// topics they read (see JoinInput).
	Left, Right []JoinInput
}

// Join is what a DSL join adds to the subtopology it runs in: the changelogs of its state stores and
// the copartition group of its inputs.
type Join struct {
	Changelogs       []TopicInfo
	CopartitionGroup []string
}

// StreamStreamJoin returns what Kafka Streams 4.4 sends for a windowed stream-stream join: two window
// stores with changelogs of cleanup.policy=delete and retention.ms = Before + After + Grace + one day
// (JoinWindowChangelog), named
//
//	inner join: <store>-this-join-store, <store>-other-join-store
//	left join:  <store>-this-join-store, <store>-outer-other-join-store, and <store>-left-shared-join-store
//	outer join: <store>-outer-this-join-store, <store>-outer-other-join-store, and <store>-outer-shared-join-store
//
// where the shared store of left and outer joins (the records still waiting for a partner) is a
// key-value store with a compacted changelog; and the copartition group Left + Right.
func (n Names) StreamStreamJoin(j StreamStreamJoin) Join {
	retention := (j.Before + j.After + j.Grace).Milliseconds()
	this, other, shared := "-this-join-store", "-other-join-store", ""
	switch j.Kind {
	case LeftJoin:
		other, shared = "-outer-other-join-store", "-left-shared-join-store"
	case OuterJoin:
		this, other, shared = "-outer-this-join-store", "-outer-other-join-store", "-outer-shared-join-store"
	}
	out := Join{
		Changelogs: []TopicInfo{
			n.JoinWindowChangelog(j.StoreName+this, retention),
			n.JoinWindowChangelog(j.StoreName+other, retention),
		},
		CopartitionGroup: CopartitionGroup(j.Left, j.Right),
	}
	if shared != "" {
		out.Changelogs = append(out.Changelogs, n.KeyValueChangelog(j.StoreName+shared))
	}
	return out
}

// JoinInput is one source node a join reads, as Topology.describe() shows it:
//
//	Source: KSTREAM-SOURCE-0000000002 (topics: [orders])
//
// Kafka Streams orders the topics of a copartition group by their Java hash codes, and topics that
// fall into the same hash bucket by the hash codes of their source nodes' names (then this side
// before the other). With the node names the order is exact; without them (Node "") such topics keep
// the order given, which matches Kafka Streams only by chance. The broker compares the order.
type JoinInput struct {
	// Node is the source node's name: generated (KSTREAM-SOURCE-<n>, numbered in the order the
	// program creates nodes), given with Consumed.as / Repartitioned.as, or an internal one such as
	// <name>-subscription-response-source.
	Node string
	// Topics are the topics the node reads, in its order (the application's input topics, or the
	// repartition topic a re-keying before the join created).
	Topics []string
}

// Source is the JoinInput of source node node reading topics.
func Source(node string, topics ...string) JoinInput { return JoinInput{Node: node, Topics: topics} }

// CopartitionGroup returns the copartition group Kafka Streams registers for a join, with its topics
// in the order Kafka Streams adds them: sides[0] are the source nodes of the stream or table whose
// join method is called (this), the others those of the joined ones (AbstractStream
// .ensureCopartitionWith and InternalTopologyBuilder.copartitionGroups, Kafka Streams 4.4).
func CopartitionGroup(sides ...[]JoinInput) []string {
	byNode := make(map[string][]string)
	this := newJavaSet()
	all := (*javaSet)(nil)
	var unnamed []string // topics of nodes without a name, in the order given
	for i, side := range sides {
		if i == 1 {
			all = copyJavaSet(this)
		}
		for _, in := range side {
			if in.Node == "" {
				unnamed = append(unnamed, in.Topics...)
				continue
			}
			byNode[in.Node] = append(byNode[in.Node], in.Topics...)
			if i == 0 {
				this.add(in.Node)
			} else {
				all.add(in.Node)
			}
		}
	}
	if all == nil {
		all = this
	}
	topics := newJavaSet()
	for _, node := range copyJavaSet(all).iter() {
		for _, t := range byNode[node] {
			topics.add(t)
		}
	}
	for _, t := range unnamed {
		topics.add(t)
	}
	return topics.iter()
}

// CopartitionGroups merges the copartition groups of a topology's joins (each as CopartitionGroup
// returns it), given in the order the joins appear in the program, the way Kafka Streams does (InternalTopologyBuilder.copartitionGroups):
// a join's group joins the group of the first of its topics already in one, else starts a new
// group. The result is in the order Subtopology.CopartitionGroups wants (the order of the groups'
// first topics, each group's topics in the order they were added); give each subtopology the groups
// whose topics it reads.
//
// Kafka Streams merges only into the first group found, so topics of two earlier groups that a later
// join links stay in two groups that share a topic; this function does the same.
func CopartitionGroups(joins ...[]string) [][]string {
	var groups [][]string
	groupOf := make(map[string]int)
	var topics []string // in the order they were first mapped (Kafka Streams' LinkedHashMap keys)
	for _, join := range joins {
		g := -1
		for _, t := range join {
			if i, ok := groupOf[t]; ok {
				g = i
				break
			}
		}
		if g < 0 {
			g = len(groups)
			groups = append(groups, nil)
		}
		for _, t := range join {
			if !slices.Contains(groups[g], t) {
				groups[g] = append(groups[g], t)
			}
			if _, ok := groupOf[t]; !ok {
				topics = append(topics, t)
			}
			groupOf[t] = g
		}
	}
	// The groups in the order of the topics' current groups, each once: a group no topic maps to any
	// more is dropped, as in Kafka Streams.
	var out [][]string
	taken := make(map[int]bool)
	for _, t := range topics {
		if g := groupOf[t]; !taken[g] {
			taken[g] = true
			out = append(out, groups[g])
		}
	}
	return out
}

// ForeignKeyJoin is what a KTable-KTable foreign-key join (KTable.join(other, foreignKeyExtractor,
// joiner, TableJoined.as(name), …)) adds to a topology. Kafka Streams 4.4 splits it over two
// subtopologies: the primary (left) table's, which writes subscriptions and reads responses, and the
// foreign (right) table's, which reads subscriptions, keeps them in a store and writes responses.
type ForeignKeyJoin struct {
	// Registration is <application.id>-<name>-subscription-registration-topic: written by the
	// primary side, read by the foreign side. A repartition topic (same configs as Repartition).
	Registration TopicInfo
	// Response is <application.id>-<name>-subscription-response-topic: written by the foreign side,
	// read by the primary side.
	Response TopicInfo
	// SubscriptionStore is the changelog of the <name>-subscription-store on the foreign side
	// (cleanup.policy=compact).
	SubscriptionStore TopicInfo

	name string
}

// ForeignKeyJoin returns the internal topics of a foreign-key join named name (TableJoined.as(name)).
// An unnamed join's names carry node numbers (KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic …):
// name the join.
func (n Names) ForeignKeyJoin(name string) ForeignKeyJoin {
	rep := func(topic string) TopicInfo {
		ti := n.Repartition("", 0)
		ti.Name = n.AppID + "-" + topic
		return ti
	}
	return ForeignKeyJoin{
		Registration:      rep(name + "-subscription-registration-topic"),
		Response:          rep(name + "-subscription-response-topic"),
		SubscriptionStore: n.KeyValueChangelog(name + "-subscription-store"),
		name:              name,
	}
}

// AddToPrimary adds the join to the primary table's subtopology s, whose table is read by primary
// (its source node and topic, see JoinInput): it writes the registration topic, reads the response
// topic (source node <name>-subscription-response-source), and copartitions the two. (The join
// result's store, if materialized, is on this side too: add its KeyValueChangelog.)
func (j ForeignKeyJoin) AddToPrimary(s *Subtopology, primary ...JoinInput) {
	s.RepartitionSinkTopics = append(s.RepartitionSinkTopics, j.Registration.Name)
	s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, j.Response.clone())
	s.CopartitionGroups = append(s.CopartitionGroups, CopartitionGroup(primary,
		[]JoinInput{Source(j.name+"-subscription-response-source", j.Response.Name)}))
}

// AddToForeign adds the join to the foreign table's subtopology s, whose table is read by foreign:
// it reads the registration topic (source node <name>-subscription-registration-source), keeps the
// subscription store, writes the response topic, and copartitions the registration topic with the
// foreign table's input.
func (j ForeignKeyJoin) AddToForeign(s *Subtopology, foreign ...JoinInput) {
	s.RepartitionSinkTopics = append(s.RepartitionSinkTopics, j.Response.Name)
	s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, j.Registration.clone())
	s.StateChangelogTopics = append(s.StateChangelogTopics, j.SubscriptionStore.clone())
	s.CopartitionGroups = append(s.CopartitionGroups, CopartitionGroup(foreign,
		[]JoinInput{Source(j.name+"-subscription-registration-source", j.Registration.Name)}))
}

// TimeWindowRetention is the retention Kafka Streams gives a windowed aggregation's store
// (TimeWindows.ofSizeAndGrace(size, grace)) without Materialized.withRetention: size plus grace, in
// milliseconds, for WindowedChangelog. For other windows, or with Materialized.withRetention, pass
// the store's retention to WindowedChangelog directly.
func TimeWindowRetention(size, grace time.Duration) int64 { return (size + grace).Milliseconds() }

// SessionWindowRetention is the retention of a session-windowed aggregation's store
// (SessionWindows.ofInactivityGapAndGrace(gap, grace)) without Materialized.withRetention: gap plus
// grace, in milliseconds, for WindowedChangelog.
func SessionWindowRetention(gap, grace time.Duration) int64 { return (gap + grace).Milliseconds() }

func formatMs(ms int64) string { return strconv.FormatInt(ms, 10) }
