package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// KTable is a changelog stream: the latest value of each key (Kafka Streams' KTable). Its updates
// travel as changes, each with the value it replaced when an operation below needs it (Kafka
// Streams' Change and sendOldValues): a filter then drops an update that is out of its table before
// and after, and a regrouping takes the old value out of its old group.
type KTable[K, V any] struct {
	b     *Builder
	n     *node
	out   *fanout[K, change[V]]
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	store string
	// storeKs is the serde of the store's keys when they are not ks's (a windowed table keeps its
	// windows by Kafka Streams' window store keys, and writes them to topics with ks).
	storeKs serde.Serde[K]
	kv      stream.KeyValueStore[K, stamped[V]] // the store, typed (set by Build)
	// ver is the table's versioned store (Materialized.HistoryRetention), nil for another.
	ver *stream.VersionedStore[K, V]
	// versioned: the table's updates follow versioned semantics (KIP-914), as Kafka Streams decides
	// it: a table kept in a versioned store, and a filter or mapping of one that no Materialized
	// breaks. An operation below such a table that must not see an update out of order (a join of
	// tables, a regrouping) drops it.
	versioned bool
	// asOf reads a derived table without a store of its own as of a time, through a versioned table
	// it derives from (nil when it does not): how a stream joined with it finds the value valid at
	// each record's time.
	asOf  func() *asOfGetter[K, V]
	cache *tableCache[K, V] // the store's record cache (set by Build), if it has one
	// sources are the source nodes the table comes from (Kafka Streams' subTopologySourceNodes).
	sources []*node
	// sendOld: each update carries the value it replaced (Kafka Streams' sendOldValues).
	sendOld bool
	// quietFlush: the record cache's flush writes the store and hands nothing on (an aggregation
	// that emits final results, whose updates Kafka Streams' cache does not forward either).
	quietFlush bool
	// enableOld has the table send old values if it can, and says whether it does (Kafka Streams'
	// enableSendingOldValues): a source table can when it has a store, or once force gives it one.
	enableOld func(force bool) bool
	// materialize keeps a source table without a store in the store it was given a name for, when a
	// join reads it (Kafka Streams' KTableSource.materialize).
	materialize func()
	// windowEnd is the end of a windowed table's key's window, and grace its windows' grace period in
	// ms (set by a windowed aggregation, kept by the tables derived from it): what
	// Suppress(UntilWindowCloses) holds updates by.
	windowEnd func(K) int64
	grace     int64
	// windows is how a windowed aggregation's table is queried (query.go): its inner key serde, its
	// windows' size (0: sessions). Nil for another table.
	windows *windowQuery
	// getter reads a derived table without a store of its own through its parent (join.go).
	getter func() ([]string, func(*stream.Context, K) (stamped[V], bool, error))
}

// change is a table's update of one key: the new value and the one it replaced (absent: null).
type change[V any] struct {
	new, old       V
	hasNew, hasOld bool
	// notLatest: an update of a versioned table older than its key's latest version (Kafka Streams'
	// Change.isLatest false), kept in the history; the old value is the latest one.
	notLatest bool
}

// StoreName is the name of the table's store, for interactive queries (stream.App.Store); empty
// when the table keeps none.
func (t *KTable[K, V]) StoreName() string { return t.store }

// keepIn keeps the table in store (its node's store; the typed access set once built), with the
// record cache unless uncached (Materialized.CachingDisabled) or the application's
// statestore.cache.max.bytes is 0.
func (t *KTable[K, V]) keepIn(store string, op string, uncached bool) {
	t.store = store
	n, b := t.n, t.b
	n.stores = []string{store}
	if t.ks == nil || t.vs == nil {
		b.fail("the store %q of %s needs serdes for %s and %s (Materialized)", store, op, typeName[K](), typeName[V]())
		return
	}
	n.onBuild = append(n.onBuild, func() {
		ss := newStampedSerde(store, t.vs)
		t.kv = stream.KeyValue(store, t.storeKeys(), serde.Serde[stamped[V]](ss))
		if !uncached {
			tc := &tableCache[K, V]{rc: b.rc(), t: t, ss: ss}
			t.cache = tc
			n.flushers = append(n.flushers, flusher{flush: tc.flush, discard: tc.discard})
		}
	})
}

// storeKeys is the serde of the table's store keys.
func (t *KTable[K, V]) storeKeys() serde.Serde[K] {
	if t.storeKs != nil {
		return t.storeKs
	}
	return t.ks
}

// keepVersioned keeps the table in the versioned store named store with history retention h: no
// record cache (Kafka Streams caches no versioned store).
func (t *KTable[K, V]) keepVersioned(store string, h time.Duration, op string) {
	b := t.b
	t.store = store
	t.n.stores = []string{store}
	if t.ks == nil || t.vs == nil {
		b.fail("the versioned store %q of %s needs serdes for %s and %s", store, op, typeName[K](), typeName[V]())
		return
	}
	if h < 0 {
		b.fail("the versioned store %q of %s: a negative history retention %v", store, op, h)
	}
	ver := stream.Versioned(store, h, t.ks, t.vs)
	t.ver = &ver
	b.declare(store, storeKind{decl: ver, changelog: func(n topology.Names) topology.TopicInfo {
		return n.VersionedChangelog(store, h.Milliseconds())
	}})
}

// outOfOrder says whether an operation below t that keeps to versioned semantics drops update ch
// (Kafka Streams' table-table joins, foreign-key joins and groupBy with useVersionedSemantics): an
// update older than its key's latest version, from a table with versioned semantics.
func (t *KTable[K, V]) outOfOrder(ch change[V]) bool { return t.versioned && ch.notLatest }

// droppedOutOfOrder is outOfOrder for a join, which counts what it drops (Kafka Streams' join
// processors skip it and record it as dropped).
func (t *KTable[K, V]) droppedOutOfOrder(c *stream.Context, ch change[V]) bool {
	if t.outOfOrder(ch) {
		c.Dropped()
		return true
	}
	return false
}

// read is k's latest value: through the record cache if the table has one, else from the store.
func (t *KTable[K, V]) read(c *stream.Context, k K) (stamped[V], bool, error) {
	if t.ver != nil {
		v, at, ok, err := t.ver.Get(c, k)
		return stamped[V]{v: v, at: at}, ok, err
	}
	if t.cached() {
		return t.cache.get(c, k)
	}
	return t.kv.Get(c, k)
}

// write keeps k's new value v (has false: deletes k) with timestamp at: in the record cache if the
// table has one (with the headers of md's record, which its flush hands on), else in the store.
func (t *KTable[K, V]) write(c *stream.Context, md meta, k K, v V, has bool, at time.Time) error {
	switch {
	case t.cached():
		return t.cache.put(c, md, k, v, has, at)
	case has:
		return t.kv.Put(c, k, stamped[V]{v: v, at: at})
	}
	return t.kv.Delete(c, k)
}

// forward hands an update of k on, unless the record cache holds it (its flush hands it on).
func (t *KTable[K, V]) forward(c *stream.Context, md meta, k K, ch change[V]) error {
	if t.cached() {
		return nil
	}
	return t.out.emit(c, md, k, ch)
}

// cached says whether the table's updates go through the record cache.
func (t *KTable[K, V]) cached() bool { return t.cache != nil && t.cache.rc.on() }

// ToStream is the stream of the table's updates (Kafka Streams' toStream): a deletion is a record
// with a null value.
func (t *KTable[K, V]) ToStream(named ...Named) *KStream[K, V] {
	n := t.b.add(&node{name: t.b.nameOr(string(first(named)), "KTABLE-TOSTREAM-"), kind: processorNode}, t.n)
	s := &KStream[K, V]{b: t.b, n: n, out: newFanout[K, V](t.b), ks: t.ks, vs: t.vs, sources: t.sources}
	t.out.attach(func(c *stream.Context, m meta, k K, ch change[V]) error {
		m.nullValue = !ch.hasNew
		return s.out.emit(c, m, k, ch.new)
	})
	return s
}

// sourceTable makes the table a source table (Kafka Streams' KTableSource) reads: it has a store
// when one is named, else it gets the generated one (unkept) only when an operation needs its old
// values; in reads the records.
func sourceTable[K, V any](b *Builder, n *node, ks serde.Serde[K], vs serde.Serde[V], store, unkept string, uncached bool, sources []*node, in *fanout[K, V],
	versioned bool, history time.Duration) *KTable[K, V] {
	t := &KTable[K, V]{b: b, n: n, out: newFanout[K, change[V]](b), ks: ks, vs: vs, sources: sources}
	switch {
	case versioned:
		if store == "" {
			b.fail("%s: a versioned store (Materialized.HistoryRetention) needs a name", n.name)
		} else {
			t.keepVersioned(store, history, n.name)
			t.versioned = true
		}
	case store != "":
		t.keepIn(store, n.name, uncached)
	}
	t.materialize = func() { t.keepIn(unkept, n.name, uncached) }
	t.enableOld = func(force bool) bool {
		if t.store == "" {
			if !force {
				return false
			}
			t.materialize()
		}
		t.sendOld = true
		return true
	}
	in.attach(func(c *stream.Context, md meta, k K, v V) error {
		if md.nullKey {
			c.Dropped()
			return nil // Kafka Streams skips a table record without a key, and counts it as dropped
		}
		ch := change[V]{new: v, hasNew: !md.nullValue}
		md.nullValue = false
		if t.store == "" {
			return t.out.emit(c, md, k, ch)
		}
		if t.ver != nil {
			return versionedUpdate(t, c, md, k, ch)
		}
		if t.sendOld {
			old, ok, err := t.read(c, k)
			if err != nil {
				return err
			}
			ch.old, ch.hasOld = old.v, ok
		}
		if err := t.write(c, md, k, ch.new, ch.hasNew, recordTime(c, md)); err != nil {
			return err
		}
		return t.forward(c, md, k, ch)
	})
	return t
}

// versionedUpdate is a source table's update of k kept in its versioned store, as Kafka Streams'
// KTableSource writes one: at the record's time, with the latest value before it as the old one; a
// version too old for the store's history is neither kept nor handed on.
func versionedUpdate[K, V any](t *KTable[K, V], c *stream.Context, md meta, k K, ch change[V]) error {
	if t.sendOld {
		old, ok, err := t.read(c, k)
		if err != nil {
			return err
		}
		ch.old, ch.hasOld = old.v, ok
	}
	at := recordTime(c, md)
	var res stream.PutResult
	var err error
	if ch.hasNew {
		res, err = t.ver.Put(c, k, ch.new, at)
	} else {
		res, err = t.ver.Delete(c, k, at)
	}
	if err != nil || !res.Put {
		return err
	}
	ch.notLatest = !res.Latest
	return t.out.emit(c, md, k, ch)
}

// ToTable reads the stream as a table (Kafka Streams' toTable): each record is its key's latest
// value, a null value deletes it. The table is kept in a store only when m names one (or an
// operation needs its old values); after a key change the stream goes through a repartition topic
// first.
func (s *KStream[K, V]) ToTable(opts ...TableOption) *KTable[K, V] {
	b := s.b
	named, m, _ := tableOptions[K, V](b, "ToTable", opts)
	name := b.nameOr(string(named), "KSTREAM-TOTABLE-")
	unkept := ""
	if m.Name == "" {
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
		s.out.attach(repartitionTo(sink, ks, vs, nil))
		in = newFanout[K, V](b)
		source.entry = sourceEntry(in, ks, vs)
		parent = source
	}
	n := b.add(&node{name: name, kind: processorNode}, parent)
	sources := s.sources
	if parent != s.n {
		sources = []*node{parent}
	}
	on, h := m.versioned()
	return sourceTable(b, n, ks, vs, m.Name, unkept, m.CachingDisabled, sources, in, on, h)
}

// Table reads topic as a table (Kafka Streams' StreamsBuilder.table): each record is its key's
// latest value, a null value deletes it, a null key is skipped. The table is kept in a store only
// when m names one (its changelog is <application.id>-<name>-changelog; the source topic is not
// reused as the changelog, as with topology.optimization none), or when an operation needs its old
// values (GroupTableBy), under the generated name <topic>-STATE-STORE-<n>. The records are read, and
// kept, with c's serdes: m's are not used (as in Kafka Streams).
func Table[K, V any](b *Builder, topic string, c Consumed[K, V], m ...Materialized[K, V]) *KTable[K, V] {
	ts := newTableSource(b, "Table", topic, c, m, false)
	ts.source.entry = sourceEntry(ts.in, ts.ks, ts.vs)
	// Kafka Streams keeps the table with the Consumed serdes too: it overrides the Materialized ones.
	on, h := ts.mat.versioned()
	return sourceTable(b, ts.n, ts.ks, ts.vs, ts.mat.Name, ts.generated, ts.mat.CachingDisabled, []*node{ts.source}, ts.in, on, h)
}

// tableSource is what a table read from a topic starts with (Table, GlobalTable): its serdes (the
// Consumed ones), its Materialized, the store name generated when that names none, its source node
// and its KTABLE-SOURCE node, and what the source hands on.
type tableSource[K, V any] struct {
	ks        serde.Serde[K]
	vs        serde.Serde[V]
	mat       Materialized[K, V]
	generated string
	source, n *node
	in        *fanout[K, V]
}

// newTableSource adds the nodes of a table read from topic with Kafka Streams' names: the store's
// generated name takes its number first (when m names none), then the source's and the
// processor's (Consumed.Name gives <name>-source and <name>).
func newTableSource[K, V any](b *Builder, op, topic string, c Consumed[K, V], m []Materialized[K, V], global bool) tableSource[K, V] {
	ts := tableSource[K, V]{ks: orDefault(c.Key), vs: orDefault(c.Value)}
	if len(m) > 0 {
		ts.mat = m[0]
	}
	if topic == "" {
		b.fail("%s needs a topic", op)
	}
	if ts.ks == nil || ts.vs == nil {
		b.fail("%s(%q) needs Consumed serdes for %s and %s", op, topic, typeName[K](), typeName[V]())
	}
	if ts.mat.Name == "" {
		ts.generated = b.newStoreName(topic + "-")
	}
	sourceName := b.newName("KSTREAM-SOURCE-")
	if c.Name != "" {
		sourceName = c.Name + "-source"
	}
	ts.source = b.add(&node{name: sourceName, kind: sourceNode, topic: topic, global: global})
	ts.n = b.add(&node{name: b.nameOr(c.Name, "KTABLE-SOURCE-"), kind: processorNode, global: global}, ts.source)
	ts.in = newFanout[K, V](b)
	return ts
}

// derived adds a table operation's node below t and the table it makes (Kafka Streams' filter and
// mapValues), kept in a store when a Materialized names one. It sends old values when asked, if its
// store or t can give them.
func derived[K, V, VR any](t *KTable[K, V], op, prefix string, vr serde.Serde[VR], opts []TableOption) *KTable[K, VR] {
	b := t.b
	named, m, materialized := tableOptions[K, VR](b, op, opts)
	// Kafka Streams keeps the result only in a store the user named; an unnamed Materialized takes
	// a number before the node's, for compatibility.
	if materialized && m.Name == "" {
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
	// Any Materialized ends versioned semantics below, as Kafka Streams' maybeSetOutputVersioned
	// does: the result is not kept in a versioned store (even when the Materialized keeps none).
	f := &KTable[K, VR]{b: b, n: n, out: newFanout[K, change[VR]](b), ks: ks, vs: vs, sources: t.sources,
		windowEnd: t.windowEnd, grace: t.grace, versioned: t.versioned && !materialized}
	if m.Name != "" {
		f.keepIn(m.Name, op, m.CachingDisabled)
	}
	f.enableOld = func(force bool) bool {
		if f.store != "" || t.enableOld(force) {
			f.sendOld = true
		}
		return f.sendOld
	}
	return f
}

// emitDerived finishes a derived table's update of k: the old value from its store when it keeps
// one (else what compute made of the parent's), the store written, the change handed on. With old
// values sent, an update absent before and after is dropped when drop says so (Kafka Streams'
// filter does so, except below a table with versioned semantics).
func (f *KTable[K, V]) emitDerived(c *stream.Context, md meta, k K, ch change[V], drop bool) error {
	if !f.sendOld {
		ch.hasOld, ch.old = false, *new(V)
	} else if f.store != "" {
		old, ok, err := f.read(c, k)
		if err != nil {
			return err
		}
		ch.old, ch.hasOld = old.v, ok
	}
	if drop && f.sendOld && !ch.hasNew && !ch.hasOld {
		return nil
	}
	if f.store == "" {
		return f.out.emit(c, md, k, ch)
	}
	if err := f.write(c, md, k, ch.new, ch.hasNew, recordTime(c, md)); err != nil {
		return err
	}
	ch.notLatest = false // the latest in f's own store, as Kafka Streams' put there says
	return f.forward(c, md, k, ch)
}

// Filter keeps the keys whose latest value pred accepts (Kafka Streams' KTable.filter): an update
// pred rejects becomes a deletion downstream, or nothing when the key was not in the result before
// either (known when t sends old values). opts: Named, and Materialized to keep the result in a
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
	// Kafka Streams' filter sends old values whenever its parent can without a new store, to avoid
	// deletions of keys that were never in its result.
	f.sendOld = t.enableOld(false)
	derivedGetter(f, t, func(k K, v V) (V, bool) { return v, pred(k, v) != not })
	t.out.attach(func(c *stream.Context, md meta, k K, ch change[V]) error {
		if ch.hasNew && pred(k, ch.new) == not {
			ch.hasNew, ch.new = false, *new(V)
		}
		if ch.hasOld && pred(k, ch.old) == not {
			ch.hasOld, ch.old = false, *new(V)
		}
		return f.emitDerived(c, md, k, ch, !t.versioned)
	})
	return f
}

// MapTableValues changes each latest value with fn (Kafka Streams' KTable.mapValues); a deletion
// stays one, and a nil result of a type that has one (a pointer, a slice, a map) is a deletion.
// opts: Named, and Materialized[K, VR] to keep the result in a store.
func MapTableValues[K, V, VR any](t *KTable[K, V], fn func(K, V) VR, opts ...TableOption) *KTable[K, VR] {
	f := derived(t, "MapTableValues", "KTABLE-MAPVALUES-", defaultSerde[VR](), opts)
	isNil := nilCheck[VR]()
	mapped := func(k K, v V, has bool) (VR, bool) {
		if !has {
			return *new(VR), false
		}
		vr := fn(k, v)
		return vr, isNil == nil || !isNil(vr)
	}
	derivedGetter(f, t, func(k K, v V) (VR, bool) { return mapped(k, v, true) })
	t.out.attach(func(c *stream.Context, md meta, k K, ch change[V]) error {
		out := change[VR]{notLatest: ch.notLatest}
		out.new, out.hasNew = mapped(k, ch.new, ch.hasNew)
		if f.sendOld && f.store == "" {
			out.old, out.hasOld = mapped(k, ch.old, ch.hasOld)
		}
		return f.emitDerived(c, md, k, out, false)
	})
	return f
}
