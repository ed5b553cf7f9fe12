package dsl

import (
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
	g  *KGroupedStream[K, V]
	sw windowed.SessionWindows
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
	decl := stream.Session[[]byte, []byte](store, time.Duration(retention)*time.Millisecond, nil, nil)
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
	// timestamp), read and written directly: session aggregations do not go through the record cache
	// (see docs/dsl.md).
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
	agg := &sessionAggregation[K, V, VA]{t: t, sw: w.sw, folds: folds, isNil: nilCheck[VA]()}
	n.onBuild = append(n.onBuild, func() {
		agg.store = stream.Session(store, time.Duration(retention)*time.Millisecond, ks, vas)
		t.kv = stream.KeyValue(store, sks, serde.Serde[stamped[VA]](plainStamped[VA]{vas}))
	})
	n.init = agg.times.start
	in.attach(agg.process)
	return t
}

// plainStamped keeps a stamped value as its value alone (a session store's), read back without a
// timestamp.
type plainStamped[V any] struct{ inner serde.Serde[V] }

func (s plainStamped[V]) Encode(x stamped[V]) ([]byte, error) { return s.inner.Encode(x.v) }
func (s plainStamped[V]) Decode(b []byte) (stamped[V], error) {
	v, err := s.inner.Decode(b)
	return stamped[V]{v: v}, err
}

// sessionAggregation is the processing of a session aggregation (Kafka Streams'
// KStreamSessionWindowAggregate, emitting on every update).
type sessionAggregation[K, V, VA any] struct {
	t     *KTable[windowed.Key[K], VA]
	sw    windowed.SessionWindows
	folds *sessionFolds[K, V, VA]
	store stream.SessionStore[K, VA]
	times streamTimes
	isNil func(VA) bool // VA's nil test, if it has one
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
	err := a.store.FindSessions(c, k, ts-a.sw.Gap(), ts+a.sw.Gap(), func(w windowed.Window, sv VA) bool {
		merged = append(merged, session{w, sv})
		if has {
			agg = a.folds.merge(k, agg, sv)
		} else {
			agg, has = sv, true
		}
		mw = windowed.Window{Start: min(mw.Start, w.Start), End: max(mw.End, w.End)}
		return true
	})
	if err != nil {
		return err
	}
	if mw.End < closeTime {
		c.Dropped() // Kafka Streams logs and counts a record too late for its session, and skips it
		return nil
	}
	if mw != start {
		for _, s := range merged {
			sk := windowed.Key[K]{Key: k, Window: s.w}
			if err := a.t.kv.Delete(c, sk); err != nil {
				return err
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
	if ch.hasNew {
		err = a.t.kv.Put(c, sk, stamped[VA]{v: ch.new})
	} else {
		err = a.t.kv.Delete(c, sk)
	}
	if err != nil {
		return err
	}
	return a.t.forward(c, sessionMeta(mw), sk, ch)
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
