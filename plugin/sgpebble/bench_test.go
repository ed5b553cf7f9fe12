package sgpebble

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Benchmarks run only with -bench (make bench does not include this module): they write a
// million keys.

func benchKey(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte("key-"), uint64(i)*2654435761%(1<<40))
}

func fill(b *testing.B, e store.Engine, n, batch int) {
	b.Helper()
	val := make([]byte, 100)
	var bt store.Batch
	for i := 0; i < n; {
		bt.Reset()
		for j := 0; j < batch && i < n; j, i = j+1, i+1 {
			bt.Put(benchKey(i), val)
		}
		if err := e.Apply(&bt, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchLoc(b *testing.B, i int) store.Location {
	id := tasks.ID{Subtopology: "0", Partition: int32(i)}
	return store.Location{ApplicationID: "bench", Task: id, Store: "s", Dir: filepath.Join(b.TempDir(), id.String())}
}

// BenchmarkApply: batches of 100 puts of 100-byte values, one checkpoint (synced) per batch,
// into a store of a million keys.
func BenchmarkApply(b *testing.B) {
	e, err := New().Open(benchLoc(b, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	fill(b, e, 1_000_000, 1000)
	val := make([]byte, 100)
	var bt store.Batch
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		bt.Reset()
		for j := range 100 {
			bt.Put(benchKey(i*100+j), val)
		}
		if err := e.Apply(&bt, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/put")
}

// BenchmarkGet: random reads of a store of a million keys.
func BenchmarkGet(b *testing.B) {
	e, err := New().Open(benchLoc(b, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	fill(b, e, 1_000_000, 1000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := e.Get(benchKey(i * 7919 % 1_000_000)); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func rssBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Skip("no VmRSS")
	return 0
}

// BenchmarkMemory opens 1 and 100 stores with the defaults (and 100 with 1 MiB memtables),
// writes 20,000 keys of 100 bytes to each (10 for idle stores), reads them back, and reports the process's resident memory growth and what Pebble says
// it holds (block cache and memtables). Run with -benchtime=1x.
func BenchmarkMemory(b *testing.B) {
	for _, tc := range []struct {
		n, keys  int
		memtable int64
	}{{1, 20_000, 0}, {100, 20_000, 0}, {100, 20_000, 1 << 20}, {100, 10, 0}} {
		name := fmt.Sprint(tc.n, "stores-", tc.keys, "keys")
		if tc.memtable != 0 {
			name += fmt.Sprint("-memtable", tc.memtable>>20, "MiB")
		}
		n := tc.n
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				runtime.GC()
				before := rssBytes(b)
				k := New(MemTableSize(tc.memtable))
				var es []store.Engine
				for i := range n {
					e, err := k.Open(benchLoc(b, i))
					if err != nil {
						b.Fatal(err)
					}
					es = append(es, e)
					fill(b, e, tc.keys, 500)
					for j := 0; j < tc.keys; j += 13 {
						if _, _, err := e.Get(benchKey(j)); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.GC()
				var memtables, cache int64
				for _, e := range es {
					m := e.(*engine).db.Metrics()
					memtables += int64(m.MemTable.Size)
					cache = m.BlockCache.Size // shared: the same for every store
				}
				b.ReportMetric(float64(rssBytes(b)-before)/(1<<20), "RSS-growth-MiB")
				b.ReportMetric(float64(memtables)/(1<<20), "memtables-MiB")
				b.ReportMetric(float64(cache)/(1<<20), "blockcache-MiB")
				for _, e := range es {
					_ = e.Close()
				}
			}
		})
	}
}
