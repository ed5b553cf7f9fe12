package store_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/store/storetest"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestMemoryContract(t *testing.T) {
	if store.Memory.Name() != "memory" || store.Memory.Persistent() {
		t.Fatalf("Memory is %q, persistent %v; want \"memory\", not persistent", store.Memory.Name(), store.Memory.Persistent())
	}
	var n atomic.Int64
	storetest.Run(t, store.Memory, func(t *testing.T) store.Location {
		return store.Location{
			ApplicationID: "app",
			Task:          tasks.ID{Subtopology: "0", Partition: int32(n.Add(1))},
			Store:         fmt.Sprintf("store-%d", n.Load()),
		}
	})
}

// BenchmarkMemoryCount is the store's part of a count: a Get and a Put of the same key, over
// 10,000 keys, the work of the runtime's count per record (the bench's count app).
func BenchmarkMemoryCount(b *testing.B) {
	e, _ := store.Memory.Open(store.Location{ApplicationID: "app", Store: "counts"})
	defer e.Close()
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%07d", i*7919%10_000))
	}
	var batch store.Batch
	val := make([]byte, 8)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := keys[i%len(keys)]
		if _, _, err := e.Get(k); err != nil {
			b.Fatal(err)
		}
		batch.Reset()
		batch.Put(k, val)
		if err := e.Apply(&batch, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// An in-memory store keeps its entries by hash until it is first iterated, and in order from then
// on: what was written before the first iterator (an empty key among it, deletions too) is all
// there after it, and writes go on the same way.
func TestMemoryFirstIteratorKeepsEverything(t *testing.T) {
	e, _ := store.Memory.Open(store.Location{ApplicationID: "app", Store: "s"})
	defer e.Close()
	var b store.Batch
	b.Put([]byte("b"), []byte("2"))
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte{}, []byte("empty"))
	b.Put([]byte("d"), []byte{})
	b.Delete([]byte("a"))
	if err := e.Apply(&b, 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.ApproximateCount(); n != 3 {
		t.Fatalf("count %d before the first iterator, want 3", n)
	}
	if v, ok, _ := e.Get([]byte("d")); !ok || v == nil || len(v) != 0 {
		t.Fatalf("an empty value: %q %v", v, ok)
	}
	it, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		if it.Key() == nil {
			t.Error("the empty key came back as a nil key")
		}
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if fmt.Sprint(got) != "[=empty b=2 d=]" {
		t.Fatalf("iterated %q", got)
	}
	b.Reset()
	b.Put([]byte("c"), []byte("3"))
	b.Delete([]byte("b"))
	if err := e.Apply(&b, 2); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := e.Get([]byte("c")); !ok || string(v) != "3" {
		t.Errorf("c after the first iterator: %q %v", v, ok)
	}
	if _, ok, _ := e.Get([]byte("b")); ok {
		t.Error("b deleted after the first iterator is still there")
	}
	if v, ok, _ := e.Get([]byte{}); !ok || string(v) != "empty" {
		t.Errorf("the empty key after the first iterator: %q %v", v, ok)
	}
	if n, _ := e.ApproximateCount(); n != 3 {
		t.Errorf("count %d after the first iterator, want 3", n)
	}
}

// A put whose slices the caller gave up (PutOwned) is kept as it is, in both of the store's forms
// (by hash before the first iterator, in order after it); a plain put is copied, so the caller may
// reuse its buffer.
func TestMemoryKeepsOwnedWrites(t *testing.T) {
	e, _ := store.Memory.Open(store.Location{ApplicationID: "app", Store: "s"})
	defer e.Close()
	for _, ordered := range []bool{false, true} {
		if ordered {
			it, err := e.Iterate(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			it.Close()
		}
		owned, plain := []byte("owned-value"), []byte("plain-value")
		var b store.Batch
		b.PutOwned([]byte("o"), owned)
		b.Put([]byte("p"), plain)
		if err := e.Apply(&b, 1); err != nil {
			t.Fatal(err)
		}
		plain[0] = 'X'
		if v, ok, _ := e.Get([]byte("o")); !ok || unsafe.SliceData(v) != unsafe.SliceData(owned) {
			t.Errorf("ordered %v: an owned value was copied (or lost): %q %v", ordered, v, ok)
		}
		if v, _, _ := e.Get([]byte("p")); string(v) != "plain-value" {
			t.Errorf("ordered %v: a plain value shares the caller's buffer: %q", ordered, v)
		}
	}
}

// A write of a key the store holds replaces its value in place, with no allocation, except while an
// iterator's snapshot may share the entry: then it copies, and once the iterator is done (drained
// or closed, closed again after draining too) it is in place again.
func TestMemoryRewritesInPlaceOutsideSnapshots(t *testing.T) {
	e, _ := store.Memory.Open(store.Location{ApplicationID: "app", Store: "s"})
	defer e.Close()
	var b store.Batch
	for i := range 200 { // more than an iterator reads under the lock: it takes a snapshot
		b.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("v"))
	}
	if err := e.Apply(&b, -1); err != nil {
		t.Fatal(err)
	}
	key, val := []byte("k150"), []byte("owned")
	rewrite := func() float64 {
		return testing.AllocsPerRun(20, func() {
			b.Reset()
			b.PutOwned(key, val)
			if err := e.Apply(&b, -1); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n := rewrite(); n != 0 {
		t.Fatalf("a rewrite with no iterator open allocated %v times", n)
	}
	it, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	it.Next()
	if n := rewrite(); n == 0 {
		t.Fatal("a rewrite under an open snapshot changed the entry it shares in place")
	}
	for it.Next() {
	}
	if n := rewrite(); n != 0 {
		t.Fatalf("a rewrite after the iterator was drained allocated %v times", n)
	}
	it.Close()
	if n := rewrite(); n != 0 {
		t.Fatalf("a rewrite after the drained iterator was closed allocated %v times", n)
	}
	it, _ = e.Iterate(nil, nil)
	it.Next()
	it.Close()
	if n := rewrite(); n != 0 {
		t.Fatalf("a rewrite after an iterator was closed early allocated %v times", n)
	}
}

// An iterator closed twice, or used after Close, does not touch the iterator opened after it
// (which may walk with the state the first one gave back).
func TestMemoryIteratorAfterClose(t *testing.T) {
	e, _ := store.Memory.Open(store.Location{ApplicationID: "app", Store: "s"})
	defer e.Close()
	var b store.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte("2"))
	if err := e.Apply(&b, -1); err != nil {
		t.Fatal(err)
	}
	first, _ := e.Iterate(nil, nil)
	if !first.Next() {
		t.Fatal("empty")
	}
	first.Close()
	second, _ := e.Iterate(nil, nil)
	if first.Close() != nil || first.Next() || first.Key() != nil || first.Value() != nil {
		t.Fatal("a closed iterator still walks")
	}
	var got []string
	for second.Next() {
		got = append(got, string(second.Key())+"="+string(second.Value()))
	}
	second.Close()
	if fmt.Sprint(got) != "[a=1 b=2]" {
		t.Fatalf("the iterator opened after a closed one walked %v", got)
	}
}
