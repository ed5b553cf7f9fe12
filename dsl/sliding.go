package dsl

import (
	"cmp"
	"fmt"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// SlidingWindowedKStream is a grouped stream whose aggregations keep one result per key and sliding
// window (Kafka Streams' SlidingWindowedKStream): Count, Reduce and SlidingAggregate make a table
// keyed by windowed.Key, kept in a window store whose changelog Kafka Streams reads.
type SlidingWindowedKStream[K, V any] struct {
	g    *KGroupedStream[K, V]
	sw   windowed.SlidingWindows
	emit EmitStrategy
}

// Emit sets when the aggregations of w hand their results on (Kafka Streams'
// SlidingWindowedKStream.emitStrategy): OnWindowUpdate (the default) or OnWindowClose.
func (w *SlidingWindowedKStream[K, V]) Emit(e EmitStrategy) *SlidingWindowedKStream[K, V] {
	checkEmit(w.g.s.b, e)
	c := *w
	c.emit = e
	return &c
}

// SlidingWindowedBy groups the records of g into sliding windows (Kafka Streams'
// windowedBy(SlidingWindows)). Invalid windows are a program error.
func SlidingWindowedBy[K, V any](g *KGroupedStream[K, V], sw windowed.SlidingWindows) *SlidingWindowedKStream[K, V] {
	if err := sw.Validate(); err != nil {
		g.s.b.fail("SlidingWindowedBy: %w", err)
	}
	return &SlidingWindowedKStream[K, V]{g: g, sw: sw}
}

// Count counts the records of each key in each window (Kafka Streams' count). opts: Named, and
// Materialized[K, int64] (its Retention, at least twice the difference plus the grace, the default,
// keeps windows longer).
func (w *SlidingWindowedKStream[K, V]) Count(opts ...TableOption) *KTable[windowed.Key[K], int64] {
	named, mat, _ := tableOptions[K, int64](w.g.s.b, "Count", opts)
	return slidingAggregate(w, "KSTREAM-AGGREGATE-", named, mat, serde.Int64, &slidingFolds[K, V, int64]{
		init: func() int64 { return 0 },
		fn:   func(_ K, _ V, n int64) int64 { return n + 1 },
	})
}

// Reduce combines the values of each key in each window with fn (Kafka Streams' reduce): a
// window's first value is its aggregate as it is. opts: Named and Materialized[K, V].
func (w *SlidingWindowedKStream[K, V]) Reduce(fn func(agg, v V) V, opts ...TableOption) *KTable[windowed.Key[K], V] {
	named, mat, _ := tableOptions[K, V](w.g.s.b, "Reduce", opts)
	return slidingAggregate(w, "KSTREAM-REDUCE-", named, mat, w.g.vs, &slidingFolds[K, V, V]{
		first: func(_ K, v V) V { return v },
		fn:    func(_ K, v V, agg V) V { return fn(agg, v) },
	})
}

// SlidingAggregate folds the values of each key in each sliding window into an aggregate of type VA,
// starting from init (Kafka Streams' aggregate on a SlidingWindowedKStream). opts: Named and
// Materialized[K, VA].
func SlidingAggregate[K, V, VA any](w *SlidingWindowedKStream[K, V], init func() VA, fn func(k K, v V, agg VA) VA, opts ...TableOption) *KTable[windowed.Key[K], VA] {
	named, mat, _ := tableOptions[K, VA](w.g.s.b, "Aggregate", opts)
	return slidingAggregate(w, "KSTREAM-AGGREGATE-", named, mat, nil, &slidingFolds[K, V, VA]{init: init, fn: fn})
}

// slidingFolds are what a sliding aggregation computes: init's aggregate (a reduce has none, and
// first makes a window's first value its aggregate), fn folding a value in.
type slidingFolds[K, V, VA any] struct {
	init  func() VA
	first func(K, V) VA
	fn    func(K, V, VA) VA
}

// slidingAggregate adds a sliding windowed aggregation: its window store (named, or generated from
// prefix), the repartition before it when the grouping needs one, and its processor node.
func slidingAggregate[K, V, VA any](w *SlidingWindowedKStream[K, V], prefix string, named Named, m Materialized[K, VA], vaDefault serde.Serde[VA],
	folds *slidingFolds[K, V, VA]) *KTable[windowed.Key[K], VA] {
	g, b := w.g, w.g.s.b
	store, name, ks, vas := aggregationOf(g, prefix, named, m, vaDefault)
	d := w.sw.TimeDifference()
	retention := 2*d + w.sw.Grace()
	if m.Retention != 0 {
		retention = m.Retention.Milliseconds()
	}
	if retention < 2*d+w.sw.Grace() {
		b.fail("the retention of the window store %q (%d ms) must be at least twice the time difference plus the grace period (2 × %d + %d ms)",
			store, retention, d, w.sw.Grace())
	}
	parent, in := g.input(store)
	n := b.add(&node{name: name, kind: processorNode}, parent)
	final := w.emit == OnWindowClose
	live := retention
	if final {
		live++ // Kafka Streams' time-ordered window store (see windowedAggregate)
	}
	b.windowStore(store, retention, live)
	// Through the record cache, unless CachingDisabled, when every update is handed on (the final
	// results are read from the store as they close, and written through).
	t := aggregateTable(b, n, windowedKeys(ks, d), vas, store, m.CachingDisabled || final, g.sourcesFrom(parent))
	if ks != nil {
		t.storeKs = windowStoreKeys(ks, d)
	}
	t.windows = &windowQuery{ks: ks, size: d}
	t.windowEnd, t.grace = func(k windowed.Key[K]) int64 { return k.Window.End }, w.sw.Grace()
	agg := &slidingAggregation[K, V, VA]{t: t, d: d, grace: w.sw.Grace(), folds: folds, ks: ks}
	n.onBuild = append(n.onBuild, func() {
		if ks != nil && vas != nil {
			agg.store = stream.Window(store, time.Duration(live)*time.Millisecond, ks, serde.Serde[stamped[VA]](newStampedSerde(store, vas)))
		}
		if t.cache != nil {
			// A window store key is the inner key, then the window's start (8 bytes) and a
			// sequence number (4): a fetch finds a key's cached windows by the inner key.
			t.cache.group = func(key string) string { return key[:len(key)-12] }
		}
	})
	if final {
		// Kafka Streams' bounds for sliding windows, whose ends are inclusive: from the last
		// emitted close time's window start to the last window that ended before the close time,
		// read every time (KStreamSlidingWindowAggregate's emitRange… and shouldRangeFetch).
		agg.final = newFinalEmitter(b, n, t, store, live, d, ks, vas, func(last, close int64) (lower, upper int64, fetch bool) {
			if last >= 0 {
				lower = max(0, last-d)
			}
			return lower, close - d - 1, true
		})
	}
	n.init = agg.start
	in.attach(agg.process)
	return t
}

// slidingAggregation is the processing of a sliding windowed aggregation (Kafka Streams'
// KStreamSlidingWindowAggregate over a store it can read backwards, emitting on every update).
type slidingAggregation[K, V, VA any] struct {
	t     *KTable[windowed.Key[K], VA]
	d     int64 // the time difference
	grace int64
	folds *slidingFolds[K, V, VA]
	store stream.WindowStore[K, stamped[VA]]
	times streamTimes
	// final emits each window once, when it closes (OnWindowClose); nil when every update is
	// handed on.
	final *finalEmitter[K, VA]
	ks    serde.Serde[K] // the inner keys', by which a key's cached windows are found
}

// start starts a task: its stream time unknown, its emit state from the processor metadata.
func (a *slidingAggregation[K, V, VA]) start(c *stream.Context) error {
	if err := a.times.start(c); err != nil {
		return err
	}
	if a.final != nil {
		a.final.start(c)
	}
	return nil
}

// slidingAgg is a window's aggregate as Kafka Streams' algorithm handles it: absent (null: a
// reduce's window before its first value), or a value with the largest timestamp of its records.
type slidingAgg[VA any] struct {
	v   VA
	has bool
	at  int64
}

// window is a window of the key, by start, with its aggregate.
type window[VA any] struct {
	start int64
	agg   slidingAgg[VA]
}

// slidingRecord is the record being aggregated and the time that closes windows.
type slidingRecord[K, V any] struct {
	c         *stream.Context
	k         K
	v         V
	ts, close int64
}

func (a *slidingAggregation[K, V, VA]) process(c *stream.Context, md meta, k K, v V) error {
	if md.nullKey || md.nullValue {
		c.Dropped()
		return nil // Kafka Streams skips a record without a key or value, and counts it as dropped
	}
	ts := recordTime(c, md).UnixMilli()
	observed := a.times.of(c.Task())
	*observed = max(*observed, ts)
	r := slidingRecord[K, V]{c: c, k: k, v: v, ts: ts, close: *observed - a.grace}
	if ts+a.d < r.close {
		c.Dropped() // Kafka Streams logs and counts a record too late for its windows, and skips it
		return nil
	}
	if ts < a.d {
		return a.processEarly(r) // Kafka Streams emits no final results after an early record
	}
	if err := a.processReverse(r); err != nil || a.final == nil {
		return err
	}
	return a.final.emit(c, md, r.close)
}

// fetch is the key's windows starting in [from, to], in order of their start: the store's, with
// the record cache's entries of the task over them (a cached window replaces the stored one,
// whatever its age), as Kafka Streams' caching window store merges them.
func (a *slidingAggregation[K, V, VA]) fetch(r slidingRecord[K, V], from, to int64) ([]window[VA], error) {
	var stored []timedWindow[VA]
	err := a.store.Fetch(r.c, r.k, from, to, func(start int64, s stamped[VA]) bool {
		stored = append(stored, timedWindow[VA]{w: windowed.Window{Start: start, End: start + a.d}, v: s.v, at: s.at})
		return true
	})
	if err == nil && a.t.cached() {
		stored, err = cachedOver(r.c, a.t, a.ks, r.k, stored,
			func(w windowed.Window) bool { return w.Start >= from && w.Start <= to },
			func(x, y windowed.Window) int { return cmp.Compare(x.Start, y.Start) })
	}
	if err != nil {
		return nil, err
	}
	out := make([]window[VA], len(stored))
	for i, tw := range stored {
		out[i] = window[VA]{start: tw.w.Start, agg: slidingAgg[VA]{v: tw.v, has: true, at: tw.at.UnixMilli()}}
	}
	return out, nil
}

// initial is a new window's aggregate before the record: init's, stamped with the record's time
// (a reduce has none).
func (a *slidingAggregation[K, V, VA]) initial(ts int64) slidingAgg[VA] {
	if a.folds.init == nil {
		return slidingAgg[VA]{}
	}
	return slidingAgg[VA]{v: a.folds.init(), has: true, at: ts}
}

// processReverse handles a record at or after the time difference: it walks the key's windows from
// the latest start back, adding the record to the windows that hold it, then creates the windows
// it makes (Kafka Streams' processReverse).
func (a *slidingAggregation[K, V, VA]) processReverse(r slidingRecord[K, V]) error {
	wins, err := a.fetch(r, max(0, r.ts-2*a.d), r.ts+1)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var leftAgg, rightAgg *slidingAgg[VA]
	leftCreated, rightCreated := false, false
	var prev *int64
walk:
	for i := len(wins) - 1; i >= 0; i-- {
		w := wins[i]
		starts[w.start] = true
		end := w.start + a.d
		switch {
		case w.start == r.ts+1:
			rightCreated = true
		case end > r.ts:
			if rightAgg == nil {
				rightAgg = &wins[i].agg
			}
			if err := a.update(r, w.start, w.agg); err != nil {
				return err
			}
		case end == r.ts:
			leftCreated = true
			if err := a.update(r, w.start, w.agg); err != nil {
				return err
			}
			if w.agg.at >= r.ts {
				return nil // a record at the same time made every window already
			}
			at := w.agg.at
			prev = &at
		default: // end < r.ts: the window of the previous record
			leftAgg = &wins[i].agg
			at := w.agg.at
			prev = &at
			break walk
		}
	}
	return a.createWindows(r, starts, rightAgg, leftAgg, leftCreated, rightCreated, prev)
}

// processEarly handles a record before the time difference, whose left window would start before
// the epoch: it goes in the window [0, difference] instead (Kafka Streams' processEarly).
func (a *slidingAggregation[K, V, VA]) processEarly(r slidingRecord[K, V]) error {
	wins, err := a.fetch(r, 0, r.ts+1)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var combined *window[VA]
	var rightAgg *slidingAgg[VA]
	rightCreated := false
	var prev *int64
	for i, w := range wins {
		starts[w.start] = true
		switch {
		case w.start == 0:
			combined = &wins[i]
			if w.agg.at < r.ts {
				at := w.agg.at
				prev = &at
			}
		case w.start <= r.ts:
			rightAgg = &wins[i].agg
			if err := a.update(r, w.start, w.agg); err != nil {
				return err
			}
		case w.start == r.ts+1:
			rightCreated = true
		default:
			return fmt.Errorf("dsl: a sliding window starting at %d found for a record at %d", w.start, r.ts)
		}
	}
	if rightAgg == nil && combined != nil && combined.agg.at > r.ts {
		rightAgg = &combined.agg
	}
	if !rightCreated && rightAgg != nil && rightAgg.at > r.ts {
		if err := a.createRight(r, *rightAgg); err != nil {
			return err
		}
	}
	if prev != nil && !starts[*prev+1] {
		if err := a.update(r, *prev+1, a.initial(r.ts)); err != nil {
			return err
		}
	}
	if combined == nil {
		return a.update(r, 0, a.initial(r.ts))
	}
	return a.update(r, 0, combined.agg)
}

// createWindows creates the windows a record makes that do not exist yet: the previous record's
// right window when the record falls in it, the record's left window (ending at it), and its right
// window when a later record falls in it (Kafka Streams' createWindows).
func (a *slidingAggregation[K, V, VA]) createWindows(r slidingRecord[K, V], starts map[int64]bool, rightAgg, leftAgg *slidingAgg[VA],
	leftCreated, rightCreated bool, prev *int64) error {
	if prev != nil {
		if start := *prev + 1; !starts[start] && start+a.d >= r.ts {
			if err := a.update(r, start, a.initial(r.ts)); err != nil {
				return err
			}
		}
	}
	if !leftCreated {
		cur := a.initial(r.ts)
		if prev != nil && r.ts-a.d <= *prev {
			cur = slidingAgg[VA]{v: leftAgg.v, has: leftAgg.has, at: r.ts}
		}
		if err := a.update(r, r.ts-a.d, cur); err != nil {
			return err
		}
	}
	if !rightCreated && rightAgg != nil && rightAgg.at > r.ts {
		return a.createRight(r, *rightAgg)
	}
	return nil
}

// createRight creates the record's right window, starting just after it, with the aggregate of the
// later records it holds.
func (a *slidingAggregation[K, V, VA]) createRight(r slidingRecord[K, V], agg slidingAgg[VA]) error {
	return a.write(r, r.ts+1, change[VA]{new: agg.v, hasNew: agg.has}, agg.at)
}

// update adds the record to the window starting at start, whose aggregate is cur, unless the
// window closed (then the record is counted as dropped for it).
func (a *slidingAggregation[K, V, VA]) update(r slidingRecord[K, V], start int64, cur slidingAgg[VA]) error {
	if start+a.d < r.close {
		r.c.Dropped()
		return nil
	}
	ch := change[VA]{hasNew: true, old: cur.v, hasOld: cur.has}
	at := r.ts
	if cur.has {
		ch.new = a.folds.fn(r.k, r.v, cur.v)
		at = max(r.ts, cur.at)
	} else {
		ch.new = a.folds.first(r.k, r.v)
	}
	return a.write(r, start, ch, at)
}

// write keeps the window's new aggregate, stamped at, and hands the update on.
func (a *slidingAggregation[K, V, VA]) write(r slidingRecord[K, V], start int64, ch change[VA], at int64) error {
	wk := windowed.Key[K]{Key: r.k, Window: windowed.Window{Start: start, End: start + a.d}}
	when := time.UnixMilli(at)
	if err := a.t.write(r.c, meta{}, wk, ch.new, ch.hasNew, when); err != nil {
		return err
	}
	if a.final != nil {
		return nil // handed on when the window closes
	}
	if !a.t.sendOld {
		ch.old, ch.hasOld = *new(VA), false
	}
	return a.t.forward(r.c, meta{at: when}, wk, ch)
}
