package consume

import (
	"context"
	"errors"

	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/taskoffsets"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Subtopology 0 is stateful (input "in", changelog "app-st-changelog"); 1 is stateless ("other").
func testTopology() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []topology.TopicInfo{{Name: "app-st-changelog"}}},
		topology.Subtopology{ID: "1", SourceTopics: []string{"other"}},
	)
}

const cl0 = "app-st-changelog"

func tid(s string) tasks.ID {
	id, err := tasks.ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func set(ids ...string) tasks.Set {
	out := make([]tasks.ID, len(ids))
	for i, s := range ids {
		out[i] = tid(s)
	}
	return tasks.NewSet(out...)
}

func tp(topic string, p int32) tasks.TopicPartition {
	return tasks.TopicPartition{Topic: topic, Partition: p}
}

// fakeClient records what the Consumer asks of the kgo client and serves scripted fetches.
type fakeClient struct {
	mu       sync.Mutex
	ops      []string
	consumed map[tasks.TopicPartition]string // added partitions → the offset they were added at
	paused   map[tasks.TopicPartition]bool
	fetches  chan kgo.Fetches
	polling  chan struct{} // a value each time PollFetches starts waiting
}

func newFakeClient() *fakeClient {
	return &fakeClient{consumed: map[tasks.TopicPartition]string{}, paused: map[tasks.TopicPartition]bool{},
		fetches: make(chan kgo.Fetches, 16), polling: make(chan struct{}, 64)}
}

func offStr(o kgo.Offset) string {
	switch eo := o.EpochOffset(); eo.Offset {
	case -2:
		return "start"
	case -1:
		return "end"
	default:
		return fmt.Sprint(eo.Offset)
	}
}

func (f *fakeClient) each(m map[string][]int32, fn func(tasks.TopicPartition)) []string {
	var s []string
	for t, ps := range m {
		for _, p := range ps {
			fn(tp(t, p))
			s = append(s, tp(t, p).String())
		}
	}
	sort.Strings(s)
	return s
}

func (f *fakeClient) AddConsumePartitions(m map[string]map[int32]kgo.Offset) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []string
	for t, ps := range m {
		for p, o := range ps {
			f.consumed[tp(t, p)] = offStr(o)
			s = append(s, fmt.Sprintf("%v@%s", tp(t, p), offStr(o)))
		}
	}
	sort.Strings(s)
	f.ops = append(f.ops, "add "+strings.Join(s, ","))
}

func (f *fakeClient) RemoveConsumePartitions(m map[string][]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.each(m, func(x tasks.TopicPartition) { delete(f.consumed, x) })
	f.ops = append(f.ops, "remove "+strings.Join(s, ","))
}

func (f *fakeClient) PauseFetchPartitions(m map[string][]int32) map[string][]int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.each(m, func(x tasks.TopicPartition) { f.paused[x] = true })
	f.ops = append(f.ops, "pause "+strings.Join(s, ","))
	return nil
}

func (f *fakeClient) ResumeFetchPartitions(m map[string][]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.each(m, func(x tasks.TopicPartition) { delete(f.paused, x) })
	f.ops = append(f.ops, "resume "+strings.Join(s, ","))
}

func (f *fakeClient) SetOffsets(m map[string]map[int32]kgo.EpochOffset) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []string
	for t, ps := range m {
		for p, o := range ps {
			x := fmt.Sprintf("%v@%d", tp(t, p), o.Offset)
			if o.Epoch != -1 { // -1: no leader epoch to validate the offset against
				x += fmt.Sprintf("/epoch=%d", o.Epoch)
			}
			s = append(s, x)
		}
	}
	sort.Strings(s)
	f.ops = append(f.ops, "set "+strings.Join(s, ","))
}

func (f *fakeClient) PollFetches(ctx context.Context) kgo.Fetches {
	select {
	case fs := <-f.fetches:
		return fs
	default:
	}
	f.polling <- struct{}{}
	select {
	case fs := <-f.fetches:
		return fs
	case <-ctx.Done():
		return kgo.NewErrFetch(ctx.Err())
	}
}

func (f *fakeClient) takeOps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.ops
	f.ops = nil
	return out
}

func (f *fakeClient) state() (consumed []string, paused []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for x := range f.consumed {
		consumed = append(consumed, x.String())
	}
	for x := range f.paused {
		paused = append(paused, x.String())
	}
	sort.Strings(consumed)
	sort.Strings(paused)
	return consumed, paused
}

// fetch builds a fetch answer: partition → offsets of its records.
func fetch(hwm int64, parts map[tasks.TopicPartition][]int64) kgo.Fetches {
	byTopic := map[string][]kgo.FetchPartition{}
	for _, x := range slices.SortedFunc(maps.Keys(parts), func(a, b tasks.TopicPartition) int { return strings.Compare(a.String(), b.String()) }) {
		fp := kgo.FetchPartition{Partition: x.Partition, HighWatermark: hwm}
		for _, o := range parts[x] {
			fp.Records = append(fp.Records, &kgo.Record{Topic: x.Topic, Partition: x.Partition, Offset: o, Value: []byte(fmt.Sprint(o))})
		}
		byTopic[x.Topic] = append(byTopic[x.Topic], fp)
	}
	var f kgo.Fetch
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		f.Topics = append(f.Topics, kgo.FetchTopic{Topic: t, Partitions: byTopic[t]})
	}
	return kgo.Fetches{f}
}

type fakeCommitter struct {
	mu        sync.Mutex
	committed commit.Offsets
	fetchErr  error
	asked     []tasks.Set
	commits   []commit.Offsets
	commitErr func(commit.Offsets) error
}

func (f *fakeCommitter) CommittedOffsets(_ context.Context, s tasks.Set) (commit.Offsets, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, s)
	if f.fetchErr != nil {
		return nil, f.fetchErr
	}
	return maps.Clone(f.committed), nil
}

func (f *fakeCommitter) Commit(_ context.Context, o commit.Offsets) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, maps.Clone(o))
	if f.commitErr != nil {
		return f.commitErr(o)
	}
	return nil
}

type fakeLister struct {
	start, end map[tasks.TopicPartition]int64
	err        error
	calls      [][]string
}

func (f *fakeLister) Bounds(_ context.Context, topics []string) (map[tasks.TopicPartition]int64, map[tasks.TopicPartition]int64, error) {
	f.calls = append(f.calls, topics)
	return f.start, f.end, f.err
}

// listener records the application's callbacks.
type listener struct {
	mu        sync.Mutex
	calls     []string
	revokeErr error
	onRevoke  func(tasks.Set)
}

func (l *listener) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *listener) OnTasksRevoked(_ context.Context, s tasks.Set) error {
	if l.onRevoke != nil {
		l.onRevoke(s)
	}
	l.add("revoked " + s.String())
	return l.revokeErr
}

func (l *listener) OnTasksAssigned(_ context.Context, a tasks.Assignment, _ bool) error {
	l.add("assigned " + a.String())
	return nil
}

func (l *listener) OnAllTasksLost(_ context.Context, a tasks.Assignment) error {
	l.add("lost " + a.String())
	return nil
}

type env struct {
	t       *testing.T
	cl      *fakeClient
	commits *fakeCommitter
	list    *fakeLister
	app     *listener
	tracker *taskoffsets.Tracker
	c       *Consumer
}

type endLister map[tasks.TopicPartition]int64

func (e endLister) EndOffsets(context.Context, []string) (map[tasks.TopicPartition]int64, error) {
	return maps.Clone(e), nil
}

func newEnv(t *testing.T, opts ...Option) *env {
	t.Helper()
	e := &env{t: t, cl: newFakeClient(), commits: &fakeCommitter{committed: commit.Offsets{}},
		list: &fakeLister{start: map[tasks.TopicPartition]int64{}, end: map[tasks.TopicPartition]int64{}}, app: &listener{}}
	var err error
	all := append([]Option{WithListener(e.app), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	if e.c, err = newConsumer(e.cl, e.list, testTopology(), e.commits, all...); err != nil {
		t.Fatal(err)
	}
	// The tracker reads the Consumer's positions: the task offsets the member would report.
	if e.tracker, err = taskoffsets.New(nil, testTopology(), e.c, taskoffsets.WithEndLister(endLister{})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.tracker.Close)
	return e
}

func (e *env) assign(a tasks.Assignment) {
	e.t.Helper()
	if err := e.c.OnTasksAssigned(context.Background(), a, true); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) poll() *Batch {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := e.c.Poll(ctx)
	if err != nil {
		e.t.Fatalf("Poll: %v", err)
	}
	return b
}

func offsetsOf(rs []Records) []string {
	var out []string
	for _, r := range rs {
		var os []string
		for _, rec := range r.Records {
			os = append(os, fmt.Sprint(rec.Offset))
		}
		out = append(out, fmt.Sprintf("%s %s %v:%s", r.Task, r.Role, r.Partition, strings.Join(os, ",")))
	}
	return out
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestStatelessTaskStartsAtItsCommittedOffsetAndTracksProcessed(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 0): 5}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	eq(t, "client calls", e.cl.takeOps(), []string{"add other[0]@5,other[1]@start"})
	eq(t, "app calls", e.app.calls, []string{"assigned active=[1_0 1_1] standby=[] warmup=[]"})
	if len(e.list.calls) != 0 {
		t.Fatalf("changelog offsets listed for stateless tasks: %v", e.list.calls)
	}
	if got := e.c.Processed(set("1_0", "1_1")); len(got) != 1 || got[tp("other", 0)] != 5 {
		t.Fatalf("Processed before any record = %v, want where it starts", got)
	}
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6}, tp("other", 1): {0}})
	b := e.poll()
	eq(t, "process", offsetsOf(b.Process), []string{"1_0 active other[0]:5,6", "1_1 active other[1]:0"})
	if len(b.Restore) != 0 {
		t.Fatalf("restore %v", offsetsOf(b.Restore))
	}
	if got := e.c.Processed(set("1_0")); got[tp("other", 0)] != 5 {
		t.Fatalf("Processed moved before Done: %v", got)
	}
	b.Done()
	b.Done() // twice: nothing more
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 7 || got[tp("other", 1)] != 1 {
		t.Fatalf("Processed after Done = %v", got)
	}
	// The same records again (a refetch): only the new one is handed out.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {6, 7}})
	b = e.poll()
	eq(t, "refetch", offsetsOf(b.Process), []string{"1_0 active other[0]:7"})
	b.Done()
	// Assigning the same tasks again changes nothing and asks for nothing.
	e.commits.asked = nil
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	if ops := e.cl.takeOps(); len(ops) != 0 || len(e.commits.asked) != 0 {
		t.Fatalf("a repeated assignment: client calls %q, committed offsets asked %v", ops, e.commits.asked)
	}
}

func TestRestoreBeforeProcess(t *testing.T) {
	e := newEnv(t)
	e.list.start[tp(cl0, 0)], e.list.end[tp(cl0, 0)] = 0, 3
	e.commits.committed = commit.Offsets{tp("in", 0): 40}
	e.assign(tasks.Assignment{Active: set("0_0")})
	eq(t, "client calls", e.cl.takeOps(), []string{"pause in[0]", "add app-st-changelog[0]@0,in[0]@40"})
	if offs, _ := e.tracker.TaskOffsets(tasks.Assignment{Active: set("0_0")}); offs[tid("0_0")] != 0 {
		t.Fatalf("a restoring task reports its position: %v", offs)
	}
	if r := e.c.Restoring(); r.String() != set("0_0").String() {
		t.Fatalf("Restoring() = %v, want [0_0]", r)
	}
	e.cl.fetches <- fetch(3, map[tasks.TopicPartition][]int64{tp(cl0, 0): {0, 1}})
	b := e.poll()
	eq(t, "restore", offsetsOf(b.Restore), []string{"0_0 active app-st-changelog[0]:0,1"})
	b.Done()
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Fatalf("restoration finished early: %q", ops)
	}
	// An input record that raced the pause is not handed out, and will be fetched again.
	e.cl.fetches <- fetch(3, map[tasks.TopicPartition][]int64{tp(cl0, 0): {2}, tp("in", 0): {40, 41}})
	b = e.poll()
	eq(t, "restore", offsetsOf(b.Restore), []string{"0_0 active app-st-changelog[0]:2"})
	if len(b.Process) != 0 {
		t.Fatalf("input records of a restoring task handed out: %v", offsetsOf(b.Process))
	}
	eq(t, "client calls", e.cl.takeOps(), []string{"set in[0]@40"})
	b.Done()
	eq(t, "client calls", e.cl.takeOps(), []string{"remove app-st-changelog[0]", "resume in[0]"})
	if r := e.c.Restoring(); r.Len() != 0 {
		t.Fatalf("Restoring() after the restoration = %v", r)
	}
	if offs, _ := e.tracker.TaskOffsets(tasks.Assignment{Active: set("0_0")}); len(offs) != 0 {
		t.Fatalf("a processing task reports offsets: %v", offs)
	}
	e.cl.fetches <- fetch(3, map[tasks.TopicPartition][]int64{tp(cl0, 0): {3}, tp("in", 0): {40}})
	b = e.poll()
	eq(t, "process", offsetsOf(b.Process), []string{"0_0 active in[0]:40"})
	if len(b.Restore) != 0 {
		t.Fatal("the changelog of a processing task was handed out")
	}
	b.Done()
}

func TestEmptyChangelogNeedsNoRestore(t *testing.T) {
	e := newEnv(t)
	e.list.start[tp(cl0, 2)], e.list.end[tp(cl0, 2)] = 7, 7 // everything deleted: nothing to restore
	e.assign(tasks.Assignment{Active: set("0_2")})
	eq(t, "client calls", e.cl.takeOps(), []string{"add in[2]@start"})
}

// The Consumer is where a taskoffsets.Tracker reads positions from: a fed changelog's next offset
// from where its store starts, its largest high watermark seen once fetched (-1 before), and whether
// an active task processes; nothing for inputs, unknown partitions or tasks not held.
func TestChangelogPositionsAndProcessing(t *testing.T) {
	e := newEnv(t)
	e.list.end[tp(cl0, 0)], e.list.end[tp(cl0, 1)] = 0, 9
	e.assign(tasks.Assignment{Active: set("0_0", "0_1"), Standby: set("0_2")})
	type pos struct{ next, end int64 }
	at := func(p tasks.TopicPartition) pos {
		n, end := e.c.ChangelogPosition(p)
		return pos{n, end}
	}
	for _, c := range []struct {
		tp   tasks.TopicPartition
		want pos
	}{
		{tp(cl0, 0), pos{-1, -1}}, // 0_0's changelog is empty: restored at once, no longer fed
		{tp(cl0, 1), pos{0, -1}},  // restoring, nothing fetched yet
		{tp(cl0, 2), pos{0, -1}},  // a standby, nothing fetched yet
		{tp(cl0, 3), pos{-1, -1}}, // a task not held
		{tp("in", 1), pos{-1, -1}},
		{tp("nowhere", 0), pos{-1, -1}},
	} {
		if got := at(c.tp); got != c.want {
			t.Errorf("ChangelogPosition(%v) = %v, want %v", c.tp, got, c.want)
		}
	}
	if !e.c.Processing(tid("0_0")) || e.c.Processing(tid("0_1")) || e.c.Processing(tid("0_2")) || e.c.Processing(tid("0_3")) {
		t.Fatal("Processing: want 0_0 only (restored); 0_1 restores, 0_2 is a standby, 0_3 is not held")
	}
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp(cl0, 1): {0, 1, 2}, tp(cl0, 2): {0, 1}})
	b := e.poll()
	if got := at(tp(cl0, 1)); got != (pos{0, 9}) {
		t.Fatalf("while the batch is out: %v, want the start and the high watermark seen", got)
	}
	b.Done()
	if got := at(tp(cl0, 1)); got != (pos{3, 9}) {
		t.Fatalf("after Done: %v", got)
	}
	e.cl.fetches <- fetch(4, map[tasks.TopicPartition][]int64{tp(cl0, 2): {2}}) // an older high watermark
	e.poll().Done()
	if got := at(tp(cl0, 2)); got != (pos{3, 9}) {
		t.Fatalf("standby after a fetch with an older high watermark: %v, want next 3 and the largest seen, 9", got)
	}
}

func TestStandbyPromotionRestoresOnlyTheRest(t *testing.T) {
	e := newEnv(t)
	e.list.end[tp(cl0, 1)] = 5
	e.assign(tasks.Assignment{Active: set("1_0"), Standby: set("0_1")})
	eq(t, "client calls", e.cl.takeOps(), []string{"add app-st-changelog[1]@0,other[0]@start"})
	e.cl.fetches <- fetch(5, map[tasks.TopicPartition][]int64{tp(cl0, 1): {0, 1, 2, 3, 4}})
	b := e.poll()
	eq(t, "standby", offsetsOf(b.Restore), []string{"0_1 standby app-st-changelog[1]:0,1,2,3,4"})
	b.Done()
	if offs, ends := e.tracker.TaskOffsets(tasks.Assignment{Standby: set("0_1")}); offs[tid("0_1")] != 5 || ends[tid("0_1")] != 5 {
		t.Fatalf("standby task offsets %v %v", offs, ends)
	}
	// The active owner wrote 3 more records, then handed the task over.
	e.list.end[tp(cl0, 1)] = 8
	e.assign(tasks.Assignment{Active: set("1_0", "0_1")})
	eq(t, "client calls", e.cl.takeOps(), []string{"pause in[1]", "add in[1]@start"})
	e.cl.fetches <- fetch(8, map[tasks.TopicPartition][]int64{tp(cl0, 1): {5, 6, 7}})
	b = e.poll()
	eq(t, "restore", offsetsOf(b.Restore), []string{"0_1 active app-st-changelog[1]:5,6,7"})
	b.Done()
	eq(t, "client calls", e.cl.takeOps(), []string{"remove app-st-changelog[1]", "resume in[1]"})
}

func TestChangelogStartHook(t *testing.T) {
	e := newEnv(t, WithChangelogStart(func(id tasks.ID, x tasks.TopicPartition) (int64, bool) {
		if id == tid("0_3") {
			return 12, true
		}
		return 2, true // before the log start: starts there
	}))
	e.list.start[tp(cl0, 3)], e.list.end[tp(cl0, 3)] = 12, 20 // the store at the first offset: nothing deleted under it
	e.list.start[tp(cl0, 4)], e.list.end[tp(cl0, 4)] = 6, 20
	e.assign(tasks.Assignment{Standby: set("0_3"), Warmup: set("0_4")})
	eq(t, "client calls", e.cl.takeOps(), []string{"add app-st-changelog[3]@12,app-st-changelog[4]@6"})
	e.cl.fetches <- fetch(20, map[tasks.TopicPartition][]int64{tp(cl0, 4): {6}})
	b := e.poll()
	eq(t, "warm-up", offsetsOf(b.Restore), []string{"0_4 warmup app-st-changelog[4]:6"})
	// The warm-up's store stood at 2, before the first offset 6: the records in between were
	// deleted, so the store is reported corrupted (to wipe) in the same batch, before its records.
	if len(b.Corrupted) != 1 || b.Corrupted[0].Task != tid("0_4") || b.Corrupted[0].Partition != tp(cl0, 4) {
		t.Fatalf("corrupted %+v; want the warm-up 0_4's changelog", b.Corrupted)
	}
	b.Done()
	// A standby that is no longer assigned is dropped.
	e.assign(tasks.Assignment{Warmup: set("0_4")})
	eq(t, "client calls", e.cl.takeOps(), []string{"remove app-st-changelog[3]"})
}

// A revocation waits for the batch out; after it returns no record of the revoked task is handed
// out, its partitions are not consumed, and the application saw the final positions.
func TestRevocationWaitsForTheBatchAndStopsItsRecords(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0, 1}})
	b := e.poll()
	var seen commit.Offsets
	var doneFirst atomic.Bool
	e.app.onRevoke = func(s tasks.Set) {
		if !doneFirst.Load() {
			t.Error("the application's OnTasksRevoked ran while a batch with the task's records was out")
		}
		seen = e.c.Processed(s)
	}
	revoked := make(chan error, 1)
	go func() { revoked <- e.c.OnTasksRevoked(context.Background(), set("1_0")) }()
	waitForCallback(t, e.c) // the revocation is waiting for the batch
	doneFirst.Store(true)
	b.Done()
	if err := <-revoked; err != nil {
		t.Fatal(err)
	}
	if seen[tp("other", 0)] != 2 {
		t.Fatalf("the application's OnTasksRevoked saw positions %v, want other[0] at 2", seen)
	}
	eq(t, "client calls", e.cl.takeOps(), []string{"remove other[0]"})
	if consumed, _ := e.cl.state(); !slices.Equal(consumed, []string{"other[1]"}) {
		t.Fatalf("consumed %v", consumed)
	}
	// Records of the revoked partition fetched before the removal are dropped.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {2, 3}, tp("other", 1): {0}})
	b = e.poll()
	eq(t, "after the revocation", offsetsOf(b.Process), []string{"1_1 active other[1]:0"})
	b.Done()
	if got := e.c.Processed(set("1_0")); len(got) != 0 {
		t.Fatalf("a revoked task still has positions: %v", got)
	}
}

// waitForCallback waits until a callback is waiting for the batch out.
func waitForCallback(t *testing.T, c *Consumer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.pollMu.Lock()
		n := c.writers
		c.pollMu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no callback started waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// A failed revocation puts the tasks back where they stopped: the member keeps them.
func TestFailedRevocationConsumesAgainFromWhereItStopped(t *testing.T) {
	e := newEnv(t)
	e.list.end[tp(cl0, 0)] = 4
	e.assign(tasks.Assignment{Active: set("1_0", "0_0")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {3, 4}, tp(cl0, 0): {0}})
	b := e.poll()
	b.Done()
	e.app.revokeErr = errors.New("flush failed")
	if err := e.c.OnTasksRevoked(context.Background(), set("1_0", "0_0")); !errors.Is(err, e.app.revokeErr) {
		t.Fatalf("got %v", err)
	}
	eq(t, "client calls", e.cl.takeOps(), []string{
		"remove app-st-changelog[0],in[0],other[0]", "resume in[0]",
		"pause in[0]", "add app-st-changelog[0]@1,in[0]@start,other[0]@5"})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5}})
	b = e.poll()
	eq(t, "after the failed revocation", offsetsOf(b.Process), []string{"1_0 active other[0]:5"})
	b.Done()
}

// A Poll waiting on the network is woken up for a callback, and goes on polling afterwards.
func TestCallbackWakesUpAWaitingPoll(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	polled := make(chan *Batch, 1)
	go func() { polled <- e.poll() }()
	<-e.cl.polling
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")}) // must not wait for the fetch
	<-e.cl.polling                                        // the Poll waits again
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 1): {0}})
	b := <-polled
	eq(t, "records", offsetsOf(b.Process), []string{"1_1 active other[1]:0"})
	b.Done()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.c.Poll(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Poll with an ended ctx: %v", err)
	}
	e.cl.fetches <- kgo.NewErrFetch(kgo.ErrClientClosed)
	if _, err := e.c.Poll(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed client: %v", err)
	}
	e.cl.fetches <- kgo.NewErrFetch(errors.New("broken"))
	b = e.poll()
	if len(b.Errors) != 1 || b.Errors[0].Err.Error() != "broken" {
		t.Fatalf("fetch errors %v", b.Errors)
	}
	b.Done()
}

func TestAllTasksLostStopsEverything(t *testing.T) {
	e := newEnv(t)
	e.list.end[tp(cl0, 0)] = 4
	e.assign(tasks.Assignment{Active: set("1_0", "0_0"), Standby: set("0_1")})
	e.cl.takeOps()
	lost := tasks.Assignment{Active: set("1_0", "0_0"), Standby: set("0_1")}
	if err := e.c.OnAllTasksLost(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	consumed, paused := e.cl.state()
	if len(consumed)+len(paused) != 0 {
		t.Fatalf("after losing everything: consumed %v paused %v", consumed, paused)
	}
	if last := e.app.calls[len(e.app.calls)-1]; !strings.HasPrefix(last, "lost ") {
		t.Fatalf("app calls %q", e.app.calls)
	}
	if offs, _ := e.tracker.TaskOffsets(lost); offs[tid("0_1")] != tasks.UnknownOffset {
		t.Fatalf("positions of lost tasks kept: %v", offs)
	}
}

func TestAssignmentFailuresChangeNothing(t *testing.T) {
	e := newEnv(t)
	var ue *tasks.UnknownSubtopologyError
	if err := e.c.OnTasksAssigned(context.Background(), tasks.Assignment{Active: set("7_0")}, true); !errors.As(err, &ue) {
		t.Fatalf("unknown subtopology: %v", err)
	}
	e.commits.fetchErr = commit.ErrTasksLost
	if err := e.c.OnTasksAssigned(context.Background(), tasks.Assignment{Active: set("1_0")}, true); !errors.Is(err, commit.ErrTasksLost) {
		t.Fatalf("committed offsets failed: %v", err)
	}
	e.commits.fetchErr = nil
	e.list.err = errors.New("no bounds")
	if err := e.c.OnTasksAssigned(context.Background(), tasks.Assignment{Standby: set("0_0")}, true); !errors.Is(err, e.list.err) {
		t.Fatalf("listing failed: %v", err)
	}
	if ops := e.cl.takeOps(); len(ops) != 0 || len(e.app.calls) != 0 {
		t.Fatalf("a failed assignment changed something: client %q app %q", ops, e.app.calls)
	}
}

func TestCommitProcessed(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 1): 3}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	ctx := context.Background()
	if err := e.c.CommitProcessed(ctx); err != nil || len(e.commits.commits) != 0 {
		t.Fatalf("nothing processed: %v, commits %v", err, e.commits.commits)
	}
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0}, tp("other", 1): {3, 4}})
	e.poll().Done()
	if err := e.c.CommitProcessed(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.commits.commits; len(got) != 1 || got[0][tp("other", 0)] != 1 || got[0][tp("other", 1)] != 5 {
		t.Fatalf("commits %v", got)
	}
	if err := e.c.CommitProcessed(ctx); err != nil || len(e.commits.commits) != 1 {
		t.Fatalf("nothing moved: %v, %d commits", err, len(e.commits.commits))
	}
	// A partition whose task is not owned at the moment is left for later.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {1}, tp("other", 1): {5}})
	e.poll().Done()
	e.commits.commitErr = func(o commit.Offsets) error {
		if _, ok := o[tp("other", 1)]; ok {
			return &commit.NotOwnedError{Partitions: []tasks.TopicPartition{tp("other", 1)}, Tasks: set("1_1")}
		}
		return nil
	}
	if err := e.c.CommitProcessed(ctx); err != nil {
		t.Fatal(err)
	}
	if last := e.commits.commits[len(e.commits.commits)-1]; len(last) != 1 || last[tp("other", 0)] != 2 {
		t.Fatalf("retry without the partition not owned: %v", last)
	}
	e.commits.commitErr = func(commit.Offsets) error { return commit.ErrNotJoined }
	if err := e.c.CommitProcessed(ctx); !errors.Is(err, commit.ErrNotJoined) {
		t.Fatalf("got %v", err)
	}
}

func TestNewChecksTheClientAndArguments(t *testing.T) {
	topo := testTopology()
	for _, opts := range [][]kgo.Opt{
		{kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in")},
		{kgo.ConsumeTopics("in")},
		{kgo.ConsumeRegex(), kgo.ConsumeTopics("i.*")},
		{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"in": {0: kgo.NewOffset()}})},
	} {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cl, topo, &fakeCommitter{}); !errors.Is(err, ErrGroupClient) {
			t.Errorf("%d options: got %v, want ErrGroupClient", len(opts), err)
		}
		cl.Close()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := New(cl, topo, &fakeCommitter{}); err != nil {
		t.Fatalf("a direct client: %v", err)
	}
	if _, err := New(nil, topo, &fakeCommitter{}); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := New(cl, nil, &fakeCommitter{}); err == nil {
		t.Error("nil topology accepted")
	}
	if _, err := New(cl, topo, nil); err == nil {
		t.Error("nil committer accepted")
	}
	var se *tasks.SharedTopicError
	shared := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"table"}, StateChangelogTopics: []topology.TopicInfo{{Name: "table"}}})
	if _, err := New(cl, shared, &fakeCommitter{}); !errors.As(err, &se) {
		t.Errorf("shared topic: %v", err)
	}
	if Active.String() != "active" || Standby.String() != "standby" || Warmup.String() != "warmup" || Role(0).String() != "Role(0)" {
		t.Error("Role.String")
	}
}

// A warm-up task that caught up becomes active without restoring anything: its inputs are not even
// paused.
func TestCaughtUpWarmupBecomesActiveWithoutRestoring(t *testing.T) {
	e := newEnv(t)
	e.list.end[tp(cl0, 2)] = 3
	e.assign(tasks.Assignment{Warmup: set("0_2")})
	eq(t, "client calls", e.cl.takeOps(), []string{"add app-st-changelog[2]@0"})
	e.cl.fetches <- fetch(3, map[tasks.TopicPartition][]int64{tp(cl0, 2): {0, 1, 2}})
	b := e.poll()
	eq(t, "warm-up", offsetsOf(b.Restore), []string{"0_2 warmup app-st-changelog[2]:0,1,2"})
	b.Done()
	if offs, ends := e.tracker.TaskOffsets(tasks.Assignment{Warmup: set("0_2")}); offs[tid("0_2")] != 3 || ends[tid("0_2")] != 3 {
		t.Fatalf("warm-up task offsets %v %v: a caught-up warm-up reports offset = end", offs, ends)
	}
	e.assign(tasks.Assignment{Active: set("0_2")})
	eq(t, "client calls", e.cl.takeOps(), []string{"remove app-st-changelog[2]", "add in[2]@start"})
	if offs, _ := e.tracker.TaskOffsets(tasks.Assignment{Active: set("0_2")}); len(offs) != 0 {
		t.Fatalf("the promoted task reports offsets: %v", offs)
	}
}

// twoPartitionBatch is an env running tasks 1_0 and 1_1 (other[0] committed at 5, other[1] at 0)
// and the batch of other[0] 5, 6, 7 and other[1] 0, 1 it handed out.
func twoPartitionBatch(t *testing.T) (*env, *Batch) {
	t.Helper()
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 0): 5, tp("other", 1): 0}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6, 7}, tp("other", 1): {0, 1}})
	return e, e.poll()
}

// TestDoneBeforeStopsThePositionAtTheFirstUnprocessedRecord: a batch whose processing failed
// part-way moves each partition only past what was processed, so nothing past an unprocessed
// record is committed (the runtime's R1).
func TestDoneBeforeStopsThePositionAtTheFirstUnprocessedRecord(t *testing.T) {
	e, b := twoPartitionBatch(t)
	// other[0] failed at 6; other[1] was never reached (stop at its first record); a partition that
	// is not in the batch is ignored.
	b.DoneBefore(map[tasks.TopicPartition]int64{tp("other", 0): 6, tp("other", 1): 0, tp("absent", 0): 3})
	b.Done() // after DoneBefore: nothing more
	got := e.c.Processed(set("1_0", "1_1"))
	if got[tp("other", 0)] != 6 || got[tp("other", 1)] != 0 || len(got) != 2 {
		t.Fatalf("Processed after DoneBefore = %v, want other[0]=6 other[1]=0", got)
	}
	// A stop past the last record is the same as Done.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {8, 9}})
	b = e.poll()
	b.DoneBefore(map[tasks.TopicPartition]int64{tp("other", 0): 100})
	if got := e.c.Processed(set("1_0")); got[tp("other", 0)] != 10 {
		t.Fatalf("Processed after a stop past the batch = %v, want 10", got)
	}
}

// TestRewindGoesBackToTheLastCommit: after an aborted transaction the inputs are fetched again from
// the last committed position, or from where consumption started when nothing was committed.
func TestRewindGoesBackToTheLastCommit(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 0): 5}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.takeOps()
	if !e.c.HasCommitted(tid("1_0")) || e.c.HasCommitted(tid("1_1")) || e.c.HasCommitted(tid("9_9")) {
		t.Fatal("HasCommitted: want true for 1_0 (other[0] committed at 5), false for 1_1 and an unknown task")
	}
	e.c.Rewind() // nothing processed: nothing to do
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Fatalf("Rewind before any record: %q", ops)
	}
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6}, tp("other", 1): {3, 4}})
	e.poll().Done()
	var sent []commit.Offsets
	commitFn := func(_ context.Context, o commit.Offsets) error { sent = append(sent, maps.Clone(o)); return nil }
	if err := e.c.CommitUncommitted(context.Background(), commitFn); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0][tp("other", 0)] != 7 || sent[0][tp("other", 1)] != 5 {
		t.Fatalf("committed %v, want other[0]=7 other[1]=5", sent)
	}
	if !e.c.HasCommitted(tid("1_1")) {
		t.Fatal("HasCommitted(1_1) after its first commit: false")
	}
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {7, 8}})
	e.poll().Done()
	e.c.Rewind()
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[0]@7"})
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 7 || got[tp("other", 1)] != 5 {
		t.Fatalf("Processed after Rewind = %v, want the committed positions", got)
	}
	// Nothing moved since: nothing to commit.
	sent = nil
	if err := e.c.CommitUncommitted(context.Background(), commitFn); err != nil || len(sent) != 0 {
		t.Fatalf("commit after a rewind to the committed positions: %v %v", sent, err)
	}
}

// TestRewindWithoutACommitGoesBackToTheFirstRecord: a partition that started at the reset offset
// rewinds to the first record it handed out.
func TestRewindWithoutACommitGoesBackToTheFirstRecord(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {2, 3}})
	e.poll().Done()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {4}})
	e.poll().Done()
	e.c.Rewind()
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[0]@2"})
}

// TestRewindToGoesWhereTheApplicationSays: an application that keeps its own committed positions
// (the stream runtime) names them; a partition it leaves out goes back to where consumption started,
// and one already there is not touched.
func TestRewindToGoesWhereTheApplicationSays(t *testing.T) {
	e := newEnv(t)
	e.commits.committed = commit.Offsets{tp("other", 0): 5}
	e.assign(tasks.Assignment{Active: set("1_0", "1_1"), Standby: set("0_0")})
	e.cl.takeOps()
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6, 7}, tp("other", 1): {3, 4}})
	e.poll().Done()
	e.c.RewindTo(commit.Offsets{tp("other", 0): 6}) // other[1] was never committed: back to 3
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[0]@6,other[1]@3"})
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 6 || got[tp("other", 1)] != 3 {
		t.Fatalf("Processed after RewindTo = %v, want 6 and 3", got)
	}
	e.c.RewindTo(commit.Offsets{tp("other", 0): 6})
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Fatalf("RewindTo where the inputs stand: %q", ops)
	}
}

// TestCommitUncommittedRetriesWithoutNotOwnedPartitions: partitions refused as not owned are left
// out, the rest committed, and only what was committed counts as committed.
func TestCommitUncommittedRetriesWithoutNotOwnedPartitions(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {0}, tp("other", 1): {0}})
	e.poll().Done()
	calls := 0
	commitFn := func(_ context.Context, o commit.Offsets) error {
		calls++
		if _, ok := o[tp("other", 1)]; ok {
			return &commit.NotOwnedError{Partitions: []tasks.TopicPartition{tp("other", 1)}}
		}
		return nil
	}
	if err := e.c.CommitUncommitted(context.Background(), commitFn); err != nil || calls != 2 {
		t.Fatalf("CommitUncommitted: %v after %d calls, want nil after 2", err, calls)
	}
	var seen commit.Offsets
	_ = e.c.CommitUncommitted(context.Background(), func(_ context.Context, o commit.Offsets) error { seen = maps.Clone(o); return nil })
	if len(seen) != 1 || seen[tp("other", 1)] != 1 {
		t.Fatalf("next commit sends %v, want only the refused partition other[1]=1", seen)
	}
}

// TestYieldHandsTheRestOutAgain: a batch whose processing paused part-way (for a commit) moves each
// partition past what was processed, and the rest is fetched from there and handed out again.
func TestYieldHandsTheRestOutAgain(t *testing.T) {
	e, b := twoPartitionBatch(t)
	// other[0] paused before 7; other[1] was not reached; a stop past a partition's records is none.
	b.Yield(map[tasks.TopicPartition]int64{tp("other", 0): 7, tp("other", 1): 0, tp("absent", 0): 3})
	b.Yield(nil) // once only
	b.Done()
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[0]@7,other[1]@0"})
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 7 || got[tp("other", 1)] != 0 {
		t.Fatalf("Processed after Yield = %v, want other[0]=7 other[1]=0", got)
	}
	// The refetch hands the rest out again (a record before the stop is not handed twice).
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {6, 7, 8}, tp("other", 1): {0, 1}})
	b = e.poll()
	if got := offsetsOf(b.Process); !slices.Equal(got, []string{"1_0 active other[0]:7,8", "1_1 active other[1]:0,1"}) {
		t.Fatalf("handed out again %v", got)
	}
	b.Done()
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 9 || got[tp("other", 1)] != 2 {
		t.Fatalf("Processed = %v, want other[0]=9 other[1]=2", got)
	}
}

// TestKeptRecordsMoveOnlyByAdvance: records the application keeps beyond their batch (a task with
// several inputs orders them by timestamp) are not handed out again, and their partition's
// position moves only as the application says it processed them, never back.
func TestKeptRecordsMoveOnlyByAdvance(t *testing.T) {
	e, b := twoPartitionBatch(t)
	b.Keep(tp("other", 0))
	b.Done()
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 5 || got[tp("other", 1)] != 2 {
		t.Fatalf("Processed after Done = %v, want other[0]=5 (kept) other[1]=2", got)
	}
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Fatalf("kept records refetched: %q", ops)
	}
	e.c.Advance(map[tasks.TopicPartition]int64{tp("other", 0): 7, tp("absent", 0): 3})
	e.c.Advance(map[tasks.TopicPartition]int64{tp("other", 0): 6})
	if got := e.c.Processed(set("1_0")); got[tp("other", 0)] != 7 || len(got) != 1 {
		t.Fatalf("Processed after Advance to 7 then 6 = %v, want other[0]=7", got)
	}
	if p := e.c.Position(tp("other", 0)); p != 8 {
		t.Fatalf("Position(other[0]) = %d, want 8 (after the last handed out)", p)
	}
	if p := e.c.Position(tp("absent", 0)); p != -1 {
		t.Fatalf("Position(absent[0]) = %d, want -1", p)
	}

	// The next fetch goes on after what was handed out; a paused batch does not refetch a kept
	// partition, while it does the others.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {8, 9}, tp("other", 1): {2, 3}})
	b = e.poll()
	if got := offsetsOf(b.Process); !slices.Equal(got, []string{"1_0 active other[0]:8,9", "1_1 active other[1]:2,3"}) {
		t.Fatalf("handed out %v", got)
	}
	b.Keep(tp("other", 0))
	b.Yield(map[tasks.TopicPartition]int64{tp("other", 0): 8, tp("other", 1): 3})
	eq(t, "client calls", e.cl.takeOps(), []string{"set other[1]@3"})
	if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 7 || got[tp("other", 1)] != 3 {
		t.Fatalf("Processed after Yield = %v, want other[0]=7 (kept) other[1]=3", got)
	}
	// A pause with nothing to fetch again (a kept partition, one paused at its batch's end) sets no
	// offset at all.
	e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {10}, tp("other", 1): {3}})
	b = e.poll()
	b.Keep(tp("other", 0))
	b.Yield(map[tasks.TopicPartition]int64{tp("other", 0): 10, tp("other", 1): 4})
	if ops := e.cl.takeOps(); len(ops) != 0 {
		t.Fatalf("client calls %q; want none", ops)
	}
	if got := e.c.Processed(set("1_1")); got[tp("other", 1)] != 4 {
		t.Fatalf("Processed after a pause at the batch's end = %v, want other[1]=4", got)
	}
}

// TestHoldPausesAnInputUntilReleasedOrGone: an input whose records the application holds enough of
// is paused until it says so, and a held partition that leaves (revoked) is not left paused.
func TestHoldPausesAnInputUntilReleasedOrGone(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	e.cl.takeOps()
	e.c.Hold(tp("other", 0), true)
	e.c.Hold(tp("other", 0), true) // once
	e.c.Hold(tp("absent", 0), true)
	e.c.Hold(tp("other", 1), false) // not held: nothing
	eq(t, "client calls", e.cl.takeOps(), []string{"pause other[0]"})
	e.c.Hold(tp("other", 0), false)
	eq(t, "client calls", e.cl.takeOps(), []string{"resume other[0]"})

	e.c.Hold(tp("other", 1), true)
	e.cl.takeOps()
	if err := e.c.OnTasksRevoked(context.Background(), set("1_1")); err != nil {
		t.Fatal(err)
	}
	eq(t, "client calls", e.cl.takeOps(), []string{"remove other[1]", "resume other[1]"})
	if _, paused := e.cl.state(); len(paused) != 0 {
		t.Fatalf("paused after the revocation: %v", paused)
	}
}

// Turn hands out a Batch without records that holds callbacks off like any batch, and waits for a
// callback already waiting, as Poll does.
func TestTurnIsABatchWithoutRecords(t *testing.T) {
	e := newEnv(t)
	e.assign(tasks.Assignment{Active: set("1_0", "1_1")})
	b, err := e.c.Turn(context.Background())
	if err != nil || len(b.Process)+len(b.Restore)+len(b.Corrupted)+len(b.Errors) != 0 {
		t.Fatalf("Turn: %+v, %v; want an empty batch", b, err)
	}
	var doneFirst atomic.Bool
	e.app.onRevoke = func(tasks.Set) {
		if !doneFirst.Load() {
			t.Error("OnTasksRevoked ran while the turn's batch was out")
		}
	}
	revoked := make(chan error, 1)
	go func() { revoked <- e.c.OnTasksRevoked(context.Background(), set("1_0")) }()
	waitForCallback(t, e.c)
	// A turn asked for while the callback waits comes after it.
	turned := make(chan error, 1)
	go func() {
		b2, err := e.c.Turn(context.Background())
		if err == nil {
			b2.Done()
		}
		turned <- err
	}()
	doneFirst.Store(true)
	b.Done()
	if err := <-revoked; err != nil {
		t.Fatal(err)
	}
	if err := <-turned; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.c.Turn(ctx); err == nil {
		t.Fatal("Turn with an ended context: no error")
	}
}

// TestARewindWhileABatchIsOutWins: a rewind made while a batch is out (the runtime commits the
// starting positions of new tasks before it processes the batch, and that commit aborted) takes the
// partitions back to the last commit; handing the batch back afterwards, unprocessed, must not move
// them forward to its first record again, or the records between the commit and the batch would
// never be handed out and the next commit would commit over them (records lost under exactly-once).
func TestARewindWhileABatchIsOutWins(t *testing.T) {
	for _, back := range []struct {
		name string
		give func(*Batch)
	}{
		{"yield", func(b *Batch) { b.Yield(stopsAt(b)) }},
		{"done before", func(b *Batch) { b.DoneBefore(stopsAt(b)) }},
		{"done", func(b *Batch) { b.Done() }},
	} {
		t.Run(back.name, func(t *testing.T) {
			e, b := twoPartitionBatch(t)
			b.Done()
			e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {8, 9}, tp("other", 1): {2}})
			b = e.poll()
			e.c.RewindTo(commit.Offsets{tp("other", 0): 5, tp("other", 1): 0})
			eq(t, "client calls of the rewind", e.cl.takeOps(), []string{"set other[0]@5,other[1]@0"})
			back.give(b)
			if ops := e.cl.takeOps(); len(ops) != 0 {
				t.Fatalf("the batch handed back after the rewind moved the client: %q", ops)
			}
			if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 5 || got[tp("other", 1)] != 0 {
				t.Fatalf("Processed = %v, want the rewind's other[0]=5 other[1]=0", got)
			}
			if p := e.c.Position(tp("other", 0)); p != 5 {
				t.Fatalf("Position(other[0]) = %d, want 5", p)
			}
			e.cl.fetches <- fetch(9, map[tasks.TopicPartition][]int64{tp("other", 0): {5, 6, 7, 8, 9}, tp("other", 1): {0, 1, 2}})
			b = e.poll()
			if got := offsetsOf(b.Process); !slices.Equal(got, []string{"1_0 active other[0]:5,6,7,8,9", "1_1 active other[1]:0,1,2"}) {
				t.Fatalf("handed out after the rewind %v, want everything since the last commit", got)
			}
			b.Done()
			if got := e.c.Processed(set("1_0", "1_1")); got[tp("other", 0)] != 10 || got[tp("other", 1)] != 3 {
				t.Fatalf("Processed = %v, want other[0]=10 other[1]=3", got)
			}
		})
	}
}

// stopsAt says nothing of b's input records was processed.
func stopsAt(b *Batch) map[tasks.TopicPartition]int64 {
	m := map[tasks.TopicPartition]int64{}
	for _, r := range b.Process {
		m[r.Partition] = r.First
	}
	return m
}
