package store

import (
	"errors"
	"fmt"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// Engine is where one store of one task keeps its data: bytes in, bytes out, in key order (bytewise,
// as Kafka Streams' stores order keys). An Engine is used by one goroutine at a time for writes;
// reads (Get, Iterate, ApproximateCount, Position) may run concurrently with each other and with
// one writer, so that interactive queries can read while the task processes.
//
// A key may be empty (nil and empty are the same key). An Engine keeps no reference to the slices
// it is given (keys, values, bounds, a Batch's slices): the caller may reuse them once the call
// returns. The slices it returns are the caller's to read, not to modify.
//
// After Close, every method with an error result (Close too) returns an *Error wrapping ErrClosed.
//
// The runtime writes through an Engine: every write of the application goes to the Engine and to
// the task's changelog partition; a restore or a standby applies changelog records with Apply,
// giving the changelog position they reach, so the Engine always knows how far its data goes.
type Engine interface {
	// Get returns the value of key, or ok false when the key is absent. The value stays valid after
	// later writes; a value written as nil or empty comes back with length 0 and ok true.
	Get(key []byte) (value []byte, ok bool, err error)
	// Iterate returns an iterator over the keys in [lower, upper) in key order; a nil bound is
	// open. The iterator sees the data as it was when Iterate was called (later writes, range
	// deletes too, are not seen), and must be closed. lower >= upper gives an empty iterator, not
	// an error.
	Iterate(lower, upper []byte) (Iterator, error)
	// ApproximateCount is about how many keys the store holds (exact for the in-memory store). A
	// persistent Engine may count the keys of a range delete until it reclaims their space, but
	// never counts more because of one.
	ApproximateCount() (int64, error)
	// Apply writes the batch atomically. When position >= 0 it also records, in the same atomic
	// write, that the data now covers the changelog up to (not including) offset position; when
	// position < 0 the recorded position stays as it was. A persistent Engine makes the write and
	// the position durable together (R5: a position never claims more than the data holds).
	// A nil *Batch is an empty one: Apply(nil, p) records the position only. The ops are applied
	// in order, a range delete (Op.Range) included: an Engine that meets an op it cannot apply
	// returns an error and writes nothing, rather than applying it as something else.
	Apply(b *Batch, position int64) error
	// Position returns the changelog offset up to which the data is known to be complete (the
	// next offset to restore from); ok is false for a store that has never recorded one.
	Position() (position int64, ok bool)
	// Close releases the Engine; it is not used again. Data of a persistent Engine stays.
	Close() error
}

// Iterator walks keys in order. Next must be called before the first Key.
type Iterator interface {
	// Next moves to the next key and reports whether there is one.
	Next() bool
	// Key and Value are the current entry; they are valid until the next call of Next (or Close),
	// and must not be modified.
	Key() []byte
	Value() []byte
	// Err is the first error met while iterating, if any.
	Err() error
	// Close releases the iterator. A second Close does nothing and returns nil; Next after Close
	// reports false.
	Close() error
}

// Kind opens the Engines of one implementation (in memory, Pebble, …).
type Kind interface {
	// Name names the implementation ("memory", "pebble"), for logs and errors.
	Name() string
	// Persistent reports whether data outlives the process (and so needs state.dir and its lock).
	// A store of a Kind that is not persistent lives as long as its Engine: Open always gives an
	// empty store with no position, to be restored from its changelog.
	Persistent() bool
	// Open opens the store at loc, creating it when absent. An existing store of another
	// application, task or store name, or a damaged one, is an *Error (ErrForeign, ErrCorrupt).
	Open(loc Location) (Engine, error)
	// Destroy deletes the store at loc and all its files (a store to be restored again from its
	// changelog, or one of a task this process owns no more). Destroying a store that does not
	// exist is not an error.
	Destroy(loc Location) error
}

// Location says which store an Engine holds and, for a persistent one, where.
type Location struct {
	// ApplicationID, Task and Store identify the store: the application's, of which task, by name.
	ApplicationID string
	Task          tasks.ID
	Store         string
	// Dir is the store's own directory (state.dir/<application.id>/<task>/<store>) for a persistent
	// Kind; "" for an in-memory one.
	Dir string
}

// String names the location in errors and logs: "store counts of task 1_3 (/var/lib/…)".
func (l Location) String() string {
	s := fmt.Sprintf("store %q of task %s", l.Store, l.Task)
	if l.Dir != "" {
		s += " (" + l.Dir + ")"
	}
	return s
}

// ErrCorrupt says a store's files are damaged: they cannot be read as a store.
var ErrCorrupt = errors.New("the store's files are damaged")

// ErrForeign says a directory holds something else than this store: files of another application,
// task or store, or not a store at all.
var ErrForeign = errors.New("the directory holds something else than this store")

// ErrClosed says the store was used after it was closed.
var ErrClosed = errors.New("the store is closed")

// Error is a failure of one store: what was done (Op: "open", "get", "apply", "restore", …), where
// (Location), and why (Err, which may wrap ErrCorrupt, ErrForeign, ErrClosed, a decode error or an
// I/O error such as a full disk).
type Error struct {
	Op  string
	Loc Location
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("store: %s %s: %v", e.Op, e.Loc, e.Err)
	switch {
	case errors.Is(e.Err, ErrCorrupt), errors.Is(e.Err, ErrForeign):
		msg += "; delete the store's directory (or let the runtime wipe it) to restore it from its changelog"
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Batch is an ordered list of writes applied atomically by Engine.Apply, in order: a put then a
// delete of one key leaves it absent, a delete then a put leaves the put's value, and likewise a
// range delete removes the puts before it in its range and none after it. The zero value is empty
// and ready to use. The Batch keeps the slices it is given: do not change them until Apply has
// returned (the Engine copies what it keeps).
//
// A put of a nil value writes a value of length 0; it is not a delete. (A changelog record with a
// null value is a tombstone: whoever applies the changelog turns it into Delete.)
type Batch struct {
	ops []Op
}

// Op is one write of a Batch, one of three kinds:
//
//   - a put of Value at Key (Delete and Range false);
//   - a delete of Key (Delete true, Range false; Value is nil);
//   - a range delete (Delete and Range true) of every key k with Key <= k < End, bytewise, where
//     an empty Key is the first key and a nil End is open (past the last key); Key >= End (End
//     not nil) deletes nothing. Value is nil.
//
// Range is a flag of its own because End alone cannot tell "open" (nil) from "not a range", and
// because an Engine must never take a range delete for a delete of its lower bound: one that
// only knows Delete would remove the wrong key and keep the range. Engines check Range first.
//
// Owned says the Engine may keep Key and Value as they are, without a copy (Batch.PutOwned); an
// Engine that copies what it keeps may ignore it. It is false for deletes.
type Op struct {
	Key, Value []byte
	// End is the exclusive upper bound of a range delete (nil: open); nil for other ops.
	End    []byte
	Delete bool
	// Range marks a range delete of [Key, End) (Delete is true with it).
	Range bool
	Owned bool
}

// Put adds a write of value at key.
func (b *Batch) Put(key, value []byte) { b.ops = append(b.ops, Op{Key: key, Value: value}) }

// PutOwned adds a write of value at key whose slices the caller gives up: nobody changes them
// again, so the Engine may keep them as they are (the stream runtime gives a store the bytes it
// also writes to the changelog, which spares an engine in memory a copy per write).
func (b *Batch) PutOwned(key, value []byte) {
	b.ops = append(b.ops, Op{Key: key, Value: value, Owned: true})
}

// Delete adds a delete of key.
func (b *Batch) Delete(key []byte) { b.ops = append(b.ops, Op{Key: key, Delete: true}) }

// DeleteRange adds a delete of every key in [lower, upper), bytewise: a nil or empty lower is the
// first key, a nil upper is open, and lower >= upper deletes nothing. It is how window and
// session stores drop an expired segment in one write, as Kafka Streams drops a RocksDB segment,
// instead of reading the segment to delete its keys one by one (Pebble writes one range
// tombstone; the in-memory store, once ordered, visits only the keys it deletes). The Batch keeps
// lower and upper until Apply, as it keeps a put's slices; the Engine keeps neither.
func (b *Batch) DeleteRange(lower, upper []byte) {
	b.ops = append(b.ops, Op{Key: lower, End: upper, Delete: true, Range: true})
}

// Len is the number of writes.
func (b *Batch) Len() int { return len(b.ops) }

// Ops returns the writes in order (for Engine implementations).
func (b *Batch) Ops() []Op { return b.ops }

// Reset empties the batch, keeping its capacity.
func (b *Batch) Reset() { clear(b.ops); b.ops = b.ops[:0] }
