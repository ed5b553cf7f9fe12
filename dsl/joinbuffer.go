package dsl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// joinBuffer holds a stream-table join's records for its grace period (Kafka Streams'
// RocksDBTimeOrderedKeyValueBuffer): each record waits in a store keyed by its time, its key and a
// sequence number (Kafka Streams' time-first window key: a 0 byte, the time, the key, the number), until the newest time held is the grace
// past it; then the records are joined in that order. A record already older than that is joined at
// once. The store's changelog carries Kafka Streams' keys and buffer values (a BufferValue with the
// record's context, then 8 bytes of time), so Go and Java members restore each other's.
type joinBuffer[K, V any] struct {
	store string
	grace int64 // ms
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	// tasks are the tasks' states by tasks.ID (the processor is shared by the stream threads).
	tasks sync.Map
}

// Kafka Streams' time-first window key: its prefix byte, and its length without the key (the prefix,
// 8 bytes of time, a 4-byte sequence number).
const (
	timeFirstPrefix = 0
	bufferKeyLen    = 1 + 8 + 4
)

// joinBufferState is one task's: the newest time held since the task started (Kafka Streams' store's
// observedStreamTime) and the sequence number of the last record held.
type joinBufferState struct {
	observed int64
	seq      int32
	loaded   bool
}

// newJoinBuffer declares the buffer store of the join node n.
func newJoinBuffer[K, V any](b *Builder, n *node, store string, grace int64, ks serde.Serde[K], vs serde.Serde[V], op string) *joinBuffer[K, V] {
	if ks == nil || vs == nil {
		b.fail("%s %q: the records held for the grace period need serdes for %s and %s (Joined)", op, n.name, typeName[K](), typeName[V]())
	}
	jb := &joinBuffer[K, V]{store: store, grace: grace, ks: ks, vs: vs}
	n.stores = append(n.stores, store)
	b.declare(store, storeKind{decl: stream.BufferStore(store),
		changelog: func(names topology.Names) topology.TopicInfo { return names.KeyValueChangelog(store) }})
	n.init = func(c *stream.Context) error {
		jb.tasks.Store(c.Task(), &joinBufferState{})
		return nil
	}
	// An aborted transaction takes the store back: the task's time is read again from it. The
	// sequence goes on (Kafka Streams' buffer object survives the abort), so a record held again
	// cannot take the key of one the store still holds.
	n.flushers = append(n.flushers, flusher{flush: func(*stream.Context) error { return nil }, discard: func(c *stream.Context) {
		if v, ok := jb.tasks.Load(c.Task()); ok {
			v.(*joinBufferState).loaded = false
		}
	}})
	return jb
}

// state is c's task's state, its observed time read from the store when it has not been since the
// task started (or since an abort): the newest time the store holds; the sequence continues after
// the greatest number it holds.
func (jb *joinBuffer[K, V]) state(c *stream.Context) (*joinBufferState, error) {
	v, ok := jb.tasks.Load(c.Task())
	if !ok {
		v, _ = jb.tasks.LoadOrStore(c.Task(), &joinBufferState{})
	}
	st := v.(*joinBufferState)
	if !st.loaded {
		st.observed, st.loaded = -1, true
		it, err := c.Store(jb.store).Range(nil, nil)
		if err != nil {
			return nil, err
		}
		for it.Next() {
			if k := it.Key(); len(k) >= bufferKeyLen {
				st.observed = max(st.observed, int64(binary.BigEndian.Uint64(k[1:])))
				st.seq = max(st.seq, int32(binary.BigEndian.Uint32(k[len(k)-4:]))&0x7fffffff)
			}
		}
		if err := it.Err(); err != nil {
			it.Close()
			return nil, err
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// process holds the record (or joins it at once when it is older than the newest time held minus
// the grace), then joins, in order, every record held that the grace has passed.
func (jb *joinBuffer[K, V]) process(c *stream.Context, md meta, k K, v V, join func(*stream.Context, meta, K, V) error) error {
	st, err := jb.state(c)
	if err != nil {
		return err
	}
	ts := recordTime(c, md).UnixMilli()
	if st.observed-jb.grace > ts {
		return join(c, md, k, v)
	}
	kb, err := jb.ks.Encode(k)
	if err != nil {
		return fmt.Errorf("dsl: encoding a key for the join buffer %s: %w", jb.store, err)
	}
	vb, err := encodeNonNil(jb.vs, v)
	if err != nil {
		return err
	}
	st.seq = (st.seq + 1) & 0x7fffffff
	key := binary.BigEndian.AppendUint64(append(make([]byte, 0, bufferKeyLen+len(kb)), timeFirstPrefix), uint64(ts))
	key = binary.BigEndian.AppendUint32(append(key, kb...), uint32(st.seq))
	topic, partition, offset, _ := c.RecordMetadata()
	e := buffered{new: vb, ctx: recordContext{ts: ts, offset: offset, topic: topic, partition: partition, headers: md.headersOf(c)}}
	if err := c.Store(jb.store).Put(key, e.encode()); err != nil {
		return err
	}
	st.observed = max(st.observed, ts)
	return jb.evict(c, st, join)
}

// evict joins and removes the records held whose time the grace has passed, in the store's order
// (time, key, sequence), each with its own time and headers.
func (jb *joinBuffer[K, V]) evict(c *stream.Context, st *joinBufferState, join func(*stream.Context, meta, K, V) error) error {
	upto := st.observed - jb.grace
	if upto < 0 {
		return nil
	}
	s := c.Store(jb.store)
	it, err := s.Range([]byte{timeFirstPrefix}, binary.BigEndian.AppendUint64([]byte{timeFirstPrefix}, uint64(upto+1)))
	if err != nil {
		return err
	}
	type held struct{ key, value []byte }
	var due []held
	for it.Next() {
		due = append(due, held{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	if err := it.Err(); err != nil {
		it.Close()
		return err
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, h := range due {
		if len(h.key) < bufferKeyLen {
			return fmt.Errorf("dsl: the join buffer %s holds a key of %d bytes", jb.store, len(h.key))
		}
		e, err := decodeBuffered(h.key[9:len(h.key)-4], h.value)
		if err != nil {
			return fmt.Errorf("dsl: the join buffer %s: %w", jb.store, err)
		}
		k, err := jb.ks.Decode(e.key)
		if err != nil {
			return fmt.Errorf("dsl: the join buffer %s: key: %w", jb.store, err)
		}
		v, err := jb.vs.Decode(e.new)
		if err != nil {
			return fmt.Errorf("dsl: the join buffer %s: value: %w", jb.store, err)
		}
		// The held record is joined in its own context (Kafka Streams sets the evicted record's
		// context): what is downstream sees its time, headers and origin.
		md := meta{at: time.UnixMilli(e.ctx.ts), headers: e.ctx.headers, ownHeaders: true}
		restore := streamhook.As(c, md.at, e.ctx.headers, streamhook.Origin{Topic: e.ctx.topic, Partition: e.ctx.partition, Offset: e.ctx.offset, OK: true})
		err = join(c, md, k, v)
		restore()
		if err != nil {
			return err
		}
		if err := s.Delete(h.key); err != nil {
			return err
		}
	}
	return nil
}
