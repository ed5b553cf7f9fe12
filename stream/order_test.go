package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// A task with two input partitions (left and right, as a join reads them) processes its records in
// timestamp order across them, waits for records known to be on the brokers, and for
// max.task.idle.ms on a partition known to be empty, as Kafka Streams documents max.task.idle.ms.

// seenOrder records "topic@offset" of every record it processes, and fails where told.
type seenOrder struct {
	seen   []string
	failAt string
}

func (p *seenOrder) Process(_ *Context, r *Record) error {
	at := fmt.Sprintf("%s@%d", r.Topic, r.Offset)
	if at == p.failAt {
		return errBoom
	}
	p.seen = append(p.seen, at)
	return nil
}

// joinApp is an App running task 0_0 of a subtopology that reads left and right.
func joinApp(t *testing.T, p Processor, mod func(*config.Config)) (*App, *fakeClock, *task) {
	t.Helper()
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"left", "right"},
		CopartitionGroups: [][]string{{"left", "right"}}})
	a, err := New(cfg, topo, Processors{"0": p}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.UnixMilli(1_000_000)}
	a.now = clk.now
	a.mach.Step(clk.t, sm.Started{}) // the commit interval runs from the start
	return a, clk, activeTask(t, a, tid("0", 0))
}

// side is records of left[0] or right[0] from offset from with timestamps ts; end is where the
// partition ends on the brokers (its high watermark).
func side(topic string, from int64, end int64, ts ...int64) consume.Records {
	r := consume.Records{Task: tid("0", 0), Role: consume.Active, Partition: tasks.TopicPartition{Topic: topic}, HighWatermark: end, LastStable: end}
	for i, ms := range ts {
		r.Records = append(r.Records, &kgo.Record{Topic: topic, Offset: from + int64(i), Timestamp: time.UnixMilli(ms)})
	}
	r.First, r.Next = from, from+int64(len(ts))
	return r
}

// runQueued is one batch of the loop: its records (of the join task: all queued), then the queued
// records in order.
func runQueued(t *testing.T, a *App, recs ...consume.Records) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, paused := a.processUntil(recs); got != nil || paused {
		t.Fatalf("the batch stopped at %v (paused %v)", got, paused)
	}
	a.processQueued()
}

func positions(tk *task) string {
	var out []string
	for _, q := range tk.order.qs {
		out = append(out, fmt.Sprintf("%s=%d", q.tp, q.position()))
	}
	return strings.Join(out, " ")
}

func TestTwoInputsAreProcessedInTimestampOrder(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, nil)
	// Both partitions end where their records end (nothing more on the brokers): everything goes,
	// the smaller timestamp first; a tie goes to the partition listed first (left).
	runQueued(t, a, side("left", 0, 5, 1, 4, 6, 9, 10), side("right", 0, 3, 2, 3, 10))
	want := "[left@0 right@0 right@1 left@1 left@2 left@3 left@4 right@2]"
	if fmt.Sprint(p.seen) != want {
		t.Fatalf("processed %v, want %v", p.seen, want)
	}
	if got := positions(tk); got != "left[0]=5 right[0]=3" {
		t.Fatalf("positions %s", got)
	}
	if tk.streamTime != 10 {
		t.Fatalf("stream time %d, want 10", tk.streamTime)
	}
	if a.hasQueued() {
		t.Fatal("records queued after everything was processed")
	}
}

func TestATaskWaitsForRecordsKnownOnTheBrokers(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, nil)
	// left has two more records on the brokers than were fetched: once it runs dry, right's
	// record at 10 waits for them.
	runQueued(t, a, side("left", 0, 4, 1, 5), side("right", 0, 1, 10))
	if fmt.Sprint(p.seen) != "[left@0 left@1]" {
		t.Fatalf("processed %v, want left's two, then a wait", p.seen)
	}
	if got := positions(tk); got != "left[0]=2 right[0]=0" {
		t.Fatalf("positions %s", got)
	}
	// They come, older than right's: they go first.
	runQueued(t, a, side("left", 2, 4, 7, 12))
	if want := "[left@0 left@1 left@2 right@0 left@3]"; fmt.Sprint(p.seen) != want {
		t.Fatalf("processed %v, want %v", p.seen, want)
	}
}

// A partition never fetched has an unknown lag: the task waits until a listing tells it (an empty
// input is never in a fetch answer).
func TestATaskWaitsUntilAnUnknownLagIsListed(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, nil)
	runQueued(t, a, side("left", 0, 2, 1, 5))
	if len(p.seen) != 0 {
		t.Fatalf("processed %v before right's end was known", p.seen)
	}
	if got := positions(tk); got != "left[0]=0 right[0]=-1" {
		t.Fatalf("positions %s; want right without one (nothing fetched: nothing to commit)", got)
	}
	a.mu.Lock()
	a.setListedLag(tasks.TopicPartition{Topic: "right"}, -1, 4, 4) // empty: start = end
	a.mu.Unlock()
	if q := tk.order.qs[1]; q.lag != 0 {
		t.Fatalf("right's lag %d after an empty listing, want 0", q.lag)
	}
	runQueued(t, a)
	if fmt.Sprint(p.seen) != "[left@0 left@1]" {
		t.Fatalf("processed %v once right was known empty", p.seen)
	}
}

func TestSetListedLag(t *testing.T) {
	for _, tc := range []struct {
		pos, start, end int64
		latest          bool
		want            int64
	}{
		{pos: 3, start: 0, end: 7, want: 4},
		{pos: 9, start: 0, end: 7, want: 0},
		{pos: -1, start: 2, end: 7, want: 5},               // earliest: from the start
		{pos: -1, start: 2, end: 7, latest: true, want: 0}, // latest: the reset lands at the end
	} {
		a, _, tk := joinApp(t, &seenOrder{}, func(c *config.Config) { c.Runtime.ResetLatest = tc.latest })
		a.orderOf(tk)
		a.setListedLag(tasks.TopicPartition{Topic: "right"}, tc.pos, tc.start, tc.end)
		if got := tk.order.qs[1].lag; got != tc.want {
			t.Errorf("%+v: lag %d, want %d", tc, got, tc.want)
		}
	}
	// A queue a fetch filled meanwhile keeps what the fetch told.
	a, _, tk := joinApp(t, &seenOrder{}, nil)
	a.mu.Lock()
	a.keep(tk, side("right", 0, 6, 1))
	a.setListedLag(tasks.TopicPartition{Topic: "right"}, -1, 0, 100)
	a.setListedLag(tasks.TopicPartition{Topic: "nope"}, -1, 0, 100)
	a.mu.Unlock()
	if got := tk.order.qs[1].lag; got != 5 {
		t.Fatalf("lag %d after a fetch to 1 of 6 and a listing, want the fetch's 5", got)
	}
}

func TestMaxTaskIdleWaitsForAnEmptyPartition(t *testing.T) {
	p := &seenOrder{}
	a, clk, _ := joinApp(t, p, func(c *config.Config) { c.Runtime.MaxTaskIdle = 100 * time.Millisecond })
	runQueued(t, a, side("left", 0, 2, 1, 5), side("right", 0, 0)) // right: known empty
	if len(p.seen) != 0 {
		t.Fatalf("processed %v at once, want a wait of max.task.idle.ms", p.seen)
	}
	clk.t = clk.t.Add(99 * time.Millisecond)
	runQueued(t, a)
	if len(p.seen) != 0 {
		t.Fatalf("processed %v after 99 ms", p.seen)
	}
	clk.t = clk.t.Add(time.Millisecond)
	runQueued(t, a)
	if fmt.Sprint(p.seen) != "[left@0 left@1]" {
		t.Fatalf("processed %v after 100 ms", p.seen)
	}
}

func TestMaxTaskIdleDisabledNeverWaits(t *testing.T) {
	p := &seenOrder{}
	a, _, _ := joinApp(t, p, func(c *config.Config) { c.Runtime.MaxTaskIdle = config.MaxTaskIdleDisabled })
	runQueued(t, a, side("left", 0, 50, 1, 5))
	if fmt.Sprint(p.seen) != "[left@0 left@1]" {
		t.Fatalf("processed %v, want everything at once", p.seen)
	}
}

// A processor failing on a queued record stops the application there: the partition's position is
// the failed record, the other's its first unprocessed record.
func TestAFailureInTheOrderStopsAtTheRecord(t *testing.T) {
	p := &seenOrder{failAt: "right@1"}
	a, _, tk := joinApp(t, p, nil)
	runQueued(t, a, side("left", 0, 3, 1, 4, 6), side("right", 0, 2, 2, 3))
	if fmt.Sprint(p.seen) != "[left@0 right@0]" {
		t.Fatalf("processed %v", p.seen)
	}
	if got := positions(tk); got != "left[0]=1 right[0]=1" {
		t.Fatalf("positions %s", got)
	}
	var pe *ProcessingError
	if err := a.fatalErr(); !errors.As(err, &pe) || pe.Topic != "right" || pe.Offset != 1 {
		t.Fatalf("fatal %v", err)
	}
}

// A commit that falls due while the queues are processed pauses them after the run of records it
// fell due in: the rest stays queued.
func TestACommitDuePausesTheQueues(t *testing.T) {
	var slow func()
	a, clk, tk := joinApp(t, ProcessorFunc(func(_ *Context, r *Record) error {
		if r.Topic == "right" && r.Offset == 0 {
			slow()
		}
		return nil
	}), nil)
	slow = func() { clk.t = clk.t.Add(a.cfg.Runtime.CommitInterval) }
	a.mu.Lock()
	a.processUntil([]consume.Records{side("left", 0, 2, 1, 4), side("right", 0, 2, 2, 3)})
	ok := a.processQueued()
	a.mu.Unlock()
	if ok {
		t.Fatal("processQueued went on past a commit that fell due")
	}
	if got := positions(tk); got != "left[0]=1 right[0]=2" {
		t.Fatalf("positions %s, want right's run done and left's last record queued", got)
	}
	if m := a.Metrics(); m.Processed != 3 || m.ProcessTime != a.cfg.Runtime.CommitInterval {
		t.Fatalf("processed %d in %v; want 3 in the slow record's %v", m.Processed, m.ProcessTime, a.cfg.Runtime.CommitInterval)
	}
}

// A task that stops (a rewind, a revocation) drops its queues; they come again from its position,
// with nothing known of the lags.
func TestAStoppedTaskDropsItsQueues(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, nil)
	runQueued(t, a, side("left", 0, 2, 1, 5))
	if tk.order == nil || !a.hasQueued() {
		t.Fatal("nothing queued")
	}
	a.stopTask(tk)
	if tk.order != nil || a.hasQueued() {
		t.Fatal("queues kept past the stop")
	}
	runQueued(t, a, side("right", 0, 1, 3))
	if q := tk.order.qs[0]; q.lag != sm.LagUnknown || len(p.seen) != 0 {
		t.Fatalf("left's lag %d after the stop (want unknown), processed %v", q.lag, p.seen)
	}
}

// A queue that never quite drains does not grow with every record it held: what was taken is
// dropped from its array when more was taken than is held.
func TestAQueueDoesNotGrowWithWhatItTook(t *testing.T) {
	q := &inputQueue{next: -1, lag: sm.LagUnknown}
	for i := range 1000 {
		r := side("left", int64(i*10), 0, make([]int64, 10)...)
		q.add(r, r.Next, 0)
		q.take(9, 0)
	}
	if q.held() != 1000 || cap(q.recs) > 4*1000 {
		t.Fatalf("held %d in an array of %d; want 1000 held in at most 4000", q.held(), cap(q.recs))
	}
	if got := q.position(); got != 9000 {
		t.Fatalf("position %d, want 9000 (the first record held)", got)
	}
}

// Under WallclockTimestampExtractor a record is ordered by when it became its queue's head, as
// Kafka Streams stamps it then: two partitions take turns rather than one going first until it
// is dry. An invalid (negative) timestamp orders at its partition's time.
func TestOrderTimeFollowsTheExtractor(t *testing.T) {
	p := &seenOrder{}
	var clk *fakeClock
	a, clk, _ := joinApp(t, ProcessorFunc(func(c *Context, r *Record) error {
		clk.t = clk.t.Add(time.Millisecond) // the wall clock moves as records are processed
		return p.Process(c, r)
	}), func(c *config.Config) { c.Runtime.Timestamps = config.WallclockTimestamp })
	a.mu.Lock()
	a.keep(a.tasks[tid("0", 0)], side("left", 0, 3, 900, 901, 902))
	clk.t = clk.t.Add(time.Millisecond)
	a.keep(a.tasks[tid("0", 0)], side("right", 0, 3, 1, 2, 3))
	a.mu.Unlock()
	clk.t = clk.t.Add(time.Millisecond)
	runQueued(t, a)
	if want := "[left@0 right@0 left@1 right@1 left@2 right@2]"; fmt.Sprint(p.seen) != want {
		t.Fatalf("processed %v, want %v (turns, by when each became the head)", p.seen, want)
	}

	a2, _, tk := joinApp(t, &seenOrder{}, nil)
	a2.mach.Advanced(tasks.TopicPartition{Topic: "right"}, 40)
	o := a2.orderOf(tk)
	a2.keep(tk, side("right", 0, 1, -1))
	a2.keep(tk, side("left", 0, 1, -1))
	if h := a2.fill(o); h[0].Timestamp != -1 || h[1].Timestamp != 40 {
		t.Fatalf("heads %+v; want left (no time yet) at -1, right at its partition time 40", h)
	}
	// A timestamp of 0 is valid: it orders at 0, not at the partition's time.
	a3, _, tk3 := joinApp(t, &seenOrder{}, nil)
	a3.mach.Advanced(tasks.TopicPartition{Topic: "left"}, 40)
	a3.keep(tk3, side("left", 0, 1, 0))
	if h := a3.fill(tk3.order); h[0].Timestamp != 0 {
		t.Fatalf("heads %+v; want left's record at 0", h)
	}
}

// max.task.idle.ms above 0: the idle wait of an empty partition starts when the loop first finds
// it empty, records or not, as Kafka Streams checks every task at every iteration.
func TestIdleWaitStartsWhenThePartitionIsFoundEmpty(t *testing.T) {
	p := &seenOrder{}
	a, clk, tk := joinApp(t, p, func(c *config.Config) { c.Runtime.MaxTaskIdle = 100 * time.Millisecond })
	a.mu.Lock()
	a.orderOf(tk)
	tk.order.qs[0].lag, tk.order.qs[1].lag = 0, 0 // both known empty
	// Two rounds of the loop without records: as Kafka Streams, the machine looks at the
	// partitions in turn and stops at the first still waiting, so right's wait starts at the second.
	a.tickIdle()
	clk.t = clk.t.Add(100 * time.Millisecond)
	a.tickIdle()
	a.mu.Unlock()
	clk.t = clk.t.Add(150 * time.Millisecond)
	runQueued(t, a, side("left", 0, 1, 5))
	if fmt.Sprint(p.seen) != "[left@0]" {
		t.Fatalf("processed %v; want left's record at once (right found empty 150 ms ago)", p.seen)
	}
}

// A batch that pauses for a commit before its end does not keep queued records waiting for ever:
// every other batch processes them first.
func TestQueuedAndBatchRecordsTakeTurns(t *testing.T) {
	p := &seenOrder{}
	a, _, tk := joinApp(t, p, nil)
	a.mu.Lock()
	a.orderOf(tk)
	a.keep(tk, side("left", 0, 1, 5))
	tk.order.qs[1].lag = 0
	a.mu.Unlock()
	if a.queuedFirst {
		t.Fatal("queued first before any batch")
	}
	b := &consume.Batch{}
	a.handle(b)
	if !a.queuedFirst || fmt.Sprint(p.seen) != "[left@0]" {
		t.Fatalf("queued first %v, processed %v; want the queued record processed by the first batch", a.queuedFirst, p.seen)
	}
	a.mu.Lock()
	a.keep(tk, side("left", 1, 2, 6))
	a.mu.Unlock()
	a.handle(&consume.Batch{})
	if a.queuedFirst || fmt.Sprint(p.seen) != "[left@0 left@1]" {
		t.Fatalf("queued first %v, processed %v; want the next batch to process the queued record after its own", a.queuedFirst, p.seen)
	}
}

// A punctuation that fails after the last queued record of a partition stops the partition after
// that record (it was processed), with nothing left queued.
func TestAPunctuationFailureAfterTheLastQueuedRecord(t *testing.T) {
	a, _, tk := joinApp(t, ProcessorFunc(func(c *Context, r *Record) error {
		if r.Topic == "right" {
			_, err := c.Schedule(time.Millisecond, StreamTime, func(*Context, time.Time) error { return errBoom })
			return err
		}
		return nil
	}), nil)
	runQueued(t, a, side("left", 0, 1, 1), side("right", 0, 1, 2))
	if got := positions(tk); got != "left[0]=1 right[0]=1" {
		t.Fatalf("positions %s; want both past their one record", got)
	}
	var pe *ProcessingError
	if err := a.fatalErr(); !errors.As(err, &pe) || pe.Topic != "" {
		t.Fatalf("fatal %v; want the punctuation's ProcessingError", err)
	}
	if m := a.Metrics(); m.Processed != 2 {
		t.Fatalf("processed %d; want 2 (the record before the failed punctuation counts)", m.Processed)
	}
}

// Only a subtopology reading more than one topic (source or repartition) orders its records.
func TestOrderingIsForSubtopologiesOfSeveralInputs(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs()) // one source topic, one repartition topic, apart
	if a.ordering {
		t.Fatal("ordering on for subtopologies of one input each")
	}
	topo := topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{repartTopc}},
		topology.Subtopology{ID: "1", SourceTopics: []string{"other"}, RepartitionSourceTopics: []topology.TopicInfo{names.Repartition("r", 2)},
			CopartitionGroups: [][]string{{"other", repartTopc}}})
	b, err := New(testConfig(), topo, Processors{"0": nopProc, "1": nopProc}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if !b.ordering {
		t.Fatal("ordering off for a subtopology reading a source and a repartition topic")
	}
}

// A record's callback is made once per transaction generation, and anew when the generation moves
// (an abort): a late failure is told against the generation its record was produced in.
func TestPromisesFollowTheGeneration(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	fakeBroker(t, a)
	a.produce(tid("0", 0), &kgo.Record{Topic: "out", Value: []byte("a")})
	if a.outPromise.gen != 0 || a.outPromise.fn == nil {
		t.Fatalf("callback %+v after a write in generation 0", a.outPromise)
	}
	a.txnGen.Add(1)
	a.produce(tid("0", 0), &kgo.Record{Topic: "out", Value: []byte("c")})
	if a.outPromise.gen != 1 {
		t.Fatalf("callback of generation %d after the generation moved to 1", a.outPromise.gen)
	}
}

// max.task.idle.ms=-1 never waits for a lag, so nothing is listed; otherwise an empty queue of
// unknown lag is listed, once at a time.
func TestUnknownLagsAreListedOnlyWhenWaitedFor(t *testing.T) {
	for _, idle := range []time.Duration{config.MaxTaskIdleDisabled, 0} {
		a, _, tk := joinApp(t, &seenOrder{}, func(c *config.Config) { c.Runtime.MaxTaskIdle = idle })
		fakeBroker(t, a)
		a.mu.Lock()
		a.keep(tk, side("left", 0, 1, 1))
		a.mu.Unlock()
		a.listUnknownLags(context.Background())
		a.mu.Lock()
		started := a.lags.inFlight
		a.mu.Unlock()
		if started != (idle == 0) {
			t.Errorf("max.task.idle.ms %v: listing started %v", idle, started)
		}
		a.listUnknownLags(context.Background()) // one at a time: nothing more starts
		a.lags.wg.Wait()
	}
}

// A batch that comes on a queued-first turn which pauses for the commit before the batch's own turn
// hands every one of its records back: none was processed or kept. Saying nothing would take them
// as processed, the consumer would go on past them, and the next records' positions would be
// committed over them (records lost).
func TestBatchGivenBackWhenQueuedRecordsPauseFirst(t *testing.T) {
	p := &seenOrder{}
	a, clk, tk := joinApp(t, p, nil)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.orderOf(tk)
	a.keep(tk, side("left", 0, 1, 5))
	tk.order.qs[1].lag = 0
	clk.t = clk.t.Add(a.cfg.Runtime.CommitInterval) // the commit is due once the queued record is processed
	got, paused := a.processBatch([]consume.Records{side("left", 1, 3, 6, 7), side("right", 0, 1, 8)})
	want := map[tasks.TopicPartition]int64{{Topic: "left"}: 1, {Topic: "right"}: 0}
	if !paused || fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(p.seen) != "[left@0]" {
		t.Fatalf("stopped at %v, paused %v, processed %v; want the whole batch handed back (%v), paused, after the queued record",
			got, paused, p.seen, want)
	}
	// The next turn is the batch's: it goes first.
	clk.t = clk.t.Add(time.Millisecond)
	a.mach.Step(clk.t, sm.Started{}) // as after the commit: the next one is an interval away
	if got, paused := a.processBatch([]consume.Records{side("left", 1, 3, 6, 7), side("right", 0, 1, 8)}); got != nil || paused {
		t.Fatalf("the batch's own turn stopped at %v, paused %v", got, paused)
	}
	if fmt.Sprint(p.seen) != "[left@0 left@1 left@2 right@0]" {
		t.Fatalf("processed %v", p.seen)
	}
}
