package sgpebble

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func testLoc(t *testing.T, app string, task tasks.ID, name string) store.Location {
	t.Helper()
	return store.Location{ApplicationID: app, Task: task, Store: name,
		Dir: filepath.Join(t.TempDir(), app, task.String(), name)}
}

func newLoc(t *testing.T) store.Location {
	return testLoc(t, "app", tasks.ID{Subtopology: "0", Partition: 1}, "counts")
}

func open(t *testing.T, k store.Kind, loc store.Location) store.Engine {
	t.Helper()
	e, err := k.Open(loc)
	if err != nil {
		t.Fatalf("Open(%s): %v", loc, err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func apply(t *testing.T, e store.Engine, pos int64, kv ...string) {
	t.Helper()
	var b store.Batch
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<del>" {
			b.Delete([]byte(kv[i]))
		} else {
			b.Put([]byte(kv[i]), []byte(kv[i+1]))
		}
	}
	if err := e.Apply(&b, pos); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func get(t *testing.T, e store.Engine, key string) (string, bool) {
	t.Helper()
	v, ok, err := e.Get([]byte(key))
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(v), ok
}

func scan(t *testing.T, e store.Engine, lower, upper []byte) []string {
	t.Helper()
	it, err := e.Iterate(lower, upper)
	if err != nil {
		t.Fatalf("Iterate: %v", err)
	}
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterating: %v", err)
	}
	return out
}

func wantStoreErr(t *testing.T, err error, target error, op string) {
	t.Helper()
	var se *store.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a *store.Error", err, err)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("err = %v, want one wrapping %v", err, target)
	}
	if op != "" && se.Op != op {
		t.Fatalf("Op = %q, want %q (%v)", se.Op, op, err)
	}
}

func TestKind(t *testing.T) {
	k := New()
	if k.Name() != "pebble" || !k.Persistent() {
		t.Fatalf("Name %q Persistent %v, want pebble true", k.Name(), k.Persistent())
	}
}

func TestGetApply(t *testing.T) {
	e := open(t, New(), newLoc(t))
	if _, ok := get(t, e, "a"); ok {
		t.Fatal("a fresh store has key a")
	}
	apply(t, e, -1, "a", "1", "b", "2", "empty", "")
	if v, ok := get(t, e, "a"); !ok || v != "1" {
		t.Fatalf("a = %q %v, want 1", v, ok)
	}
	v, ok, err := e.Get([]byte("empty"))
	if err != nil || !ok || v == nil || len(v) != 0 {
		t.Fatalf("empty = %q %v %v, want a present empty value", v, ok, err)
	}
	// The value is a copy: later writes and flushes do not change it.
	v, _, _ = e.Get([]byte("b"))
	apply(t, e, -1, "b", "3", "a", "<del>")
	if err := e.(*engine).db.Flush(); err != nil {
		t.Fatal(err)
	}
	if string(v) != "2" {
		t.Fatalf("the value read before the overwrite became %q", v)
	}
	if _, ok := get(t, e, "a"); ok {
		t.Fatal("a is there after its delete")
	}
	if v, _ := get(t, e, "b"); v != "3" {
		t.Fatalf("b = %q, want 3", v)
	}
	// A batch is applied in order: the last write of a key wins.
	apply(t, e, -1, "c", "1", "c", "<del>", "c", "2")
	if v, _ := get(t, e, "c"); v != "2" {
		t.Fatalf("c = %q, want 2", v)
	}
	if err := e.Apply(nil, -1); err != nil {
		t.Fatalf("Apply(nil, -1): %v", err)
	}
	// The Batch's slices are not kept: changing them after Apply changes nothing.
	var b store.Batch
	key, val := []byte("d"), []byte("x")
	b.Put(key, val)
	if err := e.Apply(&b, -1); err != nil {
		t.Fatal(err)
	}
	key[0], val[0] = 'z', 'y'
	if v, _ := get(t, e, "d"); v != "x" {
		t.Fatalf("d = %q after changing the batch's slices, want x", v)
	}
}

func TestIterateBounds(t *testing.T) {
	e := open(t, New(), newLoc(t))
	apply(t, e, 7, "a", "1", "b", "2", "c", "3", "\x00", "lo", "\xff\xff", "hi")
	all := []string{"\x00=lo", "a=1", "b=2", "c=3", "\xff\xff=hi"}
	for _, tc := range []struct {
		name         string
		lower, upper []byte
		want         []string
	}{
		{"open", nil, nil, all},
		{"lower", []byte("b"), nil, all[2:]},
		{"upper", nil, []byte("b"), all[:2]},
		{"both", []byte("a"), []byte("c"), all[1:3]},
		{"empty lower is the start", []byte{}, []byte("a"), all[:1]},
		{"equal", []byte("b"), []byte("b"), nil},
		{"lower above upper", []byte("c"), []byte("a"), nil},
		{"past the end", []byte("\xff\xff\xff"), nil, nil},
		{"upper exclusive of 0xff keys", nil, []byte("\xff\xff"), all[:4]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scan(t, e, tc.lower, tc.upper); !slices.Equal(got, tc.want) {
				t.Fatalf("Iterate(%q, %q) = %q, want %q (the metadata must stay hidden)", tc.lower, tc.upper, got, tc.want)
			}
		})
	}
}

func TestIterateSnapshot(t *testing.T) {
	e := open(t, New(), newLoc(t))
	apply(t, e, -1, "a", "1", "b", "2")
	it, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Key() != nil {
		t.Fatalf("Key before Next = %q", it.Key())
	}
	apply(t, e, 3, "a", "changed", "b", "<del>", "c", "new")
	if err := e.(*engine).db.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if want := []string{"a=1", "b=2"}; !slices.Equal(got, want) {
		t.Fatalf("iterator opened before the write saw %q, want %q", got, want)
	}
	if it.Next() {
		t.Fatal("Next after the end is true")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("second iterator Close: %v", err)
	}
	if got, want := scan(t, e, nil, nil), []string{"a=changed", "c=new"}; !slices.Equal(got, want) {
		t.Fatalf("a new iterator sees %q, want %q", got, want)
	}
}

func TestPositionSurvivesReopen(t *testing.T) {
	k, loc := New(), newLoc(t)
	e, err := k.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := e.Position(); ok {
		t.Fatalf("a fresh store has position %d", p)
	}
	apply(t, e, 42, "a", "1")
	apply(t, e, -1, "b", "2") // no position: it stays 42
	if p, ok := e.Position(); !ok || p != 42 {
		t.Fatalf("Position = %d %v, want 42", p, ok)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, k, loc)
	if p, ok := e.Position(); !ok || p != 42 {
		t.Fatalf("after reopen Position = %d %v, want 42", p, ok)
	}
	// A batch applied without a sync before a clean Close is in the WAL, replayed by Open.
	if v, _ := get(t, e, "b"); v != "2" {
		t.Fatalf("b = %q after reopen, want 2", v)
	}
	// An empty batch with a position records just the position.
	if err := e.Apply(&store.Batch{}, 0); err != nil {
		t.Fatal(err)
	}
	if p, ok := e.Position(); !ok || p != 0 {
		t.Fatalf("Position = %d %v, want 0", p, ok)
	}
}

// TestSyncedPositionWithoutClose reads a checkpoint back from a database that was never closed:
// its files copied while it is open stand for a process that died after the Apply returned. The
// synced WAL must hold both the data and the position.
func TestSyncedPositionWithoutClose(t *testing.T) {
	k, loc := New(), newLoc(t)
	e := open(t, k, loc)
	apply(t, e, -1, "unsynced", "x")
	apply(t, e, 99, "a", "1", "b", "2")
	crashed := loc
	crashed.Dir = filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(crashed.Dir, os.DirFS(loc.Dir)); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(crashed.Dir, "LOCK"))
	e2 := open(t, k, crashed)
	if p, ok := e2.Position(); !ok || p != 99 {
		t.Fatalf("Position of the crashed copy = %d %v, want 99", p, ok)
	}
	for _, key := range []string{"a", "b", "unsynced"} {
		if _, ok := get(t, e2, key); !ok {
			t.Fatalf("the crashed copy lacks %q, written before the checkpoint", key)
		}
	}
}

func TestClosed(t *testing.T) {
	e := open(t, New(), newLoc(t))
	apply(t, e, 1, "a", "1", "b", "2")
	it, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() {
		t.Fatal("no first key")
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close with an open iterator: %v", err)
	}
	if err := e.Close(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("second Close: %v, want store.ErrClosed (the store contract)", err)
	}
	if it.Next() {
		t.Fatal("the iterator goes on after its engine closed")
	}
	wantStoreErr(t, it.Err(), store.ErrClosed, "")
	if err := it.Close(); err != nil {
		t.Fatalf("iterator Close after the engine's: %v", err)
	}
	_, _, err = e.Get([]byte("a"))
	wantStoreErr(t, err, store.ErrClosed, "get")
	_, err = e.Iterate(nil, nil)
	wantStoreErr(t, err, store.ErrClosed, "iterate")
	_, err = e.ApproximateCount()
	wantStoreErr(t, err, store.ErrClosed, "count")
	wantStoreErr(t, e.Apply(&store.Batch{}, 5), store.ErrClosed, "apply")
	if p, ok := e.Position(); !ok || p != 1 {
		t.Fatalf("Position after Close = %d %v, want the last one, 1", p, ok)
	}
}

func TestTwoTasksSideBySide(t *testing.T) {
	k := New()
	root := t.TempDir()
	loc := func(p int32) store.Location {
		id := tasks.ID{Subtopology: "0", Partition: p}
		return store.Location{ApplicationID: "app", Task: id, Store: "s", Dir: filepath.Join(root, "app", id.String(), "s")}
	}
	e0, e1 := open(t, k, loc(0)), open(t, k, loc(1))
	apply(t, e0, 10, "k", "zero")
	apply(t, e1, 20, "k", "one", "only1", "x")
	if v, _ := get(t, e0, "k"); v != "zero" {
		t.Fatalf("task 0 reads %q", v)
	}
	if _, ok := get(t, e0, "only1"); ok {
		t.Fatal("task 0 sees task 1's key")
	}
	if p, _ := e0.Position(); p != 10 {
		t.Fatalf("task 0 position %d", p)
	}
	if p, _ := e1.Position(); p != 20 {
		t.Fatalf("task 1 position %d", p)
	}
	kk := k.(*kind)
	if kk.cache == nil || kk.users != 2 {
		t.Fatalf("shared cache %v, %d open", kk.cache, kk.users)
	}
	if e0.(*engine).db.Metrics().BlockCache.Size != e1.(*engine).db.Metrics().BlockCache.Size {
		t.Fatal("the two stores do not share one block cache")
	}
	_ = e0.Close()
	_ = e1.Close()
	if kk.cache != nil || kk.users != 0 {
		t.Fatal("the Kind keeps its caches after its last store closed")
	}
	// And they reopen with their own data.
	e1 = open(t, k, loc(1))
	if v, _ := get(t, e1, "k"); v != "one" {
		t.Fatalf("task 1 after reopen reads %q", v)
	}
}

func TestOpenTwice(t *testing.T) {
	loc := newLoc(t)
	open(t, New(), loc)
	for _, k := range []store.Kind{New(), New()} {
		_, err := k.Open(loc)
		wantStoreErr(t, err, nil, "open")
		if errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrForeign) {
			t.Fatalf("a store open elsewhere is reported damaged: %v", err)
		}
	}
}

func TestForeign(t *testing.T) {
	k := New()
	loc := newLoc(t)
	e := open(t, k, loc)
	apply(t, e, 1, "a", "1")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*store.Location){
		"application": func(l *store.Location) { l.ApplicationID = "other" },
		"subtopology": func(l *store.Location) { l.Task.Subtopology = "1" },
		"partition":   func(l *store.Location) { l.Task.Partition = 2 },
		"store":       func(l *store.Location) { l.Store = "other" },
	} {
		t.Run(name, func(t *testing.T) {
			other := loc
			change(&other)
			_, err := k.Open(other)
			wantStoreErr(t, err, store.ErrForeign, "open")
		})
	}
	t.Run("pebble database of something else", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := pebble.Open(dir, &pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte("k"), []byte("v"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		l := loc
		l.Dir = dir
		_, err = k.Open(l)
		wantStoreErr(t, err, store.ErrForeign, "open")
	})
	t.Run("a file", func(t *testing.T) {
		l := loc
		l.Dir = filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(l.Dir, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := k.Open(l)
		wantStoreErr(t, err, store.ErrForeign, "open")
	})
	// The store of the right identity still opens.
	e = open(t, k, loc)
	if v, _ := get(t, e, "a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
}

func TestEmptyDirAndNoDir(t *testing.T) {
	k := New()
	loc := newLoc(t)
	if err := os.MkdirAll(loc.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	open(t, k, loc) // an empty directory is a new store
	l := loc
	l.Dir = ""
	_, err := k.Open(l)
	wantStoreErr(t, err, nil, "open")
	wantStoreErr(t, k.Destroy(l), nil, "destroy")
}

func TestDestroy(t *testing.T) {
	k, loc := New(), newLoc(t)
	if err := k.Destroy(loc); err != nil {
		t.Fatalf("Destroy of an absent store: %v", err)
	}
	e, err := k.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, e, 5, "a", "1")
	wantStoreErr(t, k.Destroy(loc), nil, "destroy")
	if _, err := os.Stat(loc.Dir); err != nil {
		t.Fatalf("Destroy of an open store removed it: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := k.Destroy(loc); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(loc.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory is still there: %v", err)
	}
	e = open(t, k, loc)
	if p, ok := e.Position(); ok {
		t.Fatalf("a destroyed and reopened store has position %d", p)
	}
	if _, ok := get(t, e, "a"); ok {
		t.Fatal("a destroyed store kept its data")
	}
}

func TestApproximateCount(t *testing.T) {
	k, loc := New(), newLoc(t)
	e := open(t, k, loc)
	count := func(want int64, when string) {
		t.Helper()
		n, err := e.ApproximateCount()
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("%s: ApproximateCount = %d, want %d", when, n, want)
		}
	}
	count(0, "fresh")
	var b store.Batch
	for i := range 100 {
		b.Put(fmt.Appendf(nil, "k%03d", i), []byte("v"))
	}
	if err := e.Apply(&b, 100); err != nil {
		t.Fatal(err)
	}
	count(100, "in the memtable")
	if err := e.(*engine).db.Flush(); err != nil {
		t.Fatal(err)
	}
	count(100, "flushed")
	b.Reset()
	for i := range 50 {
		b.Delete(fmt.Appendf(nil, "k%03d", i))
	}
	if err := e.Apply(&b, 150); err != nil {
		t.Fatal(err)
	}
	count(50, "deletes in the memtable")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, k, loc)
	count(50, "reopened (the WAL flushed)")
	if err := e.(*engine).db.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	count(50, "compacted")
	if len(e.(*engine).unflushed) != 0 {
		t.Fatalf("%d batches are still noted as unflushed", len(e.(*engine).unflushed))
	}
}

// TestApproximateCountAfterRangeDelete follows the estimate through a range delete: the keys it
// deletes count until a compaction drops them with it, and its tombstone never counts as a key
// nor as a deletion (which would take keys off a store a range delete left unchanged).
func TestApproximateCountAfterRangeDelete(t *testing.T) {
	k, loc := New(), newLoc(t)
	e := open(t, k, loc)
	db := e.(*engine).db
	count := func(want int64, when string) {
		t.Helper()
		n, err := e.ApproximateCount()
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("%s: ApproximateCount = %d, want %d", when, n, want)
		}
	}
	var b store.Batch
	for i := range 100 {
		b.Put(fmt.Appendf(nil, "k%03d", i), []byte("v"))
	}
	if err := e.Apply(&b, 100); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	count(100, "flushed")
	b.Reset()
	b.DeleteRange([]byte("k010"), []byte("k090"))
	if err := e.Apply(&b, 101); err != nil {
		t.Fatal(err)
	}
	count(100, "range delete in the memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	count(100, "range delete flushed beside the keys it deletes")
	if err := db.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	count(20, "compacted")
	// A range delete of keys that are absent changes nothing, in the memtable or flushed.
	b.Reset()
	b.DeleteRange([]byte("k010"), []byte("k090"))
	b.DeleteRange([]byte("x"), nil)
	if err := e.Apply(&b, 102); err != nil {
		t.Fatal(err)
	}
	count(20, "range deletes of nothing in the memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	count(20, "range deletes of nothing flushed")
	if p, ok := e.Position(); !ok || p != 102 {
		t.Fatalf("Position() = %d, %v; want 102", p, ok)
	}
}

// TestConcurrentReaders writes batches that set ten keys to one value each, while readers check
// that every iterator sees the ten equal (a batch is atomic and an iterator a snapshot), and that
// Get and ApproximateCount work alongside. Run with -race.
func TestConcurrentReaders(t *testing.T) {
	e := open(t, New(MemTableSize(256<<10)), newLoc(t))
	const rounds = 300
	write := func(round int) {
		var b store.Batch
		for k := range 10 {
			b.Put(fmt.Appendf(nil, "key%d", k), bytes.Repeat(fmt.Appendf(nil, "%06d", round), 50))
		}
		if err := e.Apply(&b, int64(round)); err != nil {
			t.Error(err)
		}
	}
	write(0)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for r := 1; r <= rounds; r++ {
			write(r)
		}
	})
	for range 2 {
		wg.Go(func() {
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads == 0 {
						t.Error("a reader never read")
					}
					return
				default:
				}
				it, err := e.Iterate(nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				var first []byte
				n := 0
				for it.Next() {
					if first == nil {
						first = bytes.Clone(it.Value())
					} else if !bytes.Equal(first, it.Value()) {
						t.Errorf("an iterator saw two rounds: %.6s and %.6s", first, it.Value())
					}
					n++
				}
				if err := errors.Join(it.Err(), it.Close()); err != nil {
					t.Error(err)
				}
				if n != 10 {
					t.Errorf("an iterator saw %d keys, want 10", n)
				}
				if _, ok, err := e.Get([]byte("key3")); err != nil || !ok {
					t.Errorf("Get: %v %v", ok, err)
				}
				if _, err := e.ApproximateCount(); err != nil {
					t.Error(err)
				}
				e.Position()
			}
		})
	}
	wg.Wait()
	if p, _ := e.Position(); p != rounds {
		t.Fatalf("Position = %d, want %d", p, rounds)
	}
}

// TestCloseDuringReads closes the engine while readers are in its methods and iterators: every
// call either works or says ErrClosed.
func TestCloseDuringReads(t *testing.T) {
	e, err := New().Open(newLoc(t))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, e, 1, "a", "1", "b", "2", "c", "3")
	var wg sync.WaitGroup
	started := make(chan struct{}, 2)
	for range 2 {
		wg.Go(func() {
			started <- struct{}{}
			for {
				if _, _, err := e.Get([]byte("a")); err != nil {
					if !errors.Is(err, store.ErrClosed) {
						t.Error(err)
					}
					return
				}
				it, err := e.Iterate(nil, nil)
				if err != nil {
					if !errors.Is(err, store.ErrClosed) {
						t.Error(err)
					}
					return
				}
				for it.Next() {
					_ = it.Key()
				}
				if err := it.Err(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Error(err)
				}
				_ = it.Close()
			}
		})
	}
	<-started
	<-started
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts            []Option
		cache, memtable int64
	}{
		{nil, DefaultCacheSize, DefaultMemTableSize},
		{[]Option{CacheSize(-1), MemTableSize(0)}, DefaultCacheSize, DefaultMemTableSize},
		{[]Option{CacheSize(1 << 30), MemTableSize(1)}, 1 << 30, 256 << 10},
		{[]Option{MemTableSize(1 << 40)}, DefaultCacheSize, 1 << 30},
	} {
		k := New(tc.opts...).(*kind)
		if k.cfg.cacheSize != tc.cache || k.cfg.memTableSize != tc.memtable || k.cfg.logger == nil {
			t.Errorf("cache %d memtable %d logger %v, want %d %d and a logger", k.cfg.cacheSize, k.cfg.memTableSize, k.cfg.logger, tc.cache, tc.memtable)
		}
	}
}
