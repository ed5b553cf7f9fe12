package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerfDocHasMarkers: a full run rewrites the part of docs/performance.md between the markers;
// without them it would silently write nothing (updateDoc only logs), so the page must keep them,
// in order.
func TestPerfDocHasMarkers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(perfDoc)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q … %q in that order", perfDoc, beginMark, endMark)
	}
	if !strings.Contains(s[i:j], perfImgDir+"convergence.svg") {
		t.Errorf("the generated part of %s does not draw its charts from %s", perfDoc, perfImgDir)
	}
}
