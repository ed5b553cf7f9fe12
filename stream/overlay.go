package stream

import (
	"bytes"

	"github.com/google/btree"

	"github.com/streamsgroup/streamsgroup/store"
)

// overlay holds a store's writes of the open transaction under exactly-once: reads see them, the
// engine (and so queries, restores and a crash) does not until the transaction commits; an abort
// drops them, leaving the engine at its last committed state without a restore (R4).
type overlay struct {
	tree *btree.BTreeG[pending]
}

// pending is one uncommitted write: a value, or a delete.
type pending struct {
	key   []byte
	value []byte
	del   bool
}

func pendingLess(a, b pending) bool { return bytes.Compare(a.key, b.key) < 0 }

func newOverlay() *overlay { return &overlay{tree: btree.NewG(16, pendingLess)} }

// put records a pending write. The overlay keeps key and value as they are (the store gives it the
// bytes its changelog record holds, which nobody changes), and hands them to the engine as owned.
func (o *overlay) put(key, value []byte, del bool) {
	o.tree.ReplaceOrInsert(pending{key: key, value: value, del: del})
}

// get returns the pending write of key, if any.
func (o *overlay) get(key []byte) (pending, bool) { return o.tree.Get(pending{key: key}) }

func (o *overlay) empty() bool { return o.tree.Len() == 0 }

// batch returns the pending writes in key order, as one atomic engine batch.
func (o *overlay) batch() *store.Batch {
	var b store.Batch
	o.tree.Ascend(func(p pending) bool {
		if p.del {
			b.Delete(p.key)
		} else {
			b.PutOwned(p.key, p.value)
		}
		return true
	})
	return &b
}

func (o *overlay) clear() { o.tree.Clear(false) }

// within returns the pending writes with lower <= key < upper (nil bounds open), in key order.
func (o *overlay) within(lower, upper []byte) []pending {
	var out []pending
	visit := func(p pending) bool {
		if upper != nil && bytes.Compare(p.key, upper) >= 0 {
			return false
		}
		out = append(out, p)
		return true
	}
	if lower == nil {
		o.tree.Ascend(visit)
	} else {
		o.tree.AscendGreaterOrEqual(pending{key: lower}, visit)
	}
	return out
}

// overlaid walks an engine iterator and the pending writes of the same range together: a pending
// write replaces the engine's entry of its key, and a pending delete hides it.
type overlaid struct {
	base     store.Iterator
	baseLive bool
	advance  bool // the base's current entry was returned: move past it at the next Next
	pend     []pending
	key, val []byte
}

func newOverlaid(base store.Iterator, pend []pending) *overlaid {
	return &overlaid{base: base, baseLive: base.Next(), pend: pend}
}

func (it *overlaid) Next() bool {
	if it.advance {
		it.advance = false
		it.baseLive = it.base.Next()
	}
	for {
		switch {
		case !it.baseLive && len(it.pend) == 0:
			return false
		case len(it.pend) == 0 || it.baseLive && bytes.Compare(it.base.Key(), it.pend[0].key) < 0:
			// The base's entry stays valid until the base moves, which waits for the next Next.
			it.key, it.val = it.base.Key(), it.base.Value()
			it.advance = true
			return true
		}
		p := it.pend[0]
		it.pend = it.pend[1:]
		if it.baseLive && bytes.Equal(it.base.Key(), p.key) {
			it.baseLive = it.base.Next()
		}
		if p.del {
			continue
		}
		it.key, it.val = p.key, p.value
		return true
	}
}

func (it *overlaid) Key() []byte   { return it.key }
func (it *overlaid) Value() []byte { return it.val }
func (it *overlaid) Err() error    { return it.base.Err() }
func (it *overlaid) Close() error  { return it.base.Close() }
