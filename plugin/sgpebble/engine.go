package sgpebble

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/streamsgroup/streamsgroup/store"
)

// engine is one store: one Pebble database.
type engine struct {
	kind *kind
	loc  store.Location
	dir  string

	// mu guards closed and the use of db: every method holds it shared while it uses db, Close
	// holds it exclusively, so that Close waits for the calls under way and no call reaches a
	// closed database (Pebble panics then).
	mu     sync.RWMutex
	closed bool
	db     *pebble.DB

	// damaged is the first corruption Pebble found in the files, in a read or in a background
	// compaction: from then on every method fails with ErrCorrupt, since a store missing part of
	// its data must be restored whole (the runtime destroys and restores it).
	damaged atomic.Pointer[error]

	// pos is the recorded changelog position, -1 when none.
	pos atomic.Int64
	// unchecked counts the bytes written since the last look at the free space (roomFor).
	unchecked atomic.Int64

	// iters are the open iterators, closed by Close so that the database can close.
	itersMu sync.Mutex
	iters   map[*iterator]struct{}

	// The part of ApproximateCount not yet in table files: the net count of puts minus deletes of
	// the batches committed after the newest flushed sequence number (see ApproximateCount).
	countMu    sync.Mutex
	unflushed  []batchDelta
	unflushedN int64
	flushedSeq uint64
}

// batchDelta is the net number of keys one committed batch added, and the sequence number of its
// last write.
type batchDelta struct {
	seq uint64
	n   int64
}

var _ store.Engine = (*engine)(nil)

func (e *engine) fail(op string, err error) error { return &store.Error{Op: op, Loc: e.loc, Err: err} }

// unusable is the error of a method called on a closed or damaged engine, nil when it is usable.
// The caller holds mu.
func (e *engine) unusable(op string) error {
	if e.closed {
		return e.fail(op, store.ErrClosed)
	}
	if p := e.damaged.Load(); p != nil {
		return e.fail(op, fmt.Errorf("%w: %w", store.ErrCorrupt, *p))
	}
	return nil
}

// corrupted is Pebble's DataCorruption event (its default ends the process).
func (e *engine) corrupted(info pebble.DataCorruptionInfo) {
	err := fmt.Errorf("%w: %s: %s", pebble.ErrCorruption, info.Path, info.Details)
	e.damaged.CompareAndSwap(nil, &err)
	e.kind.cfg.logger.Error("pebble found damaged files; the store must be restored", "store", e.loc.String(), "err", err)
}

// load checks the identity record (writing it for a new database) and reads the position.
func (e *engine) load(exists bool) (err error) {
	defer recoverTo(&err)
	v, closer, err := e.db.Get(identityKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if exists {
			// A database whose identity record is missing is ours only if it is empty: creation
			// writes the identity first, alone. One with keys is some other Pebble database.
			empty, err := e.empty()
			if err != nil {
				return classifyOpen(err)
			}
			if !empty {
				return fmt.Errorf("%w: a Pebble database without a streamsgroup identity record", store.ErrForeign)
			}
		}
		if err := e.db.Set(identityKey, encodeIdentity(identityOf(e.loc)), pebble.Sync); err != nil {
			return err
		}
		return nil
	case err != nil:
		return classifyOpen(err)
	}
	got, err := decodeIdentity(v)
	_ = closer.Close()
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	if want := identityOf(e.loc); got != want {
		return fmt.Errorf("%w: it holds %s, not %s", store.ErrForeign, got, want)
	}
	v, closer, err = e.db.Get(positionKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return nil
	case err != nil:
		return classifyOpen(err)
	}
	pos, err := decodePosition(v)
	_ = closer.Close()
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	e.pos.Store(pos)
	return nil
}

func (e *engine) empty() (bool, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.First()
	return !found, errors.Join(it.Error(), it.Close())
}

// Get returns a copy of the value of key: Pebble's is valid only until its closer is closed.
func (e *engine) Get(key []byte) (value []byte, ok bool, err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if err := e.unusable("get"); err != nil {
		return nil, false, err
	}
	defer func() {
		if err != nil {
			value, ok, err = nil, false, e.fail("get", classify(err))
		}
	}()
	defer recoverTo(&err)
	var buf [64]byte
	v, closer, err := e.db.Get(dataKey(buf[:0], key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	value = bytes.Clone(v)
	if value == nil {
		value = []byte{}
	}
	return value, true, closer.Close()
}

// Iterate opens a Pebble iterator, which reads the database as of its creation: later writes are
// not seen.
func (e *engine) Iterate(lower, upper []byte) (_ store.Iterator, err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if err := e.unusable("iterate"); err != nil {
		return nil, err
	}
	it := &iterator{e: e}
	if lower != nil && upper != nil && bytes.Compare(lower, upper) >= 0 {
		return it, nil
	}
	o := &pebble.IterOptions{LowerBound: dataKey(nil, lower), UpperBound: []byte{dataEnd}}
	if upper != nil {
		o.UpperBound = dataKey(nil, upper)
	}
	defer recoverTo(&err)
	pit, err := e.db.NewIter(o)
	if err != nil {
		return nil, e.fail("iterate", classify(err))
	}
	it.it = pit
	e.itersMu.Lock()
	e.iters[it] = struct{}{}
	e.itersMu.Unlock()
	return it, nil
}

// ApproximateCount estimates the number of keys, as RocksDB's estimate-num-keys does (which is
// what Kafka Streams reports): the entries of the table files, less twice their point deletions (a
// deletion and the entry it deletes), plus the net puts minus deletes of the batches not yet
// flushed to a table file. Overwrites of a key not yet compacted together count more than once,
// and a deletion of an absent key counts minus one; compactions make it converge. An exact count
// would cost a read before every write, to know whether a put adds a key.
//
// A range delete counts nothing, neither in a batch nor as a table's range tombstone: how many
// keys it deletes is unknown without reading them, which is what it exists to avoid. The keys it
// deletes keep counting until a flush or compaction drops them with it, so after a range delete
// the estimate is too high for a while, never lower than the truth because of it. (Counting the
// tombstone as a deletion, as RocksDB does, would take two keys off for a range of any size.)
func (e *engine) ApproximateCount() (n int64, err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if err := e.unusable("count"); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			n, err = 0, e.fail("count", classify(err))
		}
	}()
	defer recoverTo(&err)
	levels, err := e.db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0, err
	}
	var entries, deletions, meta int64
	for _, level := range levels {
		for _, t := range level {
			if t.Properties == nil {
				continue
			}
			// NumEntries and NumDeletions both include the range tombstones. (The properties of
			// a virtual table are extrapolated, hence the guard on the subtraction.)
			entries += int64(t.Properties.NumEntries) - int64(min(t.Properties.NumRangeDeletions, t.Properties.NumEntries))
			deletions += int64(t.Properties.NumPointDeletions())
			// The metadata records are entries of the tables whose range holds their keys.
			for _, k := range [][]byte{identityKey, positionKey} {
				if bytes.Compare(t.Smallest.UserKey, k) <= 0 && bytes.Compare(k, t.Largest.UserKey) <= 0 {
					meta++
				}
			}
		}
	}
	e.countMu.Lock()
	unflushed := e.unflushedN
	e.countMu.Unlock()
	return max(0, entries-meta-2*deletions+unflushed), nil
}

// noteCommit adds a committed batch's net count to the unflushed part.
func (e *engine) noteCommit(lastSeq uint64, n int64) {
	if n == 0 {
		return
	}
	e.countMu.Lock()
	defer e.countMu.Unlock()
	if lastSeq != 0 && lastSeq <= e.flushedSeq {
		return // already flushed (and counted in the tables) before this note
	}
	e.unflushed = append(e.unflushed, batchDelta{seq: lastSeq, n: n})
	e.unflushedN += n
}

// flushed is Pebble's FlushEnd event: memtables are flushed in order, so every batch up to the
// newest sequence number written by the flush is now counted in the table files. (A batch too
// large for a memtable, whose sequence number is unknown here, counts as flushed at the next
// flush.)
func (e *engine) flushed(info pebble.FlushInfo) {
	if info.Err != nil {
		return
	}
	var seq uint64
	for _, t := range info.Output {
		seq = max(seq, uint64(t.LargestSeqNum))
	}
	e.countMu.Lock()
	defer e.countMu.Unlock()
	e.flushedSeq = max(e.flushedSeq, seq)
	i := 0
	for ; i < len(e.unflushed) && e.unflushed[i].seq <= e.flushedSeq; i++ {
		e.unflushedN -= e.unflushed[i].n
	}
	e.unflushed = append(e.unflushed[:0], e.unflushed[i:]...)
}

// Apply writes the batch, and the position when position >= 0, in one Pebble batch.
//
// A checkpoint (position >= 0) is committed with Sync: it is a promise that the data up to the
// position is on disk, made durable together with that data. Other batches are committed without
// a sync: the changelog is the source of truth, and after a crash the store restores from its last
// durable position, re-applying whatever the lost writes were.
func (e *engine) Apply(b *store.Batch, position int64) (err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if err := e.unusable("apply"); err != nil {
		return err
	}
	var ops []store.Op
	if b != nil {
		ops = b.Ops()
	}
	if len(ops) == 0 && position < 0 {
		return nil
	}
	var size int64
	for _, op := range ops {
		// A range delete writes its two bounds, one tombstone, whatever it covers: the space it
		// frees comes back only when a compaction drops the keys.
		size += int64(len(op.Key) + len(op.Value) + len(op.End))
	}
	if err := e.roomFor(size, position >= 0); err != nil {
		return e.fail("apply", err)
	}
	defer func() {
		if err != nil {
			err = e.fail("apply", classify(err))
		}
	}()
	defer recoverTo(&err)
	pb := e.db.NewBatch()
	defer pb.Close()
	var n int64
	for _, op := range ops {
		if op.Range {
			if err := deleteRange(pb, op.Key, op.End); err != nil {
				return err
			}
			continue // n unchanged: see ApproximateCount
		}
		var d *pebble.DeferredBatchOp
		if op.Delete {
			d = pb.DeleteDeferred(1 + len(op.Key))
			n--
		} else {
			d = pb.SetDeferred(1+len(op.Key), len(op.Value))
			copy(d.Value, op.Value)
			n++
		}
		d.Key[0] = dataPrefix
		copy(d.Key[1:], op.Key)
		if err := d.Finish(); err != nil {
			return err
		}
	}
	wo := pebble.NoSync
	if position >= 0 {
		if err := pb.Set(positionKey, encodePosition(position), nil); err != nil {
			return err
		}
		wo = pebble.Sync
	}
	count := uint64(pb.Count())
	if err := pb.Commit(wo); err != nil {
		return err
	}
	var last uint64
	if seq := uint64(pb.SeqNum()); seq != 0 {
		last = seq + count - 1
	}
	e.noteCommit(last, n)
	if position >= 0 {
		e.pos.Store(position)
	}
	return nil
}

// deleteRange adds to pb a range tombstone over the data keys of [lower, upper), upper nil open.
// An open upper bound ends at dataEnd, the end of the data key space, so that no range delete
// reaches the metadata (which sorts before the data, and nothing sorts after it). An empty range
// writes nothing: Pebble has no use for it.
func deleteRange(pb *pebble.Batch, lower, upper []byte) error {
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	endLen := 1
	if upper != nil {
		endLen += len(upper)
	}
	d := pb.DeleteRangeDeferred(1+len(lower), endLen)
	d.Key[0] = dataPrefix
	copy(d.Key[1:], lower)
	if upper != nil {
		d.Value[0] = dataPrefix
		copy(d.Value[1:], upper)
	} else {
		d.Value[0] = dataEnd
	}
	return d.Finish()
}

// Position is the last position recorded (read at Open, then kept by Apply).
func (e *engine) Position() (int64, bool) {
	p := e.pos.Load()
	return p, p >= 0
}

// Close closes the open iterators and the database; a second Close does nothing. Data already
// applied stays: writes without a sync are in the WAL, which the next Open replays.
func (e *engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.fail("close", store.ErrClosed) // the store contract: every use after Close says so
	}
	e.closed = true
	e.itersMu.Lock()
	iters := e.iters
	e.iters = nil
	e.itersMu.Unlock()
	for it := range iters {
		it.closeBy(e.fail("iterate", store.ErrClosed))
	}
	err := closeDB(e.db)
	e.kind.release(e.dir)
	if err != nil {
		return e.fail("close", classify(err))
	}
	return nil
}

func (e *engine) forget(it *iterator) {
	e.itersMu.Lock()
	delete(e.iters, it)
	e.itersMu.Unlock()
}

// iterator is a store.Iterator over a Pebble iterator whose bounds are the data key space.
type iterator struct {
	e *engine

	// mu guards the fields below against a Close of the Engine from another goroutine.
	mu         sync.Mutex
	it         *pebble.Iterator // nil for an empty range, or once closed
	started    bool
	done       bool
	key, value []byte
	err        error
}

// Next moves to the next key.
func (i *iterator) Next() (ok bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.key, i.value = nil, nil
	if i.it == nil || i.done {
		return false
	}
	var err error
	defer func() {
		if err != nil {
			i.err = i.e.fail("iterate", classify(err))
			i.done, ok = true, false
		}
	}()
	defer recoverTo(&err)
	if !i.started {
		i.started = true
		ok = i.it.First()
	} else {
		ok = i.it.Next()
	}
	if !ok {
		i.done = true
		err = i.it.Error()
		return false
	}
	v, err := i.it.ValueAndErr()
	if err != nil {
		return false
	}
	i.key, i.value = i.it.Key()[1:], v
	return true
}

// Key is the current key, without the data prefix.
func (i *iterator) Key() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.key
}

// Value is the current value.
func (i *iterator) Value() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.value
}

// Err is the first error met.
func (i *iterator) Err() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.err
}

// Close releases the Pebble iterator; a second Close does nothing.
func (i *iterator) Close() error {
	i.mu.Lock()
	it := i.it
	i.it, i.key, i.value = nil, nil, nil
	i.mu.Unlock()
	if it == nil {
		return nil
	}
	i.e.forget(i)
	var err error
	func() {
		defer recoverTo(&err)
		err = it.Close()
	}()
	if err != nil {
		return i.e.fail("iterate", classify(err))
	}
	return nil
}

// closeBy closes the iterator for the Engine's Close: later calls of Next return false and Err
// returns err.
func (i *iterator) closeBy(err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.it == nil {
		return
	}
	func() {
		var ignored error
		defer recoverTo(&ignored)
		_ = i.it.Close()
	}()
	i.it, i.key, i.value = nil, nil, nil
	if i.err == nil && !i.done {
		i.err = err
	}
	i.done = true
}
