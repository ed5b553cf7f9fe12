package dsl

import (
	"cmp"
	"encoding/binary"

	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/stream"
)

// GlobalKTable is a table every process of the application keeps whole (Kafka Streams'
// GlobalKTable): it reads every partition of its topic, outside the group's tasks, so a stream
// joined with it needs no co-partitioning and may look it up by any key (JoinGlobal). The runtime
// reads the topic to its end before the application joins its group, then keeps the table current
// as records come (see docs/dsl.md, Global tables).
type GlobalKTable[K, V any] struct {
	b *Builder
	t *KTable[K, V]
}

// GlobalTable reads topic as a global table (Kafka Streams' StreamsBuilder.globalTable): each
// record is its key's latest value, a null value deletes it, a record without a key is dropped.
// Before the application starts, the table is restored from its topic as Kafka Streams restores
// it, each record copied as it is (a record that does not decode is kept, one without a key
// skipped, neither counted); the records that come later go through the Consumed serdes. The
// table is kept in a store of every process, named by m (a Materialized without a name, or
// none, gives it the name <topic>-STATE-STORE-<n>, as Kafka Streams names it); it has no changelog,
// since its topic is one, and no record cache. Kafka Streams keeps it with the Consumed serdes.
func GlobalTable[K, V any](b *Builder, topic string, c Consumed[K, V], m ...Materialized[K, V]) *GlobalKTable[K, V] {
	ts := newTableSource(b, "GlobalTable", topic, c, m, true)
	if on, _ := ts.mat.versioned(); on {
		b.fail("GlobalTable(%q): a global table cannot be kept in a versioned store (Materialized.HistoryRetention), as in Kafka Streams", topic)
	}
	name := cmp.Or(ts.mat.Name, ts.generated) // a global table is always kept
	decoded := sourceEntry(ts.in, ts.ks, ts.vs)
	ts.source.entry = func(c *stream.Context, r *stream.Record) error {
		if !streamhook.Restoring(c) {
			return decoded(c, r)
		}
		// Kafka Streams restores a global table's store from its topic without its processor:
		// each record with a key copied as it is (not decoded), its timestamp before its value, as
		// the DSL's stores keep values; a null value deletes.
		if r.Key == nil {
			return nil
		}
		st := c.Store(name)
		if r.Value == nil {
			return st.Delete(r.Key)
		}
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.Value)), uint64(r.Timestamp.UnixMilli()))
		return st.Put(r.Key, append(v, r.Value...))
	}
	// Not cached: the global store is written as each record of its topic comes, which is what a
	// join reads.
	t := sourceTable(b, ts.n, ts.ks, ts.vs, name, "", true, []*node{ts.source}, ts.in, false, 0)
	return &GlobalKTable[K, V]{b: b, t: t}
}

// StoreName is the name of the global table's store, for interactive queries (stream.App.Store
// answers from the store of this process, which holds every key).
func (g *GlobalKTable[K, V]) StoreName() string { return g.t.store }

// JoinGlobal joins each record of s with a value of the global table g (Kafka Streams'
// KStream.join with a GlobalKTable): key maps the record to the key it looks up in g, and fn makes
// the result's value from the record's key and value and g's value. A record whose looked-up key is
// not in g, or is null (the nil of its type), or whose value is null, is dropped (and counted as
// dropped). Only the stream's records make results; an update of g is what later records see. The
// result keeps the record's key (no repartition: s need not be co-partitioned with g's topic),
// timestamp and headers.
func JoinGlobal[K, V, GK, GV, VR any](s *KStream[K, V], g *GlobalKTable[GK, GV], key func(k K, v V) GK, fn func(k K, v V, gv GV) VR, named ...Named) *KStream[K, VR] {
	return globalJoin(s, g, key, func(k K, v V, gv GV, _ bool) VR { return fn(k, v, gv) }, false, named)
}

// LeftJoinGlobal joins each record of s with a value of the global table g, as JoinGlobal does,
// but keeps the records whose looked-up key is not in g or is null (Kafka Streams' KStream.leftJoin
// with a GlobalKTable): fn gets found false and GV's zero value for them (Java's joiner gets null).
// A record with a null value is dropped.
func LeftJoinGlobal[K, V, GK, GV, VR any](s *KStream[K, V], g *GlobalKTable[GK, GV], key func(k K, v V) GK, fn func(k K, v V, gv GV, found bool) VR, named ...Named) *KStream[K, VR] {
	return globalJoin(s, g, key, fn, true, named)
}

// globalJoin adds a stream-global-table join (Kafka Streams' KStreamGlobalKTableJoin): one node,
// which reads g's store, the process's own.
func globalJoin[K, V, GK, GV, VR any](s *KStream[K, V], g *GlobalKTable[GK, GV], key func(K, V) GK, fn func(K, V, GV, bool) VR, left bool, named []Named) *KStream[K, VR] {
	b := s.b
	op := "JoinGlobal"
	if left {
		op = "LeftJoinGlobal"
	}
	if g == nil || g.b != b {
		b.fail("%s needs a global table of the same Builder", op)
		return &KStream[K, VR]{b: b, n: s.n, out: newFanout[K, VR](b)}
	}
	if key == nil || fn == nil {
		b.fail("%s needs a key mapper and a joiner", op)
	}
	// Kafka Streams names both kinds of join KSTREAM-LEFTJOIN-.
	n := b.add(&node{name: b.nameOr(string(first(named)), "KSTREAM-LEFTJOIN-"), kind: processorNode, relaxedJoin: left}, s.n)
	// The stream keeps its key, and a key changed before the join still needs its repartition
	// before a later operation that groups or joins by key.
	out := &KStream[K, VR]{b: b, n: n, out: newFanout[K, VR](b), ks: s.ks, vs: defaultSerde[VR](), sources: s.sources, rekeyed: s.rekeyed}
	isNil, keyIsNil := nilCheck[VR](), nilCheck[GK]()
	t := g.t
	s.out.attach(func(c *stream.Context, md meta, k K, v V) error {
		if md.nullValue {
			c.Dropped() // Kafka Streams logs and counts a record without a value, and skips it
			return nil
		}
		gk := key(k, v)
		var gv stamped[GV]
		found := false
		if keyIsNil == nil || !keyIsNil(gk) {
			var err error
			if gv, found, err = t.read(c, gk); err != nil {
				return err
			}
		} else if !left {
			c.Dropped() // no key to look up: skipped and counted, as for a null value
			return nil
		}
		if !found && !left {
			return nil
		}
		vr := fn(k, v, gv.v, found)
		md.nullValue = nullFrom(isNil, vr, false)
		return out.out.emit(c, md, k, vr)
	})
	return out
}
