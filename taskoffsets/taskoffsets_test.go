package taskoffsets

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

func testTopology() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []topology.TopicInfo{{Name: "a-changelog"}, {Name: "b-changelog"}}},
		topology.Subtopology{ID: "1", SourceTopics: []string{"other"}},
	)
}

func id(sub string, p int32) tasks.ID { return tasks.ID{Subtopology: sub, Partition: p} }

func tp(topic string, p int32) tasks.TopicPartition {
	return tasks.TopicPartition{Topic: topic, Partition: p}
}

// lister answers from ends; while gate is non-nil it waits for it (or ctx).
type lister struct {
	mu     sync.Mutex
	ends   map[tasks.TopicPartition]int64
	err    error
	calls  int
	topics []string
	gate   chan struct{}
}

func (l *lister) EndOffsets(ctx context.Context, topics []string) (map[tasks.TopicPartition]int64, error) {
	l.mu.Lock()
	l.calls++
	l.topics = topics
	gate := l.gate
	out := make(map[tasks.TopicPartition]int64)
	for k, v := range l.ends {
		out[k] = v
	}
	err := l.err
	l.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, err
}

func (l *lister) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

func newTracker(t *testing.T, l EndLister, opts ...Option) *Tracker {
	t.Helper()
	tr, err := New(nil, testTopology(), append([]Option{WithEndLister(l)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func TestTaskOffsetsSumChangelogPositionsOfTasksNotProcessing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{ends: map[tasks.TopicPartition]int64{
			tp("a-changelog", 0): 10, tp("b-changelog", 0): 5,
			tp("a-changelog", 1): 7, tp("b-changelog", 1): 0,
			tp("a-changelog", 2): 30, tp("b-changelog", 2): 30,
			tp("a-changelog", 3): 1,
		}}
		tr := newTracker(t, l)
		tr.SetPosition(tp("a-changelog", 0), 4)
		tr.SetPosition(tp("b-changelog", 0), 5)
		tr.SetPosition(tp("a-changelog", 1), 7)
		tr.SetPosition(tp("b-changelog", 1), 0)
		tr.SetPosition(tp("a-changelog", 2), 30)
		tr.SetPosition(tp("b-changelog", 2), 30)
		tr.SetProcessing(id("0", 2), true)
		// 0_3 has no position for b (never started) and no end for b: unknown sums.
		tr.SetPosition(tp("a-changelog", 3), 1)
		tr.SetPosition(tp("in", 0), 99)          // not a changelog: ignored
		tr.SetPosition(tp("a-changelog", 5), -3) // negative: ignored

		owned := tasks.Assignment{
			Active:  tasks.NewSet(id("0", 0), id("0", 2), id("1", 0)), // 0_0 restoring, 0_2 processing, 1_0 stateless
			Standby: tasks.NewSet(id("0", 1)),
			Warmup:  tasks.NewSet(id("0", 3)),
		}
		// No end known yet: the call waits for the first listing, which answers at once.
		offs, ends := tr.TaskOffsets(owned)
		wantOffs := tasks.Offsets{id("0", 0): 9, id("0", 1): 7, id("0", 3): tasks.UnknownOffset}
		wantEnds := tasks.Offsets{id("0", 0): 15, id("0", 1): 7, id("0", 3): tasks.UnknownOffset}
		if !offs.Equal(wantOffs) || !ends.Equal(wantEnds) {
			t.Fatalf("offsets %v ends %v; want %v %v", offs, ends, wantOffs, wantEnds)
		}
		if l.count() != 1 || len(l.topics) != 2 {
			t.Fatalf("listed %d times, topics %v", l.count(), l.topics)
		}
		if p, ok := tr.Position(tp("a-changelog", 0)); !ok || p != 4 {
			t.Fatalf("Position = %d %v", p, ok)
		}
		if _, ok := tr.Position(tp("in", 0)); ok {
			t.Fatal("a position was kept for an input partition")
		}
		tr.Forget(tasks.NewSet(id("0", 0), id("0", 2), id("9", 9)))
		offs, _ = tr.TaskOffsets(tasks.Assignment{Active: tasks.NewSet(id("0", 0), id("0", 2))})
		if offs[id("0", 0)] != tasks.UnknownOffset || offs[id("0", 2)] != tasks.UnknownOffset {
			t.Fatalf("forgotten tasks still have positions (or a processing flag): %v", offs)
		}
		if offs, ends := tr.TaskOffsets(tasks.Assignment{Active: tasks.NewSet(id("1", 0))}); len(offs)+len(ends) != 0 {
			t.Fatalf("stateless only: %v %v", offs, ends)
		}
	})
}

// TaskOffsets never waits for the network beyond its bound (fake time, exact): while the listing
// hangs and no end is known it answers unknown ends after maxWait, well under the member's 250 ms;
// once ends are known it answers at once, even while a listing it started hangs.
func TestTaskOffsetsNeverWaitsBeyondItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{ends: map[tasks.TopicPartition]int64{tp("a-changelog", 0): 8, tp("b-changelog", 0): 2}, gate: make(chan struct{})}
		tr := newTracker(t, l)
		tr.SetPosition(tp("a-changelog", 0), 1)
		tr.SetPosition(tp("b-changelog", 0), 1)
		owned := tasks.Assignment{Standby: tasks.NewSet(id("0", 0))}
		for i := range 2 { // the second call finds the listing in flight: no second one
			start := time.Now()
			if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != tasks.UnknownOffset || time.Since(start) != maxWait {
				t.Fatalf("call %d: ends %v after %v while the listing hangs; want unknown after %v", i, ends, time.Since(start), maxWait)
			}
		}
		if maxWait >= machine.DefaultOffsetsWait {
			t.Fatalf("maxWait %v is not under the member's wait %v", maxWait, machine.DefaultOffsetsWait)
		}
		close(l.gate)
		synctest.Wait()
		start := time.Now()
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 10 || time.Since(start) != 0 || l.count() != 1 {
			t.Fatalf("after the listing: ends %v after %v, %d listings; want 10 at once after 1", ends, time.Since(start), l.count())
		}

		// A hanging listing with ends known: the answer is what is known, at once.
		l.mu.Lock()
		l.gate, l.ends[tp("a-changelog", 0)] = make(chan struct{}), 20
		l.mu.Unlock()
		time.Sleep(retryGap)
		start = time.Now()
		_, ends := tr.TaskOffsets(owned)
		took := time.Since(start)
		synctest.Wait()
		if ends[id("0", 0)] != 10 || took != 0 || l.count() != 2 {
			t.Fatalf("listing hangs, ends known: %v after %v, %d listings; want 10 at once, a second listing started",
				ends, took, l.count())
		}
		// The listing gives up at its timeout; the next call (past the gap) lists again.
		time.Sleep(requestTimeout)
		synctest.Wait()
		_, ends = tr.TaskOffsets(owned)
		synctest.Wait()
		if ends[id("0", 0)] != 10 || l.count() != 3 {
			t.Fatalf("after a listing timed out: %v, %d listings; want 10 and a third listing", ends, l.count())
		}
		close(l.gate)
		synctest.Wait()
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 22 {
			t.Fatalf("after the third listing: %v", ends)
		}
	})
}

// The Tracker lists on no schedule of its own: end offsets are listed when the member asks for task
// offsets (every task.offset.interval.ms, which the member decides), at most once a retryGap, and
// never while nobody asks.
func TestEndsAreListedWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{ends: map[tasks.TopicPartition]int64{tp("a-changelog", 0): 8, tp("b-changelog", 0): 2}}
		tr := newTracker(t, l)
		owned := tasks.Assignment{Standby: tasks.NewSet(id("0", 0))}
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 10 || l.count() != 1 {
			t.Fatalf("first call: ends %v, %d listings", ends, l.count())
		}
		time.Sleep(time.Hour) // nobody asks: nothing is listed
		synctest.Wait()
		if l.count() != 1 {
			t.Fatalf("%d listings in an hour nobody asked; want 1 (no schedule of its own)", l.count())
		}
		l.mu.Lock()
		l.ends[tp("a-changelog", 0)] = 20
		l.mu.Unlock()
		tr.TaskOffsets(owned) // an hour after the last: lists again
		synctest.Wait()
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 22 || l.count() != 2 {
			t.Fatalf("after the second listing: ends %v, %d listings; want 22 after 2", ends, l.count())
		}
		time.Sleep(retryGap - time.Nanosecond)
		tr.TaskOffsets(owned)
		synctest.Wait()
		if l.count() != 2 {
			t.Fatalf("listed again within the gap: %d listings", l.count())
		}
		time.Sleep(time.Nanosecond)
		tr.TaskOffsets(owned)
		synctest.Wait()
		if l.count() != 3 {
			t.Fatalf("not listed again after the gap: %d listings", l.count())
		}
	})
}

func TestObservedEndsAreKeptAndFailedListingsSpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{err: errors.New("broker away")}
		tr := newTracker(t, l)
		tr.ObserveEnd(tp("a-changelog", 0), 50)
		tr.ObserveEnd(tp("a-changelog", 0), 40) // older: the larger is kept
		tr.ObserveEnd(tp("b-changelog", 0), 3)
		tr.ObserveEnd(tp("in", 0), 3) // not a changelog
		owned := tasks.Assignment{Warmup: tasks.NewSet(id("0", 0))}
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 53 {
			t.Fatalf("ends %v", ends)
		}
		synctest.Wait()
		if l.count() != 1 {
			t.Fatalf("%d listings; want the first, which fails", l.count())
		}
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 53 {
			t.Fatalf("a failed listing lost observed ends: %v", ends)
		}
		tr.Close()
		tr2 := newTracker(t, l)
		tr2.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 1))}) // ends missing: listed, fails
		synctest.Wait()
		tr2.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 1))})
		synctest.Wait()
		if l.count() != 2 {
			t.Fatalf("a failed listing was retried at once: %d listings", l.count())
		}
		time.Sleep(retryGap)
		tr2.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 1))})
		synctest.Wait()
		if l.count() != 3 {
			t.Fatalf("not retried after the gap: %d", l.count())
		}
	})
}

// Close stops a listing in flight and waits for it; TaskOffsets keeps answering, without listing.
func TestCloseStopsAListingInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{ends: map[tasks.TopicPartition]int64{tp("a-changelog", 0): 8}, gate: make(chan struct{})}
		tr := newTracker(t, l)
		tr.ObserveEnd(tp("a-changelog", 0), 5)
		tr.ObserveEnd(tp("b-changelog", 0), 1)
		owned := tasks.Assignment{Standby: tasks.NewSet(id("0", 0))}
		tr.TaskOffsets(owned)
		tr.Close() // the lister returns once its context ends
		time.Sleep(time.Hour)
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 6 || l.count() != 1 {
			t.Fatalf("after Close: ends %v, %d listings; want the observed 6 and no new listing", ends, l.count())
		}
	})
}

func TestNewChecksItsArguments(t *testing.T) {
	if _, err := New(nil, nil); err == nil {
		t.Fatal("no topology accepted")
	}
	if _, err := New(nil, testTopology()); err == nil {
		t.Fatal("neither client nor lister accepted")
	}
	shared := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"table"}, StateChangelogTopics: []topology.TopicInfo{{Name: "table"}}})
	var se *tasks.SharedTopicError
	if _, err := New(nil, shared, WithEndLister(&lister{})); !errors.As(err, &se) {
		t.Fatalf("shared topic: %v", err)
	}
}

// An end offset of 0 (an empty changelog) is an end like any other: once observed for every
// changelog of a task, TaskOffsets answers at once, without waiting for a listing (which hangs here).
func TestAnObservedEndOfZeroIsKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{gate: make(chan struct{})}
		tr := newTracker(t, l)
		defer close(l.gate)
		tr.ObserveEnd(tp("a-changelog", 0), 0)
		tr.ObserveEnd(tp("b-changelog", 0), 0)
		start := time.Now()
		_, ends := tr.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 0))})
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("TaskOffsets waited %v for a listing though both ends were observed", waited)
		}
		if e, ok := ends[id("0", 0)]; !ok || e != 0 {
			t.Fatalf("ends %v, want 0_0 at 0", ends)
		}
		tr.ObserveEnd(tp("a-changelog", 0), -1) // not an end: ignored
		if _, ends := tr.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 0))}); ends[id("0", 0)] != 0 {
			t.Fatalf("a negative end changed the ends: %v", ends)
		}
	})
}
