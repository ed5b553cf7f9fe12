package dsl

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// The record cache (Kafka Streams' ThreadCache, NamedCache and CachingKeyValueStore,
// statestore.cache.max.bytes): a table kept in a store holds its keys' latest values in memory, the
// updates since the last commit marked dirty, and only the latest update of a key reaches the
// store, its changelog and the operations below. A task's dirty entries of a store are written at
// the commit (stream.Flusher), or when the stream thread's share of the budget is exceeded: then
// the least recently used entry of the store being written is evicted, and if it is dirty it and
// every other dirty entry of that store in the task are written. An update is written as Kafka
// Streams' cache flush writes it: the latest value, the store's value before it as the old value,
// the record context (timestamp, headers) of the latest update; a key deleted that the store never
// had writes nothing. Reads go through the cache, and a value read from the store is cached (clean).
// Each stream thread has its own entries and its share of the budget (statestore.cache.max.bytes
// divided by num.stream.threads), as each Kafka Streams thread has its own cache.

// entryOverhead is what an entry costs besides its key and value bytes, counted against the budget
// as Kafka Streams counts its entries' metadata (offset, timestamp, partition, links).
const entryOverhead = 64

// recordCache is the budget of the program's caches.
type recordCache struct {
	perThread atomic.Int64 // each thread's share of statestore.cache.max.bytes (0: no cache)
	policy    atomic.Int32 // processing.exception.handler, for a failure below a flushed update
	headers   atomic.Bool  // dsl.store.format=HEADERS
	used      sync.Map     // stream thread index → *int64, the bytes its entries hold (its thread only)
}

// on says whether the cache holds updates: a size was set and it is not 0.
func (rc *recordCache) on() bool { return rc.perThread.Load() > 0 }

// configure takes the running application's settings, as each task starts.
func (rc *recordCache) configure(cfg config.Config) {
	rc.perThread.Store(cfg.Runtime.CacheBytes() / int64(cfg.Runtime.Threads()))
	rc.policy.Store(int32(cfg.Runtime.OnProcessingError))
	rc.headers.Store(cfg.Runtime.DSLStoreFormat == config.DSLStoreFormatHeaders)
}

// usedBy is the counter of the bytes thread's entries hold.
func (rc *recordCache) usedBy(thread int) *int64 {
	if u, ok := rc.used.Load(thread); ok {
		return u.(*int64)
	}
	u, _ := rc.used.LoadOrStore(thread, new(int64))
	return u.(*int64)
}

// rc is the builder's record cache.
func (b *Builder) rc() *recordCache {
	if b.cache == nil {
		b.cache = &recordCache{}
	}
	return b.cache
}

// tableCache is the cache of one table's store.
type tableCache[K, V any] struct {
	rc    *recordCache
	t     *KTable[K, V]
	ss    stampedSerde[V]
	tasks sync.Map // owner → *cached[K, V]
	// group, if set, is the part of an entry's key by which its entries are also found (a session
	// store's: the inner key, which Kafka Streams' caching session store ranges over).
	group func(key string) string
	// flushMeta, if set, is the record context an update is handed on with when written, in place
	// of the entry's own (a session's: its end as the timestamp).
	flushMeta func(e *entry[K, V]) meta
}

// owner is who uses a set of entries: one task on one stream thread (a task that moves to another
// thread of the process starts with none there).
type owner struct {
	thread int
	task   tasks.ID
}

// cached is one owner's entries of a store: by key, in the order of their last use (LRU) and of
// their last update (dirty ones only).
type cached[K, V any] struct {
	m       map[string]*entry[K, V]
	groups  map[string][]*entry[K, V] // the entries by tableCache.group, when it is set
	lru     order[K, V]               // every entry, the least recently used first
	dirties order[K, V]               // the dirty entries, the least recently updated first
	size    int64
	used    *int64 // the thread's bytes
	scratch []byte // the key being looked up, encoded
}

// entry is one key's latest value (has false: deleted), with the stored bytes (timestamp and
// value; nil for a deletion) and the record context of its update; dirty until written.
type entry[K, V any] struct {
	key          string
	k            K
	v            V
	vb           []byte
	has, dirty   bool
	at           time.Time
	headers      []kgo.RecordHeader
	origin       streamhook.Origin // the record that made the update (Kafka Streams' cached record context)
	size         int64
	lru, dirties links[K, V] // its places in the owner's two orders
}

// of is the entries of c's task on c's thread.
func (tc *tableCache[K, V]) of(c *stream.Context) *cached[K, V] {
	o := owner{thread: c.Thread(), task: c.Task()}
	if e, ok := tc.tasks.Load(o); ok {
		return e.(*cached[K, V])
	}
	cs := &cached[K, V]{m: map[string]*entry[K, V]{}, dirties: order[K, V]{dirty: true}, used: tc.rc.usedBy(o.thread)}
	if tc.group != nil {
		cs.groups = map[string][]*entry[K, V]{}
	}
	tc.tasks.Store(o, cs)
	return cs
}

// add puts e, new, into cs.
func (tc *tableCache[K, V]) add(cs *cached[K, V], e *entry[K, V]) {
	cs.m[e.key] = e
	if tc.group != nil {
		g := tc.group(e.key)
		cs.groups[g] = append(cs.groups[g], e)
	}
}

// drop takes e out of cs, and its bytes off the thread's.
func (tc *tableCache[K, V]) drop(cs *cached[K, V], e *entry[K, V]) {
	cs.lru.remove(e)
	delete(cs.m, e.key)
	cs.resize(e, 0)
	if tc.group != nil {
		g := tc.group(e.key)
		rest := slices.DeleteFunc(cs.groups[g], func(o *entry[K, V]) bool { return o == e })
		if len(rest) == 0 {
			delete(cs.groups, g)
		} else {
			cs.groups[g] = rest
		}
	}
}

// grouped calls fn with each entry of c's task whose key's group is g (tableCache.group).
func (tc *tableCache[K, V]) grouped(c *stream.Context, g string, fn func(e *entry[K, V])) {
	v, ok := tc.tasks.Load(owner{thread: c.Thread(), task: c.Task()})
	if !ok {
		return
	}
	for _, e := range v.(*cached[K, V]).groups[g] {
		fn(e)
	}
}

// keyBytes encodes k into the owner's scratch.
func (tc *tableCache[K, V]) keyBytes(cs *cached[K, V], k K) ([]byte, error) {
	var err error
	if a, ok := tc.t.storeKeys().(serde.Appender[K]); ok {
		cs.scratch, err = a.AppendEncode(cs.scratch[:0], k)
	} else {
		cs.scratch, err = tc.t.storeKeys().Encode(k)
	}
	if err != nil {
		return nil, fmt.Errorf("dsl: encoding a key of store %s: %w", tc.t.store, err)
	}
	return cs.scratch, nil
}

// get is k's latest value in c's task: the cached one, else the store's (then cached, clean).
func (tc *tableCache[K, V]) get(c *stream.Context, k K) (stamped[V], bool, error) {
	cs := tc.of(c)
	kb, err := tc.keyBytes(cs, k)
	if err != nil {
		return stamped[V]{}, false, err
	}
	if e := cs.m[string(kb)]; e != nil {
		cs.lru.remove(e)
		cs.lru.push(e) // the most recently used now
		return stamped[V]{v: tc.copied(e.v), at: e.at}, e.has, nil
	}
	raw, ok, err := c.Store(tc.t.store).Get(kb)
	if err != nil || !ok {
		return stamped[V]{}, false, err
	}
	s, err := tc.ss.Decode(raw)
	if err != nil {
		return stamped[V]{}, false, err
	}
	e := &entry[K, V]{key: string(kb), k: k, v: s.v, vb: bytes.Clone(raw), has: true, at: s.at}
	tc.add(cs, e)
	cs.resize(e, int64(len(e.key)+len(e.vb))+entryOverhead)
	cs.lru.push(e)
	return stamped[V]{v: tc.copied(s.v), at: s.at}, true, tc.evict(c, cs)
}

// copied is v, copied if it is bytes: the cache keeps its own.
func (tc *tableCache[K, V]) copied(v V) V {
	if tc.ss.bytes {
		return any(bytes.Clone(any(v).([]byte))).(V)
	}
	return v
}

// put caches k's update (has false: a deletion) at, with the record's headers, then evicts while
// the thread's entries exceed its share of the budget.
func (tc *tableCache[K, V]) put(c *stream.Context, md meta, k K, v V, has bool, at time.Time) error {
	cs := tc.of(c)
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
		tc.add(cs, e)
	} else {
		cs.lru.remove(e)
		if e.dirty {
			cs.undirty(e)
		}
	}
	e.k, e.v, e.vb, e.has, e.at, e.headers = k, tc.copied(v), vb, has, at, md.headersOf(c)
	e.origin.Topic, e.origin.Partition, e.origin.Offset, e.origin.OK = c.RecordMetadata()
	cs.resize(e, int64(len(e.key)+len(vb))+entryOverhead)
	cs.lru.push(e)
	e.dirty = true
	cs.dirties.push(e)
	return tc.evict(c, cs)
}

// evict drops the least recently used entries of the owner while its thread's entries exceed their
// budget; a dirty one is written first, with every other dirty entry of the owner (Kafka Streams'
// NamedCache.evict).
func (tc *tableCache[K, V]) evict(c *stream.Context, cs *cached[K, V]) error {
	for *cs.used > tc.rc.perThread.Load() && cs.lru.head != nil {
		e := cs.lru.head
		if e.dirty {
			// Written before it leaves: an entry whose write failed stays, dirty, and nothing
			// after it is committed.
			if err := tc.writeSafely(c, e); err != nil && !tc.continues() {
				return err
			}
			cs.undirty(e)
			if err := tc.flushOwner(c, cs); err != nil {
				return err
			}
		}
		tc.drop(cs, e)
	}
	return nil
}

// flush writes every dirty entry of c's task on c's thread (stream.Flusher's Flush).
func (tc *tableCache[K, V]) flush(c *stream.Context) error {
	v, ok := tc.tasks.Load(owner{thread: c.Thread(), task: c.Task()})
	if !ok {
		return nil
	}
	return tc.flushOwner(c, v.(*cached[K, V]))
}

// flushOwner writes cs's dirty entries, the least recently updated first; they stay cached, clean,
// except deletions, which leave the cache. Under processing.exception.handler=LogAndContinue, a
// failure below one update skips that update, as Kafka Streams' handler does.
func (tc *tableCache[K, V]) flushOwner(c *stream.Context, cs *cached[K, V]) error {
	for cs.dirties.head != nil {
		e := cs.dirties.head
		// An entry whose write failed stays dirty: the commit fails, and a clean close that comes
		// after it writes it again rather than commit without it.
		if err := tc.writeSafely(c, e); err != nil && !tc.continues() {
			return err
		}
		cs.undirty(e)
		if !e.has {
			tc.drop(cs, e)
		}
	}
	return nil
}

// continues says whether a failure below a written update skips it (processing.exception.handler
// LogAndContinue) rather than stop the application.
func (tc *tableCache[K, V]) continues() bool {
	return config.ErrorPolicy(tc.rc.policy.Load()) == config.LogAndContinue
}

// discard drops the entries of c's task on c's thread, written or not (stream.Flusher's Discard:
// the task's work since its last commit is done again, or the task stops on this thread).
func (tc *tableCache[K, V]) discard(c *stream.Context) {
	if v, ok := tc.tasks.LoadAndDelete(owner{thread: c.Thread(), task: c.Task()}); ok {
		cs := v.(*cached[K, V])
		*cs.used -= cs.size
	}
}

// writeSafely is write with a panic of a function below the table made its error (a *PanicError),
// so that the handler decides for this update alone.
func (tc *tableCache[K, V]) writeSafely(c *stream.Context, e *entry[K, V]) (err error) {
	defer recovered(&err)
	return tc.write(c, e)
}

// write writes e to the store and hands the update on, with e's record context (Kafka Streams'
// CachingKeyValueStore.putAndMaybeForward): the old value is the store's before the write; nothing
// is written for a key absent before and after.
func (tc *tableCache[K, V]) write(c *stream.Context, e *entry[K, V]) error {
	t := tc.t
	old, ok, err := t.kv.Get(c, e.k)
	if err != nil {
		return err
	}
	if !e.has && !ok {
		return nil
	}
	restore := streamhook.As(c, e.at, e.headers, e.origin)
	defer restore()
	st := c.Store(t.store)
	if e.has {
		err = st.Put([]byte(e.key), e.vb)
	} else {
		err = st.Delete([]byte(e.key))
	}
	if err != nil || t.quietFlush {
		return err
	}
	ch := change[V]{new: tc.copied(e.v), hasNew: e.has}
	if t.sendOld && ok {
		ch.old, ch.hasOld = old.v, true
	}
	md := meta{at: e.at}
	if tc.flushMeta != nil {
		md = tc.flushMeta(e)
	}
	return t.out.emit(c, md, e.k, ch)
}

// resize sets e's size to size, counting the difference against the thread's bytes.
func (cs *cached[K, V]) resize(e *entry[K, V], size int64) {
	d := size - e.size
	e.size = size
	cs.size += d
	*cs.used += d
}

// undirty takes e out of the dirty entries.
func (cs *cached[K, V]) undirty(e *entry[K, V]) {
	cs.dirties.remove(e)
	e.dirty = false
}

// order is a list of entries threaded through one of their links (lru or dirties).
type order[K, V any] struct {
	head, tail *entry[K, V] // head: the first
	dirty      bool         // the order threads the entries' dirties links, else their lru links
}

// links are an entry's neighbours in one order.
type links[K, V any] struct{ prev, next *entry[K, V] }

func (o *order[K, V]) of(e *entry[K, V]) *links[K, V] {
	if o.dirty {
		return &e.dirties
	}
	return &e.lru
}

// push appends e (not in the order) at the end.
func (o *order[K, V]) push(e *entry[K, V]) {
	*o.of(e) = links[K, V]{prev: o.tail}
	if o.tail != nil {
		o.of(o.tail).next = e
	} else {
		o.head = e
	}
	o.tail = e
}

// remove takes e (in the order) out.
func (o *order[K, V]) remove(e *entry[K, V]) {
	l := o.of(e)
	if l.prev != nil {
		o.of(l.prev).next = l.next
	} else {
		o.head = l.next
	}
	if l.next != nil {
		o.of(l.next).prev = l.prev
	} else {
		o.tail = l.prev
	}
	*l = links[K, V]{}
}

// timedWindow is a window of a key (a session or a sliding window) with its value and timestamp.
type timedWindow[V any] struct {
	w  windowed.Window
	v  V
	at time.Time
}

// cachedOver is k's windows read from t's store (stored), with the record cache's entries of c's
// task over them, as Kafka Streams' caching session and window stores merge them: a cached window
// for which in holds replaces the stored one of the same window, a cached deletion hides it, and
// cached windows are not held to the store's retention. The result is in the order of order.
func cachedOver[K, V any](c *stream.Context, t *KTable[windowed.Key[K], V], ks serde.Serde[K], k K, stored []timedWindow[V],
	in func(windowed.Window) bool, order func(a, b windowed.Window) int) ([]timedWindow[V], error) {
	kb, err := ks.Encode(k)
	if err != nil {
		return nil, fmt.Errorf("dsl: encoding a key of store %s: %w", t.store, err)
	}
	var hidden []windowed.Window // the cached deletions
	t.cache.grouped(c, string(kb), func(e *entry[windowed.Key[K], V]) {
		w := e.k.Window
		switch {
		case !in(w):
		case !e.has:
			hidden = append(hidden, w)
		default:
			tw := timedWindow[V]{w: w, v: t.cache.copied(e.v), at: e.at}
			if i := slices.IndexFunc(stored, func(o timedWindow[V]) bool { return o.w == w }); i >= 0 {
				stored[i] = tw
			} else {
				stored = append(stored, tw)
			}
		}
	})
	stored = slices.DeleteFunc(stored, func(tw timedWindow[V]) bool { return slices.Contains(hidden, tw.w) })
	slices.SortFunc(stored, func(x, y timedWindow[V]) int { return order(x.w, y.w) })
	return stored, nil
}
