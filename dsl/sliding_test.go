package dsl

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

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
