package dsl

import (
	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/stream"
)

// Void is the output type of a processor that forwards nothing: a global store's (Kafka Streams'
// Processor<K, V, Void, Void> given to addGlobalStore).
type Void struct{}

// AddGlobalStore adds a global store named store, kept by p from every partition of topic (Kafka
// Streams' StreamsBuilder.addGlobalStore): every process of the application holds the whole store,
// outside the group's tasks, and every processor of the program reads it with stream.Context.Store
// or stream.KeyValue without naming it (Process must not name it). Only p writes it. The store is a
// plain key-value store, as AddStore's, with no changelog (the topic is one).
//
// Each record of topic is decoded with c's serdes and handed to p. Before the application joins its
// group the runtime reads the topic to its end and hands every record with a key to p (Kafka
// Streams 4.4 restores a store added this way through its processor, skipping records without a
// key); afterwards every record reaches p, one without a key too (NullKey). A record that does not
// decode follows deserialization.exception.handler; one p fails on stops the application unless
// processing.exception.handler.global.enabled and LogAndContinue say to skip it. p can neither
// forward (Forward returns stream.ErrGlobalContext; Kafka Streams' global processor has no node to
// forward to) nor schedule punctuations. If p is a ProcessorInit, its Init runs once as the global
// stores open. The nodes are named as Kafka Streams names them: c.Name+"-source" and c.Name, or
// KSTREAM-SOURCE-<n> and KTABLE-SOURCE-<n>; their node group is numbered among the subtopologies and
// left out of the heartbeat, as a global table's.
func AddGlobalStore[K, V any](b *Builder, store, topic string, c Consumed[K, V], p Processor[K, V, Void, Void]) {
	ks, vs := orDefault(c.Key), orDefault(c.Value)
	switch {
	case store == "":
		b.fail("AddGlobalStore(%q) needs a store name", topic)
	case topic == "":
		b.fail("AddGlobalStore(%q) needs a topic", store)
	case p == nil:
		b.fail("AddGlobalStore(%q) needs a processor", store)
	case ks == nil || vs == nil:
		b.fail("AddGlobalStore(%q) needs Consumed serdes for %s and %s", store, typeName[K](), typeName[V]())
	}
	if _, ok := b.stores[store]; ok {
		b.fail("the store %q was added twice", store)
	}
	if b.stores == nil {
		b.stores = map[string]bool{}
	}
	b.stores[store] = true
	if b.globals == nil {
		b.globals = map[string]bool{}
	}
	b.globals[store] = true

	sourceName := b.newName("KSTREAM-SOURCE-")
	if c.Name != "" {
		sourceName = c.Name + "-source"
	}
	source := b.add(&node{name: sourceName, kind: sourceNode, topic: topic, global: true})
	n := b.add(&node{name: b.nameOr(c.Name, "KTABLE-SOURCE-"), kind: processorNode, global: true, stores: []string{store}}, source)
	if p == nil || ks == nil || vs == nil {
		return
	}
	if in, ok := p.(ProcessorInit[Void, Void]); ok {
		n.init = func(sc *stream.Context) error { return in.Init(ProcessorContext[Void, Void]{Context: sc}) }
	}
	in := newFanout[K, V](b)
	decoded := sourceEntry(in, ks, vs)
	source.entry = func(sc *stream.Context, r *stream.Record) error {
		if r.Key == nil && streamhook.Restoring(sc) {
			return nil // Kafka Streams' restore hands the processor only records with a key
		}
		return decoded(sc, r)
	}
	in.attach(func(sc *stream.Context, m meta, k K, v V) error {
		r := Record[K, V]{Key: k, Value: v, Timestamp: recordTime(sc, m), Headers: m.headersOf(sc), NullKey: m.nullKey, NullValue: m.nullValue}
		return p.Process(ProcessorContext[Void, Void]{Context: sc}, r)
	})
}
