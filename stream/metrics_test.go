package stream

import (
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// timedProc takes per of the App's fake clock for each record and punct for each stream-time
// punctuation (every 10 ms of stream time), and fails on the offsets of failAt.
type timedProc struct {
	clk        *fakeClock
	per, punct time.Duration
	failAt     map[int64]bool
}

func (p *timedProc) Init(c *Context) error {
	_, err := c.Schedule(10*time.Millisecond, StreamTime, func(*Context, time.Time) error {
		p.clk.t = p.clk.t.Add(p.punct)
		return nil
	})
	return err
}

func (p *timedProc) Process(c *Context, r *Record) error {
	p.clk.t = p.clk.t.Add(p.per)
	if p.failAt[r.Offset] {
		return errBoom
	}
	return nil
}

// The processing metrics count records, drops and punctuations exactly, and split the time of a
// batch between processing and the stream-time punctuations it fired.
func TestMetricsCountProcessingAndPunctuations(t *testing.T) {
	cfg := testConfig()
	cfg.Runtime.OnProcessingError = config.LogAndContinue
	p := &timedProc{per: 3 * time.Millisecond, punct: 7 * time.Millisecond, failAt: map[int64]bool{2: true}}
	a, clk := newTestApp(t, cfg, Processors{"0": p, "1": nopProc})
	p.clk = clk
	restoringTask(t, a, tid("0", 0))
	if a.Metrics() != (Metrics{}) {
		t.Fatalf("before anything ran: %+v", a.Metrics())
	}
	// Stream time 100, 105, 95, 110, 131: punctuations at 100, 110 and 131 (the schedule is on the
	// interval's grid from 0, as Kafka Streams').
	if got := a.process([]consume.Records{recs(tid("0", 0), "in", 0, 100, 105, 95, 110, 131)}); got != nil {
		t.Fatal(a.fatalErr())
	}
	want := Metrics{Processed: 5, ProcessTime: 15 * time.Millisecond, Dropped: 1, Punctuations: 3, PunctuateTime: 21 * time.Millisecond}
	if got := a.Metrics(); got != want {
		t.Fatalf("after 5 records (one dropped, three punctuations):\n got %+v\nwant %+v", got, want)
	}

	// Under LogAndFail the failing record counts as processed, not dropped; the records after it
	// were not handed to the processor.
	a.cfg.Runtime.OnProcessingError = config.LogAndFail
	p.failAt = map[int64]bool{6: true}
	a.process([]consume.Records{recs(tid("0", 0), "in", 5, 132, 133, 134)})
	want.Processed, want.ProcessTime = 7, 21*time.Millisecond
	if got := a.Metrics(); got != want || a.fatalErr() == nil {
		t.Fatalf("after a fatal record: %+v (fatal %v)\nwant %+v", got, a.fatalErr(), want)
	}
}

// Restored changelog records are counted, standby and active alike; commits are counted and timed
// on the App's clock, the failed ones apart.
func TestMetricsCountRestoresAndCommits(t *testing.T) {
	k := &fakeKind{persistent: true}
	a, clk := builtApp(t, testProcs(), WithStores(k, "counts"), quiet())
	a.cfg.Runtime.CommitInterval = 10 * time.Second
	remachine(a)
	a.stateDir = t.TempDir()
	act := activeTask(t, a, tid("1", 0))
	cl := tasks.TopicPartition{Topic: countsLog, Partition: 0}
	a.handle(&consume.Batch{Restore: []consume.Records{recs(tid("1", 0), countsLog, 0, 1, 2, 3)}})
	a.handle(&consume.Batch{Restore: []consume.Records{{Task: tid("1", 0), Role: consume.Standby, Partition: cl, First: 3, Next: 4,
		Records: recs(tid("1", 0), countsLog, 3, 4).Records}}})
	if got := a.Metrics().Restored; got != 4 {
		t.Fatalf("restored %d, want 4", got)
	}

	eng := act.stores["counts"].eng.(*countingEngine)
	eng.onApply = func() { clk.t = clk.t.Add(4 * time.Millisecond) } // a checkpoint takes 4 ms
	act.stores["counts"].ackedAt(9)
	eng.err = errBoom // the checkpoint fails: a failed commit
	clk.t = clk.t.Add(10 * time.Second)
	a.between()
	eng.err = nil
	clk.t = clk.t.Add(20 * time.Second) // past the interval and the backoff
	a.between()
	clk.t = clk.t.Add(5 * time.Second) // within the interval: no commit
	a.between()
	got := a.Metrics()
	if got.Commits != 1 || got.FailedCommits != 1 || got.CommitTime != 8*time.Millisecond || a.fatalErr() != nil {
		t.Fatalf("commits %d failed %d time %v (fatal %v); want 1, 1 and 8ms (two checkpoints of 4 ms)",
			got.Commits, got.FailedCommits, got.CommitTime, a.fatalErr())
	}
}
