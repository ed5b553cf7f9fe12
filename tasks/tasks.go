package tasks

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ID names one task: a partition of a subtopology's input topics.
type ID struct {
	Subtopology string
	Partition   int32
}

// String is Kafka Streams' task ID form, "<subtopology>_<partition>".
func (id ID) String() string { return id.Subtopology + "_" + strconv.Itoa(int(id.Partition)) }

// Compare orders task IDs by subtopology ID (as strings, like Kafka Streams) and then by partition.
func (id ID) Compare(o ID) int {
	if c := strings.Compare(id.Subtopology, o.Subtopology); c != 0 {
		return c
	}
	return cmp.Compare(id.Partition, o.Partition)
}

// ParseID reads the "<subtopology>_<partition>" form.
func ParseID(s string) (ID, error) {
	i := strings.LastIndexByte(s, '_')
	if i <= 0 {
		return ID{}, fmt.Errorf("task ID %q: want <subtopology>_<partition>", s)
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil || p < 0 {
		return ID{}, fmt.Errorf("task ID %q: partition is not a non-negative number", s)
	}
	return ID{Subtopology: s[:i], Partition: int32(p)}, nil
}

// Set is an immutable, sorted set of task IDs. The zero value is the empty set. Operations return
// new sets and never change their operands, so a Set can be shared between goroutines.
type Set struct {
	ids []ID // sorted by Compare, no duplicates; never modified after construction
}

// NewSet returns the set of the given IDs (duplicates are dropped).
func NewSet(ids ...ID) Set {
	s := slices.Clone(ids)
	slices.SortFunc(s, ID.Compare)
	return Set{ids: slices.CompactFunc(s, func(a, b ID) bool { return a == b })}
}

// Len returns the number of tasks.
func (s Set) Len() int { return len(s.ids) }

// IsEmpty reports whether the set has no tasks.
func (s Set) IsEmpty() bool { return len(s.ids) == 0 }

// Contains reports whether id is in the set.
func (s Set) Contains(id ID) bool {
	_, ok := slices.BinarySearchFunc(s.ids, id, ID.Compare)
	return ok
}

// IDs returns the tasks in order, as a new slice the caller owns.
func (s Set) IDs() []ID { return slices.Clone(s.ids) }

// All iterates over the tasks in order.
func (s Set) All() func(yield func(ID) bool) {
	return func(yield func(ID) bool) {
		for _, id := range s.ids {
			if !yield(id) {
				return
			}
		}
	}
}

// Equal reports whether both sets hold the same tasks. Sets are immutable, so two that share their
// storage are equal without a look at their elements: the steady-state heartbeat compares the owned
// assignment with the one last sent, which is usually the very same value.
func (s Set) Equal(o Set) bool {
	if len(s.ids) != len(o.ids) {
		return false
	}
	if len(s.ids) == 0 || &s.ids[0] == &o.ids[0] {
		return true
	}
	return slices.Equal(s.ids, o.ids)
}

// Union returns the tasks in s or o.
func (s Set) Union(o Set) Set {
	out := make([]ID, 0, len(s.ids)+len(o.ids))
	i, j := 0, 0
	for i < len(s.ids) && j < len(o.ids) {
		switch c := s.ids[i].Compare(o.ids[j]); {
		case c < 0:
			out = append(out, s.ids[i])
			i++
		case c > 0:
			out = append(out, o.ids[j])
			j++
		default:
			out = append(out, s.ids[i])
			i++
			j++
		}
	}
	out = append(out, s.ids[i:]...)
	return Set{ids: append(out, o.ids[j:]...)}
}

// Difference returns the tasks in s that are not in o.
func (s Set) Difference(o Set) Set { return s.filter(o, false) }

// Intersect returns the tasks in both s and o.
func (s Set) Intersect(o Set) Set { return s.filter(o, true) }

// filter keeps the tasks of s that are in o (in = true) or not in o (in = false), walking both
// sorted lists once.
//
// A Set is immutable, so when nothing is taken away s itself is returned: a steady member's
// snapshot (what it holds is what the broker was told minus nothing revoked) then costs no copy, and
// Equal on the result finds the shared list at once.
func (s Set) filter(o Set, in bool) Set {
	if len(o.ids) == 0 || len(s.ids) == 0 {
		if in {
			return Set{}
		}
		return s
	}
	var out []ID
	if !in {
		out = make([]ID, 0, len(s.ids))
	}
	j := 0
	for _, id := range s.ids {
		for j < len(o.ids) && o.ids[j].Compare(id) < 0 {
			j++
		}
		if (j < len(o.ids) && o.ids[j] == id) == in {
			out = append(out, id)
		}
	}
	return Set{ids: out}
}

// String lists the tasks, e.g. "[0_0 0_1 1_0]".
func (s Set) String() string {
	parts := make([]string, len(s.ids))
	for i, id := range s.ids {
		parts[i] = id.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// FromKmsg reads a task list of a heartbeat or a describe answer. Duplicates are dropped; negative
// partitions are kept as they are, unlike ParseID: heartbeat.Parse checks the raw lists first and
// rejects an answer with a negative partition as a *heartbeat.ProtocolError, and admin shows a
// described assignment as the broker sent it.
func FromKmsg(in []kmsg.TaskIDs) Set {
	n := 0
	for _, t := range in {
		n += len(t.Partitions)
	}
	ids := make([]ID, 0, n)
	for _, t := range in {
		for _, p := range t.Partitions {
			ids = append(ids, ID{Subtopology: t.SubtopologyID, Partition: p})
		}
	}
	return NewSet(ids...)
}

// Kmsg returns the set as a heartbeat task list: one entry per subtopology, partitions ascending.
// The result is never nil, because the broker reads a null list as "unchanged" and an empty one as
// "none".
func (s Set) Kmsg() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, id := range s.ids {
		if len(out) == 0 || out[len(out)-1].SubtopologyID != id.Subtopology {
			out = append(out, kmsg.TaskIDs{SubtopologyID: id.Subtopology})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, id.Partition)
	}
	return out
}

// Assignment is what a member owns or is asked to own, by role.
type Assignment struct {
	Active  Set // tasks the member processes
	Standby Set // replicas kept up to date for fast fail-over
	Warmup  Set // replicas being restored before an active task moves here (Kafka 4.4+)
}

// Equal reports whether both assignments hold the same tasks in the same roles.
func (a Assignment) Equal(o Assignment) bool {
	return a.Active.Equal(o.Active) && a.Standby.Equal(o.Standby) && a.Warmup.Equal(o.Warmup)
}

// IsEmpty reports whether the assignment has no task at all.
func (a Assignment) IsEmpty() bool {
	return a.Active.IsEmpty() && a.Standby.IsEmpty() && a.Warmup.IsEmpty()
}

// All returns every task of any role.
func (a Assignment) All() Set { return a.Active.Union(a.Standby).Union(a.Warmup) }

// Normalize gives every task one role, as Kafka Streams does (StreamsMembershipManager): a task that
// is active is neither standby nor warm-up (a process never keeps a replica of a task it runs), and a
// task that is standby is not also warm-up. So standby = Standby − Active and warm-up =
// Warmup − Active − Standby, and each owned task is reported in one list only.
func (a Assignment) Normalize() Assignment {
	return Assignment{
		Active:  a.Active,
		Standby: a.Standby.Difference(a.Active),
		Warmup:  a.Warmup.Difference(a.Active.Union(a.Standby)),
	}
}

func (a Assignment) String() string {
	return fmt.Sprintf("active=%v standby=%v warmup=%v", a.Active, a.Standby, a.Warmup)
}
