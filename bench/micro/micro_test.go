package micro

import (
	"flag"
	"strconv"
	"testing"
)

// BenchmarkScaling runs every case at 10, 1,000 and 10,000 tasks:
//
//	go test -run '^$' -bench . -benchmem ./bench/micro
func BenchmarkScaling(b *testing.B) {
	for _, c := range Cases {
		for _, n := range Sizes {
			b.Run(c.Name+"/tasks="+strconv.Itoa(n), func(b *testing.B) { c.Run(b, n) })
		}
	}
}

// TestCasesRun runs each case once at each size (as bench-compare runs them, through
// testing.Benchmark), so that make test catches a case that no longer works.
func TestCasesRun(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("1x"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bt.Value.Set(old) }()
	results, growth := Run(1, t.Logf)
	if len(results) != len(Cases)*len(Sizes) || len(growth) != len(Cases) {
		t.Fatalf("%d results and %d growths for %d cases at %d sizes: a case failed", len(results), len(growth), len(Cases), len(Sizes))
	}
}
