package streammachine

import (
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// The record choice of a task with several input partitions, as Kafka Streams' PartitionGroup
// makes it (KIP-353, KIP-695): the next record is the buffered one with the smallest timestamp
// across the task's partitions, so that a join or a merge sees its inputs in time order; and the
// task waits, rather than process the others' records, while one of its partitions has nothing
// buffered but records are known to be on the brokers (or it is not known yet whether there are),
// and, when none are known, for max.task.idle.ms after it first found the partition empty. A
// partition that gets records again is waited for afresh the next time it runs dry. The records
// themselves are the shell's; the machine sees the heads.
//
// Like the open transaction it is fed by methods rather than Step: it is asked at every run of
// records.

// Head is what the machine is told of one input partition of a task when it chooses.
type Head struct {
	// Buffered: a record of the partition is fetched and not processed yet; Timestamp (unix ms) is
	// the first such record's.
	Buffered  bool
	Timestamp int64
	// Lag is how many records the brokers hold past the last fetched one, as of the last fetch or
	// listing of the partition's end: 0 none, more some, LagUnknown when nothing told yet.
	Lag int64
}

// LagUnknown is a Head's Lag before a fetch or a listing told the partition's end.
const LagUnknown = -1

// NeverIdle is max.task.idle.ms=-1 (Config.MaxTaskIdle): a task never waits for an empty partition.
const NeverIdle = -time.Millisecond

// NextInput says which of task's input partitions (an index into heads, in the task's partition
// order) the next record comes from: the one whose first buffered record has the smallest
// timestamp (a tie goes to the partition listed first). ok is false (and i -1) when the task
// waits: nothing is buffered, or a partition without records may still get some that would come
// first. now is
// the wall clock (the idle deadlines). RunLength says how many records may follow from the same
// partition before the choice is made again.
func (m *Machine) NextInput(task tasks.ID, heads []Head, now time.Time) (i int, ok bool) {
	best := -1
	idle := m.cfg.MaxTaskIdle
	disabled := idle == NeverIdle
	idle = max(idle, 0) // other negative values wait as 0 does, as in Kafka Streams
	for k, h := range heads {
		if h.Buffered {
			m.clearIdle(task, k)
			if best < 0 || h.Timestamp < heads[best].Timestamp {
				best = k
			}
			continue
		}
		if disabled {
			continue // max.task.idle.ms=-1: an empty partition is never waited for
		}
		if h.Lag != 0 {
			// Records are on the brokers (or may be): they are fetched before the others go on.
			m.clearIdle(task, k)
			return -1, false
		}
		// Nothing known to be there: wait max.task.idle.ms from the first time it was found so.
		if deadline := m.idleSince(task, k, now).Add(idle); now.Before(deadline) {
			return -1, false
		}
	}
	return best, best >= 0
}

// RunLength is how many of the records of the chosen partition (their timestamps in offset order,
// ts) go before NextInput must be asked again: those older than every other buffered head, or as
// old and the chosen partition listed first. It is at least 1.
func RunLength(heads []Head, chosen int, ts func(i int) int64, n int) int {
	// limit is the smallest other head; tieOK says a record as old as it still goes first (the
	// chosen partition is listed before the first partition with that head).
	limit, tieOK := int64(0), true
	any := false
	for k, h := range heads {
		if k == chosen || !h.Buffered {
			continue
		}
		if !any || h.Timestamp < limit {
			limit, tieOK = h.Timestamp, chosen < k
		}
		any = true
	}
	if !any {
		return n // no other head: the partition's records go until it runs dry
	}
	run := 1
	for run < n {
		t := ts(run)
		if t > limit || t == limit && !tieOK {
			break
		}
		run++
	}
	return run
}

// idleSince is when task's partition k was first found empty with nothing known on the brokers
// since it last had records: the start of its idle wait.
func (m *Machine) idleSince(task tasks.ID, k int, now time.Time) time.Time {
	if m.idle == nil {
		m.idle = map[tasks.ID]map[int]time.Time{}
	}
	parts := m.idle[task]
	if parts == nil {
		parts = map[int]time.Time{}
		m.idle[task] = parts
	}
	since, ok := parts[k]
	if !ok {
		parts[k] = now
		since = now
	}
	return since
}

// clearIdle ends the idle wait of task's partition k.
func (m *Machine) clearIdle(task tasks.ID, k int) {
	if parts := m.idle[task]; parts != nil {
		delete(parts, k)
	}
}

// ForgetInputs drops what the machine knows of task's inputs' waits: the task stopped processing
// (its buffered records are dropped, and fetched again from its position).
func (m *Machine) ForgetInputs(task tasks.ID) { delete(m.idle, task) }
