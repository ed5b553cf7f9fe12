package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The operators' semantics, through the test driver (the runtime itself, on a fake cluster). Each
// expected output is written from Kafka Streams' documented semantics for the operation.

// kv is one expected output record.
type kv[K, V any] struct {
	K K
	V V
}

// run builds program into a driver for application "ops" and closes it when the test ends, failing
// the test if the application failed.
func run(t *testing.T, program func(b *Builder)) *streamtest.Driver {
	t.Helper()
	d := start(t, config.Default("ops"), program)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	})
	return d
}

// start builds program into a driver for cfg; the caller closes it.
func start(t *testing.T, cfg config.Config, program func(b *Builder)) *streamtest.Driver {
	t.Helper()
	b := NewBuilder()
	program(b)
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streamtest.New(cfg, topo, procs)
	if err != nil {
		t.Fatal(err)
	}
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
	// Kept as Kafka Streams keeps it: the timestamp of x's last record (1002), then 2 as a Long.
	v, ok, err := st.Get([]byte("x"))
	if want := []byte{0, 0, 0, 0, 0, 0, 0x03, 0xea, 0, 0, 0, 0, 0, 0, 0, 2}; err != nil || !ok || string(v) != string(want) {
		t.Fatalf("store counts holds x = %v %v %v, want %v", v, ok, err, want)
	}
}

// Split sends each record to the first branch that accepts it, else to the default branch.
func TestSplit(t *testing.T) {
	d := run(t, func(b *Builder) {
		br := Stream(b, "in", Consumed[string, string]{}).Split("s-").
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "a") }, "a").
			Branch(func(_, v string) bool { return strings.Contains(v, "a") })
		br.DefaultBranch()["s-0"].To("rest", Produced[string, string]{})
		br.branches["s-a"].To("as", Produced[string, string]{})
		br.branches["s-2"].To("has-a", Produced[string, string]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String),
		kv[string, string]{"1", "ab"}, kv[string, string]{"2", "ba"}, kv[string, string]{"3", "cc"}, kv[string, string]{"4", "aa"})
	expect(t, streamtest.Output(d, "as", serde.String, serde.String), kv[string, string]{"1", "ab"}, kv[string, string]{"4", "aa"})
	expect(t, streamtest.Output(d, "has-a", serde.String, serde.String), kv[string, string]{"2", "ba"})
	expect(t, streamtest.Output(d, "rest", serde.String, serde.String), kv[string, string]{"3", "cc"})
}

// ToFunc writes each record to the topic its function names.
func TestToFunc(t *testing.T) {
	d := run(t, func(b *Builder) {
		Stream(b, "in", Consumed[string, string]{}).ToFunc(func(k, _ string) string { return "to-" + k }, Produced[string, string]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"x", "1"}, kv[string, string]{"y", "2"}, kv[string, string]{"x", "3"})
	expect(t, streamtest.Output(d, "to-x", serde.String, serde.String), kv[string, string]{"x", "1"}, kv[string, string]{"x", "3"})
	expect(t, streamtest.Output(d, "to-y", serde.String, serde.String), kv[string, string]{"y", "2"})
}

// A table keeps each key's latest value; a filter of a table kept in a store turns a rejected update
// of a key in its result into a deletion downstream (a null value) and drops one of a key that was
// not (Kafka Streams' filter with old values); mapValues keeps deletions as deletions.
func TestTableOperations(t *testing.T) {
	d := run(t, func(b *Builder) {
		latest := SelectKey(Stream(b, "in", Consumed[string, string]{}), func(k, _ string) string { return k }).
			ToTable(Materialized[string, string]{Name: "latest"})
		long := latest.Filter(func(_, v string) bool { return len(v) > 1 }, Materialized[string, string]{Name: "long"})
		MapTableValues(long, func(_, v string) int64 { return int64(len(v)) }).ToStream().To("lengths", Produced[string, int64]{})
		latest.FilterNot(func(_, v string) bool { return len(v) > 1 }).ToStream().To("short", Produced[string, string]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String),
		kv[string, string]{"a", "xx"}, kv[string, string]{"b", "y"}, kv[string, string]{"a", "z"}, kv[string, string]{"b", "yyy"})
	lengths, err := streamtest.Output(d, "lengths", serde.String, serde.Int64).Read()
	if err != nil {
		t.Fatal(err)
	}
	type upd struct {
		k    string
		n    int64
		null bool
	}
	var got []upd
	for _, r := range lengths {
		got = append(got, upd{r.Key, r.Value, r.NullValue})
	}
	// b=y is dropped: b was not in the result before either.
	if want := []upd{{"a", 2, false}, {"a", 0, true}, {"b", 3, false}}; !slices.Equal(got, want) {
		t.Fatalf("lengths: got %v, want %v", got, want)
	}
	short, err := streamtest.Output(d, "short", serde.String, serde.String).Read()
	if err != nil {
		t.Fatal(err)
	}
	var nulls []bool
	for _, r := range short {
		nulls = append(nulls, r.NullValue)
	}
	// a=xx is dropped: a was not in the result before either.
	if want := []bool{false, false, true}; !slices.Equal(nulls, want) || short[0].Value != "y" || short[1].Value != "z" {
		t.Fatalf("short: %+v, want b=y, a=z, b deleted", short)
	}
	// Each value after its record's timestamp (a=z at 1002, b=yyy at 1003).
	for store, want := range map[string]map[string]string{"latest": {"a": "\x00\x00\x00\x00\x00\x00\x03\xeaz", "b": "\x00\x00\x00\x00\x00\x00\x03\xebyyy"},
		"long": {"b": "\x00\x00\x00\x00\x00\x00\x03\xebyyy"}} {
		st, err := d.Store(store)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b"} {
			v, ok, err := st.Get([]byte(k))
			if w, has := want[k]; err != nil || ok != has || string(v) != w {
				t.Errorf("store %s: %s = %q %v %v, want %q %v", store, k, v, ok, err, w, has)
			}
		}
	}
}

// Process hands each record, encoded, to a Processor API processor that may use the stores added
// for it; its Init runs first.
func TestProcess(t *testing.T) {
	seen := stream.KeyValue("seen", serde.String, serde.String)
	var inits atomic.Int32
	p := &initProcessor{init: func(*stream.Context) error { inits.Add(1); return nil },
		proc: stream.Typed(serde.String, serde.String, func(c *stream.Context, k, v string) error {
			prev, _, err := seen.Get(c, k)
			if err == nil {
				err = seen.Put(c, k, prev+v)
			}
			return err
		})}
	d := run(t, func(b *Builder) {
		b.AddStore("seen")
		MapValues(Stream(b, "in", Consumed[string, string]{}), func(_, v string) string { return v + "." }).Process(p, "seen")
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"k", "a"}, kv[string, string]{"k", "b"})
	st, err := d.Store("seen")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.Get([]byte("k")); err != nil || !ok || string(v) != "a.b." {
		t.Fatalf("store seen: k = %q %v %v, want a.b.", v, ok, err)
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("Init ran %d times, want once (one task)", n)
	}
}

type initProcessor struct {
	init func(*stream.Context) error
	proc stream.Processor
}

func (p *initProcessor) Init(c *stream.Context) error { return p.init(c) }
func (p *initProcessor) Process(c *stream.Context, r *stream.Record) error {
	return p.proc.Process(c, r)
}

// Build reports every error of a program at once.
func TestBuildReportsProgramErrors(t *testing.T) {
	type point struct{ X int }
	b := NewBuilder()
	s := Stream(b, "", Consumed[string, point]{})
	s.To("out", Produced[string, point]{})
	b.AddStore("unused")
	s.Filter(func(string, point) bool { return true }, "dup").Filter(func(string, point) bool { return true }, "dup")
	_, _, err := b.Build(config.Default("app"))
	var pe *ProgramError
	if !errors.As(err, &pe) || len(pe.Problems) != 5 {
		t.Fatalf("Build: %v; want a *ProgramError with the program's 5 problems", err)
	}
	for _, want := range []string{"Stream needs a topic", "Consumed serdes for string and dsl.point", `To("out") needs Produced serdes`,
		`"unused" added with AddStore is used by no Process`, `two processor nodes are named "dup"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build's error does not say %q:\n%v", want, err)
		}
	}
	if _, _, err := NewBuilder().Build(config.Config{}); err == nil || !strings.Contains(err.Error(), "application.id is required") {
		t.Errorf("Build without application.id: %v", err)
	}
	b2 := NewBuilder()
	Stream(b2, "in", Consumed[string, string]{}).To("out", Produced[string, string]{})
	if _, _, err := b2.Build(config.Default("app")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b2.Build(config.Default("app")); !errors.Is(err, ErrBuilt) {
		t.Errorf("a second Build: %v, want ErrBuilt", err)
	}
}

// An aggregation's result carries the latest timestamp of the records it aggregated, also when one
// comes out of order; its changelog holds the value alone with that timestamp as the record's, as
// Kafka Streams' timestamped stores log it.
func TestAggregationTimestampsAndChangelog(t *testing.T) {
	d := run(t, func(b *Builder) {
		Stream(b, "in", Consumed[string, string]{}).GroupByKey().Count(Materialized[string, int64]{Name: "counts"}).
			ToStream().To("out", Produced[string, int64]{})
	})
	in := streamtest.Input(d, "in", serde.String, serde.String)
	for _, ts := range []int64{5000, 3000, 7000} {
		if err := in.Pipe("k", "v", time.UnixMilli(ts)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := streamtest.Output(d, "out", serde.String, serde.Int64).Read()
	if err != nil {
		t.Fatal(err)
	}
	type rec struct{ n, ts int64 }
	var got []rec
	for _, r := range out {
		got = append(got, rec{r.Value, r.Timestamp.UnixMilli()})
	}
	if want := []rec{{1, 5000}, {2, 5000}, {3, 7000}}; !slices.Equal(got, want) {
		t.Fatalf("out: got %v, want %v", got, want)
	}
	log, err := d.ReadRaw("ops-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range log {
		if len(r.Value) != 8 {
			t.Fatalf("a changelog value of %d bytes %v: want the Long alone", len(r.Value), r.Value)
		}
		got = append(got, rec{int64(binary.BigEndian.Uint64(r.Value)), r.Timestamp.UnixMilli()})
	}
	if want := []rec{{1, 5000}, {2, 5000}, {3, 7000}}; !slices.Equal(got, want) {
		t.Fatalf("changelog: got %v, want %v", got, want)
	}
}

// A table regrouped by a new key: each update takes its old value out of the old key's aggregate
// and adds its new value to the new key's (Kafka Streams' KGroupedTable), a deletion only takes out.
func TestTableGroupByCount(t *testing.T) {
	d := run(t, func(b *Builder) {
		users := Stream(b, "in", Consumed[string, string]{}).ToTable(Materialized[string, string]{Name: "users"})
		GroupTableBy(users, func(user, region string) (string, string) { return region, user }, Grouped[string, string]{Name: "by-region"}).
			Count(Materialized[string, int64]{Name: "per-region"}).ToStream().To("out", Produced[string, int64]{})
	})
	at := time.UnixMilli(1000)
	for _, r := range []kv[string, string]{{"u1", "r1"}, {"u2", "r1"}, {"u1", "r2"}, {"u2", ""}, {"u3", "r2"}, {"u3", "r2"}} {
		var v []byte
		if r.V != "" {
			v = []byte(r.V)
		}
		if err := d.Pipe("in", []byte(r.K), v, at); err != nil { // "" pipes a null value: u2 is deleted
			t.Fatal(err)
		}
	}
	expect(t, streamtest.Output(d, "out", serde.String, serde.Int64),
		kv[string, int64]{"r1", 1}, kv[string, int64]{"r1", 2}, kv[string, int64]{"r1", 1}, kv[string, int64]{"r2", 1},
		kv[string, int64]{"r1", 0}, kv[string, int64]{"r2", 2}, kv[string, int64]{"r2", 2})
}

// A table reduce and aggregate with subtractors, over an aggregation's result table.
func TestTableGroupByReduceAndAggregate(t *testing.T) {
	d := run(t, func(b *Builder) {
		latest := Stream(b, "in", Consumed[string, string]{}).GroupByKey().Reduce(func(_, v string) string { return v })
		byFirst := GroupTableBy(latest, func(k, v string) (string, string) { return v[:1], k })
		byFirst.Reduce(func(agg, v string) string { return agg + "+" + v }, func(agg, v string) string { return agg + "-" + v }).
			ToStream().To("reduced", Produced[string, string]{})
		AggregateTable(GroupTableBy(latest, func(k, v string) (string, string) { return v[:1], v }), func() int64 { return 100 },
			func(_, v string, agg int64) int64 { return agg + int64(len(v)) }, func(_, v string, agg int64) int64 { return agg - int64(len(v)) }).
			ToStream().To("sums", Produced[string, int64]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String),
		kv[string, string]{"k1", "apple"}, kv[string, string]{"k2", "avocado"}, kv[string, string]{"k1", "banana"}, kv[string, string]{"k2", "apricot"})
	// k1: apple → banana moves k1 from a to b; k2: avocado → apricot stays in a (one record, both values).
	expect(t, streamtest.Output(d, "reduced", serde.String, serde.String),
		kv[string, string]{"a", "k1"}, kv[string, string]{"a", "k1+k2"}, kv[string, string]{"a", "k1+k2-k1"}, kv[string, string]{"b", "k1"},
		kv[string, string]{"a", "k1+k2-k1-k2+k2"})
	expect(t, streamtest.Output(d, "sums", serde.String, serde.Int64),
		kv[string, int64]{"a", 105}, kv[string, int64]{"a", 112}, kv[string, int64]{"a", 107}, kv[string, int64]{"b", 106}, kv[string, int64]{"a", 107})
}

// GroupTableBy needs the table's old values: below a filter of a table kept in no store, the
// source table is kept in its generated store (as Kafka Streams materializes it).
func TestGroupTableByKeepsTheSourceTable(t *testing.T) {
	b := NewBuilder()
	users := Table(b, "in", Consumed[string, string]{})
	GroupTableBy(users.Filter(func(string, string) bool { return true }), func(k, v string) (string, string) { return v, k }).Count()
	topo, _, err := b.Build(config.Default("app"))
	if err != nil {
		t.Fatal(err)
	}
	var changelogs []string
	for _, ti := range topo.Subtopologies()[0].StateChangelogTopics {
		changelogs = append(changelogs, ti.Name)
	}
	if want := []string{"app-in-STATE-STORE-0000000000-changelog"}; !slices.Equal(changelogs, want) {
		t.Fatalf("the source table's changelogs: %v, want %v", changelogs, want)
	}
}

// The Change format of Kafka Streams (ChangedSerializer): the bytes for each combination.
func TestChangeFormat(t *testing.T) {
	for _, c := range []struct {
		ch   change[string]
		want []byte
	}{
		{change[string]{new: "ab", hasNew: true}, []byte("ab\x01")},
		{change[string]{old: "xyz", hasOld: true}, []byte("xyz\x00")},
		{change[string]{new: "ab", old: "xyz", hasNew: true, hasOld: true}, []byte("\x04abxyz\x02")}, // varint 2, zigzag: 4
	} {
		got, err := encodeChange(serde.String, c.ch)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("encode %+v = %q %v, want %q", c.ch, got, err, c.want)
		}
		back, err := decodeChange(serde.String, got)
		if err != nil || back != c.ch {
			t.Errorf("decode %q = %+v %v, want %+v", got, back, err, c.ch)
		}
	}
	// Both values, the new one empty or the old one empty: the lengths are exact.
	for _, ch := range []change[string]{{new: "", old: "x", hasNew: true, hasOld: true}, {new: "ab", old: "", hasNew: true, hasOld: true}} {
		b, err := encodeChange(serde.String, ch)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := decodeChange(serde.String, b); err != nil || back != ch {
			t.Errorf("%+v encodes to %q, which decodes to %+v %v", ch, b, back, err)
		}
	}
	for _, bad := range [][]byte{nil, {3}, {2}, {0x7f, 2}, {0x06, 'a', 2}} {
		if _, err := decodeChange(serde.String, bad); !errors.Is(err, errChangeFormat) {
			t.Errorf("decode %q: %v, want errChangeFormat", bad, err)
		}
	}
	// A value its serde refuses, new or old, is an error too.
	for _, bad := range [][]byte{{1, 2, 3, 1}, {1, 2, 3, 0}} {
		if _, err := decodeChange(serde.Int64, bad); err == nil {
			t.Errorf("decode %v as Longs: no error", bad)
		}
	}
}

// FuzzDecodeChange: any bytes decode to a change or errChangeFormat, never a panic, and what decodes
// encodes back to the same bytes.
func FuzzDecodeChange(f *testing.F) {
	for _, s := range []string{"ab\x01", "xyz\x00", "\x04abxyz\x02", "", "\x02", "\x80\x02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := decodeChange(serde.Bytes, b)
		if err != nil {
			return
		}
		again, err := encodeChange(serde.Bytes, ch)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := decodeChange(serde.Bytes, again); err != nil || !bytes.Equal(back.new, ch.new) || !bytes.Equal(back.old, ch.old) ||
			back.hasNew != ch.hasNew || back.hasOld != ch.hasOld {
			t.Fatalf("%q decodes to %+v, which encodes to %q, which decodes to %+v (%v)", b, ch, again, back, err)
		}
	})
}

// A cogroup folds each stream's records into one aggregate per key with that stream's aggregator.
func TestCogroup(t *testing.T) {
	d := run(t, func(b *Builder) {
		plus := Stream(b, "plus", Consumed[string, string]{}).GroupByKey()
		minus := Stream(b, "minus", Consumed[string, string]{}).GroupByKey()
		c := Cogroup(plus, func(_, v string, agg int64) int64 { return agg + int64(len(v)) })
		CogroupWith(c, minus, func(_, v string, agg int64) int64 { return agg - int64(len(v)) }).
			Aggregate(func() int64 { return 10 }, Materialized[string, int64]{Name: "net"}).ToStream().To("out", Produced[string, int64]{})
	})
	pipe(t, streamtest.Input(d, "plus", serde.String, serde.String), kv[string, string]{"a", "xxx"}, kv[string, string]{"b", "y"})
	expect(t, streamtest.Output(d, "out", serde.String, serde.Int64), kv[string, int64]{"a", 13}, kv[string, int64]{"b", 11})
	pipe(t, streamtest.Input(d, "minus", serde.String, serde.String), kv[string, string]{"a", "zz"}, kv[string, string]{"c", "w"})
	expect(t, streamtest.Output(d, "out", serde.String, serde.Int64), kv[string, int64]{"a", 11}, kv[string, int64]{"c", 9})
}

// A cogroup whose stream repartitions first is refused, as Kafka Streams 4.4 cannot build it for a
// streams group.
func TestCogroupOfARepartitionedStreamIsRefused(t *testing.T) {
	b := NewBuilder()
	byValue := GroupBy(Stream(b, "in", Consumed[string, string]{}), func(_, v string) string { return v })
	byKey := Stream(b, "in2", Consumed[string, string]{}).GroupByKey()
	CogroupWith(Cogroup(byValue, func(_, _, agg string) string { return agg }), byKey, func(_, _, agg string) string { return agg }).
		Aggregate(func() string { return "" })
	if _, _, err := b.Build(config.Default("app")); err == nil || !strings.Contains(err.Error(), "Kafka Streams 4.4 cannot build") {
		t.Fatalf("Build: %v, want the cogroup refused", err)
	}
}

// A table read from a topic keeps each key's latest value (a null value deletes it, a null key is
// skipped), and is regrouped with old values from its store.
func TestTableSource(t *testing.T) {
	d := run(t, func(b *Builder) {
		users := Table(b, "users", Consumed[string, string]{}, Materialized[string, string]{Name: "users"})
		users.ToStream().To("changes", Produced[string, string]{})
		GroupTableBy(Table(b, "moves", Consumed[string, string]{}), func(user, region string) (string, string) { return region, user }).
			Count().ToStream().To("per-region", Produced[string, int64]{})
	})
	at := time.UnixMilli(1)
	for _, r := range [][2][]byte{{[]byte("u1"), []byte("a")}, {nil, []byte("x")}, {[]byte("u1"), nil}, {[]byte("u2"), []byte("b")}} {
		if err := d.Pipe("users", r[0], r[1], at); err != nil {
			t.Fatal(err)
		}
	}
	changes, err := streamtest.Output(d, "changes", serde.String, serde.String).Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3 || changes[0].Value != "a" || !changes[1].NullValue || changes[2].Key != "u2" {
		t.Fatalf("changes: %+v, want u1=a, u1 deleted, u2=b", changes)
	}
	st, err := d.Store("users")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.Get([]byte("u1")); ok {
		t.Error("u1 is deleted, yet in the store")
	}
	pipe(t, streamtest.Input(d, "moves", serde.String, serde.String), kv[string, string]{"u1", "r1"}, kv[string, string]{"u1", "r2"})
	expect(t, streamtest.Output(d, "per-region", serde.String, serde.Int64),
		kv[string, int64]{"r1", 1}, kv[string, int64]{"r1", 0}, kv[string, int64]{"r2", 1})
}

// A Repartitioned name that ends in -repartition names the topic as it is, as in Kafka Streams.
func TestRepartitionNameKeepsItsSuffix(t *testing.T) {
	b := NewBuilder()
	Stream(b, "in", Consumed[string, string]{}).Repartition(Repartitioned[string, string]{Name: "by-x-repartition"}).
		To("out", Produced[string, string]{})
	topo, _, err := b.Build(config.Default("app"))
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.Subtopologies()[0].RepartitionSinkTopics; len(got) != 1 || got[0] != "app-by-x-repartition" {
		t.Fatalf("repartition topics %v, want app-by-x-repartition", got)
	}
}

// Two aggregations of one named grouping read one repartition topic, each record once.
func TestTwoAggregationsOfOneGrouping(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := GroupBy(Stream(b, "in", Consumed[string, string]{}), func(_, v string) string { return v }, Grouped[string, string]{Name: "by-v"})
		g.Count(Materialized[string, int64]{Name: "c"}).ToStream().To("counts", Produced[string, int64]{})
		g.Reduce(func(a, v string) string { return a + v }, Materialized[string, string]{Name: "r"}).ToStream().To("joined", Produced[string, string]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"1", "x"}, kv[string, string]{"2", "x"}, kv[string, string]{"3", "y"})
	expect(t, streamtest.Output(d, "counts", serde.String, serde.Int64), kv[string, int64]{"x", 1}, kv[string, int64]{"x", 2}, kv[string, int64]{"y", 1})
	expect(t, streamtest.Output(d, "joined", serde.String, serde.String), kv[string, string]{"x", "x"}, kv[string, string]{"x", "xx"}, kv[string, string]{"y", "y"})
}

var errInit = errors.New("init failed")

// A Process processor whose Init fails stops the application with its error.
func TestProcessInitFailureStopsTheApplication(t *testing.T) {
	b := NewBuilder()
	Stream(b, "in", Consumed[string, string]{}).Process(&initProcessor{init: func(*stream.Context) error { return errInit },
		proc: stream.ProcessorFunc(func(*stream.Context, *stream.Record) error { return nil })})
	cfg := config.Default("ops")
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streamtest.New(cfg, topo, procs)
	if err == nil {
		err = d.Settle()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}
	if !errors.Is(err, errInit) {
		t.Fatalf("the application's error: %v, want the Init's", err)
	}
}

// decimal is a serde of int64 as decimal text, for stores and outputs given their own serde.
type decimal struct{}

func (decimal) Encode(n int64) ([]byte, error) { return strconv.AppendInt(nil, n, 10), nil }
func (decimal) Decode(b []byte) (int64, error) { return strconv.ParseInt(string(b), 10, 64) }

// A count regrouped by its value (how many keys have each count), its store given a serde of its
// own: the count's updates carry their old values to the regrouped count.
func TestRegroupedCount(t *testing.T) {
	d := run(t, func(b *Builder) {
		counts := Stream(b, "in", Consumed[string, string]{}).GroupByKey().Count(Materialized[string, int64]{Name: "counts", Value: decimal{}})
		counts.ToStream().To("counts", Produced[string, int64]{})
		GroupTableBy(counts, func(k string, n int64) (string, string) { return strconv.FormatInt(n, 10), k }).
			Count(Materialized[string, int64]{Value: decimal{}}).ToStream().To("keys-per-count", Produced[string, int64]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", ""}, kv[string, string]{"b", ""}, kv[string, string]{"a", ""})
	// The table's serde is its store's: the counts go out as decimal text.
	expect(t, streamtest.Output[string, int64](d, "counts", serde.String, decimal{}), kv[string, int64]{"a", 1}, kv[string, int64]{"b", 1}, kv[string, int64]{"a", 2})
	// A count's first update carries the initial 0 as its old value: the regrouping takes each key out
	// of group "0", which it was never in, leaving a deletion of "0" (Kafka Streams writes the same).
	recs, err := streamtest.Output[string, int64](d, "keys-per-count", serde.String, decimal{}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.NullValue {
			got = append(got, r.Key+"=null")
		} else {
			got = append(got, fmt.Sprintf("%s=%d", r.Key, r.Value))
		}
	}
	if want := []string{"0=null", "1=1", "0=null", "1=2", "1=1", "2=1"}; !slices.Equal(got, want) {
		t.Fatalf("keys-per-count: %v, want %v", got, want)
	}
}

// point has no default serde.
type point struct{ X int }

// A merge takes the serdes either stream knows.
func TestMergeTakesTheOtherStreamsSerdes(t *testing.T) {
	b := NewBuilder()
	mapped := Map(Stream(b, "in", Consumed[string, string]{}), func(k, _ string) (string, point) { return k, point{1} })
	read := Stream(b, "points", Consumed[string, point]{Value: serde.JSON[point]()})
	mapped.Merge(read).To("out", Produced[string, point]{})
	unknownKey := Map(Stream(b, "in2", Consumed[string, string]{}), func(_, v string) (point, string) { return point{2}, v })
	keyed := Stream(b, "keyed", Consumed[point, string]{Key: serde.JSON[point]()})
	unknownKey.Merge(keyed).To("out2", Produced[point, string]{})
	if _, _, err := b.Build(config.Default("app")); err != nil {
		t.Fatalf("Build: %v", err)
	}
}

// A record whose key or value its source's serde cannot decode follows
// deserialization.exception.handler, as Kafka Streams deserializes before any processor: skipped
// with LogAndContinue (the next one is processed), the application stopped by default.
func TestUndecodableRecordsFollowTheDeserializationHandler(t *testing.T) {
	program := func(b *Builder) {
		Stream(b, "in", Consumed[string, int64]{}).To("out", Produced[string, int64]{})
	}
	cfg := config.Default("ops")
	cfg.Runtime.OnDeserializationError = config.LogAndContinue
	d := start(t, cfg, program)
	defer d.Close()
	at := time.UnixMilli(1)
	for _, v := range [][]byte{{1, 2, 3}, {0, 0, 0, 0, 0, 0, 0, 7}} {
		if err := d.Pipe("in", []byte("k"), v, at); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, streamtest.Output(d, "out", serde.String, serde.Int64), kv[string, int64]{"k", 7})

	failing := start(t, config.Default("ops"), program)
	defer failing.Close()
	if err := failing.Pipe("in", []byte("k"), []byte{1}, at); err != nil {
		t.Fatal(err)
	}
	var de *serde.DecodeError
	if _, err := failing.ReadRaw("out"); !errors.As(err, &de) {
		t.Fatalf("ReadRaw: %v, want the record's *serde.DecodeError", err)
	}
}

// An empty value is kept as one in a timestamped store (its 8-byte timestamp alone) and read back
// as the old value when the table is regrouped.
func TestEmptyValueInATimestampedStore(t *testing.T) {
	d := run(t, func(b *Builder) {
		latest := Stream(b, "in", Consumed[string, string]{}).ToTable(Materialized[string, string]{Name: "latest"})
		GroupTableBy(latest, func(k, v string) (string, string) { return "v=" + v, k }).Count().ToStream().To("out", Produced[string, int64]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"k", ""}, kv[string, string]{"k", "x"})
	expect(t, streamtest.Output(d, "out", serde.String, serde.Int64), kv[string, int64]{"v=", 1}, kv[string, int64]{"v=", 0}, kv[string, int64]{"v=x", 1})
}

// A function that panics is the processor's error, handled by processing.exception.handler as
// Kafka Streams handles an exception thrown in a lambda: LogAndContinue skips the record,
// LogAndFail (the default) stops the application with a *PanicError.
func TestPanicIsAProcessingError(t *testing.T) {
	errBoom := errors.New("boom")
	program := func(b *Builder) {
		MapValues(Stream(b, "in", Consumed[string, string]{}), func(_, v string) string {
			if v == "boom" {
				panic(errBoom)
			}
			return v + "!"
		}).To("out", Produced[string, string]{})
	}
	cfg := config.Default("ops")
	cfg.Runtime.OnProcessingError = config.LogAndContinue
	d := start(t, cfg, program)
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", "x"}, kv[string, string]{"b", "boom"}, kv[string, string]{"c", "y"})
	expect(t, streamtest.Output(d, "out", serde.String, serde.String), kv[string, string]{"a", "x!"}, kv[string, string]{"c", "y!"})
	if err := d.Close(); err != nil {
		t.Fatalf("LogAndContinue: %v", err)
	}

	d = start(t, config.Default("ops"), program)
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"b", "boom"})
	err := d.Settle()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, errBoom) || !strings.Contains(string(pe.Stack), "TestPanicIsAProcessingError") {
		t.Fatalf("LogAndFail: %v, want a *PanicError wrapping boom with the panic's stack", err)
	}
}

// An operation added after Build does not change the built program: its processors write what the
// program built had.
func TestOperationsAfterBuild(t *testing.T) {
	b := NewBuilder()
	in := Stream(b, "in", Consumed[string, string]{})
	in.To("out", Produced[string, string]{})
	cfg := config.Default("ops")
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	MapValues(in, func(_, v string) string { return v + "!" }).To("out", Produced[string, string]{})
	in.Filter(func(string, string) bool { return false }).To("late", Produced[string, string]{})
	if _, _, err := b.Build(cfg); !errors.Is(err, ErrBuilt) {
		t.Fatalf("a second Build: %v, want ErrBuilt", err)
	}
	d, err := streamtest.New(cfg, topo, procs)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", "x"})
	expect(t, streamtest.Output(d, "out", serde.String, serde.String), kv[string, string]{"a", "x"})
}

// A []byte value read from a DSL store is a copy: changing it in place does not change the store's
// bytes (which the changelog write may still hold).
func TestStoredBytesAreCopied(t *testing.T) {
	sd := newStampedSerde[[]byte]("st", serde.Bytes)
	stored := []byte{0, 0, 0, 0, 0, 0, 0, 1, 'a', 'b'}
	v, err := sd.Decode(stored)
	if err != nil {
		t.Fatal(err)
	}
	v.v[0] = 'x'
	if string(stored[8:]) != "ab" {
		t.Fatalf("the stored bytes changed to %q", stored[8:])
	}
	if s, err := newStampedSerde[string]("st", serde.String).Decode(stored); err != nil || s.v != "ab" || s.at.UnixMilli() != 1 {
		t.Fatalf("a string value: %+v %v", s, err)
	}
}

// ticker forwards each record upper-cased, and from its Init schedules a stream-time punctuation
// that forwards a "tick" record.
type ticker struct{ inits int }

func (p *ticker) Init(c ProcessorContext[string, string]) error {
	p.inits++
	_, err := c.Schedule(10*time.Second, stream.StreamTime, func(c ProcessorContext[string, string], at time.Time) error {
		return c.Forward(Record[string, string]{Key: "tick", Value: fmt.Sprint(at.UnixMilli()), Timestamp: at})
	})
	return err
}

func (p *ticker) Process(c ProcessorContext[string, string], r Record[string, string]) error {
	r.Value = strings.ToUpper(r.Value)
	return c.Forward(r)
}

// Process's processor forwards records to the operations after it, from Process and from the
// punctuations its Init schedules (Kafka Streams' process with a forwarding processor); a
// processor given to ProcessValues cannot change the key.
func TestProcessForwards(t *testing.T) {
	p := &ticker{}
	d := run(t, func(b *Builder) {
		in := Stream(b, "in", Consumed[string, string]{})
		Process[string, string, string, string](in, p).To("out", Produced[string, string]{})
		// A value processor forwarding each record when the next comes: the record keeps its own
		// key and headers (Kafka Streams' FixedKeyRecord), a new record has no headers.
		var prev *Record[string, string]
		late := ProcessorFunc[string, string, string, string](func(c ProcessorContext[string, string], r Record[string, string]) error {
			defer func() { prev = &r }()
			if prev == nil {
				return nil
			}
			if err := c.Forward(*prev); err != nil {
				return err
			}
			return c.Forward(Record[string, string]{Key: prev.Key, Value: "new"})
		})
		ProcessValues[string, string, string](in, late).To("previous", Produced[string, string]{})
	})
	in := streamtest.Input(d, "in", serde.String, serde.String)
	if err := d.Pipe("in", []byte("a"), []byte("x"), time.UnixMilli(5000), kgo.RecordHeader{Key: "h", Value: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := in.Pipe("b", "y", time.UnixMilli(25000)); err != nil {
		t.Fatal(err)
	}
	// As Kafka Streams punctuates on stream time: after the record that moves it, with the stream
	// time as the punctuation's: the first record fires it, 25000 passes the next due time (20000).
	expect(t, streamtest.Output(d, "out", serde.String, serde.String),
		kv[string, string]{"a", "X"}, kv[string, string]{"tick", "5000"}, kv[string, string]{"b", "Y"}, kv[string, string]{"tick", "25000"})
	recs, err := d.ReadRaw("previous")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || string(recs[0].Key) != "a" || string(recs[0].Value) != "x" || len(recs[0].Headers) != 1 ||
		string(recs[1].Key) != "a" || string(recs[1].Value) != "new" || len(recs[1].Headers) != 0 {
		t.Fatalf("previous: %+v, want a=x with its header, then a=new without", recs)
	}
	if p.inits != 1 {
		t.Errorf("Init ran %d times, want once (one task)", p.inits)
	}
}

// panicking schedules a stream-time punctuation that panics.
type panicking struct{}

func (panicking) Init(c ProcessorContext[string, string]) error {
	_, err := c.Schedule(time.Second, stream.StreamTime, func(ProcessorContext[string, string], time.Time) error { panic("tick") })
	return err
}

func (panicking) Process(ProcessorContext[string, string], Record[string, string]) error { return nil }

// A punctuation that panics is the punctuation's error (a *PanicError), handled as Kafka Streams
// handles a punctuator's exception: the application stops under LogAndFail, the process goes on.
func TestPunctuationPanicIsAnError(t *testing.T) {
	d := start(t, config.Default("ops"), func(b *Builder) {
		Process[string, string, string, string](Stream(b, "in", Consumed[string, string]{}), panicking{}).To("out", Produced[string, string]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", "x"})
	// The punctuation fires in the round that processed the record, before its commit.
	err := d.Settle()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("the application's end: %v, want the punctuation's panic as its error", err)
	}
}

// Records without keys keep what a function computes from their values, zero or not: a grouping of
// keyless records by a number of their value counts bucket 0 too (Kafka Streams keeps whatever the
// function returns).
func TestKeylessRecordsKeepZeroResults(t *testing.T) {
	d := run(t, func(b *Builder) {
		in := Stream(b, "in", Consumed[string, string]{})
		GroupBy(in, func(_, v string) int64 { n, _ := strconv.Atoi(v); return int64(n % 10) }, Grouped[int64, string]{}).
			Count().ToStream().To("buckets", Produced[int64, int64]{})
	})
	for _, v := range []string{"10", "3"} {
		if err := d.Pipe("in", nil, []byte(v), time.UnixMilli(1000)); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, streamtest.Output(d, "buckets", serde.Int64, serde.Int64), kv[int64, int64]{0, 1}, kv[int64, int64]{3, 1})
}

// replication.factor reaches every internal topic the program derives (the changelogs and the
// repartition topic of a regrouping), as Kafka Streams sends it; the default leaves the broker's.
func TestBuildAppliesReplicationFactor(t *testing.T) {
	for _, rf := range []int16{-1, 3} {
		b := NewBuilder()
		users := Table(b, "in", Consumed[string, string]{})
		GroupTableBy(users, func(k, v string) (string, string) { return v, k }).Count()
		cfg := config.Default("app")
		cfg.ReplicationFactor = rf
		topo, _, err := b.Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, st := range topo.Subtopologies() {
			for _, ti := range slices.Concat(st.StateChangelogTopics, st.RepartitionSourceTopics) {
				n++
				if ti.ReplicationFactor != rf {
					t.Errorf("replication.factor=%d: %s has factor %d", rf, ti.Name, ti.ReplicationFactor)
				}
			}
		}
		if n < 3 {
			t.Fatalf("replication.factor=%d: %d internal topics, want the table's and the count's changelogs and the repartition topic", rf, n)
		}
	}
}

// expectProgramErrors builds each program and wants Build's *ProgramError to say its name.
func expectProgramErrors(t *testing.T, programs map[string]func(b *Builder)) {
	t.Helper()
	for name, program := range programs {
		t.Run(name, func(t *testing.T) {
			b := NewBuilder()
			program(b)
			_, _, err := b.Build(config.Default("ops"))
			var pe *ProgramError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), name) {
				t.Fatalf("Build: %v, want a *ProgramError saying %q", err, name)
			}
		})
	}
}
