package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// task is the runtime's side of one task this process holds (active or standby): its stores, its
// stream time and its punctuations.
type task struct {
	id     tasks.ID
	active bool
	// global marks the pseudo-task a global store's records are processed in (global.go).
	global bool
	// stores by name, and by changelog topic (restore records name the topic).
	stores      map[string]*kvStore
	byChangelog map[string]*kvStore
	streamTime  int64 // unix ms; -1 before the first record
	// rec is the record being processed (processRecords reuses it).
	rec Record
	// punctuators are the functions of the task's punctuations, by the machine's ID (the machine
	// keeps the schedule).
	punctuators map[uint64]Punctuator
	ctx         Context
	// order holds the queued records of a task with several input partitions (order.go); single
	// says the task has one (nothing to order).
	order  *ordered
	single bool
	// lastStore and lastSent spare the lookups of a processor's usual calls (a store's Get and Put,
	// a Send, per record): the last store name Context.Store resolved, and the last topic Send
	// found not to be a changelog.
	lastStore struct {
		name string
		kv   store.KeyValue
	}
	lastSent string
}

// kvStore is one store of one task: an Engine written through, with every write of the processor
// also sent to the changelog partition of the task.
type kvStore struct {
	app       *App
	task      *task
	name      string
	changelog tasks.TopicPartition
	kind      store.Kind
	loc       store.Location
	eng       store.Engine

	// acked is the next changelog offset after the last acknowledged write of this member (-1:
	// none since the store was opened); written by produce callbacks, read at commits.
	acked atomic.Int64
	// checkpointed is the position last recorded with the data.
	checkpointed int64

	batch store.Batch // reused for single writes
	// pend holds the writes of the open transaction under exactly-once (nil under at-least-once,
	// where writes go through to the engine at once).
	pend *overlay
	// promise is the callback of the store's changelog writes (send).
	promise promiser
	// timestamped: each value is its timestamp and the value (TimestampedStore).
	timestamped bool
	// headers says which changelog records carry the writing record's headers (TimestampedHeadersStore,
	// RecordHeadersStore).
	headers headerMode
	// wallClock: the changelog records carry the wall clock of their write, not the record's time
	// (a buffer's: SuppressionBufferStore, BufferStore).
	wallClock bool
	// logHeaders are the headers of each update's changelog record, if the store has fixed ones
	// (SuppressionBufferStore).
	logHeaders []kgo.RecordHeader
	// win is a window store's view of time (window.go); nil for a key-value store.
	win *windowState
	// ver is a versioned store's retention (versioned.go); nil for other stores.
	ver *versionState
}

// headerMode is which of a store's changelog records carry the headers of the record that wrote
// them.
type headerMode uint8

const (
	headersNone     headerMode = iota // none (Kafka Streams' plain and timestamped stores)
	headersOnDelete                   // deletions only (TimestampedHeadersStore)
	headersAlways                     // every record (RecordHeadersStore)
)

func (s *kvStore) fail(op string, err error) error {
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	return &store.Error{Op: op, Loc: s.loc, Err: err}
}

// Get implements store.KeyValue: the open transaction's writes first.
func (s *kvStore) Get(key []byte) ([]byte, bool, error) {
	if s.win != nil {
		ek, live, err := s.windowKey(key, false)
		if err != nil || !live {
			return nil, false, err
		}
		key = ek
	}
	if s.pend != nil {
		if p, ok := s.pend.get(key); ok {
			return p.value, !p.del, nil
		}
	}
	return s.engineGet(key)
}

// committedGet reads the engine only: what queries see (under exactly-once, the last committed
// state).
func (s *kvStore) committedGet(key []byte) ([]byte, bool, error) {
	if s.win != nil {
		ek, live, err := s.windowKey(key, true)
		if err != nil || !live {
			return nil, false, err
		}
		key = ek
	}
	return s.engineGet(key)
}

// engineGet reads the engine's key.
func (s *kvStore) engineGet(key []byte) ([]byte, bool, error) {
	v, ok, err := s.eng.Get(key)
	if err != nil {
		return nil, false, s.fail("get", err)
	}
	return v, ok, nil
}

// Range implements store.KeyValue: the engine's entries with the open transaction's writes over
// them. A window store has no key order to range over (Fetch reads it).
func (s *kvStore) Range(lower, upper []byte) (store.Iterator, error) {
	if s.win != nil {
		return nil, s.errWindowRange()
	}
	return s.engineRange(lower, upper)
}

// engineRange is Range over the engine's keys.
func (s *kvStore) engineRange(lower, upper []byte) (store.Iterator, error) {
	it, err := s.eng.Iterate(lower, upper)
	if err != nil {
		return nil, s.fail("range", err)
	}
	if s.pend == nil || s.pend.empty() {
		return it, nil
	}
	return newOverlaid(it, s.pend.within(lower, upper)), nil
}

func (s *kvStore) committedRange(lower, upper []byte) (store.Iterator, error) {
	if s.win != nil {
		return nil, s.errWindowRange()
	}
	it, err := s.eng.Iterate(lower, upper)
	if err != nil {
		return nil, s.fail("range", err)
	}
	return it, nil
}

// Prefix implements store.KeyValue.
func (s *kvStore) Prefix(prefix []byte) (store.Iterator, error) {
	return s.Range(prefix, store.PrefixEnd(prefix))
}

// ApproximateCount implements store.KeyValue.
func (s *kvStore) ApproximateCount() (int64, error) {
	n, err := s.eng.ApproximateCount()
	if err != nil {
		return 0, s.fail("count", err)
	}
	return n, nil
}

// Put implements store.KeyValue: the store, then the changelog. A nil value deletes the key, as
// Kafka Streams' put(key, null) does (an empty value is a value).
func (s *kvStore) Put(key, value []byte) error { return s.write(key, value, value == nil, false) }

// Delete implements store.KeyValue: the store, then a tombstone in the changelog.
func (s *kvStore) Delete(key []byte) error { return s.write(key, nil, true, false) }

// ErrNullKey is a store write with a nil key: Kafka Streams' stores refuse null keys too (a
// compacted changelog cannot hold one). An empty key is a key.
var ErrNullKey = errors.New("stream: a store key must not be nil (an empty key is allowed)")

// write writes key (del: deletes it) into the store and its changelog. logOnly writes the changelog
// alone: a write the store has nothing to keep of and whose time it does not see (WindowStore.PutNull
// in a store that retains duplicates).
func (s *kvStore) write(key, value []byte, del, logOnly bool) error {
	if !s.task.active {
		return s.fail("write", errors.New("the task is a standby here: only active tasks write"))
	}
	if key == nil {
		return fmt.Errorf("%w: store %s of task %s", ErrNullKey, s.name, s.task.id)
	}
	if s.ver != nil {
		return fmt.Errorf("%w: %s is written with stream.Versioned's Put and Delete", ErrVersionedStore, s.name)
	}
	var start int64
	keep := !logOnly
	if s.win != nil && keep {
		var err error
		if start, err = s.win.timeOf(key); err != nil {
			return s.fail("write", err)
		}
		// A window expired already is not kept, but its write is logged all the same, as Kafka
		// Streams' changelogging window and session stores log every write (a restore skips it).
		s.win.observe(start)
		keep = s.win.live(start)
	}
	ts := s.task.ctx.ts
	if s.timestamped && !del {
		if len(value) < 8 {
			return fmt.Errorf("stream: a value of the timestamped store %s is its timestamp (8 bytes) and the value; got %d bytes", s.name, len(value))
		}
		ts = time.UnixMilli(int64(binary.BigEndian.Uint64(value)))
	}
	// The record keeps its own copies (the caller may reuse its buffers), in one allocation, an
	// empty key as an empty key: a nil one would be a null key, which the compacted changelog
	// refuses. The store keeps the same bytes (nobody changes them: the client only reads them),
	// and a window store's key in the engine leads with its segment, which the allocation holds
	// too, in front of the changelog key.
	pre := 0
	if keep && s.win != nil {
		pre = segmentKeyLen
	}
	size := pre + len(key)
	if !del {
		size += len(value)
	}
	buf := make([]byte, size)
	if pre > 0 {
		binary.BigEndian.PutUint64(buf, uint64(start/s.win.span))
	}
	n := pre + copy(buf[pre:], key)
	r := &kgo.Record{Topic: s.changelog.Topic, Partition: s.changelog.Partition, Key: buf[pre:n:n]}
	var local []byte // the value the store keeps: for a timestamped store, the changelog's after its timestamp
	if !del {
		local = buf[n:]
		copy(local, value)
		r.Value = local
		if s.timestamped {
			r.Value = local[8:]
		}
	}
	if keep {
		ek := buf[:n:n] // the engine's key: a window store's leads with its segment
		if err := s.applyWrite(ek, local, del); err != nil {
			return err
		}
		if s.win != nil {
			if err := s.expire(); err != nil {
				return err
			}
		}
	}
	s.logWrite(r, ts, del)
	return nil
}

// applyWrite writes the engine's key ek (a deletion, or local, which the store keeps): into the
// open transaction under exactly-once, else into the engine at once.
func (s *kvStore) applyWrite(ek, local []byte, del bool) error {
	if s.pend != nil {
		s.pend.put(ek, local, del)
		return nil
	}
	s.batch.Reset()
	if del {
		s.batch.Delete(ek)
	} else {
		s.batch.PutOwned(ek, local)
	}
	if err := s.eng.Apply(&s.batch, -1); err != nil {
		return s.fail("write", err)
	}
	return nil
}

// logWrite writes r, a write of the store (del: a deletion), to its changelog, at ts with the
// headers the store's changelog carries.
func (s *kvStore) logWrite(r *kgo.Record, ts time.Time, del bool) {
	if s.wallClock {
		ts = s.app.now()
	}
	r.Timestamp = ts
	if s.logHeaders != nil && !del {
		r.Headers = s.logHeaders
	}
	if s.headers == headersAlways || s.headers == headersOnDelete && del {
		// Kafka Streams' headers-aware changelog writes the stored headers, or the record's for a
		// deletion. Its DSL stores keep empty headers, so an update carries none; the
		// subscription store keeps the record's.
		r.Headers = slices.Clone(s.task.ctx.Headers())
	}
	s.app.produceChangelog(r, s)
}

// ackedAt records an acknowledged changelog write.
func (s *kvStore) ackedAt(offset int64) { s.ackedTo(offset + 1) }

// ackedTo moves acked to pos unless it is there or further already (writes are acknowledged out of
// order only across partitions, but a restore and a produce callback may race).
func (s *kvStore) ackedTo(pos int64) {
	for {
		cur := s.acked.Load()
		if cur >= pos || s.acked.CompareAndSwap(cur, pos) {
			return
		}
	}
}

// checkpoint records, atomically with the data, the changelog position that this member's
// acknowledged writes reached. Call it only after a flush (every write acknowledged): the data then
// holds exactly the changelog up to that position (R5).
func (s *kvStore) checkpoint() error {
	if s.pend != nil {
		return nil // exactly-once: positions are recorded with each committed transaction's writes
	}
	pos := s.acked.Load()
	if pos < 0 || pos == s.checkpointed {
		return nil
	}
	var empty store.Batch
	if err := s.eng.Apply(&empty, pos); err != nil {
		return s.fail("checkpoint", err)
	}
	s.checkpointed = pos
	return nil
}

// commitPending applies the committed transaction's writes to the engine, atomically with the
// changelog position they reach (exactly-once; R4, R5).
func (s *kvStore) commitPending() error {
	pos := s.acked.Load()
	if s.pend.empty() && (pos < 0 || pos == s.checkpointed) {
		return nil
	}
	b := s.pend.batch()
	if s.win != nil {
		// The segments the transaction's windows let go are deleted with its writes, after them
		// (a write into a segment expired by then is deleted too).
		if upper, due := s.win.expiry(); due {
			b.DeleteRange(nil, upper)
		}
	}
	if err := s.eng.Apply(b, pos); err != nil {
		return s.fail("commit", err)
	}
	s.pend.clear()
	if s.win != nil {
		s.win.commit()
	}
	if pos >= 0 {
		s.checkpointed = pos
	}
	return nil
}

// dropPending forgets the aborted transaction's writes: the engine still holds the last committed
// state, and the changelog position goes back to what it covers.
func (s *kvStore) dropPending() {
	if s.pend != nil {
		s.pend.clear()
	}
	if s.win != nil {
		s.win.rollback()
	}
	s.acked.Store(s.checkpointed)
}

// restore applies changelog records (a restoring active task, or a standby), recording how far the
// data goes (next: past transaction markers too) in the same atomic write.
func (s *kvStore) restore(recs []*kgo.Record, next int64) error {
	if len(recs) == 0 && next <= s.checkpointed {
		return nil // nothing new: no write
	}
	var b store.Batch
	if s.ver != nil {
		if err := s.restoreVersions(recs); err != nil {
			return err
		}
		recs = nil
	}
	for _, r := range recs {
		key := r.Key
		if s.win != nil {
			start, err := s.win.timeOf(key)
			if err != nil {
				return s.fail("restore", fmt.Errorf("the changelog record %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err))
			}
			if s.win.observe(start); !s.win.live(start) {
				continue // expired: Kafka Streams' restore skips it too
			}
			key = s.win.engineKey(key, start)
		}
		switch {
		case r.Value == nil:
			b.Delete(key)
		case s.timestamped: // the record's timestamp before its value, as the store keeps it
			v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(r.Value)), uint64(r.Timestamp.UnixMilli()))
			b.Put(key, append(v, r.Value...))
		default:
			b.Put(key, r.Value)
		}
	}
	pos := next
	if s.win != nil {
		// The segments the restored windows let go are deleted in the same atomic write.
		if upper, due := s.win.expiry(); due {
			b.DeleteRange(nil, upper)
		}
	}
	if err := s.eng.Apply(&b, pos); err != nil {
		return s.fail("restore", err)
	}
	if s.win != nil {
		s.win.commit()
	}
	s.checkpointed = pos
	s.ackedTo(pos)
	return nil
}

// wipe empties the store that changelog feeds in task id, whose position in it was out of range
// (records deleted under it): the store lacks what was deleted, so it starts over from the
// changelog's first offset, as Kafka Streams wipes a corrupted task's stores. Called with a.mu held.
func (a *App) wipe(id tasks.ID, changelog tasks.TopicPartition) error {
	t := a.tasks[id]
	if t == nil {
		return nil
	}
	s := t.byChangelog[changelog.Topic]
	if s == nil {
		return nil
	}
	a.log.Warn("the changelog position of a store is out of range (its records were deleted): wiping the store, which restores "+
		"from the changelog's first offset", "store", s.loc.String(), "changelog", changelog.String())
	if err := s.eng.Close(); err != nil {
		a.log.Warn("closing a store to wipe it failed", "store", s.loc.String(), "err", err)
	}
	if err := s.kind.Destroy(s.loc); err != nil {
		return &store.Error{Op: "wipe", Loc: s.loc, Err: err}
	}
	eng, err := s.kind.Open(s.loc)
	if err != nil {
		return &store.Error{Op: "open", Loc: s.loc, Err: err}
	}
	s.eng, s.checkpointed = eng, -1
	if s.pend != nil {
		s.pend.clear()
	}
	if s.win != nil {
		s.win.reset() // empty: its time starts over with the restore
	}
	s.acked.Store(-1)
	return nil
}

// stopTask forgets what t kept while it processed, once the machine stopped it (its Init runs again,
// scheduling its punctuations anew, before it processes again, as Kafka Streams revives or suspends
// a task): its punctuation functions and its queued records. Called with a.mu held.
func (a *App) stopTask(t *task) {
	clear(t.punctuators)
	a.dropQueued(t)
	if f := flusherOf(a.procs[t.id.Subtopology]); f != nil {
		t.ctx = Context{app: a, task: t, ts: a.now()}
		f.Discard(&t.ctx)
	}
}

// unknownStore is what Context.Store returns for a name the task has no store of, or one its
// processor was not connected to (connected, when it was connected to others).
type unknownStore struct {
	name      string
	task      tasks.ID
	connected []string
}

func (u unknownStore) err() error {
	if u.connected != nil {
		return fmt.Errorf("%w %q in task %s: its processor is connected to the stores %q only (stream.Connect)", ErrUnknownStore, u.name, u.task, u.connected)
	}
	return fmt.Errorf("%w %q in task %s: the task's subtopology has no changelog topic for it (topology.Names.KeyValueChangelog)", ErrUnknownStore, u.name, u.task)
}
func (u unknownStore) Get([]byte) ([]byte, bool, error)          { return nil, false, u.err() }
func (u unknownStore) Range(_, _ []byte) (store.Iterator, error) { return nil, u.err() }
func (u unknownStore) Prefix([]byte) (store.Iterator, error)     { return nil, u.err() }
func (u unknownStore) ApproximateCount() (int64, error)          { return 0, u.err() }
func (u unknownStore) Put(_, _ []byte) error                     { return u.err() }
func (u unknownStore) Delete([]byte) error                       { return u.err() }

// KeyValueStore is typed access to a key-value store by name: keys and values go through their
// serdes. Declare it once (a package variable is fine) and use it from processors with their
// Context, and from queries with the App.
type KeyValueStore[K, V any] struct {
	name string
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	// ka and va are ks and vs as serde.Appenders (nil when they are not), asserted once here
	// rather than at every read and write.
	ka serde.Appender[K]
	va serde.Appender[V]
}

// KeyValue declares typed access to the store name (its changelog is
// topology.Names.ChangelogTopic(name)).
func KeyValue[K, V any](name string, ks serde.Serde[K], vs serde.Serde[V]) KeyValueStore[K, V] {
	s := KeyValueStore[K, V]{name: name, ks: ks, vs: vs}
	s.ka, _ = ks.(serde.Appender[K])
	s.va, _ = vs.(serde.Appender[V])
	return s
}

// Name is the store's name.
func (s KeyValueStore[K, V]) Name() string { return s.name }

// Get returns the value of key in c's task, ok false when absent.
func (s KeyValueStore[K, V]) Get(c *Context, key K) (value V, ok bool, err error) {
	return s.getWith(c.Store(s.name), key, &c.app.keyBuf)
}

func (s KeyValueStore[K, V]) get(st store.ReadOnly, key K) (value V, ok bool, err error) {
	return s.getWith(st, key, nil)
}

// encode encodes v with sd, into *buf when sd can (serde.Appender) and buf is not nil: the loop's
// scratch for bytes a store copies (its engine and its changelog record keep their own).
func encode[T any](sd serde.Serde[T], a serde.Appender[T], v T, buf *[]byte) ([]byte, error) {
	if a != nil && buf != nil {
		b, err := a.AppendEncode((*buf)[:0], v)
		*buf = b
		return b, err
	}
	return sd.Encode(v)
}

func (s KeyValueStore[K, V]) getWith(st store.ReadOnly, key K, buf *[]byte) (value V, ok bool, err error) {
	k, err := encode(s.ks, s.ka, key, buf)
	if err != nil {
		return value, false, fmt.Errorf("stream: encoding a key of store %s: %w", s.name, err)
	}
	return getDecoded(st, k, s.vs, s.name)
}

// getDecoded is the value of store key k in st (of store name), decoded with vs; ok false when
// absent.
func getDecoded[V any](st store.ReadOnly, k []byte, vs serde.Serde[V], name string) (value V, ok bool, err error) {
	raw, ok, err := st.Get(k)
	if err != nil || !ok {
		return value, false, err
	}
	if value, err = vs.Decode(raw); err != nil {
		return value, false, fmt.Errorf("stream: a value in store %s: %w", name, err)
	}
	return value, true, nil
}

// Put sets key to value in c's task's store (and its changelog).
func (s KeyValueStore[K, V]) Put(c *Context, key K, value V) error {
	k, err := encode(s.ks, s.ka, key, &c.app.keyBuf)
	if err != nil {
		return fmt.Errorf("stream: encoding a key of store %s: %w", s.name, err)
	}
	v, err := encode(s.vs, s.va, value, &c.app.valueBuf)
	if err != nil {
		return fmt.Errorf("stream: encoding a value of store %s: %w", s.name, err)
	}
	return c.Store(s.name).Put(k, v)
}

// Delete removes key from c's task's store (a tombstone in its changelog).
func (s KeyValueStore[K, V]) Delete(c *Context, key K) error {
	k, err := s.ks.Encode(key)
	if err != nil {
		return fmt.Errorf("stream: encoding a key of store %s: %w", s.name, err)
	}
	return c.Store(s.name).Delete(k)
}

// All calls fn for every entry of c's task's store in key order, until fn returns false or an
// error occurs (returned).
func (s KeyValueStore[K, V]) All(c *Context, fn func(key K, value V) bool) error {
	return s.each(c.Store(s.name), nil, nil, fn)
}

// Range calls fn for the entries of c's task's store with from <= key < to in the bytewise order of
// the encoded keys, until fn returns false.
func (s KeyValueStore[K, V]) Range(c *Context, from, to K, fn func(key K, value V) bool) error {
	lo, err := s.ks.Encode(from)
	if err != nil {
		return err
	}
	hi, err := s.ks.Encode(to)
	if err != nil {
		return err
	}
	return s.each(c.Store(s.name), lo, hi, fn)
}

// decodeEntry decodes a key and a value read from store name, an error saying which failed.
func decodeEntry[K, V any](name string, ks serde.Serde[K], vs serde.Serde[V], kb, vb []byte) (k K, v V, err error) {
	if k, err = ks.Decode(kb); err != nil {
		return k, v, fmt.Errorf("stream: a key in store %s: %w", name, err)
	}
	if v, err = vs.Decode(vb); err != nil {
		return k, v, fmt.Errorf("stream: a value in store %s: %w", name, err)
	}
	return k, v, nil
}

func (s KeyValueStore[K, V]) each(st store.ReadOnly, lo, hi []byte, fn func(K, V) bool) error {
	it, err := st.Range(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		k, v, err := decodeEntry(s.name, s.ks, s.vs, it.Key(), it.Value())
		if err != nil {
			return err
		}
		if !fn(k, v) {
			break
		}
	}
	return it.Err()
}
