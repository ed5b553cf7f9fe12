package dsl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countWords counts, per key, the words of each record's value (no repartition: the key stays), and
// writes the counts to "counts" and the counts above 2 to "many".
func countWords(m Materialized[string, int64]) func(b *Builder) {
	return func(b *Builder) {
		words := FlatMapValues(Stream(b, "in", Consumed[string, string]{}), func(_, v string) []string { return strings.Fields(v) })
		counts := words.GroupByKey().Count(m)
		counts.ToStream().To("counts", Produced[string, int64]{})
		counts.Filter(func(_ string, n int64) bool { return n > 2 }).ToStream().To("many", Produced[string, int64]{})
	}
}

// withCache runs program with the record cache at size bytes (statestore.cache.max.bytes), under
// guarantee.
func withCache(t *testing.T, size int64, guarantee config.Guarantee, program func(b *Builder)) *streamtest.Driver {
	t.Helper()
	cfg := config.Default("ops")
	cfg.Runtime.StateStoreCacheMaxBytes = size
	cfg.Runtime.Guarantee = guarantee
	d := start(t, cfg, program)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	})
	return d
}

// With the record cache, the updates of a key between two commits reach the store's changelog and
// the operations below as one, the latest (Kafka Streams' cache): a record of three words counts
// its key three times and writes 3 once; a filter below sees the old value the store had.
func TestRecordCacheWritesTheLatestUpdate(t *testing.T) {
	for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) {
			d := withCache(t, config.DefaultStateStoreCacheMaxBytes, g, countWords(Materialized[string, int64]{Name: "n"}))
			in := streamtest.Input(d, "in", serde.String, serde.String)
			pipe(t, in, kv[string, string]{"a", "x x x"})
			if err := d.Settle(); err != nil { // a commit: the cache is flushed
				t.Fatal(err)
			}
			pipe(t, in, kv[string, string]{"b", "y"}, kv[string, string]{"a", "z"})
			counts := streamtest.Output(d, "counts", serde.String, serde.Int64)
			recs, err := counts.Read()
			if err != nil {
				t.Fatal(err)
			}
			// The first record's 1 and 2 of a are not written; b and a's second record may share a
			// commit or not, and write the same either way.
			var got []kv[string, int64]
			for _, r := range recs {
				got = append(got, kv[string, int64]{r.Key, r.Value})
			}
			if len(got) != 3 || got[0] != (kv[string, int64]{"a", 3}) || !containsAll(got[1:], kv[string, int64]{"b", 1}, kv[string, int64]{"a", 4}) {
				t.Fatalf("counts: %v, want a=3, then b=1 and a=4", got)
			}
			expect(t, streamtest.Output(d, "many", serde.String, serde.Int64), kv[string, int64]{"a", 3}, kv[string, int64]{"a", 4})
			changelog, err := d.ReadRaw("ops-n-changelog")
			if err != nil {
				t.Fatal(err)
			}
			if len(changelog) != 3 || string(changelog[0].Key) != "a" {
				t.Fatalf("the changelog holds %d records, want 3 (a=3, b=1, a=4)", len(changelog))
			}
		})
	}
}

func containsAll[T comparable](s []T, want ...T) bool {
	for _, w := range want {
		found := false
		for _, x := range s {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}

// A cache smaller than one update writes each update through as it comes (evicted at once), and a
// store whose Materialized disables caching writes each update too.
func TestRecordCacheEvictsAndCanBeDisabled(t *testing.T) {
	for name, tc := range map[string]struct {
		size int64
		m    Materialized[string, int64]
	}{
		"a cache of 1 byte":  {1, Materialized[string, int64]{}},
		"caching disabled":   {config.DefaultStateStoreCacheMaxBytes, Materialized[string, int64]{CachingDisabled: true}},
		"the cache off (-1)": {-1, Materialized[string, int64]{}},
	} {
		t.Run(name, func(t *testing.T) {
			d := withCache(t, tc.size, config.AtLeastOnce, countWords(tc.m))
			pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", "x x x"})
			expect(t, streamtest.Output(d, "counts", serde.String, serde.Int64), kv[string, int64]{"a", 1}, kv[string, int64]{"a", 2}, kv[string, int64]{"a", 3})
			expect(t, streamtest.Output(d, "many", serde.String, serde.Int64), kv[string, int64]{"a", 3})
		})
	}
}

// A table's cached updates reach a regrouping with the store's old values: a key moved twice
// between commits is taken out of its first group only.
func TestRecordCacheTableAggregation(t *testing.T) {
	d := withCache(t, config.DefaultStateStoreCacheMaxBytes, config.AtLeastOnce, func(b *Builder) {
		// Each record's value lists the regions a user moved through; the table keeps the last.
		last := MapValues(Stream(b, "in", Consumed[string, string]{}), func(_, v string) string { f := strings.Fields(v); return f[len(f)-1] })
		moves := FlatMapValues(Stream(b, "moves", Consumed[string, string]{}), func(_, v string) []string { return strings.Fields(v) })
		users := last.Merge(moves).GroupByKey().Reduce(func(_, v string) string { return v }, Materialized[string, string]{Name: "users"})
		GroupTableBy(users, func(u, r string) (string, string) { return r, u }).Count().ToStream().To("per-region", Produced[string, int64]{})
	})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"u1", "north"})
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
	pipe(t, streamtest.Input(d, "moves", serde.String, serde.String), kv[string, string]{"u1", "south east west"})
	recs, err := streamtest.Output(d, "per-region", serde.String, serde.Int64).Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Key)
	}
	// north=1, then u1's one update (north → west): north=0, west=1. Without the cache south and
	// east would be counted and taken out again.
	if strings.Join(got, " ") != "north north west" || recs[1].Value != 0 || recs[2].Value != 1 {
		t.Fatalf("per-region: %+v, want north=1, north=0, west=1", recs)
	}
}

// FuzzStampedValue: any stored bytes decode to a timestamped value or an error naming the store,
// never a panic; what decodes encodes back to the same bytes (the stored form of Kafka Streams'
// ValueAndTimestamp: 8 bytes of big-endian milliseconds, then the value), for a value serde that
// fails too.
func FuzzStampedValue(f *testing.F) {
	for _, s := range []string{"", "\x00\x00\x00\x00\x00\x00\x03\xe8", "\x00\x00\x00\x00\x00\x00\x03\xe8\x00\x00\x00\x00\x00\x00\x00\x07", "short"} {
		f.Add([]byte(s))
	}
	long := newStampedSerde[int64]("st", serde.Int64)
	raw := newStampedSerde[[]byte]("st", serde.Bytes)
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := raw.Decode(b); err == nil {
			again, err := raw.Encode(v)
			if err != nil || string(again) != string(b) {
				t.Fatalf("%q decodes to %+v, which encodes to %q (%v)", b, v, again, err)
			}
		} else if len(b) >= 8 || !strings.Contains(err.Error(), "store st") {
			t.Fatalf("%q: %v", b, err)
		}
		if v, err := long.Decode(b); err == nil {
			again, _ := long.Encode(v)
			if string(again) != string(b) {
				t.Fatalf("%q decodes to %+v, which encodes to %q", b, v, again)
			}
		} else if !strings.Contains(err.Error(), "store st") {
			t.Fatalf("%q: %v does not name the store", b, err)
		}
	})
}

// A cached table's deletion of a key the store never had writes nothing (Kafka Streams' cache
// flush skips it), where the uncached table hands the deletion on; a key serde that cannot append
// (decimal) works as well.
func TestRecordCacheDeletionOfAnAbsentKey(t *testing.T) {
	for _, tc := range []struct {
		size int64
		want []string
	}{
		{config.DefaultStateStoreCacheMaxBytes, []string{"1=a", "1=null"}},
		{-1, []string{"1=a", "2=null", "1=null"}},
	} {
		d := withCache(t, tc.size, config.AtLeastOnce, func(b *Builder) {
			Table(b, "in", Consumed[int64, string]{Key: decimal{}}, Materialized[int64, string]{Name: "t"}).
				ToStream().To("out", Produced[int64, string]{Key: decimal{}})
		})
		for _, r := range []struct {
			k string
			v []byte
		}{{"1", []byte("a")}, {"2", nil}, {"1", nil}} {
			if err := d.Pipe("in", []byte(r.k), r.v, time.UnixMilli(1000)); err != nil {
				t.Fatal(err)
			}
			if err := d.Settle(); err != nil {
				t.Fatal(err)
			}
		}
		recs, err := streamtest.Output[int64, string](d, "out", decimal{}, serde.String).Read()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			if r.NullValue {
				got = append(got, fmt.Sprintf("%d=null", r.Key))
			} else {
				got = append(got, fmt.Sprintf("%d=%s", r.Key, r.Value))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("cache %d: %v, want %v", tc.size, got, tc.want)
		}
		changelog, err := d.ReadRaw("ops-t-changelog")
		if err != nil {
			t.Fatal(err)
		}
		if len(changelog) != len(tc.want) {
			t.Errorf("cache %d: %d changelog records, want %d", tc.size, len(changelog), len(tc.want))
		}
	}
}

// A record's headers go with it to the outputs, through a repartition and an aggregation, as Kafka
// Streams' sinks write them; with the cache on, a key's written update carries the headers of its
// latest record.
func TestHeadersGoWithTheRecords(t *testing.T) {
	for _, size := range []int64{-1, config.DefaultStateStoreCacheMaxBytes} {
		d := withCache(t, size, config.AtLeastOnce, func(b *Builder) {
			in := Stream(b, "in", Consumed[string, string]{})
			MapValues(in, func(_, v string) string { return v + "!" }).To("mapped", Produced[string, string]{})
			GroupBy(in, func(_, v string) string { return v }).Count().ToStream().To("counts", Produced[string, int64]{})
		})
		h := func(v string) kgo.RecordHeader { return kgo.RecordHeader{Key: "h", Value: []byte(v)} }
		// One record at a time: with the cache, each count is written at the commit after its record.
		for i, r := range []string{"x", "x"} {
			if err := d.Pipe("in", []byte("k"), []byte(r), time.UnixMilli(int64(1000+i)), h(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
			if err := d.Settle(); err != nil {
				t.Fatal(err)
			}
		}
		for _, topic := range []string{"mapped", "counts"} {
			recs, err := d.ReadRaw(topic)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				for _, hd := range r.Headers {
					got = append(got, hd.Key+"="+string(hd.Value))
				}
			}
			if strings.Join(got, " ") != "h=0 h=1" {
				t.Errorf("cache %d, %s: headers %v, want h=0 then h=1", size, topic, got)
			}
		}
	}
}

// processed waits until the application processed n input records (its metrics), without a
// commit.
func processed(t *testing.T, d *streamtest.Driver, n uint64) {
	t.Helper()
	deadline := time.Now().Add(streamtest.Wait)
	for d.App().Metrics().Processed < n {
		if time.Now().After(deadline) {
			t.Fatalf("processed %d records, want %d", d.App().Metrics().Processed, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// cachedNoCommit runs countWords(m) with a cache of size bytes and no periodic commit within the
// test (commit.interval.ms one hour): what is written comes from evictions and the clean stop.
func cachedNoCommit(t *testing.T, size int64, m Materialized[string, int64]) *streamtest.Driver {
	t.Helper()
	cfg := config.Default("ops")
	cfg.Runtime.StateStoreCacheMaxBytes = size
	cfg.Runtime.CommitInterval = time.Hour
	d := start(t, cfg, countWords(m))
	t.Cleanup(func() { d.Close() })
	return d
}

// readCounts reads topic's counts as key=n.
func readCounts(t *testing.T, d *streamtest.Driver, topic string) []string {
	t.Helper()
	recs, err := streamtest.Output(d, topic, serde.String, serde.Int64).Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s=%d", r.Key, r.Value))
	}
	return got
}

// A clean stop writes what the cache holds before its revocation commits the positions (Kafka
// Streams flushes the revoked tasks' caches in their commit): nothing processed is lost.
func TestRecordCacheWrittenAtTheCleanStop(t *testing.T) {
	d := cachedNoCommit(t, config.DefaultStateStoreCacheMaxBytes, Materialized[string, int64]{Name: "n"})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", "x x x"})
	processed(t, d, 1)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := readCounts(t, d, "counts"); strings.Join(got, " ") != "a=3" {
		t.Fatalf("counts after the stop: %v, want a=3", got)
	}
	if changelog, err := d.ReadRaw("ops-n-changelog"); err != nil || len(changelog) != 1 {
		t.Fatalf("the changelog holds %d records (%v), want 1", len(changelog), err)
	}
}

// When the thread's share of the cache is exceeded, the least recently used entry of the store is
// evicted, and it and every other dirty entry of the store are written (Kafka Streams'
// NamedCache.evict): with room for two counts, a, b, c, b write a=1, b=1, c=1 at c's eviction of
// a, and b=2 at the stop.
func TestRecordCacheEvictionWritesTheStoresDirtyEntries(t *testing.T) {
	// A count's entry: its key (1 byte), its stored value (8 bytes of timestamp, 8 of count) and
	// entryOverhead; two fit, three do not.
	size := 2 * (1 + 16 + entryOverhead)
	d := cachedNoCommit(t, int64(size), Materialized[string, int64]{})
	in := streamtest.Input(d, "in", serde.String, serde.String)
	pipe(t, in, kv[string, string]{"a", "x"}, kv[string, string]{"b", "x"}, kv[string, string]{"c", "x"}, kv[string, string]{"b", "x"})
	processed(t, d, 4)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := readCounts(t, d, "counts"); strings.Join(got, " ") != "a=1 b=1 c=1 b=2" {
		t.Fatalf("counts: %v, want a=1 b=1 c=1 b=2", got)
	}
}

// A function below a cached table that fails while the cache is written (at a commit) stops the
// application under LogAndFail, as Kafka Streams fails the thread, under both guarantees: it is not
// retried for ever nor skipped.
func TestRecordCacheFailureBelowAFlushStops(t *testing.T) {
	for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) {
			cfg := config.Default("ops")
			cfg.Runtime.StateStoreCacheMaxBytes = config.DefaultStateStoreCacheMaxBytes
			cfg.Runtime.Guarantee = g
			d := start(t, cfg, badKeyPanics)
			defer d.Close()
			pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"bad", "x"})
			err := d.Settle()
			var pe *PanicError
			var proc *stream.ProcessingError
			if !errors.As(err, &pe) || !errors.As(err, &proc) || !proc.Flush || !strings.Contains(err.Error(), "held back for a commit") {
				t.Fatalf("Settle: %v, want the application stopped by the panic, as a flush's processing error", err)
			}
		})
	}
}

// With dsl.store.format=HEADERS (Kafka Streams 4.4's headers-aware stores) a store's changelog
// writes an update without headers (the DSL stores values with empty headers) and a deletion with
// the deleting record's; with DEFAULT no record carries any, as Kafka Streams' timestamped stores
// write them.
func TestHeadersStoreFormat(t *testing.T) {
	for _, f := range []config.DSLStoreFormat{config.DSLStoreFormatDefault, config.DSLStoreFormatHeaders} {
		cfg := config.Default("ops")
		cfg.Runtime.DSLStoreFormat = f
		d := start(t, cfg, func(b *Builder) {
			Table(b, "in", Consumed[string, string]{}, Materialized[string, string]{Name: "t"})
		})
		h := func(v string) kgo.RecordHeader { return kgo.RecordHeader{Key: "h", Value: []byte(v)} }
		if err := d.Pipe("in", []byte("k"), []byte("x"), time.UnixMilli(1000), h("1")); err != nil {
			t.Fatal(err)
		}
		if err := d.Pipe("in", []byte("k"), nil, time.UnixMilli(2000), h("2")); err != nil {
			t.Fatal(err)
		}
		changelog, err := d.ReadRaw("ops-t-changelog")
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		if len(changelog) != 2 || changelog[0].Timestamp.UnixMilli() != 1000 || changelog[1].Value != nil {
			t.Fatalf("%s: changelog %+v, want x at 1000, then a deletion", f, changelog)
		}
		update, deletion := changelog[0].Headers, changelog[1].Headers
		if len(update) != 0 || f == config.DSLStoreFormatDefault && len(deletion) != 0 ||
			f == config.DSLStoreFormatHeaders && (len(deletion) != 1 || string(deletion[0].Value) != "2") {
			t.Errorf("%s: the changelog's headers: update %v, deletion %v", f, update, deletion)
		}
	}
}

// Each stream thread gets its share of statestore.cache.max.bytes (Kafka Streams' cache size per
// thread), and the handler in force for failures below a written update.
func TestRecordCacheSharesPerThread(t *testing.T) {
	var rc recordCache
	cfg := config.Default("ops")
	cfg.Runtime.StateStoreCacheMaxBytes, cfg.Runtime.NumStreamThreads = 1000, 4
	cfg.Runtime.OnProcessingError = config.LogAndContinue
	rc.configure(cfg)
	if rc.perThread.Load() != 250 || !rc.on() || config.ErrorPolicy(rc.policy.Load()) != config.LogAndContinue {
		t.Fatalf("per thread %d, on %v, policy %d", rc.perThread.Load(), rc.on(), rc.policy.Load())
	}
	cfg.Runtime.StateStoreCacheMaxBytes = -1
	if rc.configure(cfg); rc.on() {
		t.Fatal("the cache is on at statestore.cache.max.bytes=0")
	}
	if a, b := rc.usedBy(1), rc.usedBy(2); a == b || rc.usedBy(1) != a {
		t.Fatal("threads share a byte count, or a thread's count changes")
	}
}

// With room for two counts, a, b, a, a evict nothing: at the stop b=1 and a=3 are written, once
// each (the updates of a key in the cache replace each other without growing it).
func TestRecordCacheUpdatesInPlace(t *testing.T) {
	d := cachedNoCommit(t, int64(2*(1+16+entryOverhead)), Materialized[string, int64]{})
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String),
		kv[string, string]{"a", "x"}, kv[string, string]{"b", "x"}, kv[string, string]{"a", "x"}, kv[string, string]{"a", "x"})
	processed(t, d, 4)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := readCounts(t, d, "counts"); strings.Join(got, " ") != "b=1 a=3" {
		t.Fatalf("counts: %v, want b=1 a=3", got)
	}
}

// Under processing.exception.handler=LogAndContinue a function below a cached table that fails
// while an update is written skips that update; the others are written and the application goes
// on.
func TestRecordCacheFailureBelowAFlushContinues(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.StateStoreCacheMaxBytes = config.DefaultStateStoreCacheMaxBytes
	cfg.Runtime.OnProcessingError = config.LogAndContinue
	d := start(t, cfg, badKeyPanics)
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	})
	in := streamtest.Input(d, "in", serde.String, serde.String)
	pipe(t, in, kv[string, string]{"bad", "x"}, kv[string, string]{"good", "x"})
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
	pipe(t, in, kv[string, string]{"good", "x"})
	if got := readCounts(t, d, "out"); strings.Join(got, " ") != "good=1 good=2" {
		t.Fatalf("out: %v, want good=1 then good=2", got)
	}
}

// An eviction that writes the store's other dirty entries fails with the first that fails below,
// as the record whose write made the eviction (processing.exception.handler=LogAndFail): with room
// for two counts, a, bad, c: c evicts a, which writes a and then bad, whose filter panics.
func TestRecordCacheFailureDuringAnEviction(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.StateStoreCacheMaxBytes = int64(2*(16+entryOverhead) + 1 + 3)
	cfg.Runtime.CommitInterval = time.Hour
	d := start(t, cfg, badKeyPanics)
	defer d.Close()
	pipe(t, streamtest.Input(d, "in", serde.String, serde.String), kv[string, string]{"a", "x"}, kv[string, string]{"bad", "x"}, kv[string, string]{"c", "x"})
	err := d.Settle() // the application's end: no commit comes before it
	var proc *stream.ProcessingError
	if !errors.As(err, &proc) || proc.Flush || proc.Topic != "in" || proc.Offset != 2 {
		t.Fatalf("the application's end: %v, want the processing error of in@2 (c, whose eviction wrote bad)", err)
	}
}

// badKeyPanics counts "in" per key, cached, and writes the counts to "out" through a filter that
// panics on the key "bad".
func badKeyPanics(b *Builder) {
	Stream(b, "in", Consumed[string, string]{}).GroupByKey().Count().
		Filter(func(k string, _ int64) bool {
			if k == "bad" {
				panic("bad key")
			}
			return true
		}).ToStream().To("out", Produced[string, int64]{})
}
