package stream

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// A task with several input partitions (a join, a merge, two source topics) processes its records
// in timestamp order across them, as Kafka Streams does: it keeps each partition's fetched records
// in a queue (Kafka Streams' RecordQueue) beyond the batch they came in, and the machine chooses
// which queue's head goes next and when the task waits (max.task.idle.ms; see
// streammachine.NextInput). A task with one input partition has nothing to order: its records go
// straight from the batch, as they always did.

// inputQueue holds the fetched, unprocessed records of one input partition of such a task.
type inputQueue struct {
	tp   tasks.TopicPartition
	recs []*kgo.Record // recs[head:] are held, in offset order
	head int
	// next is the offset after the last record fetched into the queue (its batch's Next, past any
	// transaction marker); -1 before the first.
	next int64
	// lag is what the brokers hold past next, as of the last fetch or listing (sm.LagUnknown: not
	// told yet).
	lag int64
	// paused: fetching it is paused, the queue being full (buffered.records.per.partition).
	paused bool
	// reported is the position last given to the consumer (Advance).
	reported int64
	// headSince is when (unix ms) the head became the head: its time under
	// default.timestamp.extractor=WallclockTimestampExtractor, as Kafka Streams stamps a record with
	// the wall clock when it reaches the head of its queue.
	headSince int64
}

func (q *inputQueue) held() int { return len(q.recs) - q.head }

// position is the offset of the partition's first unprocessed record: the queue's head, or after
// the last record fetched when the queue is empty (-1: nothing fetched).
func (q *inputQueue) position() int64 {
	if q.head < len(q.recs) {
		return q.recs[q.head].Offset
	}
	return q.next
}

// add appends a batch's records of the partition; end is where the brokers' records end (the high
// watermark, or the last stable offset for a read_committed reader).
func (q *inputQueue) add(r consume.Records, end int64, nowMs int64) {
	switch {
	case q.head == len(q.recs):
		q.recs, q.head = q.recs[:0], 0 // reuse the array once it was drained
		q.headSince = nowMs
	case q.head > len(q.recs)/2:
		// More taken than held: move the held records down, so that a queue that never quite
		// drains does not grow with every record it ever held.
		n := copy(q.recs, q.recs[q.head:])
		clear(q.recs[n:])
		q.recs, q.head = q.recs[:n], 0
	}
	q.recs = append(q.recs, r.Records...)
	q.next = r.Next
	q.lag = max(end-r.Next, 0)
}

// take drops the queue's first n records (processed); the next became the head at nowMs.
func (q *inputQueue) take(n int, nowMs int64) {
	clear(q.recs[q.head : q.head+n]) // let them be collected
	q.head += n
	q.headSince = nowMs
}

// ordered are the input queues of a task with several input partitions, in the task's partition
// order (the router's), and the heads the machine is shown.
type ordered struct {
	qs    []*inputQueue
	heads []sm.Head
}

// orderOf is t's input queues, made at the first call for a task with several input partitions;
// nil for a task with one.
func (a *App) orderOf(t *task) *ordered {
	if t.order != nil || t.single {
		return t.order
	}
	in, err := a.router.Inputs(t.id)
	if err != nil || len(in) < 2 {
		t.single = true
		return nil
	}
	o := &ordered{heads: make([]sm.Head, len(in))}
	for _, tp := range in {
		o.qs = append(o.qs, &inputQueue{tp: tp, next: -1, lag: sm.LagUnknown, reported: -1})
	}
	t.order = o
	return o
}

// queue is the queue of tp in o, or nil.
func (o *ordered) queue(tp tasks.TopicPartition) *inputQueue {
	for _, q := range o.qs {
		if q.tp == tp {
			return q
		}
	}
	return nil
}

// fill sets the heads the machine chooses from.
func (a *App) fill(o *ordered) []sm.Head {
	for i, q := range o.qs {
		if q.head < len(q.recs) {
			o.heads[i] = sm.Head{Buffered: true, Timestamp: a.orderTime(q, q.head)}
		} else {
			o.heads[i] = sm.Head{Lag: q.lag}
		}
	}
	return o.heads
}

// orderTime is the time record k of q is ordered by, as Kafka Streams orders a queue's head by the
// timestamp default.timestamp.extractor gives it: its own; under WallclockTimestampExtractor the
// moment it became the head; an invalid
// (negative) one its partition's time, or -1 before the partition has one (it goes first, and is
// then skipped or fails as the extractor says).
func (a *App) orderTime(q *inputQueue, k int) int64 {
	if a.cfg.Runtime.Timestamps == config.WallclockTimestamp {
		return q.headSince // asked of heads only: see processOrdered
	}
	if ms := q.recs[k].Timestamp.UnixMilli(); ms >= 0 {
		return ms
	}
	return max(a.mach.PartitionTime(q.tp), -1)
}

// keep moves r, records of a task with several inputs, into its queue: the batch leaves its
// position to the runtime. It reports false for a partition of a task with one input.
func (a *App) keep(t *task, r consume.Records) bool {
	o := a.orderOf(t)
	if o == nil {
		return false
	}
	q := o.queue(r.Partition)
	if q == nil {
		return false
	}
	end := r.HighWatermark
	if a.eos() {
		end = r.LastStable // a read_committed reader's records end there
	}
	q.add(r, end, a.now().UnixMilli())
	if a.cur != nil {
		a.cur.Keep(r.Partition)
	}
	return true
}

// processQueued processes the queued records of every active task that has some, in timestamp
// order, as far as the machine lets each go. It returns false when processing must pause (a commit
// or a retry is due) or failed (the application is failing). Called with a.mu held, while a batch
// is out (so that no revocation runs meanwhile).
func (a *App) processQueued() bool {
	for _, t := range a.tasks {
		if t.order == nil || !t.active {
			continue
		}
		ok := a.processOrdered(t)
		a.reportQueued(t)
		if !ok {
			return false
		}
	}
	return true
}

// processOrdered processes t's queued records in timestamp order until the machine says wait, a
// commit or a retry is due, or a processor fails (false then, the failure passed to a.fail).
func (a *App) processOrdered(t *task) bool {
	o := t.order
	now := a.now()
	for {
		heads := a.fill(o)
		i, ok := a.mach.NextInput(t.id, heads, now)
		if !ok {
			return true
		}
		if err := a.start(t); err != nil {
			a.fail(err)
			return false
		}
		q := o.qs[i]
		n := 1 // under the wall clock, the record behind the head becomes the head after it: later than the others
		if a.cfg.Runtime.Timestamps != config.WallclockTimestamp {
			n = sm.RunLength(heads, i, func(k int) int64 { return a.orderTime(q, q.head+k) }, q.held())
		}
		done, stop, err := a.processRun(t, q.recs[q.head:q.head+n])
		switch {
		case err == errPause:
			q.take(done, now.UnixMilli())
			return false
		case err != nil:
			// The partition stops at stop: the failed record, or after it when its punctuation failed.
			for q.head < len(q.recs) && q.recs[q.head].Offset < stop {
				q.take(1, now.UnixMilli())
			}
			a.fail(err)
			return false
		}
		q.take(n, a.now().UnixMilli())
		if a.commitDue() || a.retryPending() {
			return false
		}
	}
}

// reportQueued tells the consumer where t's queued partitions stand, and pauses or resumes fetching
// each as its queue is full (buffered.records.per.partition) or not.
func (a *App) reportQueued(t *task) {
	var moved map[tasks.TopicPartition]int64
	limit := a.cfg.Runtime.Buffered()
	for _, q := range t.order.qs {
		if pos := q.position(); pos >= 0 && pos != q.reported {
			a.mach.Processed(q.tp, pos)
			if moved == nil {
				moved = map[tasks.TopicPartition]int64{}
			}
			moved[q.tp], q.reported = pos, pos
		}
		if a.cons == nil {
			continue // unit tests of processing without a consumer
		}
		if full := q.held() > limit; full != q.paused { // Kafka Streams pauses above the limit
			q.paused = full
			a.cons.Hold(q.tp, full)
		}
	}
	if moved != nil && a.cons != nil {
		// The consumer fetches a task's partitions again from there if a revocation fails.
		a.cons.Advance(moved)
	}
}

// dropQueued forgets t's queued records (the task stopped: they are fetched again from its
// position) and resumes fetching what was paused.
func (a *App) dropQueued(t *task) {
	a.mach.ForgetInputs(t.id)
	if t.order == nil {
		return
	}
	for _, q := range t.order.qs {
		if q.paused && a.cons != nil {
			a.cons.Hold(q.tp, false)
		}
	}
	t.order = nil // made afresh, with unknown lags, when records come again
}

// hasQueued reports whether an active task holds queued records: the loop then takes a turn to
// process them even when a poll brings nothing (an idle wait may have ended).
func (a *App) hasQueued() bool {
	for _, t := range a.tasks {
		if t.order == nil || !t.active {
			continue
		}
		for _, q := range t.order.qs {
			if q.held() > 0 {
				return true
			}
		}
	}
	return false
}

// lagListing paces the listings of input ends for queues whose lag is unknown.
const lagListing = time.Second

// listedEnd is one input's first and end offsets from a listing.
type listedEnd struct {
	tp         tasks.TopicPartition
	start, end int64
}

// lagLister lists, off the loop, where inputs end for the empty queues whose lag no fetch has told
// (an input with no records at all is never in a fetch answer; Kafka Streams' consumer learns its
// end from every fetch). At most one listing is in flight; its answer is applied at the loop's
// next round.
type lagLister struct {
	inFlight bool
	last     time.Time
	answers  chan []listedEnd // buffered 1: the listing never waits for the loop
	wg       sync.WaitGroup
}

// listUnknownLags applies the answer of the last listing, and starts one, at most once per
// lagListing, for the empty queues of active tasks whose lag is unknown. Nothing to do for a
// topology without tasks of several inputs, or under max.task.idle.ms=-1 (a lag is never waited
// for). Called by the loop without a.mu.
func (a *App) listUnknownLags(ctx context.Context) {
	if !a.ordering || a.cfg.Runtime.MaxTaskIdle == config.MaxTaskIdleDisabled {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case ends := <-a.lags.answers:
		a.lags.inFlight = false
		for _, e := range ends {
			a.setListedLag(e.tp, a.cons.Position(e.tp), e.start, e.end)
		}
	default:
	}
	if a.lags.inFlight || a.now().Sub(a.lags.last) < lagListing {
		return
	}
	topics := map[string]bool{}
	var unknown []tasks.TopicPartition
	for _, t := range a.tasks {
		if t.order == nil || !t.active {
			continue
		}
		for _, q := range t.order.qs {
			if q.held() == 0 && q.lag == sm.LagUnknown {
				unknown = append(unknown, q.tp)
				topics[q.tp.Topic] = true
			}
		}
	}
	if len(unknown) == 0 {
		return
	}
	a.lags.inFlight, a.lags.last = true, a.now()
	names := make([]string, 0, len(topics))
	for topic := range topics {
		names = append(names, topic)
	}
	a.lags.wg.Add(1)
	go func() {
		defer a.lags.wg.Done()
		a.lags.answers <- a.listEnds(ctx, names, unknown)
	}()
}

// listEnds lists the first and end offsets (the last stable offsets under exactly-once) of
// partitions tps of topics; a failed listing answers nothing (the next round asks again).
func (a *App) listEnds(ctx context.Context, topics []string, tps []tasks.TopicPartition) []listedEnd {
	lctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	adm := kadm.NewClient(a.cl)
	var ends kadm.ListedOffsets
	var err error
	if a.eos() {
		ends, err = adm.ListCommittedOffsets(lctx, topics...) // the last stable offsets
	} else {
		ends, err = adm.ListEndOffsets(lctx, topics...)
	}
	if err == nil {
		err = ends.Error()
	}
	starts, serr := adm.ListStartOffsets(lctx, topics...)
	if serr == nil {
		serr = starts.Error()
	}
	if err = cmp.Or(err, serr); err != nil {
		a.log.Debug("listing the ends of inputs to order by failed; retrying", "err", err)
		return nil
	}
	var out []listedEnd
	for _, tp := range tps {
		end, ok := ends.Lookup(tp.Topic, tp.Partition)
		start, ok2 := starts.Lookup(tp.Topic, tp.Partition)
		if ok && ok2 {
			out = append(out, listedEnd{tp, start.Offset, end.Offset})
		}
	}
	return out
}

// tickIdle lets the machine see the heads of every active task with several inputs at each round
// of the loop, records or not, as Kafka Streams asks each task whether it can process at every
// iteration: an empty partition's idle wait (max.task.idle.ms above 0) starts when it is found
// empty, not when the other partitions' records come. Called with a.mu held.
func (a *App) tickIdle() {
	if !a.ordering || a.cfg.Runtime.MaxTaskIdle <= 0 {
		return
	}
	now := a.now()
	for _, t := range a.tasks {
		if !t.active {
			continue
		}
		if o := a.orderOf(t); o != nil {
			a.mach.NextInput(t.id, a.fill(o), now)
		}
	}
}

// setListedLag sets the lag of tp's queue from a listing: what lies between its position (-1: the
// reset offset, not resolved) and the end. Called with a.mu held.
func (a *App) setListedLag(tp tasks.TopicPartition, pos, start, end int64) {
	id, _, ok := a.router.Task(tp.Topic, tp.Partition)
	if !ok {
		return
	}
	t := a.tasks[id]
	if t == nil || t.order == nil {
		return
	}
	q := t.order.queue(tp)
	if q == nil || q.held() > 0 || q.lag != sm.LagUnknown {
		return // fetched meanwhile: the fetch told
	}
	switch {
	case pos >= 0:
		q.lag = max(end-pos, 0)
	case a.cfg.Runtime.ResetLatest:
		q.lag = 0 // the reset goes to the end: nothing to wait for
	default:
		q.lag = max(end-start, 0)
	}
}
