package sgpebble

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestIdentityRoundTrip(t *testing.T) {
	for _, id := range []identity{
		{version: formatVersion},
		{version: formatVersion, applicationID: "app", task: tasks.ID{Subtopology: "0", Partition: 3}, store: "counts"},
		{version: 7, applicationID: "ü\x00", task: tasks.ID{Subtopology: "x", Partition: math.MinInt32}, store: string(make([]byte, 300))},
		{version: formatVersion, task: tasks.ID{Partition: math.MaxInt32}},
	} {
		got, err := decodeIdentity(encodeIdentity(id))
		if err != nil || got != id {
			t.Fatalf("decode(encode(%v)) = %v, %v", id, got, err)
		}
	}
}

func TestIdentityMalformed(t *testing.T) {
	good := encodeIdentity(identity{version: formatVersion, applicationID: "app", task: tasks.ID{Subtopology: "0", Partition: 3}, store: "counts"})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"magic only":     []byte(identityMagic),
		"wrong magic":    append([]byte("xgpebble"), good[len(identityMagic):]...),
		"trailing bytes": append(bytes.Clone(good), 0),
		"huge length":    append([]byte(identityMagic+"\x01"), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"bad varint":     append([]byte(identityMagic+"\x01"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"partition out of int32": append(append([]byte(identityMagic+"\x01"), 0, 0),
			0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
	} {
		if _, err := decodeIdentity(b); !errors.Is(err, errDecode) {
			t.Errorf("%s: err = %v, want errDecode", name, err)
		}
	}
	for i := range good {
		if _, err := decodeIdentity(good[:i]); !errors.Is(err, errDecode) {
			t.Errorf("cut at %d: err = %v, want errDecode", i, err)
		}
	}
}

func TestPositionRecord(t *testing.T) {
	for _, p := range []int64{0, 1, 1 << 40, math.MaxInt64} {
		got, err := decodePosition(encodePosition(p))
		if err != nil || got != p {
			t.Fatalf("decode(encode(%d)) = %d, %v", p, got, err)
		}
	}
	neg := encodePosition(0)
	neg[1] = 0x80
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short":          encodePosition(5)[:8],
		"long":           append(encodePosition(5), 0),
		"other version":  append([]byte{9}, encodePosition(5)[1:]...),
		"negative value": neg,
	} {
		if _, err := decodePosition(b); !errors.Is(err, errDecode) {
			t.Errorf("%s: err = %v, want errDecode", name, err)
		}
	}
}

// FuzzDecodeIdentity: the parser never panics, marks every refusal errDecode, and what it accepts
// encodes to a record that decodes to the same identity.
func FuzzDecodeIdentity(f *testing.F) {
	f.Add(encodeIdentity(identity{version: formatVersion, applicationID: "app", task: tasks.ID{Subtopology: "0", Partition: 3}, store: "counts"}))
	f.Add([]byte(identityMagic + "\x01\x00\x00\x00\x00"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := decodeIdentity(b)
		if err != nil {
			if !errors.Is(err, errDecode) {
				t.Fatalf("error not marked errDecode: %v", err)
			}
			return
		}
		if enc := encodeIdentity(id); !bytes.Equal(enc, b) {
			// Varints have one shortest form; a longer one decodes but is not what we write.
			if again, err := decodeIdentity(enc); err != nil || again != id {
				t.Fatalf("re-encoding %v does not decode back: %v %v", id, again, err)
			}
		}
	})
}

// FuzzDecodePosition: never panics; an accepted record re-encodes to the same bytes.
func FuzzDecodePosition(f *testing.F) {
	f.Add(encodePosition(42))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePosition(b)
		if err != nil {
			if !errors.Is(err, errDecode) {
				t.Fatalf("error not marked errDecode: %v", err)
			}
			return
		}
		if p < 0 || !bytes.Equal(encodePosition(p), b) {
			t.Fatalf("accepted %x as %d", b, p)
		}
	})
}
