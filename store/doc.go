// Package store holds the state of stream tasks: an Engine per store of a task, keyed by bytes
// in bytewise order, as Kafka Streams' key-value stores are.
//
// A store is task-local: it holds the state of one task (one partition of one subtopology) and
// is opened when the task is assigned to this member and closed when it goes. It is not the
// record of truth. The runtime writes every change to the store's changelog topic beside the
// store, and rebuilds the store from that changelog (Engine.Apply with the offset reached) when
// the task arrives, as a standby follows an active task, or after the store was lost. Each
// Engine records its changelog position so that a restore starts where the data ends.
//
// Kinds: Memory (this package) keeps the data in a hash map, and from its first Iterate on in a
// sorted tree beside it; it is empty at every Open and restored in full. Pebble (the module
// plugin/sgpebble) keeps it on disk under state.dir, with the position written atomically with the
// data, so a restart restores only the changelog's tail.
// Package storetest is the contract suite every Kind passes.
//
// Order: keys compare as unsigned bytes (bytes.Compare); Iterate walks [lower, upper) with nil
// bounds open, over a snapshot taken at the call. Batch.DeleteRange deletes such a range in one
// write, without reading it (window and session stores expire old segments with it).
//
// Concurrency: one goroutine writes (Apply) at a time; Get, Iterate, ApproximateCount and
// Position may run beside it and beside each other, and see each batch whole or not at all.
//
// Errors: every failure of an Engine or a Kind is an *Error naming the operation and the
// Location; errors.Is tells ErrClosed (used after Close), ErrCorrupt (damaged files) and
// ErrForeign (a directory of something else) apart from I/O errors.
package store
