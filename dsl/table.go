package dsl

import (
	"fmt"

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
	// sources are the source nodes the table comes from (Kafka Streams' subTopologySourceNodes).
	sources []*node
	// unkept is the store name Kafka Streams generated for a table it keeps only when an operation
	// needs its old values (GroupTableBy): an unnamed ToTable's.
	unkept string
	// changes hands each update with the value it replaced, to the operations that need both
	// (GroupTableBy); a table that keeps no store has none to give.
	changes *fanout[K, change[V]]
}

// change is a table's update of one key: the new value and the one it replaced (absent: null).
type change[V any] struct {
	new, old       V
	hasNew, hasOld bool
}

// StoreName is the name of the table's store, for interactive queries (stream.App.Store).
func (t *KTable[K, V]) StoreName() string { return t.store }

// ToStream is the stream of the table's updates (Kafka Streams' toStream).
func (t *KTable[K, V]) ToStream(named ...Named) *KStream[K, V] {
	n := t.b.add(&node{name: t.b.nameOr(string(first(named)), "KTABLE-TOSTREAM-"), kind: processorNode}, t.n)
	s := &KStream[K, V]{b: t.b, n: n, out: &fanout[K, V]{}, ks: t.ks, vs: t.vs, sources: t.sources}
	t.out.to = append(t.out.to, func(c *stream.Context, m meta, k K, v V) error { return s.out.emit(c, m, k, v) })
	return s
}

// ToTable reads the stream as a table (Kafka Streams' toTable): each record is its key's latest
// value, a null value deletes it. The table is kept in a store only when m names one; after a key
// change the stream goes through a repartition topic first.
func (s *KStream[K, V]) ToTable(opts ...TableOption) *KTable[K, V] {
	b := s.b
	named, m, _ := tableOptions[K, V](b, "ToTable", opts)
	name := b.nameOr(string(named), "KSTREAM-TOTABLE-")
	store := m.Name
	unkept := ""
	if store == "" {
		unkept = b.newStoreName("KSTREAM-TOTABLE-") // kept only if an operation needs old values
	}
	ks, vs := m.Key, m.Value
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	parent, in := s.n, s.out
	if s.rekeyed {
		if ks == nil || vs == nil {
			b.fail("the repartition before ToTable %q needs serdes for %s and %s", name, typeName[K](), typeName[V]())
		}
		sink, source := b.repartition(name, 0, s.n)
		s.out.to = append(s.out.to, sendTo(sink, ks, vs))
		in = &fanout[K, V]{}
		source.entry = sourceEntry(in, ks, vs)
		parent = source
	}
	n := b.add(&node{name: name, kind: processorNode}, parent)
	sources := s.sources
	if parent != s.n {
		sources = []*node{parent}
	}
	t := &KTable[K, V]{b: b, n: n, out: &fanout[K, V]{}, ks: ks, vs: vs, store: store, unkept: unkept, changes: &fanout[K, change[V]]{}, sources: sources}
	if store != "" {
		n.stores = []string{store}
		if ks == nil || vs == nil {
			b.fail("the store %q needs Materialized serdes for %s and %s", store, typeName[K](), typeName[V]())
		}
	}
	in.to = append(in.to, t.update)
	return t
}

// update is a table source's processing (Kafka Streams' KTableSource): a record with a null key is
// skipped; the value is k's latest (a null one deletes it), kept and handed on.
func (t *KTable[K, V]) update(c *stream.Context, md meta, k K, v V) error {
	if md.nullKey {
		return nil
	}
	if err := t.keep(c, md, k, v); err != nil {
		return err
	}
	return t.out.emit(c, md, k, v)
}

// keep writes the table's latest value of k to its store, if it has one (a null value deletes it),
// and hands the update with the value it replaced to the operations that need both.
func (t *KTable[K, V]) keep(c *stream.Context, md meta, k K, v V) error {
	if t.store == "" {
		return nil
	}
	kb, err := t.ks.Encode(k)
	if err != nil {
		return fmt.Errorf("dsl: encoding a key for store %s: %w", t.store, err)
	}
	st := c.Store(t.store)
	ch := change[V]{new: v, hasNew: !md.nullValue}
	if len(t.changes.to) > 0 {
		old, ok, err := st.Get(kb)
		if err != nil {
			return err
		}
		if ok {
			_, ob, err := splitTimestamp(t.store, old)
			if err != nil {
				return err
			}
			if ch.old, err = t.vs.Decode(ob); err != nil {
				return fmt.Errorf("dsl: decoding a value of store %s: %w", t.store, err)
			}
			ch.hasOld = true
		}
	}
	if md.nullValue {
		err = st.Delete(kb)
	} else {
		var vb []byte
		if vb, err = t.vs.Encode(v); err != nil {
			return fmt.Errorf("dsl: encoding a value for store %s: %w", t.store, err)
		}
		err = st.Put(kb, withTimestamp(recordTime(c, md), vb))
	}
	if err != nil || len(t.changes.to) == 0 || (!ch.hasNew && !ch.hasOld) {
		return err
	}
	return t.changes.emit(c, md, k, ch)
}

// derived adds a table operation's node below t and the table it makes, kept in a store when a
// Materialized names one.
func derived[K, V, VR any](t *KTable[K, V], op, prefix string, vr serde.Serde[VR], opts []TableOption) *KTable[K, VR] {
	b := t.b
	named, m, materialized := tableOptions[K, VR](b, op, opts)
	// Kafka Streams keeps the result only in a store the user named; an unnamed Materialized takes
	// a number before the node's, for compatibility.
	store := m.Name
	if materialized && store == "" {
		b.newStoreName(prefix)
	}
	name := b.nameOr(string(named), prefix)
	ks, vs := m.Key, m.Value
	if ks == nil {
		ks = t.ks
	}
	if vs == nil {
		vs = vr
	}
	n := b.add(&node{name: name, kind: processorNode}, t.n)
	if store != "" {
		n.stores = []string{store}
		if ks == nil || vs == nil {
			b.fail("the store %q needs Materialized serdes for %s and %s", store, typeName[K](), typeName[VR]())
		}
	}
	return &KTable[K, VR]{b: b, n: n, out: &fanout[K, VR]{}, ks: ks, vs: vs, store: store, changes: &fanout[K, change[VR]]{}, sources: t.sources}
}

// Filter keeps the keys whose latest value pred accepts (Kafka Streams' KTable.filter): an update
// pred rejects becomes a deletion downstream. opts: Named, and Materialized to keep the result in a
// store.
func (t *KTable[K, V]) Filter(pred func(K, V) bool, opts ...TableOption) *KTable[K, V] {
	return t.filter(pred, false, "Filter", opts)
}

// FilterNot keeps the keys whose latest value pred rejects (Kafka Streams' KTable.filterNot).
func (t *KTable[K, V]) FilterNot(pred func(K, V) bool, opts ...TableOption) *KTable[K, V] {
	return t.filter(pred, true, "FilterNot", opts)
}

func (t *KTable[K, V]) filter(pred func(K, V) bool, not bool, op string, opts []TableOption) *KTable[K, V] {
	f := derived(t, op, "KTABLE-FILTER-", t.vs, opts)
	t.out.to = append(t.out.to, func(c *stream.Context, md meta, k K, v V) error {
		if !md.nullValue && pred(k, v) == not {
			md.nullValue, v = true, *new(V)
		}
		if err := f.keep(c, md, k, v); err != nil {
			return err
		}
		return f.out.emit(c, md, k, v)
	})
	return f
}

// MapTableValues changes each latest value with fn (Kafka Streams' KTable.mapValues); a deletion
// stays one. opts: Named, and Materialized[K, VR] to keep the result in a store.
func MapTableValues[K, V, VR any](t *KTable[K, V], fn func(K, V) VR, opts ...TableOption) *KTable[K, VR] {
	f := derived(t, "MapTableValues", "KTABLE-MAPVALUES-", defaultSerde[VR](), opts)
	t.out.to = append(t.out.to, func(c *stream.Context, md meta, k K, v V) error {
		var vr VR
		if !md.nullValue {
			vr = fn(k, v)
		}
		if err := f.keep(c, md, k, vr); err != nil {
			return err
		}
		return f.out.emit(c, md, k, vr)
	})
	return f
}

// Table reads topic as a table (Kafka Streams' StreamsBuilder.table): each record is its key's
// latest value, a null value deletes it, a null key is skipped. The table is kept in a store only
// when m names one (its changelog is <application.id>-<name>-changelog; the source topic is not
// reused as the changelog, as with topology.optimization none), or when an operation needs its old
// values (GroupTableBy), under the generated name <topic>-STATE-STORE-<n>.
func Table[K, V any](b *Builder, topic string, c Consumed[K, V], m ...Materialized[K, V]) *KTable[K, V] {
	var mat Materialized[K, V]
	if len(m) > 0 {
		mat = m[0]
	}
	ks, vs := orDefault(c.Key), orDefault(c.Value)
	if mat.Key != nil {
		ks = mat.Key
	}
	if mat.Value != nil {
		vs = mat.Value
	}
	if topic == "" {
		b.fail("Table needs a topic")
	}
	if ks == nil || vs == nil {
		b.fail("Table(%q) needs Consumed serdes for %s and %s", topic, typeName[K](), typeName[V]())
	}
	store, unkept := mat.Name, ""
	if store == "" {
		unkept = b.newStoreName(topic + "-")
	}
	sourceName := b.newName("KSTREAM-SOURCE-")
	if c.Name != "" {
		sourceName = c.Name + "-source"
	}
	source := b.add(&node{name: sourceName, kind: sourceNode, topic: topic})
	n := b.add(&node{name: b.nameOr(c.Name, "KTABLE-SOURCE-"), kind: processorNode}, source)
	t := &KTable[K, V]{b: b, n: n, out: &fanout[K, V]{}, ks: ks, vs: vs, store: store, unkept: unkept,
		changes: &fanout[K, change[V]]{}, sources: []*node{source}}
	if store != "" {
		n.stores = []string{store}
	}
	in := &fanout[K, V]{}
	source.entry = sourceEntry(in, ks, vs)
	in.to = append(in.to, t.update)
	return t
}
