package dsl

import (
	"math"
	"slices"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// TimeWindowedKStream is a grouped stream whose aggregations keep one result per key and time
// window (Kafka Streams' TimeWindowedKStream): Count, Reduce and WindowedAggregate make a table
// keyed by windowed.Key, kept in a window store whose changelog Kafka Streams reads.
type TimeWindowedKStream[K, V any] struct {
	g    *KGroupedStream[K, V]
	ws   windowed.TimeWindows
	emit EmitStrategy
}

// Emit sets when the aggregations of w hand their results on (Kafka Streams'
// TimeWindowedKStream.emitStrategy): OnWindowUpdate (the default) or OnWindowClose.
func (w *TimeWindowedKStream[K, V]) Emit(e EmitStrategy) *TimeWindowedKStream[K, V] {
	checkEmit(w.g.s.b, e)
	c := *w
	c.emit = e
	return &c
}

// WindowedBy groups the records of g into the time windows ws (Kafka Streams'
// windowedBy(TimeWindows)): tumbling or hopping, with a grace period (see windowed.TimeWindows).
// Invalid windows are a program error. (A function, not a method of KGroupedStream: Go cannot
// have a method of a generic type return a type keyed by windowed.Key of its own key type.)
func WindowedBy[K, V any](g *KGroupedStream[K, V], ws windowed.TimeWindows) *TimeWindowedKStream[K, V] {
	if err := ws.Validate(); err != nil {
		g.s.b.fail("WindowedBy: %w", err)
	}
	return &TimeWindowedKStream[K, V]{g: g, ws: ws}
}

// Count counts the records of each key in each window (Kafka Streams' count), a record with a null
// value included. opts: Named, and Materialized[K, int64] (its Retention keeps the windows longer
// than their size and grace).
func (w *TimeWindowedKStream[K, V]) Count(opts ...TableOption) *KTable[windowed.Key[K], int64] {
	named, mat, materialized := tableOptions[K, int64](w.g.s.b, "Count", opts)
	if materialized && mat.Name == "" {
		// Kafka Streams' count(Materialized) takes a store name it never uses, for compatibility.
		w.g.s.b.newStoreName("KSTREAM-AGGREGATE-")
	}
	return windowedAggregate(w, "KSTREAM-AGGREGATE-", named, mat, serde.Int64, func() int64 { return 0 }, nil,
		func(_ K, _ V, n int64) int64 { return n + 1 })
}

// Reduce combines the values of each key in each window with fn (Kafka Streams' reduce): a window's
// first value is its aggregate as it is. opts: Named and Materialized[K, V].
func (w *TimeWindowedKStream[K, V]) Reduce(fn func(agg, v V) V, opts ...TableOption) *KTable[windowed.Key[K], V] {
	named, mat, _ := tableOptions[K, V](w.g.s.b, "Reduce", opts)
	return windowedAggregate(w, "KSTREAM-REDUCE-", named, mat, w.g.vs, nil, func(_ K, v V) V { return v },
		func(_ K, v V, agg V) V { return fn(agg, v) })
}

// WindowedAggregate folds the values of each key in each window into an aggregate of type VA,
// starting from init (Kafka Streams' aggregate on a TimeWindowedKStream). opts: Named and
// Materialized[K, VA].
func WindowedAggregate[K, V, VA any](w *TimeWindowedKStream[K, V], init func() VA, fn func(k K, v V, agg VA) VA, opts ...TableOption) *KTable[windowed.Key[K], VA] {
	named, mat, _ := tableOptions[K, VA](w.g.s.b, "Aggregate", opts)
	return windowedAggregate(w, "KSTREAM-AGGREGATE-", named, mat, nil, init, nil, fn)
}

// windowedAggregate adds a windowed aggregation: its window store (named, or generated from
// prefix), the repartition before it when the grouping needs one, and its processor node. init
// gives a window's starting aggregate; a reduce has none, and first makes its first value the
// aggregate.
func windowedAggregate[K, V, VA any](w *TimeWindowedKStream[K, V], prefix string, named Named, m Materialized[K, VA], vaDefault serde.Serde[VA],
	init func() VA, first func(K, V) VA, fn func(K, V, VA) VA) *KTable[windowed.Key[K], VA] {
	g, b := w.g, w.g.s.b
	store, name, ks, vas := aggregationOf(g, prefix, named, m, vaDefault)
	retention := w.ws.Size() + w.ws.Grace()
	if m.Retention != 0 {
		retention = m.Retention.Milliseconds()
	}
	if retention < w.ws.Size()+w.ws.Grace() {
		b.fail("the retention of the window store %q (%d ms) must be at least its window size plus its grace period (%d + %d ms)",
			store, retention, w.ws.Size(), w.ws.Grace())
	}
	parent, in := g.input(store)
	n := b.add(&node{name: name, kind: processorNode}, parent)
	final := w.emit == OnWindowClose
	live := retention
	if final {
		// Kafka Streams keeps an aggregation that emits final results in its time-ordered window
		// store, which still reads a window that starts exactly the retention before the newest
		// (its other window stores read only later ones): one more millisecond here.
		live++
	}
	b.windowStore(store, retention, live)
	t := aggregateTable(b, n, windowedKeys(ks, w.ws.Size()), vas, store, m.CachingDisabled, g.sourcesFrom(parent))
	// Emitting final results, the record cache's flush writes the store and hands nothing on.
	t.quietFlush = final
	if ks != nil {
		t.storeKs = windowStoreKeys(ks, w.ws.Size())
	}
	t.windows = &windowQuery{ks: ks, size: w.ws.Size()}
	t.windowEnd, t.grace = func(k windowed.Key[K]) int64 { return k.Window.End }, w.ws.Grace()
	agg := &windowAggregation[K, V, VA]{t: t, ws: w.ws, init: init, first: first, fn: fn}
	if final {
		// Kafka Streams' bounds for time windows: the windows that start after the last emitted
		// close time's first window up to the last that closed, fetched only when that moved by a
		// window (KStreamWindowAggregate's emitRange… and shouldRangeFetch).
		size := w.ws.Size()
		agg.final = newFinalEmitter(b, n, t, store, live, size, ks, vas, func(last, close int64) (lower, upper int64, fetch bool) {
			upper = close - size
			if last < 0 {
				return 0, upper, true
			}
			lower = max(0, last-size) + 1
			return lower, upper, !slices.Equal(w.ws.WindowsFor(upper), w.ws.WindowsFor(lower-1))
		})
	}
	n.init = agg.start
	in.attach(agg.process)
	return t
}

// windowedKeys is the serde of the table's windowed keys on topics (Kafka Streams'
// TimeWindowedSerde of the inner key serde), nil without one.
func windowedKeys[K any](ks serde.Serde[K], size int64) serde.Serde[windowed.Key[K]] {
	if ks == nil {
		return nil
	}
	return windowed.TimeKeySerde(ks, size)
}

// windowAggregation is the processing of a windowed aggregation (Kafka Streams'
// KStreamWindowAggregate, emitting on every update).
type windowAggregation[K, V, VA any] struct {
	t     *KTable[windowed.Key[K], VA]
	ws    windowed.TimeWindows
	init  func() VA
	first func(K, V) VA
	fn    func(K, V, VA) VA
	// times are each task's stream time as this processor saw it.
	times streamTimes
	// final emits each window once, when it closes (OnWindowClose); nil when every update is
	// handed on.
	final *finalEmitter[K, VA]
}

// start starts a task: its stream time unknown, its emit state from the processor metadata.
func (a *windowAggregation[K, V, VA]) start(c *stream.Context) error {
	if err := a.times.start(c); err != nil {
		return err
	}
	if a.final != nil {
		a.final.start(c)
	}
	return nil
}

func (a *windowAggregation[K, V, VA]) process(c *stream.Context, md meta, k K, v V) error {
	if md.nullKey {
		c.Dropped()
		return nil // Kafka Streams skips a record without a key, and counts it as dropped
	}
	ts := recordTime(c, md).UnixMilli()
	observed := a.times.of(c.Task())
	*observed = max(*observed, ts)
	closed := *observed - a.ws.Grace() // a window that ends at or before this takes nothing more
	for _, win := range a.ws.WindowsFor(ts) {
		if win.End <= closed {
			c.Dropped() // Kafka Streams logs and counts a record too late for its window, and skips it
			continue
		}
		wk := windowed.Key[K]{Key: k, Window: win}
		old, found, err := a.t.read(c, wk)
		if err != nil {
			return err
		}
		var ch change[VA]
		at := ts
		switch {
		case found:
			at = max(at, old.at.UnixMilli())
			ch.old, ch.hasOld = old.v, true
			ch.new = a.fn(k, v, old.v)
		case a.first != nil:
			ch.new = a.first(k, v) // a reduce's first value, with no old value
		default:
			ch.old, ch.hasOld = a.init(), true
			ch.new = a.fn(k, v, ch.old)
		}
		// A reduce whose first value is null has a null aggregate: Kafka Streams deletes the window
		// and hands the null on.
		ch.hasNew = found || a.first == nil || !md.nullValue
		when := time.UnixMilli(at)
		if err := a.t.write(c, meta{}, wk, ch.new, ch.hasNew, when); err != nil {
			return err
		}
		if !a.t.sendOld {
			ch.old, ch.hasOld = *new(VA), false
		}
		if a.final != nil {
			continue // handed on when the window closes
		}
		if err := a.t.forward(c, meta{at: when}, wk, ch); err != nil {
			return err
		}
	}
	if a.final != nil {
		return a.final.emit(c, md, closed)
	}
	return nil
}

// windowStoreKeys is the serde of a window store's keys (Kafka Streams' window store layout: the
// inner key, the window start, sequence number 0), by which the table keeps its windows; decoding
// gives the window its size.
func windowStoreKeys[K any](ks serde.Serde[K], size int64) serde.Serde[windowed.Key[K]] {
	s := storeKeySerde[K]{inner: ks, size: size}
	s.app, _ = ks.(serde.Appender[K])
	return s
}

type storeKeySerde[K any] struct {
	inner serde.Serde[K]
	app   serde.Appender[K] // inner, when it appends
	size  int64
}

// AppendEncode implements serde.Appender: the store reads and writes each window of a record
// with the key encoded into its scratch buffer rather than a new one.
func (s storeKeySerde[K]) AppendEncode(dst []byte, k windowed.Key[K]) ([]byte, error) {
	if s.app == nil {
		b, err := s.inner.Encode(k.Key)
		if err != nil {
			return dst, err
		}
		return windowed.AppendStoreKey(dst, b, k.Window.Start, 0), nil
	}
	n := len(dst)
	dst, err := s.app.AppendEncode(dst, k.Key)
	if err != nil {
		return dst[:n], err
	}
	return windowed.AppendStoreKey(dst, nil, k.Window.Start, 0), nil
}

func (s storeKeySerde[K]) Encode(k windowed.Key[K]) ([]byte, error) {
	b, err := s.inner.Encode(k.Key)
	if err != nil {
		return nil, err
	}
	return windowed.AppendStoreKey(make([]byte, 0, len(b)+12), b, k.Window.Start, 0), nil
}

func (s storeKeySerde[K]) Decode(b []byte) (windowed.Key[K], error) {
	kb, start, _, err := windowed.SplitStoreKey(b)
	if err != nil {
		return windowed.Key[K]{}, err
	}
	k, err := s.inner.Decode(kb)
	if err != nil {
		return windowed.Key[K]{}, err
	}
	end := start + s.size
	if s.size > 0 && start > math.MaxInt64-s.size {
		end = math.MaxInt64
	}
	return windowed.Key[K]{Key: k, Window: windowed.Window{Start: start, End: end}}, nil
}

// windowStore records that store is a window store keeping windows for retention ms (its
// changelog's), of which the runtime reads those that start after the newest start minus live ms.
func (b *Builder) windowStore(store string, retention, live int64) {
	b.declare(store, storeKind{
		decl:        stream.TimestampedWindowStore(store, time.Duration(live)*time.Millisecond),
		headersDecl: stream.TimestampedHeadersWindowStore(store, time.Duration(live)*time.Millisecond),
		changelog:   func(n topology.Names) topology.TopicInfo { return n.WindowedChangelog(store, retention) },
	})
}
