package dsl

import (
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/streamhook"
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

// EmitStrategy is when a windowed aggregation hands its results on (Kafka Streams' EmitStrategy).
type EmitStrategy int

const (
	// OnWindowUpdate hands every update of a window on (Kafka Streams' EmitStrategy.onWindowUpdate,
	// the default), through the record cache when the table has one.
	OnWindowUpdate EmitStrategy = iota
	// OnWindowClose hands each window on once, with its final result, when it closes: when the
	// stream time passes its end plus the grace (Kafka Streams' EmitStrategy.onWindowClose).
	OnWindowClose
)

// Emit sets when the aggregations of w hand their results on (Kafka Streams'
// TimeWindowedKStream.emitStrategy): OnWindowUpdate (the default) or OnWindowClose.
func (w *TimeWindowedKStream[K, V]) Emit(e EmitStrategy) *TimeWindowedKStream[K, V] {
	if e != OnWindowUpdate && e != OnWindowClose {
		w.g.s.b.fail("Emit: unknown emit strategy %d", e)
	}
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
	// Emitting final results, the aggregation reads its closed windows from the store by time: it
	// writes through to it (no record cache; Kafka Streams' cache there changes only how many
	// changelog records the updates take, not what is emitted).
	t := aggregateTable(b, n, windowedKeys(ks, w.ws.Size()), vas, store, m.CachingDisabled || final, g.sourcesFrom(parent))
	if ks != nil {
		t.storeKs = windowStoreKeys(ks, w.ws.Size())
	}
	t.windowEnd, t.grace = func(k windowed.Key[K]) int64 { return k.Window.End }, w.ws.Grace()
	agg := &windowAggregation[K, V, VA]{t: t, ws: w.ws, init: init, first: first, fn: fn, final: final, store: store}
	if final && ks != nil && vas != nil {
		n.onBuild = append(n.onBuild, func() {
			agg.windows = stream.Window(store, time.Duration(live)*time.Millisecond, ks, serde.Serde[stamped[VA]](newStampedSerde(store, vas)))
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
	// final: the aggregation emits each window once, when it closes (OnWindowClose), reading the
	// closed ones from windows, its store by time; emits are each task's emit state.
	final   bool
	store   string
	windows stream.WindowStore[K, stamped[VA]]
	emits   sync.Map // tasks.ID → *emitState
}

// emitState is one task's progress emitting final results (Kafka Streams'
// AbstractKStreamTimeWindowAggregateProcessor): the last window close time it emitted up to (-1:
// none), kept in the task's processor metadata under the store's name so that the task's next
// owner, Go or Java, goes on from it; and when the wall clock next lets it look.
type emitState struct {
	last, next int64
}

// start starts a task: its stream time unknown, its emit state from the processor metadata its
// offsets were committed with.
func (a *windowAggregation[K, V, VA]) start(c *stream.Context) error {
	if err := a.times.start(c); err != nil {
		return err
	}
	if a.final {
		last, ok := streamhook.ProcessorMetadata(c, a.store)
		if !ok {
			last = -1
		}
		a.emits.Store(c.Task(), &emitState{last: last})
	}
	return nil
}

// emitFinal emits the windows that closed since the last emit (Kafka Streams'
// maybeForwardFinalResult), at most once per __emit.interval.ms.kstreams.windowed.aggregation__
// of wall-clock time, each with its final aggregate and timestamp and the current record's
// headers, in order of window start and key.
func (a *windowAggregation[K, V, VA]) emitFinal(c *stream.Context, md meta, closeTime int64) error {
	p, ok := a.emits.Load(c.Task())
	if !ok {
		p, _ = a.emits.LoadOrStore(c.Task(), &emitState{last: -1})
	}
	st := p.(*emitState)
	now := c.CurrentSystemTime().UnixMilli()
	if now < st.next {
		return nil
	}
	st.next = now + c.Config().Runtime.WindowedEmitEvery()
	if st.last >= 0 && st.last >= closeTime {
		return nil // the close time has not moved
	}
	size := a.ws.Size()
	upper := closeTime - size // the last window start that closed
	if upper < 0 {
		return nil
	}
	lower := int64(0)
	if st.last >= 0 {
		lower = max(0, st.last-size) + 1
		// No window closed since the last emit when the same windows hold both bounds.
		if slices.Equal(a.ws.WindowsFor(upper), a.ws.WindowsFor(lower-1)) {
			return nil
		}
	}
	headers := md.headersOf(c)
	var ferr error
	err := a.windows.FetchAll(c, lower, upper, func(k K, start int64, v stamped[VA]) bool {
		wk := windowed.Key[K]{Key: k, Window: windowed.Window{Start: start, End: start + size}}
		ferr = a.t.out.emit(c, meta{at: v.at, headers: headers, ownHeaders: true}, wk, change[VA]{new: v.v, hasNew: true})
		return ferr == nil
	})
	if err = errors.Join(err, ferr); err != nil {
		return err
	}
	st.last = closeTime
	streamhook.SetProcessorMetadata(c, a.store, closeTime)
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
		if err := a.t.write(c, wk, ch.new, ch.hasNew, when); err != nil {
			return err
		}
		if !a.t.sendOld {
			ch.old, ch.hasOld = *new(VA), false
		}
		if a.final {
			continue // handed on when the window closes
		}
		if err := a.t.forward(c, meta{at: when}, wk, ch); err != nil {
			return err
		}
	}
	if a.final {
		return a.emitFinal(c, md, closed)
	}
	return nil
}

// windowStoreKeys is the serde of a window store's keys (Kafka Streams' window store layout: the
// inner key, the window start, sequence number 0), by which the table keeps its windows; decoding
// gives the window its size.
func windowStoreKeys[K any](ks serde.Serde[K], size int64) serde.Serde[windowed.Key[K]] {
	return storeKeySerde[K]{inner: ks, size: size}
}

type storeKeySerde[K any] struct {
	inner serde.Serde[K]
	size  int64
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
		decl:       stream.TimestampedWindowStore(store, time.Duration(live)*time.Millisecond),
		changelog:  func(n topology.Names) topology.TopicInfo { return n.WindowedChangelog(store, retention) },
		notHeaders: "windowed aggregations keep their stores",
	})
}
