package consume

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// A fetch with one partition's records and one partition's error is a batch with both: neither
// cancels the other out.
func TestBatchWithRecordsAndAnErrorHandsBothOut(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	fs := fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0}})
	broken := errors.New("broken")
	fs[0].Topics = append(fs[0].Topics, kgo.FetchTopic{Topic: "gone", Partitions: []kgo.FetchPartition{{Partition: 0, Err: broken}}})
	e.cl.fetches <- fs
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {1}}) // what a dropped batch would be followed by
	b := e.poll()
	eq(t, "process", offsetsOf(b.Process), []string{"1_0 active other[0]:0"})
	if len(b.Errors) != 1 || !errors.Is(b.Errors[0].Err, broken) || b.Errors[0].Topic != "gone" {
		t.Fatalf("errors %v, want the one of gone[0]", b.Errors)
	}
	b.Done()
}

// A refetch of nothing but records handed out already, and a partition answered without records,
// hand nothing out: Poll goes on to the next fetch.
func TestRefetchOfOnlyHandedRecordsHandsNothingOut(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 0): 5}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6}})
	e.poll().Done()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6}, tp("other", 1): nil})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {7}})
	b := e.poll()
	eq(t, "process", offsetsOf(b.Process), []string{"1_0 active other[0]:7"})
	b.Done()
}

// Rewind at offset 0: a partition whose first record (from the reset offset) is 0 goes back to 0,
// not to where a later batch started; one committed at 0 goes back to 0.
func TestRewindToOffsetZero(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 1): 0}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0, 1}, tp("other", 1): {0, 1}})
	e.poll().Done()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {2, 3}})
	e.poll().Done()
	e.c.Rewind()
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[0]@0,other[1]@0"})
	if got := e.c.Processed(set("1_0", "1_1")); len(got) != 2 || got[tp("other", 0)] != 0 || got[tp("other", 1)] != 0 {
		t.Fatalf("Processed after Rewind = %v, want both at 0", got)
	}
}

// A position marked committed at 0 (by the caller's own commit) is where Rewind goes back to, even
// before anything was fetched.
func TestRewindGoesBackToAPositionMarkedCommittedAtZero(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.takeOps()
	e.c.MarkCommitted(commit.Offsets{tp("other", 0): 0})
	if !e.c.HasCommitted(tid("1_0")) {
		t.Fatal("HasCommitted after MarkCommitted at 0: false")
	}
	e.c.Rewind()
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[0]@0"})
}

// A partition committed at offset 0 counts as committed.
func TestHasCommittedAtOffsetZero(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 0): 0}
	e.assign(tasks.Assignment{Active: set("1_0")})
	if !e.c.HasCommitted(tid("1_0")) {
		t.Fatal("HasCommitted(1_0) with other[0] committed at 0: false")
	}
}

// When the only partition moved is refused as not owned, nothing is left to commit: commitFn is
// not called again with nothing.
func TestCommitUncommittedAllRefusedCommitsNothingMore(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0}})
	e.poll().Done()
	var sent []commit.Offsets
	commitFn := func(_ context.Context, o commit.Offsets) error {
		sent = append(sent, maps.Clone(o))
		return &commit.NotOwnedError{Partitions: []tasks.TopicPartition{tp("other", 0)}}
	}
	if err := e.c.CommitUncommitted(context.Background(), commitFn); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || len(sent[0]) != 1 {
		t.Fatalf("commitFn calls %v, want one, with other[0]", sent)
	}
}

// A batch that stopped at its first record, offset 0, of a partition started from the reset
// offset leaves the position at 0: moved (from unknown), so it is to be committed.
func TestUncommittedPositionZero(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0, 1}})
	e.poll().DoneBefore(map[tasks.TopicPartition]int64{tp("other", 0): 0})
	if got := e.c.Uncommitted(); len(got) != 1 || got[tp("other", 0)] != 0 {
		t.Fatalf("Uncommitted = %v, want other[0]=0", got)
	}
}

// A caught-up active task's changelog is dropped before it is added, and the standby changelog of
// the same topic added in the same assignment stays.
func TestDroppedChangelogKeepsTheOthersOfItsTopic(t *testing.T) {
	e := newEnv(t)
	e.list.end[tp(cl0, 0)], e.list.end[tp(cl0, 1)] = 0, 4 // 0_0: nothing to restore
	e.assign(tasks.Assignment{Active: set("0_0"), Standby: set("0_1")})
	eq(t, "client calls", e.cl.takeOps(), []string{"add app-st-changelog[1]@0,in[0]@start"})
}

// A failed revocation consumes again at offset 0 where the position is 0, not from the reset
// offset: a changelog restored from 0 and an input committed at 0.
func TestFailedRevocationConsumesAgainAtOffsetZero(t *testing.T) {
	e := newEnv(t, WithResetOffset(kgo.NewOffset().AtEnd()))
	e.list.end[tp(cl0, 0)] = 4
	e.commits.committed = commit.Offsets{tp("in", 0): 0}
	e.assign(tasks.Assignment{Active: set("0_0")})
	eq(t, "client calls", e.cl.takeOps(), []string{"pause in[0]", "add app-st-changelog[0]@0,in[0]@0"})
	e.app.revokeErr = errors.New("flush failed")
	if err := e.c.OnTasksRevoked(context.Background(), set("0_0")); !errors.Is(err, e.app.revokeErr) {
		t.Fatalf("got %v", err)
	}
	eq(t, "client calls", e.cl.takeOps(), []string{
		"remove app-st-changelog[0],in[0]", "resume in[0]",
		"pause in[0]", "add app-st-changelog[0]@0,in[0]@0"})
}

// logRecorder keeps the messages logged.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// "tasks revoked" is logged once a revocation of owned active tasks succeeded, and neither for a
// revocation of nothing owned nor for a failed one.
func TestRevocationLog(t *testing.T) {
	logs := &logRecorder{}
	e := newEnv(t, WithLogger(slog.New(logs)))
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	ctx := context.Background()
	if err := e.c.OnTasksRevoked(ctx, set("1_2")); err != nil {
		t.Fatal(err)
	}
	if n := logs.count("tasks revoked"); n != 0 {
		t.Fatalf("a revocation of a task not owned logged %d times", n)
	}
	e.app.revokeErr = errors.New("flush failed")
	if err := e.c.OnTasksRevoked(ctx, set("1_0")); err == nil {
		t.Fatal("the failed revocation returned nil")
	}
	if n := logs.count("tasks revoked"); n != 0 {
		t.Fatalf("a failed revocation logged %d times", n)
	}
	e.app.revokeErr = nil
	if err := e.c.OnTasksRevoked(ctx, set("1_0")); err != nil {
		t.Fatal(err)
	}
	if n := logs.count("tasks revoked"); n != 1 {
		t.Fatalf("a revocation logged %d times, want 1", n)
	}
}

// Callbacks that overlap (a caller that does not run them one at a time) each wait for the batch
// out and then run one at a time, and Poll goes on once they are all done.
func TestOverlappingCallbacksRunOneAtATime(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0}})
	b := e.poll()
	var inside, overlaps, ran atomic.Int32
	e.app.onRevoke = func(tasks.Set) {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		ran.Add(1)
		inside.Add(-1)
	}
	const n = 3
	errs := make(chan error, n)
	for range n {
		go func() { errs <- e.c.OnTasksRevoked(context.Background(), set("1_5")) }()
	}
	waitForWriters(t, e.c, n)
	if ran.Load() != 0 {
		t.Fatal("a callback ran while the batch was out")
	}
	b.Done()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if ran.Load() != n || overlaps.Load() != 0 {
		t.Fatalf("%d callbacks ran, %d overlapping, want %d one at a time", ran.Load(), overlaps.Load(), n)
	}
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {1}})
	b = e.poll()
	eq(t, "after the callbacks", offsetsOf(b.Process), []string{"1_0 active other[0]:1"})
	b.Done()
	if got := slices.Clone(e.app.calls); len(got) != 1+n {
		t.Fatalf("app calls %q", got)
	}
}

// waitForWriters waits until n callbacks are waiting for the batch out.
func waitForWriters(t *testing.T, c *Consumer, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.pollMu.Lock()
		w := c.writers
		c.pollMu.Unlock()
		if w == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callbacks waiting, want %d", w, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Active says whether a task is one of this member's active tasks: not a standby, not a warm-up,
// not a task it does not hold.
func TestActiveIsOnlyForActiveTasks(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0"), Standby: set("1_1")})
	for id, want := range map[string]bool{"1_0": true, "1_1": false, "1_2": false} {
		if got := e.c.Active(tid(id)); got != want {
			t.Errorf("Active(%s) = %v, want %v", id, got, want)
		}
	}
}

// A position out of range (its records deleted by retention or DeleteRecords) moves as Kafka
// Streams moves it: an input to auto.offset.reset (here latest), a changelog to its first offset;
// the fetch error is handled, not passed on, and the refetched records are handed out.
func TestPositionsOutOfRangeMoveAsKafkaStreamsMovesThem(t *testing.T) {
	e := newEnv(t, WithResetOffset(kgo.NewOffset().AtEnd()))
	e.commits.committed[tp("other", 0)] = 5
	e.assign(tasks.Assignment{Active: set("1_0", "1_1"), Standby: set("0_1")})
	e.cl.takeOps()
	oor := func(p int32) kgo.FetchPartition { return kgo.FetchPartition{Partition: p, Err: kerr.OffsetOutOfRange} }
	e.cl.fetches <- kgo.Fetches{{Topics: []kgo.FetchTopic{
		{Topic: "other", Partitions: []kgo.FetchPartition{oor(0),
			{Partition: 1, HighWatermark: 9, Records: []*kgo.Record{{Topic: "other", Partition: 1, Offset: 0}}}}},
		{Topic: cl0, Partitions: []kgo.FetchPartition{oor(1)}},
	}}}
	b := e.poll()
	if len(b.Errors) != 0 {
		t.Errorf("fetch errors %v: an out-of-range position is handled, not passed on", b.Errors)
	}
	eq(t, "records", offsetsOf(b.Process), []string{"1_1 active other[1]:0"})
	eq(t, "client", e.cl.takeOps(), []string{"remove app-st-changelog[1],other[0]", "add app-st-changelog[1]@start,other[0]@end"})
	// The changelog's store must be wiped before its records come again.
	if len(b.Corrupted) != 1 || b.Corrupted[0].Task != tid("0_1") || b.Corrupted[0].Role != Standby || b.Corrupted[0].Partition != tp(cl0, 1) {
		t.Errorf("corrupted %+v; want the standby 0_1's changelog", b.Corrupted)
	}
	b.Done()
	// The refetched records are handed out, whatever position came before.
	e.cl.fetches <- fetch(40, map[tasks.TopicPartition][]int64{tp("other", 0): {30, 31}})
	b = e.poll()
	eq(t, "after the reset", offsetsOf(b.Process), []string{"1_0 active other[0]:30,31"})
	b.Done()
	// A batch holding only a corrupted changelog is handed out too.
	e.cl.fetches <- kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: cl0, Partitions: []kgo.FetchPartition{oor(1)}}}}}
	b = e.poll()
	if len(b.Corrupted) != 1 || len(b.Process)+len(b.Restore) != 0 {
		t.Errorf("batch %+v", b)
	}
	b.Done()
	e.cl.takeOps()
	// A partition no longer consumed is left alone.
	e.cl.fetches <- kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "gone", Partitions: []kgo.FetchPartition{oor(0)}},
		{Topic: "other", Partitions: []kgo.FetchPartition{{Partition: 1, HighWatermark: 9, Records: []*kgo.Record{{Topic: "other", Partition: 1, Offset: 1}}}}}}}}
	b = e.poll()
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Errorf("client ops %v for a partition not consumed", ops)
	}
	b.Done()
}

// A store whose changelog's records up to its end were all deleted while it was away is wiped at
// the assignment and restored from the first offset, which is the end: the task processes at once.
// A changelog moved to its first offset while consumed (out of range) whose records were all
// deleted gets no record to say where it stands: a listing tells, and its task stops restoring.
func TestDeletedChangelogsDoNotHoldTheRestore(t *testing.T) {
	e := newEnv(t, WithChangelogStart(func(tasks.ID, tasks.TopicPartition) (int64, bool) { return 3, true }))
	e.list.start[tp(cl0, 0)], e.list.end[tp(cl0, 0)] = 9, 9
	e.list.start[tp(cl0, 1)], e.list.end[tp(cl0, 1)] = 0, 9
	e.assign(tasks.Assignment{Active: set("0_0", "0_1")})
	if r := e.c.Restoring(); !r.Contains(tid("0_0")) || !r.Contains(tid("0_1")) {
		t.Fatalf("restoring %v; want both (0_0 until its store's wipe is done)", r)
	}
	e.cl.takeOps()
	e.cl.fetches <- kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: cl0, Partitions: []kgo.FetchPartition{
		{Partition: 1, Err: kerr.OffsetOutOfRange}}}}}}
	b := e.poll()
	if len(b.Corrupted) != 2 || b.Corrupted[0].Partition != tp(cl0, 0) || b.Corrupted[1].Partition != tp(cl0, 1) {
		t.Fatalf("corrupted %+v; want changelog[0] (assignment) then changelog[1] (out of range)", b.Corrupted)
	}
	b.Done()
	// 0_0's store is wiped, and its changelog starts and ends at 9: it is restored.
	if r := e.c.Restoring(); r.Contains(tid("0_0")) || !r.Contains(tid("0_1")) {
		t.Fatalf("restoring %v after the wipe; want 0_1 only", r)
	}
	e.cl.takeOps()
	// A failed listing changes nothing, and is tried again at the next Poll.
	e.list.err, e.list.calls = errors.New("no broker"), nil
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("in", 0): {0}})
	e.poll().Done()
	if len(e.list.calls) != 1 || !e.c.Restoring().Contains(tid("0_1")) {
		t.Fatalf("after a failed listing: listings %v, restoring %v; want one, 0_1 still restoring", e.list.calls, e.c.Restoring())
	}
	e.list.err = nil
	// Every record of changelog[1] is gone: its first offset is its end. The next Poll lists it.
	e.list.start[tp(cl0, 1)] = 9
	e.list.calls = nil
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("in", 1): {0}})
	b = e.poll()
	if len(e.list.calls) != 1 || !slices.Equal(e.list.calls[0], []string{cl0}) {
		t.Fatalf("listings %v; want one of %s", e.list.calls, cl0)
	}
	if r := e.c.Restoring(); !r.IsEmpty() {
		t.Fatalf("restoring %v after the listing; want none", r)
	}
	eq(t, "client", e.cl.takeOps(), []string{"remove app-st-changelog[1]", "resume in[1]"})
	b.Done()
	// Nothing left to list.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("in", 1): {1}})
	e.poll().Done()
	if len(e.list.calls) != 1 {
		t.Fatalf("listings %v; want no more", e.list.calls)
	}
}

// Transaction markers are left out of a batch's records, whatever their place; a fetch of markers
// only hands out no record but still moves the position past them.
func TestDropControlLeavesTheMarkersOut(t *testing.T) {
	marker := func(o int64) *kgo.Record {
		return &kgo.Record{Offset: o, Attrs: kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Control: true})}
	}
	data := func(o int64) *kgo.Record { return &kgo.Record{Offset: o} }
	offsets := func(rs []*kgo.Record) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.Offset)
		}
		return out
	}
	for _, tc := range []struct {
		in   []*kgo.Record
		want []int64
	}{
		{[]*kgo.Record{data(0), marker(1), data(2), data(3)}, []int64{0, 2, 3}},
		{[]*kgo.Record{marker(0), data(1)}, []int64{1}},
		{[]*kgo.Record{data(0), data(1), marker(2)}, []int64{0, 1}},
		{[]*kgo.Record{marker(0), marker(1)}, nil},
		{[]*kgo.Record{data(5)}, []int64{5}},
	} {
		if got := offsets(dropControl(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("%v: kept %v, want %v", offsets(tc.in), got, tc.want)
		}
	}
}

// A store that stands past its changelog's end (the changelog was deleted and created again, as
// --delete-all-internal-topics does, while the store kept its data on disk) is wiped at the
// assignment and restored from the changelog's first offset: kept, its position past the end would
// make it look restored with the old data. A store at the end, or inside, is kept.
func TestStorePastItsChangelogsEndIsWiped(t *testing.T) {
	e := newEnv(t, WithChangelogStart(func(_ tasks.ID, tp tasks.TopicPartition) (int64, bool) {
		if tp.Partition == 0 {
			return 120, true // the old changelog's position
		}
		return 4, true
	}))
	e.list.start[tp(cl0, 0)], e.list.end[tp(cl0, 0)] = 0, 3 // created again: 3 records so far
	e.list.start[tp(cl0, 1)], e.list.end[tp(cl0, 1)] = 0, 4
	e.assign(tasks.Assignment{Active: set("0_0", "0_1")})
	if r := e.c.Restoring(); !r.Contains(tid("0_0")) || r.Contains(tid("0_1")) {
		t.Fatalf("restoring %v; want 0_0 (until its wipe is done), not 0_1 (at its end)", r)
	}
	// 0_0's changelog from its first offset, its input paused; 0_1, at its end, processes.
	eq(t, "client", e.cl.takeOps(), []string{"pause in[0]", "add app-st-changelog[0]@0,in[0]@start,in[1]@start"})
	e.cl.fetches <- fetch(3, map[tasks.TopicPartition][]int64{tp(cl0, 0): {0, 1, 2}})
	b := e.poll()
	if len(b.Corrupted) != 1 || b.Corrupted[0].Task != tid("0_0") || b.Corrupted[0].Partition != tp(cl0, 0) {
		t.Fatalf("corrupted %+v; want 0_0's changelog", b.Corrupted)
	}
	eq(t, "restored from the first offset", offsetsOf(b.Restore), []string{"0_0 active app-st-changelog[0]:0,1,2"})
	b.Done()
	if r := e.c.Restoring(); r.Contains(tid("0_0")) {
		t.Fatalf("restoring %v after the changelog's 3 records; want 0_0 restored", r)
	}
}

// A batch handed back before any of its records was processed leaves a known position where it was,
// even when that lies before the batch: the application keeps earlier records of the partition in
// a queue (Keep, Advance), and a position moved to the batch's first offset would skip them if the
// partition were fetched again from it (a failed revocation).
func TestYieldedBatchKeepsAQueuedPosition(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0, 1, 2, 3, 4}})
	b := e.poll()
	b.Keep(tp("other", 0))
	b.Done()
	e.c.Advance(map[tasks.TopicPartition]int64{tp("other", 0): 3}) // 3 and 4 still queued
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6, 7}})
	b = e.poll()
	b.Yield(map[tasks.TopicPartition]int64{tp("other", 0): 5})
	if got := e.c.Processed(set("1_0")); got[tp("other", 0)] != 3 {
		t.Fatalf("Processed after the yield = %v; want other[0] still at the queue's head, 3", got)
	}
	// A queue whose head is the partition's first record, offset 0: a known position too.
	e = newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0, 1}})
	b = e.poll()
	b.Keep(tp("other", 0))
	b.Done()
	e.c.Advance(map[tasks.TopicPartition]int64{tp("other", 0): 0})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {2, 3}})
	b = e.poll()
	b.Yield(map[tasks.TopicPartition]int64{tp("other", 0): 2})
	if got := e.c.Processed(set("1_0")); got[tp("other", 0)] != 0 {
		t.Fatalf("Processed after the yield = %v; want other[0] still at 0", got)
	}
}
