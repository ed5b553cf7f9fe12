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

// stores is the Stores of a test: positions and seen ends by partition, and the processing tasks.
type stores struct {
	mu         sync.Mutex
	next, end  map[tasks.TopicPartition]int64
	processing map[tasks.ID]bool
}

func newStores() *stores {
	return &stores{next: map[tasks.TopicPartition]int64{}, end: map[tasks.TopicPartition]int64{}, processing: map[tasks.ID]bool{}}
}

func (s *stores) ChangelogPosition(tp tasks.TopicPartition) (next, end int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, end = -1, -1
	if v, ok := s.next[tp]; ok {
		next = v
	}
	if v, ok := s.end[tp]; ok {
		end = v
	}
	return next, end
}

func (s *stores) Processing(id tasks.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.processing[id]
}

func (s *stores) set(tp tasks.TopicPartition, next int64) {
	s.mu.Lock()
	s.next[tp] = next
	s.mu.Unlock()
}

func (s *stores) seen(tp tasks.TopicPartition, end int64) {
	s.mu.Lock()
	s.end[tp] = end
	s.mu.Unlock()
}

func newTracker(t *testing.T, l EndLister) (*Tracker, *stores) {
	t.Helper()
	s := newStores()
	tr, err := New(nil, testTopology(), s, WithEndLister(l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr, s
}

func TestTaskOffsetsSumChangelogPositionsOfTasksNotProcessing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{ends: map[tasks.TopicPartition]int64{
			tp("a-changelog", 0): 10, tp("b-changelog", 0): 5,
			tp("a-changelog", 1): 7, tp("b-changelog", 1): 0,
			tp("a-changelog", 2): 30, tp("b-changelog", 2): 30,
			tp("a-changelog", 3): 1,
		}}
		tr, st := newTracker(t, l)
		st.set(tp("a-changelog", 0), 4)
		st.set(tp("b-changelog", 0), 5)
		st.set(tp("a-changelog", 1), 7)
		st.set(tp("b-changelog", 1), 0)
		st.set(tp("a-changelog", 2), 30)
		st.set(tp("b-changelog", 2), 30)
		st.processing[id("0", 2)] = true
		// 0_3 has no position for b (never started) and no end for b: unknown sums.
		st.set(tp("a-changelog", 3), 1)
		st.processing[id("0", 1)] = true // a standby is never processing: its flag is not read

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
		// The stores dropped 0_0 and 0_2 (no positions, not processing): unknown, not remembered.
		st.mu.Lock()
		clear(st.next)
		clear(st.processing)
		st.mu.Unlock()
		offs, _ = tr.TaskOffsets(tasks.Assignment{Active: tasks.NewSet(id("0", 0), id("0", 2))})
		if offs[id("0", 0)] != tasks.UnknownOffset || offs[id("0", 2)] != tasks.UnknownOffset {
			t.Fatalf("tasks the stores dropped still have positions (or a processing flag): %v", offs)
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
		tr, st := newTracker(t, l)
		st.set(tp("a-changelog", 0), 1)
		st.set(tp("b-changelog", 0), 1)
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
		tr, _ := newTracker(t, l)
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
		tr, st := newTracker(t, l)
		st.seen(tp("a-changelog", 0), 50)
		st.seen(tp("b-changelog", 0), 3)
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
		tr2, _ := newTracker(t, l)
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
		tr, st := newTracker(t, l)
		st.seen(tp("a-changelog", 0), 5)
		st.seen(tp("b-changelog", 0), 1)
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
	if _, err := New(nil, nil, newStores(), WithEndLister(&lister{})); err == nil {
		t.Fatal("no topology accepted")
	}
	if _, err := New(nil, testTopology(), nil, WithEndLister(&lister{})); err == nil {
		t.Fatal("no stores accepted")
	}
	if _, err := New(nil, testTopology(), newStores()); err == nil {
		t.Fatal("neither client nor lister accepted")
	}
	shared := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"table"}, StateChangelogTopics: []topology.TopicInfo{{Name: "table"}}})
	var se *tasks.SharedTopicError
	if _, err := New(nil, shared, newStores(), WithEndLister(&lister{})); !errors.As(err, &se) {
		t.Fatalf("shared topic: %v", err)
	}
}

// An end offset of 0 (an empty changelog) is an end like any other: once observed for every
// changelog of a task, TaskOffsets answers at once, without waiting for a listing (which hangs here).
func TestAnObservedEndOfZeroIsKnown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{gate: make(chan struct{})}
		tr, st := newTracker(t, l)
		defer close(l.gate)
		st.seen(tp("a-changelog", 0), 0)
		st.seen(tp("b-changelog", 0), 0)
		start := time.Now()
		_, ends := tr.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 0))})
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("TaskOffsets waited %v for a listing though both ends were observed", waited)
		}
		if e, ok := ends[id("0", 0)]; !ok || e != 0 {
			t.Fatalf("ends %v, want 0_0 at 0", ends)
		}
	})
}

// A changelog partition's end is the larger of the listed one and the largest the Stores saw in
// fetches, whichever is newer; a listing replaces the last one.
func TestAnEndIsTheLargerOfListedAndSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &lister{ends: map[tasks.TopicPartition]int64{tp("a-changelog", 0): 8, tp("b-changelog", 0): 2}}
		tr, st := newTracker(t, l)
		st.seen(tp("a-changelog", 0), 12) // newer than the listing
		st.seen(tp("b-changelog", 0), 1)  // older
		owned := tasks.Assignment{Standby: tasks.NewSet(id("0", 0))}
		tr.TaskOffsets(owned) // starts the listing
		synctest.Wait()
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 14 {
			t.Fatalf("ends %v; want 12 (seen) + 2 (listed)", ends)
		}
		l.mu.Lock()
		l.ends[tp("b-changelog", 0)] = 1 // the topic was recreated: the listing is believed
		l.mu.Unlock()
		time.Sleep(retryGap)
		tr.TaskOffsets(owned)
		synctest.Wait()
		if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 13 {
			t.Fatalf("ends %v after a second listing; want 12 + 1", ends)
		}
	})
}
