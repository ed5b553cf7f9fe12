package dsl

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/streamtest"
)

// The operators' semantics, through the test driver (the runtime itself, on a fake cluster). Each
// expected output is written from Kafka Streams' documented semantics for the operation.

// kv is one expected output record.
type kv[K, V any] struct {
	K K
	V V
}

// run builds program into a driver and closes it when the test ends.
func run(t *testing.T, program func(b *Builder)) *streamtest.Driver {
	t.Helper()
	b := NewBuilder()
	program(b)
	cfg := config.Default("ops")
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streamtest.New(cfg, topo, procs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	})
	return d
}

func pipe[K, V any](t *testing.T, in *streamtest.InputTopic[K, V], recs ...kv[K, V]) {
	t.Helper()
	for i, r := range recs {
		if err := in.Pipe(r.K, r.V, time.UnixMilli(int64(1000+i))); err != nil {
			t.Fatal(err)
		}
	}
}

func expect[K, V comparable](t *testing.T, out *streamtest.OutputTopic[K, V], want ...kv[K, V]) {
	t.Helper()
	recs, err := out.Read()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]kv[K, V], 0, len(recs))
	for _, r := range recs {
		got = append(got, kv[K, V]{r.Key, r.Value})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output\n got %v\nwant %v", got, want)
	}
}

func TestStatelessOperators(t *testing.T) {
	var (
		mu           sync.Mutex // the processors run on the runtime's goroutine
		peeked, each []string
	)
	d := run(t, func(b *Builder) {
		in := Stream(b, "in", Consumed[string, string]{})
		kept := in.Filter(func(_, v string) bool { return v != "" }).FilterNot(func(_, v string) bool { return strings.HasPrefix(v, "#") })
		up := MapValues(kept, func(k, v string) string { return strings.ToUpper(v) + "/" + k })
		up.Peek(func(k, v string) { mu.Lock(); peeked = append(peeked, k+"="+v); mu.Unlock() }).To("out", Produced[string, string]{})
		in.Foreach(func(k, v string) { mu.Lock(); each = append(each, k); mu.Unlock() })
		SelectKey(in, func(k, v string) string { return v + k }).To("rekeyed", Produced[string, string]{})
		Map(in, func(k, v string) (string, int64) { return k + "!", int64(len(v)) }).To("lengths", Produced[string, int64]{})
		FlatMapValues(in, func(_, v string) []string { return strings.Fields(v) }).To("words", Produced[string, string]{})
		FlatMap(in, func(k, v string) []KeyValue[string, string] {
			return []KeyValue[string, string]{{k, "a"}, {v, "b"}}
		}).To("pairs", Produced[string, string]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String),
		kv[string, string]{"a", "x y"}, kv[string, string]{"b", ""}, kv[string, string]{"c", "#z"}, kv[string, string]{"d", "w"})
	expect(t, streamtest.Output(d, "out", serde.String, serde.String), kv[string, string]{"a", "X Y/a"}, kv[string, string]{"d", "W/d"})
	expect(t, streamtest.Output(d, "rekeyed", serde.String, serde.String),
		kv[string, string]{"x ya", "x y"}, kv[string, string]{"b", ""}, kv[string, string]{"#zc", "#z"}, kv[string, string]{"wd", "w"})
	expect(t, streamtest.Output(d, "lengths", serde.String, serde.Int64),
		kv[string, int64]{"a!", 3}, kv[string, int64]{"b!", 0}, kv[string, int64]{"c!", 2}, kv[string, int64]{"d!", 1})
	expect(t, streamtest.Output(d, "words", serde.String, serde.String),
		kv[string, string]{"a", "x"}, kv[string, string]{"a", "y"}, kv[string, string]{"c", "#z"}, kv[string, string]{"d", "w"})
	expect(t, streamtest.Output(d, "pairs", serde.String, serde.String),
		kv[string, string]{"a", "a"}, kv[string, string]{"x y", "b"}, kv[string, string]{"b", "a"}, kv[string, string]{"", "b"},
		kv[string, string]{"c", "a"}, kv[string, string]{"#z", "b"}, kv[string, string]{"d", "a"}, kv[string, string]{"w", "b"})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a=X Y/a", "d=W/d"}; !slices.Equal(peeked, want) {
		t.Errorf("Peek saw %v, want %v", peeked, want)
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(each, want) {
		t.Errorf("Foreach saw %v, want %v", each, want)
	}
}

// A count after groupBy goes through the repartition topic and counts per new key; reduce and
// aggregate fold each key's values in order, the first value of a key being its reduce as is.
func TestGroupedAggregations(t *testing.T) {
	d := run(t, func(b *Builder) {
		in := Stream(b, "in", Consumed[string, string]{})
		GroupBy(in, func(_, v string) string { return v }, Grouped[string, string]{Name: "by-value"}).
			Count(Materialized[string, int64]{Name: "counts"}).ToStream().To("counts-out", Produced[string, int64]{})
		in.GroupByKey().Reduce(func(agg, v string) string { return agg + "+" + v }).ToStream().To("reduced", Produced[string, string]{})
		Aggregate(in.GroupByKey(), func() int64 { return 100 }, func(_, v string, agg int64) int64 { return agg + int64(len(v)) }).
			ToStream().To("aggregated", Produced[string, int64]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String),
		kv[string, string]{"k1", "x"}, kv[string, string]{"k2", "yy"}, kv[string, string]{"k1", "x"}, kv[string, string]{"k1", "zzz"})
	expect(t, streamtest.Output(d, "counts-out", serde.String, serde.Int64),
		kv[string, int64]{"x", 1}, kv[string, int64]{"yy", 1}, kv[string, int64]{"x", 2}, kv[string, int64]{"zzz", 1})
	expect(t, streamtest.Output(d, "reduced", serde.String, serde.String),
		kv[string, string]{"k1", "x"}, kv[string, string]{"k2", "yy"}, kv[string, string]{"k1", "x+x"}, kv[string, string]{"k1", "x+x+zzz"})
	expect(t, streamtest.Output(d, "aggregated", serde.String, serde.Int64),
		kv[string, int64]{"k1", 101}, kv[string, int64]{"k2", 102}, kv[string, int64]{"k1", 102}, kv[string, int64]{"k1", 105})
	st, err := d.Store("counts")
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := st.Get([]byte("x"))
	if err != nil || !ok || string(v) != string([]byte{0, 0, 0, 0, 0, 0, 0, 2}) {
		t.Fatalf("store counts holds x = %v %v %v, want 2 as Kafka's Long", v, ok, err)
	}
}
