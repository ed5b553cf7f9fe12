package dsl

import (
	"cmp"
	"sync"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// SessionWindowedKStream is a grouped stream whose aggregations keep one result per key and session
// of activity (Kafka Streams' SessionWindowedKStream): Count, Reduce and SessionAggregate make a
// table keyed by windowed.Key (the window is the session, both ends included), kept in a session
// store whose changelog Kafka Streams reads.
type SessionWindowedKStream[K, V any] struct {
	g    *KGroupedStream[K, V]
	sw   windowed.SessionWindows
	emit EmitStrategy
}

// SessionWindowedBy groups the records of g into sessions (Kafka Streams' windowedBy(SessionWindows)):
// a key's records at most the inactivity gap apart form one session. Invalid sessions are a program
// error.
func SessionWindowedBy[K, V any](g *KGroupedStream[K, V], sw windowed.SessionWindows) *SessionWindowedKStream[K, V] {
	if err := sw.Validate(); err != nil {
		g.s.b.fail("SessionWindowedBy: %w", err)
	}
	return &SessionWindowedKStream[K, V]{g: g, sw: sw}
}

// Emit sets when the aggregations of w hand their results on (Kafka Streams'
// SessionWindowedKStream.emitStrategy): OnWindowUpdate (the default) hands on every update, a merged
// session's removal too; OnWindowClose hands on each session once, with its final aggregate, once
// the stream time is past its end plus the gap and the grace. Emitting final results, the sessions
// stay out of the record cache, as in Kafka Streams.
func (w *SessionWindowedKStream[K, V]) Emit(e EmitStrategy) *SessionWindowedKStream[K, V] {
	checkEmit(w.g.s.b, e)
	w.emit = e
	return w
}

// Count counts the records of each key's sessions (Kafka Streams' count), a record with a null value
// included; merged sessions add their counts. opts: Named, and Materialized[K, int64] (its Retention
// keeps sessions longer than the gap and grace).
func (w *SessionWindowedKStream[K, V]) Count(opts ...TableOption) *KTable[windowed.Key[K], int64] {
	named, mat, materialized := tableOptions[K, int64](w.g.s.b, "Count", opts)
	if materialized && mat.Name == "" {
		// Kafka Streams' count(Materialized) takes a store name it never uses, for compatibility.
		w.g.s.b.newStoreName("KSTREAM-AGGREGATE-")
	}
	return sessionAggregate(w, "KSTREAM-AGGREGATE-", named, mat, serde.Int64, &sessionFolds[K, V, int64]{
		init:  func() int64 { return 0 },
		fn:    func(_ K, _ V, n int64) int64 { return n + 1 },
		merge: func(_ K, a, b int64) int64 { return a + b },
	})
}

// Reduce combines the values of each key's sessions with fn (Kafka Streams' reduce): a session's
// first value is its aggregate as it is, and merged sessions are combined in the order of their end
// (fn(earlier, later)). opts: Named and Materialized[K, V].
func (w *SessionWindowedKStream[K, V]) Reduce(fn func(agg, v V) V, opts ...TableOption) *KTable[windowed.Key[K], V] {
	named, mat, _ := tableOptions[K, V](w.g.s.b, "Reduce", opts)
	return sessionAggregate(w, "KSTREAM-REDUCE-", named, mat, w.g.vs, &sessionFolds[K, V, V]{
		fn:     func(_ K, v V, agg V) V { return fn(agg, v) },
		merge:  func(_ K, a, b V) V { return fn(a, b) },
		first:  func(_ K, v V) V { return v },
		reduce: true,
	})
}

// SessionAggregate folds the values of each key's sessions into an aggregate of type VA, starting
// from init, and merges the aggregates of sessions a record joins with merger (Kafka Streams'
// aggregate on a SessionWindowedKStream): merger(k, a, b) folds b, the next session in the order of
// their end, into a, which starts as init(). opts: Named and Materialized[K, VA].
func SessionAggregate[K, V, VA any](w *SessionWindowedKStream[K, V], init func() VA, fn func(k K, v V, agg VA) VA,
	merger func(k K, a, b VA) VA, opts ...TableOption) *KTable[windowed.Key[K], VA] {
	named, mat, _ := tableOptions[K, VA](w.g.s.b, "Aggregate", opts)
	return sessionAggregate(w, "KSTREAM-AGGREGATE-", named, mat, nil, &sessionFolds[K, V, VA]{init: init, fn: fn, merge: merger})
}

// sessionFolds are what a session aggregation computes: init's aggregate (a reduce has none, and
// first makes a session's first value its aggregate), fn folding a value in, merge folding a
// session's aggregate in.
type sessionFolds[K, V, VA any] struct {
	init   func() VA
	first  func(K, V) VA
	fn     func(K, V, VA) VA
	merge  func(K, VA, VA) VA
	reduce bool
}

// sessionAggregate adds a session aggregation: its session store (named, or generated from prefix),
// the repartition before it when the grouping needs one, and its processor node.
func sessionAggregate[K, V, VA any](w *SessionWindowedKStream[K, V], prefix string, named Named, m Materialized[K, VA], vaDefault serde.Serde[VA],
	folds *sessionFolds[K, V, VA]) *KTable[windowed.Key[K], VA] {
	g, b := w.g, w.g.s.b
	store, name, ks, vas := aggregationOf(g, prefix, named, m, vaDefault)
	retention := w.sw.Gap() + w.sw.Grace()
	if m.Retention != 0 {
		retention = m.Retention.Milliseconds()
	}
	if retention < w.sw.Gap()+w.sw.Grace() {
		b.fail("the retention of the session store %q (%d ms) must be at least its inactivity gap plus its grace period (%d + %d ms)",
			store, retention, w.sw.Gap(), w.sw.Grace())
	}
	parent, in := g.input(store)
	n := b.add(&node{name: name, kind: processorNode, stores: []string{store}}, parent)
	final := w.emit == OnWindowClose
	decl := stream.Session[[]byte, []byte](store, time.Duration(retention)*time.Millisecond, nil, nil)
	if final {
		// Kafka Streams keeps the sessions of an aggregation that emits final results in its
		// time-ordered session store, which expires them by whole intervals of their ends.
		decl = decl.TimeOrdered()
	}
	b.declare(store, storeKind{
		decl:        decl,
		headersDecl: decl.WithHeaders(),
		changelog:   func(n topology.Names) topology.TopicInfo { return n.WindowedChangelog(store, retention) },
	})
	var sks serde.Serde[windowed.Key[K]]
	if ks != nil {
		sks = windowed.SessionKeySerde(ks)
	}
	// The table's store is a session store of plain values (Kafka Streams' session stores keep no
	// timestamp), through the record cache unless CachingDisabled (see sessionCache).
	t := &KTable[windowed.Key[K], VA]{b: b, n: n, out: newFanout[windowed.Key[K], change[VA]](b), ks: sks, vs: vas,
		sources: g.sourcesFrom(parent), store: store, storeKs: sks}
	t.enableOld = func(bool) bool {
		t.sendOld = true
		return true
	}
	t.windowEnd, t.grace = func(k windowed.Key[K]) int64 { return k.Window.End }, w.sw.Gap()+w.sw.Grace()
	t.windows = &windowQuery{ks: ks}
	if ks == nil || vas == nil {
		b.fail("the session store %q of %s needs serdes for %s and %s (Materialized)", store, name, typeName[K](), typeName[VA]())
	}
	agg := &sessionAggregation[K, V, VA]{t: t, sw: w.sw, folds: folds, isNil: nilCheck[VA](), ks: ks}
	if final {
		agg.final = &sessionEmitter[K, VA]{emitGate: emitGate{store: store}, t: t}
	}
	n.onBuild = append(n.onBuild, func() {
		agg.store = stream.Session(store, time.Duration(retention)*time.Millisecond, ks, vas)
		if final {
			agg.store = agg.store.TimeOrdered()
			agg.final.sessions = agg.store
		}
		ps := newPlainSerde(store, vas)
		t.kv = stream.KeyValue(store, sks, serde.Serde[stamped[VA]](ps))
		if !m.CachingDisabled && !final {
			t.cache = sessionCache(b.rc(), t, ps)
			n.flushers = append(n.flushers, flusher{flush: t.cache.flush, discard: t.cache.discard})
		}
	})
	n.init = func(c *stream.Context) error {
		if agg.final != nil {
			agg.final.start(c)
		}
		return agg.times.start(c)
	}
	in.attach(agg.process)
	return t
}

// sessionCache is the record cache of a session table (Kafka Streams' CachingSessionStore): its
// entries are found by their inner key too, which a find of the key's sessions reads with the store
// (sessionAggregation.find), and an update is handed on when written with its session's end as
// its timestamp, with the headers of the record that made it in the DEFAULT store format and none
// in the HEADERS format (Kafka Streams' SessionCacheFlushListener and its WithHeader form; the
// store's changelog record takes the record's own timestamp, as uncached).
func sessionCache[K, VA any](rc *recordCache, t *KTable[windowed.Key[K], VA], ps stampedSerde[VA]) *tableCache[windowed.Key[K], VA] {
	return &tableCache[windowed.Key[K], VA]{rc: rc, t: t, ss: ps,
		// A session key is the inner key, then the session's end and start (8 bytes each).
		group: func(key string) string { return key[:len(key)-16] },
		flushMeta: func(e *entry[windowed.Key[K], VA]) meta {
			m := meta{at: time.UnixMilli(e.k.Window.End)}
			m.ownHeaders = rc.headers.Load()
			return m
		},
	}
}

// sessionAggregation is the processing of a session aggregation (Kafka Streams'
// KStreamSessionWindowAggregate, emitting on every update).
type sessionAggregation[K, V, VA any] struct {
	t     *KTable[windowed.Key[K], VA]
	sw    windowed.SessionWindows
	folds *sessionFolds[K, V, VA]
	store stream.SessionStore[K, VA]
	times streamTimes
	isNil func(VA) bool  // VA's nil test, if it has one
	ks    serde.Serde[K] // the inner keys', by which a key's cached sessions are found
	// final emits each session once, when it closes (OnWindowClose); nil when every update is
	// handed on.
	final *sessionEmitter[K, VA]
}

// find calls fn with k's sessions that end at earliestEnd or later and start at latestStart or
// earlier, in the order of their end, then start: the store's, with the record cache's entries of
// the task over them (a cached session replaces the stored one of its window, a cached deletion
// hides it, and cached sessions are not held to the store's retention), as Kafka Streams' caching
// session store merges them.
func (a *sessionAggregation[K, V, VA]) find(c *stream.Context, k K, earliestEnd, latestStart int64, fn func(windowed.Window, VA)) error {
	if !a.t.cached() {
		return a.store.FindSessions(c, k, earliestEnd, latestStart, func(w windowed.Window, v VA) bool {
			fn(w, v)
			return true
		})
	}
	var stored []timedWindow[VA]
	if err := a.store.FindSessions(c, k, earliestEnd, latestStart, func(w windowed.Window, v VA) bool {
		stored = append(stored, timedWindow[VA]{w: w, v: v})
		return true
	}); err != nil {
		return err
	}
	all, err := cachedOver(c, a.t, a.ks, k, stored,
		func(w windowed.Window) bool { return w.End >= earliestEnd && w.Start <= latestStart },
		func(x, y windowed.Window) int {
			return cmp.Or(cmp.Compare(x.End, y.End), cmp.Compare(x.Start, y.Start))
		})
	for _, s := range all {
		fn(s.w, s.v)
	}
	return err
}

func (a *sessionAggregation[K, V, VA]) process(c *stream.Context, md meta, k K, v V) error {
	if md.nullKey {
		c.Dropped()
		return nil // Kafka Streams skips a record without a key, and counts it as dropped
	}
	ts := recordTime(c, md).UnixMilli()
	observed := a.times.of(c.Task())
	*observed = max(*observed, ts)
	closeTime := *observed - a.sw.Grace() - a.sw.Gap()
	type session struct {
		w windowed.Window
		v VA
	}
	var merged []session
	var agg VA
	has := !a.folds.reduce
	if has {
		agg = a.folds.init()
	}
	start := windowed.Window{Start: ts, End: ts}
	mw := start
	err := a.find(c, k, ts-a.sw.Gap(), ts+a.sw.Gap(), func(w windowed.Window, sv VA) {
		merged = append(merged, session{w, sv})
		if has {
			agg = a.folds.merge(k, agg, sv)
		} else {
			agg, has = sv, true
		}
		mw = windowed.Window{Start: min(mw.Start, w.Start), End: max(mw.End, w.End)}
	})
	if err != nil {
		return err
	}
	if mw.End < closeTime {
		c.Dropped() // Kafka Streams logs and counts a record too late for its session, and skips it
		return a.emitFinal(c, md, closeTime)
	}
	if mw != start {
		for _, s := range merged {
			sk := windowed.Key[K]{Key: k, Window: s.w}
			var none VA
			if err := a.t.write(c, md, sk, none, false, recordTime(c, md)); err != nil {
				return err
			}
			if a.final != nil {
				continue // nothing is handed on before the session closes
			}
			ch := change[VA]{}
			if a.t.sendOld {
				ch.old, ch.hasOld = s.v, true
			}
			if err := a.t.forward(c, sessionMeta(s.w), sk, ch); err != nil {
				return err
			}
		}
	}
	var ch change[VA]
	if has {
		ch.new = a.folds.fn(k, v, agg)
	} else {
		ch.new = a.folds.first(k, v) // a reduce's first value
	}
	// A reduce whose first value is null has a null aggregate, and so has an aggregator returning the
	// nil of its type: Kafka Streams writes (deletes) and hands the null on.
	ch.hasNew = (has || !md.nullValue) && (a.isNil == nil || !a.isNil(ch.new))
	sk := windowed.Key[K]{Key: k, Window: mw}
	if err := a.t.write(c, md, sk, ch.new, ch.hasNew, recordTime(c, md)); err != nil {
		return err
	}
	if a.final != nil {
		return a.emitFinal(c, md, closeTime)
	}
	return a.t.forward(c, sessionMeta(mw), sk, ch)
}

// emitFinal emits the sessions closed by closeTime, when the aggregation emits final results
// (Kafka Streams' maybeForwardFinalResult, after every record with a key, too late or not).
func (a *sessionAggregation[K, V, VA]) emitFinal(c *stream.Context, md meta, closeTime int64) error {
	if a.final == nil {
		return nil
	}
	return a.final.emit(c, md, closeTime)
}

// sessionMeta is the record context of a session's update: its end as the timestamp, and no
// headers (Kafka Streams' session aggregation forwards a new record, without the input's headers).
func sessionMeta(w windowed.Window) meta {
	return meta{at: time.UnixMilli(w.End), ownHeaders: true}
}

// streamTimes are each task's stream time as one processor saw it (the largest timestamp of its
// records), -1 before its first, as a *int64 by tasks.ID; a task's starts over when the task starts
// (Init), as a Kafka Streams processor is created with its task. A sync.Map: the processor is
// shared by the stream threads, each writing its own tasks' entries.
type streamTimes struct{ m sync.Map }

func (s *streamTimes) start(c *stream.Context) error {
	t := int64(-1)
	s.m.Store(c.Task(), &t)
	return nil
}

// of is the task's stream time, to be moved by the caller (the task's thread).
func (s *streamTimes) of(id tasks.ID) *int64 {
	if p, ok := s.m.Load(id); ok {
		return p.(*int64)
	}
	t := int64(-1)
	p, _ := s.m.LoadOrStore(id, &t)
	return p.(*int64)
}
