package stream

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Window stores. A window store keeps values by key and window start (Kafka Streams' WindowStore),
// for a retention period: a window whose start is at or before the newest start written minus the
// retention is gone. Its changelog carries Kafka Streams' window store keys (the key, the window's
// start, a sequence number; windowed.AppendStoreKey) and values as a key-value store's do, so a Go
// and a Java member restore each other's. It is a key-value store underneath (the same engines,
// restore, standbys, checkpoints and transactions) whose engine keys are the changelog keys behind
// the number of their window's segment: windowSegmentMs of window starts. Expiry deletes whole
// segments with one range deletion, as Kafka Streams drops a RocksDB segment, never scanning.

// windowSegmentMs is the span of window starts of one segment of a persistent store. It is fixed
// rather than derived from the retention (Kafka Streams' RocksDB segments are retention/2, at least
// a minute) so that a persistent store keeps its layout when the retention changes; segments are
// key prefixes here, not databases, so a long retention with many segments costs nothing. An
// in-memory store, rebuilt from its changelog at every start, has segments as long as its retention
// when that is shorter (a stream-stream join's store over a window of milliseconds), so that it
// holds at most about twice its retention, as Kafka Streams' in-memory window store drops each
// window at its retention.
const windowSegmentMs = 60_000

// segmentKeyLen is the length of the segment number before an engine key.
const segmentKeyLen = 8

// windowSpec is how a window or session store was declared (Connect).
type windowSpec struct {
	retention   int64 // ms
	timestamped bool
	// session: a session store (session.go), whose keys' time is the session's end.
	session bool
	// duplicates: every Put adds a value (a window store that retains duplicates, as a stream-stream
	// join's), numbered by the store's sequence.
	duplicates bool
	// headers: the changelog is written as Kafka Streams 4.4's headers-aware window and session
	// stores write theirs (a deletion carries the headers of the record that deleted).
	headers bool
	// recordHeaders: every changelog record carries the headers of the record that wrote it (a
	// store that keeps each record's headers with its value, as a stream-stream join's).
	recordHeaders bool
	// timeOrdered: a session store that expires as Kafka Streams' time-ordered session store
	// (SessionStore.TimeOrdered).
	timeOrdered bool
}

// windowState is a window store's view of time. Under exactly-once what the open transaction
// wrote moves it too (reads see the transaction's writes), and an abort takes it back to the last
// commit, as Kafka Streams restores an aborted task's stores from the committed changelog.
type windowState struct {
	retention int64
	// span is the window starts of one segment (windowSegmentMs, or less for an in-memory store).
	span int64
	// session: the store is a session store, whose keys' time is their session's end (a window
	// store's is its window's start).
	session bool
	// seq is the sequence number of the last value put in a store that retains duplicates (Kafka
	// Streams' seqnum: from 0 each time the store opens, the first put numbered 1).
	seq int32
	// duplicates: the store retains duplicates (windowSpec).
	duplicates bool
	// interval, when not 0, is the segment interval of Kafka Streams' time-ordered session store
	// (SessionStore.TimeOrdered): times expire by whole intervals, those before the interval that
	// holds the newest time minus the retention (liveFrom).
	interval int64
	// observed is the newest window start written or restored (Kafka Streams' observedStreamTime of
	// the store), -1 before any.
	observed int64
	// expiredBelow is the first segment not deleted yet by expiry.
	expiredBelow int64
	// committedObserved and committedBelow are observed and expiredBelow as of the last commit.
	committedObserved, committedBelow int64
	// queried is committedObserved for queries, which read on other goroutines.
	queried atomic.Int64
	// getKey is the scratch buffer of the engine keys the task's reads look up (windowKey).
	getKey []byte
}

// newWindowState is the state of a store declared as spec, persistent or in memory.
func newWindowState(spec windowSpec, persistent bool) *windowState {
	w := &windowState{retention: spec.retention, session: spec.session, duplicates: spec.duplicates, span: windowSegmentMs}
	if !persistent && spec.retention > 0 && spec.retention < windowSegmentMs {
		w.span = spec.retention
	}
	if spec.timeOrdered {
		w.interval = max(spec.retention/2, timeOrderedMinInterval)
	}
	w.reset()
	return w
}

// reset forgets the store's time (an empty store).
func (w *windowState) reset() {
	w.observed, w.expiredBelow, w.committedObserved, w.committedBelow = -1, 0, -1, 0
	w.queried.Store(-1)
}

// commit records that what the store wrote is committed (a transaction, or any write under
// at-least-once, or a restore).
func (w *windowState) commit() {
	w.committedObserved, w.committedBelow = w.observed, w.expiredBelow
	w.queried.Store(w.observed)
}

// rollback takes the store's time back to the last commit (an aborted transaction).
func (w *windowState) rollback() { w.observed, w.expiredBelow = w.committedObserved, w.committedBelow }

// ErrWindowKey is a window store key that is not one: shorter than a window start and a sequence
// number, or a window start before the epoch.
var ErrWindowKey = errors.New("stream: not a window store key (the key, an 8-byte window start at or after the epoch, a 4-byte sequence number)")

// startOf is the window start of window store key k.
func startOf(k []byte) (int64, error) {
	_, start, _, err := windowed.SplitStoreKey(k)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrWindowKey, err)
	}
	if start < 0 {
		return 0, fmt.Errorf("%w: the window starts at %d", ErrWindowKey, start)
	}
	return start, nil
}

// timeOf is the time of store key k that its segment, retention and expiry go by: a window's start,
// or a session's end.
func (w *windowState) timeOf(k []byte) (int64, error) {
	if w.session {
		return endOf(k)
	}
	return startOf(k)
}

// engineKey is the engine's key of window store key k starting at start: its segment, then k.
func (w *windowState) engineKey(k []byte, start int64) []byte { return segmentKey(k, start/w.span) }

// segmentKey is the engine's key of window store key k in segment seg.
func segmentKey(k []byte, seg int64) []byte {
	return appendSegmentKey(make([]byte, 0, segmentKeyLen+len(k)), k, seg)
}

// appendSegmentKey appends segmentKey(k, seg) to dst.
func appendSegmentKey(dst, k []byte, seg int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(seg))
	return append(dst, k...)
}

// observe records a window start written or restored.
func (w *windowState) observe(start int64) { w.observed = max(w.observed, start) }

// live says whether the window starting at start is kept: after the newest start minus the
// retention (Kafka Streams' in-memory window store; its RocksDB store hides the others from reads).
// A time-ordered session store (interval set) keeps the whole intervals from liveFrom.
func (w *windowState) live(start int64) bool {
	if w.interval > 0 {
		return start >= w.liveFrom()
	}
	return liveAt(w.observed, w.retention, start)
}

func liveAt(observed, retention, start int64) bool {
	return observed < 0 || start > observed-retention
}

// timeOrderedMinInterval is the shortest segment interval of Kafka Streams' time-ordered session
// store (RocksDbTimeOrderedSessionBytesStoreSupplier: half the retention, at least a minute).
const timeOrderedMinInterval = 60_000

// liveFrom is the oldest time a store of whole-interval expiry (interval set) keeps: the start of the
// interval that holds the newest time minus the retention, as Kafka Streams' segmented stores drop
// the segments before it (the integer division truncates, as Java's does).
func (w *windowState) liveFrom() int64 {
	if w.observed < 0 {
		return 0
	}
	return (w.observed - w.retention) / w.interval * w.interval
}

// expiry is the range deletion of the segments that hold no live window any more, and whether one
// is due (the newest start moved past a segment since the last one).
func (w *windowState) expiry() (upper []byte, due bool) {
	minLive := w.observed - w.retention + 1
	if w.interval > 0 {
		minLive = w.liveFrom()
	}
	if w.observed < 0 || minLive <= 0 {
		return nil, false
	}
	seg := minLive / w.span // the segment holding the oldest live start stays
	if seg <= w.expiredBelow {
		return nil, false
	}
	w.expiredBelow = seg
	return binary.BigEndian.AppendUint64(nil, uint64(seg)), true
}

// expire deletes the segments of s that hold no live window, when due, under at-least-once (where
// every write is the engine's at once). Under exactly-once the deletion waits for the transaction's
// commit and goes in its batch (commitPending): an abort then deletes nothing a replay needs, and a
// crash cannot leave a store whose recorded position claims segments it deleted.
func (s *kvStore) expire() error {
	if s.pend != nil {
		return nil
	}
	upper, due := s.win.expiry()
	if due {
		var b store.Batch
		b.DeleteRange(nil, upper)
		if err := s.eng.Apply(&b, -1); err != nil {
			return s.fail("expire", err)
		}
	}
	s.win.commit()
	return nil
}

// windowKey is the engine key of window store key k for a read, and whether its window is live:
// for the loop, with the open transaction's writes; for a query (committed), as of the last commit.
func (s *kvStore) windowKey(k []byte, committed bool) (ek []byte, live bool, err error) {
	start, err := s.win.timeOf(k)
	if err != nil {
		return nil, false, s.fail("get", err)
	}
	if committed {
		return s.win.engineKey(k, start), liveAt(s.win.queried.Load(), s.win.retention, start), nil
	}
	// The task's own reads (its thread alone) build the key in the store's scratch buffer: the
	// engine keeps no reference to it, and a windowed aggregation reads once per window per record.
	s.win.getKey = appendSegmentKey(s.win.getKey[:0], k, start/s.win.span)
	// A read finds a window or session within the retention, in a time-ordered session store too,
	// which keeps (and writes) whole intervals but reads a key's sessions by the retention, as
	// Kafka Streams' fetchSession does.
	return s.win.getKey, liveAt(s.win.observed, s.win.retention, start), nil
}

// errWindowRange refuses a key-ordered range over a window store: its keys are ordered by segment.
func (s *kvStore) errWindowRange() error {
	return s.fail("range", fmt.Errorf("%s is a window store: read it with stream.Window's Fetch", s.name))
}

// fetch calls fn for the live windows of the key with bytes k whose start is in [from, to], in
// order of their start, with the engine's view merged with the open transaction's writes. It visits
// the segments up to the newest start, over a long span only those that hold entries.
func (s *kvStore) fetch(k []byte, from, to int64, fn func(start int64, value []byte) bool) error {
	return s.fetchAs(false, k, from, to, fn)
}

// fetchAs is fetch as a processor reads (query false) or as a query does (query true: what was
// committed, as of the last commit, safe beside the task's thread).
func (s *kvStore) fetchAs(query bool, k []byte, from, to int64, fn func(start int64, value []byte) bool) error {
	observed := s.observedAs(query)
	from = max(from, 0, observed-s.win.retention+1)
	last := lastSegment(observed, s.win.span, to)
	span := s.win.span
	for seg := from / span; from <= to && seg <= last; seg++ {
		next, ok, err := s.segmentFrom(query, seg, last)
		if err != nil || !ok || next > last {
			return err
		}
		seg = next
		first := seg * span
		// Both bounds in one buffer (the engine keeps neither): the segment, k, its first start
		// in the segment with the least sequence number; then the greatest key of k in the
		// segment, its last start there with the greatest sequence number, and a zero byte after
		// it, which makes it the bound after that key.
		bounds := make([]byte, 0, 2*(segmentKeyLen+len(k)+12)+1)
		bounds = binary.BigEndian.AppendUint64(bounds, uint64(seg))
		bounds = windowed.AppendStoreKey(bounds, k, max(from, first), 0)
		n := len(bounds)
		bounds = binary.BigEndian.AppendUint64(bounds, uint64(seg))
		bounds = append(windowed.AppendStoreKey(bounds, k, min(to, first+span-1), -1), 0)
		it, err := s.rangeAs(query, bounds[:n:n], bounds[n:])
		if err != nil {
			return err
		}
		for it.Next() {
			key, start, _, err := windowed.SplitStoreKey(it.Key()[segmentKeyLen:])
			if err != nil || !bytes.Equal(key, k) {
				continue // another key with k as its prefix, sorted among k's windows
			}
			if !fn(start, it.Value()) {
				return errors.Join(it.Err(), it.Close())
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return s.fail("fetch", err)
		}
	}
	return nil
}

// fetchAll calls fn for every live window of the store whose start is in [from, to], in order of
// their start, then key bytes, then sequence number (Kafka Streams' fetchAll(timeFrom, timeTo) on
// its time-ordered window store), with the engine's view merged with the open transaction's
// writes.
func (s *kvStore) fetchAll(from, to int64, fn func(key []byte, start int64, value []byte) bool) error {
	from = max(from, 0, s.win.observed-s.win.retention+1)
	type entry struct {
		key, value []byte
		start      int64
		seq        int32
	}
	return scanSorted(s, from, to, "fetch", func(k, v []byte) (entry, bool) {
		key, start, seq, err := windowed.SplitStoreKey(k)
		if err != nil || start < from || start > to {
			return entry{}, false
		}
		return entry{key: bytes.Clone(key), value: bytes.Clone(v), start: start, seq: seq}, true
	}, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.start, b.start), bytes.Compare(a.key, b.key), cmp.Compare(a.seq, b.seq))
	}, func(e entry) bool { return fn(e.key, e.start, e.value) })
}

// findSessionsEnding calls fn for every session of the store, whatever its key, that ends in
// [earliestEnd, latestEnd] and is kept, in order of end, then start, then key bytes (Kafka Streams'
// findSessions(earliestSessionEndTime, latestSessionEndTime) on its time-ordered session store,
// what a session aggregation that emits its final results reads), with the engine's view merged
// with the open transaction's writes. A time-ordered store keeps every session of its live
// intervals (liveFrom); another, those that end after the newest end minus the retention.
func (s *kvStore) findSessionsEnding(earliestEnd, latestEnd int64, fn func(key []byte, w windowed.Window, value []byte) bool) error {
	from := max(earliestEnd, 0)
	if s.win.interval > 0 {
		from = max(from, s.win.liveFrom())
	} else {
		from = max(from, s.win.observed-s.win.retention+1)
	}
	type entry struct {
		key, value []byte
		w          windowed.Window
	}
	return scanSorted(s, from, latestEnd, "find sessions", func(k, v []byte) (entry, bool) {
		key, w, err := windowed.SplitSessionKey(k)
		if err != nil || w.End < from || w.End > latestEnd {
			return entry{}, false
		}
		return entry{key: bytes.Clone(key), value: bytes.Clone(v), w: w}, true
	}, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.w.End, b.w.End), cmp.Compare(a.w.Start, b.w.Start), bytes.Compare(a.key, b.key))
	}, func(e entry) bool { return fn(e.key, e.w, e.value) })
}

// scanSorted reads the segments of s holding times [from, to], segment by segment: entryOf picks
// (and copies) the entries wanted from each store key (without its segment) and value, and fn gets
// them in order, sorted within their segment (a segment is keyed by key first, not by time), until
// it returns false. Reads of time across keys (fetchAll, findSessionsEnding) share it.
func scanSorted[E any](s *kvStore, from, to int64, op string, entryOf func(key, value []byte) (E, bool), order func(a, b E) int, fn func(E) bool) error {
	last := lastSegment(s.win.observed, s.win.span, to)
	for seg := from / s.win.span; from <= to && seg <= last; seg++ {
		next, ok, err := s.segmentFrom(false, seg, last)
		if err != nil || !ok || next > last {
			return err
		}
		seg = next
		lo := binary.BigEndian.AppendUint64(nil, uint64(seg))
		it, err := s.engineRange(lo, binary.BigEndian.AppendUint64(nil, uint64(seg+1)))
		if err != nil {
			return err
		}
		var es []E
		for it.Next() {
			if e, ok := entryOf(it.Key()[segmentKeyLen:], it.Value()); ok {
				es = append(es, e)
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return s.fail(op, err)
		}
		slices.SortFunc(es, order)
		for _, e := range es {
			if !fn(e) {
				return nil
			}
		}
	}
	return nil
}

// lastSegment is the last segment a scan up to time to visits: none holds a time after the newest
// written, when the store knows it (a persistent store reopened without a restore does not until
// its next write).
func lastSegment(observed, span, to int64) int64 {
	if observed >= 0 {
		to = min(to, observed)
	}
	return to / span
}

// observedAs is the newest window time the store wrote, as a processor sees it (query false) or as
// a query does (as of the last commit).
func (s *kvStore) observedAs(query bool) int64 {
	if query {
		return s.win.queried.Load()
	}
	return s.win.observed
}

// rangeAs is a range over the engine's keys as a processor reads it, with the open transaction's
// writes (query false), or as a query does, the engine alone (what was committed).
func (s *kvStore) rangeAs(query bool, lower, upper []byte) (store.Iterator, error) {
	if !query {
		return s.engineRange(lower, upper)
	}
	it, err := s.eng.Iterate(lower, upper)
	if err != nil {
		return nil, s.fail("range", err)
	}
	return it, nil
}

// fewSegments is how many segments a fetch visits one by one; over a longer span it looks for the
// next segment that holds an entry first (nextSegment), which costs an iterator of its own.
const fewSegments = 8

// segmentFrom is the segment a fetch over segments seg to last visits next: seg itself when few are
// left, else the first one at or after seg that holds an entry (ok false: none).
func (s *kvStore) segmentFrom(query bool, seg, last int64) (next int64, ok bool, err error) {
	if last-seg < fewSegments {
		return seg, true, nil
	}
	return s.nextSegment(query, seg)
}

// nextSegment is the first segment at or after seg that holds an entry, in the engine or in the
// open transaction; ok is false when there is none.
func (s *kvStore) nextSegment(query bool, seg int64) (next int64, ok bool, err error) {
	lo := binary.BigEndian.AppendUint64(nil, uint64(seg))
	it, err := s.eng.Iterate(lo, nil)
	if err != nil {
		return 0, false, s.fail("fetch", err)
	}
	if it.Next() && len(it.Key()) >= segmentKeyLen {
		next, ok = int64(binary.BigEndian.Uint64(it.Key())), true
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return 0, false, s.fail("fetch", err)
	}
	if s.pend != nil && !query {
		s.pend.tree.AscendGreaterOrEqual(pending{key: lo}, func(p pending) bool {
			if len(p.key) >= segmentKeyLen {
				if n := int64(binary.BigEndian.Uint64(p.key)); !ok || n < next {
					next, ok = n, true
				}
			}
			return false
		})
	}
	return next, ok, nil
}

// WindowStore is typed access to a window store by name (Kafka Streams' WindowStore): values by key
// and window start, kept for a retention period (see Window). Declare it once and give it to
// Connect with the processor that uses it, which tells New that the store is a window store.
type WindowStore[K, V any] struct {
	name        string
	retention   int64
	timestamped bool
	duplicates  bool
	headers     bool
	recHeaders  bool
	ks          serde.Serde[K]
	vs          serde.Serde[V]
}

// Window declares typed access to the window store name (its changelog is
// topology.Names.WindowedChangelog(name, …)), which keeps each window until the newest window start
// written is more than retention after its start. A retention under 1 ms is taken as 1 ms.
func Window[K, V any](name string, retention time.Duration, ks serde.Serde[K], vs serde.Serde[V]) WindowStore[K, V] {
	return WindowStore[K, V]{name: name, retention: max(retention.Milliseconds(), 1), ks: ks, vs: vs}
}

// TimestampedWindowStore declares the window store name whose values carry their timestamp, as
// Kafka Streams' DSL keeps a windowed aggregation's results (each value is its timestamp, 8 bytes
// big-endian milliseconds, then the value; the changelog carries the value with the timestamp as
// the record's, as a TimestampedStore's does). Give it to Connect.
func TimestampedWindowStore(name string, retention time.Duration) Store {
	return WindowStore[[]byte, []byte]{name: name, retention: max(retention.Milliseconds(), 1), timestamped: true}
}

// TimestampedHeadersWindowStore declares a TimestampedWindowStore whose changelog is written as
// Kafka Streams 4.4's headers-aware window stores write theirs (the DSL's, with
// dsl.store.format=HEADERS): the DSL keeps each value with empty headers, so an update's record
// carries none, and a deletion's carries the headers of the record that deleted.
func TimestampedHeadersWindowStore(name string, retention time.Duration) Store {
	return WindowStore[[]byte, []byte]{name: name, retention: max(retention.Milliseconds(), 1), timestamped: true, headers: true}
}

// Name is the store's name.
func (w WindowStore[K, V]) Name() string { return w.name }

func (w WindowStore[K, V]) spec() windowSpec {
	return windowSpec{retention: w.retention, timestamped: w.timestamped, duplicates: w.duplicates, headers: w.headers,
		recordHeaders: w.recHeaders}
}

// WithRecordHeaders returns the declaration of a store whose changelog records carry the headers of
// the record that wrote them, as Kafka Streams 4.4's headers-aware window stores write theirs when
// they keep each record's headers with its value (a stream-stream join's, whatever
// dsl.store.format says).
func (w WindowStore[K, V]) WithRecordHeaders() WindowStore[K, V] {
	w.recHeaders = true
	return w
}

// RetainDuplicates returns the declaration of a store that keeps every value put (Kafka Streams'
// retainDuplicates, as a stream-stream join's window stores do): each Put adds one under the next
// number of the store's sequence (which starts over when the store opens, as Kafka Streams'), Fetch
// returns all of a start's values in the order they were put, and Get and Delete are refused.
func (w WindowStore[K, V]) RetainDuplicates() WindowStore[K, V] {
	w.duplicates = true
	return w
}

// ErrDuplicates is returned by Get and Delete of a window store that retains duplicates: its values
// are read with Fetch and leave with their retention.
var ErrDuplicates = errors.New("stream: a window store that retains duplicates is read with Fetch only")

// windowDecl is a Store that declares a window store.
type windowDecl interface {
	Store
	spec() windowSpec
}

// key is the window store key of key and start, for sequence number 0.
func (w WindowStore[K, V]) key(key K, start int64) ([]byte, error) {
	k, err := w.ks.Encode(key)
	if err != nil {
		return nil, fmt.Errorf("stream: encoding a key of store %s: %w", w.name, err)
	}
	if start < 0 {
		return nil, fmt.Errorf("stream: store %s: a window cannot start before the epoch (%d)", w.name, start)
	}
	return windowed.AppendStoreKey(make([]byte, 0, len(k)+12), k, start, 0), nil
}

// Put sets the value of key's window starting at start (Unix ms) in c's task's store (and its
// changelog). A window that is no longer kept (its start too old for the retention) is not kept,
// as Kafka Streams skips it, but its write is logged, as Kafka Streams' changelogging store logs it.
func (w WindowStore[K, V]) Put(c *Context, key K, start int64, value V) error {
	k, err := w.key(key, start)
	if err != nil {
		return err
	}
	if w.duplicates {
		if _, err := w.numbered(c, k); err != nil {
			return err
		}
	}
	v, err := w.vs.Encode(value)
	if err != nil {
		return fmt.Errorf("stream: encoding a value of store %s: %w", w.name, err)
	}
	if v == nil {
		v = []byte{} // a value, not a deletion
	}
	return c.Store(w.name).Put(k, v)
}

// PutNull writes a null value for key's window starting at start, as Kafka Streams' put(key, null,
// start) does: a deletion. In a store that retains duplicates there is nothing to delete: the store
// is left as it is (its stream time too), but the write takes the next sequence number and its
// changelog carries it as a tombstone, as Kafka Streams' changelogging layer logs it (a stream-stream
// join puts each record without a value so).
func (w WindowStore[K, V]) PutNull(c *Context, key K, start int64) error {
	if !w.duplicates {
		return w.Delete(c, key, start)
	}
	k, err := w.key(key, start)
	if err != nil {
		return err
	}
	st, err := w.numbered(c, k)
	if err != nil {
		return err
	}
	return st.write(k, nil, true, true)
}

// numbered gives the store key k of a store that retains duplicates the store's next sequence number
// (Kafka Streams' seqnum), and returns c's task's store.
func (w WindowStore[K, V]) numbered(c *Context, k []byte) (*kvStore, error) {
	st, err := w.windowStore(c)
	if err != nil {
		return nil, err
	}
	if !st.win.duplicates {
		return nil, fmt.Errorf("stream: store %s does not retain duplicates: declare it with RetainDuplicates (stream.Connect)", w.name)
	}
	st.win.seq = (st.win.seq + 1) & 0x7fffffff
	binary.BigEndian.PutUint32(k[len(k)-4:], uint32(st.win.seq))
	return st, nil
}

// Get returns the value of key's window starting at start (Kafka Streams' fetch(key, time)), ok
// false when absent or no longer kept.
func (w WindowStore[K, V]) Get(c *Context, key K, start int64) (value V, ok bool, err error) {
	if w.duplicates {
		return value, false, ErrDuplicates
	}
	k, err := w.key(key, start)
	if err != nil {
		return value, false, err
	}
	return getDecoded(c.Store(w.name), k, w.vs, w.name)
}

// Delete removes key's window starting at start (a tombstone in the changelog).
func (w WindowStore[K, V]) Delete(c *Context, key K, start int64) error {
	if w.duplicates {
		return ErrDuplicates
	}
	k, err := w.key(key, start)
	if err != nil {
		return err
	}
	return c.Store(w.name).Delete(k)
}

// Fetch calls fn for key's windows kept in c's task's store whose start is in [from, to] (Unix ms),
// in order of their start (Kafka Streams' fetch(key, timeFrom, timeTo)), until fn returns false.
func (w WindowStore[K, V]) Fetch(c *Context, key K, from, to int64, fn func(start int64, value V) bool) error {
	k, err := w.ks.Encode(key)
	if err != nil {
		return fmt.Errorf("stream: encoding a key of store %s: %w", w.name, err)
	}
	st, err := w.windowStore(c)
	if err != nil {
		return err
	}
	var derr error
	err = st.fetch(k, from, to, func(start int64, raw []byte) bool {
		v, err := w.vs.Decode(raw)
		if err != nil {
			derr = fmt.Errorf("stream: a value in store %s: %w", w.name, err)
			return false
		}
		return fn(start, v)
	})
	return errors.Join(err, derr)
}

// FetchAll calls fn for every window kept in c's task's store whose start is in [from, to] (Unix
// ms), whatever its key, in order of their start, then of their keys' bytes (Kafka Streams'
// fetchAll(timeFrom, timeTo) on its time-ordered window store, what an aggregation that emits its
// final results reads), until fn returns false.
func (w WindowStore[K, V]) FetchAll(c *Context, from, to int64, fn func(key K, start int64, value V) bool) error {
	st, err := w.windowStore(c)
	if err != nil {
		return err
	}
	var derr error
	err = st.fetchAll(from, to, func(kb []byte, start int64, raw []byte) bool {
		var k K
		var v V
		if k, v, derr = decodeEntry(w.name, w.ks, w.vs, kb, raw); derr != nil {
			return false
		}
		return fn(k, start, v)
	})
	return errors.Join(err, derr)
}

// windowStore is c's task's store of w, which must be a window store.
func (w WindowStore[K, V]) windowStore(c *Context) (*kvStore, error) {
	st, ok := c.Store(w.name).(*kvStore)
	if !ok || st.win == nil || st.win.session {
		if u, isUnknown := c.Store(w.name).(unknownStore); isUnknown {
			return nil, u.err()
		}
		return nil, fmt.Errorf("stream: store %s is not a window store: connect its processor with the stream.Window declaring it (stream.Connect)", w.name)
	}
	return st, nil
}
