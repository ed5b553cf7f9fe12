package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
)

// Versioned stores. A versioned store keeps every version of each key for a history retention
// (Kafka Streams' VersionedKeyValueStore, persistentVersionedKeyValueStore): a version is a value
// (or a deletion) valid from its timestamp until the next version's, and a read as of a time finds
// the version valid then. Its changelog carries each version as Kafka Streams writes it — the key,
// the value (null for a deletion), the version's timestamp as the record's — so Go and Java members
// restore each other's. It is a key-value store underneath (the same engines, restore, standbys,
// checkpoints and transactions) whose engine keys are the key's versions, newest first; the store's
// stream time is kept beside them, so that it survives a restart that restores only the tail, and
// an index of the versions by the time they stop being needed (the next version's start, or a
// latest deletion's own), so that expiry deletes them without a scan, as Kafka Streams drops its
// segments.
//
// As in Kafka Streams, a version older than the stream time minus the history retention is not
// written (Put says so; it is counted dropped and logged), a read as of a time that old finds only a
// latest version that old, and the latest value of a key never expires.

// VersionedStore is a versioned store of keys K and values V, by name, given to Connect to declare
// it (Kafka Streams' VersionedKeyValueStore).
type VersionedStore[K, V any] struct {
	name    string
	history int64 // ms
	ks      serde.Serde[K]
	vs      serde.Serde[V]
}

// Versioned declares the versioned store name keeping history for historyRetention (Kafka Streams'
// Stores.persistentVersionedKeyValueStore(name, historyRetention)); its changelog is
// topology.Names.VersionedChangelog(name, historyRetention).
func Versioned[K, V any](name string, historyRetention time.Duration, ks serde.Serde[K], vs serde.Serde[V]) VersionedStore[K, V] {
	return VersionedStore[K, V]{name: name, history: historyRetention.Milliseconds(), ks: ks, vs: vs}
}

// Name is the store's name.
func (s VersionedStore[K, V]) Name() string { return s.name }

// HistoryRetention is how long the store keeps versions that are no longer the latest.
func (s VersionedStore[K, V]) HistoryRetention() time.Duration {
	return time.Duration(s.history) * time.Millisecond
}

func (s VersionedStore[K, V]) versionedHistory() int64 { return s.history }

// versionedDecl is a Store that declares a versioned store.
type versionedDecl interface {
	Store
	versionedHistory() int64
}

// PutResult is what a versioned store's Put did.
type PutResult struct {
	// Put: the version was written; false when it is older than the stream time minus the history
	// retention (Kafka Streams' PUT_RETURN_CODE_NOT_PUT).
	Put bool
	// Latest: the version is its key's latest (Kafka Streams' PUT_RETURN_CODE_VALID_TO_UNDEFINED).
	Latest bool
	// ValidTo is when a version that is not the latest stops being valid: the next version's time.
	ValidTo time.Time
}

// ErrVersionedStore is a versioned store reached as another kind, or another kind reached as a
// versioned store.
var ErrVersionedStore = errors.New("stream: not a versioned store")

// Put writes v as k's version from ts (Kafka Streams' VersionedKeyValueStore.put).
func (s VersionedStore[K, V]) Put(c *Context, k K, v V, ts time.Time) (PutResult, error) {
	kb, err := s.ks.Encode(k)
	if err != nil {
		return PutResult{}, fmt.Errorf("stream: encoding a key of %s: %w", s.name, err)
	}
	vb, err := s.vs.Encode(v)
	if err != nil {
		return PutResult{}, fmt.Errorf("stream: encoding a value of %s: %w", s.name, err)
	}
	if vb == nil {
		vb = []byte{}
	}
	st, err := s.store(c)
	if err != nil {
		return PutResult{}, err
	}
	return st.putVersion(kb, vb, ts.UnixMilli())
}

// Delete writes a deletion as k's version from ts (Kafka Streams' VersionedKeyValueStore.delete):
// reads as of ts or later, until a newer version, find nothing.
func (s VersionedStore[K, V]) Delete(c *Context, k K, ts time.Time) (PutResult, error) {
	kb, err := s.ks.Encode(k)
	if err != nil {
		return PutResult{}, fmt.Errorf("stream: encoding a key of %s: %w", s.name, err)
	}
	st, err := s.store(c)
	if err != nil {
		return PutResult{}, err
	}
	return st.putVersion(kb, nil, ts.UnixMilli())
}

// Get is k's latest value and its time (ok false: none, or the latest version is a deletion).
func (s VersionedStore[K, V]) Get(c *Context, k K) (v V, ts time.Time, ok bool, err error) {
	return s.get(c, k, math.MaxInt64)
}

// GetAsOf is k's value valid at asOf and the time it became valid (Kafka Streams'
// VersionedKeyValueStore.get(key, asOfTimestamp)): ok false when none was, or when asOf is older
// than the store's history and the latest version came later.
func (s VersionedStore[K, V]) GetAsOf(c *Context, k K, asOf time.Time) (v V, ts time.Time, ok bool, err error) {
	return s.get(c, k, asOf.UnixMilli())
}

func (s VersionedStore[K, V]) get(c *Context, k K, asOf int64) (v V, ts time.Time, ok bool, err error) {
	kb, err := s.ks.Encode(k)
	if err != nil {
		return v, ts, false, fmt.Errorf("stream: encoding a key of %s: %w", s.name, err)
	}
	st, err := s.store(c)
	if err != nil {
		return v, ts, false, err
	}
	vb, at, ok, err := st.getVersion(kb, asOf)
	if err != nil || !ok {
		return v, ts, false, err
	}
	if v, err = s.vs.Decode(vb); err != nil {
		return v, ts, false, fmt.Errorf("stream: decoding a value of %s: %w", s.name, err)
	}
	return v, time.UnixMilli(at), true, nil
}

// store is the task's versioned store of s's name.
func (s VersionedStore[K, V]) store(c *Context) (*kvStore, error) {
	kv := c.Store(s.name)
	st, ok := kv.(*kvStore)
	if !ok {
		if _, _, err := kv.Get([]byte{}); err != nil {
			return nil, err // an unknown store says which it is and which there are
		}
		return nil, fmt.Errorf("%w: %s is a global store", ErrVersionedStore, s.name)
	}
	if st.ver == nil {
		return nil, fmt.Errorf("%w: %s was declared as another kind of store", ErrVersionedStore, s.name)
	}
	return st, nil
}

// versionState is a versioned store's history retention.
type versionState struct {
	history int64
}

// noStreamTime is a versioned store's stream time before any write (Kafka Streams' -1).
const noStreamTime = -1

// The engine's keys: the stream time under verTimeKey, and each version under verPrefix(key) and
// its time inverted, so that a key's versions sort newest first. A version's engine value is a
// byte (1: a value, 0: a deletion) and the value.
var verTimeKey = []byte{1}

const (
	verValue     = 1
	verTombstone = 0
)

// verIndexPrefix leads the expiry index's keys: the time a version stops being needed (ordered),
// then the version's own key after its leading byte.
const verIndexPrefix = 2

// verIndexKey is the index key of key's version from ts, no longer needed once the history starts at
// or after end.
func verIndexKey(end int64, key []byte, ts int64) []byte {
	k := appendOrdered([]byte{verIndexPrefix}, end)
	k = binary.BigEndian.AppendUint32(k, uint32(len(key)))
	return appendOrdered(append(k, key...), ts)
}

// appendOrdered appends ts so that times sort in order, negative ones first.
func appendOrdered(b []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(ts)^1<<63)
}

// orderedAt reads a time appendOrdered wrote in b (8 bytes).
func orderedAt(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ 1<<63) }

// verPrefix is the engine key prefix of key's versions: 0, the key's length (4 bytes), the key.
func verPrefix(key []byte) []byte {
	p := make([]byte, 0, 1+4+len(key)+8)
	p = append(p, 0)
	p = binary.BigEndian.AppendUint32(p, uint32(len(key)))
	return append(p, key...)
}

// verKey is the engine key of key's version from ts.
func verKey(key []byte, ts int64) []byte { return appendInverted(verPrefix(key), ts) }

// appendInverted appends ts so that later times sort first.
func appendInverted(b []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(b, ^(uint64(ts) ^ 1<<63))
}

// invertedAt reads a time appendInverted wrote at the end of ek.
func invertedAt(ek []byte) int64 {
	return int64(^binary.BigEndian.Uint64(ek[len(ek)-8:]) ^ 1<<63)
}

// streamTime is the store's stream time: the newest version's time written or restored.
func (s *kvStore) streamTime() (int64, error) {
	v, ok, err := s.Get(verTimeKey)
	if err != nil || !ok {
		return noStreamTime, err
	}
	if len(v) != 8 {
		return 0, s.fail("read", fmt.Errorf("%w: the versioned store's stream time is %d bytes", store.ErrCorrupt, len(v)))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// version is one version of a key read from the engine.
type version struct {
	ts    int64
	value []byte // nil: a deletion
}

// versions reads key's versions, newest first, from its version at or before from (math.MaxInt64:
// all), while fn returns true.
func (s *kvStore) versions(key []byte, from int64, fn func(v version) bool) error {
	prefix := verPrefix(key)
	lower := prefix
	if from != math.MaxInt64 {
		lower = appendInverted(bytes.Clone(prefix), from)
	}
	it, err := s.engineRange(lower, store.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		ek, ev := it.Key(), it.Value()
		if len(ek) != len(prefix)+8 || len(ev) < 1 {
			return s.fail("read", fmt.Errorf("%w: a versioned store entry of %d and %d bytes", store.ErrCorrupt, len(ek), len(ev)))
		}
		v := version{ts: invertedAt(ek)}
		if ev[0] == verValue {
			v.value = bytes.Clone(ev[1:])
		}
		if !fn(v) {
			break
		}
	}
	return errors.Join(it.Err(), it.Close())
}

// getVersion is key's value valid at asOf (math.MaxInt64: its latest), as Kafka Streams'
// RocksDBVersionedStore reads it.
func (s *kvStore) getVersion(key []byte, asOf int64) (value []byte, ts int64, ok bool, err error) {
	if s.ver == nil {
		return nil, 0, false, fmt.Errorf("%w: %s", ErrVersionedStore, s.name)
	}
	st, err := s.streamTime()
	if err != nil {
		return nil, 0, false, err
	}
	from := asOf
	if asOf != math.MaxInt64 && asOf < st-s.ver.history {
		from = math.MaxInt64 // past the history: only a latest version that old
	}
	var found *version
	err = s.versions(key, from, func(v version) bool {
		found = &v
		return false
	})
	if err != nil || found == nil || found.value == nil || found.ts > asOf {
		return nil, 0, false, err
	}
	return found.value, found.ts, true, nil
}

// putVersion writes key's version from ts (value nil: a deletion) and its changelog record, as
// Kafka Streams' RocksDBVersionedStore.put: not when ts is older than the stream time minus the
// history retention. It deletes the key's versions no read within the history can reach.
func (s *kvStore) putVersion(key, value []byte, ts int64) (PutResult, error) {
	if s.ver == nil {
		return PutResult{}, fmt.Errorf("%w: %s", ErrVersionedStore, s.name)
	}
	if !s.task.active {
		return PutResult{}, s.fail("write", errors.New("the task is a standby here: only active tasks write"))
	}
	if key == nil {
		return PutResult{}, fmt.Errorf("%w: store %s of task %s", ErrNullKey, s.name, s.task.id)
	}
	st, err := s.streamTime()
	if err != nil {
		return PutResult{}, err
	}
	if ts < st-s.ver.history {
		// Kafka Streams counts it dropped, and its changelog layer logs it anyway (a restore skips
		// it by the same rule).
		s.app.metrics.dropped.Add(1)
		s.logVersion(key, value, ts)
		return PutResult{}, nil
	}
	res, err := s.insertVersion(key, value, ts, st, s.applyWrite)
	if err != nil {
		return PutResult{}, err
	}
	s.logVersion(key, value, ts)
	return res, nil
}

// insertVersion writes key's version from ts (value nil: a deletion) with write, the store's stream
// time st before it: the stream time moved, the version, the expiry index of the versions whose
// end it changes, and the expiry of those no read can reach any more.
func (s *kvStore) insertVersion(key, value []byte, ts, st int64, write func(ek, local []byte, del bool) error) (PutResult, error) {
	if ts > st {
		st = ts
		if err := write(verTimeKey, binary.BigEndian.AppendUint64(nil, uint64(st)), false); err != nil {
			return PutResult{}, err
		}
	}
	// The key's versions, newest first: the oldest newer than this one is where this one ends
	// (validTo), and this one is where the newest older one now ends.
	var vs []version
	err := s.versions(key, math.MaxInt64, func(v version) bool {
		vs = append(vs, v)
		return true
	})
	if err != nil {
		return PutResult{}, err
	}
	res := PutResult{Put: true, Latest: len(vs) == 0 || vs[0].ts <= ts}
	var newer, older *version // the nearest on either side; same: the version this one replaces
	var same *version
	for i := range vs {
		switch v := &vs[i]; {
		case v.ts > ts:
			newer = v
		case v.ts == ts:
			same = v
		case older == nil:
			older = v
		}
	}
	// The index says when each version stops being needed: a version that is not the latest when
	// the next one starts, a latest deletion at its own time.
	index := func(v version, end int64, del bool) error {
		return write(verIndexKey(end, key, v.ts), []byte{}, del)
	}
	endOf := func(v *version, next *version) (int64, bool) {
		switch {
		case next != nil:
			return next.ts, true
		case v.value == nil:
			return v.ts, true // a latest deletion
		}
		return 0, false // a latest value never expires
	}
	this := version{ts: ts, value: value}
	if same != nil {
		if e, ok := endOf(same, newer); ok {
			if err := index(*same, e, true); err != nil {
				return PutResult{}, err
			}
		}
	} else if older != nil {
		if e, ok := endOf(older, newer); ok {
			if err := index(*older, e, true); err != nil {
				return PutResult{}, err
			}
		}
		if err := index(*older, ts, false); err != nil {
			return PutResult{}, err
		}
	}
	if e, ok := endOf(&this, newer); ok {
		if err := index(this, e, false); err != nil {
			return PutResult{}, err
		}
	}
	if newer != nil {
		res.ValidTo = time.UnixMilli(newer.ts)
	}
	local := []byte{verTombstone}
	if value != nil {
		local = append(append(make([]byte, 0, 1+len(value)), verValue), value...)
	}
	if err := write(verKey(key, ts), local, false); err != nil {
		return PutResult{}, err
	}
	return res, s.expireVersions(st, write)
}

// expireVersions deletes the versions that stopped being needed at or before the history's start
// (st minus the history retention), by the index, without a scan of the others: no read within the
// history can reach them, and past it a read finds only a latest value, which never expires.
func (s *kvStore) expireVersions(st int64, write func(ek, local []byte, del bool) error) error {
	bound := st - s.ver.history
	upper := []byte{verIndexPrefix + 1}
	if bound < math.MaxInt64 {
		upper = appendOrdered([]byte{verIndexPrefix}, bound+1)
	}
	it, err := s.engineRange([]byte{verIndexPrefix}, upper)
	if err != nil {
		return err
	}
	var due [][]byte
	for it.Next() {
		due = append(due, bytes.Clone(it.Key()))
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	for _, ik := range due {
		if len(ik) < 1+8+4 {
			return s.fail("expire", fmt.Errorf("%w: a versioned store index key of %d bytes", store.ErrCorrupt, len(ik)))
		}
		if err := write(ik, nil, true); err != nil {
			return err
		}
		// The version's key is the index key after its end: the same prefix layout and time.
		vk := append([]byte{0}, ik[1+8:]...)
		if len(vk) < 1+4+8 {
			return s.fail("expire", fmt.Errorf("%w: a versioned store index key of %d bytes", store.ErrCorrupt, len(ik)))
		}
		vk = appendInverted(vk[:len(vk)-8], orderedAt(vk[len(vk)-8:]))
		if err := write(vk, nil, true); err != nil {
			return err
		}
	}
	return nil
}

// logVersion writes key's version from ts (value nil: a deletion) to the store's changelog.
func (s *kvStore) logVersion(key, value []byte, ts int64) {
	r := &kgo.Record{Topic: s.changelog.Topic, Partition: s.changelog.Partition, Key: bytes.Clone(key)}
	if value != nil {
		r.Value = bytes.Clone(value)
	}
	s.logWrite(r, time.UnixMilli(ts), value == nil)
}

// restoreVersions applies changelog records of a versioned store, each a version at its record's
// time, as Kafka Streams' restore puts them: one older than the stream time minus the history
// retention was never written, and is skipped. Each is written to the engine at once (the next
// reads its effect); the caller records the position after.
func (s *kvStore) restoreVersions(recs []*kgo.Record) error {
	var one store.Batch
	write := func(ek, local []byte, del bool) error {
		one.Reset()
		if del {
			one.Delete(ek)
		} else {
			one.Put(ek, local)
		}
		if err := s.eng.Apply(&one, -1); err != nil {
			return s.fail("restore", err)
		}
		return nil
	}
	for _, r := range recs {
		st, err := s.streamTime()
		if err != nil {
			return err
		}
		ts := r.Timestamp.UnixMilli()
		if ts < st-s.ver.history || r.Key == nil {
			continue
		}
		if _, err := s.insertVersion(r.Key, r.Value, ts, st, write); err != nil {
			return err
		}
	}
	return nil
}
