package text

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteCutsAtACharacterBoundary(t *testing.T) {
	if q := Quote(strings.Repeat("a", 63) + "ö" + strings.Repeat("b", 10)); q != `"`+strings.Repeat("a", 63)+`"… (75 bytes)` {
		t.Errorf("cut inside a character: %s", q)
	}
	if q := Quote(strings.Repeat("a", MaxShownBytes)); q != `"`+strings.Repeat("a", MaxShownBytes)+`"` {
		t.Errorf("a value of exactly MaxShownBytes was cut: %s", q)
	}
	if q := QuotePath(strings.Repeat("p", 512)); strings.Contains(q, "bytes)") {
		t.Errorf("a 512-byte path was cut: %s", q)
	}
}

func TestFirstIllegalNamesTheCharacterOrByte(t *testing.T) {
	digit := func(r rune) bool { return r >= '0' && r <= '9' }
	for in, want := range map[string]string{"123": "", "12x": "character 'x' (U+0078)", "1\xff": "byte 0xFF (not UTF-8)"} {
		if got := FirstIllegal(in, digit); got != want {
			t.Errorf("FirstIllegal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"application.id", "aplication.id", 1}, {"ab", "ba", 2}, {"same", "same", 0}, {"flaw", "lawn", 2},
	} {
		if got := EditDistance(c.a, c.b); got != c.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := EditDistance(c.b, c.a); got != c.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d (not symmetric)", c.b, c.a, got, c.want)
		}
	}
}

// A cut goes back at most four bytes (utf8.UTFMax) to a character's start: UTF-8 has no longer run of
// continuation bytes, and in bytes that are not UTF-8 the cut stays near the limit instead of
// walking back over all of them.
func TestQuoteCutStaysNearTheLimitInBytesThatAreNotUTF8(t *testing.T) {
	s := strings.Repeat("a", 10) + strings.Repeat("\x80", MaxShownBytes)
	q := Quote(s)
	want := strconv.Quote(s[:MaxShownBytes-utf8.UTFMax]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
	if q != want {
		t.Errorf("got %s\nwant %s", q, want)
	}
}
