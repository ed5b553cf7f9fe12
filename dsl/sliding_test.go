package dsl

import (
	"cmp"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Sliding windows, through the test driver; the expected outputs follow Kafka Streams' documented
// semantics: windows [start, start+difference] include both ends; each record makes the window that
// ends at it (holding the records at most the difference before it) and, when a later record comes
// within the difference, the window that starts just after it; every window a record falls in is
// updated with it.
func TestSlidingCount(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		SlidingWindowedBy(g, windowed.OfTimeDifferenceWithNoGrace(10*time.Second)).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	in := func(ts int64) { pipeRaw(t, d, "in", []byte("k"), []byte("x"), ts) }
	in(20000) // its window [10 s, 20 s]: 1
	in(25000) // [15 s, 25 s] holds 20 s and 25 s: 2; 20 s's right window [20.001 s, 30.001 s] holds 25 s: 1
	in(50000) // alone: [40 s, 50 s]: 1
	in(30000) // late: stream time 50 s closes windows ending before it, [20 s, 30 s] among them
	type upd struct {
		start, count, ts int64
	}
	var got []upd
	raws, err := d.ReadRaw("out")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raws {
		_, w, err := windowed.SplitTimeKey(r.Key, 10000)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, upd{w.Start, int64(binary.BigEndian.Uint64(r.Value)), r.Timestamp.UnixMilli()})
	}
	want := []upd{{10000, 1, 20000}, {20001, 1, 25000}, {15000, 2, 25000}, {40000, 1, 50000}}
	if !slices.Equal(got, want) {
		t.Fatalf("updates\n got %v\nwant %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 1 {
		t.Fatalf("dropped %d, want the late record", n)
	}
}

func TestSlidingProgramErrors(t *testing.T) {
	expectProgramErrors(t, map[string]func(b *Builder){
		"time difference": func(b *Builder) {
			SlidingWindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfTimeDifferenceWithNoGrace(0)).Count()
		},
		"twice the time difference": func(b *Builder) {
			SlidingWindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfTimeDifferenceWithNoGrace(time.Minute)).
				Count(Materialized[string, int64]{Name: "s", Retention: time.Minute})
		},
	})
}

// With the record cache, a sliding aggregation writes at each commit the latest update of each
// window it changed (Kafka Streams' caching window store), read back through the cache by the
// records after (a window cached and not yet written is found and updated again), each handed on
// with the largest timestamp of the window's records and the headers of the record that last
// updated it. The windows and counts follow Kafka Streams' sliding-window semantics (see
// TestSlidingCount), worked out by hand; the order of a commit's updates is not compared.
func TestSlidingCacheWritesEachWindowsLatestUpdate(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.StateStoreCacheMaxBytes = config.DefaultStateStoreCacheMaxBytes
	d := start(t, cfg, func(b *Builder) {
		in := Process[string, string, string, string](Stream(b, "in", Consumed[string, string]{}), ProcessorFunc[string, string, string, string](burst))
		SlidingWindowedBy(in.GroupByKey(), windowed.OfTimeDifferenceAndGrace(10*time.Second, time.Minute)).
			Count(Materialized[string, int64]{Name: "w"}).
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	}()
	type upd struct {
		start, count, ts int64
		h                string
	}
	commit := func(value string, want ...upd) {
		t.Helper()
		pipeRaw(t, d, "in", []byte("a"), []byte(value), 0)
		for _, topic := range []string{"out", "ops-w-changelog"} {
			raws, err := d.ReadRaw(topic)
			if err != nil {
				t.Fatal(err)
			}
			var got []upd
			for _, r := range raws {
				_, w, _, err := windowed.SplitStoreKey(r.Key)
				if topic == "out" {
					_, ww, werr := windowed.SplitTimeKey(r.Key, 10000)
					w, err = ww.Start, werr
				}
				if err != nil {
					t.Fatal(err)
				}
				var h string
				for _, rh := range r.Headers {
					if rh.Key == "h" {
						h = string(rh.Value)
					}
				}
				if topic != "out" {
					h = "" // a timestamped window store's changelog carries no headers
				}
				got = append(got, upd{w, int64(binary.BigEndian.Uint64(r.Value[len(r.Value)-8:])), r.Timestamp.UnixMilli(), h})
			}
			slices.SortFunc(got, func(x, y upd) int { return cmp.Compare(x.start, y.start) })
			w := slices.Clone(want)
			if topic != "out" {
				for i := range w {
					w[i].h = ""
				}
			}
			if !slices.Equal(got, w) {
				t.Fatalf("%s\n got %v\nwant %v", topic, got, w)
			}
		}
	}
	// a@1000 and a@5000, both before the difference: the window [0, 10 s] holds both, and the
	// window after a@1000, [1.001 s, 11.001 s], holds a@5000. One update each.
	commit("1000:1 5000:2", upd{0, 2, 5000, "2"}, upd{1001, 1, 5000, "2"})
	// a@8000: in both, and the window after a@5000, [5.001 s, 15.001 s], holds it.
	commit("8000:3", upd{0, 3, 8000, "3"}, upd{1001, 2, 8000, "3"}, upd{5001, 1, 8000, "3"})
	// a@20000 and a@12000 in one commit: a@20000's window [10 s, 20 s] holds only it (cached, not
	// written yet); then a@12000 falls in it (2) and in [5.001 s, 15.001 s] (2); its own window
	// [2 s, 12 s] holds a@5000, a@8000 and it (3); the window after a@8000, [8.001 s, 18.001 s],
	// now holds it (1); and its own window after, [12.001 s, 22.001 s], holds a@20000 (1).
	commit("20000:4 12000:5", upd{2000, 3, 12000, "5"}, upd{5001, 2, 12000, "5"}, upd{8001, 1, 12000, "5"},
		upd{10000, 2, 20000, "5"}, upd{12001, 1, 20000, "5"})
	// a@15500 makes [5.5 s, 15.5 s] (8 s, 12 s, it: 3), which only the cache holds when a@16000
	// reads the windows below it in order of their start: [6 s, 16 s] (8 s, 12 s, 15.5 s, it: 4);
	// both fall in [8.001 s, 18.001 s], [10 s, 20 s] and [12.001 s, 22.001 s]; a@15500's window after
	// [15.501 s, 25.501 s] holds 20 s and then a@16000 (2), whose window after, [16.001 s, 26.001 s],
	// holds 20 s (1).
	commit("15500:6 16000:7", upd{5500, 3, 15500, "6"}, upd{6000, 4, 16000, "7"}, upd{8001, 3, 16000, "7"},
		upd{10000, 4, 20000, "7"}, upd{12001, 3, 20000, "7"}, upd{15501, 2, 20000, "7"}, upd{16001, 1, 20000, "7"})
	// a@14000, out of order: its window [4 s, 14 s] (5 s, 8 s, 12 s, it: 4); every window that holds
	// it, none of those that start after it (cached, and outside what it reads); its window after,
	// [14.001 s, 24.001 s], takes what the window before it holds after it (15.5 s, 16 s, 20 s: 3).
	commit("14000:8", upd{4000, 4, 14000, "8"}, upd{5001, 3, 14000, "8"}, upd{5500, 4, 15500, "8"}, upd{6000, 5, 16000, "8"},
		upd{8001, 4, 16000, "8"}, upd{10000, 5, 20000, "8"}, upd{12001, 4, 20000, "8"}, upd{14001, 3, 20000, "8"})
}
