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
}

// GroupTableBy regroups table t by the key and value fn selects from each row (Kafka Streams'
// KTable.groupBy): the aggregation repartitions first, its records carrying each update's new and
// old value as Kafka Streams' Change format does. The table must be kept in a store (an aggregation's
// result, or a table a Materialized names; an unnamed ToTable is kept under its generated name, as
// Kafka Streams does), since the old values come from there.
func GroupTableBy[K, V, KR, VR any](t *KTable[K, V], fn func(K, V) (KR, VR), g ...Grouped[KR, VR]) *KGroupedTable[KR, VR] {
	b := t.b
	var gr Grouped[KR, VR]
	if len(g) > 0 {
		gr = g[0]
	}
	switch {
	case t.store != "":
	case t.unkept != "":
		t.store = t.unkept
		t.n.stores = []string{t.store}
		if t.ks == nil || t.vs == nil {
			b.fail("the store %q of the table GroupTableBy regroups needs serdes for %s and %s", t.store, typeName[K](), typeName[V]())
		}
	default:
		b.fail("GroupTableBy on the table of %s, which keeps no store: give the operation that makes it a Materialized with a name", t.n.name)
	}
	sel := b.add(&node{name: b.nameOr(gr.Name, "KTABLE-SELECT-"), kind: processorNode}, t.n)
	ks, vs := gr.Key, gr.Value
	if ks == nil {
		ks = defaultSerde[KR]()
	}
	if vs == nil {
		vs = defaultSerde[VR]()
	}
	out := &fanout[KR, change[VR]]{}
	t.changes.to = append(t.changes.to, func(c *stream.Context, md meta, k K, ch change[V]) error {
		var nk, ok KR
		var nv, ov VR
		if ch.hasNew {
			nk, nv = fn(k, ch.new)
		}
		if ch.hasOld {
			ok, ov = fn(k, ch.old)
		}
		// As Kafka Streams' KTableRepartitionMap: one record when the key stays, else the removal
		// (old) first, then the addition (new).
		if ch.hasNew && ch.hasOld && sameKey(ks, ok, nk) {
			return out.emit(c, md, nk, change[VR]{new: nv, old: ov, hasNew: true, hasOld: true})
		}
		if ch.hasOld {
			if err := out.emit(c, md, ok, change[VR]{old: ov, hasOld: true}); err != nil {
				return err
			}
		}
		if ch.hasNew {
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

// Count counts the rows of each new key (Kafka Streams' KGroupedTable.count).
func (g *KGroupedTable[K, V]) Count(m ...Materialized[K, int64]) *KTable[K, int64] {
	var mat Materialized[K, int64]
	if len(m) > 0 {
		mat = m[0]
	}
	return tableAggregate(g, "KTABLE-AGGREGATE-", mat, serde.Int64,
		func(K, V) int64 { return 1 },
		func(_ K, _ V, agg int64) int64 { return agg + 1 },
		func(_ K, _ V, agg int64) int64 { return agg - 1 })
}

// Reduce combines the values of each new key with adder, and takes a row's old value out with
// subtractor (Kafka Streams' KGroupedTable.reduce).
func (g *KGroupedTable[K, V]) Reduce(adder, subtractor func(agg, v V) V, m ...Materialized[K, V]) *KTable[K, V] {
	var mat Materialized[K, V]
	if len(m) > 0 {
		mat = m[0]
	}
	return tableAggregate(g, "KTABLE-REDUCE-", mat, g.vs, func(_ K, v V) V { return v },
		func(_ K, v V, agg V) V { return adder(agg, v) },
		func(_ K, v V, agg V) V { return subtractor(agg, v) })
}

// AggregateTable folds the values of each new key into an aggregate with adder, and takes a row's
// old value out with subtractor (Kafka Streams' KGroupedTable.aggregate).
func AggregateTable[K, V, VA any](g *KGroupedTable[K, V], init func() VA, adder, subtractor func(k K, v V, agg VA) VA, m ...Materialized[K, VA]) *KTable[K, VA] {
	var mat Materialized[K, VA]
	if len(m) > 0 {
		mat = m[0]
	}
	return tableAggregate(g, "KTABLE-AGGREGATE-", mat, nil, func(k K, v V) VA { return adder(k, v, init()) }, adder, subtractor)
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
// selecting subtopology, the source in its own), and its node. start is the aggregate of a key's
// first value (the value itself for a reduce).
func tableAggregate[K, V, VA any](g *KGroupedTable[K, V], prefix string, m Materialized[K, VA], vaDefault serde.Serde[VA],
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
	sinkName, sourceName, name := b.newName("KSTREAM-SINK-"), b.newName("KSTREAM-SOURCE-"), b.newName(prefix)
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
	if ks == nil || vas == nil {
		b.fail("the store %q needs Materialized serdes for %s and %s", store, typeName[K](), typeName[VA]())
	}
	sink := b.add(&node{name: sinkName, kind: sinkNode, topic: topic, internal: true}, g.sel)
	source := b.add(&node{name: sourceName, kind: sourceNode, topic: topic, internal: true})
	n := b.add(&node{name: name, kind: processorNode, stores: []string{store}}, source)
	t := &KTable[K, VA]{b: b, n: n, out: &fanout[K, VA]{}, ks: ks, vs: vas, store: store, changes: &fanout[K, change[VA]]{}, sources: []*node{source}}

	gks, gvs := g.ks, g.vs
	g.changes.to = append(g.changes.to, func(c *stream.Context, md meta, k K, ch change[V]) error {
		kb, err := gks.Encode(k)
		if err != nil {
			return fmt.Errorf("dsl: encoding a key for %s: %w", sink.sendTo, err)
		}
		vb, err := encodeChange(gvs, ch)
		if err != nil {
			return fmt.Errorf("dsl: encoding a value for %s: %w", sink.sendTo, err)
		}
		if !md.at.IsZero() {
			return c.SendAt(sink.sendTo, md.at, kb, vb)
		}
		return c.Send(sink.sendTo, kb, vb)
	})
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
		return tableUpdate(t, c, r.Key, k, ch, start, adder, subtractor)
	}
	return t
}

// tableUpdate applies one regrouped change to the aggregate of k (Kafka Streams' KTableAggregate
// and KTableReduce): the old value out, then the new one in (start is the aggregate of a first
// value); the result carries the later of the record's and the aggregate's timestamps, as there.
func tableUpdate[K, V, VA any](t *KTable[K, VA], c *stream.Context, kb []byte, k K, ch change[V],
	start func(K, V) VA, adder, subtractor func(K, V, VA) VA) error {
	st := c.Store(t.store)
	old, ok, err := st.Get(kb)
	if err != nil {
		return err
	}
	at := c.Timestamp()
	var agg, prev VA
	has := false
	if ok {
		oldAt, ob, err := splitTimestamp(t.store, old)
		if err != nil {
			return err
		}
		if prev, err = t.vs.Decode(ob); err != nil {
			return fmt.Errorf("dsl: decoding the aggregate of store %s: %w", t.store, err)
		}
		agg, has = prev, true
		if (ch.hasOld || ch.hasNew) && oldAt.After(at) {
			at = oldAt
		}
	}
	if ch.hasOld && has {
		agg = subtractor(k, ch.old, agg)
	}
	if ch.hasNew {
		if has {
			agg = adder(k, ch.new, agg)
		} else {
			agg, has = start(k, ch.new), true
		}
	}
	md := meta{at: at, nullValue: !has}
	if has {
		vb, err := t.vs.Encode(agg)
		if err != nil {
			return fmt.Errorf("dsl: encoding the aggregate of store %s: %w", t.store, err)
		}
		err = st.Put(kb, withTimestamp(at, vb))
		if err != nil {
			return err
		}
	} else if err := st.Delete(kb); err != nil {
		return err
	}
	if err := t.changes.emit(c, md, k, change[VA]{new: agg, old: prev, hasNew: has, hasOld: ok}); err != nil {
		return err
	}
	return t.out.emit(c, md, k, agg)
}
