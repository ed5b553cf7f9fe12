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
	Task ID
}

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
	for t, ps := range out {
		// Partitions of one subtopology arrive sorted and distinct; a topic read by two subtopologies
		// may need a sort, and holds a partition twice when both subtopologies have its task.
		if !slices.IsSorted(ps) {
			slices.Sort(ps)
		}
		out[t] = slices.Compact(ps)
	}
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
