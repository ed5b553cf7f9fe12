// Package taskoffsets turns changelog positions into the task offsets a streams-group member
// reports to Kafka 4.4+ brokers, which place warm-up tasks with them (PROTOCOL §8).
//
// A Tracker is a membership.TaskOffsetsProvider. It learns where each state store is in its
// changelog from the application (SetPosition) or from the consume adapter, which reports the
// changelog records it handed out and the application applied; it learns how far each changelog
// reaches from ListOffsets and from high watermarks seen in fetches (ObserveEnd). It lists on no
// schedule of its own: the member decides when task offsets are due (task.offset.interval.ms,
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

// Tracker keeps changelog positions and end offsets and reports task offsets from them. It is safe
// for concurrent use. Close it when the member is closed.
type Tracker struct {
	router *tasks.Router
	list   EndLister

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	pos         map[tasks.TopicPartition]int64 // changelog partition → next offset to apply
	ends        map[tasks.TopicPartition]int64 // changelog partition → end offset
	processing  map[tasks.ID]bool
	attemptedAt time.Time     // when the last listing started
	refreshing  chan struct{} // closed when the listing in flight ends; nil when none
}

// New returns a Tracker for the topology's changelogs, listing end offsets through cl (the user's
// *kgo.Client; may be nil with WithEndLister). A topology with a topic used by two subtopologies is
// a *tasks.SharedTopicError.
func New(cl *kgo.Client, topo *topology.Topology, opts ...Option) (*Tracker, error) {
	if topo == nil {
		return nil, errors.New("taskoffsets: the topology is required")
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		return nil, err
	}
	t := &Tracker{
		router: router, pos: make(map[tasks.TopicPartition]int64), ends: make(map[tasks.TopicPartition]int64),
		processing: make(map[tasks.ID]bool),
	}
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

// SetPosition records that the store of the task owning changelog partition tp has applied every
// record before next (next = the last applied offset + 1, or where restoration starts). Partitions
// that are no changelog of the topology, and negative offsets, are ignored.
func (t *Tracker) SetPosition(tp tasks.TopicPartition, next int64) {
	if _, kind, ok := t.router.Task(tp.Topic, tp.Partition); !ok || kind != tasks.Changelog || next < 0 {
		return
	}
	t.mu.Lock()
	t.pos[tp] = next
	t.mu.Unlock()
}

// ObserveEnd records an end offset (high watermark) seen for changelog partition tp, for example in
// a fetch answer; the larger of it and the last known end is kept until the next listing.
func (t *Tracker) ObserveEnd(tp tasks.TopicPartition, end int64) {
	if _, kind, ok := t.router.Task(tp.Topic, tp.Partition); !ok || kind != tasks.Changelog || end < 0 {
		return
	}
	t.mu.Lock()
	if cur, ok := t.ends[tp]; ok {
		end = max(cur, end)
	}
	t.ends[tp] = end // an empty changelog's end, 0, is known too
	t.mu.Unlock()
}

// SetProcessing says whether active task id is processing (restored): such a task reports no offsets.
func (t *Tracker) SetProcessing(id tasks.ID, processing bool) {
	t.mu.Lock()
	if processing {
		t.processing[id] = true
	} else {
		delete(t.processing, id)
	}
	t.mu.Unlock()
}

// Forget drops what is known about the tasks' stores (their positions and processing flags): the
// application no longer holds them.
func (t *Tracker) Forget(s tasks.Set) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range s.All() {
		delete(t.processing, id)
		cls, err := t.router.Changelogs(id)
		if err != nil {
			continue
		}
		for _, tp := range cls {
			delete(t.pos, tp)
		}
	}
}

// Position returns the recorded position of changelog partition tp.
func (t *Tracker) Position(tp tasks.TopicPartition) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pos[tp]
	return p, ok
}

// TaskOffsets implements membership.TaskOffsetsProvider: the offset sums and end offset sums of the
// owned stateful tasks that are not processing. A part that is not known makes the sum
// tasks.UnknownOffset. It starts a listing of end offsets in the background (none while one is in
// flight, nor within a second of the last one's start), for the next call, and returns at once with
// what it knows, except that it waits up to 100 ms for a listing in flight when an end offset of a
// task it reports is not known at all.
func (t *Tracker) TaskOffsets(owned tasks.Assignment) (offsets, ends tasks.Offsets) {
	var report []tasks.ID
	for id := range owned.All().All() {
		if !t.router.Stateful(id) {
			continue
		}
		if owned.Active.Contains(id) && t.isProcessing(id) {
			continue
		}
		report = append(report, id)
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
	for _, id := range report {
		cls, _ := t.router.Changelogs(id)
		ps, es := make([]int64, len(cls)), make([]int64, len(cls))
		for i, tp := range cls {
			ps[i], es[i] = known(t.pos, tp), known(t.ends, tp)
		}
		offsets[id], ends[id] = tasks.SumOffsets(ps...), tasks.SumOffsets(es...)
	}
	return offsets, ends
}

func known(m map[tasks.TopicPartition]int64, tp tasks.TopicPartition) int64 {
	if v, ok := m[tp]; ok {
		return v
	}
	return -1
}

func (t *Tracker) isProcessing(id tasks.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.processing[id]
}

// maybeRefresh starts a listing unless one is in flight or the last started less than retryGap ago.
// It returns a channel to wait on when some end the report needs is missing and a listing is under way.
func (t *Tracker) maybeRefresh(report []tasks.ID) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	missing := false
	for _, id := range report {
		cls, _ := t.router.Changelogs(id)
		for _, tp := range cls {
			if _, ok := t.ends[tp]; !ok {
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
					t.ends[tp] = max(end, t.ends[tp]) // a later high watermark may have been observed meanwhile
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
