package stream

import (
	"context"
	"testing"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestPartitionTimes(t *testing.T) {
	p := newPartitionTimes()
	a, b := in(0), in(1)
	if got := p.CommitMetadata(a); got != "Av//////////" {
		t.Errorf("an unknown time is committed as %q; want Kafka Streams' -1 (Av//////////)", got)
	}
	if got := p.streamTime([]tasks.TopicPartition{a, b}); got != -1 {
		t.Errorf("stream time of partitions without times: %d, want -1", got)
	}
	p.advance(a, 500)
	p.advance(a, 400) // out of order: the time stays
	p.advance(b, 450)
	if p.get(a) != 500 || p.get(b) != 450 || p.streamTime([]tasks.TopicPartition{a, b}) != 500 {
		t.Fatalf("times %d %d, stream time %d; want 500, 450 and 500", p.get(a), p.get(b), p.streamTime([]tasks.TopicPartition{a, b}))
	}
	if got := p.CommitMetadata(a); got != "AgAAAAAAAAH0" { // 02 | 500 big-endian
		t.Errorf("metadata of 500: %q", got)
	}
	p.markCommitted(commit.Offsets{a: 7}) // b's offset was not in the commit
	p.advance(a, 900)
	p.advance(b, 460)
	p.rewind()
	if p.get(a) != 500 {
		t.Errorf("after a rewind: %d, want the committed 500", p.get(a))
	}
	// A partition whose offset was not committed goes back to its last committed time: none yet.
	if got := p.get(b); got != commit.UnknownPartitionTime {
		t.Errorf("after a rewind, a partition never committed: %d, want unknown", got)
	}
	p.advance(b, 450)
	p.markCommitted(commit.Offsets{b: 3})
	p.advance(b, 470)
	p.markCommitted(commit.Offsets{in(9): 1}) // a partition without a time: nothing of b moves
	p.rewind()
	if p.get(b) != 450 {
		t.Errorf("after a rewind: %d, want b's committed 450", p.get(b))
	}
	// A fetched time (the partition's committed metadata, of any member) is where the partition
	// stands: a task that arrives starts there, whatever this process held of it before, and
	// metadata that is not Kafka Streams' makes the time unknown.
	p.Fetched(a, "AgAAAAAAAAPo") // 1000
	p.Fetched(b, "AgAAAAAAAABk") // 100, behind what this process had processed (450)
	p.advance(in(2), 77)
	p.Fetched(in(2), "something else")
	if p.get(a) != 1000 || p.get(b) != 100 || p.get(in(2)) != -1 {
		t.Fatalf("after fetches: %d %d %d; want 1000, 100 and unknown", p.get(a), p.get(b), p.get(in(2)))
	}
	// Processor metadata (a Java member's windowed operators) after the time is kept and committed
	// again; the time in front of it is this process's.
	p.Fetched(b, "AgAAAAAAAABjAAAAAQAAAAFrAAAAAAAAAAc=") // 99, then {"k": 7}
	p.advance(b, 200)
	if got := p.CommitMetadata(b); got != "AgAAAAAAAADIAAAAAQAAAAFrAAAAAAAAAAc=" { // 200, then {"k": 7}
		t.Errorf("the processor metadata is not committed again: %q", got)
	}
	p.advance(a, 1200)
	p.rewind()
	if p.get(a) != 1000 {
		t.Errorf("a fetched time is a committed one: rewound to %d, want 1000", p.get(a))
	}
}

// A task starts with the stream time its inputs' committed partition times say (Kafka Streams'
// StreamTask initializes it from the offsets' metadata), and processing moves a partition's time to
// the largest timestamp it handed to the processor, the failed record included, not past it.
func TestStreamTimeFromThePartitionTimes(t *testing.T) {
	p := &recorder{failAt: map[int64]error{12: errBoom}}
	var st []int64
	p.onInit = func(c *Context) error {
		st = append(st, c.task.streamTime)
		return nil
	}
	a := processingApp(t, p, nil)
	a.ptimes.Fetched(in(0), "AgAAAAAAAAPo") // 1000, committed by the previous owner
	a.process([]consume.Records{recs(tid("0", 0), "in", 10, 700, 1500, 1400, 2000)})
	if len(st) != 1 || st[0] != 1000 {
		t.Fatalf("stream time at Init %v; want the committed partition time 1000", st)
	}
	if got := a.ptimes.get(in(0)); got != 1500 {
		t.Errorf("partition time after a failure at the record of 1400: %d; want 1500 (records up to the failed one)", got)
	}
}

// An aborted transaction rewinds the partition times, and its active tasks start again (Init anew,
// stream time from the committed times), as Kafka Streams revives them.
func TestDiscardPendingRewindsTimesAndRestartsTasks(t *testing.T) {
	a := eosApp(t, testProcs())
	act := activeTask(t, a, tid("1", 0))
	schedule(a, act)
	sb := activeTask(t, a, tid("1", 1))
	sb.active = false
	a.ptimes.advance(in(0), 100)
	a.ptimes.markCommitted(commit.Offsets{in(0): 5})
	a.ptimes.advance(in(0), 900)
	a.discardPending()
	if a.ptimes.get(in(0)) != 100 {
		t.Errorf("partition time after the abort: %d, want the committed 100", a.ptimes.get(in(0)))
	}
	if act.initialized || scheduled(a, act) != 0 {
		t.Error("the active task goes on with its old Init and punctuations")
	}
	if !sb.initialized {
		t.Error("a standby was touched")
	}
}

// Lost tasks take the partition times of their uncommitted work with them: when they come back,
// stream time starts from the committed metadata, as in Kafka Streams.
func TestLostTasksRewindThePartitionTimes(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	a.ptimes.advance(in(0), 100)
	a.ptimes.markCommitted(commit.Offsets{in(0): 5})
	a.ptimes.advance(in(0), 900)
	mustNotErr(t, (*callbacks)(a).OnAllTasksLost(context.Background(), tasks.Assignment{}))
	if got := a.ptimes.get(in(0)); got != 100 {
		t.Fatalf("partition time after the tasks were lost: %d, want the committed 100", got)
	}
}
