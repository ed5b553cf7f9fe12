package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/semaphore"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/internal/listoffsets"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Role is the role a task has in this member.
type Role uint8

const (
	// Active tasks process their inputs (after restoring their stores).
	Active Role = iota + 1
	// Standby tasks keep a replica of the stores current, for a fast fail-over.
	Standby
	// Warmup tasks restore the stores before an active task moves here (Kafka 4.4+).
	Warmup
)

// String names the role.
func (r Role) String() string {
	switch r {
	case Active:
		return "active"
	case Standby:
		return "standby"
	case Warmup:
		return "warmup"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// OffsetCommitter is what the Consumer needs from a *commit.Committer: committed offsets of the
// tasks it starts, and commits of processed positions (CommitProcessed).
type OffsetCommitter interface {
	CommittedOffsets(ctx context.Context, s tasks.Set) (commit.Offsets, error)
	Commit(ctx context.Context, offsets commit.Offsets) error
}

// ErrGroupClient: the client consumes on its own (a consumer or share group, a regex, topics or
// partitions to consume), so the Consumer could not decide what it fetches.
var ErrGroupClient = errors.New("consume: the client must be built for direct consumption: no ConsumerGroup, ShareGroup, ConsumeRegex, ConsumeTopics or ConsumePartitions")

// ErrClosed: the kgo client was closed.
var ErrClosed = fmt.Errorf("consume: %w", kgo.ErrClientClosed)

// client is the part of *kgo.Client the Consumer drives.
type client interface {
	AddConsumePartitions(map[string]map[int32]kgo.Offset)
	RemoveConsumePartitions(map[string][]int32)
	PauseFetchPartitions(map[string][]int32) map[string][]int32
	ResumeFetchPartitions(map[string][]int32)
	SetOffsets(map[string]map[int32]kgo.EpochOffset)
	PollFetches(context.Context) kgo.Fetches
}

// lister lists the first and end offsets of every partition of some topics.
type lister interface {
	Bounds(ctx context.Context, topics []string) (start, end map[tasks.TopicPartition]int64, err error)
}

// ChangelogStart says where a task's store stands in a changelog partition when the Consumer starts
// feeding it (a restoring active task, a standby or a warm-up task it did not feed already): the
// offset of the next record to apply, and true; false when the store is empty (restoration starts at
// the beginning of the changelog). A position before the changelog's first offset starts there.
//
// A standby that becomes active while still assigned goes on from where it is without this. But a
// task that is dropped and assigned again (Kafka 4.2 and 4.3 brokers take a standby away before they
// make it active) starts over unless the application kept its store, as Kafka Streams keeps state
// directories, and says here where it stands.
type ChangelogStart func(task tasks.ID, changelog tasks.TopicPartition) (next int64, ok bool)

type options struct {
	next   membership.Listener
	reset  kgo.Offset
	start  ChangelogStart
	logger *slog.Logger
}

// Option configures a Consumer.
type Option func(*options)

// WithListener sets the application's listener, called inside each callback after (assigned) or
// before (revoked, lost) the Consumer changed what it consumes, and while no Batch is out.
func WithListener(l membership.Listener) Option { return func(o *options) { o.next = l } }

// WithResetOffset sets where an input partition without a committed offset starts
// (auto.offset.reset; default the earliest offset, as Kafka Streams).
func WithResetOffset(off kgo.Offset) Option { return func(o *options) { o.reset = off } }

// WithChangelogStart says where the application's stores stand (for stores that outlive a task,
// such as persistent ones); by default every store starts empty.
func WithChangelogStart(f ChangelogStart) Option { return func(o *options) { o.start = f } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// maxReaders is the weight a callback acquires: every Batch out holds one unit.
const maxReaders = 1 << 20

// Consumer drives a kgo client for the member's tasks; see the package documentation.
type Consumer struct {
	cl      client
	list    lister
	router  *tasks.Router
	commits OffsetCommitter
	o       options
	log     *slog.Logger

	// sem orders records and callbacks: a Batch out holds 1, a callback holds maxReaders.
	sem *semaphore.Weighted

	pollMu  sync.Mutex
	writers int
	idle    chan struct{} // closed when writers drops to 0
	polls   map[*int]context.CancelFunc

	mu    sync.Mutex
	tasks map[tasks.ID]*task
	byTP  map[tasks.TopicPartition]*part // the partitions the client consumes now
	// corrupt are changelog partitions found, at an assignment, to lie past their store's position:
	// the next batch reports them (Batch.Corrupted).
	corrupt []Records
}

// task is what the Consumer knows of one owned task.
type task struct {
	id        tasks.ID
	role      Role
	restoring bool // active, stateful, changelogs not caught up yet: inputs paused
	stopped   bool // active, removed from the client while OnTasksRevoked runs
	parts     map[tasks.TopicPartition]*part
	restoreTo map[tasks.TopicPartition]int64
}

// part is one partition of a task.
type part struct {
	tp        tasks.TopicPartition
	task      tasks.ID
	kind      tasks.PartitionKind
	handed    int64 // next offset to hand out; -1 unknown (reset offset)
	done      int64 // next offset after the records applied or processed; -1 unknown
	committed int64 // inputs: last committed position, -1 unknown
	end       int64 // changelogs: the largest high watermark seen in fetches, -1 none
	// resetting: a changelog moved to its first offset (out of range), where it stands not known
	// until a record comes or a listing tells (resolveResets).
	resetting bool
	origin    int64 // inputs: where consumption started (the committed or the reset offset), -1 unknown
	held      bool  // inputs: fetching paused because the application holds enough of its records (Hold)
	// rewinds counts the rewinds of an input (RewindTo): records handed out before the last one are
	// stale, and the batch they came in moves the partition no more.
	rewinds uint64
}

// New returns a Consumer over the user's client cl, which must be built for direct consumption
// (ErrGroupClient otherwise) and should be built with kgo.ConsumeResetOffset(kgo.NoResetOffset()),
// so that a position out of range is the Consumer's to move (an input to WithResetOffset, a
// changelog to its first offset) rather than the client's, for the topology topo, reading committed offsets through committer
// (a *commit.Committer bound to the member). A topology with a topic of two subtopologies is a
// *tasks.SharedTopicError.
func New(cl *kgo.Client, topo *topology.Topology, committer OffsetCommitter, opts ...Option) (*Consumer, error) {
	if cl == nil {
		return nil, errors.New("consume: a *kgo.Client is required")
	}
	if g, _ := cl.OptValue(kgo.ConsumerGroup).(string); g != "" {
		return nil, ErrGroupClient
	}
	if g, _ := cl.OptValue(kgo.ShareGroup).(string); g != "" {
		return nil, ErrGroupClient
	}
	if re, _ := cl.OptValue(kgo.ConsumeRegex).(bool); re {
		return nil, ErrGroupClient
	}
	if ts, _ := cl.OptValue(kgo.ConsumeTopics).([]string); len(ts) > 0 {
		return nil, ErrGroupClient
	}
	if ps, _ := cl.OptValue(kgo.ConsumePartitions).(map[string]map[int32]kgo.Offset); len(ps) > 0 {
		return nil, ErrGroupClient
	}
	return newConsumer(cl, listoffsets.Lister{Admin: kadm.NewClient(cl)}, topo, committer, opts...)
}

func newConsumer(cl client, l lister, topo *topology.Topology, committer OffsetCommitter, opts ...Option) (*Consumer, error) {
	if topo == nil {
		return nil, errors.New("consume: the topology is required")
	}
	if committer == nil {
		return nil, errors.New("consume: a committer (*commit.Committer) is required")
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	o := options{reset: kgo.NewOffset().AtStart(), logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return &Consumer{
		cl: cl, list: l, router: router, commits: committer, o: o, log: o.logger,
		sem:   semaphore.NewWeighted(maxReaders),
		polls: make(map[*int]context.CancelFunc),
		tasks: make(map[tasks.ID]*task),
		byTP:  make(map[tasks.TopicPartition]*part),
	}, nil
}

// ---- the processing lock ----

// lockCallback waits until no Batch is out and keeps new ones from going out, waking up polls that
// wait on the network.
func (c *Consumer) lockCallback(ctx context.Context) error {
	c.pollMu.Lock()
	if c.writers == 0 {
		c.idle = make(chan struct{})
	}
	c.writers++
	for _, cancel := range c.polls {
		cancel()
	}
	c.pollMu.Unlock()
	err := c.sem.Acquire(ctx, maxReaders)
	c.pollMu.Lock()
	c.writers--
	if c.writers == 0 {
		close(c.idle)
	}
	c.pollMu.Unlock()
	if err != nil {
		return fmt.Errorf("consume: waiting for the batch out to be done: %w", err)
	}
	return nil
}

func (c *Consumer) unlockCallback() { c.sem.Release(maxReaders) }

// Poll waits for records of the owned tasks and returns them as a Batch, or ctx's error, or
// ErrClosed. Call Done on the Batch once its records are applied and processed; until then listener
// callbacks wait. Do not call Poll or CommitProcessed while holding a Batch, nor from a callback.
func (c *Consumer) Poll(ctx context.Context) (*Batch, error) {
	for {
		c.resolveResets(ctx)
		if err := c.acquire(ctx); err != nil {
			return nil, err
		}
		pctx, cancel := context.WithCancel(ctx)
		key := new(int)
		c.polls[key] = cancel
		c.pollMu.Unlock()

		fetches := c.cl.PollFetches(pctx)

		c.pollMu.Lock()
		delete(c.polls, key)
		c.pollMu.Unlock()
		cancel()
		if fetches.IsClientClosed() {
			c.sem.Release(1)
			return nil, ErrClosed
		}
		if b := c.route(fetches); !b.empty() {
			b.c = c
			return b, nil
		}
		c.sem.Release(1)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// acquire takes the batch's hold on the callbacks, letting a callback that waits go first; on
// success c.pollMu is held.
func (c *Consumer) acquire(ctx context.Context) error {
	for {
		if err := c.sem.Acquire(ctx, 1); err != nil {
			return err
		}
		c.pollMu.Lock()
		if c.writers == 0 {
			return nil
		}
		// A callback is waiting for the lock: let it go first.
		idle := c.idle
		c.pollMu.Unlock()
		c.sem.Release(1)
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Turn returns a Batch without records: the application's turn to process records it kept
// (Batch.Keep) while no callback runs, as if a poll had brought some. Call Done on it.
func (c *Consumer) Turn(ctx context.Context) (*Batch, error) {
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	c.pollMu.Unlock()
	return &Batch{c: c}, nil
}

// ---- batches ----

// Records are records of one partition of one task, in offset order.
type Records struct {
	// Task is the task the records belong to.
	Task tasks.ID
	// Role is the task's role when the records were handed out. Restore records with Role Active
	// belong to a task that is restoring before it processes.
	Role Role
	// Partition is the input or changelog partition the records come from.
	Partition tasks.TopicPartition
	// HighWatermark is the partition's high watermark in the fetch answer, LastStable its last
	// stable offset (where a read_committed reader's records end).
	HighWatermark, LastStable int64
	// Records are the records, in offset order. Transaction markers (control records, which a
	// client built with kgo.KeepControlRecords returns) are left out, so Records may be empty when a
	// fetch held only markers.
	Records []*kgo.Record
	// First is the offset of the first record fetched (a marker or a record), Next the offset after
	// the last one: where the partition's position goes once the batch is done.
	First, Next int64

	// rewinds is the partition's rewind count when the records were handed out: a rewind while
	// the batch is out (RewindTo) outranks what the batch's Done or Yield would say of them.
	rewinds uint64
}

// Batch is what one Poll returned. Apply Restore to the tasks' stores and process Process, then call
// Done. Records of one task may come in both lists only in different batches.
type Batch struct {
	// Restore holds changelog records: for active tasks that are restoring and for standby and
	// warm-up tasks.
	Restore []Records
	// Process holds input records of active tasks that are processing.
	Process []Records
	// Errors holds fetch errors (the client retries what can be retried; see kgo.FetchError).
	Errors []kgo.FetchError
	// Corrupted holds changelog partitions whose position was out of range (records deleted under
	// it): the store they feed lacks what was deleted, so it must be wiped before the changelog's
	// records come again from its first offset (Kafka Streams' task corruption). Records is empty.
	Corrupted []Records

	c    *Consumer
	done atomic.Bool
	// kept are the input partitions whose records the application keeps (Keep).
	kept map[tasks.TopicPartition]bool
}

// Keep says the application keeps the batch's records of input partition tp beyond the batch (a
// task with several inputs holds them to process in timestamp order): Done, DoneBefore and Yield
// leave tp's position alone, and the application moves it with Advance as it processes them. They
// are not handed out again.
func (b *Batch) Keep(tp tasks.TopicPartition) {
	if b.kept == nil {
		b.kept = make(map[tasks.TopicPartition]bool)
	}
	b.kept[tp] = true
}

func (b *Batch) empty() bool {
	return len(b.Restore)+len(b.Process)+len(b.Errors)+len(b.Corrupted) == 0
}

// route sorts fetched records by task, dropping those of partitions no longer wanted.
func (c *Consumer) route(fetches kgo.Fetches) *Batch {
	b := &Batch{}
	var outOfRange []tasks.TopicPartition
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		if errors.Is(err, kerr.OffsetOutOfRange) {
			outOfRange = append(outOfRange, tasks.TopicPartition{Topic: topic, Partition: p})
			return
		}
		b.Errors = append(b.Errors, kgo.FetchError{Topic: topic, Partition: p, Err: err})
	})
	rewind := make(map[string]map[int32]kgo.EpochOffset)
	var ops clientOps
	c.mu.Lock()
	for _, r := range c.corrupt {
		// Still held here (its changelog may be read to its end already): its store is wiped before
		// any more of its records come.
		if c.tasks[r.Task] != nil {
			b.Corrupted = append(b.Corrupted, r)
		}
	}
	c.corrupt = nil
	b.Corrupted = append(b.Corrupted, c.resetOutOfRange(outOfRange, &ops)...)
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		tp := tasks.TopicPartition{Topic: fp.Topic, Partition: fp.Partition}
		p := c.byTP[tp]
		if p == nil {
			return // not consumed any more: revoked, lost, or a restored task's changelog
		}
		t := c.tasks[p.task]
		recs := fp.Records
		// Drop what was handed out already (a refetch). An unknown handed (-1) is below every offset.
		for len(recs) > 0 && recs[0].Offset < p.handed {
			recs = recs[1:]
		}
		replica := t.role != Active || t.restoring
		if p.kind == tasks.Changelog && replica {
			p.end = max(p.end, fp.HighWatermark)
		}
		if len(recs) == 0 {
			return
		}
		first, next := recs[0].Offset, recs[len(recs)-1].Offset+1
		p.resetting = false
		if p.origin < 0 {
			p.origin = first // the reset offset, resolved
		}
		data := dropControl(recs)
		switch {
		case p.kind == tasks.Input && !replica && !t.stopped:
			b.Process = append(b.Process, Records{Task: t.id, Role: Active, Partition: tp, HighWatermark: fp.HighWatermark, LastStable: fp.LastStableOffset, Records: data, First: first, Next: next, rewinds: p.rewinds})
		case p.kind == tasks.Changelog && replica && !t.stopped:
			b.Restore = append(b.Restore, Records{Task: t.id, Role: t.role, Partition: tp, HighWatermark: fp.HighWatermark, Records: data, First: first, Next: next})
		case p.kind == tasks.Input:
			// An input of a task that is restoring (a fetch that raced the pause): fetch these again.
			if rewind[tp.Topic] == nil {
				rewind[tp.Topic] = make(map[int32]kgo.EpochOffset)
			}
			rewind[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: first}
			return
		default:
			return // the changelog of a task that processes now: being dropped
		}
		p.handed = next
	})
	c.mu.Unlock()
	ops.run(c.cl)
	if len(rewind) > 0 {
		c.cl.SetOffsets(rewind)
	}
	return b
}

// resolveResets lists the first offsets of changelogs moved there after their position was out of
// range, and moves each that got no record since to it: a changelog whose records were all deleted
// has none to hand out, and its task would otherwise restore for ever. A failed listing is retried
// at the next Poll. Called by Poll; what it changes it changes under c.mu, re-checking that each
// partition is still consumed.
func (c *Consumer) resolveResets(ctx context.Context) {
	c.mu.Lock()
	var topics []string
	for _, p := range c.byTP {
		if p.resetting {
			topics = append(topics, p.tp.Topic)
		}
	}
	c.mu.Unlock()
	if len(topics) == 0 {
		return
	}
	slices.Sort(topics)
	start, _, err := c.list.Bounds(ctx, slices.Compact(topics))
	if err != nil {
		c.log.Warn("listing the first offsets of reset changelogs failed; retrying", "err", err)
		return
	}
	ops := &clientOps{}
	c.mu.Lock()
	for tp, p := range c.byTP {
		first, ok := start[tp]
		if !p.resetting || !ok { // a record since would have cleared resetting
			continue
		}
		p.resetting = false
		p.handed, p.done = first, first
		if t := c.tasks[p.task]; t != nil && t.role == Active && t.restoring && t.caughtUp() {
			c.finishRestore(t, ops)
		}
	}
	c.mu.Unlock()
	ops.run(c.cl)
}

// resetOutOfRange moves the partitions whose position is out of range (the records there were
// deleted: retention, or DeleteRecords) to where Kafka Streams moves them: an input to
// auto.offset.reset (the reset offset), a changelog to its first offset, returned as corrupted (its
// store must be wiped, then it restores what the changelog still holds). The client is built to
// report such a position rather than to reset it itself (kgo.ConsumeResetOffset(kgo.NoResetOffset())),
// since it cannot tell inputs from changelogs. Called with c.mu held.
func (c *Consumer) resetOutOfRange(tps []tasks.TopicPartition, ops *clientOps) (corrupted []Records) {
	for _, tp := range tps {
		p := c.byTP[tp]
		if p == nil {
			continue // not consumed any more
		}
		to, what := c.o.reset, "auto.offset.reset"
		if p.kind == tasks.Changelog {
			to, what = kgo.NewOffset().AtStart(), "the changelog's first offset"
		}
		c.log.Warn("a position is out of range (its records were deleted); going on from "+what,
			"task", p.task.String(), "topic", tp.Topic, "partition", tp.Partition, "position", p.handed)
		p.handed = -1 // the reset offset, resolved by the client
		p.resetting = p.kind == tasks.Changelog
		ops.remove = append(ops.remove, tp)
		ops.addAt(tp, to)
		if p.kind == tasks.Changelog {
			t := c.tasks[p.task]
			corrupted = append(corrupted, Records{Task: t.id, Role: t.role, Partition: tp})
		}
	}
	return corrupted
}

// dropControl returns recs without transaction markers, in place when there are none.
func dropControl(recs []*kgo.Record) []*kgo.Record {
	for i, r := range recs {
		if r.Attrs.IsControl() {
			out := append([]*kgo.Record(nil), recs[:i]...)
			for _, r := range recs[i+1:] {
				if !r.Attrs.IsControl() {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return recs
}

// Done marks the batch's records applied and processed: positions move, restorations that reached
// their end offsets finish (the task's inputs resume), and callbacks waiting for the batch go on.
// Calling it again does nothing.
func (b *Batch) Done() { b.DoneBefore(nil) }

// DoneBefore is Done for a batch whose processing stopped part-way: for each input partition tp in
// unprocessed, the records at or after offset unprocessed[tp] were not processed, so that
// partition's position (what Processed reports and CommitProcessed commits) stops at that offset.
// Those records are not handed out again by this Consumer; an application that stops processing
// after a failure leaves them to the task's next owner, which starts from the committed position.
// Calling Done or DoneBefore again does nothing.
func (b *Batch) DoneBefore(unprocessed map[tasks.TopicPartition]int64) {
	if b == nil || b.c == nil || !b.done.CompareAndSwap(false, true) {
		return
	}
	c := b.c
	ops := &clientOps{}
	c.mu.Lock()
	for _, r := range b.Process {
		p := c.byTP[r.Partition]
		if p == nil || p.task != r.Task || b.kept[r.Partition] || p.rewinds != r.rewinds {
			continue // not consumed here any more, kept, or rewound while the batch was out
		}
		next := r.Next
		if stop, ok := unprocessed[r.Partition]; ok {
			if stop <= r.First && p.done >= 0 {
				// Nothing of the batch's records processed: a known position stays where it was,
				// which may lie before them (records the application keeps in a queue, Advance).
				continue
			}
			next = min(max(stop, r.First), r.Next) // the stop, within the batch's records
		}
		p.done = max(p.done, next)
	}
	touched := make(map[tasks.ID]bool)
	for _, r := range b.Corrupted {
		// Wiped: a changelog found corrupted at its assignment restores from its first offset.
		if p := c.byTP[r.Partition]; p != nil && p.task == r.Task && p.done < 0 {
			p.done = p.handed
			touched[r.Task] = true
		}
	}
	for _, r := range b.Restore {
		if p := c.byTP[r.Partition]; p != nil && p.task == r.Task {
			p.done = r.Next
			touched[r.Task] = true
		}
	}
	for id := range touched {
		if t := c.tasks[id]; t != nil && t.role == Active && t.restoring && t.caughtUp() {
			c.finishRestore(t, ops)
		}
	}
	c.mu.Unlock()
	ops.run(c.cl)
	c.sem.Release(1)
}

// Yield is DoneBefore for a batch whose processing paused part-way without failing (the
// application commits first, as Kafka Streams commits between iterations when commit.interval.ms
// has passed): for each input partition tp in unprocessed, the records at or after offset
// unprocessed[tp] were not processed, and this Consumer fetches and hands them out again from
// there. Calling Done, DoneBefore or Yield again does nothing.
func (b *Batch) Yield(unprocessed map[tasks.TopicPartition]int64) {
	if b == nil || b.c == nil || b.done.Load() {
		return
	}
	c := b.c
	set := make(map[string]map[int32]kgo.EpochOffset)
	c.mu.Lock()
	for _, r := range b.Process {
		p := c.byTP[r.Partition]
		stop, ok := unprocessed[r.Partition]
		if p == nil || p.task != r.Task || !ok || stop >= r.Next || b.kept[r.Partition] || p.rewinds != r.rewinds {
			// A partition rewound while the batch was out (a commit made meanwhile aborted) is
			// fetched from where the rewind put it: going back only to the batch's records would
			// skip those between the two, and the next commit would commit over them.
			continue
		}
		stop = max(stop, r.First)
		p.handed = stop // fetched and handed out again
		if set[r.Partition.Topic] == nil {
			set[r.Partition.Topic] = make(map[int32]kgo.EpochOffset)
		}
		set[r.Partition.Topic][r.Partition.Partition] = kgo.EpochOffset{Epoch: -1, Offset: stop}
	}
	c.mu.Unlock()
	// Before the batch goes back: no callback runs while it is out, so the partitions are still
	// this Consumer's (SetOffsets also drops what was fetched past them meanwhile).
	if len(set) > 0 {
		c.cl.SetOffsets(set)
	}
	b.DoneBefore(unprocessed)
}

// ---- positions ----

// Advance moves the positions of input partitions whose records the application kept (Batch.Keep):
// positions[tp] is the offset after the last record of tp processed. A position never moves back,
// and partitions of tasks no longer active here are left alone.
func (c *Consumer) Advance(positions map[tasks.TopicPartition]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tp, next := range positions {
		if p := c.activeInput(tp); p != nil {
			p.done = max(p.done, next)
		}
	}
}

// Position is the offset of the next record of input partition tp to be fetched (-1: the reset
// offset, not resolved yet, or not an active input here).
func (c *Consumer) Position(tp tasks.TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.activeInput(tp); p != nil {
		return p.handed
	}
	return -1
}

// Hold pauses (hold) or resumes fetching input partition tp: the application holds as many of its
// records as it may (buffered.records.per.partition) and fetches more once it processed some.
func (c *Consumer) Hold(tp tasks.TopicPartition, hold bool) {
	c.mu.Lock()
	p := c.activeInput(tp)
	if p == nil || p.held == hold {
		c.mu.Unlock()
		return
	}
	p.held = hold
	c.mu.Unlock()
	if hold {
		c.cl.PauseFetchPartitions(tasks.Group([]tasks.TopicPartition{tp}))
	} else {
		c.cl.ResumeFetchPartitions(tasks.Group([]tasks.TopicPartition{tp}))
	}
}

// activeInput is tp's part when it is an input of an active task consumed now. Called with c.mu
// held.
func (c *Consumer) activeInput(tp tasks.TopicPartition) *part {
	p := c.byTP[tp]
	if p == nil || p.kind != tasks.Input {
		return nil
	}
	if t := c.tasks[p.task]; t == nil || t.role != Active || t.stopped {
		return nil
	}
	return p
}

// Processed returns the positions of the input partitions of the active tasks in s: for each, the
// offset after the last record processed (Batch.Done), or where consumption started when nothing
// was processed yet; partitions with neither are left out. Inside OnTasksRevoked, after the
// Consumer stopped the revoked tasks, their positions are final: commit.OnRevoke commits them.
func (c *Consumer) Processed(s tasks.Set) commit.Offsets {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := commit.Offsets{}
	for id := range s.All() {
		t := c.tasks[id]
		if t == nil || t.role != Active {
			continue
		}
		for tp, p := range t.parts {
			if p.kind == tasks.Input && p.done >= 0 {
				out[tp] = p.done
			}
		}
	}
	return out
}

// CommitProcessed commits the positions of every active task's inputs that moved since they were
// last committed here (a periodic commit). Make what the records produced durable first (flush).
// Partitions whose tasks the member does not own at the moment of the commit (a revocation or an
// assignment in progress) are left for the next time. Call it between batches, not from a callback.
func (c *Consumer) CommitProcessed(ctx context.Context) error {
	if err := c.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	defer c.sem.Release(1)
	return c.CommitUncommitted(ctx, c.commits.Commit)
}

// CommitUncommitted commits, with commitFn, the positions that moved since they were last committed
// (an exactly-once runtime passes a transactional commit), retrying once without the partitions
// that commitFn refused as not owned, and records what was committed. Call it between batches or
// inside a callback, never while holding a Batch.
func (c *Consumer) CommitUncommitted(ctx context.Context, commitFn func(context.Context, commit.Offsets) error) error {
	offs := c.Uncommitted()
	if len(offs) == 0 {
		return nil
	}
	err := commitFn(ctx, offs)
	var no *commit.NotOwnedError
	if errors.As(err, &no) {
		for _, tp := range no.Partitions {
			delete(offs, tp)
		}
		err = nil
		if len(offs) > 0 {
			err = commitFn(ctx, offs)
		}
	}
	if err != nil {
		return err
	}
	c.MarkCommitted(offs)
	return nil
}

// MarkCommitted records that offs were committed (by a commit the caller made itself, such as a
// transaction's), so Uncommitted leaves them out and Rewind goes back to them.
func (c *Consumer) MarkCommitted(offs commit.Offsets) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tp, o := range offs {
		if p := c.byTP[tp]; p != nil && p.kind == tasks.Input {
			p.committed = o
		}
	}
}

// Uncommitted returns the input positions of the active tasks that moved since their last commit,
// those of tasks being revoked included (their positions are final): a transaction that holds a
// task's records must hold its offsets too.
func (c *Consumer) Uncommitted() commit.Offsets {
	c.mu.Lock()
	defer c.mu.Unlock()
	offs := commit.Offsets{}
	for _, t := range c.tasks {
		if t.role != Active {
			continue
		}
		for tp, p := range t.parts {
			if p.kind == tasks.Input && p.done >= 0 && p.done != p.committed {
				offs[tp] = p.done
			}
		}
	}
	return offs
}

// Rewind moves the inputs of every active task back to their last committed positions (or to where
// consumption started, when nothing was committed yet) and fetches them again from there: the work
// since the last commit was undone (an aborted transaction) and must be done again. It may be
// called while a Batch is out (a commit made before the batch's records are processed, which
// aborted): the batch's Done, DoneBefore and Yield then leave the rewound partitions where the
// rewind put them.
func (c *Consumer) Rewind() {
	c.mu.Lock()
	to := commit.Offsets{}
	for _, t := range c.tasks {
		for tp, p := range t.parts {
			if p.kind == tasks.Input && p.committed >= 0 {
				to[tp] = p.committed
			}
		}
	}
	c.mu.Unlock()
	c.RewindTo(to)
}

// RewindTo is Rewind for an application that keeps its own committed positions (the stream
// runtime's machine): every active task's input partition goes back to to[tp], or, when to has no
// offset for it (never committed), to where its consumption started, and is fetched again from
// there. What the Consumer reports as processed goes back with it. Like Rewind, it outranks a Batch
// that is out.
func (c *Consumer) RewindTo(to commit.Offsets) {
	set := make(map[string]map[int32]kgo.EpochOffset)
	c.mu.Lock()
	for _, t := range c.tasks {
		if t.role != Active {
			continue
		}
		for tp, p := range t.parts {
			if p.kind != tasks.Input {
				continue
			}
			back, ok := to[tp]
			if !ok {
				back = p.origin
			}
			if back < 0 || p.done == back && p.handed == back {
				continue
			}
			p.handed, p.done = back, back
			p.rewinds++
			if c.byTP[tp] == p {
				if set[tp.Topic] == nil {
					set[tp.Topic] = make(map[int32]kgo.EpochOffset)
				}
				set[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: back}
			}
		}
	}
	c.mu.Unlock()
	if len(set) > 0 {
		c.cl.SetOffsets(set)
	}
}

// ---- task offsets ----

// ChangelogPosition implements taskoffsets.Stores: for changelog partition tp of a task whose
// stores the Consumer feeds (a standby, a warm-up or a restoring active task), the next offset the
// store applies (where it started, then the end of the last Restore batch Done) and the largest
// high watermark seen for tp in fetches; -1 for either when unknown or not fed.
func (c *Consumer) ChangelogPosition(tp tasks.TopicPartition) (next, end int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, _, _ := c.router.Task(tp.Topic, tp.Partition) // a partition of no task: no task held
	if t := c.tasks[id]; t != nil {
		if p := t.parts[tp]; p != nil && p.kind == tasks.Changelog {
			return p.done, p.end
		}
	}
	return -1, -1
}

// Processing implements taskoffsets.Stores: whether id is an active task that has restored its
// stores (one being revoked included).
func (c *Consumer) Processing(id tasks.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tasks[id]
	return t != nil && t.role == Active && !t.restoring
}

// ---- client operations ----

// clientOps are changes to what the client consumes, made after the Consumer's state changed:
// pauses first (so an added partition of a restoring task is never fetched), then removals, adds,
// and resumes.
type clientOps struct {
	pause, remove, resume []tasks.TopicPartition
	add                   map[string]map[int32]kgo.Offset
}

func (o *clientOps) addAt(tp tasks.TopicPartition, off kgo.Offset) {
	if o.add == nil {
		o.add = make(map[string]map[int32]kgo.Offset)
	}
	if o.add[tp.Topic] == nil {
		o.add[tp.Topic] = make(map[int32]kgo.Offset)
	}
	o.add[tp.Topic][tp.Partition] = off
}

// drop stops consuming tp: a partition about to be added is simply not added.
func (o *clientOps) drop(tp tasks.TopicPartition) {
	if ps := o.add[tp.Topic]; ps != nil {
		if _, ok := ps[tp.Partition]; ok {
			delete(ps, tp.Partition)
			if len(ps) == 0 {
				delete(o.add, tp.Topic)
			}
			return
		}
	}
	o.remove = append(o.remove, tp)
}

func (o *clientOps) run(cl client) {
	if len(o.pause) > 0 {
		cl.PauseFetchPartitions(tasks.Group(o.pause))
	}
	if len(o.remove) > 0 {
		cl.RemoveConsumePartitions(tasks.Group(o.remove))
	}
	if len(o.add) > 0 {
		cl.AddConsumePartitions(o.add)
	}
	if len(o.resume) > 0 {
		cl.ResumeFetchPartitions(tasks.Group(o.resume))
	}
}

// Restoring returns the active tasks whose stores are still being restored from their changelogs
// (their inputs are paused). A task leaves the set when its changelogs reached the end offsets they
// had at its assignment; from then on its input records come in Process.
func (c *Consumer) Restoring() tasks.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []tasks.ID
	for id, t := range c.tasks {
		if t.role == Active && t.restoring {
			ids = append(ids, id)
		}
	}
	return tasks.NewSet(ids...)
}

// HasCommitted reports whether active task id has a committed position for any of its inputs (read
// when it was assigned, or committed since). A stateful task without one whose stores hold data is
// the sign of a group whose offsets were deleted while its changelogs were kept: its inputs are
// read again from auto.offset.reset, on top of the state they already built.
func (c *Consumer) HasCommitted(id tasks.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tasks[id]
	if t == nil || t.role != Active {
		return false
	}
	for _, p := range t.parts {
		if p.kind == tasks.Input && p.committed >= 0 {
			return true
		}
	}
	return false
}

// Active reports whether the Consumer runs id as an active task now (one being revoked included). A
// task lost (OnAllTasksLost) or revoked (once OnTasksRevoked returned) is not.
func (c *Consumer) Active(id tasks.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tasks[id]
	return t != nil && t.role == Active
}
