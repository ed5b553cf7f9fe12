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
// stream time is kept beside them, so that it survives a restart that restores only the tail.
//
// As in Kafka Streams, a version older than the stream time minus the history retention is not
// written (Put says so), a read as of a time that old finds only a latest version that old, and the
// latest version of a key never expires. Versions no read within the retention can reach are
// deleted when their key is written again.

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
	return it.Close()
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
		return PutResult{}, nil
	}
	if ts > st {
		st = ts
		if err := s.applyWrite(verTimeKey, binary.BigEndian.AppendUint64(nil, uint64(st)), false); err != nil {
			return PutResult{}, err
		}
	}
	// The key's versions, newest first: the oldest newer than this one is where this one ends
	// (validTo); a version ending at or before the history's start is one no read can reach.
	var times []int64
	err = s.versions(key, math.MaxInt64, func(v version) bool {
		times = append(times, v.ts)
		return true
	})
	if err != nil {
		return PutResult{}, err
	}
	res := PutResult{Put: true, Latest: len(times) == 0 || times[0] <= ts}
	var expired [][]byte
	newer := int64(math.MaxInt64) // the existing version after the one looked at
	for _, t := range times {
		if t > ts {
			res.ValidTo = time.UnixMilli(t)
		}
		end := newer
		if ts > t && ts < end {
			end = ts // this version ends where the one written starts
		}
		if t != ts && end != math.MaxInt64 && end <= st-s.ver.history {
			expired = append(expired, verKey(key, t))
		}
		newer = t
	}
	for _, ek := range expired {
		if err := s.applyWrite(ek, nil, true); err != nil {
			return PutResult{}, err
		}
	}
	local := []byte{verTombstone}
	if value != nil {
		local = append(append(make([]byte, 0, 1+len(value)), verValue), value...)
	}
	if err := s.applyWrite(verKey(key, ts), local, false); err != nil {
		return PutResult{}, err
	}
	r := &kgo.Record{Topic: s.changelog.Topic, Partition: s.changelog.Partition, Key: bytes.Clone(key)}
	if value != nil {
		r.Value = bytes.Clone(value)
	}
	s.logWrite(r, time.UnixMilli(ts), value == nil)
	return res, nil
}

// restoreVersions applies changelog records of a versioned store, each a version at its record's
// time, as Kafka Streams' restore puts them: one older than the stream time minus the history
// retention was never written, and is skipped. Unreachable versions stay until their key is written
// again.
func (s *kvStore) restoreVersions(recs []*kgo.Record, b *store.Batch) error {
	st, err := s.streamTime()
	if err != nil {
		return err
	}
	st0 := st
	for _, r := range recs {
		ts := r.Timestamp.UnixMilli()
		if ts < st-s.ver.history {
			continue
		}
		st = max(st, ts)
		local := []byte{verTombstone}
		if r.Value != nil {
			local = append(append(make([]byte, 0, 1+len(r.Value)), verValue), r.Value...)
		}
		b.Put(verKey(r.Key, ts), local)
	}
	if st != st0 {
		b.Put(verTimeKey, binary.BigEndian.AppendUint64(nil, uint64(st)))
	}
	return nil
}
