package dsl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// The DSL's stores keep each value with its timestamp, as Kafka Streams' timestamped key-value
// stores do (ValueAndTimestamp): 8 bytes of big-endian milliseconds, then the value's bytes. The
// runtime writes their changelog as Kafka Streams does (the value alone, the timestamp as the
// record's: stream.TimestampedStore), so Java and Go members restore each other's.

// splitTimestamp reads a stored value of store: its timestamp and its value's bytes.
func splitTimestamp(store string, stored []byte) (time.Time, []byte, error) {
	if len(stored) < 8 {
		return time.Time{}, nil, fmt.Errorf("dsl: a value of store %s has %d bytes, fewer than its 8-byte timestamp", store, len(stored))
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(stored))), stored[8:], nil
}

// recordTime is the timestamp of the record a node handles: the input's, or the one an operation
// before it gave the record.
func recordTime(c *stream.Context, m meta) time.Time {
	if !m.at.IsZero() {
		return m.at
	}
	return c.Timestamp()
}

// stamped is a value with its timestamp, as the DSL's stores keep it.
type stamped[V any] struct {
	v  V
	at time.Time
}

// stampedSerde encodes a stamped value as the DSL's stores keep it (8 bytes of milliseconds, then the value), into the
// runtime's scratch when the value's serde can append (serde.Appender).
type stampedSerde[V any] struct {
	store string
	inner serde.Serde[V]
	app   serde.Appender[V]
	// bytes: V is []byte, whose decoded values are copied out of the store's bytes (an aggregator
	// changing its aggregate in place must not change the store under the changelog write).
	bytes bool
	// plain: the store keeps the value alone, read back without a timestamp (a session store's:
	// Kafka Streams' session stores keep none).
	plain bool
}

func newStampedSerde[V any](store string, inner serde.Serde[V]) stampedSerde[V] {
	app, _ := inner.(serde.Appender[V])
	return stampedSerde[V]{store: store, inner: inner, app: app, bytes: reflect.TypeFor[V]() == reflect.TypeFor[[]byte]()}
}

// newPlainSerde is the serde of a store that keeps values without their timestamp.
func newPlainSerde[V any](store string, inner serde.Serde[V]) stampedSerde[V] {
	s := newStampedSerde(store, inner)
	s.plain = true
	return s
}

func (s stampedSerde[V]) Encode(x stamped[V]) ([]byte, error) { return s.AppendEncode(nil, x) }

func (s stampedSerde[V]) AppendEncode(dst []byte, x stamped[V]) ([]byte, error) {
	if !s.plain {
		dst = binary.BigEndian.AppendUint64(dst, uint64(x.at.UnixMilli()))
	}
	if s.app != nil {
		return s.app.AppendEncode(dst, x.v)
	}
	b, err := s.inner.Encode(x.v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

func (s stampedSerde[V]) Decode(b []byte) (stamped[V], error) {
	var at time.Time
	vb := b
	if !s.plain {
		var err error
		if at, vb, err = splitTimestamp(s.store, b); err != nil {
			return stamped[V]{}, err
		}
	}
	v, err := s.inner.Decode(vb)
	if err != nil {
		return stamped[V]{}, fmt.Errorf("dsl: decoding a value of store %s: %w", s.store, err)
	}
	if s.bytes {
		v = any(bytes.Clone(any(v).([]byte))).(V)
	}
	return stamped[V]{v: v, at: at}, nil
}
