// Package text renders user input inside error messages so a person can read them, for config and
// the streams-groups CLI alike: values Go-quoted and cut, characters named. It also holds the edit
// distance both config and topology use to suggest the name a typo meant.
package text

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxShownBytes is how many bytes of a key or value a message shows; a longer one is cut there (at a
// character boundary) and followed by "… (N bytes)".
const MaxShownBytes = 64

// Quote renders a key or value for a message: Go-quoted, so leading and trailing spaces, NUL and
// other control bytes, invalid UTF-8 and invisible characters (a byte order mark U+FEFF, a zero-width
// space U+200B, a no-break space U+00A0) are visible as escapes and never reach a terminal raw; at
// most MaxShownBytes bytes of s are shown, followed by "… (N bytes)" when s is longer.
func Quote(s string) string { return quoteN(s, MaxShownBytes) }

// QuotePath quotes a file path as Quote does, showing up to 512 bytes: a path's useful part is its
// end.
func QuotePath(s string) string { return quoteN(s, 512) }

func quoteN(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	cut := n
	for cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// RuneName names one character of the input: 'ö' (U+00F6), '\x00' (U+0000), '\ufeff' (U+FEFF).
func RuneName(r rune) string { return fmt.Sprintf("%q (U+%04X)", r, r) }

// FirstIllegal returns the name of the first character of s for which legal is false, or "" when
// there is none. A byte that is not UTF-8 is named as a byte.
func FirstIllegal(s string, legal func(rune) bool) string {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Sprintf("byte 0x%02X (not UTF-8)", s[i])
			}
		}
		if !legal(r) {
			return "character " + RuneName(r)
		}
	}
	return ""
}
