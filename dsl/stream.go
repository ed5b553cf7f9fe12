package dsl

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/twmb/franz-go/pkg/kgo"
)

// meta is what travels with a record through the nodes besides its key and value: whether they are
// null (a record whose bytes were nil, which typed values cannot say), and its timestamp when an
// operation changed it (an aggregation's result carries the latest of what it aggregates).
type meta struct {
	nullKey, nullValue bool
	at                 time.Time // zero: the input record's
	// headers are the record's when ownHeaders is set (a record a Processor forwarded), else the
	// input record's.
	headers    []kgo.RecordHeader
	ownHeaders bool
}

// headersOf is the record's headers: its own, or the input's (c's).
func (m meta) headersOf(c *stream.Context) []kgo.RecordHeader {
	if m.ownHeaders {
		return m.headers
	}
	return c.Headers()
}

// fanout hands a record to a node's children, in the order they were added (Kafka Streams forwards
// to its children in that order).
type fanout[K, V any] struct {
	b  *Builder
	to []func(c *stream.Context, m meta, k K, v V) error
}

func newFanout[K, V any](b *Builder) *fanout[K, V] { return &fanout[K, V]{b: b} }

// attach adds a child, unless the program was built: what Build built does not change after it.
func (f *fanout[K, V]) attach(fn func(c *stream.Context, m meta, k K, v V) error) {
	if f.b.built {
		return
	}
	f.to = append(f.to, fn)
}

func (f *fanout[K, V]) emit(c *stream.Context, m meta, k K, v V) error {
	for _, fn := range f.to {
		if err := fn(c, m, k, v); err != nil {
			return err
		}
	}
	return nil
}

// KStream is a record stream (Kafka Streams' KStream) of keys K and values V.
type KStream[K, V any] struct {
	b   *Builder
	n   *node
	out *fanout[K, V]
	ks  serde.Serde[K] // nil when not known (after a change of type): a default, or the next serde given
	vs  serde.Serde[V]
	// rekeyed: the key changed since the source, so a grouping repartitions (Kafka Streams'
	// repartitionRequired).
	rekeyed bool
	// sources are the source nodes the stream comes from (Kafka Streams' subTopologySourceNodes),
	// which a cogroup makes copartitioned.
	sources []*node
	// joinRep is the last repartition a join of the stream made, which an unnamed join of it reuses
	// (join.go).
	joinRep *KStream[K, V]
}

// Stream reads topic (Kafka Streams' StreamsBuilder.stream).
func Stream[K, V any](b *Builder, topic string, c Consumed[K, V]) *KStream[K, V] {
	ks, vs := orDefault(c.Key), orDefault(c.Value)
	if topic == "" {
		b.fail("Stream needs a topic")
	}
	if ks == nil || vs == nil {
		b.fail("Stream(%q) needs Consumed serdes for %s and %s", topic, typeName[K](), typeName[V]())
	}
	n := b.add(&node{name: b.nameOr(c.Name, "KSTREAM-SOURCE-"), kind: sourceNode, topic: topic})
	s := &KStream[K, V]{b: b, n: n, out: newFanout[K, V](b), ks: ks, vs: vs, sources: []*node{n}}
	n.entry = sourceEntry(s.out, ks, vs)
	return s
}

// sourceEntry decodes a record with ks and vs and hands it to out.
func sourceEntry[K, V any](out *fanout[K, V], ks serde.Serde[K], vs serde.Serde[V]) func(*stream.Context, *stream.Record) error {
	return func(c *stream.Context, r *stream.Record) error {
		var (
			k K
			v V
			m = meta{nullKey: r.Key == nil, nullValue: r.Value == nil}
		)
		var err error
		if !m.nullKey {
			if k, err = ks.Decode(r.Key); err != nil {
				return stream.UndecodableRecord(fmt.Errorf("key: %w", err))
			}
		}
		if !m.nullValue {
			if v, err = vs.Decode(r.Value); err != nil {
				return stream.UndecodableRecord(fmt.Errorf("value: %w", err))
			}
		}
		return out.emit(c, m, k, v)
	}
}

// child adds a processor node named by named or prefix below s, with the same types, and returns it
// with its fanout.
func child[K, V, KR, VR any](s *KStream[K, V], named Named, prefix string, ks serde.Serde[KR], vs serde.Serde[VR], rekeyed bool) *KStream[KR, VR] {
	n := s.b.add(&node{name: s.b.nameOr(string(named), prefix), kind: processorNode}, s.n)
	return &KStream[KR, VR]{b: s.b, n: n, out: newFanout[KR, VR](s.b), ks: ks, vs: vs, rekeyed: rekeyed, sources: s.sources}
}

// Filter keeps the records pred accepts.
func (s *KStream[K, V]) Filter(pred func(K, V) bool, named ...Named) *KStream[K, V] {
	c := child(s, first(named), "KSTREAM-FILTER-", s.ks, s.vs, s.rekeyed)
	s.out.attach(func(ctx *stream.Context, m meta, k K, v V) error {
		if pred(k, v) {
			return c.out.emit(ctx, m, k, v)
		}
		return nil
	})
	return c
}

// FilterNot drops the records pred accepts.
func (s *KStream[K, V]) FilterNot(pred func(K, V) bool, named ...Named) *KStream[K, V] {
	return s.Filter(func(k K, v V) bool { return !pred(k, v) }, named...)
}

// Peek calls fn on each record and passes it on unchanged.
func (s *KStream[K, V]) Peek(fn func(K, V), named ...Named) *KStream[K, V] {
	c := child(s, first(named), "KSTREAM-PEEK-", s.ks, s.vs, s.rekeyed)
	s.out.attach(func(ctx *stream.Context, m meta, k K, v V) error {
		fn(k, v)
		return c.out.emit(ctx, m, k, v)
	})
	return c
}

// Foreach calls fn on each record; nothing follows it.
func (s *KStream[K, V]) Foreach(fn func(K, V), named ...Named) {
	child(s, first(named), "KSTREAM-FOREACH-", s.ks, s.vs, s.rekeyed)
	s.out.attach(func(_ *stream.Context, _ meta, k K, v V) error {
		fn(k, v)
		return nil
	})
}

// Merge is s and other as one stream (Kafka Streams' merge).
func (s *KStream[K, V]) Merge(other *KStream[K, V], named ...Named) *KStream[K, V] {
	if other.b != s.b {
		s.b.fail("Merge: the streams come from two builders")
	}
	n := s.b.add(&node{name: s.b.nameOr(string(first(named)), "KSTREAM-MERGE-"), kind: processorNode}, s.n, other.n)
	m := &KStream[K, V]{b: s.b, n: n, out: newFanout[K, V](s.b), ks: s.ks, vs: s.vs, rekeyed: s.rekeyed || other.rekeyed,
		sources: append(append([]*node{}, s.sources...), other.sources...)}
	if m.ks == nil {
		m.ks = other.ks
	}
	if m.vs == nil {
		m.vs = other.vs
	}
	pass := func(ctx *stream.Context, mt meta, k K, v V) error { return m.out.emit(ctx, mt, k, v) }
	s.out.attach(pass)
	other.out.attach(pass)
	return m
}

// To writes the stream to topic (Kafka Streams' to), with p's serdes or the stream's.
func (s *KStream[K, V]) To(topic string, p Produced[K, V]) {
	ks, vs := p.Key, p.Value
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	if topic == "" {
		s.b.fail("To needs a topic")
	}
	if ks == nil || vs == nil {
		s.b.fail("To(%q) needs Produced serdes for %s and %s", topic, typeName[K](), typeName[V]())
	}
	n := s.b.add(&node{name: s.b.nameOr(p.Name, "KSTREAM-SINK-"), kind: sinkNode, topic: topic}, s.n)
	s.out.attach(sendTo(n, ks, vs, true, p.Partitioner))
}

// sendTo writes each record to n's topic, named once Build knows it, placed by part if given. sink
// says n is a sink of To (Kafka Streams' StreamSinkNode), which places a windowed key by its inner
// key unless part places it; a repartition's sink places it by the whole key, as Kafka Streams'
// does.
func sendTo[K, V any](n *node, ks serde.Serde[K], vs serde.Serde[V], sink bool, part StreamPartitioner[K, V]) func(*stream.Context, meta, K, V) error {
	var out stream.Topic[K, V]
	n.onBuild = append(n.onBuild, func() { out = stream.Output(n.sendTo, ks, vs) })
	if part != nil {
		return func(c *stream.Context, m meta, k K, v V) error {
			return sendPartitioned(c, out, part, ks, vs, m, k, v)
		}
	}
	if pk, ok := ks.(serde.PartitionKeyer[K]); ok && sink {
		return func(c *stream.Context, m meta, k K, v V) error {
			return sendByInnerKey(c, out.Name(), pk, ks, vs, m, k, v)
		}
	}
	return func(c *stream.Context, m meta, k K, v V) error { return send(c, out, ks, vs, m, k, v) }
}

// sendByInnerKey writes a record whose key serde has a partition key (a windowed key) to topic, on
// the partition of that key, as Kafka Streams' WindowedStreamPartitioner places it, tombstones
// included. A record without a key is spread as any keyless record.
func sendByInnerKey[K, V any](c *stream.Context, topic string, pk serde.PartitionKeyer[K], ks serde.Serde[K], vs serde.Serde[V], m meta, k K, v V) error {
	if m.nullKey {
		return send(c, stream.Output(topic, ks, vs), ks, vs, m, k, v)
	}
	p, err := pk.PartitionKey(k)
	if err != nil {
		return fmt.Errorf("dsl: encoding a key for %s: %w", topic, err)
	}
	kb, vb, err := encodeRecord(topic, ks, vs, m, k, v)
	if err != nil {
		return err
	}
	return c.SendBy(topic, recordTime(c, m), p, kb, vb, m.headersOf(c)...)
}

// repartitionTo writes each record with a key to the repartition topic of sink (Kafka Streams'
// filter before a repartition drops those without), and those without one too when a left join
// below takes them (sink.keepNullKeys).
func repartitionTo[K, V any](sink *node, ks serde.Serde[K], vs serde.Serde[V], part StreamPartitioner[K, V]) func(*stream.Context, meta, K, V) error {
	send := sendTo(sink, ks, vs, false, part)
	return func(c *stream.Context, m meta, k K, v V) error {
		if m.nullKey && !sink.keepNullKeys {
			return nil
		}
		return send(c, m, k, v)
	}
}

// send writes a record to out: through the runtime's typed topic, which encodes into its scratch
// and gives the record one allocation, unless the key or the value is null.
func send[K, V any](c *stream.Context, out stream.Topic[K, V], ks serde.Serde[K], vs serde.Serde[V], m meta, k K, v V) error {
	// The record's headers go with it, as Kafka Streams' sinks write them.
	if !m.nullKey && !m.nullValue {
		if m.at.IsZero() {
			return out.Send(c, k, v, m.headersOf(c)...)
		}
		return out.SendAt(c, m.at, k, v, m.headersOf(c)...)
	}
	kb, vb, err := encodeRecord(out.Name(), ks, vs, m, k, v)
	if err != nil {
		return err
	}
	if !m.at.IsZero() {
		return c.SendAt(out.Name(), m.at, kb, vb, m.headersOf(c)...)
	}
	return c.Send(out.Name(), kb, vb, m.headersOf(c)...)
}

// encodeRecord encodes a record for topic: nil for a null key or value, an empty slice for an
// empty one.
func encodeRecord[K, V any](topic string, ks serde.Serde[K], vs serde.Serde[V], m meta, k K, v V) (kb, vb []byte, err error) {
	if !m.nullKey {
		if kb, err = ks.Encode(k); err != nil {
			return nil, nil, fmt.Errorf("dsl: encoding a key for %s: %w", topic, err)
		}
		if kb == nil {
			kb = []byte{}
		}
	}
	if !m.nullValue {
		if vb, err = vs.Encode(v); err != nil {
			return nil, nil, fmt.Errorf("dsl: encoding a value for %s: %w", topic, err)
		}
		if vb == nil {
			vb = []byte{}
		}
	}
	return kb, vb, nil
}

// sendPartitioned writes a record to out on the partitions part chooses among those out's topic
// has, as Kafka Streams' record collector applies a StreamPartitioner: by key when part leaves the
// choice, nowhere (a dropped record) when it chooses none, to each partition when it chooses
// several.
func sendPartitioned[K, V any](c *stream.Context, out stream.Topic[K, V], part StreamPartitioner[K, V], ks serde.Serde[K], vs serde.Serde[V], m meta, k K, v V) error {
	topic := out.Name()
	n, err := c.PartitionCount(topic)
	if err != nil {
		return fmt.Errorf("dsl: placing a record on %s: %w", topic, err)
	}
	ps, ok := part(topic, k, v, m.headersOf(c), n)
	if !ok {
		return send(c, out, ks, vs, m, k, v)
	}
	if len(ps) == 0 {
		c.Dropped()
		return nil
	}
	if err := partitionsIn(topic, ps, n); err != nil {
		return err
	}
	ps = distinct(ps)
	kb, vb, err := encodeRecord(topic, ks, vs, m, k, v)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := c.SendTo(topic, p, recordTime(c, m), kb, vb, m.headersOf(c)...); err != nil {
			return err
		}
	}
	return nil
}

// ErrPartition is returned (wrapped) when a StreamPartitioner chooses a partition its topic does
// not have, or, in a foreign-key join, other than one partition.
var ErrPartition = errors.New("dsl: a StreamPartitioner chose partitions the record cannot go to")

// distinct is ps without repeats, in the order of their first places: Kafka Streams' partitioner
// answers a set, so a partition chosen twice gets the record once.
func distinct(ps []int32) []int32 {
	for i := 1; i < len(ps); i++ {
		if slices.Contains(ps[:i], ps[i]) {
			out := slices.Clone(ps[:i])
			for _, p := range ps[i+1:] {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
			return out
		}
	}
	return ps
}

// partitionsIn checks that ps are partitions of a topic of n.
func partitionsIn(topic string, ps []int32, n int) error {
	for _, p := range ps {
		if p < 0 || int(p) >= n {
			return fmt.Errorf("%w: partition %d of %s, which has %d", ErrPartition, p, topic, n)
		}
	}
	return nil
}

// MapValues changes each value with fn (Kafka Streams' mapValues); the key stays, so no
// repartition follows. A null value reaches fn as the zero value, and a result is null when it is
// nil, or the zero value made from a null one.
func MapValues[K, V, VR any](s *KStream[K, V], fn func(K, V) VR, named ...Named) *KStream[K, VR] {
	c := child(s, first(named), "KSTREAM-MAPVALUES-", s.ks, defaultSerde[VR](), s.rekeyed)
	isNil := nilCheck[VR]()
	s.out.attach(func(ctx *stream.Context, m meta, k K, v V) error {
		vr := fn(k, v)
		m.nullValue = nullFrom(isNil, vr, m.nullValue)
		return c.out.emit(ctx, m, k, vr)
	})
	return c
}

// Map changes each record's key and value (Kafka Streams' map): a grouping after it repartitions.
// A result is null when it is nil, or the zero value made from a record with a null key or value.
func Map[K, V, KR, VR any](s *KStream[K, V], fn func(K, V) (KR, VR), named ...Named) *KStream[KR, VR] {
	c := child(s, first(named), "KSTREAM-MAP-", defaultSerde[KR](), defaultSerde[VR](), true)
	nilK, nilV := nilCheck[KR](), nilCheck[VR]()
	s.out.attach(func(ctx *stream.Context, m meta, k K, v V) error {
		kr, vr := fn(k, v)
		from := m.nullValue
		m.nullKey, m.nullValue = nullFrom(nilK, kr, from), nullFrom(nilV, vr, from)
		return c.out.emit(ctx, m, kr, vr)
	})
	return c
}

// SelectKey gives each record the key fn returns (Kafka Streams' selectKey): a grouping after it
// repartitions.
func SelectKey[K, V, KR any](s *KStream[K, V], fn func(K, V) KR, named ...Named) *KStream[KR, V] {
	c := child(s, first(named), "KSTREAM-KEY-SELECT-", defaultSerde[KR](), s.vs, true)
	s.out.attach(selectKey(c.out, fn))
	return c
}

// selectKey gives each record the key fn returns: null when it is nil, or the zero value made from
// a record with a null key or value.
func selectKey[K, V, KR any](out *fanout[KR, V], fn func(K, V) KR) func(*stream.Context, meta, K, V) error {
	isNil := nilCheck[KR]()
	return func(ctx *stream.Context, m meta, k K, v V) error {
		kr := fn(k, v)
		m.nullKey = nullFrom(isNil, kr, m.nullValue)
		return out.emit(ctx, m, kr, v)
	}
}

// FlatMapValues turns each record into one record per value fn returns, with the same key (Kafka
// Streams' flatMapValues).
func FlatMapValues[K, V, VR any](s *KStream[K, V], fn func(K, V) []VR, named ...Named) *KStream[K, VR] {
	c := child(s, first(named), "KSTREAM-FLATMAPVALUES-", s.ks, defaultSerde[VR](), s.rekeyed)
	isNil := nilCheck[VR]()
	s.out.attach(func(ctx *stream.Context, m meta, k K, v V) error {
		from := m.nullValue
		for _, vr := range fn(k, v) {
			m.nullValue = nullFrom(isNil, vr, from)
			if err := c.out.emit(ctx, m, k, vr); err != nil {
				return err
			}
		}
		return nil
	})
	return c
}

// KeyValue is one record a FlatMap returns.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// FlatMap turns each record into the records fn returns (Kafka Streams' flatMap): a grouping after
// it repartitions.
func FlatMap[K, V, KR, VR any](s *KStream[K, V], fn func(K, V) []KeyValue[KR, VR], named ...Named) *KStream[KR, VR] {
	c := child(s, first(named), "KSTREAM-FLATMAP-", defaultSerde[KR](), defaultSerde[VR](), true)
	nilK, nilV := nilCheck[KR](), nilCheck[VR]()
	s.out.attach(func(ctx *stream.Context, m meta, k K, v V) error {
		from := m.nullValue
		for _, kv := range fn(k, v) {
			m.nullKey, m.nullValue = nullFrom(nilK, kv.Key, from), nullFrom(nilV, kv.Value, from)
			if err := c.out.emit(ctx, m, kv.Key, kv.Value); err != nil {
				return err
			}
		}
		return nil
	})
	return c
}

// Repartition writes the stream through a repartition topic of its own and reads it back (Kafka
// Streams' repartition), so that each key's records are in one partition of it: named by r.Name
// (<application.id>-<Name>-repartition) or a generated name, with r.Partitions partitions (0: as
// many as the input).
func (s *KStream[K, V]) Repartition(r Repartitioned[K, V]) *KStream[K, V] {
	ks, vs := r.Key, r.Value
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	name := s.b.nameOr(r.Name, "KSTREAM-REPARTITION-")
	if ks == nil || vs == nil {
		s.b.fail("Repartition %q needs Repartitioned serdes for %s and %s", name, typeName[K](), typeName[V]())
	}
	if r.Partitions < 0 {
		s.b.fail("Repartition %q: the partition count %d is negative", name, r.Partitions)
	}
	sink, source := s.b.repartition(name, r.Partitions, s.n)
	s.out.attach(repartitionTo(sink, ks, vs, r.Partitioner))
	c := &KStream[K, V]{b: s.b, n: source, out: newFanout[K, V](s.b), ks: ks, vs: vs, sources: []*node{source}}
	source.entry = sourceEntry(c.out, ks, vs)
	return c
}

// useStores marks stores, added with AddStore, as used by a Process; a store not added is a program
// error.
func (b *Builder) useStores(stores []string) {
	for _, st := range stores {
		if b.globals[st] {
			// Kafka Streams refuses to connect a global store to a processor: every processor reads it.
			b.fail("Process names the global store %q: every processor reads a global store without naming it", st)
			continue
		}
		if _, ok := b.stores[st]; !ok {
			b.fail("Process uses the store %q, which was not added with AddStore", st)
			continue
		}
		b.stores[st] = true
	}
}

// first is the first of the optional names, or none.
func first(named []Named) Named {
	if len(named) > 0 {
		return named[0]
	}
	return ""
}

// ToFunc writes each record to the topic fn names for it (Kafka Streams' to with a
// TopicNameExtractor); the topics must exist.
func (s *KStream[K, V]) ToFunc(fn func(K, V) string, p Produced[K, V]) {
	ks, vs := p.Key, p.Value
	if ks == nil {
		ks = s.ks
	}
	if vs == nil {
		vs = s.vs
	}
	if ks == nil || vs == nil {
		s.b.fail("ToFunc needs Produced serdes for %s and %s", typeName[K](), typeName[V]())
	}
	n := s.b.add(&node{name: s.b.nameOr(p.Name, "KSTREAM-SINK-"), kind: sinkNode}, s.n)
	pk, byInner := ks.(serde.PartitionKeyer[K])
	s.out.attach(func(c *stream.Context, m meta, k K, v V) error {
		topic := fn(k, v)
		if topic == "" {
			return fmt.Errorf("dsl: the topic function of %s named no topic", n.name)
		}
		if p.Partitioner != nil {
			return sendPartitioned(c, stream.Output(topic, ks, vs), p.Partitioner, ks, vs, m, k, v)
		}
		if byInner {
			return sendByInnerKey(c, topic, pk, ks, vs, m, k, v)
		}
		return send(c, stream.Output(topic, ks, vs), ks, vs, m, k, v)
	})
}

// Process hands each record to p (Kafka Streams' process with a processor that forwards nothing),
// encoded with the stream's serdes: a Processor API step inside a DSL program. stores are the
// stores, added with Builder.AddStore, that p uses. If p is a stream.Initializer, its Init runs as
// each task starts.
func (s *KStream[K, V]) Process(p stream.Processor, stores ...string) {
	s.b.useStores(stores)
	if s.ks == nil || s.vs == nil {
		s.b.fail("Process needs the stream's serdes for %s and %s: give them where the types changed", typeName[K](), typeName[V]())
	}
	n := s.b.add(&node{name: s.b.newName("KSTREAM-PROCESSOR-"), kind: processorNode, stores: stores}, s.n)
	if in, ok := p.(stream.Initializer); ok {
		n.init = in.Init
	}
	ks, vs := s.ks, s.vs
	s.out.attach(func(c *stream.Context, m meta, k K, v V) error {
		r := &stream.Record{Timestamp: c.Timestamp(), Headers: c.Headers()}
		if !m.at.IsZero() {
			r.Timestamp = m.at
		}
		var err error
		if !m.nullKey {
			if r.Key, err = ks.Encode(k); err != nil {
				return fmt.Errorf("dsl: encoding a key for %s: %w", n.name, err)
			}
		}
		if !m.nullValue {
			if r.Value, err = vs.Encode(v); err != nil {
				return fmt.Errorf("dsl: encoding a value for %s: %w", n.name, err)
			}
		}
		return p.Process(c, r)
	})
}
