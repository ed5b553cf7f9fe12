package taskoffsets

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
	called chan struct{} // receives one value per call, if non-nil
}

func (l *lister) EndOffsets(ctx context.Context, topics []string) (map[tasks.TopicPartition]int64, error) {
	l.mu.Lock()
	l.calls++
	l.topics = topics
	gate, called := l.gate, l.called
	out := make(map[tasks.TopicPartition]int64)
	for k, v := range l.ends {
		out[k] = v
	}
	err := l.err
	l.mu.Unlock()
	if called != nil {
		called <- struct{}{}
	}
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

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTracker(t *testing.T, l EndLister, opts ...Option) *Tracker {
	t.Helper()
	tr, err := New(nil, testTopology(), append([]Option{WithEndLister(l), WithWait(time.Minute)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func TestTaskOffsetsSumChangelogPositionsOfTasksNotProcessing(t *testing.T) {
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
}

// TaskOffsets does not wait for a listing beyond its bound: with no wait it answers at once with
// unknown ends while the listing is still blocked, and the next call has them.
func TestTaskOffsetsDoesNotWaitForTheNetwork(t *testing.T) {
	l := &lister{ends: map[tasks.TopicPartition]int64{tp("a-changelog", 0): 8, tp("b-changelog", 0): 2}, gate: make(chan struct{}),
		called: make(chan struct{}, 4)}
	tr := newTracker(t, l, WithWait(0))
	tr.SetPosition(tp("a-changelog", 0), 1)
	tr.SetPosition(tp("b-changelog", 0), 1)
	owned := tasks.Assignment{Standby: tasks.NewSet(id("0", 0))}
	_, ends := tr.TaskOffsets(owned)
	if ends[id("0", 0)] != tasks.UnknownOffset {
		t.Fatalf("ends %v before the listing answered", ends)
	}
	<-l.called
	_, _ = tr.TaskOffsets(owned) // a listing is in flight: no second one
	close(l.gate)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ends = tr.TaskOffsets(owned)
		if ends[id("0", 0)] == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ends never arrived: %v", ends)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if l.count() != 1 {
		t.Fatalf("%d listings; one was enough", l.count())
	}
}

func TestEndsAreListedAgainAtTheInterval(t *testing.T) {
	l := &lister{ends: map[tasks.TopicPartition]int64{tp("a-changelog", 0): 8, tp("b-changelog", 0): 2}, called: make(chan struct{}, 4)}
	c := &clock{t: time.Unix(1000, 0)}
	tr := newTracker(t, l, WithInterval(30*time.Second), WithClock(c.now))
	owned := tasks.Assignment{Standby: tasks.NewSet(id("0", 0))}
	tr.TaskOffsets(owned)
	<-l.called
	c.add(29 * time.Second)
	tr.TaskOffsets(owned)
	if l.count() != 1 {
		t.Fatalf("listed again before the interval: %d", l.count())
	}
	l.mu.Lock()
	l.ends[tp("a-changelog", 0)] = 20
	l.mu.Unlock()
	c.add(time.Second)
	tr.TaskOffsets(owned)
	<-l.called
	tr.Close() // waits for the listing in flight
	if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 22 {
		t.Fatalf("ends after the second listing: %v", ends)
	}
}

func TestObservedEndsAreKeptAndFailedListingsSpaced(t *testing.T) {
	l := &lister{err: errors.New("broker away"), called: make(chan struct{}, 4)}
	c := &clock{t: time.Unix(1000, 0)}
	tr := newTracker(t, l, WithClock(c.now))
	tr.ObserveEnd(tp("a-changelog", 0), 50)
	tr.ObserveEnd(tp("a-changelog", 0), 40) // older: the larger is kept
	tr.ObserveEnd(tp("b-changelog", 0), 3)
	tr.ObserveEnd(tp("in", 0), 3) // not a changelog
	owned := tasks.Assignment{Warmup: tasks.NewSet(id("0", 0))}
	if _, ends := tr.TaskOffsets(owned); ends[id("0", 0)] != 53 {
		t.Fatalf("ends %v", ends)
	}
	<-l.called // the first listing (due: none yet), which fails
	tr.Close()
	tr2 := newTracker(t, l, WithClock(c.now))
	tr2.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 1))}) // ends missing: listed, fails
	<-l.called
	waitIdle(t, tr2)
	tr2.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 1))})
	if l.count() != 2 {
		t.Fatalf("a failed listing was retried at once: %d listings", l.count())
	}
	c.add(retryGap)
	tr2.TaskOffsets(tasks.Assignment{Warmup: tasks.NewSet(id("0", 1))})
	<-l.called
	if l.count() != 3 {
		t.Fatalf("not retried after the gap: %d", l.count())
	}
}

func waitIdle(t *testing.T, tr *Tracker) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		idle := tr.refreshing == nil
		tr.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the listing never ended")
		}
		time.Sleep(time.Millisecond)
	}
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
