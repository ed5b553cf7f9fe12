package topology

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxQuoted is how many bytes of a value from the input a message repeats; longer values are cut
// (at a rune boundary) and their length is given instead, so a 1 MiB topic name does not make a
// 1 MiB error message. Legal topic names (at most 249 bytes) are always shown whole.
const maxQuoted = 256

// quote renders a value from the input for a message: Go-quoted, so NUL bytes, control and
// invisible characters (zero-width spaces, a BOM) and trailing spaces are visible and never raw, and
// cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", strconv.Quote(s[:cut]), len(s))
}

// describeRune names the character r found at byte offset i of s for a message: the character
// Go-quoted with its code point ('ö' (U+00F6), '\x00' (U+0000)), or the byte when s is not valid
// UTF-8 there.
func describeRune(s string, i int, r rune) string {
	if r == utf8.RuneError {
		if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
			return fmt.Sprintf("byte 0x%02X (not valid UTF-8) at byte %d", s[i], i)
		}
	}
	return fmt.Sprintf("character %q (U+%04X)", r, r)
}
