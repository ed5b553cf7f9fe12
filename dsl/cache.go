package dsl

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The record cache (Kafka Streams' ThreadCache and CachingKeyValueStore, statestore.cache.max.bytes):
// a table kept in a store holds each key's updates between commits in memory, and only the latest
// reaches the store, its changelog and the operations below: at the commit (stream.Flusher), or
// when the cache is full and the key is the least recently written of its store's in the task. What
// is written then is the update as Kafka Streams' cache flush writes it: the latest value, with the
// store's value before it as the old value, and the timestamp of the latest update. A key absent
// before and after writes nothing. The budget is the process's: its threads share it.

// entryOverhead is what an entry costs besides its key and value bytes (its fields, its map slot),
// counted against the budget as Kafka Streams counts its entries' metadata.
const entryOverhead = 96

// recordCache is the process's budget: the bytes all cached entries hold.
type recordCache struct {
	max  atomic.Int64 // statestore.cache.max.bytes, set as tasks start (0: no cache)
	used atomic.Int64
}

// on says whether the cache holds updates: a size was set and it is not 0.
func (rc *recordCache) on() bool { return rc.max.Load() > 0 }

// rc is the builder's record cache.
func (b *Builder) rc() *recordCache {
	if b.cache == nil {
		b.cache = &recordCache{}
	}
	return b.cache
}

// tableCache is the cache of one table's store, per task.
type tableCache[K, V any] struct {
	rc    *recordCache
	t     *KTable[K, V]
	ss    stampedSerde[V]
	tasks sync.Map // tasks.ID → *cached[K, V]; a task's entries are used by its thread only
}

// cached is one task's entries of a store: by key, and in the order they were last written.
type cached[K, V any] struct {
	m          map[string]*entry[K, V]
	head, tail *entry[K, V] // head: the least recently written
	size       int64
	scratch    []byte // the key being looked up, encoded
}

// entry is one key's latest update: its value (has false: deleted), with the timestamp and the
// stored bytes (timestamp and value; nil for a deletion); dirty until written to the store.
type entry[K, V any] struct {
	key        string
	k          K
	v          V
	vb         []byte
	has, dirty bool
	at         time.Time
	size       int64
	prev, next *entry[K, V]
}

// of is task's entries.
func (tc *tableCache[K, V]) of(task tasks.ID) *cached[K, V] {
	if e, ok := tc.tasks.Load(task); ok {
		return e.(*cached[K, V])
	}
	e := &cached[K, V]{m: map[string]*entry[K, V]{}}
	tc.tasks.Store(task, e)
	return e
}

// keyBytes encodes k into the task's scratch.
func (tc *tableCache[K, V]) keyBytes(cs *cached[K, V], k K) ([]byte, error) {
	var err error
	if a, ok := tc.t.ks.(serde.Appender[K]); ok {
		cs.scratch, err = a.AppendEncode(cs.scratch[:0], k)
	} else {
		cs.scratch, err = tc.t.ks.Encode(k)
	}
	if err != nil {
		return nil, fmt.Errorf("dsl: encoding a key of store %s: %w", tc.t.store, err)
	}
	return cs.scratch, nil
}

// get is k's cached update in c's task, if it has one.
func (tc *tableCache[K, V]) get(c *stream.Context, k K) (*entry[K, V], error) {
	cs := tc.of(c.Task())
	kb, err := tc.keyBytes(cs, k)
	if err != nil {
		return nil, err
	}
	return cs.m[string(kb)], nil
}

// put caches k's update (has false: a deletion) at, then writes the least recently written entries
// of the task's store through while the process's cache is over its budget.
func (tc *tableCache[K, V]) put(c *stream.Context, k K, v V, has bool, at time.Time) error {
	cs := tc.of(c.Task())
	kb, err := tc.keyBytes(cs, k)
	if err != nil {
		return err
	}
	var vb []byte
	if has {
		if vb, err = tc.ss.Encode(stamped[V]{v: v, at: at}); err != nil {
			return fmt.Errorf("dsl: encoding a value of store %s: %w", tc.t.store, err)
		}
	}
	e := cs.m[string(kb)]
	if e == nil {
		e = &entry[K, V]{key: string(kb)}
		cs.m[e.key] = e
	} else {
		cs.unlink(e)
	}
	e.k, e.v, e.vb, e.has, e.at, e.dirty = k, v, vb, has, at, true
	size := int64(len(e.key)+len(vb)) + entryOverhead
	tc.rc.used.Add(size - e.size)
	cs.size += size - e.size
	e.size = size
	cs.link(e)
	for tc.rc.used.Load() > tc.rc.max.Load() && cs.head != nil {
		if err := tc.evict(c, cs, cs.head); err != nil {
			return err
		}
	}
	return nil
}

// evict writes e through, if dirty, and drops it.
func (tc *tableCache[K, V]) evict(c *stream.Context, cs *cached[K, V], e *entry[K, V]) error {
	cs.unlink(e)
	delete(cs.m, e.key)
	tc.rc.used.Add(-e.size)
	cs.size -= e.size
	if e.dirty {
		return tc.write(c, e)
	}
	return nil
}

// flush writes every dirty entry of c's task through, in the order they were last written; they
// stay cached, clean, for the reads that follow.
func (tc *tableCache[K, V]) flush(c *stream.Context) error {
	v, ok := tc.tasks.Load(c.Task())
	if !ok {
		return nil
	}
	cs := v.(*cached[K, V])
	for e := cs.head; e != nil; e = e.next {
		if e.dirty {
			e.dirty = false
			if err := tc.write(c, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// discard drops task's entries, written or not.
func (tc *tableCache[K, V]) discard(task tasks.ID) {
	if v, ok := tc.tasks.LoadAndDelete(task); ok {
		tc.rc.used.Add(-v.(*cached[K, V]).size)
	}
}

// write writes e to the store and hands the update on (Kafka Streams' cache flush): the old value
// is the store's before the write; nothing is written for a key absent before and after.
func (tc *tableCache[K, V]) write(c *stream.Context, e *entry[K, V]) error {
	t := tc.t
	ch := change[V]{new: e.v, hasNew: e.has}
	old, ok, err := t.kv.Get(c, e.k)
	if err != nil {
		return err
	}
	if !e.has && !ok {
		return nil
	}
	st := c.Store(t.store)
	if e.has {
		err = st.Put([]byte(e.key), e.vb)
	} else {
		err = st.Delete([]byte(e.key))
	}
	if err != nil {
		return err
	}
	if t.sendOld && ok {
		ch.old, ch.hasOld = old.v, true
	}
	return t.out.emit(c, meta{at: e.at}, e.k, ch)
}

func (cs *cached[K, V]) link(e *entry[K, V]) {
	e.prev, e.next = cs.tail, nil
	if cs.tail != nil {
		cs.tail.next = e
	} else {
		cs.head = e
	}
	cs.tail = e
}

func (cs *cached[K, V]) unlink(e *entry[K, V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		cs.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		cs.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
