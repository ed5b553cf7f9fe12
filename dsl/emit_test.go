package dsl

import (
	"slices"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Windowed aggregations that emit final results (Emit(OnWindowClose)), through the test driver.
// The expected outputs follow Kafka Streams' documented semantics of EmitStrategy.onWindowClose:
// nothing while a window is open; once the stream time passes a window's end plus the grace, the
// window is emitted once, with its final aggregate and the largest timestamp of its records, in
// order of window start and then key; records too late for their window are dropped.

func emitFinalCount(b *Builder) {
	g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
	WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second)).Emit(OnWindowClose).Count().
		ToStream().To("out", Produced[windowed.Key[string], int64]{})
}

func TestWindowedCountEmitsFinalResults(t *testing.T) {
	d := run(t, emitFinalCount)
	out := func() []wrec[int64] { return readWindowed(t, d, "out", 10000, serde.Int64) }
	pipeAt(t, d, "in", wrec[string]{"b", 0, "x", 3000}, wrec[string]{"a", 0, "x", 1000}, wrec[string]{"a", 0, "x", 9999},
		wrec[string]{"a", 0, "x", 10000}, wrec[string]{"a", 0, "x", 11999})
	if got := out(); len(got) != 0 {
		t.Fatalf("emitted %v while the first window is open (stream time 11999, its end plus grace 12000)", got)
	}
	pipeAt(t, d, "in", wrec[string]{"c", 0, "x", 12000}) // the first window closes
	want := []wrec[int64]{{"a", 0, 2, 9999}, {"b", 0, 1, 3000}}
	if got := out(); !slices.Equal(got, want) {
		t.Fatalf("at 12000: %v, want %v", got, want)
	}
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 5000}, // too late: dropped, the window emitted stays
		wrec[string]{"a", 0, "x", 13000}) // no other window closed: nothing
	if got := out(); len(got) != 0 {
		t.Fatalf("emitted %v, want nothing", got)
	}
	if n := d.App().Metrics().Dropped; n != 1 {
		t.Fatalf("dropped %d records, want the late one", n)
	}
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 22000}) // closes [10 s, 20 s)
	want = []wrec[int64]{{"a", 10000, 3, 13000}, {"c", 10000, 1, 12000}}
	if got := out(); !slices.Equal(got, want) {
		t.Fatalf("at 22000: %v, want %v", got, want)
	}
	// A record far ahead: the store keeps windows for their size plus the grace after the newest,
	// and the record's own window is written first, so [20 s, 30 s) is gone before it could be
	// emitted, as in Kafka Streams (a longer Materialized retention keeps it).
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 60000})
	if got := out(); len(got) != 0 {
		t.Fatalf("at 60000: %v, want nothing", got)
	}
}

// The wall clock throttles the look for closed windows (Kafka Streams'
// __emit.interval.ms.kstreams.windowed.aggregation__): a record that closes a window within the
// interval after the last look emits nothing; the first record after it emits what closed.
func TestWindowedEmitFinalIsThrottledByTheWallClock(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.WindowedEmitInterval = time.Hour
	d := start(t, cfg, emitFinalCount)
	defer d.Close()
	out := func() []wrec[int64] { return readWindowed(t, d, "out", 10000, serde.Int64) }
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 1000}) // the first look: nothing closed
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 12000})
	if got := out(); len(got) != 0 {
		t.Fatalf("emitted %v within the interval", got)
	}
	if err := d.AdvanceWallClock(time.Hour); err != nil {
		t.Fatal(err)
	}
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 12500})
	want := []wrec[int64]{{"a", 0, 1, 1000}}
	if got := out(); !slices.Equal(got, want) {
		t.Fatalf("after the interval: %v, want %v", got, want)
	}
}

func TestEmitStrategyProgramErrors(t *testing.T) {
	expectProgramErrors(t, map[string]func(b *Builder){
		"unknown emit strategy": func(b *Builder) {
			g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
			WindowedBy(g, windowed.OfSizeWithNoGrace(time.Second)).Emit(EmitStrategy(7)).Count().
				ToStream().To("out", Produced[windowed.Key[string], int64]{})
		},
	})
}

// Sliding windows emitting final results: each window [start, start+d] (records d apart or less
// share one) is emitted once the stream time minus the grace passes its end, with its final count
// and the timestamp of its latest record.
func TestSlidingCountEmitsFinalResults(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		SlidingWindowedBy(g, windowed.OfTimeDifferenceWithNoGrace(5*time.Second)).Emit(OnWindowClose).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	out := func() []wrec[int64] { return readWindowed(t, d, "out", 5000, serde.Int64) }
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 10000})
	if got := out(); len(got) != 0 {
		t.Fatalf("emitted %v before any window closed", got)
	}
	// At 12000 [5000, 10000], which holds 10000, has closed (no grace); [7000, 12000] holds both.
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 12000})
	want := []wrec[int64]{{"a", 5000, 1, 10000}}
	if got := out(); !slices.Equal(got, want) {
		t.Fatalf("at 12000: %v, want %v", got, want)
	}
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 20000})
	// [7000, 12000] and [10001, 15001], the right window of 10000, which holds 12000, have closed;
	// [15000, 20000] is still open.
	want = []wrec[int64]{{"a", 7000, 2, 12000}, {"a", 10001, 1, 12000}}
	if got := out(); !slices.Equal(got, want) {
		t.Fatalf("at 20000: %v, want %v", got, want)
	}
}

// With the record cache on (Kafka's default size), the windows the cache holds are emitted whatever
// the store's retention says: Kafka Streams' caching time-ordered window store merges its cache into
// what the store returns, and its store learns of newer windows only when the cache writes them.
// A key idle for longer than the retention still gets its final result, where without the cache
// the store has already let the window go (the uncached expectations below).
func TestWindowedEmitFinalReadsTheRecordCache(t *testing.T) {
	program := func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeWithNoGrace(10*time.Second)).Emit(OnWindowClose).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	}
	for _, c := range []struct {
		name  string
		cache int64
		want  []wrec[int64]
	}{
		{"cache on", 10 << 20, []wrec[int64]{{"a", 0, 1, 5000}}},
		{"cache off", -1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default("ops")
			cfg.Runtime.StateStoreCacheMaxBytes = c.cache
			d := start(t, cfg, program)
			defer d.Close()
			in := streamtest.Input(d, "in", serde.String, serde.String)
			for _, ts := range []int64{5000, 25000} {
				if err := in.Pipe("a", "x", time.UnixMilli(ts)); err != nil {
					t.Fatal(err)
				}
			}
			// Whether or not a commit wrote the cache between the two records, the second one's window
			// is in the cache, not the store, when the first window is looked for.
			if got := readWindowed(t, d, "out", 10000, serde.Int64); !slices.Equal(got, c.want) {
				t.Fatalf("emitted %v, want %v", got, c.want)
			}
		})
	}
}
