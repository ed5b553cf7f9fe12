// Package storetest is the contract every store.Kind must meet, as a test suite: call Run from a
// test of the Kind's package. Its oracle is a plain model (a map whose keys are sorted as strings,
// which Go orders bytewise), never the Engine under test.
package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/streamsgroup/streamsgroup/store"
)

// Run runs the contract suite against kind. newLoc returns a location no other call returned (with
// a Dir under t.TempDir() for a persistent kind). Subtests that reopen a store use one location
// twice; Close+Open keeps data and position only when kind.Persistent().
func Run(t *testing.T, kind store.Kind, newLoc func(t *testing.T) store.Location) {
	s := &suite{kind: kind, newLoc: newLoc}
	t.Run("Empty", s.testEmpty)
	t.Run("PutGetOverwriteDelete", s.testPutGetOverwriteDelete)
	t.Run("EmptyAndNilValues", s.testEmptyAndNilValues)
	t.Run("CallerBuffersNotKept", s.testCallerBuffersNotKept)
	t.Run("OrderBytewise", s.testOrderBytewise)
	t.Run("Bounds", s.testBounds)
	t.Run("ManyKeys", s.testManyKeys)
	t.Run("IterateSnapshot", s.testIterateSnapshot)
	t.Run("IterateSnapshotOfManyKeys", s.testIterateSnapshotOfManyKeys)
	t.Run("BatchOrderAndAtomicity", s.testBatch)
	t.Run("DeleteRange", s.testDeleteRange)
	t.Run("Position", s.testPosition)
	t.Run("Reopen", s.testReopen)
	t.Run("ApproximateCount", s.testApproximateCount)
	t.Run("UseAfterClose", s.testUseAfterClose)
	t.Run("Destroy", s.testDestroy)
	t.Run("IteratorClose", s.testIteratorClose)
	t.Run("ConcurrentReadersOneWriter", s.testConcurrent)
	t.Run("ModelProperty", s.testModel)
}

type suite struct {
	kind   store.Kind
	newLoc func(t *testing.T) store.Location
}

// open opens loc and closes the Engine at the end of the test unless the test closed it.
func (s *suite) open(t testing.TB, loc store.Location) store.Engine {
	t.Helper()
	e, err := s.kind.Open(loc)
	if err != nil {
		t.Fatalf("Open(%v): %v", loc, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close(%v): %v", loc, err)
		}
	})
	return e
}

func (s *suite) fresh(t *testing.T) (store.Engine, store.Location) {
	t.Helper()
	loc := s.newLoc(t)
	return s.open(t, loc), loc
}

func b(s string) []byte { return []byte(s) }

// fataler is what the helpers need of a *testing.T or a *rapid.T (testing.TB cannot be
// implemented outside package testing).
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// kv is one entry as the model sees it.
type kv struct{ k, v string }

func (p kv) String() string { return fmt.Sprintf("%x=%x", p.k, p.v) }

func put(t testing.TB, e store.Engine, pairs ...string) {
	t.Helper()
	var bt store.Batch
	for i := 0; i+1 < len(pairs); i += 2 {
		bt.Put(b(pairs[i]), b(pairs[i+1]))
	}
	apply(t, e, &bt, -1)
}

func del(t testing.TB, e store.Engine, keys ...string) {
	t.Helper()
	var bt store.Batch
	for _, k := range keys {
		bt.Delete(b(k))
	}
	apply(t, e, &bt, -1)
}

func apply(t testing.TB, e store.Engine, bt *store.Batch, pos int64) {
	t.Helper()
	if err := e.Apply(bt, pos); err != nil {
		t.Fatalf("Apply(%d writes, %d): %v", bt.Len(), pos, err)
	}
}

// wantGet checks Get(key): absent when want is nil, else the value *want.
func wantGet(t testing.TB, e store.Engine, key string, want *string) {
	t.Helper()
	v, ok, err := e.Get(b(key))
	switch {
	case err != nil:
		t.Fatalf("Get(%x): %v", key, err)
	case want == nil && ok:
		t.Fatalf("Get(%x) = %x, want absent", key, v)
	case want != nil && !ok:
		t.Fatalf("Get(%x) absent, want %x", key, *want)
	case want != nil && string(v) != *want:
		t.Fatalf("Get(%x) = %x, want %x", key, v, *want)
	}
}

func some(s string) *string { return &s }

// scan reads [lower, upper) whole, copying what the iterator returns.
func scan(t fataler, e store.Engine, lower, upper []byte) []kv {
	t.Helper()
	it, err := e.Iterate(lower, upper)
	if err != nil {
		t.Fatalf("Iterate(%x, %x): %v", lower, upper, err)
	}
	return drain(t, it)
}

func drain(t fataler, it store.Iterator) []kv {
	t.Helper()
	var got []kv
	for it.Next() {
		got = append(got, kv{string(it.Key()), string(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterator: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterator Close: %v", err)
	}
	return got
}

func wantScan(t fataler, got, want []kv) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("iteration:\n got  %v\n want %v", got, want)
	}
}

func wantCount(t testing.TB, s *suite, e store.Engine, n int64) {
	t.Helper()
	c, err := e.ApproximateCount()
	if err != nil {
		t.Fatalf("ApproximateCount: %v", err)
	}
	if s.kind.Persistent() {
		// The contract only promises an estimate for a persistent kind: none when empty, some
		// when not.
		if c < 0 || (n == 0) != (c == 0) {
			t.Fatalf("ApproximateCount = %d, want about %d", c, n)
		}
		return
	}
	if c != n {
		t.Fatalf("ApproximateCount = %d, want exactly %d", c, n)
	}
}

func wantPosition(t testing.TB, e store.Engine, want int64, wantOK bool) {
	t.Helper()
	p, ok := e.Position()
	if ok != wantOK || (ok && p != want) {
		t.Fatalf("Position() = %d, %v; want %d, %v", p, ok, want, wantOK)
	}
}

func (s *suite) testEmpty(t *testing.T) {
	e, _ := s.fresh(t)
	wantGet(t, e, "a", nil)
	wantGet(t, e, "", nil)
	wantScan(t, scan(t, e, nil, nil), nil)
	wantCount(t, s, e, 0)
	wantPosition(t, e, 0, false)
	// An empty batch without a position changes nothing.
	apply(t, e, &store.Batch{}, -1)
	wantPosition(t, e, 0, false)
	wantScan(t, scan(t, e, nil, nil), nil)
}

func (s *suite) testPutGetOverwriteDelete(t *testing.T) {
	e, _ := s.fresh(t)
	put(t, e, "a", "1", "b", "2")
	wantGet(t, e, "a", some("1"))
	wantGet(t, e, "b", some("2"))
	wantGet(t, e, "c", nil)
	wantGet(t, e, "a\x00", nil) // a longer key with a's prefix is another key
	put(t, e, "a", "one")
	wantGet(t, e, "a", some("one"))
	del(t, e, "a")
	wantGet(t, e, "a", nil)
	wantGet(t, e, "b", some("2"))
	del(t, e, "nothing-here") // deleting an absent key is no error
	wantScan(t, scan(t, e, nil, nil), []kv{{"b", "2"}})
	// A value got earlier stays as it was after the key is overwritten.
	v, _, err := e.Get(b("b"))
	if err != nil {
		t.Fatal(err)
	}
	put(t, e, "b", "X")
	if string(v) != "2" {
		t.Fatalf("value got before an overwrite changed to %q", v)
	}
}

func (s *suite) testEmptyAndNilValues(t *testing.T) {
	e, _ := s.fresh(t)
	var bt store.Batch
	bt.Put(b("nil"), nil)
	bt.Put(b("empty"), []byte{})
	bt.Put(nil, b("empty key"))
	apply(t, e, &bt, -1)
	for _, k := range []string{"nil", "empty"} {
		v, ok, err := e.Get(b(k))
		if err != nil || !ok || len(v) != 0 {
			t.Fatalf("Get(%s) = %q, %v, %v; want a value of length 0", k, v, ok, err)
		}
	}
	wantGet(t, e, "", some("empty key")) // nil and empty name one key
	wantScan(t, scan(t, e, nil, nil), []kv{{"", "empty key"}, {"empty", ""}, {"nil", ""}})
	wantCount(t, s, e, 3)
	del(t, e, "nil")
	var dk store.Batch
	dk.Delete([]byte{})
	apply(t, e, &dk, -1)
	wantGet(t, e, "nil", nil)
	wantGet(t, e, "", nil)
	wantScan(t, scan(t, e, nil, nil), []kv{{"empty", ""}})
}

func (s *suite) testCallerBuffersNotKept(t *testing.T) {
	e, _ := s.fresh(t)
	key, val := b("key1"), b("val1")
	var bt store.Batch
	bt.Put(key, val)
	apply(t, e, &bt, -1)
	copy(key, "XXXX")
	copy(val, "YYYY")
	wantGet(t, e, "key1", some("val1"))
	wantGet(t, e, "XXXX", nil)

	// The same buffers reused for another batch.
	bt.Reset()
	copy(key, "key2")
	copy(val, "val2")
	bt.Put(key, val)
	apply(t, e, &bt, -1)
	wantScan(t, scan(t, e, nil, nil), []kv{{"key1", "val1"}, {"key2", "val2"}})
	put(t, e, "key3", "val3")

	// Bounds changed after Iterate returned (before the first Next) do not move the range.
	lower, upper := b("key2"), b("key3")
	it, err := e.Iterate(lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	copy(lower, "key1")
	copy(upper, "key4")
	wantScan(t, drain(t, it), []kv{{"key2", "val2"}})
}

// edgeKeys are keys whose bytes test bytewise order: 0x00 and 0xff, prefixes, and bytes >= 0x80
// (which sort after ASCII, unlike signed chars).
var edgeKeys = []string{
	"", "\x00", "\x00\x00", "\x00\xff", "\x01", "\x7f", "\x80", "\xfe", "\xff", "\xff\x00", "\xff\xff",
	"\xff\xff\xff", "a", "a\x00", "a\xff", "ab", "b", "B", "0", "9",
}

// sortedModel returns the model's entries in bytewise key order.
func sortedModel(m map[string]string) []kv {
	var out []kv
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, kv{k, m[k]})
	}
	return out
}

// inRange filters the model's sorted entries to [lower, upper), nil bounds open.
func inRange(all []kv, lower, upper []byte) []kv {
	var out []kv
	for _, p := range all {
		if lower != nil && p.k < string(lower) {
			continue
		}
		if upper != nil && p.k >= string(upper) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func (s *suite) testOrderBytewise(t *testing.T) {
	e, _ := s.fresh(t)
	model := map[string]string{}
	// Written in a scrambled order, one batch per two keys, so the engine must sort.
	var bt store.Batch
	for i, j := 0, 7; i < len(edgeKeys); i, j = i+1, (j+7)%len(edgeKeys) {
		k := edgeKeys[j]
		model[k] = "v" + k
		bt.Put(b(k), b("v"+k))
		if i%2 == 1 {
			apply(t, e, &bt, -1)
			bt.Reset()
		}
	}
	apply(t, e, &bt, -1)
	if len(model) != len(edgeKeys) {
		t.Fatalf("test bug: %d keys written of %d", len(model), len(edgeKeys))
	}
	wantScan(t, scan(t, e, nil, nil), sortedModel(model))
	wantCount(t, s, e, int64(len(edgeKeys)))
}

func (s *suite) testBounds(t *testing.T) {
	e, _ := s.fresh(t)
	model := map[string]string{}
	var bt store.Batch
	for _, k := range edgeKeys {
		model[k] = k + "!"
		bt.Put(b(k), b(k+"!"))
	}
	apply(t, e, &bt, -1)
	all := sortedModel(model)
	bounds := []struct {
		name         string
		lower, upper []byte
	}{
		{"open", nil, nil},
		{"lower only", b("a"), nil},
		{"upper only", nil, b("a")},
		{"both present", b("\x00"), b("\xff")},
		{"bounds absent as keys", b("\x00\x01"), b("a\x01")},
		{"lower empty key", []byte{}, nil},
		{"upper empty key", nil, []byte{}},
		{"lower 0x00 upper 0x00 0x00", b("\x00"), b("\x00\x00")},
		{"lower 0xff", b("\xff"), nil},
		{"upper 0xff 0xff", nil, b("\xff\xff")},
		{"above every key", b("\xff\xff\xff\xff"), nil},
		{"only the empty key", nil, b("\x00")},
		{"lower == upper", b("a"), b("a")},
		{"lower > upper", b("b"), b("a")},
		{"lower > upper, edge bytes", b("\xff"), b("\x00")},
	}
	for _, bd := range bounds {
		t.Run(bd.name, func(t *testing.T) {
			wantScan(t, scan(t, e, bd.lower, bd.upper), inRange(all, bd.lower, bd.upper))
		})
	}
}

func (s *suite) testManyKeys(t *testing.T) {
	e, _ := s.fresh(t)
	model := map[string]string{}
	const n = 700
	var bt store.Batch
	for i := range n {
		k := fmt.Sprintf("k%05d", (i*337)%n) // every number once, written out of order
		model[k] = fmt.Sprint(i)
		bt.Put(b(k), b(fmt.Sprint(i)))
		if i%100 == 99 {
			apply(t, e, &bt, -1)
			bt.Reset()
		}
	}
	apply(t, e, &bt, -1)
	all := sortedModel(model)
	wantScan(t, scan(t, e, nil, nil), all)
	for _, r := range [][2]int{{0, 1}, {63, 65}, {64, 129}, {1, 699}, {128, 700}, {500, 501}} {
		lo, hi := b(fmt.Sprintf("k%05d", r[0])), b(fmt.Sprintf("k%05d", r[1]))
		wantScan(t, scan(t, e, lo, hi), all[r[0]:r[1]])
	}
	wantCount(t, s, e, n)
}

func (s *suite) testIterateSnapshot(t *testing.T) {
	e, _ := s.fresh(t)
	put(t, e, "a", "1", "b", "2", "c", "3")
	it, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Writes between Iterate and the first Next are not seen.
	var bt store.Batch
	bt.Put(b("0"), b("new"))
	bt.Delete(b("a"))
	bt.Put(b("b"), b("changed"))
	bt.Put(b("bb"), b("new"))
	apply(t, e, &bt, -1)
	if !it.Next() {
		t.Fatal("snapshot is empty")
	}
	got := []kv{{string(it.Key()), string(it.Value())}}
	// Writes while iterating (as a processor does) are not seen either.
	del(t, e, "c")
	put(t, e, "d", "new", "b", "again")
	got = append(got, drain(t, it)...)
	wantScan(t, got, []kv{{"a", "1"}, {"b", "2"}, {"c", "3"}})
	// A new iterator sees everything.
	wantScan(t, scan(t, e, nil, nil), []kv{{"0", "new"}, {"b", "again"}, {"bb", "new"}, {"d", "new"}})

	// A bounded snapshot likewise.
	it, err = e.Iterate(b("b"), b("c"))
	if err != nil {
		t.Fatal(err)
	}
	put(t, e, "b\x00", "new", "bz", "new")
	wantScan(t, drain(t, it), []kv{{"b", "again"}, {"bb", "new"}})
}

// An iterator over more keys than an engine reads at once keeps its snapshot to the end, however
// the keys it has still to return are rewritten, deleted or range-deleted meanwhile, and two
// iterators open at once keep theirs; once they are closed, writes are seen as before.
func (s *suite) testIterateSnapshotOfManyKeys(t *testing.T) {
	e, _ := s.fresh(t)
	const n = 500
	var bt store.Batch
	var want []kv
	for i := range n {
		k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("v%d", i)
		bt.Put(b(k), b(v))
		want = append(want, kv{k, v})
	}
	apply(t, e, &bt, -1)
	first, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Next() {
		t.Fatal("snapshot is empty")
	}
	got := []kv{{string(first.Key()), string(first.Value())}}
	rewrite := func(round int) {
		var bt store.Batch
		for i := range n {
			bt.Put(b(fmt.Sprintf("k%04d", i)), b(fmt.Sprintf("r%d-%d", round, i)))
		}
		apply(t, e, &bt, -1)
	}
	rewrite(1)
	second, err := e.Iterate(b("k0100"), b("k0400"))
	if err != nil {
		t.Fatal(err)
	}
	rewrite(2)
	bt.Reset()
	bt.Delete(b("k0300"))
	bt.DeleteRange(b("k0350"), b("k0450"))
	bt.Put(b("k0200x"), b("new"))
	apply(t, e, &bt, -1)
	got = append(got, drain(t, first)...)
	wantScan(t, got, want)
	var wantSecond []kv
	for i := 100; i < 400; i++ {
		wantSecond = append(wantSecond, kv{fmt.Sprintf("k%04d", i), fmt.Sprintf("r1-%d", i)})
	}
	wantScan(t, drain(t, second), wantSecond)

	// What the iterators did not see is there: the deletes, and the writes before them.
	wantGet(t, e, "k0300", nil)
	wantGet(t, e, "k0400", nil)
	wantGet(t, e, "k0299", some("r2-299"))
	wantCount(t, s, e, n-101+1)

	// Both closed: a write is seen by Get and by the next iterator.
	rewrite(3)
	wantGet(t, e, "k0001", some("r3-1"))
	wantGet(t, e, "k0400", some("r3-400"))
	all := scan(t, e, nil, nil)
	if len(all) != n+1 || all[201] != (kv{"k0200x", "new"}) || all[n] != (kv{"k0499", "r3-499"}) {
		t.Fatalf("after the iterators closed: %d keys, %v, last %v; want %d, k0200x=new, k0499=r3-499", len(all), all[201], all[len(all)-1], n+1)
	}
}

func (s *suite) testBatch(t *testing.T) {
	e, _ := s.fresh(t)
	var bt store.Batch
	bt.Put(b("x"), b("1"))
	bt.Delete(b("x"))
	bt.Delete(b("y"))
	bt.Put(b("y"), b("1"))
	bt.Put(b("z"), b("1"))
	bt.Put(b("z"), b("2"))
	bt.Put(b("w"), b("1"))
	bt.Delete(b("w"))
	bt.Put(b("w"), b("3"))
	if bt.Len() != 9 {
		t.Fatalf("Batch.Len() = %d, want 9", bt.Len())
	}
	apply(t, e, &bt, -1)
	wantGet(t, e, "x", nil)
	wantGet(t, e, "y", some("1"))
	wantGet(t, e, "z", some("2"))
	wantGet(t, e, "w", some("3"))
	wantScan(t, scan(t, e, nil, nil), []kv{{"w", "3"}, {"y", "1"}, {"z", "2"}})
	wantCount(t, s, e, 3)

	// Reset empties the batch: applying it again writes nothing.
	bt.Reset()
	if bt.Len() != 0 {
		t.Fatalf("Len after Reset = %d", bt.Len())
	}
	bt.Delete(b("y"))
	apply(t, e, &bt, -1)
	wantScan(t, scan(t, e, nil, nil), []kv{{"w", "3"}, {"z", "2"}})

	// A nil batch is an empty one.
	if err := e.Apply(nil, -1); err != nil {
		t.Fatalf("Apply(nil, -1): %v", err)
	}
	wantScan(t, scan(t, e, nil, nil), []kv{{"w", "3"}, {"z", "2"}})
}

// rangeKeys are the keys the DeleteRange tests start from, in bytewise order; each holds its
// key followed by "!".
var rangeKeys = []string{"", "\x00", "a", "b", "b\x00", "c", "d", "d\x00", "\xff", "\xff\xff"}

// withValues gives each key the value rangeKeys' keys hold.
func withValues(keys ...string) []kv {
	out := make([]kv, 0, len(keys))
	for _, k := range keys {
		out = append(out, kv{k, k + "!"})
	}
	return out
}

// wantOnly checks that of rangeKeys exactly the keys of want (in order) remain: by Get first (so
// a store not iterated yet is read as it is), then by a full iteration.
func wantOnly(t *testing.T, e store.Engine, want ...string) {
	t.Helper()
	for _, k := range rangeKeys {
		if slices.Contains(want, k) {
			wantGet(t, e, k, some(k+"!"))
		} else {
			wantGet(t, e, k, nil)
		}
	}
	wantScan(t, scan(t, e, nil, nil), withValues(want...))
}

// wantCountAfterRangeDelete checks the count after a range delete left n keys, where before was
// the count before it: exact for a kind that is not persistent; for a persistent one an estimate
// that the range delete did not raise (it may not lower it either: it cannot know how many keys it
// deleted without reading them), and that is not zero while keys remain.
func wantCountAfterRangeDelete(t *testing.T, s *suite, e store.Engine, before, n int64) {
	t.Helper()
	if !s.kind.Persistent() {
		wantCount(t, s, e, n)
		return
	}
	c, err := e.ApproximateCount()
	if err != nil {
		t.Fatalf("ApproximateCount: %v", err)
	}
	if c < 0 || c > before || (n > 0 && c == 0) {
		t.Fatalf("ApproximateCount = %d after a range delete left %d keys (%d before it)", c, n, before)
	}
}

func (s *suite) testDeleteRange(t *testing.T) {
	t.Run("Ranges", s.testDeleteRanges)
	t.Run("ManyKeys", s.testDeleteRangeManyKeys)
	t.Run("BatchOrder", s.testDeleteRangeBatchOrder)
	t.Run("WithPosition", s.testDeleteRangeWithPosition)
	t.Run("IteratorSnapshot", s.testDeleteRangeSnapshot)
	t.Run("BoundsNotKept", s.testDeleteRangeBoundsNotKept)
	t.Run("Reopen", s.testDeleteRangeReopen)
}

// testDeleteRanges deletes one range from rangeKeys, in a store iterated before the delete and in
// one never iterated (an Engine may keep these apart, as the in-memory one does).
func (s *suite) testDeleteRanges(t *testing.T) {
	cases := []struct {
		name         string
		lower, upper []byte
		left         []string // the keys left, by hand
	}{
		{"middle", b("b"), b("d"), []string{"", "\x00", "a", "d", "d\x00", "\xff", "\xff\xff"}},
		{"bounds absent as keys", b("a\x00"), b("c\x00"), []string{"", "\x00", "a", "d", "d\x00", "\xff", "\xff\xff"}},
		{"one key", b("c"), b("c\x00"), []string{"", "\x00", "a", "b", "b\x00", "d", "d\x00", "\xff", "\xff\xff"}},
		{"upper open", b("d"), nil, []string{"", "\x00", "a", "b", "b\x00", "c"}},
		{"upper 0xff 0xff", b("c"), b("\xff\xff"), []string{"", "\x00", "a", "b", "b\x00", "\xff\xff"}},
		{"lower open", nil, b("b"), []string{"b", "b\x00", "c", "d", "d\x00", "\xff", "\xff\xff"}},
		{"lower empty key", []byte{}, b("\x00\x00"), []string{"a", "b", "b\x00", "c", "d", "d\x00", "\xff", "\xff\xff"}},
		{"both open", nil, nil, nil},
		{"empty key to open", []byte{}, nil, nil},
		{"between keys", b("b\x00\x00"), b("c"), rangeKeys},
		{"above every key", b("\xff\xff\xff"), nil, rangeKeys},
		{"lower == upper", b("b"), b("b"), rangeKeys},
		{"lower > upper", b("d"), b("b"), rangeKeys},
		{"lower > upper, edge bytes", b("\xff"), b("\x00"), rangeKeys},
		{"upper empty key", nil, []byte{}, rangeKeys},
	}
	for _, c := range cases {
		for _, iterated := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/iterated=%v", c.name, iterated), func(t *testing.T) {
				e, _ := s.fresh(t)
				var bt store.Batch
				for _, k := range rangeKeys {
					bt.Put(b(k), b(k+"!"))
				}
				apply(t, e, &bt, -1)
				if iterated {
					wantScan(t, scan(t, e, nil, nil), withValues(rangeKeys...))
				}
				before, err := e.ApproximateCount()
				if err != nil {
					t.Fatal(err)
				}
				bt.Reset()
				bt.DeleteRange(c.lower, c.upper)
				if bt.Len() != 1 {
					t.Fatalf("Len() = %d after one DeleteRange, want 1", bt.Len())
				}
				apply(t, e, &bt, -1)
				wantCountAfterRangeDelete(t, s, e, before, int64(len(c.left)))
				wantOnly(t, e, c.left...)
				// The store goes on as before: a key of the range can be written again.
				put(t, e, "c", "again")
				wantGet(t, e, "c", some("again"))
			})
		}
	}
}

// testDeleteRangeManyKeys deletes a range of many more keys than an Engine might handle at once
// (a segment of a window store), in a store iterated before and in one never iterated.
func (s *suite) testDeleteRangeManyKeys(t *testing.T) {
	for _, iterated := range []bool{false, true} {
		t.Run(fmt.Sprintf("iterated=%v", iterated), func(t *testing.T) {
			e, _ := s.fresh(t)
			const n = 700
			var bt store.Batch
			for i := range n {
				bt.Put(fmt.Appendf(nil, "k%05d", (i*337)%n), b("v")) // every number once, out of order
			}
			apply(t, e, &bt, -1)
			if iterated {
				if got := len(scan(t, e, nil, nil)); got != n {
					t.Fatalf("%d keys written, want %d", got, n)
				}
			}
			before, err := e.ApproximateCount()
			if err != nil {
				t.Fatal(err)
			}
			bt.Reset()
			bt.DeleteRange(b("k00010"), b("k00690")) // 680 keys, 10 left on each side
			apply(t, e, &bt, -1)
			var want []kv
			for i := range 10 {
				want = append(want, kv{fmt.Sprintf("k%05d", i), "v"})
			}
			for i := 690; i < n; i++ {
				want = append(want, kv{fmt.Sprintf("k%05d", i), "v"})
			}
			wantGet(t, e, "k00009", some("v"))
			wantGet(t, e, "k00010", nil)
			wantGet(t, e, "k00350", nil)
			wantGet(t, e, "k00689", nil)
			wantGet(t, e, "k00690", some("v"))
			wantCountAfterRangeDelete(t, s, e, before, 20)
			wantScan(t, scan(t, e, nil, nil), want)
		})
	}
}

// testDeleteRangeBatchOrder mixes a range delete with writes before and after it in one batch:
// they apply in order, so the range removes what was written before it and nothing after.
func (s *suite) testDeleteRangeBatchOrder(t *testing.T) {
	for _, iterated := range []bool{false, true} {
		t.Run(fmt.Sprintf("iterated=%v", iterated), func(t *testing.T) {
			e, _ := s.fresh(t)
			put(t, e, "a", "1", "b", "1", "c", "1", "d", "1")
			if iterated {
				wantScan(t, scan(t, e, nil, nil), []kv{{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}})
			}
			var bt store.Batch
			bt.Put(b("b"), b("2"))  // before the range, in it: deleted
			bt.Put(b("bb"), b("2")) // a new key before the range, in it: deleted
			bt.Delete(b("a"))       // outside the range: deleted on its own
			bt.DeleteRange(b("b"), b("d"))
			bt.Put(b("c"), b("3"))         // after the range, in it: kept
			bt.Put(b("b\x00"), b("3"))     // likewise
			bt.Delete(b("d"))              // after the range, outside it
			bt.DeleteRange(b("z"), b("a")) // inverted: deletes nothing
			bt.Put(b("e"), b("3"))
			bt.DeleteRange(b("e"), b("e\x00")) // deletes the put just before it
			bt.Put(b("f"), b("4"))
			bt.DeleteRange(b("f\x00"), nil) // nothing after f yet
			bt.Put(b("g"), b("4"))          // written after the open range: kept
			if bt.Len() != 13 {
				t.Fatalf("Batch.Len() = %d, want 13", bt.Len())
			}
			apply(t, e, &bt, -1)
			wantGet(t, e, "a", nil)
			wantGet(t, e, "b", nil)
			wantGet(t, e, "bb", nil)
			wantGet(t, e, "b\x00", some("3"))
			wantGet(t, e, "c", some("3"))
			wantGet(t, e, "d", nil)
			wantGet(t, e, "e", nil)
			wantGet(t, e, "f", some("4"))
			wantGet(t, e, "g", some("4"))
			wantScan(t, scan(t, e, nil, nil), []kv{{"b\x00", "3"}, {"c", "3"}, {"f", "4"}, {"g", "4"}})

			// Overlapping ranges in one batch, and a put between them inside both.
			bt.Reset()
			bt.DeleteRange(b("b"), b("c\x00"))
			bt.Put(b("c"), b("5"))
			bt.DeleteRange(b("c"), b("f\x00"))
			bt.Put(b("d"), b("5"))
			apply(t, e, &bt, -1)
			wantScan(t, scan(t, e, nil, nil), []kv{{"d", "5"}, {"g", "4"}})
			if !s.kind.Persistent() {
				wantCount(t, s, e, 2)
			}
		})
	}
}

// testDeleteRangeWithPosition records a position in the Apply of a range delete: both take effect,
// and a range delete never touches the recorded position, whatever its bounds.
func (s *suite) testDeleteRangeWithPosition(t *testing.T) {
	e, _ := s.fresh(t)
	put(t, e, "a", "1", "b", "2", "c", "3")
	var bt store.Batch
	bt.DeleteRange(b("a"), b("c"))
	apply(t, e, &bt, 7)
	wantPosition(t, e, 7, true)
	wantScan(t, scan(t, e, nil, nil), []kv{{"c", "3"}})
	bt.Reset()
	bt.DeleteRange(nil, nil)
	apply(t, e, &bt, -1) // position -1: the position stays
	wantPosition(t, e, 7, true)
	wantScan(t, scan(t, e, nil, nil), nil)
	bt.Reset()
	bt.Put(b("d"), b("4"))
	bt.DeleteRange(b("d\x00"), nil)
	apply(t, e, &bt, 9)
	wantPosition(t, e, 9, true)
	wantScan(t, scan(t, e, nil, nil), []kv{{"d", "4"}})
}

// testDeleteRangeSnapshot opens iterators before a range delete: like any write, it is not seen
// by them (Engine.Iterate), whether they had started or not.
func (s *suite) testDeleteRangeSnapshot(t *testing.T) {
	e, _ := s.fresh(t)
	put(t, e, "a", "1", "b", "2", "c", "3", "d", "4")
	unstarted, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	started, err := e.Iterate(b("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !started.Next() || string(started.Key()) != "b" {
		t.Fatalf("first entry from b: %q", started.Key())
	}
	var bt store.Batch
	bt.DeleteRange(b("b"), nil)
	bt.Put(b("c"), b("new"))
	apply(t, e, &bt, -1)
	wantScan(t, drain(t, unstarted), []kv{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}})
	wantScan(t, drain(t, started), []kv{{"c", "3"}, {"d", "4"}})
	// A new iterator sees the delete.
	wantScan(t, scan(t, e, nil, nil), []kv{{"a", "1"}, {"c", "new"}})
}

// testDeleteRangeBoundsNotKept changes the bounds' buffers after Apply: the range deleted is the
// one they held at Apply, and later writes are not deleted.
func (s *suite) testDeleteRangeBoundsNotKept(t *testing.T) {
	e, _ := s.fresh(t)
	put(t, e, "a", "1", "b", "2", "c", "3")
	lower, upper := b("b"), b("c")
	var bt store.Batch
	bt.DeleteRange(lower, upper)
	apply(t, e, &bt, -1)
	copy(lower, "a")
	copy(upper, "z")
	put(t, e, "b", "again")
	wantScan(t, scan(t, e, nil, nil), []kv{{"a", "1"}, {"b", "again"}, {"c", "3"}})
}

// testDeleteRangeReopen closes the store after range deletes: a persistent kind keeps their
// effect (and its position, which not even a range over every key deletes); another starts empty.
func (s *suite) testDeleteRangeReopen(t *testing.T) {
	loc := s.newLoc(t)
	e := s.open(t, loc)
	put(t, e, "a", "1", "b", "2", "c", "3", "\xff", "4")
	var bt store.Batch
	bt.DeleteRange(b("b"), b("c"))
	apply(t, e, &bt, 42)
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	e = s.open(t, loc)
	if !s.kind.Persistent() {
		wantPosition(t, e, 0, false)
		wantScan(t, scan(t, e, nil, nil), nil)
		return
	}
	wantPosition(t, e, 42, true)
	wantGet(t, e, "b", nil)
	wantScan(t, scan(t, e, nil, nil), []kv{{"a", "1"}, {"c", "3"}, {"\xff", "4"}})

	// Every key, with the bounds open, and no position: the data goes, the position stays.
	bt.Reset()
	bt.DeleteRange(nil, nil)
	bt.Put(b("z"), b("5"))
	apply(t, e, &bt, -1)
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	e = s.open(t, loc)
	wantPosition(t, e, 42, true)
	wantScan(t, scan(t, e, nil, nil), []kv{{"z", "5"}})
	wantCount(t, s, e, 1)
}

func (s *suite) testPosition(t *testing.T) {
	e, _ := s.fresh(t)
	wantPosition(t, e, 0, false)
	var bt store.Batch
	bt.Put(b("a"), b("1"))
	apply(t, e, &bt, -1)
	wantPosition(t, e, 0, false) // data without a position claims none
	apply(t, e, &bt, 10)
	wantPosition(t, e, 10, true)
	bt.Reset()
	bt.Put(b("b"), b("2"))
	apply(t, e, &bt, -1)
	wantPosition(t, e, 10, true)
	wantGet(t, e, "b", some("2"))
	apply(t, e, nil, 20) // a position alone (e.g. past a transaction marker)
	wantPosition(t, e, 20, true)
	apply(t, e, &store.Batch{}, 0) // position 0 is a position
	wantPosition(t, e, 0, true)
	apply(t, e, &store.Batch{}, 25)
	wantPosition(t, e, 25, true)
}

func (s *suite) testReopen(t *testing.T) {
	loc := s.newLoc(t)
	e := s.open(t, loc)
	put(t, e, "a", "1", "\xff", "2")
	apply(t, e, nil, 42)
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	e = s.open(t, loc)
	if s.kind.Persistent() {
		wantPosition(t, e, 42, true)
		wantScan(t, scan(t, e, nil, nil), []kv{{"a", "1"}, {"\xff", "2"}})
		wantCount(t, s, e, 2)
		// Apply(-1) after reopening keeps the reopened position.
		put(t, e, "b", "3")
		wantPosition(t, e, 42, true)
	} else {
		wantPosition(t, e, 0, false)
		wantScan(t, scan(t, e, nil, nil), nil)
		wantCount(t, s, e, 0)
	}
}

func (s *suite) testApproximateCount(t *testing.T) {
	e, _ := s.fresh(t)
	const n = 100
	var bt store.Batch
	for i := range n {
		bt.Put(fmt.Appendf(nil, "key-%03d", i), b("v"))
	}
	apply(t, e, &bt, -1)
	wantCount(t, s, e, n)
	apply(t, e, &bt, -1) // overwrites add no key
	wantCount(t, s, e, n)
	bt.Reset()
	for i := range n / 2 {
		bt.Delete(fmt.Appendf(nil, "key-%03d", i))
	}
	bt.Delete(b("absent"))
	apply(t, e, &bt, -1)
	wantCount(t, s, e, n/2)
	bt.Reset()
	for i := range n {
		bt.Delete(fmt.Appendf(nil, "key-%03d", i))
	}
	apply(t, e, &bt, -1)
	c, err := e.ApproximateCount()
	if err != nil {
		t.Fatal(err)
	}
	// Even an estimate has no more keys than it had before the deletes.
	if c < 0 || c > n/2 || (!s.kind.Persistent() && c != 0) {
		t.Fatalf("ApproximateCount after deleting all = %d", c)
	}
}

// wantClosed checks that err reports use after Close as the contract says.
func wantClosed(t *testing.T, what string, loc store.Location, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrClosed) {
		t.Errorf("%s after Close: %v, want store.ErrClosed", what, err)
		return
	}
	var se *store.Error
	if !errors.As(err, &se) {
		t.Errorf("%s after Close: %T is no *store.Error", what, err)
		return
	}
	if se.Op == "" || se.Loc != loc {
		t.Errorf("%s after Close: Op %q, Loc %v; want an Op and Loc %v", what, se.Op, se.Loc, loc)
	}
}

func (s *suite) testUseAfterClose(t *testing.T) {
	e, loc := s.fresh(t)
	put(t, e, "a", "1")
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, _, err := e.Get(b("a"))
	wantClosed(t, "Get", loc, err)
	it, err := e.Iterate(nil, nil)
	wantClosed(t, "Iterate", loc, err)
	if it != nil {
		t.Errorf("Iterate after Close returned an iterator")
	}
	_, err = e.ApproximateCount()
	wantClosed(t, "ApproximateCount", loc, err)
	var bt store.Batch
	bt.Put(b("b"), b("2"))
	wantClosed(t, "Apply", loc, e.Apply(&bt, 5))
	wantClosed(t, "Close", loc, e.Close())
}

func (s *suite) testDestroy(t *testing.T) {
	loc := s.newLoc(t)
	// Destroying what was never opened is no error.
	if err := s.kind.Destroy(loc); err != nil {
		t.Fatalf("Destroy of a store never opened: %v", err)
	}
	e := s.open(t, loc)
	put(t, e, "a", "1")
	apply(t, e, nil, 7)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.kind.Destroy(loc); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if err := s.kind.Destroy(loc); err != nil {
		t.Fatalf("Destroy twice: %v", err)
	}
	e = s.open(t, loc)
	wantPosition(t, e, 0, false)
	wantScan(t, scan(t, e, nil, nil), nil)
	wantCount(t, s, e, 0)
	// The store is usable after its rebirth.
	put(t, e, "b", "2")
	wantGet(t, e, "b", some("2"))
	wantGet(t, e, "a", nil)
}

func (s *suite) testIteratorClose(t *testing.T) {
	e, _ := s.fresh(t)
	put(t, e, "a", "1", "b", "2")
	it, err := e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() || string(it.Key()) != "a" {
		t.Fatalf("first entry: %q", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if it.Next() {
		t.Fatal("Next after Close reported an entry")
	}
	// An iterator closed before its first Next, and one walked to its end, close cleanly too.
	it, err = e.Iterate(b("a"), b("a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("Close of an unused iterator: %v", err)
	}
	it, err = e.Iterate(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
	}
	if it.Next() {
		t.Fatal("Next after the end reported an entry")
	}
	if err := it.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// testConcurrent runs readers beside one writer (run it with -race). The writer's every batch sets
// x and y to the same number and records it as the position; a reader's snapshot must show x == y
// (a batch is atomic), and the numbers a reader sees never go down.
func (s *suite) testConcurrent(t *testing.T) {
	e, _ := s.fresh(t)
	const writes = 300
	const readers = 3
	put(t, e, "x", "0000", "y", "0000")
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for r := range readers {
		wg.Go(func() {
			errs <- s.reader(e, r, done)
		})
	}
	var bt store.Batch
	for i := 1; i <= writes; i++ {
		v := fmt.Appendf(nil, "%04d", i)
		bt.Reset()
		bt.Put(b("x"), v)
		bt.Put(b("y"), v)
		bt.Put(fmt.Appendf(nil, "k%04d", i), v)
		switch {
		case i%2 == 0:
			// Every older k, by one range delete (the snapshots must see it whole too).
			bt.DeleteRange(b("k"), fmt.Appendf(nil, "k%04d", i))
		case i > 1:
			bt.Delete(fmt.Appendf(nil, "k%04d", i-1))
		}
		if err := e.Apply(&bt, int64(i)); err != nil {
			t.Errorf("Apply %d: %v", i, err)
			break
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	wantGet(t, e, "x", some(fmt.Sprintf("%04d", writes)))
	wantCount(t, s, e, 3)
}

// reader reads until done is closed, then once more, and returns the first broken promise.
func (s *suite) reader(e store.Engine, r int, done <-chan struct{}) error {
	last, lastPos := "", int64(-1)
	for round := 0; ; round++ {
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		v, ok, err := e.Get(b("x"))
		if err != nil || !ok {
			return fmt.Errorf("reader %d: Get(x) = %v, %v", r, ok, err)
		}
		if string(v) < last {
			return fmt.Errorf("reader %d: x went back from %s to %s", r, last, v)
		}
		last = string(v)
		it, err := e.Iterate(nil, nil)
		if err != nil {
			return fmt.Errorf("reader %d: Iterate: %v", r, err)
		}
		snap := map[string]string{}
		for it.Next() {
			snap[string(it.Key())] = string(it.Value())
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return fmt.Errorf("reader %d: iterator: %v", r, err)
		}
		if snap["x"] != snap["y"] || snap["x"] < last {
			return fmt.Errorf("reader %d round %d: snapshot x=%s y=%s after x=%s", r, round, snap["x"], snap["y"], last)
		}
		if n := snap["x"]; n != "0000" && snap["k"+n] != n {
			return fmt.Errorf("reader %d: snapshot at x=%s lacks k%s: %v", r, n, n, snap)
		}
		if _, err := e.ApproximateCount(); err != nil {
			return fmt.Errorf("reader %d: ApproximateCount: %v", r, err)
		}
		p, ok := e.Position()
		if ok && p < lastPos {
			return fmt.Errorf("reader %d: position went back from %d to %d", r, lastPos, p)
		}
		if ok {
			lastPos = p
		}
		if finished {
			return nil
		}
	}
}

// testModel applies random batches and compares the Engine with the model after each step.
func (s *suite) testModel(t *testing.T) {
	// Few distinct bytes and short keys, so writes often hit the same keys and bounds fall on,
	// between and around them.
	keyGen := rapid.Custom(func(rt *rapid.T) string {
		return string(rapid.SliceOfN(rapid.SampledFrom([]byte{0x00, 0x01, 'a', 0x7f, 0x80, 0xff}), 0, 3).Draw(rt, "keybytes"))
	})
	valGen := rapid.Custom(func(rt *rapid.T) []byte {
		if rapid.IntRange(0, 5).Draw(rt, "nil") == 0 {
			return nil
		}
		return rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(rt, "value")
	})
	boundGen := rapid.Custom(func(rt *rapid.T) []byte {
		if rapid.Bool().Draw(rt, "open") {
			return nil
		}
		return []byte(keyGen.Draw(rt, "bound"))
	})
	rapid.Check(t, func(rt *rapid.T) {
		loc := s.newLoc(t)
		e, err := s.kind.Open(loc)
		if err != nil {
			rt.Fatalf("Open: %v", err)
		}
		defer func() {
			if e != nil {
				_ = e.Close()
			}
		}()
		model := map[string]string{}
		pos, hasPos := int64(0), false
		rt.Repeat(map[string]func(*rapid.T){
			"apply": func(rt *rapid.T) {
				var bt store.Batch
				n := rapid.IntRange(0, 8).Draw(rt, "writes")
				for range n {
					switch rapid.IntRange(0, 8).Draw(rt, "op") {
					case 0, 1, 2:
						k := keyGen.Draw(rt, "key")
						bt.Delete([]byte(k))
						delete(model, k)
						continue
					case 3:
						lo, hi := boundGen.Draw(rt, "lower"), boundGen.Draw(rt, "upper")
						bt.DeleteRange(lo, hi)
						for k := range model {
							if k >= string(lo) && (hi == nil || k < string(hi)) {
								delete(model, k)
							}
						}
						continue
					}
					k := keyGen.Draw(rt, "key")
					v := valGen.Draw(rt, "value")
					bt.Put([]byte(k), v)
					model[k] = string(v)
				}
				p := int64(-1)
				if rapid.Bool().Draw(rt, "withPosition") {
					p = pos + rapid.Int64Range(0, 5).Draw(rt, "advance")
					pos, hasPos = p, true
				}
				if err := e.Apply(&bt, p); err != nil {
					rt.Fatalf("Apply: %v", err)
				}
			},
			"get": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "key")
				v, ok, err := e.Get([]byte(k))
				want, wantOK := model[k]
				if err != nil || ok != wantOK || string(v) != want {
					rt.Fatalf("Get(%x) = %x, %v, %v; want %x, %v", k, v, ok, err, want, wantOK)
				}
			},
			"range": func(rt *rapid.T) {
				lo, hi := boundGen.Draw(rt, "lower"), boundGen.Draw(rt, "upper")
				got := scan(rt, e, lo, hi)
				if want := inRange(sortedModel(model), lo, hi); !slices.Equal(got, want) {
					rt.Fatalf("Iterate(%x, %x):\n got  %v\n want %v", lo, hi, got, want)
				}
			},
			"reopen": func(rt *rapid.T) {
				if err := e.Close(); err != nil {
					rt.Fatalf("Close: %v", err)
				}
				e2, err := s.kind.Open(loc)
				if err != nil {
					e = nil
					rt.Fatalf("Open again: %v", err)
				}
				e = e2
				if !s.kind.Persistent() {
					model, pos, hasPos = map[string]string{}, 0, false
				}
			},
			"": func(rt *rapid.T) {
				got := scan(rt, e, nil, nil)
				if want := sortedModel(model); !slices.Equal(got, want) {
					rt.Fatalf("full iteration:\n got  %v\n want %v", got, want)
				}
				p, ok := e.Position()
				if ok != hasPos || (ok && p != pos) {
					rt.Fatalf("Position() = %d, %v; want %d, %v", p, ok, pos, hasPos)
				}
				if !s.kind.Persistent() {
					if c, err := e.ApproximateCount(); err != nil || c != int64(len(model)) {
						rt.Fatalf("ApproximateCount() = %d, %v; want %d", c, err, len(model))
					}
				}
			},
		})
	})
}
