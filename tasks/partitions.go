package tasks

import (
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/topology"
)

// UnknownSubtopologyError is a task whose subtopology the topology does not have. A broker that
// assigns such a task runs another topology than this member; the member cannot process it.
type UnknownSubtopologyError struct {
	Task ID // the task of the unknown subtopology
}

// Error names the task and its subtopology.
func (e *UnknownSubtopologyError) Error() string {
	return fmt.Sprintf("task %s belongs to subtopology %q, which this member's topology does not have", e.Task, e.Task.Subtopology)
}

// CheckKnown returns an *UnknownSubtopologyError for the first task of s whose subtopology topo
// does not have, or nil.
func CheckKnown(topo *topology.Topology, s Set) error {
	for _, id := range s.ids {
		if !topo.HasSubtopology(id.Subtopology) {
			return &UnknownSubtopologyError{Task: id}
		}
	}
	return nil
}

// InputPartitions maps tasks to the topic partitions they read: task (s, p) reads partition p of
// every source and repartition source topic of subtopology s. The result maps each topic to its
// partitions in ascending order. A task of an unknown subtopology is an *UnknownSubtopologyError.
func InputPartitions(topo *topology.Topology, s Set) (map[string][]int32, error) {
	out := make(map[string][]int32)
	var cur string
	var topics []string
	for _, id := range s.ids {
		if id.Subtopology != cur || topics == nil {
			topics = topo.InputTopics(id.Subtopology)
			if topics == nil {
				return nil, &UnknownSubtopologyError{Task: id}
			}
			cur = id.Subtopology
		}
		for _, t := range topics {
			out[t] = append(out[t], id.Partition)
		}
	}
	// The set is sorted by subtopology and then partition, and a valid topology reads each input
	// topic in one subtopology only (topology.New refuses a topic read twice), so each topic's
	// partitions arrived in ascending order, each once.
	return out, nil
}

// UnknownOffset is what the protocol uses for an offset sum that is unknown or overflowed.
const UnknownOffset int64 = math.MaxInt64

// Offsets are task offsets: for each task, the sum of its changelog offsets (or end offsets) over
// the task's changelog partitions. Brokers of Kafka 4.4+ use them to place warm-up tasks.
type Offsets map[ID]int64

// SumOffsets adds changelog offsets into one task offset the way Kafka Streams does: any unknown
// (negative or UnknownOffset) part, or an overflow, makes the sum UnknownOffset.
func SumOffsets(parts ...int64) int64 {
	var sum int64
	for _, p := range parts {
		if p < 0 || p == UnknownOffset || sum > UnknownOffset-p {
			return UnknownOffset
		}
		sum += p
	}
	return sum
}

// Equal reports whether both hold the same offsets for the same tasks.
func (o Offsets) Equal(p Offsets) bool {
	if len(o) != len(p) {
		return false
	}
	for id, v := range o {
		if w, ok := p[id]; !ok || w != v {
			return false
		}
	}
	return true
}

// Kmsg returns the offsets as a heartbeat list, sorted by task, never nil.
func (o Offsets) Kmsg() []kmsg.TaskOffset {
	ids := make([]ID, 0, len(o))
	for id := range o {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, ID.Compare)
	out := make([]kmsg.TaskOffset, 0, len(ids))
	for _, id := range ids {
		out = append(out, kmsg.TaskOffset{SubtopologyID: id.Subtopology, Partition: id.Partition, Offset: o[id]})
	}
	return out
}

// OffsetsFromKmsg reads a heartbeat or describe task offset list.
func OffsetsFromKmsg(in []kmsg.TaskOffset) Offsets {
	out := make(Offsets, len(in))
	for _, t := range in {
		out[ID{Subtopology: t.SubtopologyID, Partition: t.Partition}] = t.Offset
	}
	return out
}

// TopicPartition is one partition of one topic.
type TopicPartition struct {
	Topic     string // the topic's name
	Partition int32  // the partition number
}

// String reads "topic[partition]".
func (tp TopicPartition) String() string { return fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition) }

// ChangelogPartitions maps tasks to the changelog partitions of their state stores: task (s, p)
// owns partition p of every changelog topic of subtopology s, whatever its role (active, standby or
// warm-up). The result has the shape of InputPartitions; a task of a stateless subtopology adds
// nothing. A task of an unknown subtopology is an *UnknownSubtopologyError.
func ChangelogPartitions(topo *topology.Topology, s Set) (map[string][]int32, error) {
	if topo == nil {
		return nil, fmt.Errorf("tasks: ChangelogPartitions needs a topology")
	}
	out := make(map[string][]int32)
	// Tasks arrive sorted, so those of one subtopology are adjacent: look its changelog topics up
	// once per run of tasks, not per task (Subtopology returns a copy).
	var (
		lastSub    string
		changelogs []topology.TopicInfo
	)
	for i, id := range s.ids {
		if i == 0 || id.Subtopology != lastSub {
			sub, ok := topo.Subtopology(id.Subtopology)
			if !ok {
				return nil, &UnknownSubtopologyError{Task: id}
			}
			lastSub, changelogs = id.Subtopology, sub.StateChangelogTopics
		}
		for _, ti := range changelogs {
			out[ti.Name] = append(out[ti.Name], id.Partition)
		}
	}
	for t, ps := range out {
		// Each changelog topic belongs to one subtopology (validated), whose tasks arrive sorted.
		out[t] = slices.Compact(ps)
	}
	return out, nil
}

// PartitionKind says what a task does with a topic partition.
type PartitionKind uint8

const (
	// Input partitions are read and processed by the active task: partition p of every source and
	// repartition source topic of the task's subtopology.
	Input PartitionKind = iota + 1
	// Changelog partitions back the task's state stores: written by the active task, read to restore
	// it and to keep standby and warm-up replicas current.
	Changelog
)

// String names the kind.
func (k PartitionKind) String() string {
	switch k {
	case Input:
		return "input"
	case Changelog:
		return "changelog"
	}
	return fmt.Sprintf("PartitionKind(%d)", uint8(k))
}

// SharedTopicError is a topic that a Router cannot route because it has two uses: it is both an
// input and a changelog of a subtopology (Kafka Streams sends that when a KTable reuses its source
// topic as changelog, topology.optimization=all), or it belongs to two subtopologies (which
// topology.New refuses). Restoring a store from its own input partition is not supported yet.
type SharedTopicError struct {
	Topic         string   // the topic with two uses
	Subtopologies []string // the subtopology of each use, in topology order
}

// Error names the topic and its uses.
func (e *SharedTopicError) Error() string {
	return fmt.Sprintf("topic %q has two uses (subtopologies %v; input and changelog when a KTable reuses its source topic as changelog): "+
		"the processing pieces cannot route one of its partitions to one task in one role; turn off topology.optimization=reuse.ktable.source.topics",
		e.Topic, e.Subtopologies)
}

// NegativePartitionError is a task with a negative partition: no topic has such a partition.
type NegativePartitionError struct {
	Task ID // the task asked about
}

// Error names the task.
func (e *NegativePartitionError) Error() string {
	return fmt.Sprintf("task %s has a negative partition", e.Task)
}

// Router maps tasks to the partitions they read and write, and topic partitions back to tasks. It
// is the one place that knows the rule: task (s, p) owns partition p of the input topics (source and
// repartition source topics, copartitioned ones together) and of the changelog topics of
// subtopology s. A Router is immutable and safe for concurrent use.
type Router struct {
	topo       *topology.Topology
	inputs     map[string][]string // subtopology → input topics, sorted
	changelogs map[string][]string // subtopology → changelog topics, sorted
	byTopic    map[string]topicUse
}

type topicUse struct {
	sub  string
	kind PartitionKind
}

// NewRouter builds the router of a topology. A topic that belongs to more than one subtopology, or
// that is both an input and a changelog, is a *SharedTopicError: its partitions cannot be routed to
// one task each.
func NewRouter(topo *topology.Topology) (*Router, error) {
	if topo == nil {
		return nil, fmt.Errorf("tasks: NewRouter needs a topology")
	}
	r := &Router{
		topo:       topo,
		inputs:     make(map[string][]string),
		changelogs: make(map[string][]string),
		byTopic:    make(map[string]topicUse),
	}
	users := make(map[string][]string)
	for _, sub := range topo.Subtopologies() {
		r.inputs[sub.ID] = sub.InputTopics()
		for _, t := range r.inputs[sub.ID] {
			users[t] = append(users[t], sub.ID)
			r.byTopic[t] = topicUse{sub: sub.ID, kind: Input}
		}
		for _, ti := range sub.StateChangelogTopics {
			r.changelogs[sub.ID] = append(r.changelogs[sub.ID], ti.Name)
			users[ti.Name] = append(users[ti.Name], sub.ID)
			r.byTopic[ti.Name] = topicUse{sub: sub.ID, kind: Changelog}
		}
	}
	var shared []string
	for t, subs := range users {
		if len(subs) > 1 {
			shared = append(shared, t)
		}
	}
	if len(shared) > 0 {
		slices.Sort(shared)
		return nil, &SharedTopicError{Topic: shared[0], Subtopologies: users[shared[0]]}
	}
	return r, nil
}

// Task returns the task a topic partition belongs to and what the task does with it; false for a
// topic that is no input or changelog of the topology, or a negative partition.
func (r *Router) Task(topic string, partition int32) (ID, PartitionKind, bool) {
	u, ok := r.byTopic[topic]
	if !ok || partition < 0 {
		return ID{}, 0, false
	}
	return ID{Subtopology: u.sub, Partition: partition}, u.kind, true
}

// Inputs returns the input partitions of task id (one per input topic, sorted by topic). A task of
// an unknown subtopology is an *UnknownSubtopologyError, a negative partition a
// *NegativePartitionError.
func (r *Router) Inputs(id ID) ([]TopicPartition, error) { return r.partitions(id, r.inputs) }

// Changelogs returns the changelog partitions of task id (one per state store, sorted by topic);
// none for a stateless task. Errors as for Inputs.
func (r *Router) Changelogs(id ID) ([]TopicPartition, error) { return r.partitions(id, r.changelogs) }

// Stateful reports whether task id has state stores (changelog partitions). Unknown subtopologies
// are not stateful.
func (r *Router) Stateful(id ID) bool { return len(r.changelogs[id.Subtopology]) > 0 }

// ChangelogTopics returns every changelog topic of the topology, sorted.
func (r *Router) ChangelogTopics() []string {
	var out []string
	for _, topics := range r.changelogs {
		out = append(out, topics...)
	}
	slices.Sort(out)
	return out
}

// Known reports whether the topology has the task's subtopology.
func (r *Router) Known(id ID) bool { return r.topo.HasSubtopology(id.Subtopology) }

func (r *Router) partitions(id ID, by map[string][]string) ([]TopicPartition, error) {
	if !r.topo.HasSubtopology(id.Subtopology) {
		return nil, &UnknownSubtopologyError{Task: id}
	}
	if id.Partition < 0 {
		return nil, &NegativePartitionError{Task: id}
	}
	topics := by[id.Subtopology]
	out := make([]TopicPartition, len(topics))
	for i, t := range topics {
		out[i] = TopicPartition{Topic: t, Partition: id.Partition}
	}
	return out, nil
}

// Group collects topic partitions by topic (the form kgo's consume and pause calls take), each
// topic's partitions ascending and distinct.
func Group(tps []TopicPartition) map[string][]int32 {
	out := make(map[string][]int32)
	for _, tp := range tps {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for t, ps := range out {
		slices.Sort(ps)
		out[t] = slices.Compact(ps)
	}
	return out
}
