package docs_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeAppLineCount: the README's heading says how many code lines its app has (blank lines
// and comment lines aside); it must be the count of the Go block under it.
func TestReadmeAppLineCount(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	m := regexp.MustCompile(`(?m)^## A stream app in (\d+) lines$`).FindStringSubmatchIndex(text)
	if m == nil {
		t.Fatal("README.md has no heading \"## A stream app in N lines\"")
	}
	claimed, _ := strconv.Atoi(text[m[2]:m[3]])
	rest := text[m[1]:]
	start := strings.Index(rest, "```go\n")
	end := strings.Index(rest[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("no Go block under the heading")
	}
	n := 0
	for _, l := range strings.Split(rest[start+6:start+6+end], "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	if n != claimed {
		t.Errorf("the README says its app has %d lines; its Go block has %d code lines", claimed, n)
	}
}
