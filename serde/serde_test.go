package serde_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamsgroup/streamsgroup/serde"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("test bug: %v", err)
	}
	return b
}

// wantDecodeError checks that err is a *serde.DecodeError of the named serde for n input bytes.
func wantDecodeError(t testing.TB, err error, name string, n int) {
	t.Helper()
	var de *serde.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is no *serde.DecodeError", err, err)
	}
	if de.Serde != name || de.Len != n || de.Err == nil {
		t.Fatalf("DecodeError{Serde: %q, Len: %d, Err: %v}; want Serde %q, Len %d and a cause", de.Serde, de.Len, de.Err, name, n)
	}
	if errors.Unwrap(err) != de.Err {
		t.Fatalf("Unwrap does not return the cause")
	}
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("message %q does not name the serde %q", err.Error(), name)
	}
}

// The bytes Kafka's LongSerializer writes (big-endian two's complement).
func TestInt64KafkaEncoding(t *testing.T) {
	cases := []struct {
		v   int64
		hex string
	}{
		{0, "00 00 00 00 00 00 00 00"},
		{1, "00 00 00 00 00 00 00 01"},
		{-1, "ff ff ff ff ff ff ff ff"},
		{256, "00 00 00 00 00 00 01 00"},
		{0x0102030405060708, "01 02 03 04 05 06 07 08"},
		{math.MaxInt64, "7f ff ff ff ff ff ff ff"},
		{math.MinInt64, "80 00 00 00 00 00 00 00"},
	}
	for _, c := range cases {
		want := unhex(t, c.hex)
		got, err := serde.Int64.Encode(c.v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Int64.Encode(%d) = %x, %v; want %x", c.v, got, err, want)
		}
		v, err := serde.Int64.Decode(want)
		if err != nil || v != c.v {
			t.Errorf("Int64.Decode(%x) = %d, %v; want %d", want, v, err, c.v)
		}
	}
	// Bytewise order (a store's key order) puts negative numbers after positive ones.
	neg, _ := serde.Int64.Encode(-1)
	pos, _ := serde.Int64.Encode(1)
	if bytes.Compare(neg, pos) <= 0 {
		t.Errorf("encoded -1 sorts before 1")
	}
}

// The bytes Kafka's IntegerSerializer writes.
func TestInt32KafkaEncoding(t *testing.T) {
	cases := []struct {
		v   int32
		hex string
	}{
		{0, "00 00 00 00"},
		{1, "00 00 00 01"},
		{-1, "ff ff ff ff"},
		{256, "00 00 01 00"},
		{0x01020304, "01 02 03 04"},
		{math.MaxInt32, "7f ff ff ff"},
		{math.MinInt32, "80 00 00 00"},
	}
	for _, c := range cases {
		want := unhex(t, c.hex)
		got, err := serde.Int32.Encode(c.v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Int32.Encode(%d) = %x, %v; want %x", c.v, got, err, want)
		}
		v, err := serde.Int32.Decode(want)
		if err != nil || v != c.v {
			t.Errorf("Int32.Decode(%x) = %d, %v; want %d", want, v, err, c.v)
		}
	}
}

func TestIntWrongLengths(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 7, 9, 16} {
		in := bytes.Repeat([]byte{0xab}, n)
		if n != 8 {
			_, err := serde.Int64.Decode(in)
			wantDecodeError(t, err, "int64", n)
		}
		if n != 4 {
			_, err := serde.Int32.Decode(in)
			wantDecodeError(t, err, "int32", n)
		}
	}
	_, err := serde.Int64.Decode(nil)
	wantDecodeError(t, err, "int64", 0)
	_, err = serde.Int32.Decode(nil)
	wantDecodeError(t, err, "int32", 0)
}

func TestString(t *testing.T) {
	for _, s := range []string{"", "a", "héllo", "日本語", "\x00", "emoji 🦫", string(utf8.RuneError)} {
		b, err := serde.String.Encode(s)
		if err != nil || !bytes.Equal(b, []byte(s)) {
			t.Errorf("String.Encode(%q) = %x, %v; want its UTF-8 bytes", s, b, err)
		}
		got, err := serde.String.Decode(b)
		if err != nil || got != s {
			t.Errorf("String.Decode(%x) = %q, %v; want %q", b, got, err, s)
		}
	}
	// Kafka's StringSerializer writes UTF-8: é is c3 a9.
	if b, _ := serde.String.Encode("é"); !bytes.Equal(b, []byte{0xc3, 0xa9}) {
		t.Errorf("String.Encode(é) = %x", b)
	}
	if s, err := serde.String.Decode(nil); err != nil || s != "" {
		t.Errorf("String.Decode(nil) = %q, %v", s, err)
	}
}

func TestStringInvalidUTF8(t *testing.T) {
	for _, h := range []string{"ff", "c3", "c3 28", "e2 82", "ed a0 80" /* a surrogate */, "61 62 80", "f8 88 80 80 80"} {
		in := unhex(t, h)
		_, err := serde.String.Decode(in)
		wantDecodeError(t, err, "string", len(in))
	}
}

func TestBytes(t *testing.T) {
	for _, in := range [][]byte{nil, {}, {0}, {0xff, 0x00, 0x01}} {
		enc, err := serde.Bytes.Encode(in)
		if err != nil || !bytes.Equal(enc, in) || (in == nil) != (enc == nil) {
			t.Errorf("Bytes.Encode(%#v) = %#v, %v", in, enc, err)
		}
		dec, err := serde.Bytes.Decode(in)
		if err != nil || !bytes.Equal(dec, in) || (in == nil) != (dec == nil) {
			t.Errorf("Bytes.Decode(%#v) = %#v, %v", in, dec, err)
		}
	}
}

type order struct {
	ID    int64             `json:"id"`
	Item  string            `json:"item"`
	Price float64           `json:"price"`
	Tags  []string          `json:"tags,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
}

func TestJSONRoundTrip(t *testing.T) {
	s := serde.JSON[order]()
	for _, v := range []order{
		{},
		{ID: 1, Item: "book", Price: 9.5},
		{ID: -7, Item: "日本語 \"quoted\" <tag>", Price: 1e-300, Tags: []string{"a", ""}, Attrs: map[string]string{"k": "v"}},
	} {
		b, err := s.Encode(v)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", v, err)
		}
		got, err := s.Decode(b)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("Decode(Encode(%+v)) = %+v, %v", v, got, err)
		}
	}
	b, _ := s.Encode(order{ID: 1, Item: "x", Price: 2})
	if want := `{"id":1,"item":"x","price":2}`; string(b) != want {
		t.Errorf("Encode = %s, want %s", b, want)
	}
}

func TestJSONBadInput(t *testing.T) {
	s := serde.JSON[order]()
	for _, in := range []string{"", "{", `{"id":"one"}`, `{"id":1}x`, `[1,2]`, "nul", `{"id":1e400}`, "\xff"} {
		_, err := s.Decode([]byte(in))
		wantDecodeError(t, err, "json", len(in))
	}
	_, err := s.Decode(nil)
	wantDecodeError(t, err, "json", 0)
	// A value JSON cannot hold is an encode error, not a panic.
	if _, err := serde.JSON[float64]().Encode(math.NaN()); err == nil {
		t.Error("Encode(NaN) succeeded")
	}
}

// FuzzInt64: 8 bytes decode to a number that encodes back to the same bytes; any other length is
// a *DecodeError.
func FuzzInt64(f *testing.F) {
	for _, s := range [][]byte{nil, {}, {1}, bytes.Repeat([]byte{0xff}, 8), {0, 0, 0, 0, 0, 0, 0, 1}, {0x80, 0, 0, 0, 0, 0, 0, 0}, make([]byte, 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := serde.Int64.Decode(b)
		if len(b) != 8 {
			wantDecodeError(t, err, "int64", len(b))
			return
		}
		if err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		enc, err := serde.Int64.Encode(v)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("Encode(Decode(%x)) = %x, %v", b, enc, err)
		}
		// The same bytes read as two halves give the same number (big-endian).
		hi, err1 := serde.Int32.Decode(b[:4])
		lo, err2 := serde.Int32.Decode(b[4:])
		if err1 != nil || err2 != nil || v != int64(hi)<<32|int64(uint32(lo)) {
			t.Fatalf("Int64 %d is not the Int32 halves %d, %d", v, hi, lo)
		}
	})
}

// FuzzString: valid UTF-8 round-trips byte for byte; anything else is a *DecodeError.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a", "héllo", "\xff", "\xc3\x28", "\xed\xa0\x80", "ok\x80", "🦫"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := serde.String.Decode(b)
		if !utf8.Valid(b) {
			wantDecodeError(t, err, "string", len(b))
			return
		}
		if err != nil {
			t.Fatalf("Decode(%x): %v", b, err)
		}
		enc, err := serde.String.Encode(s)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("Encode(Decode(%x)) = %x, %v", b, enc, err)
		}
	})
}

// FuzzJSON: Decode never panics and fails only with a *DecodeError. JSON text has many spellings
// of one value (spaces, escapes, key order), so encode(decode(b)) == b is no invariant; what is:
// the encoding of a decoded value decodes again, and encodes to the same bytes (it is canonical).
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		``, `null`, `0`, `-1.5e10`, `"x"`, `"\u00e9\ud83e\udeab"`, `[1,"a",null,true]`, `{"b":1,"a":[{}]}`,
		` { "id" : 1 , "item" : "x" } `, `{"id":"one"}`, `{`, `[1,2`, "\"\xff\"", `1e400`, `{"tags":["a"],"attrs":{"k":"v"}}`,
	} {
		f.Add([]byte(s))
	}
	anyS, orderS := serde.JSON[any](), serde.JSON[order]()
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := orderS.Decode(b); err != nil {
			wantDecodeError(t, err, "json", len(b))
		}
		v, err := anyS.Decode(b)
		if err != nil {
			wantDecodeError(t, err, "json", len(b))
			return
		}
		e1, err := anyS.Encode(v)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)): %v", b, err)
		}
		v2, err := anyS.Decode(e1)
		if err != nil {
			t.Fatalf("Decode(%q), the encoding of Decode(%q): %v", e1, b, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("Decode(Encode(v)) = %#v, want %#v", v2, v)
		}
		e2, err := anyS.Encode(v2)
		if err != nil || !bytes.Equal(e1, e2) {
			t.Fatalf("encoding not canonical: %q then %q (%v)", e1, e2, err)
		}
	})
}

// AppendEncode appends exactly Encode's bytes (Kafka's encodings, written out by hand here) after
// what dst holds, and an empty string is an empty, non-nil key even into a nil buffer.
func TestAppendEncode(t *testing.T) {
	prefix := []byte("ab")
	for _, tc := range []struct {
		name string
		got  func(dst []byte) ([]byte, error)
		want []byte
	}{
		{"string", func(d []byte) ([]byte, error) { return serde.String.(serde.Appender[string]).AppendEncode(d, "héllo") }, []byte("héllo")},
		{"int64", func(d []byte) ([]byte, error) { return serde.Int64.(serde.Appender[int64]).AppendEncode(d, -2) },
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}},
		{"int32", func(d []byte) ([]byte, error) { return serde.Int32.(serde.Appender[int32]).AppendEncode(d, 258) }, []byte{0, 0, 1, 2}},
	} {
		b, err := tc.got(bytes.Clone(prefix))
		if err != nil || !bytes.Equal(b, append(bytes.Clone(prefix), tc.want...)) {
			t.Errorf("%s: %x, %v; want %x after the prefix", tc.name, b, err, tc.want)
		}
	}
	b, err := serde.String.(serde.Appender[string]).AppendEncode(nil, "")
	if err != nil || b == nil || len(b) != 0 {
		t.Fatalf("the empty string into nil: %#v, %v; want an empty, non-nil slice", b, err)
	}
	// Bytes has no Appender: a nil value stays nil (a deletion in a store), which appending cannot say.
	if _, ok := serde.Bytes.(serde.Appender[[]byte]); ok {
		t.Fatal("Bytes is an Appender")
	}
}
