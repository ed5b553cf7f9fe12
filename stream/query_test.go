package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// queryApp holds subtopology 1's tasks 1_0 (keys a c e) and 1_1 (b d) as active tasks, 1_2 (z) as
// a standby, and 0_0 (no stores).
func queryApp(t *testing.T, opts ...Option) *App {
	t.Helper()
	a, _ := newTestApp(t, testConfig(), testProcs(), opts...)
	a.produceErr.Store(&ProduceError{Err: errBoom}) // no client: nothing is produced
	put := func(tk *task, keys ...string) {
		for _, k := range keys {
			mustNotErr(t, tk.stores["counts"].Put([]byte(k), []byte("="+k)))
		}
	}
	put(activeTask(t, a, tid("1", 1)), "b", "d")
	put(activeTask(t, a, tid("1", 0)), "a", "c", "e")
	sb := activeTask(t, a, tid("1", 2))
	put(sb, "z")
	sb.active = false
	activeTask(t, a, tid("0", 0))
	return a
}

func TestLocalStoreAcrossActiveTasks(t *testing.T) {
	a := queryApp(t)
	st, err := a.Store("counts")
	mustNotErr(t, err)
	if v, ok, err := st.Get([]byte("d")); !ok || err != nil || string(v) != "=d" {
		t.Errorf("Get d: %q %v %v", v, ok, err)
	}
	if v, ok, err := st.Get([]byte("a")); !ok || err != nil || string(v) != "=a" {
		t.Errorf("Get a: %q %v %v", v, ok, err)
	}
	if _, ok, err := st.Get([]byte("z")); ok || err != nil {
		t.Errorf("a standby's key is not queried: %v %v", ok, err)
	}
	it, err := st.Range(nil, nil)
	mustNotErr(t, err)
	if got := drain(t, it); got != "[a b c d e]" {
		t.Errorf("Range: %s", got)
	}
	it, err = st.Range([]byte("b"), []byte("e"))
	mustNotErr(t, err)
	if got := drain(t, it); got != "[b c d]" {
		t.Errorf("Range [b, e): %s", got)
	}
	it, err = st.Prefix([]byte("c"))
	mustNotErr(t, err)
	if got := drain(t, it); got != "[c]" {
		t.Errorf("Prefix c: %s", got)
	}
	if n, err := st.ApproximateCount(); n != 5 || err != nil {
		t.Errorf("count %d %v", n, err)
	}
	counts := KeyValue("counts", serde.String, serde.String)
	if v, ok, err := counts.Query(a, "e"); v != "=e" || !ok || err != nil {
		t.Errorf("Query: %q %v %v", v, ok, err)
	}
}

// A task still restoring holds part of its state: queries leave it out, as Kafka Streams' do (its
// stores are not handed out before the task runs), and while every task of the store restores, a
// query is ErrStoreNotReady rather than an answer from partial state.
func TestLocalStoreLeavesRestoringTasksOut(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	a.produceErr.Store(&ProduceError{Err: errBoom})
	restoring := restoringTask(t, a, tid("1", 0))
	mustNotErr(t, restoring.stores["counts"].Put([]byte("a"), []byte("=a")))
	st, err := a.Store("counts")
	mustNotErr(t, err)
	if _, _, err := st.Get([]byte("a")); !errors.Is(err, ErrStoreNotReady) {
		t.Fatalf("Get while the only task restores: %v, want ErrStoreNotReady", err)
	}
	if _, err := st.Range(nil, nil); !errors.Is(err, ErrStoreNotReady) {
		t.Fatalf("Range while the only task restores: %v, want ErrStoreNotReady", err)
	}
	if _, err := st.ApproximateCount(); !errors.Is(err, ErrStoreNotReady) {
		t.Fatalf("ApproximateCount while the only task restores: %v, want ErrStoreNotReady", err)
	}
	mustNotErr(t, activeTask(t, a, tid("1", 1)).stores["counts"].Put([]byte("b"), []byte("=b")))
	if _, ok, err := st.Get([]byte("a")); ok || err != nil {
		t.Fatalf("Get of the restoring task's key beside a running task: %v %v, want absent", ok, err)
	}
	it, err := st.Range(nil, nil)
	mustNotErr(t, err)
	if got := drain(t, it); got != "[b]" {
		t.Fatalf("Range: %s, want only the running task's key", got)
	}
	startRunning(t, a, tid("1", 0))
	if v, ok, err := st.Get([]byte("a")); !ok || err != nil || string(v) != "=a" {
		t.Fatalf("Get once the task runs: %q %v %v", v, ok, err)
	}
}

func TestLocalStoreLooksInPartitionOrder(t *testing.T) {
	a := queryApp(t)
	// The same key in two tasks (it cannot happen with a partitioner; here it shows the order).
	a.tasks[tid("1", 0)].stores["counts"].eng.Apply(batchOf("k", "from 1_0"), -1)
	a.tasks[tid("1", 1)].stores["counts"].eng.Apply(batchOf("k", "from 1_1"), -1)
	st, _ := a.Store("counts")
	for range 5 {
		if v, _, _ := st.Get([]byte("k")); string(v) != "from 1_0" {
			t.Fatalf("Get k = %q, want the lowest partition's", v)
		}
	}
}

func batchOf(kv ...string) *store.Batch {
	var b store.Batch
	for i := 0; i < len(kv); i += 2 {
		b.Put([]byte(kv[i]), []byte(kv[i+1]))
	}
	return &b
}

func TestLocalStoreErrors(t *testing.T) {
	k := &fakeKind{}
	a := queryApp(t, WithStores(k))
	st, _ := a.Store("counts")
	eng := a.tasks[tid("1", 1)].stores["counts"].eng.(*countingEngine)
	eng.err = errBoom
	if _, _, err := st.Get([]byte("b")); !errors.Is(err, errBoom) {
		t.Errorf("Get: %v", err)
	}
	if _, _, err := st.Get([]byte("a")); err != nil {
		t.Errorf("a key found before the failing store: %v", err)
	}
	if _, err := st.ApproximateCount(); !errors.Is(err, errBoom) {
		t.Errorf("count: %v", err)
	}
	if _, err := st.Range(nil, nil); !errors.Is(err, errBoom) {
		t.Errorf("Range: %v", err)
	}
}

func TestAppStoreUnknown(t *testing.T) {
	a := queryApp(t)
	_, err := a.Store("nope")
	if !errors.Is(err, ErrUnknownStore) || err.Error() != `stream: unknown store "nope": no subtopology of the topology has it` {
		t.Errorf("got %v", err)
	}
	if _, _, err := KeyValue("nope", serde.String, serde.String).Query(a, "k"); !errors.Is(err, ErrUnknownStore) {
		t.Errorf("Query: %v", err)
	}
	if _, err := a.Store("sums"); err != nil {
		t.Errorf("sums: %v", err)
	}
}

// sliceIter iterates over keys, then reports err.
type sliceIter struct {
	keys     []string
	i        int
	err      error
	closeErr error
	closed   *int
}

func (s *sliceIter) Next() bool {
	s.i++
	return s.i <= len(s.keys)
}
func (s *sliceIter) Key() []byte   { return []byte(s.keys[s.i-1]) }
func (s *sliceIter) Value() []byte { return []byte("=" + s.keys[s.i-1]) }
func (s *sliceIter) Err() error {
	if s.i > len(s.keys) {
		return s.err
	}
	return nil
}
func (s *sliceIter) Close() error {
	if s.closed != nil {
		*s.closed++
	}
	return s.closeErr
}

func TestMergeOrderAndClose(t *testing.T) {
	closed := 0
	second := errors.New("second")
	m := newMerge([]store.Iterator{
		&sliceIter{keys: []string{"b", "e", "f"}, closed: &closed},
		&sliceIter{keys: nil, closed: &closed},
		&sliceIter{keys: []string{"a", "c", "d", "g"}, closed: &closed, closeErr: errBoom},
		&sliceIter{keys: []string{"aa"}, closed: &closed, closeErr: second},
	})
	var got []string
	for m.Next() {
		if string(m.Value()) != "="+string(m.Key()) {
			t.Fatalf("value %q of %q", m.Value(), m.Key())
		}
		got = append(got, string(m.Key()))
	}
	if fmt.Sprint(got) != "[a aa b c d e f g]" || m.Err() != nil {
		t.Errorf("merged %v err %v", got, m.Err())
	}
	if m.Next() {
		t.Error("Next after the end")
	}
	if err := m.Close(); err != errBoom || closed != 4 {
		t.Errorf("Close: %v, %d closed; want the first error and all closed", err, closed)
	}
	if m := newMerge(nil); m.Next() || m.Err() != nil || m.Close() != nil {
		t.Error("an empty merge")
	}
}

func TestMergeStopsOnAnError(t *testing.T) {
	m := newMerge([]store.Iterator{
		&sliceIter{keys: []string{"b", "c"}},
		&sliceIter{keys: []string{"a"}, err: errBoom},
		&sliceIter{keys: []string{"d"}, err: errors.New("later")},
	})
	if !m.Next() || string(m.Key()) != "a" {
		t.Fatal("first key")
	}
	if m.Next() {
		t.Errorf("Next went on to %q after an iterator failed", m.Key())
	}
	if m.Err() != errBoom {
		t.Errorf("Err %v, want the first", m.Err())
	}
	m.Next()
	if m.Err() != errBoom {
		t.Errorf("Err %v, want the first kept", m.Err())
	}
}

func TestKeyMetadataBeforeRun(t *testing.T) {
	a := queryApp(t)
	if _, ok, err := a.KeyMetadata(context.Background(), "counts", []byte("k")); ok || err != ErrNotRunning {
		t.Fatalf("got %v %v", ok, err)
	}
}

func TestKeyMetadata(t *testing.T) {
	a := queryApp(t)
	fakeBroker(t, a)
	ctx := context.Background()
	if _, _, err := a.KeyMetadata(ctx, "nope", nil); !errors.Is(err, ErrUnknownStore) ||
		err.Error() != `stream: unknown store "nope": no subtopology of the topology has it` {
		t.Fatalf("unknown store: %v", err)
	}
	key := []byte("some key")
	p := int32(kgo.StickyKeyPartitioner(nil).ForTopic(repartTopc).Partition(&kgo.Record{Key: key}, 2))
	md, ok, err := a.KeyMetadata(ctx, "sums", key)
	if err != nil || ok || md.Task != tid("1", p) || md.Partition != p {
		t.Fatalf("no endpoints: %+v %v %v", md, ok, err)
	}
	e1, e2, e3 := heartbeat.Endpoint{Host: "h1", Port: 1}, heartbeat.Endpoint{Host: "h2", Port: 2}, heartbeat.Endpoint{Host: "h3", Port: 3}
	other := 1 - p
	eps := map[heartbeat.Endpoint]heartbeat.EndpointPartitions{
		e1: {Active: map[string][]int32{repartTopc: {other}}, Standby: map[string][]int32{repartTopc: {p}}},
		e2: {Active: map[string][]int32{repartTopc: {p}}},
		e3: {Active: map[string][]int32{"in": {p}}, Standby: map[string][]int32{repartTopc: {other, p}}},
	}
	a.endpoints.Store(&eps)
	md, ok, err = a.KeyMetadata(ctx, "counts", key)
	if err != nil || !ok || md.Active != e2 || fmt.Sprint(md.Standby) != "[h1:1 h3:3]" {
		t.Fatalf("endpoints: %+v %v %v", md, ok, err)
	}
	delete(eps, e2)
	if md, ok, _ = a.KeyMetadata(ctx, "counts", key); ok || md.Active != (heartbeat.Endpoint{}) {
		t.Errorf("no active endpoint: %+v %v", md, ok)
	}
}

func TestKeyMetadataTopicNotKnown(t *testing.T) {
	a := queryApp(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"))
	mustNotErr(t, err)
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	mustNotErr(t, err)
	defer cl.Close()
	a.cl = cl
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err = a.KeyMetadata(ctx, "counts", []byte("k"))
	if err == nil || err.Error()[:43] != "stream: topic app-r-repartition is not know" {
		t.Fatalf("got %v", err)
	}
}

func TestWatchFollowsTheMember(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	eps := map[heartbeat.Endpoint]heartbeat.EndpointPartitions{{Host: "h", Port: 1}: {}}
	events := make(chan membership.Event, 10)
	a.setState(Running)
	events <- membership.Event{Kind: membership.EventStateChanged, State: membership.Stable}
	events <- membership.Event{Kind: membership.EventEndpointsChanged, Endpoints: eps}
	close(events)
	a.watch(events)
	if a.State() != Running || a.endpoints.Load() == nil || len(*a.endpoints.Load()) != 1 {
		t.Fatalf("state %v endpoints %v", a.State(), a.endpoints.Load())
	}

	events = make(chan membership.Event, 10)
	events <- membership.Event{Kind: membership.EventStateChanged, State: membership.Reconciling}
	close(events)
	a.watch(events)
	if a.State() != Rebalancing {
		t.Fatalf("state %v, want REBALANCING when the member is not stable", a.State())
	}
	a.setState(PendingShutdown)
	events = make(chan membership.Event, 10)
	events <- membership.Event{Kind: membership.EventStateChanged, State: membership.Reconciling}
	events <- membership.Event{Kind: membership.EventShutdownRequested}
	events <- membership.Event{Kind: membership.EventFatal, Err: errBoom}
	close(events)
	a.watch(events)
	if a.State() != PendingShutdown {
		t.Errorf("state %v: a stopping App stays stopping", a.State())
	}
	if a.fatalErr() != ErrShutdownRequested {
		t.Errorf("fatal %v", a.fatalErr())
	}
	b, _ := newTestApp(t, testConfig(), testProcs())
	events = make(chan membership.Event, 1)
	events <- membership.Event{Kind: membership.EventFatal, Err: errBoom}
	close(events)
	b.watch(events)
	if b.fatalErr() != errBoom {
		t.Errorf("fatal %v", b.fatalErr())
	}
}

// ErrNotRunning's doc: "returned by queries before Run built the member, or after it returned".
func TestKeyMetadataAfterRunReturned(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	// What Run leaves behind: its client closed, the state NOT_RUNNING.
	a.cl.Close()
	a.setState(NotRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := a.KeyMetadata(ctx, "counts", []byte("k")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("BUG (stream/query.go KeyMetadata): after Run returned, KeyMetadata gives %q instead of ErrNotRunning: "+
			"it checks only a.cl == nil, and Run closes the client without clearing it", err)
	}
}

// A window store's query reads key's windows from the local stores as of the last commit, in order
// of their start within [from, to], and stops when fn says so; a write of the open transaction is
// not seen until it commits. A session store's query reads key's sessions in order of their end.
func TestWindowAndSessionQueries(t *testing.T) {
	a, tk, _ := windowTask(t, windowCounts)
	s := tk.stores["counts"]
	c := &tk.ctx
	mustNotErr(t, windowCounts.Put(c, "k", 1000, 1))
	mustNotErr(t, windowCounts.Put(c, "k", 5000, 2))
	mustNotErr(t, windowCounts.Put(c, "j", 3000, 9))
	query := func(from, to int64, limit int) string {
		var got []fetched
		mustNotErr(t, windowCounts.Query(a, "k", from, to, func(start int64, v int64) bool {
			got = append(got, fetched{start, v})
			return len(got) < limit
		}))
		return fmt.Sprint(got)
	}
	if got := query(0, 10000, 10); got != "[{1000 1} {5000 2}]" {
		t.Errorf("Query [0, 10 s] = %s", got)
	}
	if got := query(2000, 10000, 10); got != "[{5000 2}]" {
		t.Errorf("Query [2 s, 10 s] = %s", got)
	}
	if got := query(0, 10000, 1); got != "[{1000 1}]" {
		t.Errorf("Query stopped after one = %s", got)
	}
	s.pend = newOverlay()
	mustNotErr(t, windowCounts.Put(c, "k", 7000, 3))
	if got := query(0, 10000, 10); got != "[{1000 1} {5000 2}]" {
		t.Errorf("Query with an open transaction = %s, want the committed windows only", got)
	}
	mustNotErr(t, s.commitPending())
	if got := query(0, 10000, 10); got != "[{1000 1} {5000 2} {7000 3}]" {
		t.Errorf("Query after the commit = %s", got)
	}
	if err := Session("counts", time.Minute, serde.String, serde.Int64).Query(a, "k", func(windowed.Window, int64) bool { return true }); err == nil {
		t.Error("a session query of a window store")
	}
	if err := Window("nope", time.Minute, serde.String, serde.Int64).Query(a, "k", 0, 1, func(int64, int64) bool { return true }); !errors.Is(err, ErrUnknownStore) {
		t.Errorf("a query of an unknown store: %v", err)
	}

	sessions := Session("counts", time.Minute, serde.String, serde.Int64)
	a, tk, _ = windowTask(t, sessions)
	c = &tk.ctx
	for _, x := range []struct {
		w windowed.Window
		v int64
	}{{windowed.Window{Start: 1000, End: 4000}, 2}, {windowed.Window{Start: 9000, End: 9000}, 1}, {windowed.Window{Start: 500, End: 6000}, 3}} {
		mustNotErr(t, sessions.Put(c, "k", x.w, x.v))
	}
	var got []string
	mustNotErr(t, sessions.Query(a, "k", func(w windowed.Window, v int64) bool {
		got = append(got, fmt.Sprintf("[%d,%d]=%d", w.Start, w.End, v))
		return true
	}))
	if fmt.Sprint(got) != "[[1000,4000]=2 [500,6000]=3 [9000,9000]=1]" {
		t.Errorf("session Query = %v, want in order of their end", got)
	}
	if err := Window("counts", time.Minute, serde.String, serde.Int64).Query(a, "k", 0, 1, func(int64, int64) bool { return true }); err == nil {
		t.Error("a window query of a session store")
	}
}
