package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// The hashes below are Kafka Streams 4.4's Murmur3.hash128 of each input, computed with its
// kafka-streams jar: every length of tail (0-15 bytes) and of blocks.
func TestMurmur3MatchesKafkaStreams(t *testing.T) {
	for _, tc := range []struct {
		in     string
		h1, h2 uint64
	}{
		{"", 0x9d2764a018e32942, 0x8c3cf3b035938518},
		{"a", 0x3361634e7e0f5188, 0xe9c7dda24eae326b},
		{"abc", 0x8cc66bdf24a3b65e, 0xe942bed9d38bee40},
		{"hello world", 0xbd699b58e4689408, 0x7d50ce87a7f20429},
		{"0123456789abcdef", 0x1a6e941ec6a76967, 0xd7d82808f505d6b1},
		{"0123456789abcdefXYZ", 0xbb31fe14c8ec1d0e, 0x325aa157c895f535},
		{"the quick brown fox jumps over the lazy dog!!", 0x72cf89d5b02628b6, 0x2c86ee8326709890},
	} {
		if got := murmur3([]byte(tc.in)); !got.set || got.h != [2]uint64{tc.h1, tc.h2} {
			t.Errorf("murmur3(%q) = %#x, want [%#x %#x]", tc.in, got.h, tc.h1, tc.h2)
		}
	}
	seq := make([]byte, 256)
	for i := range seq {
		seq[i] = byte(i)
	}
	for _, tc := range []struct {
		n      int
		h1, h2 uint64
	}{
		{1, 0xbf6631567482f286, 0x38e702af0fbf73cd},
		{7, 0xb86934b8dc59fac0, 0xf662105f9a34d35e},
		{8, 0xca8e92af6000cddb, 0xf635f85e1061f8d6},
		{9, 0xfd96cb5bf0db595a, 0x7d8e8e88d37e959f},
		{15, 0x21624b3dab5e9bed, 0xbe757d1b8a4cb936},
		{16, 0x512f2f82da360033, 0xca76f0c3becb8f7d},
		{17, 0x0ac39056b2f5bea4, 0x163acd58edf20484},
		{31, 0x7cb11ca7d8a75abc, 0xeb1b7433891174bd},
		{33, 0x77d41624a7a86fc9, 0x89318937cc2db42c},
		{255, 0x323e8394d80bde37, 0x7b26752840b2a0f4},
		{256, 0xb2a226ef10b55db5, 0x957be3141432d449},
	} {
		if got := murmur3(seq[:tc.n]); got.h != [2]uint64{tc.h1, tc.h2} {
			t.Errorf("murmur3(0..%d) = %#x, want [%#x %#x]", tc.n-1, got.h, tc.h1, tc.h2)
		}
	}
}

// A subscription is written as Kafka Streams' SubscriptionWrapperSerde writes version 1 (and 0):
// the bytes below are laid out by hand from its format.
func TestSubscriptionFormat(t *testing.T) {
	h := valueHash{h: [2]uint64{0x0102030405060708, 0x1112131415161718}, set: true}
	withHash := []byte{1, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 'p', 'k', 0, 0, 0, 3}
	if got := encodeSubscription(subscription{version: 1, hash: h, instr: propagateNullIfNoFK, pk: []byte("pk"), partition: 3}); !bytes.Equal(got, withHash) {
		t.Errorf("with a hash: % x\nwant % x", got, withHash)
	}
	noHash := []byte{0x81, 1, 'p', 'k', 0, 0, 0, 9}
	if got := encodeSubscription(subscription{version: 1, instr: deleteAndPropagate, pk: []byte("pk"), partition: 9}); !bytes.Equal(got, noHash) {
		t.Errorf("without a hash: % x\nwant % x", got, noHash)
	}
	v0 := []byte{0x80, 0, 'p', 'k'}
	if got := encodeSubscription(subscription{version: 0, instr: deleteNoPropagate, pk: []byte("pk")}); !bytes.Equal(got, v0) {
		t.Errorf("version 0: % x\nwant % x", got, v0)
	}
	for _, tc := range []struct {
		in   []byte
		want subscription
	}{
		{withHash, subscription{version: 1, hash: h, instr: propagateNullIfNoFK, pk: []byte("pk"), partition: 3}},
		{noHash, subscription{version: 1, instr: deleteAndPropagate, pk: []byte("pk"), partition: 9}},
		{v0, subscription{version: 0, instr: deleteNoPropagate, pk: []byte("pk")}},
	} {
		got, err := decodeSubscription(tc.in)
		if err != nil || got.version != tc.want.version || got.hash != tc.want.hash || got.instr != tc.want.instr ||
			!bytes.Equal(got.pk, tc.want.pk) || got.partition != tc.want.partition {
			t.Errorf("decode % x = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	// The shortest of each layout: an empty primary key, with and without a hash, versions 0 and 1.
	h16 := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, tc := range []struct {
		in   []byte
		want subscription
	}{
		{[]byte{0x80, 2}, subscription{version: 0, instr: propagateNullIfNoFK, pk: []byte{}}},
		{append([]byte{0, 2}, h16...), subscription{version: 0, instr: propagateNullIfNoFK, pk: []byte{},
			hash: valueHash{h: [2]uint64{0x0102030405060708, 0x090a0b0c0d0e0f10}, set: true}}},
		{[]byte{0x81, 3, 0, 0, 0, 5}, subscription{version: 1, instr: propagateOnlyIfFK, pk: []byte{}, partition: 5}},
	} {
		got, err := decodeSubscription(tc.in)
		if err != nil || got.version != tc.want.version || got.hash != tc.want.hash || got.instr != tc.want.instr ||
			len(got.pk) != 0 || got.partition != tc.want.partition {
			t.Errorf("decode % x = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {1, 4, 'x', 0, 0, 0, 0}, {1, 2, 1, 2}, {0x81, 2, 0, 0}, {0x82, 3, 'x', 0, 0, 0, 0}} {
		if _, err := decodeSubscription(bad); !errors.Is(err, errSubscriptionFormat) {
			t.Errorf("decode % x: %v, want errSubscriptionFormat", bad, err)
		}
	}
}

// A response is written as Kafka Streams' SubscriptionResponseWrapperSerde writes version 0, and a
// foreign value of no bytes reads as none, as there.
func TestResponseFormat(t *testing.T) {
	h := valueHash{h: [2]uint64{1, 2}, set: true}
	withHash := append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2}, "red"...)
	if got := encodeResponse(response{hash: h, value: []byte("red")}); !bytes.Equal(got, withHash) {
		t.Errorf("with a hash: % x\nwant % x", got, withHash)
	}
	if got := encodeResponse(response{}); !bytes.Equal(got, []byte{0x80}) {
		t.Errorf("no hash, no value: % x", got)
	}
	r, err := decodeResponse(withHash)
	if err != nil || r.version != 0 || r.hash != h || string(r.value) != "red" {
		t.Errorf("decode = %+v, %v", r, err)
	}
	r, err = decodeResponse(encodeResponse(response{hash: h, value: []byte{}}))
	if err != nil || r.value != nil || r.hash != h {
		t.Errorf("an empty value = %+v, %v; want none", r, err)
	}
	r, err = decodeResponse([]byte{0x80, 'x'})
	if err != nil || r.hash.set || string(r.value) != "x" {
		t.Errorf("without a hash = %+v, %v", r, err)
	}
	for _, bad := range [][]byte{nil, {0, 1, 2}, {0x81, 'x'}, {1}} { // cut short, versions 1 and 1 with a hash
		if _, err := decodeResponse(bad); !errors.Is(err, errResponseFormat) {
			t.Errorf("decode % x: %v, want errResponseFormat", bad, err)
		}
	}
}

// The subscription store's key is the foreign key's length (4 bytes), the foreign key and the
// primary key (Kafka Streams' CombinedKeySchema), so a prefix scan by foreign key finds its rows.
func TestCombinedKey(t *testing.T) {
	want := []byte{0, 0, 0, 3, 'r', 'e', 'd', 'k', '1'}
	if got := combinedKey([]byte("red"), []byte("k1")); !bytes.Equal(got, want) {
		t.Errorf("combinedKey = % x, want % x", got, want)
	}
	if got := combinedPrefix([]byte("red")); !bytes.Equal(got, want[:7]) {
		t.Errorf("combinedPrefix = % x", got)
	}
	if binary.BigEndian.Uint32(combinedPrefix(nil)) != 0 {
		t.Error("an empty foreign key's prefix")
	}
}

// Decoding any bytes never panics, and what decodes encodes back to the same bytes.
func FuzzSubscriptionFormat(f *testing.F) {
	f.Add([]byte{1, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 'p', 'k', 0, 0, 0, 3})
	f.Add([]byte{0x81, 1, 'p', 0, 0, 0, 9})
	f.Add([]byte{0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := decodeSubscription(b); err == nil && !bytes.Equal(encodeSubscription(s), b) {
			t.Fatalf("% x decoded to %+v, which encodes to % x", b, s, encodeSubscription(s))
		}
		if r, err := decodeResponse(b); err == nil && len(b) > 0 && (r.value != nil || len(b) == 1 || len(b) == 17 && r.hash.set) && !bytes.Equal(encodeResponse(r), b) {
			t.Fatalf("% x decoded to %+v, which encodes to % x", b, r, encodeResponse(r))
		}
	})
}
