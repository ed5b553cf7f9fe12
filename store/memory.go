package store

import (
	"bytes"
	"sync"
	"unsafe"

	"github.com/google/btree"
)

// Memory is the Kind of in-memory stores: a hash map per Engine until its first iterator, a sorted
// tree from then on, gone when the Engine is closed (or the process ends) and so restored from the
// changelog at every Open. Open never fails, and Destroy has nothing to delete. ApproximateCount is
// exact.
var Memory Kind = memoryKind{}

type memoryKind struct{}

func (memoryKind) Name() string     { return "memory" }
func (memoryKind) Persistent() bool { return false }

// Open returns a new, empty Engine: an in-memory store holds nothing of an earlier Engine at loc.
func (memoryKind) Open(loc Location) (Engine, error) {
	return &memEngine{loc: loc, m: map[string][]byte{}}, nil
}

// Destroy does nothing: the data of an in-memory store went with its Engine.
func (memoryKind) Destroy(Location) error { return nil }

// memDegree is the tree's branching: nodes of up to 63 entries, few levels, cheap copies on write.
const memDegree = 32

// iterChunk is how many entries an iterator takes from its snapshot per walk of the tree, so a
// long iteration costs one descent per chunk rather than one per key.
const iterChunk = 64

// entry is one key and its value. Both slices are the Engine's own copies and are never modified
// once stored, which is what lets Get and iterators hand them out without copying.
type entry struct {
	key, value []byte
}

func entryLess(a, b entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// memEngine is an Engine in memory. mu guards everything: readers take it shared, Apply and Close
// exclusive, so a batch is seen whole or not at all.
//
// Its entries live in a hash map until the first Iterate, and in a B-tree from then on: most stores
// (counts, totals, the latest value per key) are only ever read and written by key, which a map
// does several times faster than a tree's descent of byte comparisons (a count's Get and Put: 830
// ns over 10,000 keys in the tree); a store that is iterated needs the order, and the tree's
// copy-on-write clones give each iterator its snapshot in O(1). The switch is one way: a store
// iterated once is likely to be iterated again.
type memEngine struct {
	loc Location

	mu     sync.RWMutex
	m      map[string][]byte    // the entries before the first Iterate; nil after it
	tree   *btree.BTreeG[entry] // the entries from the first Iterate on
	closed bool
	pos    int64
	hasPos bool
}

// bytesOf is the bytes of a map key without a copy: the map's keys share the allocation of their
// entry (see Apply) and are never modified.
func bytesOf(k string) []byte {
	if len(k) == 0 {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(k), len(k))
}

// ordered moves the entries from the map into the tree, once (e.mu held exclusively).
func (e *memEngine) ordered() {
	if e.tree != nil {
		return
	}
	e.tree = btree.NewG(memDegree, entryLess)
	for k, v := range e.m {
		e.tree.ReplaceOrInsert(entry{key: bytesOf(k), value: v})
	}
	e.m = nil
}

func (e *memEngine) closedErr(op string) error {
	return &Error{Op: op, Loc: e.loc, Err: ErrClosed}
}

func (e *memEngine) Get(key []byte) ([]byte, bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, false, e.closedErr("get")
	}
	if e.tree == nil {
		v, ok := e.m[string(key)]
		return v, ok, nil
	}
	it, ok := e.tree.Get(entry{key: key})
	if !ok {
		return nil, false, nil
	}
	return it.value, true, nil
}

func (e *memEngine) Iterate(lower, upper []byte) (Iterator, error) {
	// Clone writes the tree's copy-on-write context, so two clones (or a clone and a write) must
	// not overlap: the exclusive lock, held for an O(1) copy, is the simple way to ensure it.
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, e.closedErr("iterate")
	}
	e.ordered()
	if lower != nil && upper != nil && bytes.Compare(lower, upper) >= 0 {
		return &memIterator{i: -1, done: true}, nil
	}
	// The first chunk is read from the tree itself, under the lock: most iterations (a window's or a
	// session's few entries) end within it and need no snapshot, whose copy-on-write would make
	// every later write copy a path of the tree. The rest, if any, is read from a snapshot.
	it := &memIterator{snap: e.tree, lower: bytes.Clone(lower), upper: bytes.Clone(upper), i: -1}
	it.fill()
	if it.done {
		it.snap = nil
	} else {
		it.snap = e.tree.Clone()
	}
	return it, nil
}

func (e *memEngine) ApproximateCount() (int64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, e.closedErr("count")
	}
	if e.tree == nil {
		return int64(len(e.m)), nil
	}
	return int64(e.tree.Len()), nil
}

func (e *memEngine) Apply(b *Batch, position int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.closedErr("apply")
	}
	if b != nil {
		for _, op := range b.ops {
			if op.Range {
				e.deleteRange(op.Key, op.End)
				continue
			}
			if op.Delete {
				if e.tree == nil {
					delete(e.m, string(op.Key))
				} else {
					e.tree.Delete(entry{key: op.Key})
				}
				continue
			}
			key, value := op.Key, op.Value
			if !op.Owned {
				// One allocation holds both copies; the caps keep an append to the key from
				// running into the value.
				buf := make([]byte, len(op.Key)+len(op.Value))
				n := copy(buf, op.Key)
				copy(buf[n:], op.Value)
				key, value = buf[:n:n], buf[n:]
			}
			if e.tree == nil {
				e.m[unsafe.String(unsafe.SliceData(key), len(key))] = value
			} else {
				e.tree.ReplaceOrInsert(entry{key: key, value: value})
			}
		}
	}
	if position >= 0 {
		e.pos, e.hasPos = position, true
	}
	return nil
}

// deleteRange deletes the keys in [lower, upper), upper nil open (e.mu held exclusively).
//
// It visits only the keys it deletes, a chunk of up to iterChunk at a time: the tree cannot be
// changed while it is walked, and a chunk bounds what is gathered before the deletes (each starts
// from lower again, which the keys already deleted no longer hold up). Deleting from the tree
// copies the nodes it shares with iterators' snapshots, which so keep what they saw.
//
// A store still in the map (no order asked of it yet) moves to the tree first, once: a window
// store expires its old segments with a range delete each time stream time passes a segment,
// which during a replay of old records is many times a second, and a walk of every key each time
// would make the replay quadratic.
func (e *memEngine) deleteRange(lower, upper []byte) {
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return
	}
	e.ordered()
	chunk := make([]entry, 0, iterChunk)
	for {
		chunk = chunk[:0]
		e.tree.AscendGreaterOrEqual(entry{key: lower}, func(en entry) bool {
			if upper != nil && bytes.Compare(en.key, upper) >= 0 {
				return false
			}
			chunk = append(chunk, en)
			return len(chunk) < iterChunk
		})
		for _, en := range chunk {
			e.tree.Delete(en)
		}
		if len(chunk) < iterChunk {
			return
		}
	}
}

func (e *memEngine) Position() (int64, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.pos, e.hasPos
}

func (e *memEngine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.closedErr("close")
	}
	// Dropping the entries frees them (iterators keep their own snapshots).
	e.closed, e.m, e.tree = true, nil, nil
	return nil
}

// memIterator walks a snapshot (a copy-on-write clone of the tree) in chunks of iterChunk entries.
type memIterator struct {
	snap         *btree.BTreeG[entry] // nil when closed or finished
	lower, upper []byte
	buf          []entry
	i            int  // index of the current entry in buf
	done         bool // the snapshot has nothing after buf
}

func (it *memIterator) Next() bool {
	if it.i+1 < len(it.buf) {
		it.i++
		return true
	}
	if it.done || it.snap == nil {
		it.finish()
		return false
	}
	it.fill()
	if len(it.buf) == 0 {
		it.finish()
		return false
	}
	it.i = 0
	return true
}

// fill replaces buf by the next chunk: from lower at first, then after the last key of buf.
func (it *memIterator) fill() {
	var after []byte // the key to skip: the last one already returned
	started := len(it.buf) > 0
	if started {
		after = it.buf[len(it.buf)-1].key
	}
	clear(it.buf)
	it.buf = it.buf[:0]
	visit := func(en entry) bool {
		if started && bytes.Equal(en.key, after) {
			return true
		}
		if it.upper != nil && bytes.Compare(en.key, it.upper) >= 0 {
			it.done = true
			return false
		}
		it.buf = append(it.buf, en)
		return len(it.buf) < iterChunk
	}
	switch {
	case started:
		it.snap.AscendGreaterOrEqual(entry{key: after}, visit)
	case it.lower != nil:
		it.snap.AscendGreaterOrEqual(entry{key: it.lower}, visit)
	default:
		it.snap.Ascend(visit)
	}
	if len(it.buf) < iterChunk {
		it.done = true
	}
}

// finish drops the snapshot and the buffer, so Key and Value return nil from now on.
func (it *memIterator) finish() {
	it.snap = nil
	it.done = true
	clear(it.buf)
	it.buf = it.buf[:0]
	it.i = -1
}

func (it *memIterator) Key() []byte {
	if it.i < 0 || it.i >= len(it.buf) {
		return nil
	}
	return it.buf[it.i].key
}

func (it *memIterator) Value() []byte {
	if it.i < 0 || it.i >= len(it.buf) {
		return nil
	}
	return it.buf[it.i].value
}

// Err is always nil: a walk of a tree in memory cannot fail.
func (it *memIterator) Err() error { return nil }

func (it *memIterator) Close() error {
	it.finish()
	return nil
}
