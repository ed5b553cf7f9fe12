package dsl

import (
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// KGroupedStream is a stream grouped by key for an aggregation (Kafka Streams' KGroupedStream).
type KGroupedStream[K, V any] struct {
	s       *KStream[K, V]
	ks      serde.Serde[K]
	vs      serde.Serde[V]
	name    string // Grouped.as: names the repartition topic
	rekeyed bool   // the aggregation repartitions first
	// source and fromRep are the repartition a named grouping made for its first aggregation: later ones
	// read it too (Kafka Streams reuses a named repartition node).
	source  *node
	fromRep *fanout[K, V]
}

// GroupByKey groups the stream by its key (Kafka Streams' groupByKey); after a key change the
// aggregation repartitions first, through <application.id>-<g.Name>-repartition (or a name
// generated from the store's).
func (s *KStream[K, V]) GroupByKey(g ...Grouped[K, V]) *KGroupedStream[K, V] {
	var gr Grouped[K, V]
	if len(g) > 0 {
		gr = g[0]
	}
	return grouped(s, gr, s.rekeyed)
}

// GroupBy groups the stream by the key fn selects (Kafka Streams' groupBy): the aggregation
// repartitions first. g.Name names the key-selecting node and the repartition topic.
func GroupBy[K, V, KR any](s *KStream[K, V], fn func(K, V) KR, g ...Grouped[KR, V]) *KGroupedStream[KR, V] {
	var gr Grouped[KR, V]
	if len(g) > 0 {
		gr = g[0]
	}
	c := child(s, Named(gr.Name), "KSTREAM-KEY-SELECT-", defaultSerde[KR](), s.vs, true)
	s.out.attach(selectKey(c.out, fn))
	return grouped(c, gr, true)
}

func grouped[K, V any](s *KStream[K, V], g Grouped[K, V], rekeyed bool) *KGroupedStream[K, V] {
	ks, vs := g.Key, g.Value
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	return &KGroupedStream[K, V]{s: s, ks: ks, vs: vs, name: g.Name, rekeyed: rekeyed}
}

// input is where the aggregation named store reads the grouped records: the stream itself, or the
// repartition topic it writes first (named after the grouping, or after the store).
func (g *KGroupedStream[K, V]) input(store string) (*node, *fanout[K, V]) {
	if !g.rekeyed {
		return g.s.n, g.s.out
	}
	prefix := g.name
	if prefix == "" {
		prefix = store
	}
	b := g.s.b
	if g.ks == nil || g.vs == nil {
		b.fail("the repartition before aggregating into %q needs Grouped serdes for %s and %s", store, typeName[K](), typeName[V]())
	}
	if g.name != "" && g.source != nil {
		// Kafka Streams reuses the repartition of a named grouping; its three numbers are taken anyway.
		b.newName("KSTREAM-SINK-")
		b.newName("KSTREAM-FILTER-")
		b.newName("KSTREAM-SOURCE-")
		return g.source, g.fromRep
	}
	sink, source := b.repartition(prefix, 0, g.s.n)
	g.s.out.attach(repartitionTo(sink, g.ks, g.vs, nil))
	out := newFanout[K, V](b)
	source.entry = sourceEntry(out, g.ks, g.vs)
	g.source, g.fromRep = source, out
	return source, out
}

// sourcesFrom are the source nodes of what an aggregation reading parent makes: the repartition's
// source, or the grouped stream's sources.
func (g *KGroupedStream[K, V]) sourcesFrom(parent *node) []*node {
	if parent == g.s.n {
		return g.s.sources
	}
	return []*node{parent}
}

// Count counts the records of each key (Kafka Streams' count), in a store named by a
// Materialized[K, int64] or a generated one. opts: Named (the node) and Materialized.
func (g *KGroupedStream[K, V]) Count(opts ...TableOption) *KTable[K, int64] {
	named, mat, materialized := tableOptions[K, int64](g.s.b, "Count", opts)
	if materialized && mat.Name == "" {
		// Kafka Streams' count(Materialized) takes a store name it never uses, for compatibility.
		g.s.b.newStoreName("KSTREAM-AGGREGATE-")
	}
	return aggregate(g, "KSTREAM-AGGREGATE-", named, mat, serde.Int64, func() int64 { return 0 }, nil,
		func(_ K, _ V, n int64) int64 { return n + 1 })
}

// Reduce combines the values of each key with fn (Kafka Streams' reduce): the first value of a key
// is its aggregate as it is. opts: Named and Materialized[K, V].
func (g *KGroupedStream[K, V]) Reduce(fn func(agg, v V) V, opts ...TableOption) *KTable[K, V] {
	named, mat, _ := tableOptions[K, V](g.s.b, "Reduce", opts)
	return aggregate(g, "KSTREAM-REDUCE-", named, mat, g.vs, nil, func(_ K, v V) V { return v }, func(_ K, v V, agg V) V { return fn(agg, v) })
}

// Aggregate folds the values of each key into an aggregate of type VA, starting from init (Kafka
// Streams' aggregate). opts: Named and Materialized[K, VA].
func Aggregate[K, V, VA any](g *KGroupedStream[K, V], init func() VA, fn func(k K, v V, agg VA) VA, opts ...TableOption) *KTable[K, VA] {
	named, mat, _ := tableOptions[K, VA](g.s.b, "Aggregate", opts)
	return aggregate(g, "KSTREAM-AGGREGATE-", named, mat, nil, init, nil, fn)
}

// aggregate adds an aggregation: its store (named, or generated from prefix), the repartition
// before it when the grouping needs one, and its processor node (named, or generated).
func aggregate[K, V, VA any](g *KGroupedStream[K, V], prefix string, named Named, m Materialized[K, VA], vaDefault serde.Serde[VA],
	init func() VA, first func(K, V) VA, fn func(K, V, VA) VA) *KTable[K, VA] {
	b := g.s.b
	store, name, ks, vas := aggregationOf(g, prefix, named, m, vaDefault)
	parent, in := g.input(store)
	n := b.add(&node{name: name, kind: processorNode}, parent)
	t := aggregateTable(b, n, ks, vas, store, m.CachingDisabled, g.sourcesFrom(parent))
	in.attach(aggregating(t, init, first, fn))
	return t
}

// aggregationOf is what an aggregation of g is named and keeps its results with (Kafka Streams'
// MaterializedInternal over the grouping's serdes): its store, named or generated from prefix (which
// takes its number first), its node, named or generated, the key serde (m's, else the grouping's)
// and the aggregate's (m's, else vaDefault, else VA's default).
func aggregationOf[K, V, VA any](g *KGroupedStream[K, V], prefix string, named Named, m Materialized[K, VA], vaDefault serde.Serde[VA]) (
	store, name string, ks serde.Serde[K], vas serde.Serde[VA]) {
	b := g.s.b
	store = m.Name
	if store == "" {
		store = b.newStoreName(prefix)
	}
	name = b.nameOr(string(named), prefix)
	ks = m.Key
	if ks == nil {
		ks = g.ks
	}
	vas = m.Value
	if vas == nil {
		vas = vaDefault
	}
	if vas == nil {
		vas = defaultSerde[VA]()
	}
	return store, name, ks, vas
}

// aggregateTable is the table an aggregation keeps in store: it always sends old values when asked
// (Kafka Streams' aggregations do).
func aggregateTable[K, VA any](b *Builder, n *node, ks serde.Serde[K], vas serde.Serde[VA], store string, uncached bool, sources []*node) *KTable[K, VA] {
	t := &KTable[K, VA]{b: b, n: n, out: newFanout[K, change[VA]](b), ks: ks, vs: vas, sources: sources}
	t.keepIn(store, "the aggregation", uncached)
	t.enableOld = func(bool) bool {
		t.sendOld = true
		return true
	}
	return t
}

// aggregating is the processing of a stream aggregation into t's store (Kafka Streams'
// KStreamAggregate and KStreamReduce): a record with a null key or value is skipped; the first value
// of a key is folded into init's aggregate with fn, which is then the update's old value (a reduce
// has no init: its first value is first's result, with no old value).
func aggregating[K, V, VA any](t *KTable[K, VA], init func() VA, first func(K, V) VA, fn func(K, V, VA) VA) func(*stream.Context, meta, K, V) error {
	return func(c *stream.Context, md meta, k K, v V) error {
		if md.nullKey || md.nullValue {
			c.Dropped()
			return nil // Kafka Streams skips such records, and counts them as dropped
		}
		old, ok, err := t.read(c, k)
		if err != nil {
			return err
		}
		// The result carries the latest timestamp of the records aggregated (Kafka Streams').
		at := recordTime(c, md)
		var ch change[VA]
		switch {
		case ok:
			if old.at.After(at) {
				at = old.at
			}
			ch.old, ch.hasOld = old.v, true
			ch.new = fn(k, v, old.v)
		case first != nil:
			ch.new = first(k, v)
		default:
			ch.old, ch.hasOld = init(), true
			ch.new = fn(k, v, ch.old)
		}
		ch.hasNew = true
		if err := t.write(c, meta{}, k, ch.new, true, at); err != nil {
			return err
		}
		if !t.sendOld {
			ch.old, ch.hasOld = *new(VA), false
		}
		return t.forward(c, meta{at: at}, k, ch)
	}
}
