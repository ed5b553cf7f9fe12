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

// TestPerfDocIsTheCommittedResults: the generated part of docs/performance.md and
// bench/results/results.md are the rendering of bench/results/results.json, so every figure and
// every claim of their headers (full or partial run, repetitions) is the JSON's. After changing the
// renderer: go run ./bench/cmd/benchcompare -render bench/results/results.json
func TestPerfDocIsTheCommittedResults(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	res, err := readResults(filepath.Join(root, "bench", "results", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(perfDoc)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s lacks its markers", perfDoc)
	}
	const fix = "; run go run ./bench/cmd/benchcompare -render bench/results/results.json"
	if got, want := s[i+len(beginMark):j], "\n"+markdown(res, perfImgDir); got != want {
		t.Errorf("the generated part of %s is not the rendering of bench/results/results.json%s", perfDoc, fix)
	}
	md, err := os.ReadFile(filepath.Join(root, "bench", "results", "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != markdown(res, "") {
		t.Errorf("bench/results/results.md is not the rendering of bench/results/results.json%s", fix)
	}
}
