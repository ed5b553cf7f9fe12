package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func flush(t *testing.T, a *App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mustNotErr(t, flushErr(a, ctx))
}

func TestKVStoreWritesThroughToTheChangelog(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	tk := activeTask(t, a, tid("1", 1))
	tk.ctx.ts = time.UnixMilli(777)
	s := tk.stores["counts"]

	key, val := []byte("k"), []byte("v")
	mustNotErr(t, s.Put(key, val))
	key[0], val[0] = 'X', 'Y' // the caller reuses its buffers
	if v, ok, err := s.Get([]byte("k")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("Get after Put: %q %v %v", v, ok, err)
	}
	if _, ok := s.eng.Position(); ok {
		t.Error("a processor's write must not move the store's position (only acknowledged changelog writes do)")
	}
	mustNotErr(t, s.Delete([]byte("k")))
	if _, ok, _ := s.Get([]byte("k")); ok {
		t.Fatal("Delete did not delete")
	}
	mustNotErr(t, s.Put([]byte("e"), []byte{}))
	if v, ok, _ := s.Get([]byte("e")); !ok || v == nil || len(v) != 0 {
		t.Fatalf("an empty value is a value: %q %v", v, ok)
	}
	mustNotErr(t, s.Put([]byte("e"), nil)) // Kafka Streams' put(key, null): a delete
	if _, ok, _ := s.Get([]byte("e")); ok {
		t.Fatal("a nil Put did not delete")
	}
	mustNotErr(t, s.Put([]byte{}, []byte("empty key")))
	if v, ok, _ := s.Get([]byte{}); !ok || string(v) != "empty key" {
		t.Fatalf("the empty key: %q %v", v, ok)
	}
	if err := s.Put(nil, []byte("x")); !errors.Is(err, ErrNullKey) {
		t.Fatalf("a nil key: %v; want ErrNullKey", err)
	}
	if err := s.Delete(nil); !errors.Is(err, ErrNullKey) {
		t.Fatalf("a nil key deleted: %v; want ErrNullKey", err)
	}

	flush(t, a) // the client is done with the records: they may be read
	recs := prod.all()
	if len(recs) != 5 {
		t.Fatalf("%d changelog records, want 5", len(recs))
	}
	if string(recs[3].key) != "e" || !recs[3].nilValue {
		t.Errorf("a nil Put writes a tombstone: %q=%q (nil %v)", recs[3].key, recs[3].value, recs[3].nilValue)
	}
	if recs[4].rec.Key == nil || len(recs[4].rec.Key) != 0 {
		t.Errorf("the empty key reached the changelog as %#v; want an empty key, not a null one", recs[4].rec.Key)
	}
	for i, r := range recs {
		if r.rec.Topic != countsLog || r.rec.Partition != 1 || r.rec.Timestamp.UnixMilli() != 777 {
			t.Errorf("record %d: %s[%d] at %v", i, r.rec.Topic, r.rec.Partition, r.rec.Timestamp)
		}
	}
	if string(recs[0].rec.Key) != "k" || string(recs[0].rec.Value) != "v" {
		t.Errorf("the changelog record shares the caller's buffers: %q=%q", recs[0].rec.Key, recs[0].rec.Value)
	}
	if string(recs[1].key) != "k" || !recs[1].nilValue {
		t.Errorf("Delete writes a tombstone: %q=%q (nil %v)", recs[1].key, recs[1].value, recs[1].nilValue)
	}
	if string(recs[2].key) != "e" || recs[2].nilValue {
		t.Errorf("an empty value is written as a value, not a tombstone")
	}

	if s.acked.Load() != 5 {
		t.Errorf("acked %d, want the offset after the last acknowledged write (5)", s.acked.Load())
	}
	mustNotErr(t, s.checkpoint())
	if pos, ok := s.eng.Position(); !ok || pos != 5 || s.checkpointed != 5 {
		t.Errorf("checkpoint: position %d %v, checkpointed %d", pos, ok, s.checkpointed)
	}
}

func TestKVStoreRefusesWritesOnAStandby(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	tk := activeTask(t, a, tid("1", 0))
	tk.active = false
	s := tk.stores["counts"]
	for _, err := range []error{s.Put([]byte("k"), []byte("v")), s.Delete([]byte("k"))} {
		var se *store.Error
		if !errors.As(err, &se) || se.Op != "write" || se.Loc != s.loc {
			t.Fatalf("got %v", err)
		}
		if want := `store: write store "counts" of task 1_0: the task is a standby here: only active tasks write`; err.Error() != want {
			t.Errorf("message %q", err)
		}
	}
	if n, _ := s.ApproximateCount(); n != 0 || len(prod.all()) != 0 {
		t.Errorf("a standby wrote: %d keys, %d records", n, len(prod.all()))
	}
}

func TestKVStoreWriteFailsBeforeTheChangelog(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	s := activeTask(t, a, tid("1", 0)).stores["counts"]
	mustNotErr(t, s.eng.Close())
	err := s.Put([]byte("k"), []byte("v"))
	if !errors.Is(err, store.ErrClosed) || len(prod.all()) != 0 {
		t.Fatalf("got %v with %d records", err, len(prod.all()))
	}
}

func TestKVStoreAfterAProduceErrorWritesNoChangelog(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	a.produceErr.Store(&ProduceError{Err: errBoom})
	s := activeTask(t, a, tid("1", 0)).stores["counts"]
	mustNotErr(t, s.Put([]byte("k"), []byte("v")))
	if len(prod.all()) != 0 {
		t.Fatal("a record was produced after a failed write")
	}
}

func TestAFailedChangelogWriteIsFatal(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	fakeBroker(t, a)
	s := activeTask(t, a, tid("1", 0)).stores["counts"]
	s.changelog.Topic = "missing"
	mustNotErr(t, s.Put([]byte("k"), []byte("v")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pe *ProduceError
	if err := flushErr(a, ctx); !errors.As(err, &pe) || pe.Topic != "missing" {
		t.Fatalf("flush: %v", err)
	}
	if !errors.As(a.fatalErr(), &pe) || s.acked.Load() != -1 {
		t.Errorf("fatal %v acked %d", a.fatalErr(), s.acked.Load())
	}
}

func TestAckedAtKeepsTheMax(t *testing.T) {
	s := &kvStore{}
	s.acked.Store(-1)
	s.ackedAt(5)
	s.ackedAt(3)
	if s.acked.Load() != 6 {
		t.Errorf("acked %d, want 6", s.acked.Load())
	}
	s.ackedAt(6)
	if s.acked.Load() != 7 {
		t.Errorf("acked %d, want 7", s.acked.Load())
	}
}

func persistentTask(t *testing.T, k *fakeKind) (*App, *task, *kvStore, *countingEngine) {
	t.Helper()
	a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(k))
	a.stateDir = t.TempDir()
	tk := activeTask(t, a, tid("1", 0))
	s := tk.stores["counts"]
	return a, tk, s, s.eng.(*countingEngine)
}

func TestCheckpointOnlyWhenAckedMoved(t *testing.T) {
	_, _, s, eng := persistentTask(t, &fakeKind{persistent: true})
	mustNotErr(t, s.checkpoint())
	if eng.applies != 0 {
		t.Fatal("nothing acknowledged: no checkpoint")
	}
	s.ackedAt(5)
	mustNotErr(t, s.checkpoint())
	mustNotErr(t, s.checkpoint())
	if fmt.Sprint(eng.positions) != "[6]" || s.checkpointed != 6 {
		t.Fatalf("checkpoints %v, checkpointed %d", eng.positions, s.checkpointed)
	}
	s.ackedAt(0)
	mustNotErr(t, s.checkpoint())
	s.ackedAt(9)
	mustNotErr(t, s.checkpoint())
	if fmt.Sprint(eng.positions) != "[6 10]" {
		t.Fatalf("checkpoints %v", eng.positions)
	}
	s.ackedAt(10)
	eng.err = errBoom
	err := s.checkpoint()
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "checkpoint" || !errors.Is(err, errBoom) || s.checkpointed != 10 {
		t.Fatalf("failed checkpoint: %v, checkpointed %d", err, s.checkpointed)
	}
}

func TestRestoreAppliesTheChangelog(t *testing.T) {
	_, _, s, eng := persistentTask(t, &fakeKind{persistent: true})
	mustNotErr(t, s.restore(nil, -1))
	if eng.applies != 0 {
		t.Fatal("nothing to restore: no write")
	}
	mustNotErr(t, s.restore([]*kgo.Record{
		{Key: []byte("a"), Value: []byte("1"), Offset: 10},
		{Key: []byte("b"), Value: []byte("2"), Offset: 11},
		{Key: []byte("e"), Value: []byte{}, Offset: 12},
		{Key: []byte("a"), Value: nil, Offset: 14},
	}, 15))
	if _, ok, _ := s.Get([]byte("a")); ok {
		t.Error("a nil value deletes")
	}
	if v, ok, _ := s.Get([]byte("b")); !ok || string(v) != "2" {
		t.Error("b not restored")
	}
	if _, ok, _ := s.Get([]byte("e")); !ok {
		t.Error("an empty value is a value, not a tombstone")
	}
	if pos, ok := s.eng.Position(); !ok || pos != 15 || s.checkpointed != 15 || s.acked.Load() != 15 || fmt.Sprint(eng.positions) != "[15]" {
		t.Fatalf("position %d %v checkpointed %d acked %d applies %v", pos, ok, s.checkpointed, s.acked.Load(), eng.positions)
	}
	s.ackedAt(99)
	mustNotErr(t, s.restore([]*kgo.Record{{Key: []byte("c"), Value: []byte("3"), Offset: 15}}, 16))
	if s.acked.Load() != 100 || s.checkpointed != 16 {
		t.Errorf("acked %d checkpointed %d", s.acked.Load(), s.checkpointed)
	}
	eng.err = errBoom
	err := s.restore([]*kgo.Record{{Key: []byte("c"), Offset: 16}}, 17)
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "restore" || s.checkpointed != 16 {
		t.Fatalf("failed restore: %v", err)
	}
}

func TestKVStoreReadErrors(t *testing.T) {
	_, _, s, eng := persistentTask(t, &fakeKind{persistent: true})
	eng.err = errBoom
	check := func(op string, err error) {
		t.Helper()
		var se *store.Error
		if !errors.As(err, &se) || se.Op != op || se.Loc != s.loc || !errors.Is(err, errBoom) {
			t.Errorf("%s: %v", op, err)
		}
	}
	_, _, err := s.Get([]byte("k"))
	check("get", err)
	_, err = s.Range(nil, nil)
	check("range", err)
	_, err = s.Prefix([]byte("k"))
	check("range", err)
	_, err = s.ApproximateCount()
	check("count", err)
	// A store.Error from the engine is passed on as it is.
	inner := &store.Error{Op: "inner", Err: errBoom}
	eng.err = inner
	if _, _, err := s.Get(nil); err != inner {
		t.Errorf("got %v, want the engine's own error", err)
	}
}

func TestKVStorePrefixAndCount(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	a.produceErr.Store(&ProduceError{Err: errBoom}) // no client: nothing is produced
	s := activeTask(t, a, tid("1", 0)).stores["counts"]
	for _, k := range []string{"a1", "b", "a2", "a"} {
		mustNotErr(t, s.Put([]byte(k), []byte("="+k)))
	}
	it, err := s.Prefix([]byte("a"))
	mustNotErr(t, err)
	if got := drain(t, it); got != "[a a1 a2]" {
		t.Errorf("prefix a: %s", got)
	}
	if n, err := s.ApproximateCount(); n != 4 || err != nil {
		t.Errorf("count %d %v", n, err)
	}
}

func drain(t *testing.T, it store.Iterator) string {
	t.Helper()
	defer it.Close()
	var keys []string
	for it.Next() {
		if string(it.Value()) != "="+string(it.Key()) {
			t.Errorf("value %q of %q", it.Value(), it.Key())
		}
		keys = append(keys, string(it.Key()))
	}
	mustNotErr(t, it.Err())
	return fmt.Sprint(keys)
}

// failSerde fails to encode.
type failSerde struct{}

func (failSerde) Encode(string) ([]byte, error) { return nil, errBoom }
func (failSerde) Decode([]byte) (string, error) { return "", errBoom }

func typedContext(t *testing.T) (*App, *Context) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	a.produceErr.Store(&ProduceError{Err: errBoom}) // no client: nothing is produced
	tk := activeTask(t, a, tid("1", 1))
	return a, &Context{app: a, task: tk}
}

func TestKeyValueStoreTyped(t *testing.T) {
	_, c := typedContext(t)
	counts := KeyValue("counts", serde.String, serde.Int64)
	if counts.Name() != "counts" {
		t.Fatal(counts.Name())
	}
	if _, ok, err := counts.Get(c, "a"); ok || err != nil {
		t.Fatalf("absent: %v %v", ok, err)
	}
	for i, k := range []string{"c", "a", "b", "d"} {
		mustNotErr(t, counts.Put(c, k, int64(i)))
	}
	if v, ok, err := counts.Get(c, "b"); v != 2 || !ok || err != nil {
		t.Fatalf("Get b: %d %v %v", v, ok, err)
	}
	mustNotErr(t, counts.Delete(c, "d"))
	var all []string
	mustNotErr(t, counts.All(c, func(k string, v int64) bool { all = append(all, fmt.Sprint(k, v)); return true }))
	if fmt.Sprint(all) != "[a1 b2 c0]" {
		t.Errorf("All: %v", all)
	}
	all = nil
	mustNotErr(t, counts.All(c, func(k string, v int64) bool { all = append(all, k); return false }))
	if fmt.Sprint(all) != "[a]" {
		t.Errorf("All stops when fn says: %v", all)
	}
	all = nil
	mustNotErr(t, counts.Range(c, "b", "c", func(k string, v int64) bool { all = append(all, k); return true }))
	if fmt.Sprint(all) != "[b]" {
		t.Errorf("Range [b, c): %v", all)
	}
}

func TestKeyValueStoreSerdeErrors(t *testing.T) {
	_, c := typedContext(t)
	mustNotErr(t, c.Store("counts").Put([]byte("z"), []byte("x")))
	counts := KeyValue("counts", serde.String, serde.Int64)
	var de *serde.DecodeError
	_, ok, err := counts.Get(c, "z")
	if ok || !errors.As(err, &de) || err.Error()[:33] != "stream: a value in store counts: " {
		t.Errorf("bad value Get: %v", err)
	}
	err = counts.All(c, func(string, int64) bool { return true })
	if !errors.As(err, &de) || err.Error()[:33] != "stream: a value in store counts: " {
		t.Errorf("bad value All: %v", err)
	}
	err = KeyValue("counts", serde.Int64, serde.Bytes).All(c, func(int64, []byte) bool { return true })
	if !errors.As(err, &de) || err.Error()[:31] != "stream: a key in store counts: " {
		t.Errorf("bad key All: %v", err)
	}

	badKey := KeyValue[string, string]("counts", failSerde{}, serde.String)
	badVal := KeyValue[string, string]("counts", serde.String, failSerde{})
	keyMsg, valMsg := "stream: encoding a key of store counts: boom", "stream: encoding a value of store counts: boom"
	if _, _, err := badKey.Get(c, "k"); err == nil || err.Error() != keyMsg {
		t.Errorf("Get: %v", err)
	}
	if err := badKey.Put(c, "k", "v"); err == nil || err.Error() != keyMsg {
		t.Errorf("Put key: %v", err)
	}
	if err := badVal.Put(c, "k", "v"); err == nil || err.Error() != valMsg {
		t.Errorf("Put value: %v", err)
	}
	if err := badKey.Delete(c, "k"); err == nil || err.Error() != keyMsg {
		t.Errorf("Delete: %v", err)
	}
	if err := badKey.Range(c, "a", "b", func(string, string) bool { return true }); err != errBoom {
		t.Errorf("Range from: %v", err)
	}
	if err := badVal.Range(c, "a", "b", func(string, string) bool { return true }); err != nil {
		t.Errorf("Range with a good key serde: %v", err)
	}
	half := KeyValue[string, string]("counts", &onceSerde{}, serde.String)
	if err := half.Range(c, "a", "b", func(string, string) bool { return true }); err != errBoom {
		t.Errorf("Range to: %v", err)
	}
}

// onceSerde encodes once, then fails.
type onceSerde struct{ n int }

func (s *onceSerde) Encode(v string) ([]byte, error) {
	s.n++
	if s.n > 1 {
		return nil, errBoom
	}
	return []byte(v), nil
}
func (s *onceSerde) Decode(b []byte) (string, error) { return string(b), nil }

func TestUnknownStore(t *testing.T) {
	_, c := typedContext(t)
	u := c.Store("nope")
	want := `stream: unknown store "nope" in task 1_1: the task's subtopology has no changelog topic for it (topology.Names.KeyValueChangelog)`
	_, _, e1 := u.Get(nil)
	_, e2 := u.Range(nil, nil)
	_, e3 := u.Prefix(nil)
	_, e4 := u.ApproximateCount()
	for i, err := range []error{e1, e2, e3, e4, u.Put(nil, nil), u.Delete(nil)} {
		if !errors.Is(err, ErrUnknownStore) || err.Error() != want {
			t.Errorf("%d: %v", i, err)
		}
	}
	if _, _, err := KeyValue("nope", serde.String, serde.String).Get(c, "k"); !errors.Is(err, ErrUnknownStore) {
		t.Errorf("typed: %v", err)
	}
	if c.Store("counts") != c.task.stores["counts"] {
		t.Error("a known store")
	}
	// An empty name before any store was resolved is unknown too.
	fresh := activeTask(t, c.app, tid("1", 1))
	if _, ok := (&Context{app: c.app, task: fresh}).Store("").(unknownStore); !ok {
		t.Fatal("the empty store name")
	}
	// Alternating names, each resolved to its own store, the unknown one still refused.
	for range 2 {
		if c.Store("sums") != c.task.stores["sums"] || c.Store("counts") != c.task.stores["counts"] {
			t.Fatal("alternating stores")
		}
		if _, ok := c.Store("nope").(unknownStore); !ok {
			t.Fatal("an unknown store after a known one")
		}
	}
}

func TestContextSend(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	tk := activeTask(t, a, tid("0", 0))
	c := &Context{app: a, task: tk, ts: time.UnixMilli(1234)}
	if err := c.Send("", nil, nil); err == nil || err.Error() != "stream: Send needs a topic" {
		t.Errorf("no topic: %v", err)
	}
	if err := c.Send(countsLog, nil, nil); err == nil || err.Error() != "stream: app-counts-changelog is a changelog topic: write to the store instead" {
		t.Errorf("changelog: %v", err)
	}
	h := kgo.RecordHeader{Key: "h", Value: []byte("1")}
	mustNotErr(t, c.Send("out", []byte("k"), []byte("v"), h))
	// A changelog is refused after an output topic too, and again.
	for range 2 {
		if err := c.Send(countsLog, nil, nil); err == nil {
			t.Error("a changelog after an output topic was accepted")
		}
	}
	out := Output("out", serde.String, serde.String)
	if out.Name() != "out" {
		t.Fatal(out.Name())
	}
	mustNotErr(t, out.Send(c, "k2", "v2"))
	mustNotErr(t, out.Send(c, "", "v3")) // an empty key is a key, not a null one
	flush(t, a)
	recs := prod.all()
	// Each record keeps its own bytes: a later Send does not write over them.
	if len(recs) != 3 || string(recs[1].rec.Key) != "k2" || string(recs[1].rec.Value) != "v2" || recs[2].rec.Key == nil ||
		len(recs[2].rec.Key) != 0 || string(recs[2].rec.Value) != "v3" {
		t.Fatalf("typed sends %+v", recs[1:])
	}
	recs = recs[:2]
	if len(recs) != 2 || recs[0].rec.Topic != "out" || string(recs[0].key) != "k" || string(recs[0].value) != "v" ||
		recs[0].rec.Timestamp.UnixMilli() != 1234 || len(recs[0].rec.Headers) != 1 || recs[0].rec.Headers[0].Key != "h" ||
		string(recs[1].key) != "k2" || string(recs[1].value) != "v2" {
		t.Fatalf("sent %+v", recs)
	}
	if err := Output[string, string]("out", failSerde{}, serde.String).Send(c, "k", "v"); err == nil || err.Error() != "stream: encoding a key for out: boom" {
		t.Errorf("key: %v", err)
	}
	if err := Output[string, string]("out", serde.String, failSerde{}).Send(c, "k", "v"); err == nil || err.Error() != "stream: encoding a value for out: boom" {
		t.Errorf("value: %v", err)
	}
	a.produceErr.Store(&ProduceError{Err: errBoom})
	mustNotErr(t, c.Send("out", nil, nil))
	if len(prod.all()) != 3 {
		t.Error("sent after a failed write")
	}
	a.runCtx = context.WithValue(context.Background(), tasks.ID{}, 1)
	if c.Context() != a.runCtx {
		t.Error("Context is the run's")
	}
}

func TestAFailedSendIsFatal(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	fakeBroker(t, a)
	c := &Context{app: a, task: activeTask(t, a, tid("0", 0))}
	mustNotErr(t, c.Send("missing", []byte("k"), nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pe *ProduceError
	if err := flushErr(a, ctx); !errors.As(err, &pe) || pe.Topic != "missing" {
		t.Fatalf("flush: %v", err)
	}
	if a.fatalErr() != error(pe) {
		t.Errorf("fatal %v", a.fatalErr())
	}
}

// plainSerde is a serde that cannot append into a buffer (only serde.Serde's methods): the typed
// store and topic encode with its Encode.
type plainSerde[T any] struct{ serde.Serde[T] }

// A typed store and a typed topic over serdes without AppendEncode write the bytes Encode gives:
// the store holds them and the record carries them (as Kafka Streams' serializers give them).
func TestTypedWritesWithSerdesThatCannotAppend(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	p := fakeBroker(t, a)
	tk := activeTask(t, a, tid("1", 1))
	c := &Context{app: a, task: tk, ts: time.UnixMilli(7)}
	counts := KeyValue("counts", plainSerde[string]{serde.String}, plainSerde[int64]{serde.Int64})
	mustNotErr(t, counts.Put(c, "k", 3))
	raw, ok, err := c.Store("counts").Get([]byte("k"))
	if err != nil || !ok || string(raw) != "\x00\x00\x00\x00\x00\x00\x00\x03" {
		t.Fatalf("stored %q %v %v, want the 8 bytes of 3", raw, ok, err)
	}
	if v, ok, err := counts.Get(c, "k"); v != 3 || !ok || err != nil {
		t.Fatalf("Get k: %d %v %v", v, ok, err)
	}
	out := Output("out", plainSerde[string]{serde.String}, plainSerde[int64]{serde.Int64})
	mustNotErr(t, out.Send(c, "k", 4))
	recs := p.all()
	last := recs[len(recs)-1]
	if last.rec.Topic != "out" || string(last.key) != "k" || string(last.value) != "\x00\x00\x00\x00\x00\x00\x00\x04" {
		t.Fatalf("sent %s %q=%q, want out k=the 8 bytes of 4", last.rec.Topic, last.key, last.value)
	}
}

// A TimestampedStore keeps each value after its timestamp and logs, as Kafka Streams' timestamped
// stores do, the value alone with the timestamp as the changelog record's; restoring puts the
// record's timestamp back before the value. SendAt sends with the timestamp given.
func TestTimestampedStoreAndSendAt(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	prod := fakeBroker(t, a)
	tk := activeTask(t, a, tid("1", 0))
	tk.ctx = Context{app: a, task: tk, ts: time.UnixMilli(1234)}
	s := tk.stores["counts"]
	s.timestamped = true
	stored := binary.BigEndian.AppendUint64(nil, 5000)
	stored = append(stored, "v"...)
	mustNotErr(t, s.Put([]byte("k"), stored))
	if v, ok, err := s.Get([]byte("k")); err != nil || !ok || !bytes.Equal(v, stored) {
		t.Fatalf("the store keeps %q %v %v, want the timestamp and the value", v, ok, err)
	}
	if err := s.Put([]byte("k"), []byte("short")); err == nil || !strings.Contains(err.Error(), "got 5 bytes") {
		t.Errorf("a value shorter than its timestamp: %v", err)
	}
	mustNotErr(t, s.Delete([]byte("k")))
	c := &Context{app: a, task: tk, ts: time.UnixMilli(1234)}
	mustNotErr(t, c.SendAt("out", time.UnixMilli(777), []byte("o"), []byte("p")))
	flush(t, a)
	recs := prod.all()
	if len(recs) != 3 || recs[0].rec.Topic != countsLog || string(recs[0].value) != "v" || recs[0].rec.Timestamp.UnixMilli() != 5000 ||
		!recs[1].nilValue || recs[1].rec.Timestamp.UnixMilli() != 1234 ||
		recs[2].rec.Topic != "out" || string(recs[2].value) != "p" || recs[2].rec.Timestamp.UnixMilli() != 777 {
		t.Fatalf("sent %+v", recs)
	}
	mustNotErr(t, s.restore([]*kgo.Record{{Key: []byte("r"), Value: []byte("x"), Timestamp: time.UnixMilli(7000), Offset: 3}}, 4))
	want := append(binary.BigEndian.AppendUint64(nil, 7000), 'x')
	if v, ok, err := s.Get([]byte("r")); err != nil || !ok || !bytes.Equal(v, want) {
		t.Fatalf("restored %q %v %v, want %q", v, ok, err, want)
	}
	if err := (&Context{app: a, task: tk}).SendAt(countsLog, time.Time{}, nil, nil); err == nil {
		t.Error("SendAt to a changelog was accepted")
	}
}

// Connect marks the stores given as TimestampedStore, and the task's stores open so.
func TestConnectTimestampedStore(t *testing.T) {
	p := Connect(testProcs()["1"], TimestampedStore("counts"), StoreName("sums"))
	c := connectionsOf(p)
	if c == nil || !c.timestamped["counts"] || c.timestamped["sums"] || TimestampedStore("x").Name() != "x" {
		t.Fatalf("connections %+v", c)
	}
	procs := testProcs()
	procs["1"] = p
	a, _ := newTestApp(t, testConfig(), procs)
	tk := activeTask(t, a, tid("1", 0))
	if !tk.stores["counts"].timestamped || tk.stores["sums"].timestamped {
		t.Fatal("the stores did not open as connected")
	}
}

// A SuppressionBufferStore's changelog updates carry the header v=3 (Kafka Streams reads the value's
// format from it), its deletions none; other stores' updates carry no header of their own.
func TestSuppressionBufferStoreChangelogHeaders(t *testing.T) {
	_, tk, prod := windowTask(t, SuppressionBufferStore("counts"))
	c := &tk.ctx
	st := c.Store("counts")
	mustNotErr(t, st.Put([]byte("k"), []byte("v")))
	mustNotErr(t, st.Delete([]byte("k")))
	recs := prod.all()
	if len(recs) != 2 {
		t.Fatalf("%d changelog records, want 2", len(recs))
	}
	if h := recs[0].rec.Headers; len(h) != 1 || h[0].Key != "v" || string(h[0].Value) != "\x03" {
		t.Errorf("the update's headers %v, want v=3", h)
	}
	if h := recs[1].rec.Headers; len(h) != 0 || !recs[1].nilValue {
		t.Errorf("the deletion's headers %v (null value %v), want none", h, recs[1].nilValue)
	}
	if SuppressionBufferStore("x").Name() != "x" {
		t.Error("Name")
	}
}

// A SuppressionBufferHeadersStore's changelog records carry the headers of the context they are
// written in (the DSL's Suppress sets v=3 and the values' headers there), and the wall clock.
func TestSuppressionBufferHeadersStoreChangelogHeaders(t *testing.T) {
	a, tk, prod := windowTask(t, SuppressionBufferHeadersStore("counts"))
	c := &tk.ctx
	st := c.Store("counts")
	hs := []kgo.RecordHeader{{Key: "v", Value: []byte{3}}, {Key: "vh.old", Value: []byte{0, 0xff}}}
	restore := streamhook.As(c, time.UnixMilli(7), hs, streamhook.Origin{})
	mustNotErr(t, st.Put([]byte("k"), []byte("v")))
	restore()
	restore = streamhook.As(c, time.UnixMilli(7), nil, streamhook.Origin{})
	mustNotErr(t, st.Delete([]byte("k")))
	restore()
	recs := prod.all()
	if len(recs) != 2 {
		t.Fatalf("%d changelog records, want 2", len(recs))
	}
	if h := recs[0].rec.Headers; len(h) != 2 || h[0].Key != "v" || h[1].Key != "vh.old" || string(h[1].Value) != "\x00\xff" {
		t.Errorf("the update's headers %v, want the context's", h)
	}
	if h := recs[1].rec.Headers; len(h) != 0 || !recs[1].nilValue {
		t.Errorf("the deletion's headers %v (null value %v), want none", h, recs[1].nilValue)
	}
	for _, r := range recs {
		if !r.rec.Timestamp.Equal(a.now()) {
			t.Errorf("a record at %v, want the wall clock", r.rec.Timestamp)
		}
	}
	if SuppressionBufferHeadersStore("x").Name() != "x" {
		t.Error("Name")
	}
}

// A buffer's changelog records (SuppressionBufferStore, BufferStore) carry the wall clock of their
// write, as Kafka Streams' producer stamps the buffer records it sends without a timestamp; other
// stores' carry the record's time.
func TestBufferStoresLogTheWallClock(t *testing.T) {
	for _, c := range []struct {
		decl Store
		wall bool
	}{{SuppressionBufferStore("counts"), true}, {BufferStore("counts"), true}, {StoreName("counts"), false}} {
		a, tk, prod := windowTask(t, c.decl) // the record's time is 500 ms
		st := tk.ctx.Store("counts")
		mustNotErr(t, st.Put([]byte("k"), []byte("v")))
		mustNotErr(t, st.Delete([]byte("k")))
		want := time.UnixMilli(500)
		if c.wall {
			want = a.now()
		}
		for i, r := range prod.all() {
			if !r.rec.Timestamp.Equal(want) {
				t.Errorf("%T: record %d at %v, want %v", c.decl, i, r.rec.Timestamp, want)
			}
		}
		if want.Equal(time.UnixMilli(500)) == c.wall {
			t.Fatal("the test's clock is at the record's time: the case does not test what it says")
		}
	}
	if BufferStore("x").Name() != "x" {
		t.Error("Name")
	}
}

// RecordMetadata is the record's topic, partition and offset while one is processed, and none in
// Init or a punctuation.
func TestRecordMetadata(t *testing.T) {
	c := &Context{rec: &Record{Topic: "in", Partition: 3, Offset: 42}}
	if topic, p, o, ok := c.RecordMetadata(); topic != "in" || p != 3 || o != 42 || !ok {
		t.Errorf("RecordMetadata() = %q %d %d %v", topic, p, o, ok)
	}
	if topic, p, o, ok := (&Context{}).RecordMetadata(); topic != "" || p != -1 || o != -1 || ok {
		t.Errorf("without a record: %q %d %d %v", topic, p, o, ok)
	}
}

// A record cache writing an update it held gives the context that update's record: its timestamp,
// headers and origin (streamhook.As), as Kafka Streams' cache flush sets the entry's record context;
// restore brings the current record's back.
func TestContextAsACachedUpdate(t *testing.T) {
	c := &Context{rec: &Record{Topic: "in", Partition: 1, Offset: 7}, ts: time.UnixMilli(5)}
	restore := streamhook.As(c, time.UnixMilli(9), []kgo.RecordHeader{{Key: "h"}}, streamhook.Origin{Topic: "other", Partition: 2, Offset: 3, OK: true})
	if topic, p, o, ok := c.RecordMetadata(); topic != "other" || p != 2 || o != 3 || !ok || c.Timestamp().UnixMilli() != 9 || len(c.Headers()) != 1 {
		t.Fatalf("as the cached update: %q %d %d %v, %v %v", topic, p, o, ok, c.Timestamp(), c.Headers())
	}
	restore()
	if topic, _, o, _ := c.RecordMetadata(); topic != "in" || o != 7 || c.Timestamp().UnixMilli() != 5 || c.Headers() != nil {
		t.Fatalf("restored: %q %d %v %v", topic, o, c.Timestamp(), c.Headers())
	}
	restore = streamhook.As(c, time.UnixMilli(9), nil, streamhook.Origin{})
	if _, p, o, ok := c.RecordMetadata(); ok || p != -1 || o != -1 {
		t.Fatalf("an update from no record: %d %d %v", p, o, ok)
	}
	restore()
}

// A RecordHeadersStore's changelog records carry the headers of the record that wrote them, updates
// and deletions alike; a TimestampedHeadersStore's updates carry none and its deletions the
// record's.
func TestRecordHeadersStoreChangelogHeaders(t *testing.T) {
	h := []kgo.RecordHeader{{Key: "trace", Value: []byte("7")}}
	for _, tc := range []struct {
		decl       Store
		onUpdate   bool
		onDeletion bool
	}{
		{RecordHeadersStore("counts"), true, true},
		{TimestampedHeadersStore("counts"), false, true},
		{TimestampedStore("counts"), false, false},
	} {
		_, tk, prod := windowTask(t, tc.decl)
		tk.ctx.headers, tk.ctx.hasHeaders = h, true
		st := tk.ctx.Store("counts")
		mustNotErr(t, st.Put([]byte("k"), append(int64s(9), 'v')))
		mustNotErr(t, st.Delete([]byte("k")))
		recs := prod.all()
		if len(recs) != 2 {
			t.Fatalf("%T: %d changelog records, want 2", tc.decl, len(recs))
		}
		for i, want := range []bool{tc.onUpdate, tc.onDeletion} {
			got := recs[i].rec.Headers
			if want && (len(got) != 1 || got[0].Key != "trace" || string(got[0].Value) != "7") || !want && len(got) != 0 {
				t.Errorf("%T: record %d's headers %v, want the record's: %v", tc.decl, i, got, want)
			}
		}
		if tc.decl.Name() != "counts" {
			t.Errorf("%T: Name %q", tc.decl, tc.decl.Name())
		}
	}
}
