package windowed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/streamsgroup/streamsgroup/serde"
)

// Window is a span of time in Unix milliseconds. A time window (TimeWindows) holds the records of
// [Start, End); a session window holds those of [Start, End], both ends included, as Kafka Streams'
// TimeWindow and SessionWindow do.
type Window struct {
	Start, End int64
}

// String is the window as Kafka Streams prints it.
func (w Window) String() string { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }

// Key is a key with its window: the key of a windowed aggregation's result (Kafka Streams'
// Windowed<K>).
type Key[K any] struct {
	Key    K
	Window Window
}

// String is the key as Kafka Streams' Windowed prints it.
func (k Key[K]) String() string {
	return fmt.Sprintf("[%v@%d/%d]", k.Key, k.Window.Start, k.Window.End)
}

const (
	timeSize   = 8 // a timestamp: big-endian int64 milliseconds
	seqSize    = 4 // a window store's sequence number: big-endian int32
	storeTail  = timeSize + seqSize
	sessionLen = 2 * timeSize
)

// AppendStoreKey appends the key of a window store record (Kafka Streams' WindowKeySchema): the
// key's bytes, the window's start and a sequence number (0 for an aggregation's store, which keeps
// one value per key and window; a join's store numbers the duplicates). Its changelog's records
// carry the same key.
func AppendStoreKey(dst, key []byte, start int64, seq int32) []byte {
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(start))
	return binary.BigEndian.AppendUint32(dst, uint32(seq))
}

// SplitStoreKey reads a window store key written by AppendStoreKey: the key's bytes (a part of b),
// the window's start and the sequence number.
func SplitStoreKey(b []byte) (key []byte, start int64, seq int32, err error) {
	if len(b) < storeTail {
		return nil, 0, 0, &serde.DecodeError{Serde: "window store key", Len: len(b),
			Err: fmt.Errorf("want the key, an 8-byte window start and a 4-byte sequence number (at least %d bytes)", storeTail)}
	}
	n := len(b) - storeTail
	return b[:n:n], int64(binary.BigEndian.Uint64(b[n:])), int32(binary.BigEndian.Uint32(b[n+timeSize:])), nil
}

// AppendSessionKey appends the key of a session store record, which its changelog carries too, and
// of a session-windowed key on a topic (Kafka Streams' SessionKeySchema): the key's bytes, the
// session's end, then its start.
func AppendSessionKey(dst, key []byte, w Window) []byte {
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(w.End))
	return binary.BigEndian.AppendUint64(dst, uint64(w.Start))
}

// SplitSessionKey reads a key written by AppendSessionKey.
func SplitSessionKey(b []byte) (key []byte, w Window, err error) {
	if len(b) < sessionLen {
		return nil, Window{}, &serde.DecodeError{Serde: "session key", Len: len(b),
			Err: fmt.Errorf("want the key, an 8-byte session end and an 8-byte session start (at least %d bytes)", sessionLen)}
	}
	n := len(b) - sessionLen
	w = Window{End: int64(binary.BigEndian.Uint64(b[n:])), Start: int64(binary.BigEndian.Uint64(b[n+timeSize:]))}
	if w.End < w.Start {
		return nil, Window{}, &serde.DecodeError{Serde: "session key", Len: len(b),
			Err: fmt.Errorf("the session ends (%d) before it starts (%d)", w.End, w.Start)}
	}
	return b[:n:n], w, nil
}

// AppendTimeKey appends a time-windowed key as Kafka's TimeWindowedSerializer writes it on a topic:
// the key's bytes, then the window's start (the end is not written: a reader knows the window size).
func AppendTimeKey(dst, key []byte, start int64) []byte {
	dst = append(dst, key...)
	return binary.BigEndian.AppendUint64(dst, uint64(start))
}

// SplitTimeKey reads a key written by AppendTimeKey, of windows of size ms: the key's bytes and the
// window, whose end is its start plus size (the largest time when that overflows, as Kafka Streams
// bounds it).
func SplitTimeKey(b []byte, size int64) (key []byte, w Window, err error) {
	if len(b) < timeSize {
		return nil, Window{}, &serde.DecodeError{Serde: "time-windowed key", Len: len(b),
			Err: fmt.Errorf("want the key and an 8-byte window start (at least %d bytes)", timeSize)}
	}
	n := len(b) - timeSize
	start := int64(binary.BigEndian.Uint64(b[n:]))
	return b[:n:n], Window{Start: start, End: endOf(start, size)}, nil
}

// endOf is start+size, or the largest time when that overflows.
func endOf(start, size int64) int64 {
	if size > 0 && start > math.MaxInt64-size {
		return math.MaxInt64
	}
	return start + size
}

// TimeKeySerde returns the serde of time-windowed keys as Kafka's TimeWindowedSerde writes them on
// topics (the inner key's bytes, then the window start), for windows of size ms, whose end a reader
// computes. Records written with it are partitioned by the inner key alone, as Kafka Streams'
// WindowedStreamPartitioner partitions them (serde.PartitionKeyer).
func TimeKeySerde[K any](inner serde.Serde[K], size int64) serde.Serde[Key[K]] {
	return timeKeySerde[K]{inner: inner, size: size}
}

type timeKeySerde[K any] struct {
	inner serde.Serde[K]
	size  int64
}

func (s timeKeySerde[K]) Encode(k Key[K]) ([]byte, error) {
	b, err := s.inner.Encode(k.Key)
	if err != nil {
		return nil, err
	}
	return AppendTimeKey(make([]byte, 0, len(b)+timeSize), b, k.Window.Start), nil
}

func (s timeKeySerde[K]) Decode(b []byte) (Key[K], error) {
	kb, w, err := SplitTimeKey(b, s.size)
	return withInner(s.inner, kb, w, err)
}

// withInner is the windowed key of inner key bytes kb and window w, split from a layout with err.
func withInner[K any](inner serde.Serde[K], kb []byte, w Window, err error) (Key[K], error) {
	if err != nil {
		return Key[K]{}, err
	}
	k, err := inner.Decode(kb)
	if err != nil {
		return Key[K]{}, err
	}
	return Key[K]{Key: k, Window: w}, nil
}

// PartitionKey implements serde.PartitionKeyer: the inner key's bytes.
func (s timeKeySerde[K]) PartitionKey(k Key[K]) ([]byte, error) { return s.inner.Encode(k.Key) }

// SessionKeySerde returns the serde of session-windowed keys as Kafka's SessionWindowedSerde writes
// them on topics (the inner key's bytes, the session's end, then its start). Records written with
// it are partitioned by the inner key alone (serde.PartitionKeyer).
func SessionKeySerde[K any](inner serde.Serde[K]) serde.Serde[Key[K]] {
	return sessionKeySerde[K]{inner: inner}
}

type sessionKeySerde[K any] struct{ inner serde.Serde[K] }

func (s sessionKeySerde[K]) Encode(k Key[K]) ([]byte, error) {
	if k.Window.End < k.Window.Start {
		return nil, fmt.Errorf("windowed: the session %d..%d ends before it starts", k.Window.Start, k.Window.End)
	}
	b, err := s.inner.Encode(k.Key)
	if err != nil {
		return nil, err
	}
	return AppendSessionKey(make([]byte, 0, len(b)+sessionLen), b, k.Window), nil
}

func (s sessionKeySerde[K]) Decode(b []byte) (Key[K], error) {
	kb, w, err := SplitSessionKey(b)
	return withInner(s.inner, kb, w, err)
}

// PartitionKey implements serde.PartitionKeyer: the inner key's bytes.
func (s sessionKeySerde[K]) PartitionKey(k Key[K]) ([]byte, error) { return s.inner.Encode(k.Key) }

// ErrWindows says a window definition is invalid; the error wrapping it says how.
var ErrWindows = errors.New("windowed: invalid windows")
