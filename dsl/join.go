package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// Joined is how a stream is joined with a table (Kafka Streams' Joined): the serdes of the
// repartition topic the stream goes through first when its key changed (Key and Value; the
// stream's when empty), and the join's name (Joined.as), which names its processor node and that
// repartition topic (<application.id>-<Name>-repartition; without a name the topic is named after
// the node the stream comes from). OtherValue is the table's value serde, which Kafka Streams'
// Joined carries too and uses for nothing here.
type Joined[K, V, VT any] struct {
	Key        serde.Serde[K]
	Value      serde.Serde[V]
	OtherValue serde.Serde[VT]
	Name       string
	// GracePeriod holds each record back until the stream time is this far past it, then joins the
	// records held in time order (Kafka Streams' Joined.withGracePeriod): an update of the table
	// that comes late, within the grace, is still seen by the records before it. The table must be
	// kept in a versioned store (Materialized.HistoryRetention); the records wait in the store
	// <join name>-Buffer.
	GracePeriod time.Duration
	// WithGrace declares the grace buffer also when GracePeriod is 0 (Kafka Streams'
	// withGracePeriod(Duration.ZERO)): each record in order goes through the buffer, and out at
	// once; one before the stream time is joined at once. A GracePeriod above 0 implies it.
	WithGrace bool
}

// Join joins each record of s with its key's latest value in t (Kafka Streams' KStream.join with a
// KTable): fn makes the result's value from the key, the record's value and the table's. A record
// whose key is not in the table, or whose key or value is null, is dropped (and counted as
// dropped). Only the stream's records make results: an update of the table joins nothing, it is
// what later records see. The result keeps the record's key, timestamp and headers; fn's result is
// a null value when it is the nil of its type.
//
// The table is read where it is kept: a table read from a topic gets its store (<topic>-STATE-
// STORE-<n>, or its Materialized name), a filtered or mapped table is read through its parent's
// store. s and t must be co-partitioned (their topics have as many partitions, and records are
// placed by key alike): the topology declares them as a copartition group, which the broker
// checks. After a key change s goes through a repartition topic first, as in Kafka Streams.
func Join[K, V, VT, VR any](s *KStream[K, V], t *KTable[K, VT], fn func(k K, v V, vt VT) VR, j ...Joined[K, V, VT]) *KStream[K, VR] {
	return streamTableJoin(s, t, func(k K, v V, vt VT, _ bool) VR { return fn(k, v, vt) }, false, j)
}

// LeftJoin joins each record of s with its key's latest value in t, as Join does, but keeps the
// records whose key is not in the table (Kafka Streams' KStream.leftJoin with a KTable): fn gets
// found false and VT's zero value for them (Java's joiner gets null). A record with a null key is
// joined with no table value rather than dropped, as Kafka Streams 4.4 does; a record with a null
// value is dropped.
func LeftJoin[K, V, VT, VR any](s *KStream[K, V], t *KTable[K, VT], fn func(k K, v V, vt VT, found bool) VR, j ...Joined[K, V, VT]) *KStream[K, VR] {
	return streamTableJoin(s, t, fn, true, j)
}

// streamTableJoin adds a stream-table join (Kafka Streams' KStreamKTableJoin): the repartition
// first when s's key changed, the join node, which reads t's store, and the copartition group of
// their sources.
func streamTableJoin[K, V, VT, VR any](s *KStream[K, V], t *KTable[K, VT], fn func(K, V, VT, bool) VR, left bool, j []Joined[K, V, VT]) *KStream[K, VR] {
	b := s.b
	var jd Joined[K, V, VT]
	if len(j) > 0 {
		jd = j[0]
	}
	op, prefix := "Join", "KSTREAM-JOIN-"
	if left {
		op, prefix = "LeftJoin", "KSTREAM-LEFTJOIN-"
	}
	if t == nil || t.b != b {
		b.fail("%s needs a table of the same Builder", op)
		return &KStream[K, VR]{b: b, n: s.n, out: newFanout[K, VR](b)}
	}
	if t.storeKs != nil {
		b.fail("%s: a windowed table cannot be joined with a stream", op)
	}
	if s.rekeyed {
		s = s.repartitionForJoin(jd.Key, jd.Value, jd.Name)
	}
	// Kafka Streams has the table kept in a store before it names the join node.
	stores, get := t.valueGetter()
	versioned := t.versionedGetter()
	name := b.nameOr(jd.Name, prefix)
	n := b.add(&node{name: name, kind: processorNode, reads: stores, relaxedJoin: left}, s.n)
	var buf *joinBuffer[K, V]
	switch {
	case jd.GracePeriod < 0:
		b.fail("%s %q: a negative grace period %v", op, name, jd.GracePeriod)
	case (jd.GracePeriod > 0 || jd.WithGrace) && versioned == nil:
		b.fail("%s %q: a grace period needs a table kept in a versioned store (Materialized.HistoryRetention), as in Kafka Streams", op, name)
	case versioned != nil && jd.GracePeriod > versioned.history:
		b.fail("%s %q: the grace period %v is longer than the history retention %v of the versioned store it reads, as Kafka Streams refuses it", op, name, jd.GracePeriod, versioned.history)
	case jd.GracePeriod > 0 || jd.WithGrace:
		buf = newJoinBuffer(b, n, name+"-Buffer", jd.GracePeriod.Milliseconds(), orDefault(cmpSerde(jd.Key, s.ks)), orDefault(cmpSerde(jd.Value, s.vs)), op)
	}
	ks := jd.Key
	if ks == nil {
		ks = s.ks
	}
	out := &KStream[K, VR]{b: b, n: n, out: newFanout[K, VR](b), ks: ks, vs: defaultSerde[VR](), sources: append(append([]*node(nil), s.sources...), t.sources...)}
	b.copartitions = append(b.copartitions, [][]*node{s.sources, t.sources})
	isNil := nilCheck[VR]()
	join := func(c *stream.Context, md meta, k K, v V) error {
		var vt stamped[VT]
		found := false
		var err error
		switch {
		case md.nullKey:
		case versioned != nil:
			// A versioned table is read as of the record's time (Kafka Streams' KIP-914).
			if vt, found, err = versioned.get(c, k, recordTime(c, md)); err != nil {
				return err
			}
		default:
			if vt, found, err = get(c, k); err != nil {
				return err
			}
		}
		if !found && !left {
			return nil
		}
		vr := fn(k, v, vt.v, found)
		md.nullValue = nullFrom(isNil, vr, false)
		return out.out.emit(c, md, k, vr)
	}
	s.out.attach(func(c *stream.Context, md meta, k K, v V) error {
		if md.nullValue || md.nullKey && !left {
			c.Dropped() // Kafka Streams logs and counts a record without a join key or value, and skips it
			return nil
		}
		if buf != nil && !md.nullKey {
			// Kafka Streams 4.4 fails on a record without a key here (its buffer refuses a null
			// key); it is joined at once, as without a grace.
			return buf.process(c, md, k, v, join)
		}
		return join(c, md, k, v)
	})
	return out
}

// cmpSerde is a, or b when a is nil.
func cmpSerde[T any](a, b serde.Serde[T]) serde.Serde[T] {
	if a != nil {
		return a
	}
	return b
}

// repartitionForJoin is s written to a repartition topic and read back, before a join (Kafka
// Streams' repartitionForJoin): the topic is named after the join, or after s's node. An unnamed
// join of a stream joined before reuses the last repartition made for it (its three numbers are
// taken anyway) with this join's serdes, as Kafka Streams does.
func (s *KStream[K, V]) repartitionForJoin(ks serde.Serde[K], vs serde.Serde[V], name string) *KStream[K, V] {
	b := s.b
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	prefix := name
	if prefix == "" {
		prefix = s.n.name
	}
	if ks == nil || vs == nil {
		b.fail("the repartition before joining %q needs Joined serdes for %s and %s", prefix, typeName[K](), typeName[V]())
	}
	if name == "" && s.joinRep != nil {
		// Kafka Streams reads the repartition again under a source name it generates and never adds:
		// the join's copartition group then has no topic of this side (phantom is no source).
		b.newName("KSTREAM-SINK-")
		b.newName("KSTREAM-FILTER-")
		phantom := &node{name: b.newName("KSTREAM-SOURCE-"), kind: processorNode}
		r := *s.joinRep
		r.ks, r.vs, r.sources, r.joinRep = ks, vs, []*node{phantom}, nil
		return &r
	}
	sink, source := b.repartition(prefix, 0, s.n)
	s.out.attach(repartitionTo(sink, ks, vs, nil))
	r := &KStream[K, V]{b: b, n: source, out: newFanout[K, V](b), ks: ks, vs: vs, sources: []*node{source}}
	source.entry = sourceEntry(r.out, ks, vs)
	s.joinRep = r
	return r
}

// valueGetter is how a join reads the table: the stores it reads and a look-up of a key's latest
// value (Kafka Streams' valueGetterSupplier). A table kept in a store is read there; a table read
// from a topic without one gets its store now (as Kafka Streams materializes a source table a join
// reads); a filtered or mapped table without a store is read through its parent.
func (t *KTable[K, V]) valueGetter() ([]string, func(*stream.Context, K) (stamped[V], bool, error)) {
	if t.store == "" && t.getter != nil {
		return t.getter()
	}
	if t.store == "" && t.materialize != nil {
		t.materialize()
	}
	return []string{t.store}, t.read
}

// asOfGetter reads a table as of a time, in the versioned store it is kept in or derives from
// (Kafka Streams' versioned KTableValueGetter): get finds the value valid at a time, history is the
// store's history retention.
type asOfGetter[K, V any] struct {
	get     func(c *stream.Context, k K, at time.Time) (stamped[V], bool, error)
	history time.Duration
}

// versionedGetter is how a stream joined with t reads it as of each record's time: t's versioned
// store, or the one a filter or mapping without a store of its own reads through; nil when t is
// read by its latest values.
func (t *KTable[K, V]) versionedGetter() *asOfGetter[K, V] {
	switch {
	case t.ver != nil:
		ver := t.ver
		return &asOfGetter[K, V]{history: ver.HistoryRetention(), get: func(c *stream.Context, k K, at time.Time) (stamped[V], bool, error) {
			v, ts, ok, err := ver.GetAsOf(c, k, at)
			return stamped[V]{v: v, at: ts}, ok, err
		}}
	case t.store == "" && t.asOf != nil:
		return t.asOf()
	}
	return nil
}

// derivedGetter has f, derived from t without a store of its own, read t and compute its value
// from t's: compute says what f holds for a key t holds v for (absent: false). Read as of a time,
// f is read through t's versioned store if t has one.
func derivedGetter[K, V, VR any](f *KTable[K, VR], t *KTable[K, V], compute func(k K, v V) (VR, bool)) {
	f.asOf = func() *asOfGetter[K, VR] {
		pg := t.versionedGetter()
		if pg == nil {
			return nil
		}
		return &asOfGetter[K, VR]{history: pg.history, get: func(c *stream.Context, k K, at time.Time) (stamped[VR], bool, error) {
			v, ok, err := pg.get(c, k, at)
			if err != nil || !ok {
				return stamped[VR]{}, false, err
			}
			vr, ok := compute(k, v.v)
			return stamped[VR]{v: vr, at: v.at}, ok, nil
		}}
	}
	f.getter = func() ([]string, func(*stream.Context, K) (stamped[VR], bool, error)) {
		stores, get := t.valueGetter()
		return stores, func(c *stream.Context, k K) (stamped[VR], bool, error) {
			v, ok, err := get(c, k)
			if err != nil || !ok {
				return stamped[VR]{}, false, err
			}
			vr, ok := compute(k, v.v)
			return stamped[VR]{v: vr, at: v.at}, ok, nil
		}
	}
}
