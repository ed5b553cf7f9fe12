package windowed

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
)

// The layouts, written out byte by byte from Kafka Streams' WindowKeySchema, SessionKeySchema and
// the windowed serializers: big-endian times after the key.
func TestLayouts(t *testing.T) {
	k := []byte("k1")
	want := []byte{'k', '1', 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 7}
	if got := AppendStoreKey(nil, k, 1000, 7); !bytes.Equal(got, want) {
		t.Fatalf("AppendStoreKey = %x, want %x", got, want)
	}
	key, start, seq, err := SplitStoreKey(want)
	if err != nil || string(key) != "k1" || start != 1000 || seq != 7 {
		t.Fatalf("SplitStoreKey = %q %d %d %v", key, start, seq, err)
	}
	// The session's end comes before its start.
	want = []byte{'k', 0, 0, 0, 0, 0, 0, 0x07, 0xd0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8}
	if got := AppendSessionKey(nil, []byte("k"), Window{Start: 1000, End: 2000}); !bytes.Equal(got, want) {
		t.Fatalf("AppendSessionKey = %x, want %x", got, want)
	}
	key, w, err := SplitSessionKey(want)
	if err != nil || string(key) != "k" || w != (Window{Start: 1000, End: 2000}) {
		t.Fatalf("SplitSessionKey = %q %v %v", key, w, err)
	}
	want = []byte{'a', 'b', 0, 0, 0, 0, 0, 0, 0x13, 0x88}
	if got := AppendTimeKey(nil, []byte("ab"), 5000); !bytes.Equal(got, want) {
		t.Fatalf("AppendTimeKey = %x, want %x", got, want)
	}
	key, w, err = SplitTimeKey(want, 60000)
	if err != nil || string(key) != "ab" || w != (Window{Start: 5000, End: 65000}) {
		t.Fatalf("SplitTimeKey = %q %v %v", key, w, err)
	}
	// An end past the largest time is the largest time.
	if _, w, _ := SplitTimeKey(AppendTimeKey(nil, nil, math.MaxInt64-5), 10); w.End != math.MaxInt64 {
		t.Fatalf("end of a window past the largest time = %d", w.End)
	}
	// An empty key is a key: the layout is the times alone.
	if key, start, _, err := SplitStoreKey(AppendStoreKey(nil, nil, 3, 0)); err != nil || len(key) != 0 || start != 3 {
		t.Fatalf("empty key: %q %d %v", key, start, err)
	}
	// The key returned cannot grow into the times.
	key, _, _, _ = SplitStoreKey(AppendStoreKey(nil, []byte("x"), 1, 2))
	if cap(key) != 1 {
		t.Fatalf("cap of the key part = %d, want 1", cap(key))
	}
}

func TestLayoutsRefuseWhatTheyCannotRead(t *testing.T) {
	var de *serde.DecodeError
	if _, _, _, err := SplitStoreKey(make([]byte, 11)); !errors.As(err, &de) || de.Len != 11 {
		t.Fatalf("SplitStoreKey of 11 bytes: %v", err)
	}
	if _, _, err := SplitSessionKey(make([]byte, 15)); !errors.As(err, &de) {
		t.Fatalf("SplitSessionKey of 15 bytes: %v", err)
	}
	if _, _, err := SplitSessionKey(AppendSessionKey(nil, nil, Window{Start: 5, End: 4})); !errors.As(err, &de) {
		t.Fatalf("a session ending before it starts: %v", err)
	}
	if _, _, err := SplitTimeKey(make([]byte, 7), 1); !errors.As(err, &de) {
		t.Fatalf("SplitTimeKey of 7 bytes: %v", err)
	}
	if _, _, _, err := SplitStoreKey(make([]byte, 12)); err != nil {
		t.Fatalf("SplitStoreKey of exactly 12 bytes: %v", err)
	}
	if _, _, err := SplitSessionKey(make([]byte, 16)); err != nil {
		t.Fatalf("SplitSessionKey of exactly 16 bytes: %v", err)
	}
	if _, _, err := SplitTimeKey(make([]byte, 8), 1); err != nil {
		t.Fatalf("SplitTimeKey of exactly 8 bytes: %v", err)
	}
}

func TestKeySerdes(t *testing.T) {
	ts := TimeKeySerde(serde.String, 60000)
	b, err := ts.Encode(Key[string]{Key: "k", Window: Window{Start: 60000, End: 120000}})
	if err != nil || !bytes.Equal(b, []byte{'k', 0, 0, 0, 0, 0, 0, 0xea, 0x60}) {
		t.Fatalf("TimeKeySerde.Encode = %x %v", b, err)
	}
	k, err := ts.Decode(b)
	if err != nil || k != (Key[string]{Key: "k", Window: Window{Start: 60000, End: 120000}}) {
		t.Fatalf("TimeKeySerde.Decode = %v %v", k, err)
	}
	if base, err := ts.(serde.PartitionKeyer[Key[string]]).PartitionKey(k); err != nil || string(base) != "k" {
		t.Fatalf("PartitionKey = %q %v", base, err)
	}
	ss := SessionKeySerde(serde.Int64)
	sk := Key[int64]{Key: 9, Window: Window{Start: 1, End: 1}}
	b, err = ss.Encode(sk)
	if err != nil || len(b) != 24 {
		t.Fatalf("SessionKeySerde.Encode = %x %v", b, err)
	}
	if got, err := ss.Decode(b); err != nil || got != sk {
		t.Fatalf("SessionKeySerde.Decode = %v %v", got, err)
	}
	if base, err := ss.(serde.PartitionKeyer[Key[int64]]).PartitionKey(sk); err != nil || !bytes.Equal(base, []byte{0, 0, 0, 0, 0, 0, 0, 9}) {
		t.Fatalf("session PartitionKey = %x %v", base, err)
	}
	if _, err := ss.Encode(Key[int64]{Window: Window{Start: 2, End: 1}}); err == nil {
		t.Fatal("a session ending before it starts encoded")
	}
	// The inner serde's refusal comes through.
	var de *serde.DecodeError
	if _, err := TimeKeySerde(serde.Int64, 1).Decode(AppendTimeKey(nil, []byte{1, 2}, 0)); !errors.As(err, &de) || de.Serde != "int64" {
		t.Fatalf("an inner key that does not decode: %v", err)
	}
	if _, err := SessionKeySerde(serde.Int64).Decode(AppendSessionKey(nil, []byte{1}, Window{})); !errors.As(err, &de) || de.Serde != "int64" {
		t.Fatalf("an inner session key that does not decode: %v", err)
	}
	if _, err := TimeKeySerde(serde.String, 1).Decode([]byte{1}); !errors.As(err, &de) {
		t.Fatalf("a short time key: %v", err)
	}
	if _, err := SessionKeySerde(serde.String).Decode([]byte{1}); !errors.As(err, &de) {
		t.Fatalf("a short session key: %v", err)
	}
	if (Key[string]{Key: "a", Window: Window{Start: 1, End: 2}}).String() != "[a@1/2]" || (Window{Start: 1, End: 2}).String() != "[1,2)" {
		t.Fatal("String")
	}
}

// The windows a record falls in, from Kafka Streams' documented semantics: aligned to the epoch,
// [start, start+size), none starting before 0.
func TestWindowsFor(t *testing.T) {
	w := func(s, e int64) Window { return Window{Start: s, End: e} }
	tumbling := OfSizeWithNoGrace(5 * time.Second)
	hopping := OfSizeAndGrace(10*time.Second, time.Second).AdvanceBy(5 * time.Second)
	for _, c := range []struct {
		name string
		ws   TimeWindows
		ts   int64
		want []Window
	}{
		{"tumbling, inside", tumbling, 12000, []Window{w(10000, 15000)}},
		{"tumbling, at a start", tumbling, 10000, []Window{w(10000, 15000)}},
		{"tumbling, just before an end", tumbling, 14999, []Window{w(10000, 15000)}},
		{"tumbling, at the epoch", tumbling, 0, []Window{w(0, 5000)}},
		{"hopping, two windows", hopping, 12000, []Window{w(5000, 15000), w(10000, 20000)}},
		{"hopping, at a start", hopping, 10000, []Window{w(5000, 15000), w(10000, 20000)}},
		{"hopping, near the epoch", hopping, 3000, []Window{w(0, 10000)}},
		{"hopping, advance 1 ms", OfSizeWithNoGrace(3 * time.Millisecond).AdvanceBy(time.Millisecond), 10, []Window{w(8, 11), w(9, 12), w(10, 13)}},
		{"before the epoch", tumbling, -1, nil},
		{"invalid windows", TimeWindows{}, 5, nil},
		{"an invalid advance", OfSizeWithNoGrace(time.Second).AdvanceBy(0), 5, nil},
		{"at the largest time", OfSizeWithNoGrace(10 * time.Millisecond), math.MaxInt64, []Window{w(math.MaxInt64-7, math.MaxInt64)}},
		{"hopping at the largest time", OfSizeWithNoGrace(10 * time.Millisecond).AdvanceBy(5 * time.Millisecond), math.MaxInt64,
			[]Window{w(math.MaxInt64-7, math.MaxInt64), w(math.MaxInt64-2, math.MaxInt64)}},
	} {
		if got := c.ws.WindowsFor(c.ts); !slices.Equal(got, c.want) {
			t.Errorf("%s: WindowsFor(%d) = %v, want %v", c.name, c.ts, got, c.want)
		}
	}
	if hopping.Size() != 10000 || hopping.Advance() != 5000 || hopping.Grace() != 1000 || tumbling.Advance() != 5000 || tumbling.Grace() != 0 {
		t.Fatalf("accessors: %v %v", hopping, tumbling)
	}
	if hopping.String() != "TimeWindows{size=10000 ms, advance=5000 ms, grace=1000 ms}" {
		t.Fatalf("String = %s", hopping)
	}
}

func TestTimeWindowsValidate(t *testing.T) {
	for _, c := range []struct {
		ws TimeWindows
		ok bool
	}{
		{OfSizeWithNoGrace(time.Millisecond), true},
		{OfSizeWithNoGrace(time.Minute).AdvanceBy(time.Minute), true},
		{OfSizeWithNoGrace(time.Minute).AdvanceBy(time.Millisecond), true},
		{OfSizeAndGrace(time.Minute, 0), true},
		{OfSizeWithNoGrace(0), false},
		{OfSizeWithNoGrace(time.Microsecond), false}, // less than a millisecond is none
		{OfSizeWithNoGrace(-time.Second), false},
		{OfSizeWithNoGrace(time.Minute).AdvanceBy(0), false},
		{OfSizeWithNoGrace(time.Minute).AdvanceBy(time.Minute + time.Millisecond), false},
		{OfSizeAndGrace(time.Minute, -time.Millisecond), false},
	} {
		err := c.ws.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrWindows)) {
			t.Errorf("%v: Validate = %v, want ok %v", c.ws, err, c.ok)
		}
	}
	// Each refusal names what is wrong.
	for ws, want := range map[TimeWindows]string{
		OfSizeWithNoGrace(0):                           "the window size must be at least 1 ms, not 0 ms",
		OfSizeWithNoGrace(time.Second).AdvanceBy(0):    "the advance must be at least 1 ms and at most the window size (1000 ms), not 0 ms",
		OfSizeAndGrace(time.Second, -time.Millisecond): "the grace period must not be negative, not -1 ms",
	} {
		if err := ws.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: Validate = %v, want it to say %q", ws, err, want)
		}
	}
}

func FuzzLayouts(f *testing.F) {
	f.Add([]byte("k\x00\x00\x00\x00\x00\x00\x03\xe8\x00\x00\x00\x00"), int64(5))
	f.Add([]byte{}, int64(0))
	f.Add(bytes.Repeat([]byte{0xff}, 20), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		if key, start, seq, err := SplitStoreKey(b); err == nil {
			if got := AppendStoreKey(nil, key, start, seq); !bytes.Equal(got, b) {
				t.Fatalf("store key %x read and written back is %x", b, got)
			}
		}
		if key, w, err := SplitSessionKey(b); err == nil {
			if w.End < w.Start || !bytes.Equal(AppendSessionKey(nil, key, w), b) {
				t.Fatalf("session key %x: %v", b, w)
			}
		}
		if key, w, err := SplitTimeKey(b, size); err == nil {
			if w.End < w.Start && size >= 0 || !bytes.Equal(AppendTimeKey(nil, key, w.Start), b) {
				t.Fatalf("time key %x size %d: %v", b, size, w)
			}
		}
	})
}

func FuzzWindowsFor(f *testing.F) {
	f.Add(int64(5000), int64(1000), int64(12345))
	f.Fuzz(func(t *testing.T, size, advance, ts int64) {
		ws := TimeWindows{size: size, advance: advance}
		if ws.Validate() != nil || size/advance > 1000 {
			return
		}
		got := ws.WindowsFor(ts)
		for i, w := range got {
			if w.Start > ts || (w.End <= ts && w.End != math.MaxInt64) || w.Start%advance != 0 || w.Start < 0 {
				t.Fatalf("%v: window %v does not hold %d", ws, w, ts)
			}
			if i > 0 && w.Start-got[i-1].Start != advance {
				t.Fatalf("%v: windows %v not %d apart", ws, got, advance)
			}
		}
		if ts >= 0 && len(got) == 0 {
			t.Fatalf("%v: no window for %d", ws, ts)
		}
	})
}

func TestSessionWindows(t *testing.T) {
	w := OfInactivityGapAndGrace(5*time.Second, 2*time.Second)
	if w.Gap() != 5000 || w.Grace() != 2000 || w.Validate() != nil || w.String() != "SessionWindows{gap=5000 ms, grace=2000 ms}" {
		t.Fatalf("%v: gap %d grace %d %v", w, w.Gap(), w.Grace(), w.Validate())
	}
	if w := OfInactivityGapWithNoGrace(time.Millisecond); w.Gap() != 1 || w.Grace() != 0 || w.Validate() != nil {
		t.Fatalf("%v", w)
	}
	for _, bad := range []SessionWindows{OfInactivityGapWithNoGrace(0), OfInactivityGapAndGrace(time.Second, -time.Millisecond)} {
		if err := bad.Validate(); !errors.Is(err, ErrWindows) {
			t.Errorf("%v: %v, want ErrWindows", bad, err)
		}
	}
}

func TestSlidingWindows(t *testing.T) {
	w := OfTimeDifferenceAndGrace(5*time.Second, 2*time.Second)
	if w.TimeDifference() != 5000 || w.Grace() != 2000 || w.Validate() != nil || w.String() != "SlidingWindows{timeDifference=5000 ms, grace=2000 ms}" {
		t.Fatalf("%v", w)
	}
	if w := OfTimeDifferenceWithNoGrace(time.Millisecond); w.TimeDifference() != 1 || w.Grace() != 0 || w.Validate() != nil {
		t.Fatalf("%v", w)
	}
	for _, bad := range []SlidingWindows{OfTimeDifferenceWithNoGrace(0), OfTimeDifferenceAndGrace(time.Second, -time.Millisecond)} {
		if err := bad.Validate(); !errors.Is(err, ErrWindows) {
			t.Errorf("%v: %v, want ErrWindows", bad, err)
		}
	}
}

func TestJoinWindows(t *testing.T) {
	w := JoinOfTimeDifferenceAndGrace(5*time.Second, time.Second).Before(2 * time.Second)
	if w.BeforeMs() != 2000 || w.AfterMs() != 5000 || w.Size() != 7000 || w.Grace() != 1000 || w.Validate() != nil ||
		w.String() != "JoinWindows{before=2000 ms, after=5000 ms, grace=1000 ms}" {
		t.Fatalf("%v", w)
	}
	if w := JoinOfTimeDifferenceWithNoGrace(time.Second).After(0); w.AfterMs() != 0 || w.Size() != 1000 || w.Validate() != nil {
		t.Fatalf("%v", w)
	}
	if w := JoinOfTimeDifferenceWithNoGrace(time.Second).Before(-time.Second); w.Validate() != nil || w.Size() != 0 {
		t.Fatalf("%v: %v (a negative bound with a size of 0 is valid)", w, w.Validate())
	}
	for _, bad := range []JoinWindows{JoinOfTimeDifferenceWithNoGrace(time.Second).Before(-time.Second - time.Millisecond),
		JoinOfTimeDifferenceAndGrace(time.Second, -time.Millisecond)} {
		if err := bad.Validate(); !errors.Is(err, ErrWindows) {
			t.Errorf("%v: %v, want ErrWindows", bad, err)
		}
	}
}
