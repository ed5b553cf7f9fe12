package streammachine

import (
	"maps"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The input positions and partition times: for every input partition of an active task, where
// processing stands (the offset after the last record processed), where its last commit stands,
// and the partition's time (the largest timestamp processed from it, Kafka Streams' partition time)
// as processed and as committed. A commit takes its offsets and their metadata from here, marks
// them committed once it succeeded, and an abort or a retry of a failed write takes them back to
// the committed ones; a task that becomes active starts from what its offsets' last commit holds
// (CommittedInputs), written by this member or any other, Go or Java.
//
// Positions and times move with every run of records the shell processes, so they are fed by
// methods (Processed, Advanced), as the open transaction is, rather than by an Input value per run.

// position is one input partition of an active task.
type position struct {
	task tasks.ID
	// done is the offset after the last record processed, or the committed offset when none was
	// processed since; -1 when neither is known (consumption starts at auto.offset.reset).
	done int64
	// committed is the last committed offset, -1 when none is known.
	committed int64
	// time and committedTime are the partition time as processed and as of the last commit;
	// commit.UnknownPartitionTime when none is known.
	time, committedTime int64
}

// processorMeta is a task's processor metadata (Kafka Streams' ProcessorMetadata: named longs, such
// as a windowed aggregation's last emitted window close time under its store's name), committed
// with every input partition's offset and read back from them when the task starts here, whichever
// member, Go or Java, committed it.
type processorMeta struct {
	cur, committed map[string]int64
}

// CommittedInputs is what the group's committed offsets held for the input partitions of tasks
// that start processing here (the member reads them as it assigns the tasks): each partition's
// offset, and the metadata committed with it. Tasks are the tasks they were read for: those start
// from them even when they were active here already (the consumer starts them again from their
// committed offsets); a partition of them missing from Offsets has no committed offset.
type CommittedInputs struct {
	Tasks    tasks.Set
	Offsets  commit.Offsets
	Metadata map[tasks.TopicPartition]string
}

// startInputs starts the positions of task id's inputs from what was committed.
func (m *Machine) startInputs(id tasks.ID, c CommittedInputs) {
	m.dropInputs(id)
	if m.cfg.Inputs == nil {
		return
	}
	tps := m.cfg.Inputs(id)
	meta := map[string]int64{}
	for _, tp := range tps {
		p := &position{task: id, done: -1, committed: -1, time: commit.UnknownPartitionTime, committedTime: commit.UnknownPartitionTime}
		if o, ok := c.Offsets[tp]; ok && o >= 0 {
			p.done, p.committed = o, o
			if md, ok := c.Metadata[tp]; ok {
				// The committed time is where the partition stands now, whatever this member held of
				// it before; metadata that is not Kafka Streams' leaves it unknown.
				var processor []byte
				p.time, processor = commit.DecodeMetadata(md)
				p.committedTime = p.time
				// Each partition's metadata merged, the larger value of a key winning, as Kafka
				// Streams' ProcessorMetadata.update merges them; bytes that are not its format are
				// none, as Kafka Streams reads them.
				if pm, err := commit.DecodeProcessorMetadata(processor); err == nil {
					for k, v := range pm {
						if old, ok := meta[k]; !ok || v > old {
							meta[k] = v
						}
					}
				}
			}
		}
		m.positions[tp] = p
	}
	m.inputsOf[id] = tps
	m.meta[id] = &processorMeta{cur: meta, committed: maps.Clone(meta)}
}

// ProcessorMetadata is active task id's processor metadata value of key (ok false when it has
// none): what a processor recorded with SetProcessorMetadata, or what the task's last commit held.
func (m *Machine) ProcessorMetadata(id tasks.ID, key string) (v int64, ok bool) {
	if pm := m.meta[id]; pm != nil {
		v, ok = pm.cur[key]
	}
	return v, ok
}

// SetProcessorMetadata sets active task id's processor metadata value of key: the task's next
// commit carries it with every input partition's offset; an abort takes it back to the last
// commit's. A task that is not active here is left alone.
func (m *Machine) SetProcessorMetadata(id tasks.ID, key string, v int64) {
	if pm := m.meta[id]; pm != nil {
		pm.cur[key] = v
	}
}

// dropInputs forgets the positions of task id's inputs (it is no longer active here).
func (m *Machine) dropInputs(id tasks.ID) {
	for _, tp := range m.inputsOf[id] {
		delete(m.positions, tp)
	}
	delete(m.inputsOf, id)
	delete(m.meta, id)
}

// Processed records that the records of input partition tp before offset next were processed. A
// position never moves back here (only a rewind takes it back); a partition that is not an input
// of an active task is left alone.
func (m *Machine) Processed(tp tasks.TopicPartition, next int64) {
	if p := m.positions[tp]; p != nil {
		p.done = max(p.done, next)
	}
}

// StartAt sets where input partition tp of an active task starts, at offset, when nothing is known
// of it yet (no committed offset, nothing processed): the commit that follows records it, so that
// the task's first writes never outlive a stop without a committed offset beside them. A position
// already known is left alone.
func (m *Machine) StartAt(tp tasks.TopicPartition, offset int64) {
	if p := m.positions[tp]; p != nil && p.done < 0 && offset >= 0 {
		p.done = offset
	}
}

// Advanced records that a record of timestamp ms (unix ms) of input partition tp was processed:
// its partition time is the largest such timestamp, so it never moves back either.
func (m *Machine) Advanced(tp tasks.TopicPartition, ms int64) {
	if p := m.positions[tp]; p != nil {
		p.time = max(p.time, ms)
	}
}

// PartitionTime is input partition tp's time (unix ms), commit.UnknownPartitionTime when none is
// known.
func (m *Machine) PartitionTime(tp tasks.TopicPartition) int64 {
	if p := m.positions[tp]; p != nil {
		return p.time
	}
	return commit.UnknownPartitionTime
}

// StreamTime is active task id's stream time as its inputs' partition times say: the largest of
// them (commit.UnknownPartitionTime when none is known), as Kafka Streams' PartitionGroup starts it.
func (m *Machine) StreamTime(id tasks.ID) int64 {
	st := int64(commit.UnknownPartitionTime)
	for _, tp := range m.inputsOf[id] {
		st = max(st, m.positions[tp].time)
	}
	return st
}

// HasCommitted reports whether active task id has a committed offset for any of its inputs (read
// when it was assigned, or committed since).
func (m *Machine) HasCommitted(id tasks.ID) bool {
	for _, tp := range m.inputsOf[id] {
		if m.positions[tp].committed >= 0 {
			return true
		}
	}
	return false
}

// CommitMetadata is the metadata committed with input partition tp's offset: its partition time in
// Kafka Streams' format (unknown: -1), with its task's processor metadata. The shell's committer
// asks while it builds a commit the machine asked for.
func (m *Machine) CommitMetadata(tp tasks.TopicPartition) string {
	if p := m.positions[tp]; p != nil {
		var processor []byte
		if pm := m.meta[p.task]; pm != nil {
			processor = commit.EncodeProcessorMetadata(pm.cur)
		}
		return commit.EncodeMetadata(p.time, processor)
	}
	return commit.EncodeMetadata(commit.UnknownPartitionTime, nil)
}

// collectOffsets is what a commit commits: the final positions of the revoked tasks' inputs, with,
// unless onlyRevoked, every active input's position that moved since its last commit (moved: those
// alone).
func (m *Machine) collectOffsets(revoked tasks.Set, onlyRevoked bool) (offsets, moved commit.Offsets) {
	offsets = commit.Offsets{}
	if !onlyRevoked {
		moved = commit.Offsets{}
		for tp, p := range m.positions {
			if p.done >= 0 && p.done != p.committed {
				moved[tp], offsets[tp] = p.done, p.done
			}
		}
	}
	for id := range revoked.All() {
		for _, tp := range m.inputsOf[id] {
			if p := m.positions[tp]; p.done >= 0 {
				offsets[tp] = p.done
			}
		}
	}
	return offsets, moved
}

// markCommitted records that offs were committed, each partition with its time now as its
// metadata (nothing is processed while a commit runs). The others keep their last commit: an
// at-least-once revocation commits only the revoked tasks' offsets, and a partition the member did
// not own at the moment of a commit is left for the next one, so a rewind must not take them past
// what was committed.
func (m *Machine) markCommitted(offs commit.Offsets) {
	for tp, o := range offs {
		if p := m.positions[tp]; p != nil {
			p.committed, p.committedTime = o, p.time
			if pm := m.meta[p.task]; pm != nil {
				pm.committed = maps.Clone(pm.cur)
			}
		}
	}
}

// rewind takes every active input back to its last commit, its partition time with it, and
// returns where each restarts: its committed offset, or, for a partition never committed (absent),
// where its consumption started (auto.offset.reset), as DropPending and RetryFromLastCommit carry it.
func (m *Machine) rewind() commit.Offsets {
	to := make(commit.Offsets, len(m.positions))
	for _, pm := range m.meta {
		pm.cur = maps.Clone(pm.committed)
	}
	for tp, p := range m.positions {
		p.done, p.time = p.committed, p.committedTime
		if p.committed >= 0 {
			to[tp] = p.committed
		}
	}
	return to
}
