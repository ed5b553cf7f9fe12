package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Windowed aggregations through the test driver. Every expected output is written by hand from
// Kafka Streams' documented semantics: a record counts in each window [start, start+size) holding
// its timestamp, windows aligned to the epoch; a window takes records until the stream time (the
// largest timestamp the aggregation saw) passes its end plus the grace period, later records are
// dropped; each update is emitted with the largest timestamp of the records in the window.

// wrec is one expected windowed output: key, window start, value, timestamp.
type wrec[V comparable] struct {
	k     string
	start int64
	v     V
	ts    int64
}

func readWindowed[V comparable](t *testing.T, d *streamtest.Driver, topic string, size int64, vs serde.Serde[V]) []wrec[V] {
	t.Helper()
	recs, err := streamtest.Output(d, topic, windowed.TimeKeySerde(serde.String, size), vs).Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []wrec[V]
	for _, r := range recs {
		if r.Key.Window.End != r.Key.Window.Start+size {
			t.Fatalf("window %v of size %d", r.Key.Window, size)
		}
		got = append(got, wrec[V]{r.Key.Key, r.Key.Window.Start, r.Value, r.Timestamp.UnixMilli()})
	}
	return got
}

func pipeAt(t *testing.T, d *streamtest.Driver, topic string, recs ...wrec[string]) {
	t.Helper()
	in := streamtest.Input(d, topic, serde.String, serde.String)
	for _, r := range recs {
		if err := in.Pipe(r.k, r.v, time.UnixMilli(r.ts)); err != nil {
			t.Fatal(err)
		}
	}
}

// A tumbling count: windows [0,10 s), [10 s, 20 s), …; with no grace, a record older than the
// window the stream time is in is dropped.
func TestTumblingWindowCount(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeWithNoGrace(10*time.Second)).Count(Materialized[string, int64]{Name: "counts"}).
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	pipeAt(t, d, "in",
		wrec[string]{"a", 0, "x", 1000}, wrec[string]{"a", 0, "x", 5000}, wrec[string]{"b", 0, "x", 9000},
		wrec[string]{"a", 0, "x", 12000},
		wrec[string]{"a", 0, "x", 3000}, // its window [0, 10 s) closed at stream time 12 s: dropped
		wrec[string]{"a", 0, "x", 19999}, wrec[string]{"a", 0, "x", 20000},
		wrec[string]{"b", 0, "x", 11000}) // late for nothing: [10 s, 20 s) is open until 20 s
	want := []wrec[int64]{{"a", 0, 1, 1000}, {"a", 0, 2, 5000}, {"b", 0, 1, 9000}, {"a", 10000, 1, 12000},
		{"a", 10000, 2, 19999}, {"a", 20000, 1, 20000}}
	// The output's keys are Kafka's TimeWindowedSerializer's: the key, then the window start.
	raw, err := d.ReadRaw("out")
	if err != nil {
		t.Fatal(err)
	}
	var got []wrec[int64]
	for _, r := range raw {
		k, w, err := windowed.SplitTimeKey(r.Key, 10000)
		if err != nil || len(r.Key) != len(k)+8 || len(r.Value) != 8 {
			t.Fatalf("output record %x=%x: %v", r.Key, r.Value, err)
		}
		got = append(got, wrec[int64]{string(k), w.Start, int64(binary.BigEndian.Uint64(r.Value)), r.Timestamp.UnixMilli()})
	}
	// b@11 s came after stream time 20 s: [10 s, 20 s) ends at 20 s, so it is closed (end <= 20 s).
	if !slices.Equal(got, want) {
		t.Fatalf("output\n got %v\nwant %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 2 {
		t.Fatalf("dropped %d records, want the 2 late ones", n)
	}
	// The changelog holds Kafka Streams' window store keys and the counts alone, stamped.
	log, err := d.ReadRaw("ops-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 6 {
		t.Fatalf("%d changelog records, want 6", len(log))
	}
	wantKey := append([]byte("a"), 0, 0, 0, 0, 0, 0, 0x27, 0x10, 0, 0, 0, 0) // a, 10 000, sequence 0
	if r := log[3]; !bytes.Equal(r.Key, wantKey) || binary.BigEndian.Uint64(r.Value) != 1 || r.Timestamp.UnixMilli() != 12000 {
		t.Fatalf("changelog record %x=%x at %v, want %x=1 at 12000", r.Key, r.Value, r.Timestamp, wantKey)
	}
}

// A hopping window count with a grace period: a record counts in every window holding it, and a
// window closes once the stream time passes its end plus the grace.
func TestHoppingWindowCountWithGrace(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second).AdvanceBy(5*time.Second)).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	pipeAt(t, d, "in",
		wrec[string]{"a", 0, "x", 1000},  // [0,10)
		wrec[string]{"a", 0, "x", 7000},  // [0,10) [5,15)
		wrec[string]{"a", 0, "x", 16000}, // [10,20) [15,25)
		wrec[string]{"a", 0, "x", 14500}, // stream time 16 s, closed at 14 s: [5,15) [10,20) still open
		wrec[string]{"a", 0, "x", 17000}, // [10,20) [15,25)
		wrec[string]{"a", 0, "x", 14000}) // stream time 17 s, closed at 15 s: [5,15) closed, [10,20) open
	want := []wrec[int64]{
		{"a", 0, 1, 1000},
		{"a", 0, 2, 7000}, {"a", 5000, 1, 7000},
		{"a", 10000, 1, 16000}, {"a", 15000, 1, 16000},
		{"a", 5000, 2, 14500}, {"a", 10000, 2, 16000},
		{"a", 10000, 3, 17000}, {"a", 15000, 2, 17000},
		{"a", 10000, 4, 17000},
	}
	if got := readWindowed(t, d, "out", 10000, serde.Int64); !slices.Equal(got, want) {
		t.Fatalf("output\n got %v\nwant %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 1 {
		t.Fatalf("dropped %d, want 1 (the record of 14 s for the window [5 s, 15 s))", n)
	}
}

// Reduce keeps a window's first value as it is; Aggregate starts each window from its initializer.
func TestWindowedReduceAndAggregate(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		w := WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute))
		w.Reduce(func(agg, v string) string { return agg + "+" + v }).ToStream().To("joined", Produced[windowed.Key[string], string]{})
		WindowedAggregate(w, func() int64 { return 100 }, func(_ string, v string, agg int64) int64 { return agg + int64(len(v)) }).
			ToStream().To("lengths", Produced[windowed.Key[string], int64]{Value: serde.Int64})
	})
	pipeAt(t, d, "in", wrec[string]{"k", 0, "ab", 1000}, wrec[string]{"k", 0, "cde", 2000}, wrec[string]{"k", 0, "f", 61000})
	if got, want := readWindowed(t, d, "joined", 60000, serde.String),
		[]wrec[string]{{"k", 0, "ab", 1000}, {"k", 0, "ab+cde", 2000}, {"k", 60000, "f", 61000}}; !slices.Equal(got, want) {
		t.Fatalf("reduce\n got %v\nwant %v", got, want)
	}
	if got, want := readWindowed(t, d, "lengths", 60000, serde.Int64),
		[]wrec[int64]{{"k", 0, 102, 1000}, {"k", 0, 105, 2000}, {"k", 60000, 101, 61000}}; !slices.Equal(got, want) {
		t.Fatalf("aggregate\n got %v\nwant %v", got, want)
	}
}

// The record cache holds a window's updates until the commit, as it does a key's: what reaches the
// output is each window's last update at least.
func TestWindowedCountWithTheRecordCache(t *testing.T) {
	cfg := config.Default("ops")
	d := start(t, cfg, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeWithNoGrace(10*time.Second)).Count().ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 1000}, wrec[string]{"a", 0, "x", 2000}, wrec[string]{"a", 0, "x", 15000})
	got := readWindowed(t, d, "out", 10000, serde.Int64)
	last := map[string]int64{}
	for _, r := range got {
		last[fmt.Sprintf("%s %d", r.k, r.start)] = r.v
	}
	if last["a 0"] != 2 || last["a 10000"] != 1 || len(last) != 2 {
		t.Fatalf("last counts %v (from %v)", last, got)
	}
}

// The window store's changelog is declared as Kafka Streams declares it: compacted and deleted,
// kept for the retention plus a day; a retention shorter than the windows and their grace, and
// invalid windows, are program errors.
func TestWindowedTopologyAndProgramErrors(t *testing.T) {
	b := NewBuilder()
	g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
	WindowedBy(g, windowed.OfSizeAndGrace(time.Minute, 30*time.Second)).Count(Materialized[string, int64]{Name: "counts"})
	WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute)).Count(Materialized[string, int64]{Name: "kept", Retention: time.Hour})
	topo, _, err := b.Build(config.Default("app"))
	if err != nil {
		t.Fatal(err)
	}
	subs := topo.Subtopologies()
	if len(subs) != 1 || len(subs[0].StateChangelogTopics) != 2 {
		t.Fatalf("subtopologies %+v", subs)
	}
	for i, want := range []string{"90000", "3600000"} {
		cl := subs[0].StateChangelogTopics[i]
		cfgs := cl.Configs
		day := int64(24 * 60 * 60 * 1000)
		var ms int64
		fmt.Sscan(want, &ms)
		if cfgs["cleanup.policy"] != "compact,delete" || cfgs["retention.ms"] != fmt.Sprint(ms+day) {
			t.Errorf("changelog %s configs %v, want compact,delete and retention %d ms plus a day", cl.Name, cfgs, ms)
		}
	}

	b = NewBuilder()
	g = Stream(b, "in", Consumed[string, string]{}).GroupByKey()
	WindowedBy(g, windowed.OfSizeWithNoGrace(0)).Count()
	WindowedBy(g, windowed.OfSizeAndGrace(time.Minute, time.Minute)).Count(Materialized[string, int64]{Name: "short", Retention: 90 * time.Second})
	_, _, err = b.Build(config.Default("app"))
	var pe *ProgramError
	if !errors.As(err, &pe) || len(pe.Problems) != 2 || !errors.Is(pe.Problems[0], windowed.ErrWindows) {
		t.Fatalf("Build: %v", err)
	}
}

// Under dsl.store.format=HEADERS windowed and session aggregations keep Kafka Streams 4.4's
// headers-aware stores: their changelog updates carry no headers (the DSL keeps each aggregate with
// empty ones) and a removal carries the headers of the record that removed (here a session merge),
// as its ChangeLoggingTimestampedWindowBytesStoreWithHeaders and
// ChangeLoggingSessionBytesStoreWithHeaders write them. A suppression is still refused.
func TestWindowedAggregationsInTheHeadersFormat(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.DSLStoreFormat = config.DSLStoreFormatHeaders
	d := start(t, cfg, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute)).Count(Materialized[string, int64]{Name: "tumbling"})
		SessionWindowedBy(g, windowed.OfInactivityGapWithNoGrace(5*time.Second)).Count(Materialized[string, int64]{Name: "sessions"})
	})
	defer d.Close()
	for _, r := range []struct {
		h  string
		ts int64
	}{{"a", 1000}, {"b", 3000}} {
		pipeRaw(t, d, "in", []byte("k"), []byte("v"), r.ts, kgo.RecordHeader{Key: "h", Value: []byte(r.h)})
	}
	headersOf := func(topic string) []string {
		raws, err := d.ReadRaw(topic)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range raws {
			var hs string
			for _, h := range r.Headers {
				hs += h.Key + "=" + string(h.Value)
			}
			out = append(out, fmt.Sprintf("null=%v headers=%q", r.Value == nil, hs))
		}
		return out
	}
	if got, want := headersOf("ops-tumbling-changelog"), []string{`null=false headers=""`, `null=false headers=""`}; !slices.Equal(got, want) {
		t.Errorf("window store changelog %v, want %v", got, want)
	}
	// The session [1 s, 1 s], then its removal by the record at 3 s (with that record's headers)
	// and the merged session [1 s, 3 s].
	if got, want := headersOf("ops-sessions-changelog"), []string{`null=false headers=""`, `null=true headers="h=b"`, `null=false headers=""`}; !slices.Equal(got, want) {
		t.Errorf("session store changelog %v, want %v", got, want)
	}

	// A suppression builds too (its buffer's changelog in this format: p-suppress-headers).
	b := NewBuilder()
	WindowedBy(Stream(b, "in", Consumed[string, string]{}).GroupByKey(), windowed.OfSizeWithNoGrace(time.Minute)).Count().
		Suppress(UntilWindowCloses(BufferConfig{}))
	if _, _, err := b.Build(cfg); err != nil {
		t.Fatalf("Build of a suppression: %v", err)
	}
}

// A record with a null value counts, and a reduce's null first value is a null aggregate (Kafka
// Streams' reducer aggregator: aggregate == null ? value : reduce(aggregate, value)).
func TestWindowedNullValues(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		w := WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute))
		w.Count().ToStream().To("counts", Produced[windowed.Key[string], int64]{})
		w.Reduce(func(agg, v string) string { return agg + "+" + v }).ToStream().To("joined", Produced[windowed.Key[string], string]{})
	})
	for _, r := range []struct {
		v  []byte
		ts int64
	}{{nil, 1000}, {[]byte("a"), 2000}, {nil, 3000}} {
		if err := d.Pipe("in", []byte("k"), r.v, time.UnixMilli(r.ts)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := readWindowed(t, d, "counts", 60000, serde.Int64),
		[]wrec[int64]{{"k", 0, 1, 1000}, {"k", 0, 2, 2000}, {"k", 0, 3, 3000}}; !slices.Equal(got, want) {
		t.Fatalf("counts\n got %v\nwant %v", got, want)
	}
	raw, err := d.ReadRaw("joined")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range raw {
		if r.Value == nil {
			got = append(got, "null")
		} else {
			got = append(got, string(r.Value))
		}
	}
	// The null first value leaves the window empty; "a" is then its first value; a later null
	// reaches the reducer as "" (Go's string has no null).
	if want := []string{"null", "a", "a+"}; !slices.Equal(got, want) {
		t.Fatalf("reduce %v, want %v", got, want)
	}
}

// A windowed count given an unnamed Materialized takes a store name it never uses before its own,
// as Kafka Streams' TimeWindowedKStreamImpl.count(Materialized) does; a named one takes none.
func TestWindowedCountMaterializedNames(t *testing.T) {
	for _, c := range []struct {
		m    Materialized[string, int64]
		want string
	}{
		{Materialized[string, int64]{Key: serde.String}, "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog"},
		{Materialized[string, int64]{Name: "named"}, "app-named-changelog"},
	} {
		b := NewBuilder()
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute)).Count(c.m).ToStream().To("out", Produced[windowed.Key[string], int64]{})
		topo, _, err := b.Build(config.Default("app"))
		if err != nil {
			t.Fatal(err)
		}
		if got := topo.Subtopologies()[0].StateChangelogTopics[0].Name; got != c.want {
			t.Errorf("changelog %s, want %s", got, c.want)
		}
	}
}

// A record at the epoch counts in its window even with 1 ms windows and no grace: the stream time
// before any record is unknown, not 0 or later.
func TestWindowedCountAtTheEpoch(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		WindowedBy(g, windowed.OfSizeWithNoGrace(time.Millisecond)).Count().ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	pipeAt(t, d, "in", wrec[string]{"a", 0, "x", 0}, wrec[string]{"a", 0, "x", 1})
	if got, want := readWindowed(t, d, "out", 1, serde.Int64), []wrec[int64]{{"a", 0, 1, 0}, {"a", 1, 1, 1}}; !slices.Equal(got, want) {
		t.Fatalf("output\n got %v\nwant %v", got, want)
	}
}

// The window store's key serde: Kafka Streams' layout (the key, the start, sequence 0) read back with
// the window's end from its size (the largest time when that overflows); a layout too short or an
// inner key that does not decode is refused.
func TestWindowStoreKeySerde(t *testing.T) {
	s := windowStoreKeys(serde.String, 1000)
	k := windowed.Key[string]{Key: "ab", Window: windowed.Window{Start: 5000, End: 6000}}
	b, err := s.Encode(k)
	if err != nil || !bytes.Equal(b, windowed.AppendStoreKey(nil, []byte("ab"), 5000, 0)) {
		t.Fatalf("Encode = %x %v", b, err)
	}
	if got, err := s.Decode(b); err != nil || got != k {
		t.Fatalf("Decode = %v %v", got, err)
	}
	if got, err := s.Decode(windowed.AppendStoreKey(nil, []byte("x"), math.MaxInt64-10, 0)); err != nil || got.Window.End != math.MaxInt64 {
		t.Fatalf("Decode near the largest time = %v %v", got, err)
	}
	if got, err := s.Decode(windowed.AppendStoreKey(nil, []byte("x"), math.MaxInt64-1000, 0)); err != nil || got.Window.End != math.MaxInt64 {
		t.Fatalf("Decode of a window ending at the largest time = %v %v", got, err)
	}
	var de *serde.DecodeError
	if _, err := s.Decode([]byte{1, 2}); !errors.As(err, &de) {
		t.Fatalf("a short key: %v", err)
	}
	if _, err := windowStoreKeys(serde.Int64, 1000).Decode(windowed.AppendStoreKey(nil, []byte{1}, 0, 0)); !errors.As(err, &de) || de.Serde != "int64" {
		t.Fatalf("an inner key that does not decode: %v", err)
	}
	if _, err := windowStoreKeys(failing{}, 1000).Encode(k); err == nil {
		t.Fatal("an inner key that does not encode was encoded")
	}
	// Appended after what a buffer holds, the same bytes, whether the inner serde appends
	// (serde.String) or only encodes (plainString); an inner key that does not encode appends
	// nothing.
	want := append([]byte("xy"), windowed.AppendStoreKey(nil, []byte("ab"), 5000, 0)...)
	for _, sd := range []serde.Serde[windowed.Key[string]]{s, windowStoreKeys[string](plainString{}, 1000)} {
		got, err := sd.(serde.Appender[windowed.Key[string]]).AppendEncode([]byte("xy"), k)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendEncode = %x %v, want %x", got, err, want)
		}
	}
	for _, sd := range []serde.Serde[windowed.Key[string]]{windowStoreKeys[string](failing{}, 1000), windowStoreKeys[string](failingAppender{}, 1000)} {
		if got, err := sd.(serde.Appender[windowed.Key[string]]).AppendEncode([]byte("xy"), k); err == nil || string(got) != "xy" {
			t.Fatalf("an inner key that does not encode: %q %v", got, err)
		}
	}
}

// plainString is serde.String without AppendEncode.
type plainString struct{}

func (plainString) Encode(v string) ([]byte, error) { return []byte(v), nil }
func (plainString) Decode(b []byte) (string, error) { return string(b), nil }

// failingAppender appends a byte, then fails.
type failingAppender struct{ failing }

func (failingAppender) AppendEncode(dst []byte, _ string) ([]byte, error) {
	return append(dst, 'z'), errors.New("no")
}

type failing struct{}

func (failing) Encode(string) ([]byte, error) { return nil, errors.New("no") }
func (failing) Decode([]byte) (string, error) { return "", errors.New("no") }

// What is downstream of a processor's Forward runs in the forwarded record's context, as Kafka
// Streams' forward sets the record context: a session merged away by a forwarded record is removed
// with that record's headers under dsl.store.format=HEADERS, not with the input's.
func TestForwardedRecordsContextReachesTheStores(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.DSLStoreFormat = config.DSLStoreFormatHeaders
	d := start(t, cfg, func(b *Builder) {
		tagged := ProcessValues(Stream(b, "in", Consumed[string, string]{}),
			ProcessorFunc[string, string, string, string](func(c ProcessorContext[string, string], r Record[string, string]) error {
				r.Headers = []kgo.RecordHeader{{Key: "pv", Value: []byte("x")}}
				return c.Forward(r)
			}))
		SessionWindowedBy(tagged.GroupByKey(), windowed.OfInactivityGapWithNoGrace(5*time.Second)).Count(Materialized[string, int64]{Name: "sessions"})
	})
	defer d.Close()
	for _, ts := range []int64{1000, 3000} {
		pipeRaw(t, d, "in", []byte("k"), []byte("v"), ts, kgo.RecordHeader{Key: "h", Value: []byte("in")})
	}
	raws, err := d.ReadRaw("ops-sessions-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 3 || raws[1].Value != nil || len(raws[1].Headers) != 1 || raws[1].Headers[0].Key != "pv" {
		t.Fatalf("session store changelog %+v, want the merge's removal with the forwarded record's header pv=x", raws)
	}
}
