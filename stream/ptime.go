package stream

import (
	"maps"
	"sync"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// partitionTimes holds each input partition's time, the largest timestamp of the records processed
// from it, as Kafka Streams keeps it: committed with the partition's offset (in Kafka Streams'
// metadata format) so that the task's next owner, Go or Java, starts with the same stream time, and
// read back from the committed metadata when a task arrives. It is the Committer's commit.Metadata;
// its lock is a leaf (nothing else is taken while it is held), since the Committer calls it from
// inside commits that other locks surround.
type partitionTimes struct {
	mu sync.Mutex
	// now is as processed; committed as of the last commit, what an abort goes back to.
	now, committed map[tasks.TopicPartition]int64
	// processor is the processor metadata read with each partition's committed offset, committed
	// again as it is (a Java member's windowed operators keep their last emitted times there).
	processor map[tasks.TopicPartition][]byte
}

func newPartitionTimes() *partitionTimes {
	return &partitionTimes{now: map[tasks.TopicPartition]int64{}, committed: map[tasks.TopicPartition]int64{},
		processor: map[tasks.TopicPartition][]byte{}}
}

// CommitMetadata implements commit.Metadata: tp's time in Kafka Streams' format (unknown: -1), with
// the processor metadata its last commit had.
func (p *partitionTimes) CommitMetadata(tp tasks.TopicPartition) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ms, ok := p.now[tp]
	if !ok {
		ms = commit.UnknownPartitionTime
	}
	return commit.EncodeMetadata(ms, p.processor[tp])
}

// Fetched implements commit.Metadata: the time committed with tp's offset, by this member or any
// other, Go or Java, is where the partition stands now: a task that arrives starts from its
// committed time, whatever this process held of it before.
func (p *partitionTimes) Fetched(tp tasks.TopicPartition, metadata string) {
	ms, processor := commit.DecodeMetadata(metadata)
	p.mu.Lock()
	defer p.mu.Unlock()
	if ms == commit.UnknownPartitionTime {
		delete(p.now, tp)
		delete(p.committed, tp)
	} else {
		p.now[tp], p.committed[tp] = ms, ms
	}
	if processor != nil {
		p.processor[tp] = processor
	} else {
		delete(p.processor, tp)
	}
}

// get is tp's time, commit.UnknownPartitionTime when none is known.
func (p *partitionTimes) get(tp tasks.TopicPartition) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ms, ok := p.now[tp]; ok {
		return ms
	}
	return commit.UnknownPartitionTime
}

// advance records that a record of timestamp ms was processed from tp.
func (p *partitionTimes) advance(tp tasks.TopicPartition, ms int64) {
	p.mu.Lock()
	if cur, ok := p.now[tp]; !ok || ms > cur {
		p.now[tp] = ms
	}
	p.mu.Unlock()
}

// markCommitted records that the partitions of offs were committed, each with its time now (the
// metadata of the commit: nothing is processed while a commit runs). The others keep the time of
// their last commit: an at-least-once revocation commits only the revoked tasks' offsets, and a
// partition the member did not own at the moment of a commit is left for the next one, so a rewind
// must not take their times past what was committed.
func (p *partitionTimes) markCommitted(offs commit.Offsets) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for tp := range offs {
		if ms, ok := p.now[tp]; ok {
			p.committed[tp] = ms
		}
	}
}

// rewind goes back to the times of the last commit (an aborted transaction's records are processed
// again).
func (p *partitionTimes) rewind() {
	p.mu.Lock()
	p.now = maps.Clone(p.committed)
	p.mu.Unlock()
}

// streamTime is the stream time of a task whose inputs are parts: the largest of their times
// (commit.UnknownPartitionTime when none is known), as Kafka Streams' PartitionGroup starts it.
func (p *partitionTimes) streamTime(parts []tasks.TopicPartition) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := commit.UnknownPartitionTime
	for _, tp := range parts {
		if ms, ok := p.now[tp]; ok {
			st = max(st, ms)
		}
	}
	return st
}
