package topology

import (
	"maps"
	"slices"
	"sort"
)

// TopicInfo describes an internal topic of a subtopology: a repartition topic it reads, or the
// changelog topic of one of its state stores. The broker creates these topics itself.
type TopicInfo struct {
	// Name is the full topic name, for example "app-counts-changelog" (see Names).
	Name string
	// Partitions fixes the partition count of a repartition topic; 0 lets the broker derive it from
	// the upstream subtopology. Changelog topics must use 0: their count always equals the task count.
	Partitions int32
	// ReplicationFactor of the topic; -1 uses the broker's default.replication.factor (what Kafka
	// Streams sends unless replication.factor is configured). 0 means the same and is sent as -1, so a
	// TopicInfo literal that leaves it out matches Kafka Streams.
	ReplicationFactor int16
	// Configs are topic configs the broker applies when it creates the topic.
	Configs map[string]string
}

func (ti TopicInfo) clone() TopicInfo {
	ti.Configs = maps.Clone(ti.Configs)
	return ti
}

func (ti TopicInfo) equal(o TopicInfo) bool {
	return ti.Name == o.Name && ti.Partitions == o.Partitions && ti.ReplicationFactor == o.ReplicationFactor &&
		maps.Equal(ti.Configs, o.Configs)
}

// Subtopology is one independently executable part of a topology. Each partition of its input topics
// becomes one task.
type Subtopology struct {
	// ID identifies the subtopology inside the topology. Kafka Streams uses "0", "1", ….
	ID string
	// SourceTopics are the user topics the subtopology reads (not its repartition topics).
	SourceTopics []string
	// SourceTopicRegexes are patterns of source topics. Validated here, but no broker accepts them
	// yet, so a topology that has any cannot join a group (CheckJoinable says so).
	SourceTopicRegexes []string
	// RepartitionSinkTopics are the repartition topics this subtopology writes. Each must be read as
	// a repartition source by some subtopology of the topology.
	RepartitionSinkTopics []string
	// RepartitionSourceTopics are the repartition topics this subtopology reads.
	RepartitionSourceTopics []TopicInfo
	// StateChangelogTopics are the changelog topics of the subtopology's state stores.
	StateChangelogTopics []TopicInfo
	// CopartitionGroups are sets of input topics (source or repartition source topics of this
	// subtopology) that must have the same partition count, as a join requires. Kafka Streams sends
	// them in Java HashSet order, and the broker compares the lists in order; where hash buckets
	// collide that order depends on the order Kafka Streams added the topics. List each group's topics
	// in that order, as CopartitionGroup returns them for a join (it needs the source node names for
	// an exact order), and the groups in the order of the joins, merged as CopartitionGroups does.
	CopartitionGroups [][]string
}

func (s Subtopology) clone() Subtopology {
	c := s
	c.SourceTopics = slices.Clone(s.SourceTopics)
	c.SourceTopicRegexes = slices.Clone(s.SourceTopicRegexes)
	c.RepartitionSinkTopics = slices.Clone(s.RepartitionSinkTopics)
	c.RepartitionSourceTopics = cloneInfos(s.RepartitionSourceTopics)
	c.StateChangelogTopics = cloneInfos(s.StateChangelogTopics)
	c.CopartitionGroups = make([][]string, len(s.CopartitionGroups))
	for i, g := range s.CopartitionGroups {
		c.CopartitionGroups[i] = slices.Clone(g)
	}
	return c
}

func cloneInfos(in []TopicInfo) []TopicInfo {
	out := make([]TopicInfo, len(in))
	for i, ti := range in {
		out[i] = ti.clone()
	}
	return out
}

// InputTopics returns the topics whose partitions make up the subtopology's tasks: its source topics
// and its repartition source topics, sorted. Task p of the subtopology owns partition p of each.
func (s Subtopology) InputTopics() []string {
	out := slices.Clone(s.SourceTopics)
	for _, ti := range s.RepartitionSourceTopics {
		out = append(out, ti.Name)
	}
	sort.Strings(out)
	return out
}

// Topology is a validated topology in canonical form. It is immutable: accessors return copies.
type Topology struct {
	subs []Subtopology // sorted by ID; every list sorted as Kafka Streams sends it
	byID map[string]int
	id   ID
	java JavaRuntime
	// globals are the global stores (WithGlobalStores): not in the heartbeat, not in the ID.
	globals []GlobalStore
}

// New validates the subtopologies and returns the topology in canonical form. The order in which
// subtopologies, topics and configs are given does not matter (except the order of copartition
// groups and of the topics inside them, see Subtopology.CopartitionGroups). An invalid topology
// returns a *ValidationError that lists every problem.
func New(subtopologies ...Subtopology) (*Topology, error) {
	if err := validate(subtopologies); err != nil {
		return nil, err
	}
	t := &Topology{byID: make(map[string]int, len(subtopologies))}
	for _, s := range subtopologies {
		t.subs = append(t.subs, canonical(s))
	}
	sortSubs(t.subs)
	for i, s := range t.subs {
		t.byID[s.ID] = i
	}
	t.id = computeID(t.subs)
	return t, nil
}

// ForJava returns a copy of the topology whose copartition groups are ordered as Kafka Streams orders
// them on the given Java runtime (Java17 by default; see JavaRuntime). Only Go members that share a
// group with Java members of a Java 19+ runtime need it.
func (t *Topology) ForJava(rt JavaRuntime) *Topology {
	c := *t
	c.java = rt
	return &c
}

// WithReplicationFactor returns the topology with rf as the replication factor of every internal
// topic (repartition source and changelog topic) that declares none (-1 or 0: the broker's
// default.replication.factor), which is what Kafka Streams' replication.factor key does; a topic
// whose declaration names a factor keeps it. rf <= 0 (the key's default, -1) returns t itself.
// The topology ID covers replication factors, so the result has its own ID.
func (t *Topology) WithReplicationFactor(rf int16) *Topology {
	if rf <= 0 {
		return t
	}
	c := &Topology{byID: t.byID, java: t.java, globals: t.globals, subs: make([]Subtopology, len(t.subs))}
	for i, s := range t.subs {
		s = s.clone()
		for _, infos := range [][]TopicInfo{s.RepartitionSourceTopics, s.StateChangelogTopics} {
			for j := range infos {
				if infos[j].ReplicationFactor <= 0 {
					infos[j].ReplicationFactor = rf
				}
			}
		}
		c.subs[i] = s
	}
	c.id = computeID(c.subs)
	return c
}

// MustNew is New for topologies written in the program's source: it panics on an invalid one.
func MustNew(subtopologies ...Subtopology) *Topology {
	t, err := New(subtopologies...)
	if err != nil {
		panic(err)
	}
	return t
}

// canonical returns a copy of s with every list in the order Kafka Streams sends it: topics sorted,
// internal topics sorted by name. Copartition groups keep the caller's (Kafka Streams') order here;
// they are put in Java HashSet order when the request is built.
func canonical(s Subtopology) Subtopology {
	c := s.clone()
	sort.Strings(c.SourceTopics)
	sort.Strings(c.SourceTopicRegexes)
	sort.Strings(c.RepartitionSinkTopics)
	sortInfos(c.RepartitionSourceTopics)
	sortInfos(c.StateChangelogTopics)
	return c
}

// sortSubs orders subtopologies by ID as strings ("0" < "1" < "10" < "2"), as Kafka Streams does.
func sortSubs(subs []Subtopology) {
	sort.Slice(subs, func(i, j int) bool { return subs[i].ID < subs[j].ID })
}

func sortInfos(in []TopicInfo) {
	for i := range in {
		if in[i].ReplicationFactor == 0 {
			in[i].ReplicationFactor = -1
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Name < in[j].Name })
}

// Subtopologies returns copies of the subtopologies, sorted by ID.
func (t *Topology) Subtopologies() []Subtopology {
	out := make([]Subtopology, len(t.subs))
	for i, s := range t.subs {
		out[i] = s.clone()
	}
	return out
}

// Subtopology returns a copy of the subtopology with the given ID.
func (t *Topology) Subtopology(id string) (Subtopology, bool) {
	i, ok := t.byID[id]
	if !ok {
		return Subtopology{}, false
	}
	return t.subs[i].clone(), true
}

// HasSubtopology reports whether the topology has a subtopology with the given ID, without copying.
func (t *Topology) HasSubtopology(id string) bool {
	_, ok := t.byID[id]
	return ok
}

// InputTopics returns the input topics of subtopology id (see Subtopology.InputTopics), or nil.
func (t *Topology) InputTopics(id string) []string {
	i, ok := t.byID[id]
	if !ok {
		return nil
	}
	return t.subs[i].InputTopics()
}

// ID returns the topology ID: a stable identity of the topology's content (see ID).
func (t *Topology) ID() ID { return t.id }

// Equal reports whether two topologies are the same in every field the broker compares.
func (t *Topology) Equal(o *Topology) bool {
	if len(t.subs) != len(o.subs) {
		return false
	}
	for i := range t.subs {
		a, b := t.subs[i], o.subs[i]
		if a.ID != b.ID || !slices.Equal(a.SourceTopics, b.SourceTopics) ||
			!slices.Equal(a.SourceTopicRegexes, b.SourceTopicRegexes) ||
			!slices.Equal(a.RepartitionSinkTopics, b.RepartitionSinkTopics) ||
			!slices.EqualFunc(a.RepartitionSourceTopics, b.RepartitionSourceTopics, TopicInfo.equal) ||
			!slices.EqualFunc(a.StateChangelogTopics, b.StateChangelogTopics, TopicInfo.equal) ||
			!slices.EqualFunc(a.CopartitionGroups, b.CopartitionGroups, slices.Equal) {
			return false
		}
	}
	return true
}
