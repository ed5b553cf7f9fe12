package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/serde"

	"github.com/streamsgroup/streamsgroup/stream"
)

// Record is a record as a Processor of a DSL program handles and forwards it (Kafka Streams'
// api.Record): NullKey and NullValue say the key or value is null (the field is then the zero
// value). Its headers are the runtime's (stream.Context.Headers).
type Record[K, V any] struct {
	Key                K
	Value              V
	Timestamp          time.Time
	NullKey, NullValue bool
}

// ProcessorContext is what a Processor of a DSL program sees of its task: the runtime's Context
// (the task, its stores, punctuations, the record's time) and Forward, which hands a record to the
// operations after the processor (Kafka Streams' api.ProcessorContext).
type ProcessorContext[K, V any] struct {
	*stream.Context
	out *fanout[K, V]
	// key, when keep is set, is the key every forwarded record gets (ProcessValues: Kafka Streams'
	// FixedKeyRecord cannot change it).
	key           K
	nullKey, keep bool
}

// Forward hands r to the operations after the processor (Kafka Streams' ProcessorContext.forward);
// a zero Timestamp is the current record's (or punctuation's).
func (c ProcessorContext[K, V]) Forward(r Record[K, V]) error {
	if c.keep {
		r.Key, r.NullKey = c.key, c.nullKey
	}
	return c.out.emit(c.Context, meta{nullKey: r.NullKey, nullValue: r.NullValue, at: r.Timestamp}, r.Key, r.Value)
}

// Schedule calls fn every interval on the clock typ says (stream.Context.Schedule), with a context
// that forwards: what Kafka Streams' punctuators do with the processor's context.
func (c ProcessorContext[K, V]) Schedule(interval time.Duration, typ stream.PunctuationType, fn func(c ProcessorContext[K, V], at time.Time) error) (cancel func(), err error) {
	out := c.out
	return c.Context.Schedule(interval, typ, func(sc *stream.Context, at time.Time) error {
		return fn(ProcessorContext[K, V]{Context: sc, out: out}, at)
	})
}

// Processor is a Processor API step of a DSL program (Kafka Streams' api.Processor given to
// KStream.process or processValues): Process handles each record of the stream, and forwards the
// records it makes, any number, to the operations after it.
type Processor[K, V, KR, VR any] interface {
	Process(c ProcessorContext[KR, VR], r Record[K, V]) error
}

// ProcessorInit is a Processor with an Init, run as each of its tasks starts processing (Kafka
// Streams' Processor.init): schedule punctuations there (ProcessorContext.Schedule).
type ProcessorInit[KR, VR any] interface {
	Init(c ProcessorContext[KR, VR]) error
}

// Process hands each record of s to p (Kafka Streams' process): the records p forwards make the
// stream it returns. p may change keys, so a grouping after it repartitions. stores are the stores,
// added with Builder.AddStore, that p uses (stream.Context.Store, stream.KeyValue).
func Process[K, V, KR, VR any](s *KStream[K, V], p Processor[K, V, KR, VR], stores ...string) *KStream[KR, VR] {
	return process(s, p, "KSTREAM-PROCESSOR-", defaultSerde[KR](), nil, stores)
}

// ProcessValues is Process for a processor that keeps each record's key (Kafka Streams'
// processValues with a FixedKeyProcessor): the records it forwards have the key of the record it
// handles, whatever they say, and no repartition follows.
func ProcessValues[K, V, VR any](s *KStream[K, V], p Processor[K, V, K, VR], stores ...string) *KStream[K, VR] {
	return process(s, p, "KSTREAM-PROCESSVALUES-", s.ks, func(c *ProcessorContext[K, VR], k K, m meta) {
		c.key, c.nullKey, c.keep = k, m.nullKey, true
	}, stores)
}

// process adds p's node below s; fixKey, when given, makes the forwarded records keep the key of
// the record handled (ProcessValues).
func process[K, V, KR, VR any](s *KStream[K, V], p Processor[K, V, KR, VR], prefix string, ks serde.Serde[KR],
	fixKey func(*ProcessorContext[KR, VR], K, meta), stores []string) *KStream[KR, VR] {
	s.b.useStores(stores)
	c := child(s, "", prefix, ks, defaultSerde[VR](), s.rekeyed || fixKey == nil)
	c.n.stores = stores
	if in, ok := p.(ProcessorInit[KR, VR]); ok {
		c.n.init = func(sc *stream.Context) error { return in.Init(ProcessorContext[KR, VR]{Context: sc, out: c.out}) }
	}
	s.out.attach(func(sc *stream.Context, m meta, k K, v V) error {
		pc := ProcessorContext[KR, VR]{Context: sc, out: c.out}
		if fixKey != nil {
			fixKey(&pc, k, m)
		}
		return p.Process(pc, Record[K, V]{Key: k, Value: v, Timestamp: recordTime(sc, m), NullKey: m.nullKey, NullValue: m.nullValue})
	})
	return c
}

// ProcessorFunc makes a function a Processor.
type ProcessorFunc[K, V, KR, VR any] func(c ProcessorContext[KR, VR], r Record[K, V]) error

// Process calls f.
func (f ProcessorFunc[K, V, KR, VR]) Process(c ProcessorContext[KR, VR], r Record[K, V]) error {
	return f(c, r)
}
