package dsl

import (
	"github.com/streamsgroup/streamsgroup/serde"
)

// CogroupedKStream is several grouped streams of one key type aggregated into one store, each with
// its own aggregator (Kafka Streams' CogroupedKStream).
type CogroupedKStream[K, VA any] struct {
	b      *Builder
	ks     serde.Serde[K]
	inputs []cogroupInput[K, VA]
}

// cogroupInput is one grouped stream of a cogroup, its type of values hidden in closures.
type cogroupInput[K, VA any] struct {
	sources []*node
	rekeyed bool
	// prepare adds the repartition the input needs first, if it does (named after store unless its
	// grouping is named), and returns the node the input's aggregation reads from.
	prepare func(store string) *node
	// attach has the input's records aggregated into t with init, below the node prepare returned.
	attach func(t *KTable[K, VA], init func() VA)
}

// Cogroup starts a cogroup with g, whose values fn folds into the aggregate (Kafka Streams'
// KGroupedStream.cogroup).
func Cogroup[K, V, VA any](g *KGroupedStream[K, V], fn func(k K, v V, agg VA) VA) *CogroupedKStream[K, VA] {
	c := &CogroupedKStream[K, VA]{b: g.s.b, ks: g.ks}
	return CogroupWith(c, g, fn)
}

// CogroupWith adds g to the cogroup, its values folded into the aggregate with fn (Kafka Streams'
// CogroupedKStream.cogroup).
func CogroupWith[K, V, VA any](c *CogroupedKStream[K, VA], g *KGroupedStream[K, V], fn func(k K, v V, agg VA) VA) *CogroupedKStream[K, VA] {
	if g.s.b != c.b {
		c.b.fail("CogroupWith: the grouped streams come from two builders")
	}
	var parent *node
	var in *fanout[K, V]
	c.inputs = append(c.inputs, cogroupInput[K, VA]{
		sources: g.s.sources,
		rekeyed: g.rekeyed,
		prepare: func(store string) *node {
			parent, in = g.input(store)
			return parent
		},
		attach: func(t *KTable[K, VA], init func() VA) {
			in.attach(aggregating(t, init, nil, fn))
		},
	})
	return c
}

// Aggregate aggregates the cogroup's streams into one store (named by m, or a generated
// COGROUPKSTREAM-AGGREGATE-STATE-STORE-<n>), each record folded in by its stream's aggregator,
// starting from init (Kafka Streams' CogroupedKStream.aggregate). The streams must be copartitioned:
// Kafka Streams registers their source topics as a copartition group. A cogroup whose stream needs
// a repartition first is refused: Kafka Streams 4.4 registers that stream's own source topics in the
// group, in another subtopology than the aggregation, and then fails to build the topology it sends
// to a streams group.
func (c *CogroupedKStream[K, VA]) Aggregate(init func() VA, m ...Materialized[K, VA]) *KTable[K, VA] {
	b := c.b
	var mat Materialized[K, VA]
	if len(m) > 0 {
		mat = m[0]
	}
	store := mat.Name
	if store == "" {
		store = b.newStoreName("COGROUPKSTREAM-AGGREGATE-")
	}
	ks, vas := mat.Key, mat.Value
	if ks == nil {
		ks = c.ks
	}
	if vas == nil {
		vas = defaultSerde[VA]()
	}
	parents := make([]*node, len(c.inputs))
	var sides [][]*node
	for i, in := range c.inputs {
		parents[i] = in.prepare(store)
		if in.rekeyed {
			b.fail("the cogroup into %q has a stream that is repartitioned first: Kafka Streams 4.4 cannot build such a "+
				"program's topology for a streams group (its copartition group spans two subtopologies); group by key "+
				"after an explicit Repartition instead", store)
		}
		sides = append(sides, in.sources)
	}
	aggs := make([]*node, len(c.inputs))
	for i := range c.inputs {
		aggs[i] = b.add(&node{name: b.newName("COGROUPKSTREAM-AGGREGATE-"), kind: processorNode, stores: []string{store}}, parents[i])
	}
	merge := b.add(&node{name: b.newName("COGROUPKSTREAM-MERGE-"), kind: processorNode}, aggs...)
	// Kafka Streams gives a cogroup's table its merge node as its source node: a join with it is
	// copartitioned with none of the cogroup's topics.
	t := aggregateTable(b, merge, ks, vas, store, mat.CachingDisabled, []*node{merge})
	merge.stores = nil // the aggregating nodes keep the store, as Kafka Streams connects it
	for _, in := range c.inputs {
		in.attach(t, init)
	}
	// Kafka Streams registers the group even for a cogroup of one stream (a group of its topics).
	b.copartitions = append(b.copartitions, sides)
	return t
}
