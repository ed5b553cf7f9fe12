// Package taskoffsets turns changelog positions into the task offsets a streams-group member
// reports to Kafka 4.4+ brokers, which place warm-up tasks with them (PROTOCOL §8).
//
// A Tracker is a membership.TaskOffsetsProvider. It keeps no position of its own: it reads where
// each state store stands in its changelog, and the high watermarks seen in fetches, from the
// Stores that feed them (a *consume.Consumer, which hands out the changelog records and learns
// which ones the application applied), when the member asks. It learns how far each changelog
// reaches from ListOffsets too. It lists on no schedule of its own: the member decides when task offsets are due (task.offset.interval.ms,
// following the broker) and asks only then, and each time it asks TaskOffsets starts a listing in
// the background (unless one is in flight or the last began less than a second ago). TaskOffsets
// never waits on the network for more than a short bound (100 ms, and only while it knows no end
// offset of a task it reports; the member waits at most 250 ms): it answers from what it knows.
//
// What is reported follows Kafka Streams: per stateful task, the sum of its changelog positions and
// the sum of its changelog end offsets (tasks.SumOffsets), for standby and warm-up tasks and for
// active tasks that are restoring. An active task that is processing reports nothing (the broker
// reads a reported offset of an active task as "still restoring"), nor does a stateless task.
package taskoffsets

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/internal/listoffsets"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

const (
	// maxWait is how long TaskOffsets waits for a listing when it knows no end offset of a task it
	// reports: well under the member's 250 ms.
	maxWait = 100 * time.Millisecond
	// requestTimeout bounds one listing.
	requestTimeout = 10 * time.Second
	// retryGap is the least time between the starts of two listings.
	retryGap = time.Second
)

// Stores says where the state stores of the tasks a member holds stand in their changelogs. A
// *consume.Consumer is one (it feeds the stores and learns which records they applied); an
// application that feeds its stores by other means implements it. The Tracker calls it from the
// member's goroutine for task offsets, so it must be safe for concurrent use and must not block.
type Stores interface {
	// ChangelogPosition returns, for changelog partition tp, the next offset the store it feeds
	// applies (the last applied offset + 1, or where restoring starts) and the largest end offset
	// (high watermark) seen for tp in fetches. Either is -1 when unknown: no held task's store is
	// fed from tp, or nothing was fetched yet.
	ChangelogPosition(tp tasks.TopicPartition) (next, end int64)
	// Processing reports whether task id is active and has restored its stores: such a task reports
	// no task offsets.
	Processing(id tasks.ID) bool
}

// EndLister lists the end offsets (high watermarks) of every partition of some topics.
type EndLister interface {
	EndOffsets(ctx context.Context, topics []string) (map[tasks.TopicPartition]int64, error)
}

// adminLister is the EndLister of a real client: the partitions it could not list are left out
// (their tasks report no end offset until a later listing has them).
type adminLister struct{ listoffsets.Lister }

func (l adminLister) EndOffsets(ctx context.Context, topics []string) (map[tasks.TopicPartition]int64, error) {
	ends, _, err := l.Ends(ctx, topics)
	return ends, err
}

// Option wires a collaborator into a Tracker.
type Option func(*Tracker)

// WithEndLister replaces the ListOffsets listing (tests, or applications with their own admin).
func WithEndLister(l EndLister) Option { return func(t *Tracker) { t.list = l } }

// Tracker reports task offsets from the positions its Stores know and the end offsets it lists. It
// is safe for concurrent use. Close it when the member is closed.
type Tracker struct {
	router *tasks.Router
	stores Stores
	list   EndLister

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	ends        map[tasks.TopicPartition]int64 // changelog partition → listed end offset
	attemptedAt time.Time                      // when the last listing started
	refreshing  chan struct{}                  // closed when the listing in flight ends; nil when none
}

// New returns a Tracker for the topology's changelogs, reading positions from stores and listing
// end offsets through cl (the user's *kgo.Client; may be nil with WithEndLister). A topology with a
// topic used by two subtopologies is a *tasks.SharedTopicError.
func New(cl *kgo.Client, topo *topology.Topology, stores Stores, opts ...Option) (*Tracker, error) {
	if topo == nil {
		return nil, errors.New("taskoffsets: the topology is required")
	}
	if stores == nil {
		return nil, errors.New("taskoffsets: the Stores (a *consume.Consumer) are required")
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		return nil, err
	}
	t := &Tracker{router: router, stores: stores, ends: make(map[tasks.TopicPartition]int64)}
	if cl != nil {
		t.list = adminLister{listoffsets.Lister{Admin: kadm.NewClient(cl)}}
	}
	for _, o := range opts {
		o(t)
	}
	if t.list == nil {
		return nil, errors.New("taskoffsets: a *kgo.Client or an EndLister is required")
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// TaskOffsets implements membership.TaskOffsetsProvider: the offset sums and end offset sums of the
// owned stateful tasks that are not processing. A part that is not known makes the sum
// tasks.UnknownOffset; a part's end is the larger of the last listed and the largest seen in
// fetches. It starts a listing of end offsets in the background (none while one is in flight, nor
// within a second of the last one's start), for the next call, and returns at once with what it
// knows, except that it waits up to 100 ms for a listing in flight when an end offset of a task it
// reports is not known at all.
func (t *Tracker) TaskOffsets(owned tasks.Assignment) (offsets, ends tasks.Offsets) {
	var report []taskPositions
	for id := range owned.All().All() {
		if !t.router.Stateful(id) || (owned.Active.Contains(id) && t.stores.Processing(id)) {
			continue
		}
		cls, _ := t.router.Changelogs(id)
		r := taskPositions{id: id, cls: cls, next: make([]int64, len(cls)), end: make([]int64, len(cls))}
		for i, tp := range cls {
			r.next[i], r.end[i] = t.stores.ChangelogPosition(tp)
		}
		report = append(report, r)
	}
	if len(report) == 0 {
		return tasks.Offsets{}, tasks.Offsets{}
	}
	if done := t.maybeRefresh(report); done != nil {
		timer := time.NewTimer(maxWait)
		select {
		case <-done:
		case <-timer.C:
		}
		timer.Stop()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	offsets, ends = make(tasks.Offsets, len(report)), make(tasks.Offsets, len(report))
	for _, r := range report {
		for i, tp := range r.cls {
			r.end[i] = t.endOf(tp, r.end[i])
		}
		offsets[r.id], ends[r.id] = tasks.SumOffsets(r.next...), tasks.SumOffsets(r.end...)
	}
	return offsets, ends
}

// taskPositions is what the Stores said of one task's changelogs, in the router's order.
type taskPositions struct {
	id        tasks.ID
	cls       []tasks.TopicPartition
	next, end []int64 // -1: unknown
}

// endOf is changelog partition tp's end: the larger of the listed one and seen (-1: unknown).
// Called with t.mu held.
func (t *Tracker) endOf(tp tasks.TopicPartition, seen int64) int64 {
	if listed, ok := t.ends[tp]; ok {
		return max(listed, seen)
	}
	return seen
}

// maybeRefresh starts a listing unless one is in flight or the last started less than retryGap ago.
// It returns a channel to wait on when some end the report needs is missing and a listing is under way.
func (t *Tracker) maybeRefresh(report []taskPositions) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	missing := false
	for _, r := range report {
		for i, tp := range r.cls {
			if t.endOf(tp, r.end[i]) < 0 {
				missing = true
			}
		}
	}
	if t.refreshing == nil && (t.attemptedAt.IsZero() || now.Sub(t.attemptedAt) >= retryGap) {
		t.startRefresh(now)
	}
	if missing {
		return t.refreshing
	}
	return nil
}

// startRefresh lists the end offsets of every changelog topic of the topology (the few the member
// may report), in the background. Called with t.mu held.
func (t *Tracker) startRefresh(now time.Time) {
	if t.ctx.Err() != nil {
		return
	}
	done := make(chan struct{})
	t.refreshing, t.attemptedAt = done, now
	topics := t.router.ChangelogTopics()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		ctx, cancel := context.WithTimeout(t.ctx, requestTimeout)
		defer cancel()
		listed, err := t.list.EndOffsets(ctx, topics)
		t.mu.Lock()
		if err == nil {
			for tp, end := range listed {
				if _, kind, ok := t.router.Task(tp.Topic, tp.Partition); ok && kind == tasks.Changelog && end >= 0 {
					t.ends[tp] = end
				}
			}
		}
		t.refreshing = nil
		t.mu.Unlock()
		close(done)
	}()
}

// Close stops a listing in flight and waits for it. TaskOffsets keeps answering from what is known.
func (t *Tracker) Close() {
	t.cancel()
	t.wg.Wait()
}
