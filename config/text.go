package config

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits of what one message repeats from its input, so a 1 MiB value or ten thousand bad keys give
// a message a person can read.
const (
	// MaxShownBytes is how many bytes of a key or value a message shows; a longer one is cut there
	// (at a character boundary) and followed by "… (N bytes)".
	MaxShownBytes = 64
	// MaxListedProblems is how many problems Error.Error lists before "and N more".
	MaxListedProblems = 10
)

// Quote renders a key or value for a message: Go-quoted, so leading and trailing spaces, NUL and
// other control bytes, invalid UTF-8 and invisible characters (a byte order mark U+FEFF, a zero-width
// space U+200B, a no-break space U+00A0) are visible as escapes and never reach a terminal raw; at
// most MaxShownBytes bytes of s are shown, followed by "… (N bytes)" when s is longer.
func Quote(s string) string { return quoteN(s, MaxShownBytes) }

// quotePath quotes a file path as Quote does, showing up to 512 bytes: a path's useful part is its end.
func quotePath(s string) string { return quoteN(s, 512) }

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

// runeName names one character of the input: 'ö' (U+00F6), '\x00' (U+0000), '\ufeff' (U+FEFF).
func runeName(r rune) string { return fmt.Sprintf("%q (U+%04X)", r, r) }

// firstIllegal returns the name of the first character of s for which legal is false, or "" when
// there is none. A byte that is not UTF-8 is named as a byte.
func firstIllegal(s string, legal func(rune) bool) string {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return fmt.Sprintf("byte 0x%02X (not UTF-8)", s[i])
			}
		}
		if !legal(r) {
			return "character " + runeName(r)
		}
	}
	return ""
}

// javaLength is the length of s as Java's String.length() counts it: UTF-16 code units, so a
// character outside the Basic Multilingual Plane (an emoji) counts 2.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}

// topicChar reports whether r may appear in a Kafka topic name, and so in application.id and
// group.instance.id: ASCII letters and digits, '.', '_' and '-'.
func topicChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}
