package dsl

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/windowed"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Session aggregations, through the test driver; the expected outputs follow Kafka Streams'
// documented semantics of session windows: a key's records at most the gap apart form one session
// [first, last]; a record within the gap of two sessions merges them (the old sessions are deleted
// downstream, the merged one written); each update carries its session's end as its timestamp; a
// record whose session would end before the stream time minus the gap and grace is dropped.
func TestSessionCount(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		// A grace: two sessions more than the gap apart can only be bridged before the earlier one
		// closes, which without a grace it does as soon as the later one starts.
		SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(10*time.Second, 10*time.Second)).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	in := func(k string, ts int64) { pipeRaw(t, d, "in", []byte(k), []byte("x"), ts) }
	in("u", 0)
	in("u", 18000) // 18 s later: a session of its own
	in("u", 9000)  // within 10 s of both: all three merge into [0, 18 s]
	in("v", 40000)
	in("u", 14000) // stream time 40 s: closed at 40 - 10 - 10 = 20 s, and its session [0, 18 s] too: dropped
	type upd struct {
		key        string
		start, end int64
		count      int64 // -1: deleted
		ts         int64
	}
	var got []upd
	raws, err := d.ReadRaw("out")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raws {
		k, w, err := windowed.SplitSessionKey(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(-1)
		if r.Value != nil {
			n = int64(binary.BigEndian.Uint64(r.Value))
		}
		got = append(got, upd{string(k), w.Start, w.End, n, r.Timestamp.UnixMilli()})
	}
	want := []upd{{"u", 0, 0, 1, 0}, {"u", 18000, 18000, 1, 18000},
		{"u", 0, 0, -1, 0}, {"u", 18000, 18000, -1, 18000}, {"u", 0, 18000, 3, 18000},
		{"v", 40000, 40000, 1, 40000}}
	if !slices.Equal(got, want) {
		t.Fatalf("updates\n got %v\nwant %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 1 {
		t.Fatalf("dropped %d, want the late record", n)
	}
}

func TestSessionProgramErrors(t *testing.T) {
	expectProgramErrors(t, map[string]func(b *Builder){
		"inactivity gap": func(b *Builder) {
			SessionWindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfInactivityGapWithNoGrace(0)).Count()
		},
		"retention of the session store": func(b *Builder) {
			SessionWindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfInactivityGapWithNoGrace(time.Minute)).
				Count(Materialized[string, int64]{Name: "s", Retention: time.Second})
		},
	})
	// Under the HEADERS format a session aggregation builds (its store is headers-aware: see
	// TestWindowedAggregationsInTheHeadersFormat).
	b := NewBuilder()
	SessionWindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfInactivityGapWithNoGrace(time.Second)).Count()
	cfg := config.Default("ops")
	cfg.Runtime.DSLStoreFormat = config.DSLStoreFormatHeaders
	if _, _, err := b.Build(cfg); err != nil {
		t.Fatalf("Build with the HEADERS format: %v", err)
	}
}

// A session's updates carry no headers: Kafka Streams' session aggregation forwards new records,
// not the input's (uncached, as this one always is).
func TestSessionUpdatesCarryNoHeaders(t *testing.T) {
	d := run(t, func(b *Builder) {
		SessionWindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfInactivityGapWithNoGrace(time.Second)).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	if err := d.Pipe("in", []byte("k"), []byte("x"), time.UnixMilli(1), kgo.RecordHeader{Key: "h", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	raws, err := d.ReadRaw("out")
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 1 || len(raws[0].Headers) != 0 {
		t.Fatalf("outputs %+v, want one without headers", raws)
	}
}
