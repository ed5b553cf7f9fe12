package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Record is one input record handed to a Processor. It and its slices belong to the runtime, which
// reuses them for the task's next record: copy what must outlive the call (stores copy what they
// are given).
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   []kgo.RecordHeader
}

// Processor handles the records of one subtopology's tasks, one record at a time.
type Processor interface {
	// Process handles one record of the task c names. An error follows processing.exception.handler
	// (stop the application, or log and skip the record); Typed's failure to decode the record's own
	// key or value follows deserialization.exception.handler instead (any other decoding error, of a
	// store's value for one, is the processor's).
	Process(c *Context, r *Record) error
}

// Initializer is a Processor that wants to know when one of its tasks starts processing (after its
// stores are restored, before its first record): schedule punctuations there, as in Kafka Streams'
// Processor.init. A global store's processor is started twice, before the restore of its store and
// after it, as Kafka Streams starts one processor for each.
type Initializer interface {
	Init(c *Context) error
}

// Flusher is a Processor that holds results back between commits, as the DSL's record cache
// (statestore.cache.max.bytes) holds the updates of a key so that only the latest is written.
type Flusher interface {
	// Flush writes what the processor holds for c's task (to its stores, its changelogs, its output
	// topics): it runs before each commit of the task's work, which then includes those writes
	// (under exactly_once_v2, in the transaction being committed). An error stops the commit as a
	// processing error (under exactly_once_v2 the transaction is aborted).
	Flush(c *Context) error
	// Discard drops what the processor holds for c's task on c's thread, unwritten: the task's work
	// since its last commit is being done again (an abort, a retried write), or the task stops on
	// this thread (moved away, closed, made a standby). Its Init runs before it processes again.
	Discard(c *Context)
}

// ProcessorFunc makes a function a Processor.
type ProcessorFunc func(c *Context, r *Record) error

// Process calls f.
func (f ProcessorFunc) Process(c *Context, r *Record) error { return f(c, r) }

// Processors maps subtopology IDs to their processors. Every subtopology of the topology needs one.
type Processors map[string]Processor

// Typed returns a Processor that decodes each record's key and value with ks and vs before calling
// fn. A record that does not decode follows deserialization.exception.handler (its error wraps the
// *serde.DecodeError); an error fn returns follows processing.exception.handler.
func Typed[K, V any](ks serde.Serde[K], vs serde.Serde[V], fn func(c *Context, key K, value V) error) Processor {
	return ProcessorFunc(func(c *Context, r *Record) error {
		k, err := ks.Decode(r.Key)
		if err != nil {
			return &recordDecodeError{fmt.Errorf("key: %w", err)}
		}
		v, err := vs.Decode(r.Value)
		if err != nil {
			return &recordDecodeError{fmt.Errorf("value: %w", err)}
		}
		return fn(c, k, v)
	})
}

// UndecodableRecord marks err as the failure to decode the input record itself, which
// deserialization.exception.handler decides on (log and skip it, or stop), as Typed's own decoding
// failures are: for processors that decode their input themselves (a DSL's source nodes).
func UndecodableRecord(err error) error { return &recordDecodeError{err} }

// recordDecodeError is Typed's failure to decode the record it was given, the one error that
// deserialization.exception.handler decides on (Kafka Streams deserializes a record before any
// processor sees it).
type recordDecodeError struct{ err error }

func (e *recordDecodeError) Error() string { return e.err.Error() }
func (e *recordDecodeError) Unwrap() error { return e.err }

// PunctuationType says which clock drives a punctuation (Kafka Streams' PunctuationType).
type PunctuationType int

const (
	// WallClock punctuations fire as the system clock passes each interval, also when no record
	// comes.
	WallClock PunctuationType = iota + 1
	// StreamTime punctuations fire as the task's stream time (the largest record timestamp it has
	// processed) passes each interval; they do not fire while no record comes.
	StreamTime
)

// Punctuator is called by a scheduled punctuation with the time it fired at (the clock's time, or
// the stream time).
type Punctuator func(c *Context, at time.Time) error

// Context is what a Processor sees of its task while it handles one record (or a punctuation): the
// task, its stores, sending records, the record's time, punctuations. It is valid only during the
// call; do not keep it.
type Context struct {
	app  *App
	task *task
	rec  *Record // nil in Init and punctuations
	ts   time.Time
	// headers replace the record's while a record cache writes an update it held (streamhook.As).
	headers    []kgo.RecordHeader
	hasHeaders bool
	// origin replaces the record's topic, partition and offset likewise (RecordMetadata).
	origin    streamhook.Origin
	hasOrigin bool
}

func init() {
	streamhook.SetClock = func(app any, now func() time.Time) { app.(*App).now = now }
	streamhook.ProcessorMetadata = func(c any, key string) (int64, bool) {
		ctx := c.(*Context)
		if ctx.task.global { // outside the machine, on a goroutine of its own
			return 0, false
		}
		return ctx.app.mach.ProcessorMetadata(ctx.task.id, key)
	}
	streamhook.SetProcessorMetadata = func(c any, key string, v int64) {
		if ctx := c.(*Context); !ctx.task.global {
			ctx.app.mach.SetProcessorMetadata(ctx.task.id, key, v)
		}
	}
	streamhook.Restoring = func(c any) bool {
		ctx := c.(*Context)
		return ctx.task.global && ctx.app.proc.global.restoring.Load()
	}
	streamhook.GlobalApplied = func(app any) map[string]int64 {
		out := map[string]int64{}
		if g := app.(*App).proc.global; g != nil {
			for tp, o := range g.Positions() {
				out[fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)] = o
			}
		}
		return out
	}
	streamhook.As = func(c any, ts time.Time, headers []kgo.RecordHeader, origin streamhook.Origin) func() {
		ctx := c.(*Context)
		ts0, h0, has0, o0, hasO0 := ctx.ts, ctx.headers, ctx.hasHeaders, ctx.origin, ctx.hasOrigin
		ctx.ts, ctx.headers, ctx.hasHeaders, ctx.origin, ctx.hasOrigin = ts, headers, true, origin, true
		return func() { ctx.ts, ctx.headers, ctx.hasHeaders, ctx.origin, ctx.hasOrigin = ts0, h0, has0, o0, hasO0 }
	}
}

// Thread is the index of the stream thread processing the task (1…num.stream.threads): what a
// processor keeps per thread, as Kafka Streams keeps its record cache, is keyed by it.
func (c *Context) Thread() int { return c.app.index }

// Task is the task whose record is being processed.
func (c *Context) Task() tasks.ID { return c.task.id }

// Dropped counts the record being processed as dropped (dropped-records-total, Stats.Dropped), as
// Kafka Streams' processors count a record they skip: one without a key where a key is needed, one
// too late for its window.
func (c *Context) Dropped() { c.app.metrics.dropped.Add(1) }

// CurrentSystemTime is the wall clock's time (Kafka Streams' ProcessorContext.currentSystemTimeMs):
// what a processor throttles work by, as a stream-stream outer join throttles its emission of
// records no other joined.
func (c *Context) CurrentSystemTime() time.Time { return c.app.now() }

// Config is the application's configuration (Kafka Streams' ProcessorContext.appConfigs): what a
// processor reads of the runtime's settings, such as statestore.cache.max.bytes.
func (c *Context) Config() config.Config { return c.app.cfg }

// Timestamp is the current record's timestamp (in a punctuation: the time it fired at). Records
// sent without a timestamp of their own get it, as Kafka Streams forwards the input's timestamp.
func (c *Context) Timestamp() time.Time { return c.ts }

// StreamTime is the largest record timestamp the task has processed (zero before its first record).
func (c *Context) StreamTime() time.Time {
	if c.task.streamTime < 0 {
		return time.Time{}
	}
	return time.UnixMilli(c.task.streamTime)
}

// RecordMetadata is the current record's topic, partition and offset (Kafka Streams'
// ProcessorContext.recordMetadata); ok is false in Init and in punctuations.
func (c *Context) RecordMetadata() (topic string, partition int32, offset int64, ok bool) {
	if c.hasOrigin {
		if !c.origin.OK {
			return "", -1, -1, false
		}
		return c.origin.Topic, c.origin.Partition, c.origin.Offset, true
	}
	if c.rec == nil {
		return "", -1, -1, false
	}
	return c.rec.Topic, c.rec.Partition, c.rec.Offset, true
}

// Headers are the current record's headers (nil in a punctuation).
func (c *Context) Headers() []kgo.RecordHeader {
	if c.hasHeaders {
		return c.headers
	}
	if c.rec == nil {
		return nil
	}
	return c.rec.Headers
}

// ErrUnknownStore is returned for a store name that the task's subtopology has no changelog for.
var ErrUnknownStore = errors.New("stream: unknown store")

// Store returns the task's store name as bytes (see KeyValue for typed access), or a store whose
// every call fails with ErrUnknownStore when the task's subtopology has no such store.
func (c *Context) Store(name string) store.KeyValue {
	t := c.task
	if t.lastStore.kv != nil && t.lastStore.name == name {
		return t.lastStore.kv
	}
	if g := c.app.proc.global; g != nil {
		if s := g.stores[name]; s != nil {
			var kv store.KeyValue = globalReader{s}
			if t.global && s.def.Subtopology == t.id.Subtopology {
				kv = globalWriter{globalReader{s}}
			}
			t.lastStore.name, t.lastStore.kv = name, kv
			return kv
		}
	}
	if conn := c.app.connected[t.id.Subtopology]; conn != nil && !conn.stores[name] {
		return unknownStore{name: name, task: t.id, connected: conn.names}
	}
	if s := t.stores[name]; s != nil {
		t.lastStore.name, t.lastStore.kv = name, s
		return s
	}
	return unknownStore{name: name, task: t.id}
}

// Send writes a record to topic: an output (sink) topic or a repartition topic, partitioned by its
// key as Kafka's default partitioner does (so Java members agree where a key goes). The write is
// asynchronous; the runtime commits the input only once it is acknowledged. A nil key spreads
// records over the partitions. headers are optional.
func (c *Context) Send(topic string, key, value []byte, headers ...kgo.RecordHeader) error {
	if err := c.sendable(topic); err != nil {
		return err
	}
	c.app.produce(c.task.id, &kgo.Record{Topic: topic, Key: key, Value: value, Headers: headers, Timestamp: c.ts})
	return nil
}

// SendAt is Send with the record's timestamp given (Kafka Streams' forward of a record
// withTimestamp): an aggregation's result carries the latest timestamp of what it aggregates.
func (c *Context) SendAt(topic string, ts time.Time, key, value []byte, headers ...kgo.RecordHeader) error {
	if err := c.sendable(topic); err != nil {
		return err
	}
	c.app.produce(c.task.id, &kgo.Record{Topic: topic, Key: key, Value: value, Headers: headers, Timestamp: ts})
	return nil
}

// SendBy is SendAt with the partition chosen by partitionKey rather than by key: murmur2 of
// partitionKey, as Kafka Streams' WindowedStreamPartitioner places a windowed key by its inner key
// alone (the DSL's To does so for a key serde that is a serde.PartitionKeyer; a repartition does
// not, as in Kafka Streams).
func (c *Context) SendBy(topic string, ts time.Time, partitionKey, key, value []byte, headers ...kgo.RecordHeader) error {
	if err := c.sendable(topic); err != nil {
		return err
	}
	var ctx context.Context
	if n := len(partitionKey); n <= len(key) && bytes.Equal(key[:n], partitionKey) {
		// The partition key leads the key, as a windowed key's inner key does: a context shared
		// by every record with a partition key of that length, not one made for this record.
		ctx = c.app.keyPrefixContext(n)
	} else {
		ctx = tasks.WithPartitionKey(c.app.deliveryContext(), partitionKey)
	}
	c.app.produce(c.task.id, &kgo.Record{Topic: topic, Key: key, Value: value, Headers: headers, Timestamp: ts, Context: ctx})
	return nil
}

// SendTo is SendAt to the given partition of topic, as a Kafka Streams StreamPartitioner that names
// one places a record (the DSL's foreign-key join sends each response back to the partition of the
// table row that subscribed). The partition must exist: the write fails otherwise.
func (c *Context) SendTo(topic string, partition int32, ts time.Time, key, value []byte, headers ...kgo.RecordHeader) error {
	if err := c.sendable(topic); err != nil {
		return err
	}
	if partition < 0 {
		return fmt.Errorf("stream: SendTo partition %d of %s", partition, topic)
	}
	c.app.produce(c.task.id, &kgo.Record{Topic: topic, Key: key, Value: value, Headers: headers, Timestamp: ts,
		Context: tasks.WithPartition(c.app.deliveryContext(), partition)})
	return nil
}

// sendable refuses a topic Send may not write.
func (c *Context) sendable(topic string) error {
	if topic == "" {
		return errors.New("stream: Send needs a topic")
	}
	if c.task.global {
		return ErrGlobalContext
	}
	if topic != c.task.lastSent {
		if c.app.changelogs[topic] {
			return fmt.Errorf("stream: %s is a changelog topic: write to the store instead", topic)
		}
		c.task.lastSent = topic
	}
	return nil
}

// smallRecord is a record and the bytes of its key and value in one allocation, for the small
// records most applications write: nobody but the record holds those bytes (Topic.Send encoded
// them), and the client holds the record until it is acknowledged, so they live and die together.
// N is the room for the bytes: the sizes offered fill the allocator's size classes above the
// record's own 160 bytes (176, 192, 208), so no more memory is taken than two allocations took.
type smallRecord[N any] struct {
	r   kgo.Record
	buf N
}

// smallRecordBytes is the most key and value bytes a smallRecord holds.
const smallRecordBytes = 48

// newRecord returns a record whose Key and Value are key and value copied: in one allocation when
// they fit a smallRecord.
func newRecord(key, value []byte) *kgo.Record {
	var r *kgo.Record
	var buf []byte
	switch n := len(key) + len(value); {
	case n <= 16:
		sr := new(smallRecord[[16]byte])
		r, buf = &sr.r, sr.buf[:n:n]
	case n <= 32:
		sr := new(smallRecord[[32]byte])
		r, buf = &sr.r, sr.buf[:n:n]
	case n <= smallRecordBytes:
		sr := new(smallRecord[[smallRecordBytes]byte])
		r, buf = &sr.r, sr.buf[:n:n]
	default:
		r, buf = new(kgo.Record), make([]byte, n)
	}
	k := copy(buf, key)
	copy(buf[k:], value)
	r.Key, r.Value = buf[:k:k], buf[k:]
	return r
}

// Schedule calls fn every interval on the clock typ says, on this task, until the task leaves this
// process or the returned cancel is called. Call it from Init (once per task) or from Process.
func (c *Context) Schedule(interval time.Duration, typ PunctuationType, fn Punctuator) (cancel func(), err error) {
	if interval < time.Millisecond {
		return nil, fmt.Errorf("stream: a punctuation interval must be at least 1 ms, not %v", interval)
	}
	if typ != WallClock && typ != StreamTime {
		return nil, fmt.Errorf("stream: unknown punctuation type %d", typ)
	}
	if fn == nil {
		return nil, errors.New("stream: Schedule needs a function")
	}
	if c.task.global {
		return nil, ErrGlobalContext
	}
	// The machine keeps the schedule (as Kafka Streams schedules them: wall-clock one interval from
	// now; stream-time on the grid of the interval from time 0); the task keeps the function.
	a, t := c.app, c.task
	id := a.mach.Schedule(t.id, typ == StreamTime, interval, a.now().UnixMilli())
	if t.punctuators == nil {
		t.punctuators = map[uint64]Punctuator{}
	}
	t.punctuators[id] = fn
	return func() {
		a.mach.Cancel(t.id, id)
		delete(t.punctuators, id)
	}, nil
}

// Context returns a context.Context that ends when the application stops, for calls a processor
// makes (a lookup in another system).
func (c *Context) Context() context.Context {
	if c.task != nil && c.task.global {
		return c.app.proc.global.ctx
	}
	return c.app.runCtx
}

// Topic is a typed output: the topic's name with the serdes of its keys and values.
type Topic[K, V any] struct {
	name string
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	// ka and va are ks and vs as serde.Appenders (nil when they are not), asserted once here
	// rather than at every Send.
	ka serde.Appender[K]
	va serde.Appender[V]
}

// Output returns the typed output topic name (a sink or repartition topic).
func Output[K, V any](name string, ks serde.Serde[K], vs serde.Serde[V]) Topic[K, V] {
	t := Topic[K, V]{name: name, ks: ks, vs: vs}
	t.ka, _ = ks.(serde.Appender[K])
	t.va, _ = vs.(serde.Appender[V])
	return t
}

// Name is the topic's name.
func (t Topic[K, V]) Name() string { return t.name }

// Send encodes key and value and sends them to the topic (see Context.Send).
func (t Topic[K, V]) Send(c *Context, key K, value V, headers ...kgo.RecordHeader) error {
	return t.SendAt(c, c.ts, key, value, headers...)
}

// SendAt is Send with the record's timestamp given (see Context.SendAt).
func (t Topic[K, V]) SendAt(c *Context, ts time.Time, key K, value V, headers ...kgo.RecordHeader) error {
	if ka, va := t.ka, t.va; ka != nil && va != nil {
		// Both into the loop's scratch, then into the record's own copy (it is written after Send
		// returns), in the record's allocation when small.
		buf, err := ka.AppendEncode(c.app.keyBuf[:0], key)
		if err != nil {
			return fmt.Errorf("stream: encoding a key for %s: %w", t.name, err)
		}
		n := len(buf)
		if buf, err = va.AppendEncode(buf, value); err != nil {
			return fmt.Errorf("stream: encoding a value for %s: %w", t.name, err)
		}
		c.app.keyBuf = buf
		if err := c.sendable(t.name); err != nil {
			return err
		}
		r := newRecord(buf[:n], buf[n:])
		r.Topic, r.Headers, r.Timestamp = t.name, headers, ts
		c.app.produce(c.task.id, r)
		return nil
	}
	k, err := t.ks.Encode(key)
	if err != nil {
		return fmt.Errorf("stream: encoding a key for %s: %w", t.name, err)
	}
	v, err := t.vs.Encode(value)
	if err != nil {
		return fmt.Errorf("stream: encoding a value for %s: %w", t.name, err)
	}
	return c.SendAt(t.name, ts, k, v, headers...)
}

// A Store is anything that names a state store: KeyValueStore, WindowStore, or a name of your own
// (StoreName).
type Store interface{ Name() string }

// TimestampedStore names a store whose values carry their timestamp, as Kafka Streams' timestamped
// key-value stores (the DSL's) keep them: each value is its timestamp (8 bytes, big-endian
// milliseconds) followed by the value itself. Its changelog carries the value alone, with the
// timestamp as the record's, as Kafka Streams writes it, so each restores the other's changelog;
// a value shorter than 8 bytes is refused. Give it to Connect.
type TimestampedStore string

// Name is the name.
func (n TimestampedStore) Name() string { return string(n) }

// TimestampedHeadersStore names a TimestampedStore whose changelog is written as Kafka Streams 4.4's
// headers-aware key-value stores write theirs (the DSL's, with dsl.store.format=HEADERS): the DSL
// stores each value with empty headers, so an update's record carries none, and a deletion's
// carries the headers of the record that deleted. The values it keeps are a TimestampedStore's.
type TimestampedHeadersStore string

// Name is the name.
func (n TimestampedHeadersStore) Name() string { return string(n) }

// RecordHeadersStore names a TimestampedStore whose changelog records carry the headers of the
// record that wrote them, as Kafka Streams 4.4's headers-aware stores write theirs when they keep
// each record's headers with its value (the foreign-key join's subscription store, whatever
// dsl.store.format says). The values it keeps are a TimestampedStore's.
type RecordHeadersStore string

// Name is the name.
func (n RecordHeadersStore) Name() string { return string(n) }

// SuppressionBufferStore names a key-value store kept as Kafka Streams keeps a suppression buffer's
// changelog (its InMemoryTimeOrderedKeyValueChangeBuffer): every update's changelog record carries
// the header v=3, which tells Kafka Streams the value's format, and a deletion's none; like a
// BufferStore's, the records carry the wall clock of their write. The values are written as given
// (the DSL's Suppress writes Kafka Streams' buffer values). Give it to Connect.
type SuppressionBufferStore string

// Name is the name.
func (n SuppressionBufferStore) Name() string { return string(n) }

// SuppressionBufferHeadersStore is SuppressionBufferStore as Kafka Streams 4.4 keeps a suppression
// buffer under dsl.store.format=HEADERS: each update's changelog record carries the headers of the
// context it is written in, which the writer sets (the DSL's Suppress: v=3 and the prior and old
// values' headers and timestamps, vh.prior and vh.old), and a deletion's none; the values and the
// wall clock are as SuppressionBufferStore's. Give it to Connect.
type SuppressionBufferHeadersStore string

// Name is the name.
func (n SuppressionBufferHeadersStore) Name() string { return string(n) }

// BufferStore names a key-value store kept as Kafka Streams keeps a time-ordered buffer's changelog
// (a stream-table join's grace buffer, RocksDBTimeOrderedKeyValueBuffer): Kafka Streams sends its
// records without a timestamp, so that its producer stamps them with the wall clock, and so they
// carry the wall clock of their write here rather than the record's time. Give it to Connect.
type BufferStore string

// Name is the name.
func (n BufferStore) Name() string { return string(n) }

// suppressionBufferHeaders are the headers of a suppression buffer's changelog updates.
var suppressionBufferHeaders = []kgo.RecordHeader{{Key: "v", Value: []byte{3}}}

// StoreName is a store's name as a Store.
type StoreName string

// Name is the name.
func (n StoreName) Name() string { return string(n) }

// Connect says which stores p uses, as Kafka Streams' Topology.addStateStore connects stores to
// processors: New refuses a store its subtopology does not have (a misspelled name, a changelog
// missing from the topology), naming the stores it has, and at run time p may reach only these
// stores. A Processor not connected may reach every store of its subtopology.
func Connect(p Processor, stores ...Store) Processor {
	c := &connected{Processor: p, stores: map[string]bool{}, timestamped: map[string]bool{}, headers: map[string]headerMode{},
		windows: map[string]windowSpec{}, versioned: map[string]int64{}, logHeaders: map[string][]kgo.RecordHeader{}, wallClock: map[string]bool{}}
	c.flusher, _ = p.(Flusher)
	for _, s := range stores {
		c.names = append(c.names, s.Name())
		c.stores[s.Name()] = true
		switch s := s.(type) {
		case windowDecl:
			c.windows[s.Name()] = s.spec()
			switch spec := s.spec(); {
			case spec.recordHeaders:
				c.headers[s.Name()] = headersAlways
			case spec.headers:
				c.headers[s.Name()] = headersOnDelete
			}
		case versionedDecl:
			c.versioned[s.Name()] = s.versionedHistory()
		case TimestampedStore:
			c.timestamped[s.Name()] = true
		case TimestampedHeadersStore:
			c.timestamped[s.Name()], c.headers[s.Name()] = true, headersOnDelete
		case RecordHeadersStore:
			c.timestamped[s.Name()], c.headers[s.Name()] = true, headersAlways
		case SuppressionBufferStore:
			c.logHeaders[s.Name()] = suppressionBufferHeaders
			c.wallClock[s.Name()] = true
		case SuppressionBufferHeadersStore:
			c.headers[s.Name()] = headersAlways
			c.wallClock[s.Name()] = true
		case BufferStore:
			c.wallClock[s.Name()] = true
		}
	}
	if in, ok := p.(Initializer); ok {
		return &connectedInit{connected: c, init: in}
	}
	return c
}

// connected is a Processor with the stores it uses.
type connected struct {
	Processor
	names       []string // as given
	stores      map[string]bool
	timestamped map[string]bool       // the stores whose values carry their timestamp (TimestampedStore)
	headers     map[string]headerMode // the stores whose changelog carries headers (TimestampedHeadersStore, RecordHeadersStore)
	windows     map[string]windowSpec // the window stores (Window, TimestampedWindowStore)
	versioned   map[string]int64      // the versioned stores (Versioned): their history retention in ms
	// logHeaders are the headers of the changelog updates of the stores that have fixed ones
	// (SuppressionBufferStore).
	logHeaders map[string][]kgo.RecordHeader
	// wallClock are the stores whose changelog records carry the wall clock of their write
	// (SuppressionBufferStore, BufferStore).
	wallClock map[string]bool
	flusher   Flusher // p, if it holds results back
}

// Flush passes a connected Flusher's Flush on (nothing otherwise), so that a connected processor
// wrapped again keeps its record cache.
func (c *connected) Flush(ctx *Context) error {
	if c.flusher != nil {
		return c.flusher.Flush(ctx)
	}
	return nil
}

// Discard passes a connected Flusher's Discard on (nothing otherwise).
func (c *connected) Discard(ctx *Context) {
	if c.flusher != nil {
		c.flusher.Discard(ctx)
	}
}

// flusherOf is p as a Flusher, connected or not (nil when it holds nothing back).
func flusherOf(p Processor) Flusher {
	if c := connectionsOf(p); c != nil {
		return c.flusher
	}
	f, _ := p.(Flusher)
	return f
}

// connectedInit is a connected Processor that has an Init.
type connectedInit struct {
	*connected
	init Initializer
}

// Init calls the processor's Init.
func (c *connectedInit) Init(ctx *Context) error { return c.init.Init(ctx) }

// connectionsOf is the stores p was connected to (nil when it was not).
func connectionsOf(p Processor) *connected {
	switch c := p.(type) {
	case *connected:
		return c
	case *connectedInit:
		return c.connected
	}
	return nil
}
