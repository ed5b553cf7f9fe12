package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// ProcessingError is a record (or a punctuation, or a processor's Init) that a processor failed on,
// under processing.exception.handler=LogAndFail: the application stopped, and nothing at or past the
// record was committed.
type ProcessingError struct {
	Task tasks.ID
	// Topic, Partition and Offset locate the record; Topic is "" for a punctuation or Init.
	Topic     string
	Partition int32
	Offset    int64
	// Flush says the processor failed writing what it held back for a commit (a Flusher's Flush,
	// the DSL's record cache).
	Flush bool
	Err   error
}

func (e *ProcessingError) Error() string {
	where := "a punctuation or Init"
	if e.Flush {
		where = "writing what it held back for a commit (a record cache)"
	}
	if e.Topic != "" {
		where = fmt.Sprintf("record %s[%d]@%d", e.Topic, e.Partition, e.Offset)
	}
	if se := (*store.Error)(nil); errors.As(e.Err, &se) {
		// The store failed, not the processor's logic: its error says what to do (space, damage).
		return fmt.Sprintf("stream: task %s failed on %s: %v; the application stopped and committed only what came before",
			e.Task, where, e.Err)
	}
	return fmt.Sprintf("stream: task %s failed on %s: %v; the application stopped and committed only what came before "+
		"(processing.exception.handler=LogAndFailProcessingExceptionHandler); fix the processor, or set "+
		"processing.exception.handler=LogAndContinueProcessingExceptionHandler to skip such records", e.Task, where, e.Err)
}

// Unwrap returns the processor's error.
func (e *ProcessingError) Unwrap() error { return e.Err }

// DeserializationError is an input record whose key or value its serdes could not decode (see
// Typed), under deserialization.exception.handler=LogAndFail.
type DeserializationError struct {
	Task      tasks.ID
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *DeserializationError) Error() string {
	return fmt.Sprintf("stream: task %s cannot decode record %s[%d]@%d: %v; the application stopped and committed only what came before "+
		"(deserialization.exception.handler=LogAndFailExceptionHandler); set deserialization.exception.handler=LogAndContinueExceptionHandler "+
		"to skip records that do not decode", e.Task, e.Topic, e.Partition, e.Offset, e.Err)
}

// Unwrap returns the serde's error.
func (e *DeserializationError) Unwrap() error { return e.Err }

// ProduceError is a record the brokers did not take (too large, a topic the client may not write,
// …). Nothing is committed after it: the records whose output it was are processed again by the
// task's next owner.
type ProduceError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *ProduceError) Error() string {
	return fmt.Sprintf("stream: writing to %s[%d] failed: %v; the application stopped without committing the records behind it "+
		"(they are processed again when it restarts); %s", e.Topic, e.Partition, e.Err, produceHint(e.Err))
}

// produceHint says what to look at for a write the brokers refused with err.
func produceHint(err error) string {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return "the record is larger than the topic's max.message.bytes (or the broker's message.max.bytes) allows: raise it, or write smaller records"
	case errors.Is(err, kerr.InvalidTimestamp):
		return "the record's timestamp is further from the broker's clock than the topic allows (log.message.timestamp.before.max.ms and " +
			"after.max.ms): records sent take the input's timestamp, so check the input's timestamps"
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		return "allow the client WRITE on the topic (an ACL)"
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return "create the topic (sink topics are not created by the broker; internal topics are)"
	}
	return "check the topic exists, the client may write it, and records fit max.message.bytes"
}

// Unwrap returns the client's error.
func (e *ProduceError) Unwrap() error { return e.Err }

// loop polls, processes, punctuates and commits until runCtx ends.
func (a *App) loop(runCtx context.Context) {
	for runCtx.Err() == nil {
		// The member's calls (revocations, assignments, losses) run here, between two batches.
		a.serveCalls()
		// The member's poll timer: a loop stuck in a processor for longer than max.poll.interval.ms
		// loses its tasks and leaves, as a Kafka Streams thread does (the next Poll rejoins).
		a.mgr.Poll()
		tctx, cancel := context.WithTimeout(runCtx, a.cfg.Runtime.Poll())
		pctx, done := a.pollContext(tctx) // a member's call ends the wait
		start := time.Now()               // the wait is real I/O: timed on the wall clock, not the App's
		b, err := a.cons.Poll(pctx)
		done()
		cancel()
		a.metrics.polls.Add(1)
		a.metrics.pollTime.Add(int64(time.Since(start)))
		switch {
		case runCtx.Err() != nil:
			if b != nil {
				// Stopping with a batch out that was not processed: no input position may move past
				// it, since Close then commits the positions (the revocation), and a batch marked
				// done would commit offsets past records nothing processed. Its records are the
				// next owner's, from the committed positions.
				b.DoneBefore(stopAll(b.Process))
			}
			return
		case errors.Is(err, context.DeadlineExceeded):
			// No records: queued ones may go now (an idle wait ended).
			queued := false
			if a.ordering {
				a.mu.RLock()
				queued = a.hasQueued()
				a.mu.RUnlock()
			}
			if queued {
				if b, err := a.cons.Turn(runCtx); err == nil {
					a.handle(b)
				}
				if runCtx.Err() != nil {
					return
				}
			}
		case errors.Is(err, context.Canceled):
			// A member's call ended the wait: it is served first (a loss must not find a
			// punctuation writing for tasks another member may own already), as Kafka Streams runs
			// its rebalance callbacks inside poll, before it processes and punctuates.
			continue
		case errors.Is(err, consume.ErrClosed):
			a.fail(err)
			return
		case err != nil:
			a.fail(fmt.Errorf("stream: polling: %w", err))
			return
		default:
			a.handle(b)
			if runCtx.Err() != nil {
				return // a processing error (or a stop) during the batch: no punctuation, no commit after it
			}
		}
		a.between()
	}
}

// handle applies a batch's changelog records, processes its input records, and hands it back.
func (a *App) handle(b *consume.Batch) {
	a.mu.Lock()
	a.cur = b
	defer func() { a.cur = nil }()
	for _, fe := range b.Errors {
		a.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
	}
	for _, c := range b.Corrupted {
		if err := a.wipe(c.Task, c.Partition); err != nil {
			a.mu.Unlock()
			b.DoneBefore(stopAll(b.Process))
			a.fail(err)
			return
		}
	}
	for _, r := range b.Restore {
		t := a.tasks[r.Task]
		if t == nil {
			continue
		}
		s := t.byChangelog[r.Partition.Topic]
		if s == nil {
			continue
		}
		if err := s.restore(r.Records, r.Next); err != nil {
			a.mu.Unlock()
			b.DoneBefore(stopAll(b.Process))
			a.fail(err)
			return
		}
		a.metrics.restored.Add(uint64(len(r.Records)))
		if len(a.o.onRestore) > 0 {
			rb := RestoreBatch{Task: r.Task, Store: s.name, Changelog: r.Partition, Next: r.Next,
				Records: len(r.Records), Standby: r.Role != consume.Active}
			for _, fn := range a.o.onRestore {
				fn(rb)
			}
		}
	}
	if stops, again := a.startBatchTasks(b.Process); stops != nil {
		a.mu.Unlock()
		if again {
			b.Yield(stops) // the batch comes again once the tasks could start
		} else {
			b.DoneBefore(stops)
		}
		return
	}
	unprocessed, paused := a.processBatch(b.Process)
	a.mu.Unlock()
	switch {
	case paused:
		b.Yield(unprocessed) // the rest comes again after the commit
	case unprocessed != nil:
		b.DoneBefore(unprocessed)
	default:
		b.Done()
	}
}

// processBatch processes a batch's input records and, for a topology with tasks of several inputs,
// the records queued for them; it returns where each partition of recs stopped (nil: all of recs
// were processed or kept) and whether processing paused for a commit. Called with a.mu held.
func (a *App) processBatch(recs []consume.Records) (unprocessed map[tasks.TopicPartition]int64, paused bool) {
	if !a.ordering {
		return a.processUntil(recs)
	}
	// Queued records first in every other batch: a batch that pauses for a commit before its end
	// must not keep the other kind waiting for ever.
	a.queuedFirst = !a.queuedFirst
	if a.queuedFirst && !a.processQueued() {
		// Paused before the batch's turn: none of its records was processed or kept, so every
		// partition of it is handed out again after the commit. (Saying nothing would take them
		// as processed: the consumer would go on past them, and the next records' positions
		// would commit over them.)
		return stopAll(recs), true
	}
	if unprocessed, paused = a.processUntil(recs); unprocessed != nil || paused || a.queuedFirst {
		return unprocessed, paused
	}
	return nil, !a.processQueued()
}

// stopAll says no record of recs was processed.
func stopAll(recs []consume.Records) map[tasks.TopicPartition]int64 {
	m := make(map[tasks.TopicPartition]int64, len(recs))
	for _, r := range recs {
		m[r.Partition] = r.First
	}
	return m
}

// process runs the processors over the records; after a fatal failure it returns where each
// partition stopped (nil when everything was processed). Called with a.mu held.
func (a *App) process(recs []consume.Records) map[tasks.TopicPartition]int64 {
	m, _ := a.processUntil(recs)
	return m
}

// errPause is processRecords' word that the commit is due: processing pauses there, the rest of
// the batch comes again after the commit.
var errPause = errors.New("stream: the commit is due")

// pauseEvery is how many records are processed between two looks at the clock for a commit that
// is due mid-batch (a clock read a record would cost more than many processors).
const pauseEvery = 64

// commitDue reports whether the periodic commit is due.
func (a *App) commitDue() bool { return a.mach.CommitDue(a.now()) }

// processUntil is process, which also pauses when the periodic commit falls due in the middle of
// the batch, as Kafka Streams commits between its iterations: a slow processor over a large fetch
// would otherwise hold a transaction open past transaction.timeout.ms. It then returns where each
// partition paused, and paused true. Called with a.mu held.
func (a *App) processUntil(recs []consume.Records) (stops map[tasks.TopicPartition]int64, paused bool) {
	// The records of tasks with several inputs go to their queues first (processQueued orders
	// them); the rest are processed here, a partition's records at a time.
	plain, kept := recs, false
	for i, r := range recs {
		switch t := a.tasks[r.Task]; {
		case a.ordering && t != nil && t.active && a.keep(t, r):
			if !kept {
				plain, kept = slices.Clone(recs[:i]), true
			}
		case kept:
			plain = append(plain, r)
		}
	}
	recs = plain
	for i, r := range recs {
		if i > 0 && a.cur != nil && (a.commitDue() || a.retryPending()) {
			return stopAll(recs[i:]), true
		}
		t := a.tasks[r.Task]
		if t == nil || !t.active {
			// The consumer hands out only active tasks' records; skipping them would lose them.
			return a.stopAt(recs, i, r.First, fmt.Errorf("stream: internal error: records of task %s, which this process does not run as active", r.Task)), false
		}
		if err := a.start(t); err != nil {
			return a.stopAt(recs, i, r.First, err), false
		}
		_, stop, err := a.processRun(t, r.Records)
		if err == errPause {
			a.mach.Processed(r.Partition, stop)
			m := stopAll(recs[i+1:])
			m[r.Partition] = stop
			return m, true
		}
		if err != nil {
			return a.stopAt(recs, i, stop, err), false
		}
		// Past the last record: the fetch may end with transaction markers, which the position
		// moves past too.
		a.mach.Processed(r.Partition, r.Next)
	}
	return nil, false
}

// processRun is processRecords with t's processor, counted and timed in the metrics: per run of
// records, not per record (two clock reads a record would cost more than many processors); the
// stream-time punctuations they fired are punctuation time, not processing time.
func (a *App) processRun(t *task, krs []*kgo.Record) (n int, stop int64, err error) {
	start, punctuating := a.now(), a.metrics.punctuateTime.Load()
	n, stop, err = a.processRecords(t, a.procs[t.id.Subtopology], krs)
	a.metrics.processed.Add(uint64(n))
	a.metrics.processTime.Add(max(a.since(start)-(a.metrics.punctuateTime.Load()-punctuating), 0))
	return n, stop, err
}

// processRecords runs proc over the records of one input partition of t. It returns how many
// records it handed to proc and, after a fatal failure, the offset that partition stops at.
func (a *App) processRecords(t *task, proc Processor, krs []*kgo.Record) (n int, stop int64, err error) {
	if len(krs) == 0 {
		return 0, 0, nil
	}
	// The partition's time moves once per run, to the largest timestamp handed to the processor.
	ptime := int64(-1)
	defer func() {
		if ptime >= 0 {
			a.mach.Advanced(tasks.TopicPartition{Topic: krs[0].Topic, Partition: krs[0].Partition}, ptime)
		}
	}()
	for i, kr := range krs {
		ms, err := a.timestampOf(t, kr, ptime)
		if err != nil {
			return i + 1, kr.Offset, err
		}
		if ms < 0 { // skipped (LogAndSkipOnInvalidTimestamp): processed, as Kafka Streams counts it
			continue
		}
		ts := kr.Timestamp
		if ms != ts.UnixMilli() {
			ts = time.UnixMilli(ms)
		}
		// The task's one Record, reused: a Record per record would be an allocation each.
		rec := &t.rec
		*rec = Record{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value,
			Timestamp: ts, Headers: kr.Headers}
		t.ctx = Context{app: a, task: t, rec: rec, ts: ts}
		ptime = max(ptime, ms)
		t.streamTime = max(t.streamTime, ms)
		if err := a.policy(proc.Process(&t.ctx, rec), t, kr); err != nil {
			return i + 1, kr.Offset, err
		}
		if err := a.punctuate(t, StreamTime, t.streamTime); err != nil {
			return i + 1, kr.Offset + 1, err
		}
		// Every 64 records: pause for a commit that fell due, or for a write that failed and is to
		// be retried (production.exception.handler's RETRY), as Kafka Streams stops at the next
		// record after a TaskCorruptedException.
		if i%pauseEvery == pauseEvery-1 && i < len(krs)-1 && a.cur != nil && (a.commitDue() || a.retryPending()) {
			return i + 1, kr.Offset + 1, errPause
		}
	}
	return len(krs), 0, nil
}

// TimestampError is an input record with a negative timestamp under
// default.timestamp.extractor=FailOnInvalidTimestamp (the default), or under
// UsePartitionTimeOnInvalidTimestamp while its partition has no time yet: the application stopped,
// and nothing at or past the record was committed, as Kafka Streams stops.
type TimestampError struct {
	Task      tasks.ID
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
}

func (e *TimestampError) Error() string {
	return fmt.Sprintf("stream: task %s: record %s[%d]@%d has the invalid timestamp %d (negative: the producer wrote none, or "+
		"an old message format); the application stopped and committed only what came before; fix the producer, or set "+
		"default.timestamp.extractor to LogAndSkipOnInvalidTimestamp (skip such records), UsePartitionTimeOnInvalidTimestamp "+
		"(give them their partition's time) or WallclockTimestampExtractor", e.Task, e.Topic, e.Partition, e.Offset, e.Timestamp)
}

// timestampOf is the timestamp (unix ms) kr is processed with, as default.timestamp.extractor says;
// -1 to skip it. ptime is its partition's time in the batch so far (-1: none).
func (a *App) timestampOf(t *task, kr *kgo.Record, ptime int64) (int64, error) {
	policy := a.cfg.Runtime.Timestamps
	if policy == config.WallclockTimestamp {
		return a.now().UnixMilli(), nil
	}
	ms := kr.Timestamp.UnixMilli()
	if ms >= 0 {
		return ms, nil
	}
	switch policy {
	case config.LogAndSkipOnInvalidTimestamp:
		a.metrics.dropped.Add(1)
		a.log.Warn("skipping a record with an invalid timestamp (default.timestamp.extractor=LogAndSkipOnInvalidTimestamp)",
			"task", t.id.String(), "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "timestamp", ms)
		return -1, nil
	case config.UsePartitionTimeOnInvalidTimestamp:
		if pt := max(ptime, a.mach.PartitionTime(tasks.TopicPartition{Topic: kr.Topic, Partition: kr.Partition})); pt >= 0 {
			return pt, nil
		}
	}
	return 0, &TimestampError{Task: t.id, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Timestamp: ms}
}

// stopAt fails the application at record offset of recs[i]: that partition stops there, and the
// partitions after it in the batch were not reached.
func (a *App) stopAt(recs []consume.Records, i int, offset int64, err error) map[tasks.TopicPartition]int64 {
	a.mach.Processed(recs[i].Partition, offset)
	m := stopAll(recs[i+1:])
	m[recs[i].Partition] = offset
	a.fail(err)
	return m
}

// policy applies the error handlers to a processor's result: nil to go on, or the fatal error.
func (a *App) policy(err error, t *task, kr *kgo.Record) error {
	if err == nil {
		return nil
	}
	// With errors.dead.letter.queue.topic.name set, the record goes to the dead-letter queue
	// whatever the handler then does, as Kafka Streams' built-in handlers send it (KIP-1034).
	a.deadLetter(t, kr, err)
	var de *recordDecodeError
	if errors.As(err, &de) {
		if a.cfg.Runtime.OnDeserializationError == config.LogAndContinue {
			a.metrics.dropped.Add(1)
			a.log.Warn("skipping a record that does not decode (deserialization.exception.handler=LogAndContinue)",
				"task", t.id.String(), "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", err)
			return nil
		}
		return &DeserializationError{Task: t.id, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Err: err}
	}
	if a.cfg.Runtime.OnProcessingError == config.LogAndContinue {
		a.metrics.dropped.Add(1)
		a.log.Warn("skipping a record the processor failed on (processing.exception.handler=LogAndContinue)",
			"task", t.id.String(), "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", err)
		return nil
	}
	return &ProcessingError{Task: t.id, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Err: err}
}

// The headers of a dead-letter record, as Kafka Streams writes them (ExceptionHandlerUtils).
const (
	dlqHeaderException  = "__streams.errors.exception"
	dlqHeaderMessage    = "__streams.errors.message"
	dlqHeaderStacktrace = "__streams.errors.stacktrace"
	dlqHeaderTopic      = "__streams.errors.topic"
	dlqHeaderPartition  = "__streams.errors.partition"
	dlqHeaderOffset     = "__streams.errors.offset"
)

// deadLetter writes the input record kr that failed with err to the dead-letter queue topic, when
// one is set: its raw key and value and timestamp, with Kafka Streams' headers. The exception header
// names the Go type of the error; the stack trace header, which Go errors do not carry, holds the
// chain of wrapped errors, one per line. It goes out as any output (inside the transaction under
// exactly-once: an aborted one takes it with it).
func (a *App) deadLetter(t *task, kr *kgo.Record, err error) {
	topic := a.cfg.Runtime.DeadLetterQueueTopic
	if topic == "" {
		return
	}
	cause := err
	if de := (*recordDecodeError)(nil); errors.As(err, &de) {
		cause = de.err
	}
	var chain []string
	for e := cause; e != nil; e = errors.Unwrap(e) {
		chain = append(chain, fmt.Sprintf("%T: %v", e, e))
	}
	ts := kr.Timestamp
	if t.ctx.rec != nil && t.ctx.rec.Offset == kr.Offset {
		ts = t.ctx.ts // the timestamp it was processed with (default.timestamp.extractor)
	}
	// The record's own headers, then the error's, as Kafka Streams builds a dead letter.
	headers := append(slices.Clone(kr.Headers), []kgo.RecordHeader{
		{Key: dlqHeaderException, Value: []byte(errorType(cause))},
		{Key: dlqHeaderMessage, Value: []byte(cause.Error())},
		{Key: dlqHeaderStacktrace, Value: []byte(strings.Join(chain, "\n"))},
		{Key: dlqHeaderTopic, Value: []byte(kr.Topic)},
		{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(kr.Partition)))},
		{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(kr.Offset, 10))},
	}...)
	a.produce(t.id, &kgo.Record{Topic: topic, Key: kr.Key, Value: kr.Value, Timestamp: ts, Headers: headers})
}

// errorType names err as Kafka Streams names an exception by its class: the Go type of the first
// error in its chain that is not a mere fmt.Errorf wrapper (*serde.DecodeError, say).
func errorType(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if t := fmt.Sprintf("%T", e); t != "*fmt.wrapError" && t != "*fmt.wrapErrors" {
			return t
		}
	}
	return fmt.Sprintf("%T", err)
}

// start starts t processing if it is not yet: the machine has its Init run (InitTask). Its records
// came, so its stores are restored. Called with a.mu held.
func (a *App) start(t *task) error {
	if a.mach.Running(t.id) {
		return nil
	}
	// Init takes no context; the machine asks for nothing else here.
	return a.drive(context.Background(), sm.Ready{Tasks: tasks.NewSet(t.id)}).Err
}

// initTask runs the processor's Init for a task that starts processing, its stream time the largest
// of its inputs' partition times (from the committed offsets' metadata, when it has just arrived).
func (a *App) initTask(t *task) error {
	t.streamTime = a.mach.StreamTime(t.id)
	in, ok := a.procs[t.id.Subtopology].(Initializer)
	if !ok {
		return nil
	}
	t.ctx = Context{app: a, task: t, ts: a.now()}
	if err := in.Init(&t.ctx); err != nil {
		return a.softFail(t, err)
	}
	return nil
}

// checkOrphanedState refuses to start t when its stores hold data and none of its inputs has a
// committed offset (an *OrphanedStateError), or warns of it when allow.state.without.committed.offsets
// is set. A task's Init runs only after its starting positions were committed (startTasks), so a
// member that stopped before its first periodic commit leaves no such state behind.
// Called with a.mu held.
func (a *App) checkOrphanedState(t *task) error {
	if len(t.stores) == 0 || a.mach.HasCommitted(t.id) {
		return nil
	}
	var held []OrphanedState
	var keys int64
	for _, name := range slices.Sorted(maps.Keys(t.stores)) {
		s := t.stores[name]
		if n, err := s.eng.ApproximateCount(); err == nil && n > 0 {
			held = append(held, OrphanedState{Store: name, Changelog: s.changelog, Keys: n})
			keys += n
		}
	}
	if len(held) == 0 {
		return nil
	}
	if !a.cfg.Runtime.AllowStateWithoutCommittedOffsets {
		return &OrphanedStateError{Group: a.cfg.ApplicationID, Task: t.id, Stores: held}
	}
	w := &OrphanedStateWarning{Task: t.id, Group: a.cfg.ApplicationID, Keys: keys}
	a.log.Warn(w.Error())
	for _, fn := range a.o.onWarning {
		fn(w)
	}
	return nil
}

// softFail applies processing.exception.handler to an error outside a record (Init, punctuation).
func (a *App) softFail(t *task, err error) error {
	if a.cfg.Runtime.OnProcessingError == config.LogAndContinue {
		a.log.Warn("a punctuation or Init failed (processing.exception.handler=LogAndContinue)", "task", t.id.String(), "err", err)
		return nil
	}
	return &ProcessingError{Task: t.id, Err: err}
}

// punctuate fires t's punctuations of type typ due at time now (unix ms): the machine says which
// (and moves them to their next time); a punctuator may schedule or cancel punctuations meanwhile,
// and one cancelled during the round does not fire.
func (a *App) punctuate(t *task, typ PunctuationType, now int64) error {
	if len(t.punctuators) == 0 || now < 0 || !t.active || !a.mach.Running(t.id) {
		return nil
	}
	at := time.UnixMilli(now) // the wall-clock time, or the stream time, as Kafka Streams passes it
	for _, id := range a.mach.Due(t.id, typ == StreamTime, now) {
		fn := t.punctuators[id]
		if fn == nil || a.mach.Cancelled(t.id, id) {
			continue
		}
		t.ctx = Context{app: a, task: t, ts: at}
		start := a.now()
		err := fn(&t.ctx, at)
		a.metrics.punctuations.Add(1)
		a.metrics.punctuateTime.Add(a.since(start))
		if err != nil {
			if err = a.softFail(t, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// retryPending reports whether a write failed with an error production.exception.handler retries
// (under at-least-once): the tasks go back to their last commit before they process more.
func (a *App) retryPending() bool {
	pe := a.produceErr.Load()
	return pe != nil && a.retriesProduction(pe)
}

// between does the work due between batches: taking the tasks back after a write to retry,
// starting restored tasks, punctuations, the periodic commit, store cleanup, the App's state.
func (a *App) between() {
	a.listUnknownLags(a.runCtx)
	now := a.now()
	if pe := a.produceErr.Load(); pe != nil && a.retriesProduction(pe) {
		// Its Done is always clean: the machine refuses RetryWrite only while a commit runs, and
		// none does here (commits run with a.mu held, from start to Done).
		a.mu.Lock()
		a.driveAt(a.runCtx, now, sm.RetryWrite{Err: pe})
		a.mu.Unlock()
	}
	restoring := a.cons.Restoring()
	a.mu.Lock()
	var ready []tasks.ID
	for _, t := range a.tasks {
		if t.active && !restoring.Contains(t.id) && !a.mach.Running(t.id) {
			ready = append(ready, t.id)
		}
	}
	if len(ready) > 0 {
		slices.SortFunc(ready, tasks.ID.Compare)
		// A failed commit of new tasks' starting positions leaves them to a later round.
		if err, again := a.startTasks(a.runCtx, ready, nil); err != nil && !again {
			a.mu.Unlock()
			a.fail(err)
			return
		}
	}
	for _, t := range a.tasks {
		if !t.active || !a.mach.Running(t.id) {
			continue
		}
		if err := a.punctuate(t, WallClock, now.UnixMilli()); err != nil {
			a.mu.Unlock()
			a.fail(err)
			return
		}
		// A stream-time punctuation due already (a task that starts with the stream time of its
		// committed metadata) fires without waiting for a record, as Kafka Streams' punctuate does.
		if err := a.punctuate(t, StreamTime, t.streamTime); err != nil {
			a.mu.Unlock()
			a.fail(err)
			return
		}
	}
	a.tickIdle()
	a.driveAt(a.runCtx, now, sm.CloseExpired{})
	a.cleanupDue(now)
	a.mu.Unlock()
	if a.running() {
		switch {
		case a.mgr.State() != membership.Stable:
			a.setState(Rebalancing)
		case !restoring.IsEmpty():
			a.setState(Restoring)
		default:
			a.setState(Running)
		}
	}
	a.mu.Lock()
	due := a.mach.CommitDue(now)
	a.mu.Unlock()
	if !due {
		return
	}
	// Not runCtx: a signal that arrives during the commit must not abort it (a clean stop commits
	// what it processed); a fatal error does end it, and closeBound bounds it.
	cctx, cancel := context.WithTimeout(a.failCtx, closeBound)
	a.mu.Lock()
	d := a.drive(cctx, sm.Commit{Reason: sm.Periodic})
	a.mu.Unlock()
	cancel()
	a.metrics.commitTime.Add(a.since(now))
	switch {
	case d.Err == nil:
		a.metrics.commits.Add(1)
	case d.Fatal:
		a.metrics.failedCommits.Add(1)
		a.fail(d.Err)
	default:
		a.metrics.failedCommits.Add(1)
		if d.RetryIn > 0 && a.runCtx.Err() == nil {
			a.log.Warn("commit failed; retrying", "in", d.RetryIn, "err", d.Err)
		}
	}
}

func (a *App) checkpoint(t *task) error {
	for _, s := range t.stores {
		if s.kind.Persistent() {
			if err := s.checkpoint(); err != nil {
				return err
			}
		}
	}
	return nil
}

// produce sends an output or repartition record.
func (a *App) produce(task tasks.ID, r *kgo.Record) { a.send(task, r, &a.outPromise, nil) }

// acker is told the offsets of acknowledged writes (a store, of its changelog's).
type acker interface{ ackedAt(offset int64) }

// promiser makes the callback of the records produced in one transaction generation (the
// generation a failure or an acknowledgement is told against), once per generation rather than a
// closure per record. The loop's goroutine only.
type promiser struct {
	gen int64
	fn  func(*kgo.Record, error)
}

// send writes r for task inside the open transaction (under exactly-once), with p's callback;
// acked, when not nil, is told the offset of a record the brokers acknowledged (the same at every
// call with the same p).
func (a *App) send(task tasks.ID, r *kgo.Record, p *promiser, acked acker) {
	if a.produceErr.Load() != nil {
		return // nothing more is committed anyway; the loop is stopping (or the transaction aborts)
	}
	if !a.ensureTxn(r.Topic) {
		return
	}
	if a.eos() {
		a.mach.Produced(task)
	}
	if gen := a.txnGen.Load(); p.fn == nil || p.gen != gen {
		p.gen, p.fn = gen, func(r *kgo.Record, err error) {
			if err != nil {
				a.recordProduceErr(r, err, gen)
				return
			}
			if a.eos() {
				a.txnEpoch.ack(gen, r.ProducerID, r.ProducerEpoch)
			}
			if acked != nil {
				acked.ackedAt(r.Offset)
			}
		}
	}
	// Not runCtx: a clean stop flushes what is buffered.
	a.producer().Produce(a.deliveryContext(), r, p.fn)
}

// recordProduceErr keeps the first failed write. gen is the transaction generation the record was
// produced in: under exactly-once, a record of a transaction aborted since (ErrAborting, or
// INVALID_PRODUCER_EPOCH once the abort bumped the epoch) failed as part of the abort, and is done
// again.
func (a *App) recordProduceErr(r *kgo.Record, err error, gen int64) {
	if a.eos() && gen != a.txnGen.Load() {
		return
	}
	if !a.eos() && a.cfg.Runtime.OnProductionError == config.LogAndContinue && !sm.FatalWhateverTheHandler(err) {
		// production.exception.handler=LogAndContinueProductionExceptionHandler: the record is
		// dropped, by the application's choice, and the work goes on.
		a.metrics.dropped.Add(1)
		a.log.Warn("dropping a record the brokers did not take (production.exception.handler=LogAndContinueProductionExceptionHandler)",
			"topic", r.Topic, "partition", r.Partition, "err", err)
		return
	}
	pe := &ProduceError{Topic: r.Topic, Partition: r.Partition, Err: err}
	if !a.produceErr.CompareAndSwap(nil, pe) {
		return
	}
	// Under exactly-once a failed write of the open transaction is not the end when the producer
	// can go on: the next commit aborts and the work is done again. Under at-least-once a retriable
	// failure makes the tasks go back to their last commit at the next commit (Kafka Streams'
	// DefaultProductionExceptionHandler answers RETRY). Any other failed write stops the
	// application (it answers FAIL).
	if a.eos() && a.abortable(err) || a.retriesProduction(pe) {
		return
	}
	a.fail(pe)
}

// retriesProduction says whether a write that failed so is retried, under at-least-once, by taking
// the tasks back to their last commit (retryAfterProduceError).
func (a *App) retriesProduction(pe *ProduceError) bool {
	return a.retriesProductionErrors() && classify(pe.Err) == classRetriable
}

// retriesProductionErrors says whether production.exception.handler answers RETRY to writes that
// failed with a retriable error: Kafka Streams' default handler, under at-least-once.
func (a *App) retriesProductionErrors() bool {
	return !a.eos() && a.cfg.Runtime.OnProductionError == config.RetryOrFail
}

// retryAfterProduceError takes the active tasks back to their last commit after a write failed
// with a retriable error under at-least-once (the brokers unreachable past delivery.timeout.ms, a
// leader moving), as Kafka Streams' TaskCorruptedException revives them: the inputs from the last
// committed offsets, the partition times with them, Init again; the records since are processed
// again (their output written again, and their store updates applied again: at-least-once). The
// machine took the positions back already; to is where the inputs are fetched again from. Called
// with a.mu held, between batches or in a member's call.
func (a *App) retryAfterProduceError(pe *ProduceError, to commit.Offsets) {
	a.log.Warn("a write failed with a retriable error (production.exception.handler=DefaultProductionExceptionHandler answers RETRY): "+
		"the tasks go back to their last commit and process the records since again", "topic", pe.Topic, "partition", pe.Partition, "err", pe.Err)
	a.metrics.productionRetries.Add(1)
	for _, t := range a.tasks {
		if t.active {
			a.stopTask(t)
		}
	}
	a.cons.RewindTo(to)
	a.produceErr.CompareAndSwap(pe, nil)
}

// abortable says whether a failed write under exactly-once only aborts the transaction (the work
// is redone): anything but a fatal error or lost tasks. A record too large, say, would fail again
// at every retry.
func (a *App) abortable(err error) bool {
	switch classify(err) {
	case classRetriable, classAbort, classRenewProducer:
		return true
	}
	return false
}

// produceChangelog sends a store's changelog record; its acknowledgement moves the store's position.
func (a *App) produceChangelog(r *kgo.Record, s *kvStore) { a.send(s.task.id, r, &s.promise, s) }
