package dsl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// The formats of a foreign-key join's internal topics and store, as Kafka Streams 4.4 writes them
// (its SubscriptionWrapperSerde, SubscriptionResponseWrapperSerde and CombinedKeySchema), so that
// Go and Java members exchange subscriptions and responses in one group, and restore each other's
// subscription store.

// fkInstruction is what a subscription asks of the foreign side (Kafka Streams'
// SubscriptionWrapper.Instruction).
type fkInstruction byte

const (
	// deleteNoPropagate removes the subscription and answers nothing.
	deleteNoPropagate fkInstruction = 0
	// deleteAndPropagate removes it and answers with no foreign value.
	deleteAndPropagate fkInstruction = 1
	// propagateNullIfNoFK keeps it and answers with the foreign value, or none.
	propagateNullIfNoFK fkInstruction = 2
	// propagateOnlyIfFK keeps it and answers only when there is a foreign value.
	propagateOnlyIfFK fkInstruction = 3
)

// subscriptionVersion is the subscription format written (version 1 adds the primary partition).
const subscriptionVersion = 1

// valueHash is Kafka Streams' Murmur3 128-bit hash of a primary row's serialized value, by which a
// response is matched to the row it was asked for; absent (null) for a deleted row.
type valueHash struct {
	h   [2]uint64
	set bool
}

// subscription is a subscription record's value: the primary row's hash, the instruction, its
// serialized primary key and the partition its answer goes back to.
type subscription struct {
	version   byte
	hash      valueHash
	instr     fkInstruction
	pk        []byte
	partition int32 // version 1 on
}

// errSubscriptionFormat is a subscription record that is not in Kafka Streams' format.
var errSubscriptionFormat = errors.New("not a Kafka Streams foreign-key subscription")

// encodeSubscription writes s: a byte of the version (its top bit set when the hash is null), the
// instruction, the hash's two longs, the primary key, and from version 1 the partition.
func encodeSubscription(s subscription) []byte {
	out := make([]byte, 0, 2+16+len(s.pk)+4)
	v := s.version
	if !s.hash.set {
		v |= 0x80
	}
	out = append(out, v, byte(s.instr))
	if s.hash.set {
		out = binary.BigEndian.AppendUint64(out, s.hash.h[0])
		out = binary.BigEndian.AppendUint64(out, s.hash.h[1])
	}
	out = append(out, s.pk...)
	if s.version > 0 {
		out = binary.BigEndian.AppendUint32(out, uint32(s.partition))
	}
	return out
}

// decodeSubscription reads a subscription record's value (pk aliases b).
func decodeSubscription(b []byte) (subscription, error) {
	var s subscription
	if len(b) < 2 {
		return s, errSubscriptionFormat
	}
	s.version, s.hash.set = b[0]&0x7f, b[0]&0x80 == 0
	if s.version > subscriptionVersion {
		// Kafka Streams' deserializer refuses it (UnsupportedVersionException).
		return s, fmt.Errorf("%w: version %d (this member reads up to %d)", errSubscriptionFormat, s.version, subscriptionVersion)
	}
	if b[1] > byte(propagateOnlyIfFK) {
		return s, fmt.Errorf("%w: unknown instruction %d", errSubscriptionFormat, b[1])
	}
	s.instr, b = fkInstruction(b[1]), b[2:]
	if s.hash.set {
		if len(b) < 16 {
			return s, errSubscriptionFormat
		}
		s.hash.h = [2]uint64{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
		b = b[16:]
	}
	if s.version > 0 {
		if len(b) < 4 {
			return s, errSubscriptionFormat
		}
		s.partition = int32(binary.BigEndian.Uint32(b[len(b)-4:]))
		b = b[:len(b)-4]
	}
	s.pk = b
	return s, nil
}

// response is a response record's value: the hash of the row it answers and the foreign value
// (nil: none).
type response struct {
	version byte
	hash    valueHash
	value   []byte
}

// errResponseFormat is a response record that is not in Kafka Streams' format.
var errResponseFormat = errors.New("not a Kafka Streams foreign-key response")

// encodeResponse writes r: a byte of the version (its top bit set when the hash is null), the hash,
// the foreign value's bytes.
func encodeResponse(r response) []byte {
	out := make([]byte, 0, 1+16+len(r.value))
	v := r.version
	if !r.hash.set {
		v |= 0x80
	}
	out = append(out, v)
	if r.hash.set {
		out = binary.BigEndian.AppendUint64(out, r.hash.h[0])
		out = binary.BigEndian.AppendUint64(out, r.hash.h[1])
	}
	return append(out, r.value...)
}

// decodeResponse reads a response record's value. A foreign value of no bytes reads as none, as in
// Kafka Streams (value aliases b).
func decodeResponse(b []byte) (response, error) {
	var r response
	if len(b) < 1 {
		return r, errResponseFormat
	}
	r.version, r.hash.set, b = b[0]&0x7f, b[0]&0x80 == 0, b[1:]
	if r.version != 0 {
		// Kafka Streams' deserializer refuses it (UnsupportedVersionException).
		return r, fmt.Errorf("%w: version %d (this member reads version 0)", errResponseFormat, r.version)
	}
	if r.hash.set {
		if len(b) < 16 {
			return r, errResponseFormat
		}
		r.hash.h = [2]uint64{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
		b = b[16:]
	}
	if len(b) > 0 {
		r.value = b
	}
	return r, nil
}

// combinedPrefix is the subscription store's key prefix of a foreign key: its length (4 bytes) and
// the key.
func combinedPrefix(fk []byte) []byte {
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(fk)), uint32(len(fk))), fk...)
}

// combinedKey is the subscription store's key of a foreign key and a primary key (Kafka Streams'
// CombinedKeySchema): the foreign key's prefix, then the primary key.
func combinedKey(fk, pk []byte) []byte { return append(combinedPrefix(fk), pk...) }

// murmur3Seed is Kafka Streams' Murmur3 default seed.
const murmur3Seed = 104729

// murmur3 is MurmurHash3's x64 128-bit hash of data with Kafka Streams' seed, as its
// Murmur3.hash128 computes it (the two longs it returns).
func murmur3(data []byte) valueHash {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	h1, h2 := uint64(murmur3Seed), uint64(murmur3Seed)
	n := len(data)
	for len(data) >= 16 {
		k1, k2 := binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:])
		data = data[16:]
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
		h1 = (bits.RotateLeft64(h1, 27)+h2)*5 + 0x52dce729
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
		h2 = (bits.RotateLeft64(h2, 31)+h1)*5 + 0x38495ab5
	}
	var k1, k2 uint64
	for i := len(data) - 1; i >= 8; i-- {
		k2 ^= uint64(data[i]) << (8 * (i - 8))
	}
	for i := min(len(data), 8) - 1; i >= 0; i-- {
		k1 ^= uint64(data[i]) << (8 * i)
	}
	if len(data) > 8 {
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
	}
	if len(data) > 0 {
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	return valueHash{h: [2]uint64{h1, h2}, set: true}
}

func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}
