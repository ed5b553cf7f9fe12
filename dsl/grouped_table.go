package dsl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// KGroupedTable is a table regrouped by a new key for an aggregation (Kafka Streams'
// KGroupedTable): each update of the table removes its old value from the old key's aggregate and
// adds its new value to the new key's.
type KGroupedTable[K, V any] struct {
	b       *Builder
	sel     *node
	changes *fanout[K, change[V]]
	ks      serde.Serde[K]
	vs      serde.Serde[V]
	name    string // Grouped.as: names the repartition topic
	// source and fromRep are the repartition a named grouping made for its first aggregation: later
	// ones read it too (Kafka Streams reuses a named repartition node).
	source  *node
	fromRep *fanout[K, change[V]]
}

// GroupTableBy regroups table t by the key and value fn selects from each row (Kafka Streams'
// KTable.groupBy): the aggregation repartitions first, its records carrying each update's new and
// old value as Kafka Streams' Change format does. The old values come from the store of t or of the
// table it derives from: a source table without one is kept in a store under its generated name, as
// Kafka Streams does. A selected key or value that is nil (of a type that has nil) is skipped.
func GroupTableBy[K, V, KR, VR any](t *KTable[K, V], fn func(K, V) (KR, VR), g ...Grouped[KR, VR]) *KGroupedTable[KR, VR] {
	b := t.b
	var gr Grouped[KR, VR]
	if len(g) > 0 {
		gr = g[0]
	}
	t.enableOld(true)
	sel := b.add(&node{name: b.nameOr(gr.Name, "KTABLE-SELECT-"), kind: processorNode}, t.n)
	ks, vs := gr.Key, gr.Value
	if ks == nil {
		ks = defaultSerde[KR]()
	}
	if vs == nil {
		vs = defaultSerde[VR]()
	}
	nilKey, nilValue := nilCheck[KR](), nilCheck[VR]()
	pair := func(k K, v V, has bool) (KR, VR, bool) {
		if !has {
			return *new(KR), *new(VR), false
		}
		kr, vr := fn(k, v)
		return kr, vr, (nilKey == nil || !nilKey(kr)) && (nilValue == nil || !nilValue(vr))
	}
	out := newFanout[KR, change[VR]](b)
	t.out.attach(func(c *stream.Context, md meta, k K, ch change[V]) error {
		if t.outOfOrder(ch) {
			return nil // Kafka Streams' KTableRepartitionMap skips it, uncounted
		}
		nk, nv, hasNew := pair(k, ch.new, ch.hasNew)
		ok, ov, hasOld := pair(k, ch.old, ch.hasOld)
		// As Kafka Streams' KTableRepartitionMap: one record when the key stays, else the removal
		// (old) first, then the addition (new).
		if hasNew && hasOld && sameKey(ks, ok, nk) {
			return out.emit(c, md, nk, change[VR]{new: nv, old: ov, hasNew: true, hasOld: true})
		}
		if hasOld {
			if err := out.emit(c, md, ok, change[VR]{old: ov, hasOld: true}); err != nil {
				return err
			}
		}
		if hasNew {
			return out.emit(c, md, nk, change[VR]{new: nv, hasNew: true})
		}
		return nil
	})
	return &KGroupedTable[KR, VR]{b: b, sel: sel, changes: out, ks: ks, vs: vs, name: gr.Name}
}

// sameKey says whether a and b are the same key: the same bytes.
func sameKey[K any](ks serde.Serde[K], a, b K) bool {
	if ks == nil {
		return false
	}
	ab, err1 := ks.Encode(a)
	bb, err2 := ks.Encode(b)
	return err1 == nil && err2 == nil && string(ab) == string(bb)
}

// Count counts the rows of each new key (Kafka Streams' KGroupedTable.count). opts: Named (the
// node, and the repartition's <name>-sink and <name>-source) and Materialized[K, int64].
func (g *KGroupedTable[K, V]) Count(opts ...TableOption) *KTable[K, int64] {
	named, mat, _ := tableOptions[K, int64](g.b, "Count", opts)
	return tableAggregate(g, "KTABLE-AGGREGATE-", named, mat, serde.Int64,
		func(K, V) int64 { return 1 },
		func(_ K, _ V, agg int64) int64 { return agg + 1 },
		func(_ K, _ V, agg int64) int64 { return agg - 1 })
}

// Reduce combines the values of each new key with adder, and takes a row's old value out with
// subtractor (Kafka Streams' KGroupedTable.reduce). opts: Named and Materialized[K, V].
func (g *KGroupedTable[K, V]) Reduce(adder, subtractor func(agg, v V) V, opts ...TableOption) *KTable[K, V] {
	named, mat, _ := tableOptions[K, V](g.b, "Reduce", opts)
	return tableAggregate(g, "KTABLE-REDUCE-", named, mat, g.vs, func(_ K, v V) V { return v },
		func(_ K, v V, agg V) V { return adder(agg, v) },
		func(_ K, v V, agg V) V { return subtractor(agg, v) })
}

// AggregateTable folds the values of each new key into an aggregate with adder, and takes a row's
// old value out with subtractor (Kafka Streams' KGroupedTable.aggregate). opts: Named and
// Materialized[K, VA].
func AggregateTable[K, V, VA any](g *KGroupedTable[K, V], init func() VA, adder, subtractor func(k K, v V, agg VA) VA, opts ...TableOption) *KTable[K, VA] {
	named, mat, _ := tableOptions[K, VA](g.b, "AggregateTable", opts)
	return tableAggregate(g, "KTABLE-AGGREGATE-", named, mat, nil, func(k K, v V) VA { return adder(k, v, init()) }, adder, subtractor)
}

// errChangeFormat is a repartition record that is not in Kafka Streams' Change format.
var errChangeFormat = errors.New("not a Kafka Streams Change (new and old value) record")

// encodeChange writes ch in Kafka Streams' Change format: the value and a flag byte (0: old only,
// 1: new only), or both as a varint of the new value's length, the new value, the old value and 2.
func encodeChange[V any](vs serde.Serde[V], ch change[V]) ([]byte, error) {
	var nb, ob []byte
	var err error
	if ch.hasNew {
		if nb, err = vs.Encode(ch.new); err != nil {
			return nil, err
		}
	}
	if ch.hasOld {
		if ob, err = vs.Encode(ch.old); err != nil {
			return nil, err
		}
	}
	// Appending to a value's bytes capped at their length copies them first: the serde's own
	// buffer is never written.
	switch {
	case ch.hasNew && ch.hasOld:
		out := binary.AppendVarint(nil, int64(len(nb)))
		return append(append(append(out, nb...), ob...), 2), nil
	case ch.hasNew:
		return append(nb[:len(nb):len(nb)], 1), nil
	default:
		return append(ob[:len(ob):len(ob)], 0), nil
	}
}

// decodeChange reads a record in Kafka Streams' Change format.
func decodeChange[V any](vs serde.Serde[V], b []byte) (change[V], error) {
	var ch change[V]
	if len(b) == 0 {
		return ch, errChangeFormat
	}
	flag, body := b[len(b)-1], b[:len(b)-1]
	var nb, ob []byte
	switch flag {
	case 0:
		ob, ch.hasOld = body, true
	case 1:
		nb, ch.hasNew = body, true
	case 2:
		n, w := binary.Varint(body)
		if w <= 0 || n < 0 || int64(len(body)-w) < n {
			return ch, errChangeFormat
		}
		nb, ob, ch.hasNew, ch.hasOld = body[w:w+int(n)], body[w+int(n):], true, true
	default:
		return ch, errChangeFormat
	}
	var err error
	if ch.hasNew {
		if ch.new, err = vs.Decode(nb); err != nil {
			return ch, err
		}
	}
	if ch.hasOld {
		if ch.old, err = vs.Decode(ob); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// tableAggregate adds a table aggregation: its store, the repartition it reads (the sink in the
// selecting subtopology, the source in its own; a named grouping's first aggregation makes it and
// the others read it), and its node. start is the aggregate of a key's first value (the value itself
// for a reduce).
func tableAggregate[K, V, VA any](g *KGroupedTable[K, V], prefix string, named Named, m Materialized[K, VA], vaDefault serde.Serde[VA],
	start func(K, V) VA, adder, subtractor func(K, V, VA) VA) *KTable[K, VA] {
	b := g.b
	store := m.Name
	if store == "" {
		store = b.newStoreName("KTABLE-AGGREGATE-") // a table reduce's store is named so too
	}
	topic := store
	if g.name != "" {
		topic = g.name
	}
	topic += "-repartition"
	// The sink's and source's numbers are taken even when a named repartition is reused.
	sinkName, sourceName := b.suffixedOr(string(named), "-sink", "KSTREAM-SINK-"), b.suffixedOr(string(named), "-source", "KSTREAM-SOURCE-")
	name := b.nameOr(string(named), prefix)
	ks, vas := m.Key, m.Value
	if ks == nil {
		ks = g.ks
	}
	if vas == nil {
		vas = vaDefault
	}
	if vas == nil {
		vas = defaultSerde[VA]()
	}
	if g.ks == nil || g.vs == nil {
		b.fail("the repartition before the table aggregation %q needs Grouped serdes for %s and %s", store, typeName[K](), typeName[V]())
	}
	if g.source == nil || g.name == "" {
		sink := b.add(&node{name: sinkName, kind: sinkNode, topic: topic, internal: true}, g.sel)
		source := b.add(&node{name: sourceName, kind: sourceNode, topic: topic, internal: true, writer: sink})
		gks, gvs := g.ks, g.vs
		g.changes.attach(func(c *stream.Context, md meta, k K, ch change[V]) error {
			kb, err := gks.Encode(k)
			if err != nil {
				return fmt.Errorf("dsl: encoding a key for %s: %w", sink.sendTo, err)
			}
			vb, err := encodeChange(gvs, ch)
			if err != nil {
				return fmt.Errorf("dsl: encoding a value for %s: %w", sink.sendTo, err)
			}
			if !md.at.IsZero() {
				return c.SendAt(sink.sendTo, md.at, kb, vb, c.Headers()...)
			}
			return c.Send(sink.sendTo, kb, vb, c.Headers()...)
		})
		from := newFanout[K, change[V]](b)
		source.entry = func(c *stream.Context, r *stream.Record) error {
			if r.Key == nil || r.Value == nil {
				return stream.UndecodableRecord(fmt.Errorf("a table aggregation's repartition record without a key or value"))
			}
			k, err := gks.Decode(r.Key)
			if err != nil {
				return stream.UndecodableRecord(fmt.Errorf("key: %w", err))
			}
			ch, err := decodeChange(gvs, r.Value)
			if err != nil {
				return stream.UndecodableRecord(fmt.Errorf("value: %w", err))
			}
			return from.emit(c, meta{}, k, ch)
		}
		g.source, g.fromRep = source, from
	}
	n := b.add(&node{name: name, kind: processorNode}, g.source)
	t := aggregateTable(b, n, ks, vas, store, m.CachingDisabled, []*node{g.source})
	g.fromRep.attach(func(c *stream.Context, _ meta, k K, ch change[V]) error {
		return tableUpdate(t, c, k, ch, start, adder, subtractor)
	})
	return t
}

// tableUpdate applies one regrouped change to the aggregate of k (Kafka Streams' KTableAggregate
// and KTableReduce): the old value out, then the new one in (start is the aggregate of a first
// value); the result carries the later of the record's and the aggregate's timestamps, as there. A
// key left with no aggregate is deleted, and the deletion handed on.
func tableUpdate[K, V, VA any](t *KTable[K, VA], c *stream.Context, k K, ch change[V],
	start func(K, V) VA, adder, subtractor func(K, V, VA) VA) error {
	old, ok, err := t.read(c, k)
	if err != nil {
		return err
	}
	at := c.Timestamp()
	var out change[VA]
	if ok {
		out.new, out.hasNew = old.v, true
		if (ch.hasOld || ch.hasNew) && old.at.After(at) {
			at = old.at
		}
		if t.sendOld {
			out.old, out.hasOld = old.v, true
		}
	}
	if ch.hasOld && ok {
		out.new = subtractor(k, ch.old, out.new)
	}
	if ch.hasNew {
		if out.hasNew {
			out.new = adder(k, ch.new, out.new)
		} else {
			out.new, out.hasNew = start(k, ch.new), true
		}
	}
	if err := t.write(c, meta{}, k, out.new, out.hasNew, at); err != nil {
		return err
	}
	return t.forward(c, meta{at: at}, k, out)
}
