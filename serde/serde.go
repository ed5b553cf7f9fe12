// Package serde turns typed keys and values into the bytes Kafka records and state stores hold,
// and back, with the same encodings as Kafka's own serializers, so Go and Kafka Streams members
// of one group read each other's records and changelogs.
//
// A Serde that cannot decode its input returns a *DecodeError, never a panic.
package serde

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Serde encodes values of type T to bytes and decodes them back.
type Serde[T any] interface {
	// Encode returns the bytes of v.
	Encode(v T) ([]byte, error)
	// Decode returns the value the bytes hold, or a *DecodeError.
	Decode(b []byte) (T, error)
}

// Appender is implemented by a Serde that can also encode into a buffer its caller owns: the
// stream runtime encodes the keys and values it does not keep (a store's, which the store copies)
// without an allocation each. AppendEncode appends the bytes of v to dst and returns the result,
// never nil (an empty encoding is an empty, non-nil slice), as Encode's bytes would be.
type Appender[T any] interface {
	AppendEncode(dst []byte, v T) ([]byte, error)
}

// PartitionKeyer is implemented by a key serde whose records are partitioned by other bytes than
// the key's: a windowed key by its inner key alone (Kafka Streams' WindowedStreamPartitioner), so
// that every window of a key lands on the key's partition. The DSL's To and ToFunc place a record
// written with such a serde by murmur2 of PartitionKey (stream.Context.SendBy), as Kafka Streams'
// sinks do; a repartition places it by its whole key, as Kafka Streams' does.
type PartitionKeyer[T any] interface {
	PartitionKey(v T) ([]byte, error)
}

// DecodeError says bytes are not a value of the serde's type.
type DecodeError struct {
	// Serde names the serde ("int64", "string", "json").
	Serde string
	// Len is the length of the input.
	Len int
	// Err is the cause.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("serde: %d bytes are not a valid %s: %v", e.Len, e.Serde, e.Err)
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Bytes passes bytes through unchanged (Kafka's ByteArraySerde). A nil value stays nil.
var Bytes Serde[[]byte] = bytesSerde{}

// String is UTF-8 text (Kafka's StringSerde). Decode refuses bytes that are not valid UTF-8.
var String Serde[string] = stringSerde{}

// Int64 is a signed 64-bit integer in 8 big-endian bytes (Kafka's LongSerde). Stores order its
// keys bytewise, so negative numbers sort after positive ones.
var Int64 Serde[int64] = int64Serde{}

// Int32 is a signed 32-bit integer in 4 big-endian bytes (Kafka's IntegerSerde).
var Int32 Serde[int32] = int32Serde{}

// JSON encodes values with encoding/json (as Kafka's JsonSerializer family writes them). Decode
// refuses input that is not one JSON value of T's shape.
func JSON[T any]() Serde[T] { return jsonSerde[T]{} }

type bytesSerde struct{}

func (bytesSerde) Encode(v []byte) ([]byte, error) { return v, nil }
func (bytesSerde) Decode(b []byte) ([]byte, error) { return b, nil }

type stringSerde struct{}

func (stringSerde) Encode(v string) ([]byte, error) { return []byte(v), nil }
func (stringSerde) AppendEncode(dst []byte, v string) ([]byte, error) {
	return append(nonNil(dst), v...), nil
}
func (stringSerde) Decode(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", &DecodeError{Serde: "string", Len: len(b), Err: fmt.Errorf("not valid UTF-8")}
	}
	return string(b), nil
}

type int64Serde struct{}

func (int64Serde) Encode(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}
func (int64Serde) AppendEncode(dst []byte, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
}
func (int64Serde) Decode(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, &DecodeError{Serde: "int64", Len: len(b), Err: fmt.Errorf("want 8 bytes")}
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

type int32Serde struct{}

func (int32Serde) Encode(v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(nil, uint32(v)), nil
}
func (int32Serde) AppendEncode(dst []byte, v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
}
func (int32Serde) Decode(b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, &DecodeError{Serde: "int32", Len: len(b), Err: fmt.Errorf("want 4 bytes")}
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// nonNil is dst, or an empty slice when dst is nil: an empty string is an empty key, not a null one.
func nonNil(dst []byte) []byte {
	if dst == nil {
		return []byte{}
	}
	return dst
}

type jsonSerde[T any] struct{}

func (jsonSerde[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }
func (jsonSerde[T]) Decode(b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		var zero T
		return zero, &DecodeError{Serde: "json", Len: len(b), Err: err}
	}
	return v, nil
}
