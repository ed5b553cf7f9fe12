package dsl

import (
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// KTable is a changelog stream: the latest value of each key (Kafka Streams' KTable), here the
// result of an aggregation, kept in its store.
type KTable[K, V any] struct {
	b     *Builder
	n     *node
	out   *fanout[K, V]
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	store string
}

// StoreName is the name of the table's store, for interactive queries (stream.App.Store).
func (t *KTable[K, V]) StoreName() string { return t.store }

// ToStream is the stream of the table's updates (Kafka Streams' toStream).
func (t *KTable[K, V]) ToStream(named ...Named) *KStream[K, V] {
	n := t.b.add(&node{name: t.b.nameOr(string(first(named)), "KTABLE-TOSTREAM-"), kind: processorNode}, t.n)
	s := &KStream[K, V]{b: t.b, n: n, out: &fanout[K, V]{}, ks: t.ks, vs: t.vs}
	t.out.to = append(t.out.to, func(c *stream.Context, m meta, k K, v V) error { return s.out.emit(c, m, k, v) })
	return s
}
