package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/serde"
)

// The expected answers below follow Kafka Streams' VersionedKeyValueStore contract: a version is
// valid from its timestamp until the next version's; get(key) is the latest value; get(key, asOf)
// the value valid at asOf, nothing for a deletion; a put older than the stream time minus the
// history retention is not written; a read as of a time older than that finds only a latest
// version that old.

var prices = Versioned("counts", 10*time.Second, serde.String, serde.String)

func at(ms int64) time.Time { return time.UnixMilli(ms) }

type asOf struct {
	at   int64
	v    string
	from int64
	ok   bool
}

func expectAsOf(t *testing.T, c *Context, k string, want ...asOf) {
	t.Helper()
	for _, w := range want {
		v, from, ok, err := prices.GetAsOf(c, k, at(w.at))
		if err != nil || ok != w.ok || ok && (v != w.v || from.UnixMilli() != w.from) {
			t.Errorf("GetAsOf(%s, %d) = %q from %d, %v, %v; want %q from %d, %v", k, w.at, v, from.UnixMilli(), ok, err, w.v, w.from, w.ok)
		}
	}
}

func mustPut(t *testing.T, c *Context, k, v string, ts int64, want PutResult) {
	t.Helper()
	got, err := prices.Put(c, k, v, at(ts))
	if err != nil || got != want {
		t.Fatalf("Put(%s, %s, %d) = %+v, %v; want %+v", k, v, ts, got, err, want)
	}
}

func TestVersionedStoreReadsAsOf(t *testing.T) {
	_, tk, prod := windowTask(t, prices)
	c := &tk.ctx
	mustPut(t, c, "k", "v1", 1000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "k", "v2x", 3000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "k", "v2", 3000, PutResult{Put: true, Latest: true})      // replaces the latest
	mustPut(t, c, "k", "v0", 2000, PutResult{Put: true, ValidTo: at(3000)}) // out of order: between the two
	if v, from, ok, err := prices.Get(c, "k"); err != nil || !ok || v != "v2" || from.UnixMilli() != 3000 {
		t.Fatalf("Get = %q from %d, %v, %v; want v2 from 3000", v, from.UnixMilli(), ok, err)
	}
	expectAsOf(t, c, "k", asOf{at: 999}, asOf{1000, "v1", 1000, true}, asOf{1999, "v1", 1000, true},
		asOf{2000, "v0", 2000, true}, asOf{2999, "v0", 2000, true}, asOf{3000, "v2", 3000, true}, asOf{at: 5000, v: "v2", from: 3000, ok: true})
	if r, err := prices.Delete(c, "k", at(4000)); err != nil || !r.Put || !r.Latest {
		t.Fatalf("Delete = %+v, %v", r, err)
	}
	if _, _, ok, err := prices.Get(c, "k"); ok || err != nil {
		t.Fatalf("Get after the deletion: %v, %v; want nothing", ok, err)
	}
	expectAsOf(t, c, "k", asOf{3999, "v2", 3000, true}, asOf{at: 4000}, asOf{at: 9000})
	mustPut(t, c, "k", "v3", 3000, PutResult{Put: true, ValidTo: at(4000)}) // replaces the version from 3000
	expectAsOf(t, c, "k", asOf{3500, "v3", 3000, true}, asOf{at: 4500})
	expectAsOf(t, c, "other", asOf{at: 5000})

	// The changelog: each version as the key, the value (null for a deletion), its time.
	recs := prod.all()
	want := []struct {
		k, v string
		del  bool
		ts   int64
	}{{"k", "v1", false, 1000}, {"k", "v2x", false, 3000}, {"k", "v2", false, 3000}, {"k", "v0", false, 2000}, {"k", "", true, 4000}, {"k", "v3", false, 3000}}
	if len(recs) != len(want) {
		t.Fatalf("%d changelog records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if string(r.key) != w.k || r.nilValue != w.del || !w.del && string(r.value) != w.v || r.rec.Timestamp.UnixMilli() != w.ts {
			t.Errorf("changelog record %d: %q=%q (null %v) at %d; want %+v", i, r.key, r.value, r.nilValue, r.rec.Timestamp.UnixMilli(), w)
		}
	}
}

// A version older than the stream time minus the history retention is not written (nor logged); a
// read that old finds only a latest version that old; versions no read within the history can
// reach are deleted when their key is written again, and the latest never expires.
func TestVersionedStoreHistoryRetention(t *testing.T) {
	_, tk, prod := windowTask(t, prices)
	c := &tk.ctx
	mustPut(t, c, "old", "o", 1000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "k", "a", 1000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "k", "b", 2000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "two", "first", 15000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "k", "c", 30000, PutResult{Put: true, Latest: true}) // stream time 30 s: history from 20 s
	mustPut(t, c, "k", "late", 19999, PutResult{})                     // older than the history
	mustPut(t, c, "k", "edge", 20000, PutResult{Put: true, ValidTo: at(30000)})
	expectAsOf(t, c, "k", asOf{at: 19999}, asOf{20000, "edge", 20000, true}, asOf{30000, "c", 30000, true})
	expectAsOf(t, c, "old", asOf{at: 500}, asOf{5000, "o", 1000, true}, asOf{40000, "o", 1000, true})
	// Past the history a read finds only a latest version that old, not an older one still kept.
	// (two's first version, from 15 s, still ends within the history: at 25 s.)
	mustPut(t, c, "two", "second", 25000, PutResult{Put: true, Latest: true})
	expectAsOf(t, c, "two", asOf{at: 16000}, asOf{20000, "first", 15000, true}, asOf{26000, "second", 25000, true})
	if n := len(prod.all()); n != 8 {
		t.Errorf("%d changelog records, want 8 (the late version is logged too)", n)
	}
	// Of k's versions, a (ended at 2 s) is gone; b (ended at 20 s, when edge began) too; edge and c stay.
	var left []int64
	if err := tk.stores["counts"].versions([]byte("k"), 1<<62, func(v version) bool {
		left = append(left, v.ts)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0] != 30000 || left[1] != 20000 {
		t.Errorf("k's versions %v, want [30000 20000]", left)
	}
}

// A restore puts each changelog record as a version at its time, skipping those older than the
// restored stream time minus the history, and the stream time is restored with them.
func TestVersionedStoreRestore(t *testing.T) {
	_, tk, _ := windowTask(t, prices)
	s := tk.stores["counts"]
	err := s.restore([]*kgo.Record{
		{Key: []byte("k"), Value: []byte("v1"), Timestamp: at(1000)},
		{Key: []byte("k"), Value: []byte("v2"), Timestamp: at(20000)},
		{Key: []byte("k"), Value: []byte("skipped"), Timestamp: at(5000)}, // older than 20 s - 10 s
		{Key: []byte("e"), Value: []byte("edge"), Timestamp: at(10000)},   // exactly 20 s - 10 s: kept
		{Key: []byte("j"), Value: nil, Timestamp: at(15000)},
		{Key: []byte("j"), Value: []byte("x"), Timestamp: at(12000)},
	}, 5)
	if err != nil {
		t.Fatal(err)
	}
	c := &tk.ctx
	expectAsOf(t, c, "k", asOf{19999, "v1", 1000, true}, asOf{20000, "v2", 20000, true})
	expectAsOf(t, c, "j", asOf{12500, "x", 12000, true}, asOf{at: 15000})
	expectAsOf(t, c, "e", asOf{10000, "edge", 10000, true})
	if st, err := s.streamTime(); err != nil || st != 20000 {
		t.Fatalf("stream time %d, %v; want 20000", st, err)
	}
	mustPut(t, c, "k", "late", 9999, PutResult{}) // the restored stream time holds
}

// A versioned store reached through another declaration, or another store reached as a versioned
// one, is refused.
func TestVersionedStoreKinds(t *testing.T) {
	_, tk, _ := windowTask(t, TimestampedStore("counts"))
	if _, err := prices.Put(&tk.ctx, "k", "v", at(1)); !errors.Is(err, ErrVersionedStore) {
		t.Fatalf("Put on a timestamped store: %v, want ErrVersionedStore", err)
	}
	if _, _, _, err := Versioned("nope", time.Second, serde.String, serde.String).Get(&tk.ctx, "k"); !errors.Is(err, ErrUnknownStore) {
		t.Fatalf("Get on an unknown store: %v, want ErrUnknownStore", err)
	}
	if prices.Name() != "counts" || prices.HistoryRetention() != 10*time.Second {
		t.Fatal("Name, HistoryRetention")
	}
}

// A store with no history keeps the latest version only: its first version, at time 0, is written
// (the stream time starts before any), and a later one at the same time replaces it.
func TestVersionedStoreWithoutHistory(t *testing.T) {
	now := Versioned("counts", 0, serde.String, serde.String)
	_, tk, _ := windowTask(t, now)
	c := &tk.ctx
	for _, v := range []string{"a", "b"} {
		if r, err := now.Put(c, "k", v, at(0)); err != nil || r != (PutResult{Put: true, Latest: true}) {
			t.Fatalf("Put(%s) at 0 = %+v, %v; want written and latest", v, r, err)
		}
	}
	if v, _, ok, err := now.GetAsOf(c, "k", at(0)); err != nil || !ok || v != "b" {
		t.Fatalf("GetAsOf(0) = %q, %v, %v; want b", v, ok, err)
	}
	if r, err := now.Put(c, "k", "late", at(-1)); err != nil || r.Put {
		t.Fatalf("Put at -1 = %+v, %v; want not written", r, err)
	}
}

// A versioned store's engine is written through Versioned only (a raw write would break its
// layout), a version refused for its age is counted dropped and still logged (as Kafka Streams'
// changelog layer logs every put), and a negative history retention is refused by New.
func TestVersionedStoreGuards(t *testing.T) {
	a, tk, prod := windowTask(t, prices)
	c := &tk.ctx
	if err := c.Store("counts").Put([]byte("k"), []byte("v")); !errors.Is(err, ErrVersionedStore) {
		t.Fatalf("a raw Put: %v, want ErrVersionedStore", err)
	}
	mustPut(t, c, "k", "new", 60000, PutResult{Put: true, Latest: true})
	mustPut(t, c, "k", "old", 1000, PutResult{})
	if n := a.Metrics().Dropped; n != 1 {
		t.Errorf("dropped %d, want the refused version", n)
	}
	if recs := prod.all(); len(recs) != 2 || string(recs[1].value) != "old" || recs[1].rec.Timestamp.UnixMilli() != 1000 {
		t.Errorf("changelog %+v, want both versions logged", recs)
	}
	procs := testProcs()
	procs["1"] = Connect(procs["1"], Versioned("counts", -time.Second, serde.String, serde.String))
	if _, err := New(testConfig(), testTopo(), procs, quiet()); err == nil || !strings.Contains(err.Error(), "negative history retention") {
		t.Fatalf("New with a negative history: %v", err)
	}
}

// Versions no read can reach any more are deleted as the stream time moves, whichever key is
// written: here keys each written twice then deleted, one second apart, with 10 s of history. Only
// the keys whose deletion is within the history keep entries; every key reads as absent.
func TestVersionedStoreExpiresByTime(t *testing.T) {
	_, tk, _ := windowTask(t, prices)
	c := &tk.ctx
	for i := range int64(100) {
		k := fmt.Sprintf("k%02d", i)
		mustPut(t, c, k, "a", i*1000, PutResult{Put: true, Latest: true})
		mustPut(t, c, k, "b", i*1000+1, PutResult{Put: true, Latest: true})
		if r, err := prices.Delete(c, k, at(i*1000+2)); err != nil || !r.Put {
			t.Fatalf("Delete(%s): %+v, %v", k, r, err)
		}
	}
	// Stream time 99002: the history starts at 89002, so k89's deletion (89002) and everything before
	// it are gone; k90 … k99 keep their three versions.
	it, err := c.Store("counts").Prefix([]byte{0})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		t.Fatal(err)
	}
	if n != 30 {
		t.Errorf("%d versions kept, want 30 (k90 … k99, three each)", n)
	}
	for i := range int64(100) {
		k := fmt.Sprintf("k%02d", i)
		expectAsOf(t, c, k, asOf{at: 99002}, asOf{at: i*1000 + 2})
	}
	expectAsOf(t, c, "k95", asOf{95000, "a", 95000, true}, asOf{95001, "b", 95001, true})
}
