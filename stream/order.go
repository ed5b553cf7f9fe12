package stream

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
func (q *inputQueue) add(r consume.Records, end int64) {
	if q.head == len(q.recs) {
		q.recs, q.head = q.recs[:0], 0 // reuse the array once it was drained
	}
	q.recs = append(q.recs, r.Records...)
	q.next = r.Next
	q.lag = max(end-r.Next, 0)
}

// take drops the queue's first n records (processed).
func (q *inputQueue) take(n int) {
	clear(q.recs[q.head : q.head+n]) // let them be collected
	q.head += n
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
func (o *ordered) fill() []sm.Head {
	for i, q := range o.qs {
		if q.head < len(q.recs) {
			o.heads[i] = sm.Head{Buffered: true, Timestamp: q.recs[q.head].Timestamp.UnixMilli()}
		} else {
			o.heads[i] = sm.Head{Lag: q.lag}
		}
	}
	return o.heads
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
	q.add(r, end)
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
		heads := o.fill()
		i, ok := a.mach.NextInput(t.id, heads, now)
		if !ok {
			return true
		}
		if !t.initialized {
			if err := a.initTask(t); err != nil {
				a.fail(err)
				return false
			}
		}
		q := o.qs[i]
		n := sm.RunLength(heads, i, func(k int) int64 { return q.recs[q.head+k].Timestamp.UnixMilli() }, q.held())
		start, punctuating := a.now(), a.metrics.punctuateTime.Load()
		done, stop, err := a.processRecords(t, a.procs[t.id.Subtopology], q.recs[q.head:q.head+n])
		a.metrics.processed.Add(uint64(done))
		a.metrics.processTime.Add(max(a.since(start)-(a.metrics.punctuateTime.Load()-punctuating), 0))
		switch {
		case err == errPause:
			q.take(done)
			return false
		case err != nil:
			// The partition stops at stop: the failed record, or after it when its punctuation failed.
			for q.head < len(q.recs) && q.recs[q.head].Offset < stop {
				q.take(1)
			}
			a.fail(err)
			return false
		}
		q.take(n)
		if a.commitDue() || a.retryPending() {
			return false
		}
	}
}

// reportQueued tells the consumer where t's queued partitions stand, and pauses or resumes fetching
// each as its queue is full (buffered.records.per.partition) or not.
func (a *App) reportQueued(t *task) {
	if a.cons == nil {
		return // unit tests of processing without a consumer
	}
	var moved map[tasks.TopicPartition]int64
	limit := a.cfg.Runtime.Buffered()
	for _, q := range t.order.qs {
		if pos := q.position(); pos >= 0 && pos != q.reported {
			if moved == nil {
				moved = map[tasks.TopicPartition]int64{}
			}
			moved[q.tp], q.reported = pos, pos
		}
		if full := q.held() >= limit; full != q.paused {
			q.paused = full
			a.cons.Hold(q.tp, full)
		}
	}
	if moved != nil {
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

// listUnknownLags asks the brokers where the inputs end for the empty queues of tasks waiting on
// them whose lag no fetch has told (an input with no records at all is never in a fetch), at most
// once per lagListing: Kafka Streams' consumer learns that from every fetch answer. Called without
// a.mu.
func (a *App) listUnknownLags(ctx context.Context) {
	a.mu.Lock()
	var unknown []tasks.TopicPartition
	topics := map[string]bool{}
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
	if len(unknown) == 0 || a.now().Sub(a.lagsListedAt) < lagListing {
		a.mu.Unlock()
		return
	}
	a.lagsListedAt = a.now()
	a.mu.Unlock()

	names := make([]string, 0, len(topics))
	for topic := range topics {
		names = append(names, topic)
	}
	lctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	adm := kadm.NewClient(a.cl)
	var ends kadm.ListedOffsets
	var err error
	if a.eos() {
		ends, err = adm.ListCommittedOffsets(lctx, names...) // the last stable offsets
	} else {
		ends, err = adm.ListEndOffsets(lctx, names...)
	}
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		a.log.Debug("listing the ends of inputs to order by failed; retrying", "err", err)
		return
	}
	starts, err := adm.ListStartOffsets(lctx, names...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		a.log.Debug("listing the starts of inputs to order by failed; retrying", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tp := range unknown {
		end, ok := ends.Lookup(tp.Topic, tp.Partition)
		start, ok2 := starts.Lookup(tp.Topic, tp.Partition)
		if !ok || !ok2 {
			continue
		}
		a.setListedLag(tp, a.cons.Position(tp), start.Offset, end.Offset)
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
