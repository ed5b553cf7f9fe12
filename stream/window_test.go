package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// windowCounts is the window store of the tests: "counts" of subtopology 1, keeping windows for
// 10 s after the newest start.
var windowCounts = Window("counts", 10*time.Second, serde.String, serde.Int64)

// windowTask is an active task of an App whose subtopology-1 processor uses counts as a window store.
func windowTask(t *testing.T, decl Store, opts ...Option) (*App, *task, *produced) {
	t.Helper()
	procs := testProcs()
	procs["1"] = Connect(procs["1"], decl)
	a, _ := newTestApp(t, testConfig(), procs, opts...)
	prod := fakeBroker(t, a)
	tk := activeTask(t, a, tid("1", 1))
	tk.ctx = Context{app: a, task: tk, ts: time.UnixMilli(500)}
	return a, tk, prod
}

// wkey is Kafka Streams' window store key, written out: the key, the start (8 bytes), sequence 0.
func wkey(k string, start int64) []byte {
	b := append([]byte(k), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint64(b[len(k):], uint64(start))
	return append(b, 0, 0, 0, 0)
}

func int64s(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

type fetched struct {
	start int64
	v     int64
}

func fetchAll(t *testing.T, c *Context, w WindowStore[string, int64], k string, from, to int64) []fetched {
	t.Helper()
	var out []fetched
	mustNotErr(t, w.Fetch(c, k, from, to, func(start int64, v int64) bool {
		out = append(out, fetched{start, v})
		return true
	}))
	return out
}

// A window store writes Kafka Streams' window store keys to its changelog, reads its windows back by
// key and start, and fetches a key's windows in order of their start, across segments.
func TestWindowStoreWritesKafkaStreamsKeys(t *testing.T) {
	a, tk, prod := windowTask(t, windowCounts)
	c := &tk.ctx
	for _, w := range []struct {
		k     string
		start int64
		v     int64
	}{{"k", 0, 1}, {"k", 5000, 2}, {"k2", 5000, 9}} {
		mustNotErr(t, windowCounts.Put(c, w.k, w.start, w.v))
	}
	mustNotErr(t, windowCounts.Delete(c, "k2", 5000))
	mustNotErr(t, windowCounts.Put(c, "k", 61000, 3))
	mustNotErr(t, windowCounts.Put(c, "k", 60000, 4))
	// Expired by now: not kept, but logged all the same, as Kafka Streams' changelogging window store
	// logs every write (a restore skips it).
	mustNotErr(t, windowCounts.Delete(c, "k2", 5000))
	mustNotErr(t, windowCounts.Put(c, "k2", 1000, 7))
	flush(t, a)
	recs := prod.all()
	want := []struct {
		key []byte
		v   []byte
	}{{wkey("k", 0), int64s(1)}, {wkey("k", 5000), int64s(2)}, {wkey("k2", 5000), int64s(9)}, {wkey("k2", 5000), nil},
		{wkey("k", 61000), int64s(3)}, {wkey("k", 60000), int64s(4)}, {wkey("k2", 5000), nil}, {wkey("k2", 1000), int64s(7)}}
	if len(recs) != len(want) {
		t.Fatalf("%d changelog records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		if !bytes.Equal(recs[i].rec.Key, w.key) || !bytes.Equal(recs[i].rec.Value, w.v) || recs[i].rec.Topic != countsLog {
			t.Errorf("changelog record %d: %s %x=%x, want %x=%x", i, recs[i].rec.Topic, recs[i].rec.Key, recs[i].rec.Value, w.key, w.v)
		}
	}
	// The newest start is 61 000 with a retention of 10 s: the windows at 0 and 5 000 are gone.
	if _, ok, err := windowCounts.Get(c, "k", 5000); ok || err != nil {
		t.Fatalf("an expired window is read: %v %v", ok, err)
	}
	if v, ok, err := windowCounts.Get(c, "k", 61000); !ok || v != 3 || err != nil {
		t.Fatalf("Get(k, 61000) = %d %v %v", v, ok, err)
	}
	if got := fetchAll(t, c, windowCounts, "k", 0, 1<<62); fmt.Sprint(got) != "[{60000 4} {61000 3}]" {
		t.Fatalf("Fetch(k) = %v", got)
	}
	if got := fetchAll(t, c, windowCounts, "k", 60500, 61000); fmt.Sprint(got) != "[{61000 3}]" {
		t.Fatalf("Fetch(k, 60500, 61000) = %v", got)
	}
	if got := fetchAll(t, c, windowCounts, "k", 61000, 61000); fmt.Sprint(got) != "[{61000 3}]" {
		t.Fatalf("Fetch(k, 61000, 61000) = %v: a span of one start holds that start", got)
	}
	if got := fetchAll(t, c, windowCounts, "k", 61001, 60000); len(got) != 0 {
		t.Fatalf("an empty span fetched %v", got)
	}
	// A segment that still holds a start that may be live keeps its expired windows, hidden, until
	// the oldest live start passes it; then it is deleted (at 70 000 the oldest live start is 60 001).
	mustNotErr(t, windowCounts.Put(c, "k", 70000, 5))
	if got := fetchAll(t, c, windowCounts, "k", 0, 1<<62); fmt.Sprint(got) != "[{61000 3} {70000 5}]" {
		t.Fatalf("Fetch(k) = %v", got)
	}
	if got := fetchAll(t, c, windowCounts, "k", 60000, 65000); fmt.Sprint(got) != "[{61000 3}]" {
		t.Fatalf("Fetch(k, 60000, 65000) = %v: a window after the span's end in its segment was read", got)
	}
	// (A 10 s in-memory store has segments of 10 s: 60 000 and 61 000 in one, 70 000 in the next,
	// the earlier ones deleted.)
	span := tk.stores["counts"].win.span
	it, err := tk.stores["counts"].eng.Iterate(nil, nil)
	mustNotErr(t, err)
	n := 0
	for it.Next() {
		if seg := int64(binary.BigEndian.Uint64(it.Key())); seg < 60000/span || seg > 70000/span {
			t.Errorf("an entry of segment %d is kept (segments of %d ms)", seg, span)
		}
		n++
	}
	mustNotErr(t, it.Close())
	if n != 3 {
		t.Fatalf("%d entries kept, want the 3 of the segments of 60 000 to 70 000", n)
	}
	if pos, ok := tk.stores["counts"].eng.Position(); ok {
		t.Fatalf("expiry recorded a changelog position (%d): only acknowledged writes do", pos)
	}
	// A window older than the retention is not kept; its write is logged (and its time does not
	// move the store's stream time).
	mustNotErr(t, windowCounts.Put(c, "k", 100, 7))
	if _, ok, _ := windowCounts.Get(c, "k", 100); ok {
		t.Fatal("a write of an expired window was kept")
	}
	flush(t, a)
	if recs := prod.all(); len(recs) != len(want)+2 || !bytes.Equal(recs[len(recs)-1].rec.Key, wkey("k", 100)) {
		t.Fatal("the write of an expired window did not reach the changelog")
	}
}

// A key that has another key as its prefix is not taken for it: Fetch reads the key's own windows.
func TestWindowStoreFetchKeepsKeysApart(t *testing.T) {
	_, tk, _ := windowTask(t, windowCounts)
	c := &tk.ctx
	long := "a" + string([]byte{0, 0, 0, 0, 0, 0, 0x13})
	mustNotErr(t, windowCounts.Put(c, "a", 1000, 1))
	mustNotErr(t, windowCounts.Put(c, long, 1000, 2))
	mustNotErr(t, windowCounts.Put(c, "a", 3000, 3))
	mustNotErr(t, windowCounts.Put(c, "", 2000, 4))
	if got := fetchAll(t, c, windowCounts, "a", 0, 5000); fmt.Sprint(got) != "[{1000 1} {3000 3}]" {
		t.Fatalf("Fetch(a) = %v", got)
	}
	if got := fetchAll(t, c, windowCounts, long, 0, 5000); fmt.Sprint(got) != "[{1000 2}]" {
		t.Fatalf("Fetch(long) = %v", got)
	}
	if got := fetchAll(t, c, windowCounts, "", 0, 5000); fmt.Sprint(got) != "[{2000 4}]" {
		t.Fatalf("Fetch(empty key) = %v", got)
	}
	// A window store key with another sequence number (a join's store keeps duplicates so) is one of
	// the key's windows too, after sequence 0 of the same start.
	mustNotErr(t, tk.stores["counts"].Put(windowed.AppendStoreKey(nil, []byte("a"), 3000, 7), int64s(9)))
	if got := fetchAll(t, c, windowCounts, "a", 0, 5000); fmt.Sprint(got) != "[{1000 1} {3000 3} {3000 9}]" {
		t.Fatalf("Fetch(a) with a duplicate = %v", got)
	}
	if got := fetchAll(t, c, windowCounts, "a", 0, 3000); fmt.Sprint(got) != "[{1000 1} {3000 3} {3000 9}]" {
		t.Fatalf("Fetch(a, 0, 3000) with a duplicate at its end = %v", got)
	}
	var first []int64
	mustNotErr(t, windowCounts.Fetch(c, "a", 0, 5000, func(start int64, _ int64) bool { first = append(first, start); return false }))
	if fmt.Sprint(first) != "[1000]" {
		t.Fatalf("Fetch went on after false: %v", first)
	}
}

// Restoring a window store reads Kafka Streams' keys from the changelog, skips windows expired
// meanwhile, and refuses a key that is not a window store key with the record that held it.
func TestWindowStoreRestore(t *testing.T) {
	_, tk, _ := windowTask(t, TimestampedWindowStore("counts", 10*time.Second))
	s := tk.stores["counts"]
	if !s.timestamped || s.win == nil || s.win.retention != 10000 {
		t.Fatalf("the store opened as %+v", s.win)
	}
	mustNotErr(t, s.restore([]*kgo.Record{
		{Key: wkey("k", 1000), Value: []byte("a"), Timestamp: time.UnixMilli(1500), Offset: 0},
		{Key: wkey("k", 30000), Value: []byte("b"), Timestamp: time.UnixMilli(30500), Offset: 1},
		{Key: wkey("k", 2000), Value: []byte("c"), Timestamp: time.UnixMilli(2500), Offset: 2}, // expired by then
		{Key: wkey("j", 25000), Value: []byte("d"), Timestamp: time.UnixMilli(25000), Offset: 3},
		{Key: wkey("j", 25000), Value: nil, Offset: 4},
	}, 5))
	kv := KeyValue("counts", serde.Bytes, serde.Bytes)
	c := &tk.ctx
	if v, ok, err := kv.Get(c, wkey("k", 30000)); err != nil || !ok || !bytes.Equal(v, append(int64s(30500), 'b')) {
		t.Fatalf("restored window: %x %v %v", v, ok, err)
	}
	for _, k := range [][]byte{wkey("k", 1000), wkey("k", 2000), wkey("j", 25000)} {
		if _, ok, err := kv.Get(c, k); ok || err != nil {
			t.Errorf("window %x: found %v, err %v", k, ok, err)
		}
	}
	err := s.restore([]*kgo.Record{{Topic: countsLog, Partition: 1, Key: []byte("short"), Value: []byte("x"), Offset: 5}}, 6)
	var se *store.Error
	if !errors.As(err, &se) || !errors.Is(err, ErrWindowKey) || se.Op != "restore" {
		t.Fatalf("a changelog key that is not a window key: %v", err)
	}
	if s.checkpointed != 5 {
		t.Fatalf("a refused restore moved the position to %d", s.checkpointed)
	}
}

// Under exactly-once a window store's writes wait in the open transaction: reads and Fetch see them,
// the engine does not until the commit, and a key-ordered Range is refused.
func TestWindowStoreInATransaction(t *testing.T) {
	_, tk, _ := windowTask(t, windowCounts)
	s := tk.stores["counts"]
	s.pend = newOverlay()
	c := &tk.ctx
	mustNotErr(t, windowCounts.Put(c, "k", 55000, 1))
	mustNotErr(t, windowCounts.Put(c, "k", 61000, 2))
	if got := fetchAll(t, c, windowCounts, "k", 0, 100000); fmt.Sprint(got) != "[{55000 1} {61000 2}]" {
		t.Fatalf("Fetch in the transaction = %v", got)
	}
	if _, ok, _ := s.committedGet(wkey("k", 55000)); ok {
		t.Fatal("the engine holds a write of the open transaction")
	}
	mustNotErr(t, s.commitPending())
	if v, ok, _ := s.committedGet(wkey("k", 61000)); !ok || !bytes.Equal(v, int64s(2)) {
		t.Fatalf("committed: %x %v", v, ok)
	}
	if _, err := s.Range(nil, nil); err == nil {
		t.Fatal("Range over a window store")
	}
	if _, err := s.committedRange(nil, nil); err == nil {
		t.Fatal("a query's Range over a window store")
	}
	if _, _, err := s.Get([]byte("short")); !errors.Is(err, ErrWindowKey) {
		t.Fatalf("Get of a key that is not a window key: %v", err)
	}
	if err := s.Put([]byte("short"), []byte("x")); !errors.Is(err, ErrWindowKey) {
		t.Fatalf("Put of a key that is not a window key: %v", err)
	}
	if err := windowCounts.Put(c, "k", -1, 1); err == nil {
		t.Fatal("a window starting before the epoch was written")
	}
	if _, err := startOf(windowed.AppendStoreKey(nil, []byte("k"), -5, 0)); !errors.Is(err, ErrWindowKey) {
		t.Fatalf("a stored start before the epoch: %v", err)
	}
}

// Fetch on a store that is not a window store, or not the processor's, says so.
func TestWindowStoreMisuse(t *testing.T) {
	_, tk, _ := windowTask(t, StoreName("counts"))
	c := &tk.ctx
	if err := windowCounts.Fetch(c, "k", 0, 1, func(int64, int64) bool { return true }); err == nil {
		t.Fatal("Fetch on a key-value store")
	}
	other := Window("sums", time.Second, serde.String, serde.Int64)
	if err := other.Fetch(c, "k", 0, 1, func(int64, int64) bool { return true }); !errors.Is(err, ErrUnknownStore) {
		t.Fatalf("Fetch on a store the processor is not connected to: %v", err)
	}
	if windowCounts.Name() != "counts" {
		t.Fatal("Name")
	}
}

// SendBy places a record by its partition key (a windowed key by its inner key, whatever its
// window, as Kafka Streams' WindowedStreamPartitioner), while a typed Topic places it by its whole
// key, as a Kafka Streams repartition does.
func TestSendByPlacesARecordByItsPartitionKey(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	tk := activeTask(t, a, tid("1", 0))
	c := &Context{app: a, task: tk, ts: time.UnixMilli(1000)}
	ks := windowed.TimeKeySerde(serde.String, 1000)
	byOwnKey := kgo.StickyKeyPartitioner(nil).ForTopic("out")
	var own []int32
	for _, start := range []int64{0, 1000, 2000, 3000, 4000, 5000} {
		kb, _ := ks.Encode(windowed.Key[string]{Key: "word", Window: windowed.Window{Start: start, End: start + 1000}})
		mustNotErr(t, c.SendBy("out", c.ts, []byte("word"), kb, int64s(start)))
		own = append(own, int32(byOwnKey.Partition(&kgo.Record{Key: kb}, 2)))
	}
	mustNotErr(t, Output("out", ks, serde.Int64).Send(c, windowed.Key[string]{Key: "word", Window: windowed.Window{Start: 0, End: 1000}}, 9))
	if !slices.Contains(own, 0) {
		t.Fatal("the test's windowed keys all hash to the inner key's partition: it proves nothing")
	}
	// A partition key that does not lead the key places it all the same; and partition keys of
	// other lengths and bytes between the records that share one.
	mustNotErr(t, c.SendBy("out", c.ts, []byte("word"), []byte("key-of-its-own"), nil))
	mustNotErr(t, c.SendBy("out", c.ts, []byte("k"), []byte("k\x00\x00"), nil)) // "k" goes to 0 of 8
	mustNotErr(t, c.SendBy("out", c.ts, []byte("wore"), []byte("word\x00"), nil))
	flush(t, a)
	recs := prod.all()
	if len(recs) != 10 {
		t.Fatalf("%d records", len(recs))
	}
	wore, ownKey := int32(tasks.KeyPartition([]byte("wore"), 2)), int32(tasks.KeyPartition([]byte("word\x00"), 2))
	if wore == ownKey {
		t.Fatal("\"wore\" and the key it places hash alike: the test proves nothing")
	}
	for i, want := range []int32{1, 0, wore} {
		if r := recs[7+i]; r.rec.Partition != want {
			t.Errorf("record %q went to %d, want its partition key's %d", r.rec.Key, r.rec.Partition, want)
		}
	}
	for _, r := range recs[:6] {
		// murmur2("word") goes to 3 of 8 partitions (Kafka's default partitioner), so to 1 of 2.
		if r.rec.Partition != 1 || r.rec.Topic != "out" || len(r.rec.Key) != 12 {
			t.Errorf("record %x went to %s[%d], want out[1]", r.rec.Key, r.rec.Topic, r.rec.Partition)
		}
	}
	if recs[6].rec.Partition != own[0] {
		t.Errorf("a typed send of a windowed key went to %d, want its whole key's partition %d", recs[6].rec.Partition, own[0])
	}
	if err := c.SendBy(countsLog, time.Time{}, nil, nil, nil); err == nil {
		t.Error("SendBy to a changelog was accepted")
	}
}

// Under exactly-once, expiry waits for the commit: an aborted transaction whose windows moved the
// store's time on deletes nothing and takes the time back (the committed windows are read again,
// as Kafka Streams' restore of an aborted task finds them); a committed one deletes the expired
// segments in its own batch. Queries see the store's time as of the last commit.
func TestWindowStoreExpiryFollowsTheTransaction(t *testing.T) {
	a, tk, _ := windowTask(t, windowCounts)
	s := tk.stores["counts"]
	s.pend = newOverlay()
	c := &tk.ctx
	commit := func() {
		t.Helper()
		flush(t, a)
		mustNotErr(t, s.commitPending())
	}
	mustNotErr(t, windowCounts.Put(c, "k", 125000, 1))
	commit()
	mustNotErr(t, windowCounts.Put(c, "other", 400000, 2))
	if _, ok, _ := windowCounts.Get(c, "k", 125000); ok {
		t.Fatal("the open transaction moved the store's time past k's window: it must not be read in it")
	}
	if v, ok, err := s.committedGet(wkey("k", 125000)); !ok || err != nil || !bytes.Equal(v, int64s(1)) {
		t.Fatalf("a query (the committed state) does not see k's window: %x %v %v", v, ok, err)
	}
	s.dropPending() // the transaction aborted
	if v, ok, err := windowCounts.Get(c, "k", 125000); !ok || err != nil || v != 1 {
		t.Fatalf("after the abort k's committed window is gone: %d %v %v", v, ok, err)
	}
	mustNotErr(t, windowCounts.Put(c, "other", 400000, 2))
	mustNotErr(t, windowCounts.Put(c, "k", 125000, 3)) // expired by now: skipped
	commit()
	if _, ok, _ := s.committedGet(wkey("k", 125000)); ok {
		t.Fatal("a query reads a window the committed transaction let go")
	}
	it, err := s.eng.Iterate(nil, nil)
	mustNotErr(t, err)
	var segs []uint64
	for it.Next() {
		segs = append(segs, binary.BigEndian.Uint64(it.Key()))
	}
	mustNotErr(t, it.Close())
	if want := fmt.Sprint([]int64{400000 / s.win.span}); fmt.Sprint(segs) != want {
		t.Fatalf("segments kept %v, want only %s (the window at 400 000): the commit deletes the expired ones", segs, want)
	}
}

// The window store's time at its edges, from Kafka Streams' in-memory window store: a window at
// exactly the newest start minus the retention is gone, one a millisecond later is kept; before any
// write (and after a wipe, a commit or a rollback of nothing) every window is kept, even with the
// shortest retention.
func TestWindowStateEdges(t *testing.T) {
	w := newWindowState(windowSpec{retention: 10000}, true)
	w.observe(61000)
	if w.live(51000) || !w.live(51001) {
		t.Fatalf("live(51000) %v, live(51001) %v: want gone, kept", w.live(51000), w.live(51001))
	}
	short := newWindowState(windowSpec{retention: 1}, true)
	check := func(when string) {
		t.Helper()
		if !short.live(0) || !liveAt(short.queried.Load(), short.retention, 0) {
			t.Fatalf("%s: a window at 0 is not kept before any write", when)
		}
	}
	check("new")
	short.rollback()
	check("after a rollback of nothing")
	short.commit()
	check("after a commit of nothing")
	short.observe(5)
	short.reset()
	check("after a reset")
	if upper, due := short.expiry(); due || upper != nil {
		t.Fatalf("expiry of an empty store: %x %v", upper, due)
	}
	// The oldest live start at exactly a segment's first (120 000, segment 2): segments 0 and 1 go,
	// once; a millisecond earlier segment 1 still holds a live start.
	e := newWindowState(windowSpec{retention: 10000}, true)
	e.observe(129998)
	if upper, due := e.expiry(); !due || binary.BigEndian.Uint64(upper) != 1 {
		t.Fatalf("expiry at 129 998: %x %v, want below segment 1", upper, due)
	}
	e.observe(129999)
	if upper, due := e.expiry(); !due || binary.BigEndian.Uint64(upper) != 2 {
		t.Fatalf("expiry at 129 999: %x %v, want below segment 2", upper, due)
	}
	if upper, due := e.expiry(); due {
		t.Fatalf("expiry again with nothing new: %x", upper)
	}
}

// Fetch under exactly-once visits every segment that holds a window, in the engine or in the open
// transaction, in order: a committed window before a pending one in a later segment is read first.
func TestWindowStoreFetchAcrossCommittedAndPendingSegments(t *testing.T) {
	long := Window("counts", time.Hour, serde.String, serde.Int64)
	a, tk, _ := windowTask(t, long)
	s := tk.stores["counts"]
	s.pend = newOverlay()
	c := &tk.ctx
	mustNotErr(t, long.Put(c, "k", 61000, 1))
	flush(t, a)
	mustNotErr(t, s.commitPending())
	mustNotErr(t, long.Put(c, "k", 185000, 2))
	var got []fetched
	mustNotErr(t, long.Fetch(c, "k", 0, 200000, func(start int64, v int64) bool {
		got = append(got, fetched{start, v})
		return true
	}))
	if fmt.Sprint(got) != "[{61000 1} {185000 2}]" {
		t.Fatalf("Fetch = %v, want the committed window of segment 1, then the pending one of segment 3", got)
	}
}

// A window store that retains duplicates keeps every value put, numbered 1, 2, … by its sequence in
// the changelog keys (Kafka Streams' seqnum), fetches them all in the order they were put, and
// refuses Get and Delete; a store not declared so refuses such a Put.
func TestWindowStoreRetainsDuplicates(t *testing.T) {
	dups := windowCounts.RetainDuplicates()
	a, tk, prod := windowTask(t, dups)
	c := &tk.ctx
	mustNotErr(t, dups.Put(c, "k", 1000, 1))
	mustNotErr(t, dups.Put(c, "k", 1000, 2))
	mustNotErr(t, dups.Put(c, "k", 500, 3))
	if got := fetchAll(t, c, dups, "k", 0, 2000); fmt.Sprint(got) != "[{500 3} {1000 1} {1000 2}]" {
		t.Fatalf("Fetch = %v", got)
	}
	flush(t, a)
	recs := prod.all()
	for i, seq := range []int32{1, 2, 3} {
		if _, _, s, err := windowed.SplitStoreKey(recs[i].rec.Key); err != nil || s != seq {
			t.Errorf("changelog record %d: sequence %d, want %d (%v)", i, s, seq, err)
		}
	}
	if _, _, err := dups.Get(c, "k", 1000); !errors.Is(err, ErrDuplicates) {
		t.Errorf("Get: %v, want ErrDuplicates", err)
	}
	if err := dups.Delete(c, "k", 1000); !errors.Is(err, ErrDuplicates) {
		t.Errorf("Delete: %v, want ErrDuplicates", err)
	}
	_, plain, _ := windowTask(t, windowCounts)
	if err := dups.Put(&plain.ctx, "k", 1000, 1); err == nil {
		t.Error("a duplicate was put in a store that does not retain them")
	}
}

// A null put in a store that retains duplicates (a stream-stream join's record without a value)
// deletes nothing and leaves the store's time, but takes the next sequence number and logs a
// tombstone, as Kafka Streams' changelogging layer does; in another store it is a deletion.
func TestWindowStorePutNull(t *testing.T) {
	dups := windowCounts.RetainDuplicates()
	a, tk, prod := windowTask(t, dups)
	c := &tk.ctx
	mustNotErr(t, dups.Put(c, "k", 1000, 1))
	mustNotErr(t, dups.PutNull(c, "k", 90000))
	mustNotErr(t, dups.Put(c, "k", 1000, 2))
	// 90 000 did not move the store's time: the windows at 1 000 are live.
	if got := fetchAll(t, c, dups, "k", 0, 100000); fmt.Sprint(got) != "[{1000 1} {1000 2}]" {
		t.Fatalf("Fetch = %v", got)
	}
	flush(t, a)
	recs := prod.all()
	if len(recs) != 3 {
		t.Fatalf("%d changelog records, want 3", len(recs))
	}
	for i, w := range []struct {
		start int64
		seq   int32
		null  bool
	}{{1000, 1, false}, {90000, 2, true}, {1000, 3, false}} {
		k, start, seq, err := windowed.SplitStoreKey(recs[i].rec.Key)
		if err != nil || string(k) != "k" || start != w.start || seq != w.seq || (recs[i].rec.Value == nil) != w.null {
			t.Errorf("changelog record %d: %q %d #%d %x, want %d #%d null %v", i, k, start, seq, recs[i].rec.Value, w.start, w.seq, w.null)
		}
	}
	_, plain, _ := windowTask(t, windowCounts)
	mustNotErr(t, windowCounts.Put(&plain.ctx, "k", 1000, 1))
	mustNotErr(t, windowCounts.PutNull(&plain.ctx, "k", 1000))
	if _, ok, err := windowCounts.Get(&plain.ctx, "k", 1000); ok || err != nil {
		t.Fatalf("a null put in a plain store did not delete: %v %v", ok, err)
	}
}

// A store that does not know its newest time yet (a persistent store reopened on its data, before
// its next write) still reads every segment: a window fetch and a session look-up find what it holds
// past the first minute.
func TestWindowAndSessionStoresReadEverySegmentBeforeTheirTimeIsKnown(t *testing.T) {
	_, tk, _ := windowTask(t, windowCounts)
	c := &tk.ctx
	mustNotErr(t, windowCounts.Put(c, "k", 125000, 1))
	mustNotErr(t, windowCounts.Put(c, "k", 126000, 2))
	tk.stores["counts"].win.reset() // as a reopened persistent store starts
	if got := fetchAll(t, c, windowCounts, "k", 0, 200000); fmt.Sprint(got) != "[{125000 1} {126000 2}]" {
		t.Fatalf("Fetch after the reopen = %v", got)
	}
	_, st, _ := windowTask(t, sessionCounts)
	sc := &st.ctx
	mustNotErr(t, sessionCounts.Put(sc, "k", windowed.Window{Start: 120000, End: 125000}, 3))
	st.stores["counts"].win.reset()
	if got := findAll(t, sc, "k", 0, 1<<62); got != "[{{120000 125000} 3}]" {
		t.Fatalf("FindSessions after the reopen = %s", got)
	}
}

// FetchAll reads every key's windows with a start in [from, to], ordered by start, then key bytes,
// then sequence (Kafka Streams' time-ordered fetchAll), across segments and the open transaction's
// writes, without the expired ones; it stops when fn returns false.
func TestWindowStoreFetchAll(t *testing.T) {
	long := Window("counts", 10*time.Minute, serde.String, serde.Int64)
	a, tk, _ := windowTask(t, long)
	s := tk.stores["counts"]
	s.pend = newOverlay()
	c := &tk.ctx
	mustNotErr(t, long.Put(c, "b", 1000, 1))
	mustNotErr(t, long.Put(c, "a", 61000, 2)) // the next segment
	mustNotErr(t, long.Put(c, "a", 1000, 3))
	flush(t, a)
	mustNotErr(t, s.commitPending())
	mustNotErr(t, long.Put(c, "c", 1000, 4))  // pending
	mustNotErr(t, long.Put(c, "", 2000, 5))   // the empty key
	mustNotErr(t, long.Put(c, "b", 90000, 6)) // past to
	mustNotErr(t, s.Put(windowed.AppendStoreKey(nil, []byte("a"), 1000, 3), int64s(7)))
	all := func(from, to int64, n int) string {
		var out []string
		mustNotErr(t, long.FetchAll(c, from, to, func(k string, start, v int64) bool {
			out = append(out, fmt.Sprintf("%s@%d=%d", k, start, v))
			return len(out) < n
		}))
		return fmt.Sprint(out)
	}
	if got := all(0, 61000, 100); got != "[a@1000=3 a@1000=7 b@1000=1 c@1000=4 @2000=5 a@61000=2]" {
		t.Fatalf("FetchAll(0, 61000) = %s", got)
	}
	if got := all(1001, 61000, 100); got != "[@2000=5 a@61000=2]" {
		t.Fatalf("FetchAll(1001, 61000) = %s", got)
	}
	if got := all(0, 61000, 2); got != "[a@1000=3 a@1000=7]" {
		t.Fatalf("FetchAll went on after false: %s", got)
	}
	if got := all(5000, 4000, 100); got != "[]" {
		t.Fatalf("FetchAll over an empty span = %s", got)
	}
	// Windows past the retention are gone: a start 10 minutes after 1000 expires every start up to it.
	mustNotErr(t, long.Put(c, "z", 601000, 8))
	if got := all(0, 100000, 100); got != "[@2000=5 a@61000=2 b@90000=6]" {
		t.Fatalf("FetchAll after expiry = %s", got)
	}
	_, plain, _ := windowTask(t, StoreName("counts"))
	if err := long.FetchAll(&plain.ctx, 0, 1, func(string, int64, int64) bool { return true }); err == nil {
		t.Fatal("FetchAll of a store not declared a window store")
	}
}

// An in-memory window store whose retention is shorter than a segment (a stream-stream join's store
// over a window of milliseconds) has segments as long as its retention: it holds at most about
// twice its retention, where a minute's segments would hold every window of the minute. A persistent
// store keeps minute segments, its layout whatever the retention.
func TestShortInMemoryWindowStoreExpiresBySegmentsOfItsRetention(t *testing.T) {
	short := Window("counts", 10*time.Millisecond, serde.String, serde.Int64)
	_, tk, _ := windowTask(t, short)
	c := &tk.ctx
	for start := int64(0); start < 1000; start += 5 {
		mustNotErr(t, short.Put(c, "k", start, start))
	}
	n, err := tk.stores["counts"].eng.ApproximateCount()
	mustNotErr(t, err)
	if n > 5 {
		t.Fatalf("the store holds %d windows of a 10 ms retention written every 5 ms; want at most 5", n)
	}
	if got := fetchAll(t, c, short, "k", 0, 2000); fmt.Sprint(got) != "[{990 990} {995 995}]" {
		t.Fatalf("Fetch = %v, want the windows of the last 10 ms", got)
	}
	if w := newWindowState(windowSpec{retention: 10}, true); w.span != windowSegmentMs {
		t.Fatalf("a persistent store's span %d, want %d", w.span, windowSegmentMs)
	}
	if w := newWindowState(windowSpec{retention: 10 * windowSegmentMs}, false); w.span != windowSegmentMs {
		t.Fatalf("a long in-memory store's span %d, want %d", w.span, windowSegmentMs)
	}
}
