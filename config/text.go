package config

import (
	"unicode/utf16"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Limits of what one message repeats from its input, so a 1 MiB value or ten thousand bad keys give
// a message a person can read.
const (
	// MaxShownBytes is how many bytes of a key or value a message shows; a longer one is cut there
	// (at a character boundary) and followed by "… (N bytes)".
	MaxShownBytes = text.MaxShownBytes
	// MaxListedProblems is how many problems Error.Error lists before "and N more".
	MaxListedProblems = 10
)

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
