package dsl

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BufferFull is what a bounded suppression buffer does when it is full.
type BufferFull int

const (
	// EmitEarlyWhenFull emits the oldest updates it holds until it is within its bounds again
	// (Kafka Streams' emitEarlyWhenFull, the default of BufferConfig.maxRecords and maxBytes).
	EmitEarlyWhenFull BufferFull = iota
	// ShutDownWhenFull stops the application with an error (Kafka Streams' shutDownWhenFull).
	ShutDownWhenFull
)

// BufferConfig bounds a suppression buffer (Kafka Streams' Suppressed.BufferConfig): the zero value
// is unbounded (BufferConfig.unbounded()).
type BufferConfig struct {
	// MaxRecords and MaxBytes bound the keys it holds and their size as Kafka Streams estimates it
	// (0: no bound). A negative bound is a bound of none, Kafka Streams' maxRecords(0) and
	// maxBytes(0) (which the zero value cannot say): the buffer holds no update past the record
	// that brought it, which it emits at once (EmitEarlyWhenFull) or fails on (ShutDownWhenFull).
	MaxRecords, MaxBytes int64
	// WhenFull is what it does beyond a bound.
	WhenFull BufferFull
	// LoggingDisabled keeps it in memory only, without a changelog (withLoggingDisabled): what it holds
	// is lost when its task moves or restarts.
	LoggingDisabled bool
}

func (bc BufferConfig) bounded() bool { return bc.MaxRecords != 0 || bc.MaxBytes != 0 }

// bound prints a BufferConfig bound: a number, or "no bound" for 0.
func bound(n int64) string {
	if n == 0 {
		return "no bound"
	}
	return strconv.FormatInt(max(n, 0), 10)
}

// over says whether a buffer holding records keys in size bytes is beyond bc's bounds.
func (bc BufferConfig) over(records int, size int64) bool {
	return bc.MaxRecords != 0 && int64(records) > max(bc.MaxRecords, 0) ||
		bc.MaxBytes != 0 && size > max(bc.MaxBytes, 0)
}

// Suppressed is how Suppress holds a table's updates back (Kafka Streams' Suppressed): made by
// UntilWindowCloses or UntilTimeLimit, named with WithName.
type Suppressed struct {
	windowCloses bool
	limit        time.Duration
	buffer       BufferConfig
	name         string
}

// UntilWindowCloses holds a windowed table's updates until their window closes (its end plus the
// windowed aggregation's grace period, in stream time), then emits each window's final result once
// (Kafka Streams' Suppressed.untilWindowCloses). The buffer must not emit early: unbounded, or
// ShutDownWhenFull.
func UntilWindowCloses(b BufferConfig) Suppressed {
	return Suppressed{windowCloses: true, buffer: b}
}

// UntilTimeLimit holds each key's updates until limit has passed in stream time since the first one
// it holds, then emits the latest (Kafka Streams' Suppressed.untilTimeLimit).
func UntilTimeLimit(limit time.Duration, b BufferConfig) Suppressed {
	return Suppressed{limit: limit, buffer: b}
}

// WithName names the suppression's node, and its buffer's store <name>-store (Kafka Streams'
// Suppressed.withName).
func (s Suppressed) WithName(name string) Suppressed {
	s.name = name
	return s
}

// ErrBufferFull is returned (wrapped) when a suppression buffer that shuts down when full is full.
var ErrBufferFull = errors.New("dsl: a suppression buffer exceeded its bounds")

// Suppress holds t's updates back (Kafka Streams' KTable.suppress), as s says: the result table
// emits, for each key, the latest update it held when the key's time comes, with that update's
// timestamp and headers, in the order of their times. UntilWindowCloses drops a window's deletion
// at its close (its final result is that there is none). The buffer is kept in memory and, unless
// its BufferConfig disables logging, in a changelog written as Kafka Streams writes a suppression
// buffer's (<application.id>-<store>-changelog), so a Java and a Go member restore each other's.
// The time that drives emission is the largest timestamp the suppression has seen in the task
// since it started, as in Kafka Streams: after a restart, held updates are emitted by the next
// record.
func (t *KTable[K, V]) Suppress(s Suppressed) *KTable[K, V] {
	b := t.b
	switch {
	case t.ver != nil:
		b.fail("Suppress: suppression is only supported for tables that are not versioned, as in Kafka Streams (the table is kept in the versioned store %q)", t.store)
	case t.versioned:
		b.fail("Suppress: suppression is only supported for tables that are not versioned, as in Kafka Streams (this one derives from a versioned table without a Materialized in between)")
	}
	name, store := s.name, s.name+"-store"
	if s.name == "" {
		name = b.newName("KTABLE-SUPPRESS-")
		store = b.newStoreName("KTABLE-SUPPRESS-")
	}
	duration := s.limit.Milliseconds()
	switch {
	case s.windowCloses && t.windowEnd == nil:
		b.fail("Suppress %q: UntilWindowCloses needs a table of a windowed aggregation", name)
	case s.windowCloses:
		duration = t.grace
		if s.buffer.bounded() && s.buffer.WhenFull != ShutDownWhenFull {
			b.fail("Suppress %q: UntilWindowCloses needs a buffer that is unbounded or shuts down when full", name)
		}
	case s.limit < 0:
		b.fail("Suppress %q: the time limit %v is negative", name, s.limit)
	}
	if t.ks == nil || t.vs == nil {
		b.fail("Suppress %q needs serdes for %s and %s", name, typeName[K](), typeName[V]())
	}
	n := b.add(&node{name: name, kind: processorNode}, t.n)
	if !s.buffer.LoggingDisabled {
		n.stores = []string{store}
		b.declare(store, storeKind{decl: stream.SuppressionBufferStore(store),
			headersDecl: stream.SuppressionBufferHeadersStore(store),
			changelog:   func(n topology.Names) topology.TopicInfo { return n.KeyValueChangelog(store) }})
	}
	// Kafka Streams gives the suppressed table its parent's node as its source node.
	f := &KTable[K, V]{b: b, n: n, out: newFanout[K, change[V]](b), ks: t.ks, vs: t.vs, sources: []*node{t.n},
		windowEnd: t.windowEnd, grace: t.grace}
	f.enableOld = func(force bool) bool {
		f.sendOld = t.enableOld(force)
		return f.sendOld
	}
	sp := &suppression[K, V]{f: f, duration: duration, windowCloses: s.windowCloses, config: s.buffer, store: store}
	if s.buffer.LoggingDisabled {
		sp.store = ""
	}
	n.init = sp.start
	n.flushers = append(n.flushers, flusher{flush: sp.flush, discard: sp.discard})
	t.out.attach(sp.process)
	// Kafka Streams' suppression has its parent send old values (the buffer keeps the value before
	// the updates it holds, for its value getter) and takes its parent's value getter as it is made,
	// which keeps a table read from a topic in its store.
	t.enableOld(true)
	stores, get := t.valueGetter()
	f.getter = func() ([]string, func(*stream.Context, K) (stamped[V], bool, error)) {
		return stores, func(c *stream.Context, k K) (stamped[V], bool, error) { return sp.get(c, k, get) }
	}
	return f
}

// suppression is the processing of a Suppress (Kafka Streams' KTableSuppressProcessor over an
// InMemoryTimeOrderedKeyValueChangeBuffer): per task, a buffer of the latest update of each key in
// the order of their times.
type suppression[K, V any] struct {
	f            *KTable[K, V]
	duration     int64 // how far behind stream time a key's time must be to be emitted (ms)
	windowCloses bool  // times are window ends, and deletions are dropped at emission
	config       BufferConfig
	store        string // the buffer's store ("": logging disabled)
	// buffers are the tasks' buffers by tasks.ID (a sync.Map: the processor is shared by the stream
	// threads, each with its own tasks).
	buffers sync.Map
}

// buffered is one key's held update: Kafka Streams' BufferKey and BufferValue.
type buffered struct {
	key   []byte
	time  int64
	prior []byte // the value before the first update held (nil: null)
	old   []byte // the update's old value (nil: null)
	new   []byte // the update's new value (nil: null)
	// oldIsPrior: old equals prior (always so for a key's first update held), which Kafka Streams
	// keeps and counts once.
	oldIsPrior bool
	// oldAt is the old value's headers and timestamp under dsl.store.format=HEADERS, as Kafka
	// Streams 4.4 writes them in the header vh.old (valueHeaders): at a key's first update held
	// none and -1, at a later one the previous update's record's. Nil: the first (also for an
	// update read back from the store, which is logged again only once it is updated).
	oldAt []byte
	ctx   recordContext
	index int // in the heap
}

// recordContext is the context of the record that made an update (Kafka Streams'
// ProcessorRecordContext, as a suppression buffer keeps it).
type recordContext struct {
	ts, offset int64
	topic      string
	partition  int32
	headers    []kgo.RecordHeader
}

// taskBuffer is one task's buffer.
type taskBuffer struct {
	byKey    map[string]*buffered
	order    bufferOrder
	size     int64           // Kafka Streams' estimate of the bytes held
	dirty    map[string]bool // keys written or emitted since the last flush
	observed int64           // the largest timestamp seen since the task started (-1: none)
	loaded   bool
}

// bufferOrder orders the held updates by time, then key bytes (Kafka Streams' BufferKey order).
type bufferOrder []*buffered

func (o bufferOrder) Len() int { return len(o) }
func (o bufferOrder) Less(i, j int) bool {
	if o[i].time != o[j].time {
		return o[i].time < o[j].time
	}
	return bytes.Compare(o[i].key, o[j].key) < 0
}
func (o bufferOrder) Swap(i, j int) {
	o[i], o[j] = o[j], o[i]
	o[i].index, o[j].index = i, j
}
func (o *bufferOrder) Push(x any) {
	e := x.(*buffered)
	e.index = len(*o)
	*o = append(*o, e)
}
func (o *bufferOrder) Pop() any {
	old := *o
	e := old[len(old)-1]
	*o = old[:len(old)-1]
	return e
}

// start begins the task's buffer afresh (Init): it is read from the store at its first use.
func (sp *suppression[K, V]) start(c *stream.Context) error {
	sp.buffers.Store(c.Task(), &taskBuffer{observed: -1})
	return nil
}

// of is c's task's buffer, read from the store if it has not been since the task started or since
// its work was discarded.
func (sp *suppression[K, V]) of(c *stream.Context) (*taskBuffer, error) {
	v, ok := sp.buffers.Load(c.Task())
	if !ok {
		v, _ = sp.buffers.LoadOrStore(c.Task(), &taskBuffer{observed: -1})
	}
	tb := v.(*taskBuffer)
	if !tb.loaded {
		if err := sp.load(c, tb); err != nil {
			return nil, err
		}
	}
	return tb, nil
}

// load reads the buffer from its store (the state the last commit left, restored from the
// changelog when the task moved).
func (sp *suppression[K, V]) load(c *stream.Context, tb *taskBuffer) error {
	tb.byKey, tb.order, tb.size, tb.dirty = map[string]*buffered{}, nil, 0, map[string]bool{}
	if sp.store != "" {
		st := c.Store(sp.store)
		if st == nil {
			return fmt.Errorf("dsl: the suppression buffer %q is not a store of task %s", sp.store, c.Task())
		}
		it, err := st.Range(nil, nil)
		if err != nil {
			return err
		}
		defer it.Close()
		for it.Next() {
			e, err := decodeBuffered(it.Key(), it.Value())
			if err != nil {
				return fmt.Errorf("dsl: the suppression buffer %q: %w", sp.store, err)
			}
			tb.byKey[string(e.key)] = e
			heap.Push(&tb.order, e)
			tb.size += e.sizeEstimate()
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	tb.loaded = true
	return nil
}

// process holds an update, then emits what is due and what exceeds the buffer's bounds.
func (sp *suppression[K, V]) process(c *stream.Context, md meta, k K, ch change[V]) error {
	tb, err := sp.of(c)
	if err != nil {
		return err
	}
	at := recordTime(c, md)
	tb.observed = max(tb.observed, at.UnixMilli())
	if md.nullKey {
		return nil // a table update always has a key; nothing to hold otherwise
	}
	kb, err := sp.f.ks.Encode(k)
	if err != nil {
		return fmt.Errorf("dsl: encoding a key for the suppression buffer: %w", err)
	}
	var oldB, newB []byte
	if ch.hasOld {
		if oldB, err = encodeNonNil(sp.f.vs, ch.old); err != nil {
			return err
		}
	}
	if ch.hasNew {
		if newB, err = encodeNonNil(sp.f.vs, ch.new); err != nil {
			return err
		}
	}
	topic, partition, offset, _ := c.RecordMetadata()
	rc := recordContext{ts: at.UnixMilli(), offset: offset, topic: topic, partition: partition, headers: md.headersOf(c)}
	bt := at.UnixMilli() // the buffer time: the record's, or its window's end
	if sp.windowCloses {
		bt = sp.f.windowEnd(k)
	}
	if e, ok := tb.byKey[string(kb)]; ok {
		// Kafka Streams keeps a held key where it is: its first update's time, and the value before it.
		tb.size -= e.sizeEstimate()
		e.oldAt = valueHeaders(e.ctx.headers, e.ctx.ts)
		e.old, e.new, e.oldIsPrior, e.ctx = oldB, newB, sameValue(e.prior, oldB), rc
		tb.size += e.sizeEstimate()
	} else {
		e := &buffered{key: kb, time: bt, prior: oldB, old: oldB, new: newB, oldIsPrior: true, ctx: rc}
		tb.byKey[string(kb)] = e
		heap.Push(&tb.order, e)
		tb.size += e.sizeEstimate()
	}
	if sp.store != "" {
		tb.dirty[string(kb)] = true
	}
	expiry := tb.observed - sp.duration
	for len(tb.order) > 0 && tb.order[0].time <= expiry {
		if err := sp.emit(c, tb); err != nil {
			return err
		}
	}
	over := func() bool { return sp.config.over(len(tb.order), tb.size) }
	if !over() {
		return nil
	}
	if sp.config.WhenFull == ShutDownWhenFull {
		return fmt.Errorf("%w: %d records of %s and %d bytes of %s held (ShutDownWhenFull)", ErrBufferFull,
			len(tb.order), bound(sp.config.MaxRecords), tb.size, bound(sp.config.MaxBytes))
	}
	for over() {
		if err := sp.emit(c, tb); err != nil {
			return err
		}
	}
	return nil
}

// emit takes the earliest update from the buffer and hands it on with its own record's timestamp
// and headers, unless it is a deletion UntilWindowCloses drops.
func (sp *suppression[K, V]) emit(c *stream.Context, tb *taskBuffer) error {
	e := heap.Pop(&tb.order).(*buffered)
	delete(tb.byKey, string(e.key))
	tb.size -= e.sizeEstimate()
	if sp.store != "" {
		tb.dirty[string(e.key)] = true
	}
	if e.new == nil && sp.windowCloses {
		return nil
	}
	k, err := sp.f.ks.Decode(e.key)
	if err != nil {
		return fmt.Errorf("dsl: decoding a key of the suppression buffer: %w", err)
	}
	var ch change[V]
	if e.new != nil {
		if ch.new, err = sp.f.vs.Decode(e.new); err != nil {
			return fmt.Errorf("dsl: decoding a value of the suppression buffer: %w", err)
		}
		ch.hasNew = true
	}
	if e.old != nil && sp.f.sendOld {
		if ch.old, err = sp.f.vs.Decode(e.old); err != nil {
			return fmt.Errorf("dsl: decoding a value of the suppression buffer: %w", err)
		}
		ch.hasOld = true
	}
	md := meta{at: time.UnixMilli(e.ctx.ts), headers: e.ctx.headers, ownHeaders: true}
	return sp.f.out.emit(c, md, k, ch)
}

// get is the suppressed table's value of k: the value before the updates held for k, if it holds
// any, else the table's (Kafka Streams' suppression value getter).
func (sp *suppression[K, V]) get(c *stream.Context, k K, parent func(*stream.Context, K) (stamped[V], bool, error)) (stamped[V], bool, error) {
	tb, err := sp.of(c)
	if err != nil {
		return stamped[V]{}, false, err
	}
	kb, err := sp.f.ks.Encode(k)
	if err != nil {
		return stamped[V]{}, false, err
	}
	e, ok := tb.byKey[string(kb)]
	if !ok {
		return parent(c, k)
	}
	if e.prior == nil {
		return stamped[V]{}, false, nil
	}
	v, err := sp.f.vs.Decode(e.prior)
	// Kafka Streams gives the prior value no timestamp (RecordQueue.UNKNOWN, -1).
	return stamped[V]{v: v, at: time.UnixMilli(-1)}, err == nil, err
}

// sameValue says whether two values (nil: null) are equal, as Kafka Streams' BufferValue finds an
// old value equal to the prior one and keeps it once.
func sameValue(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// flush writes what changed in the buffer since the last commit to its store and changelog (Kafka
// Streams logs a buffer's dirty keys at commit): a held key's update, or a tombstone for a key
// emitted.
func (sp *suppression[K, V]) flush(c *stream.Context) error {
	if sp.store == "" {
		return nil
	}
	v, ok := sp.buffers.Load(c.Task())
	if !ok {
		return nil
	}
	tb := v.(*taskBuffer)
	if !tb.loaded || len(tb.dirty) == 0 {
		return nil
	}
	st := c.Store(sp.store)
	headers := c.Config().Runtime.DSLStoreFormat == config.DSLStoreFormatHeaders
	for k := range tb.dirty {
		e, ok := tb.byKey[k]
		var hs []kgo.RecordHeader // under HEADERS, the changelog record's (see e.logHeaders)
		if ok && headers {
			hs = e.logHeaders()
		}
		restore := streamhook.As(c, c.Timestamp(), hs, streamhook.Origin{})
		var err error
		if ok {
			err = st.Put(e.key, e.encode())
		} else {
			err = st.Delete([]byte(k))
		}
		restore()
		if err != nil {
			return err
		}
	}
	clear(tb.dirty)
	return nil
}

// noValueHeaders is valueHeaders of no headers and no timestamp (-1): a prior value's, and a held
// key's first old value's.
var noValueHeaders = valueHeaders(nil, -1)

// logHeaders are the headers of e's changelog record under dsl.store.format=HEADERS, as Kafka
// Streams 4.4's suppression buffer writes them: v=3 (the value's format, as without them), then
// the prior value's headers and timestamp (vh.prior: always none and -1, as Kafka Streams keeps
// them) unless the prior is null or is the old value with its headers and timestamp, then the old
// value's (vh.old) unless it is null. The new value's are the record context's, in the value.
func (e *buffered) logHeaders() []kgo.RecordHeader {
	hs := []kgo.RecordHeader{{Key: "v", Value: []byte{3}}}
	oldAt := e.oldAt
	if oldAt == nil {
		oldAt = noValueHeaders
	}
	if e.prior != nil && !(bytes.Equal(oldAt, noValueHeaders) && sameValue(e.prior, e.old)) {
		hs = append(hs, kgo.RecordHeader{Key: "vh.prior", Value: noValueHeaders})
	}
	if e.old != nil {
		hs = append(hs, kgo.RecordHeader{Key: "vh.old", Value: oldAt})
	}
	return hs
}

// valueHeaders is a value's headers and timestamp as Kafka Streams 4.4's headers-aware stores
// prefix a value with them: the size of the headers' bytes (a zigzag varint), the headers (none:
// nothing; else their count, then each key's length, key, value's length, -1 for null, and value,
// all lengths zigzag varints), then the timestamp (8 bytes, big-endian).
func valueHeaders(headers []kgo.RecordHeader, ts int64) []byte {
	var hb []byte
	if len(headers) > 0 {
		hb = binary.AppendVarint(hb, int64(len(headers)))
		for _, h := range headers {
			hb = binary.AppendVarint(hb, int64(len(h.Key)))
			hb = append(hb, h.Key...)
			if h.Value == nil {
				hb = binary.AppendVarint(hb, -1)
				continue
			}
			hb = binary.AppendVarint(hb, int64(len(h.Value)))
			hb = append(hb, h.Value...)
		}
	}
	b := binary.AppendVarint(nil, int64(len(hb)))
	b = append(b, hb...)
	return binary.BigEndian.AppendUint64(b, uint64(ts))
}

// discard drops what the task's buffer took since the last commit: it is read from the store again
// at its next use, as Kafka Streams restores a task's buffer when the task is revived.
func (sp *suppression[K, V]) discard(c *stream.Context) {
	if v, ok := sp.buffers.Load(c.Task()); ok {
		tb := v.(*taskBuffer)
		tb.loaded, tb.observed = false, -1
	}
}

// encodeNonNil encodes v; a serde's nil is an empty value (the buffer's null is the absent value).
func encodeNonNil[V any](vs serde.Serde[V], v V) ([]byte, error) {
	b, err := vs.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("dsl: encoding a value to hold in a buffer (a suppression's or a join's grace): %w", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// sizeEstimate is Kafka Streams' estimate of the bytes an update held takes (computeRecordSize).
func (e *buffered) sizeEstimate() int64 {
	n := int64(8 + len(e.key) + len(e.prior) + len(e.new))
	if !e.oldIsPrior {
		n += int64(len(e.old))
	}
	n += 8 + 8 + int64(len(utf16.Encode([]rune(e.ctx.topic)))) + 4
	for _, h := range e.ctx.headers {
		n += int64(len(utf16.Encode([]rune(h.Key))) + len(h.Value))
	}
	return n
}

// Kafka Streams' markers in a buffered value: a null value, and an old value equal to the prior.
const (
	nullValueLength       = -1
	oldIsPriorValueLength = -2
)

// encode is the update as Kafka Streams' suppression buffer logs it (its changelog format v3): the
// record context (timestamp, offset, topic, partition, headers), the prior, old and new values
// (each length-prefixed, -1 for null; the old value -2 when it equals the prior), then the time.
func (e *buffered) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(e.ctx.ts))
	b = binary.BigEndian.AppendUint64(b, uint64(e.ctx.offset))
	b = appendBytes(b, []byte(e.ctx.topic))
	b = binary.BigEndian.AppendUint32(b, uint32(e.ctx.partition))
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.ctx.headers)))
	for _, h := range e.ctx.headers {
		b = appendBytes(b, []byte(h.Key))
		b = appendBytes(b, h.Value)
	}
	b = appendBytes(b, e.prior)
	switch {
	case e.old == nil:
		b = binary.BigEndian.AppendUint32(b, uint32(math.MaxUint32)) // -1
	case e.prior != nil && bytes.Equal(e.prior, e.old):
		b = binary.BigEndian.AppendUint32(b, uint32(math.MaxUint32-1)) // -2
	default:
		b = appendBytes(b, e.old)
	}
	b = appendBytes(b, e.new)
	return binary.BigEndian.AppendUint64(b, uint64(e.time))
}

// appendBytes appends v length-prefixed (a 4-byte length, -1 for nil).
func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, uint32(math.MaxUint32))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// ErrBufferFormat is returned (wrapped) for a suppression buffer value that is not in Kafka
// Streams' format v3.
var ErrBufferFormat = errors.New("not a suppression buffer value (format v3)")

// decodeBuffered reads an update of key as encode writes it.
func decodeBuffered(key, v []byte) (*buffered, error) {
	r := bufReader{b: v}
	e := &buffered{key: bytes.Clone(key)}
	e.ctx.ts = int64(r.u64())
	e.ctx.offset = int64(r.u64())
	topic, _ := r.bytes()
	e.ctx.topic = string(topic)
	e.ctx.partition = int32(r.u32())
	n := int32(r.u32())
	if n < 0 || int(n) > len(v) {
		return nil, fmt.Errorf("%w: %d headers", ErrBufferFormat, n)
	}
	for range n {
		k, _ := r.bytes()
		hv, _ := r.bytes()
		e.ctx.headers = append(e.ctx.headers, kgo.RecordHeader{Key: string(k), Value: hv})
	}
	var priorLen, oldLen, newLen int32
	e.prior, priorLen = r.bytes()
	e.old, oldLen = r.bytes()
	if oldLen == oldIsPriorValueLength {
		e.old = e.prior
	}
	e.oldIsPrior = sameValue(e.prior, e.old)
	e.new, newLen = r.bytes()
	if priorLen == oldIsPriorValueLength || newLen == oldIsPriorValueLength {
		r.err = true
	}
	e.time = int64(r.u64())
	if r.err || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBufferFormat, len(v))
	}
	return e, nil
}

// bufReader reads a buffered value; err is set once it runs short.
type bufReader struct {
	b   []byte
	err bool
}

func (r *bufReader) take(n int) []byte {
	if r.err || n > len(r.b) {
		r.err = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *bufReader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *bufReader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

// bytes reads a length-prefixed value: nil for a negative length, which it returns too.
func (r *bufReader) bytes() ([]byte, int32) {
	n := int32(r.u32())
	if n < 0 {
		if n < oldIsPriorValueLength {
			r.err = true
		}
		return nil, n
	}
	v := r.take(int(n))
	if v == nil && !r.err {
		v = []byte{}
	}
	return bytes.Clone(v), n
}
