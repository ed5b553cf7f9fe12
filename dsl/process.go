package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/stream"
)

// Record is a record as a Processor of a DSL program handles and forwards it (Kafka Streams'
// api.Record): NullKey and NullValue say the key or value is null (the field is then the zero
// value). A record forwarded carries its Headers to the outputs (a new Record has none).
type Record[K, V any] struct {
	Key                K
	Value              V
	Timestamp          time.Time
	Headers            []kgo.RecordHeader
	NullKey, NullValue bool
}

// ProcessorContext is what a Processor of a DSL program sees of its task: the runtime's Context
// (the task, its stores, punctuations, the record's time) and Forward, which hands a record to the
// operations after the processor (Kafka Streams' api.ProcessorContext).
type ProcessorContext[K, V any] struct {
	*stream.Context
	out *fanout[K, V]
}

// Forward hands r to the operations after the processor (Kafka Streams' ProcessorContext.forward);
// a zero Timestamp is the current record's (or punctuation's).
func (c ProcessorContext[K, V]) Forward(r Record[K, V]) error {
	if c.out == nil {
		return stream.ErrGlobalContext // a global store's processor: nothing to forward to
	}
	m := meta{nullKey: r.NullKey, nullValue: r.NullValue, at: r.Timestamp, headers: r.Headers, ownHeaders: true}
	// What is downstream runs in the forwarded record's context, as Kafka Streams' forward sets the
	// record context: its time and headers (a store's changelog, a Send, a processor's Context see
	// them); the origin stays the record being processed.
	var o streamhook.Origin
	o.Topic, o.Partition, o.Offset, o.OK = c.RecordMetadata()
	restore := streamhook.As(c.Context, recordTime(c.Context, m), r.Headers, o)
	defer restore()
	return c.out.emit(c.Context, m, r.Key, r.Value)
}

// Schedule calls fn every interval on the clock typ says (stream.Context.Schedule), with a context
// that forwards: what Kafka Streams' punctuators do with the processor's context.
func (c ProcessorContext[K, V]) Schedule(interval time.Duration, typ stream.PunctuationType, fn func(c ProcessorContext[K, V], at time.Time) error) (cancel func(), err error) {
	out := c.out
	return c.Context.Schedule(interval, typ, func(sc *stream.Context, at time.Time) (err error) {
		defer recovered(&err) // a panic is the punctuation's error, for processing.exception.handler
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
	return process(s, p, "KSTREAM-PROCESSOR-", defaultSerde[KR](), false, stores)
}

// ProcessValues is Process for a processor that keeps keys (Kafka Streams' processValues with a
// FixedKeyProcessor): no repartition follows, so the records it forwards must keep the key of the
// record they come from (a record handled now or earlier), as Kafka Streams' FixedKeyRecord does.
func ProcessValues[K, V, VR any](s *KStream[K, V], p Processor[K, V, K, VR], stores ...string) *KStream[K, VR] {
	return process(s, p, "KSTREAM-PROCESSVALUES-", s.ks, true, stores)
}

// process adds p's node below s; fixedKey: p keeps keys (ProcessValues).
func process[K, V, KR, VR any](s *KStream[K, V], p Processor[K, V, KR, VR], prefix string, ks serde.Serde[KR],
	fixedKey bool, stores []string) *KStream[KR, VR] {
	s.b.useStores(stores)
	c := child(s, "", prefix, ks, defaultSerde[VR](), s.rekeyed || !fixedKey)
	c.n.stores = stores
	if in, ok := p.(ProcessorInit[KR, VR]); ok {
		c.n.init = func(sc *stream.Context) error { return in.Init(ProcessorContext[KR, VR]{Context: sc, out: c.out}) }
	}
	s.out.attach(func(sc *stream.Context, m meta, k K, v V) error {
		r := Record[K, V]{Key: k, Value: v, Timestamp: recordTime(sc, m), Headers: m.headersOf(sc), NullKey: m.nullKey, NullValue: m.nullValue}
		return p.Process(ProcessorContext[KR, VR]{Context: sc, out: c.out}, r)
	})
	return c
}

// ProcessorFunc makes a function a Processor.
type ProcessorFunc[K, V, KR, VR any] func(c ProcessorContext[KR, VR], r Record[K, V]) error

// Process calls f.
func (f ProcessorFunc[K, V, KR, VR]) Process(c ProcessorContext[KR, VR], r Record[K, V]) error {
	return f(c, r)
}
