package store

import (
	"bytes"
	"sync"
	"unsafe"

	"github.com/google/btree"
)

// Memory is the Kind of in-memory stores: a hash map per Engine, with a sorted tree beside it from
// its first iterator on, gone when the Engine is closed (or the process ends) and so restored from
// the changelog at every Open. Open never fails, and Destroy has nothing to delete.
// ApproximateCount is exact.
var Memory Kind = memoryKind{}

type memoryKind struct{}

func (memoryKind) Name() string     { return "memory" }
func (memoryKind) Persistent() bool { return false }

// Open returns a new, empty Engine: an in-memory store holds nothing of an earlier Engine at loc.
func (memoryKind) Open(loc Location) (Engine, error) {
	return &memEngine{loc: loc, m: map[string]*cell{}}, nil
}

// Destroy does nothing: the data of an in-memory store went with its Engine.
func (memoryKind) Destroy(Location) error { return nil }

// memDegree is the tree's branching: nodes of up to 63 entries, few levels, cheap copies on write.
const memDegree = 32

// iterChunk is how many entries an iterator takes from its snapshot per walk of the tree, so a
// long iteration costs one descent per chunk rather than one per key.
const iterChunk = 64

// cell is one key and its value. The key is never modified once stored; the value is replaced
// (never changed in place) by a later write of the key, in place while no iterator's snapshot
// shares the cell and by a new cell while one may (see memEngine). The slices themselves are the
// Engine's own copies and are never modified, which is what lets Get and iterators hand them out
// without copying.
type cell struct {
	key, value []byte
}

func cellLess(a, b *cell) bool { return bytes.Compare(a.key, b.key) < 0 }

// memEngine is an Engine in memory. mu guards everything: readers take it shared, Apply and Close
// exclusive, so a batch is seen whole or not at all.
//
// Its entries are cells found by key in a hash map, and from the first Iterate on also in a B-tree
// of the same cells, in key order: most stores (counts, totals, the latest value per key) are only
// ever read and written by key, which a map does several times faster than a tree's descent of
// byte comparisons (a count's Get and Put: 830 ns over 10,000 keys in the tree); a store that is
// iterated (a window or session store) needs the order, and the tree's copy-on-write clones give
// each iterator its snapshot in O(1). A store iterated once is likely to be iterated again, so the
// tree stays; its Gets still go to the map, and so do its writes of keys it holds, which replace
// the cell's value without a descent of the tree (a hopping window's count rewrites each window of
// the key many times) — unless an iterator's snapshot may share the cell, when the write puts a new
// cell in the tree and the snapshot keeps the old one.
type memEngine struct {
	loc Location

	mu     sync.RWMutex
	m      map[string]*cell     // every entry; its keys share their cell's key bytes
	tree   *btree.BTreeG[*cell] // the same cells in order, from the first Iterate on; nil before
	snaps  int                  // snapshots of the tree that iterators hold (cells they share)
	probe  cell                 // a key to find in the tree (e.mu held exclusively)
	closed bool
	pos    int64
	hasPos bool
}

// ordered puts the entries into a tree, once (e.mu held exclusively).
func (e *memEngine) ordered() {
	if e.tree != nil {
		return
	}
	e.tree = btree.NewG(memDegree, cellLess)
	for _, c := range e.m {
		e.tree.ReplaceOrInsert(c)
	}
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
	c, ok := e.m[string(key)]
	if !ok {
		return nil, false, nil
	}
	return c.value, true, nil
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
		return &memIterator{}, nil
	}
	// The first chunk is read from the tree itself, under the lock: most iterations (a window's or a
	// session's few entries) end within it and need no snapshot, whose copy-on-write would make
	// every later write copy a path of the tree. The rest, if any, is read from a snapshot. The
	// bounds are the caller's until this returns, so they are copied only for a snapshot's walk.
	it := iterStates.Get().(*iterState)
	it.snap, it.lower, it.upper, it.i, it.done = e.tree, lower, upper, -1, false
	it.buf = it.small[:0]
	it.fill()
	if it.done {
		it.snap, it.lower, it.upper = nil, nil, nil
		return &memIterator{it}, nil
	}
	it.snap, it.eng = e.tree.Clone(), e
	it.lower, it.upper = bytes.Clone(lower), bytes.Clone(upper)
	e.snaps++
	return &memIterator{it}, nil
}

// release ends a snapshot an iterator held: with none left, writes may replace values in place
// again.
func (e *memEngine) release() {
	e.mu.Lock()
	e.snaps--
	e.mu.Unlock()
}

func (e *memEngine) ApproximateCount() (int64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, e.closedErr("count")
	}
	return int64(len(e.m)), nil
}

func (e *memEngine) Apply(b *Batch, position int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.closedErr("apply")
	}
	if b != nil {
		for _, op := range b.ops {
			switch {
			case op.Range:
				e.deleteRange(op.Key, op.End)
			case op.Delete:
				e.delete(op.Key)
			default:
				e.put(op)
			}
		}
	}
	if position >= 0 {
		e.pos, e.hasPos = position, true
	}
	return nil
}

// put writes op's value at its key (e.mu held exclusively).
func (e *memEngine) put(op Op) {
	old, held := e.m[string(op.Key)]
	var key, value []byte
	switch {
	case op.Owned:
		key, value = op.Key, op.Value
	case held:
		// The key is held already: only the value needs a copy.
		value = bytes.Clone(op.Value)
	default:
		// One allocation holds both copies; the caps keep an append to the key from running into
		// the value.
		buf := make([]byte, len(op.Key)+len(op.Value))
		n := copy(buf, op.Key)
		copy(buf[n:], op.Value)
		key, value = buf[:n:n], buf[n:]
	}
	if held && e.snaps == 0 {
		old.value = value // no snapshot shares old: the one place it is seen from is this engine
		return
	}
	c := &cell{key: key, value: value}
	if held {
		c.key = old.key // the map's key is old's bytes; the new cell keeps them alive
	}
	e.m[unsafe.String(unsafe.SliceData(c.key), len(c.key))] = c
	if e.tree != nil {
		e.tree.ReplaceOrInsert(c)
	}
}

// delete removes key (e.mu held exclusively).
func (e *memEngine) delete(key []byte) {
	if _, held := e.m[string(key)]; !held {
		return
	}
	delete(e.m, string(key))
	if e.tree != nil {
		e.probe.key = key
		e.tree.Delete(&e.probe)
		e.probe.key = nil
	}
}

// deleteRange deletes the keys in [lower, upper), upper nil open (e.mu held exclusively).
//
// It visits only the keys it deletes, a chunk of up to iterChunk at a time: the tree cannot be
// changed while it is walked, and a chunk bounds what is gathered before the deletes (each starts
// from lower again, which the keys already deleted no longer hold up). Deleting from the tree
// copies the nodes it shares with iterators' snapshots, which so keep what they saw.
//
// A store without its tree yet (no order asked of it) gets it first, once: a window store expires
// its old segments with a range delete each time stream time passes a segment, which during a
// replay of old records is many times a second, and a walk of every key each time would make the
// replay quadratic.
func (e *memEngine) deleteRange(lower, upper []byte) {
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return
	}
	e.ordered()
	chunk := make([]*cell, 0, iterChunk)
	for {
		chunk = chunk[:0]
		e.probe.key = lower
		e.tree.AscendGreaterOrEqual(&e.probe, func(c *cell) bool {
			if upper != nil && bytes.Compare(c.key, upper) >= 0 {
				return false
			}
			chunk = append(chunk, c)
			return len(chunk) < iterChunk
		})
		e.probe.key = nil
		for _, c := range chunk {
			e.tree.Delete(c)
			delete(e.m, unsafe.String(unsafe.SliceData(c.key), len(c.key)))
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

// memIterator is an iterator of a memEngine: the state of its walk, which goes back to
// iterStates when it is closed, so that the many short iterations of a session or window store
// (one or more per record) do not each allocate and sweep it. Only the handle is new each time;
// a handle closed twice, or used after Close, finds no state rather than another iterator's.
type memIterator struct{ s *iterState }

// iterStates are the states of closed iterators, ready for reuse.
var iterStates = sync.Pool{New: func() any { return new(iterState) }}

// iterState walks the tree in chunks of iterChunk entries: the first under the engine's lock,
// the rest, if any, from a snapshot (a copy-on-write clone of the tree).
type iterState struct {
	snap         *btree.BTreeG[*cell] // nil when closed or finished
	eng          *memEngine           // the engine whose snapshot count snap is in; nil without one
	lower, upper []byte
	probe        cell
	buf          []cell  // the chunk: keys and the values they had when it was read
	small        [4]cell // buf's first array: most iterations (a window's, a session's) are short
	i            int     // index of the current entry in buf
	done         bool    // the snapshot has nothing after buf
}

func (h *memIterator) Next() bool { return h.s != nil && h.s.next() }

func (h *memIterator) Key() []byte {
	if h.s == nil {
		return nil
	}
	return h.s.key()
}

func (h *memIterator) Value() []byte {
	if h.s == nil {
		return nil
	}
	return h.s.value()
}

// Err is always nil: a walk of a tree in memory cannot fail.
func (h *memIterator) Err() error { return nil }

// Close ends the walk and gives its state back for reuse.
func (h *memIterator) Close() error {
	if h.s != nil {
		h.s.finish()
		iterStates.Put(h.s)
		h.s = nil
	}
	return nil
}

func (it *iterState) next() bool {
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
func (it *iterState) fill() {
	var after []byte // the key to skip: the last one already returned
	started := len(it.buf) > 0
	if started {
		after = it.buf[len(it.buf)-1].key
	}
	clear(it.buf)
	it.buf = it.buf[:0]
	visit := func(c *cell) bool {
		if started && bytes.Equal(c.key, after) {
			return true
		}
		if it.upper != nil && bytes.Compare(c.key, it.upper) >= 0 {
			it.done = true
			return false
		}
		it.buf = append(it.buf, *c)
		return len(it.buf) < iterChunk
	}
	switch {
	case started:
		it.probe.key = after
		it.snap.AscendGreaterOrEqual(&it.probe, visit)
	case it.lower != nil:
		it.probe.key = it.lower
		it.snap.AscendGreaterOrEqual(&it.probe, visit)
	default:
		it.snap.Ascend(visit)
	}
	it.probe.key = nil
	if len(it.buf) < iterChunk {
		it.done = true
	}
}

// finish drops the snapshot and the buffer, so Key and Value return nil from now on.
func (it *iterState) finish() {
	if it.eng != nil {
		it.eng.release()
		it.eng = nil
	}
	it.snap = nil
	it.done = true
	clear(it.buf)
	it.buf = it.buf[:0]
	it.i = -1
}

func (it *iterState) key() []byte {
	if it.i < 0 || it.i >= len(it.buf) {
		return nil
	}
	return it.buf[it.i].key
}

func (it *iterState) value() []byte {
	if it.i < 0 || it.i >= len(it.buf) {
		return nil
	}
	return it.buf[it.i].value
}
