package stream

import (
	"context"
	"testing"

	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

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
	startFrom(t, a, tid("0", 0), map[tasks.TopicPartition]string{in(0): "AgAAAAAAAAPo"}) // 1000, committed by the previous owner
	a.process([]consume.Records{recs(tid("0", 0), "in", 10, 700, 1500, 1400, 2000)})
	if len(st) != 1 || st[0] != 1000 {
		t.Fatalf("stream time at Init %v; want the committed partition time 1000", st)
	}
	if got := a.mach.PartitionTime(in(0)); got != 1500 {
		t.Errorf("partition time after a failure at the record of 1400: %d; want 1500 (records up to the failed one)", got)
	}
}

// An aborted transaction rewinds the partition times, and its active tasks start again (Init anew,
// stream time from the committed times), as Kafka Streams revives them.
func TestDiscardPendingRewindsTimesAndRestartsTasks(t *testing.T) {
	a := eosApp(t, testProcs())
	act := activeTask(t, a, tid("1", 0))
	rp := tasks.TopicPartition{Topic: repartTopc, Partition: 0}
	startFrom(t, a, tid("1", 0), map[tasks.TopicPartition]string{rp: "AgAAAAAAAABk"}) // 100
	schedule(a, act)
	sb := restoringTask(t, a, tid("1", 1))
	sb.active = false
	a.mach.Processed(rp, 5)
	a.mach.Advanced(rp, 900)
	// The machine aborts the open transaction; the shell carries out its DropPending.
	a.mach.Begun()
	a.mach.Step(a.now(), sm.AbortOpen{})
	a.mach.Step(a.now(), sm.AbortStarted{})
	for _, act := range a.mach.Step(a.now(), sm.TxnEnded{}) {
		if _, ok := act.(sm.DropPending); ok {
			a.execute(context.Background(), act)
		}
	}
	if got := a.mach.PartitionTime(rp); got != 100 {
		t.Errorf("partition time after the abort: %d, want the committed 100", got)
	}
	if running(a, act) || scheduled(a, act) != 0 {
		t.Error("the active task goes on with its old Init and punctuations")
	}
	if len(sb.punctuators) != 0 || running(a, sb) {
		t.Error("a standby was started")
	}
}

// Lost tasks take their positions and partition times with them: when they come back, stream time
// starts from the committed metadata, as in Kafka Streams.
func TestLostTasksForgetTheirPartitionTimes(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	activeTask(t, a, tid("0", 0))
	startFrom(t, a, tid("0", 0), map[tasks.TopicPartition]string{in(0): "AgAAAAAAAABk"}) // 100
	a.mach.Processed(in(0), 5)
	a.mach.Advanced(in(0), 900)
	mustNotErr(t, (*taskCalls)(a).OnAllTasksLost(context.Background(), tasks.Assignment{}))
	if got := a.mach.PartitionTime(in(0)); got != -1 || a.mach.HasCommitted(tid("0", 0)) {
		t.Fatalf("partition time after the tasks were lost: %d (committed %v); want none", got, a.mach.HasCommitted(tid("0", 0)))
	}
}
