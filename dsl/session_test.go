package dsl

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/streamtest"
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

// A session's updates carry no headers without the record cache: Kafka Streams' uncached session
// aggregation forwards new records, not the input's (with the cache, see below).
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

// burst forwards, for each input record, one record per field of its value ("<ms>:<header>"), at
// that time and with header h set to that header: several updates of a table within one process
// call, so within one commit of the record cache.
func burst(c ProcessorContext[string, string], r Record[string, string]) error {
	for _, f := range strings.Fields(r.Value) {
		ms, h, _ := strings.Cut(f, ":")
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return err
		}
		if err := c.Forward(Record[string, string]{Key: r.Key, Value: f, Timestamp: time.UnixMilli(n),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(h)}}}); err != nil {
			return err
		}
	}
	return nil
}

// sessionUpdate is an update of a session table read from its output or changelog: its session,
// its value (-1 or "": deleted), its timestamp and header h.
type sessionUpdate[V comparable] struct {
	key        string
	start, end int64
	v          V
	ts         int64
	h          string
}

func readSessions[V comparable](t *testing.T, d *streamtest.Driver, topic string, vs serde.Serde[V], deleted V) []sessionUpdate[V] {
	t.Helper()
	raws, err := d.ReadRaw(topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []sessionUpdate[V]
	for _, r := range raws {
		k, w, err := windowed.SplitSessionKey(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		v := deleted
		if r.Value != nil {
			if v, err = vs.Decode(r.Value); err != nil {
				t.Fatal(err)
			}
		}
		var h string
		for _, rh := range r.Headers {
			if rh.Key == "h" {
				h = string(rh.Value)
			}
		}
		got = append(got, sessionUpdate[V]{string(k), w.Start, w.End, v, r.Timestamp.UnixMilli(), h})
	}
	return got
}

// With the record cache, a session table writes at each commit the latest update of each session
// key, in the order of their last update (Kafka Streams' CachingSessionStore): a session created
// and merged away within one commit is neither written nor handed on; a find reads the cached
// sessions over the stored ones (a cached deletion hides a stored session, which so is not merged
// twice); an update is handed on with its session's end as its timestamp and, in the DEFAULT store
// format, the headers of the record that made it (none in the HEADERS format); the changelog record
// takes that record's time. The expected updates are worked out by hand from those rules.
func TestSessionCacheWritesEachSessionsLatestUpdate(t *testing.T) {
	for _, format := range []config.DSLStoreFormat{config.DSLStoreFormatDefault, config.DSLStoreFormatHeaders} {
		t.Run(string(format), func(t *testing.T) {
			cfg := config.Default("ops")
			cfg.Runtime.StateStoreCacheMaxBytes = config.DefaultStateStoreCacheMaxBytes
			cfg.Runtime.DSLStoreFormat = format
			d := start(t, cfg, func(b *Builder) {
				in := Process[string, string, string, string](Stream(b, "in", Consumed[string, string]{}), ProcessorFunc[string, string, string, string](burst))
				// A grace of a minute: no record here is late.
				SessionWindowedBy(in.GroupByKey(), windowed.OfInactivityGapAndGrace(10*time.Second, time.Minute)).
					Reduce(func(agg, v string) string { return agg + "+" + v }, Materialized[string, string]{Name: "s"}).
					ToStream().To("out", Produced[windowed.Key[string], string]{})
			})
			defer func() {
				if err := d.Close(); err != nil {
					t.Errorf("the application failed: %v", err)
				}
			}()
			commit := func(key, value string) {
				t.Helper()
				pipeRaw(t, d, "in", []byte(key), []byte(value), 0)
			}
			// One commit: a@1000 makes [1000,1000], a@2000 merges it away into [1000,2000]; only the
			// latter is written. b@20000 and b@0 are two sessions, both written, b's in the order of
			// their last update.
			commit("a", "1000:1 2000:2")
			commit("b", "20000:3 0:4")
			// Next commit: a@5000 merges the stored [1000,2000] into [1000,5000]; a@6000 then finds
			// the stored [1000,2000] deleted in the cache and [1000,5000] cached, and merges only the
			// latter into [1000,6000]: the cached [1000,5000] is deleted before it was ever written.
			commit("a", "5000:5 6000:6")
			// b@10000 bridges b's two sessions, merged in the order of their end.
			commit("b", "10000:7")
			// d@0, a session only the cache holds, and the stored d@20000 are bridged by d@10000 in
			// the order of their end (the cached one first); the cached one is deleted unwritten.
			commit("d", "20000:10")
			commit("d", "0:11 10000:12")
			// c@0, cached and written (clean), is not within the gap of c@100000.
			commit("c", "0:8")
			commit("c", "100000:9")
			hdr := func(h string) string {
				if format == config.DSLStoreFormatHeaders {
					return ""
				}
				return h
			}
			want := []sessionUpdate[string]{
				{"a", 1000, 2000, "1000:1+2000:2", 2000, hdr("2")},
				{"b", 20000, 20000, "20000:3", 20000, hdr("3")},
				{"b", 0, 0, "0:4", 0, hdr("4")},
				{"a", 1000, 2000, "", 2000, hdr("5")},
				{"a", 1000, 6000, "1000:1+2000:2+5000:5+6000:6", 6000, hdr("6")},
				{"b", 0, 0, "", 0, hdr("7")},
				{"b", 20000, 20000, "", 20000, hdr("7")},
				{"b", 0, 20000, "0:4+20000:3+10000:7", 20000, hdr("7")},
				{"d", 20000, 20000, "20000:10", 20000, hdr("10")},
				{"d", 20000, 20000, "", 20000, hdr("12")},
				{"d", 0, 20000, "0:11+20000:10+10000:12", 20000, hdr("12")},
				{"c", 0, 0, "0:8", 0, hdr("8")},
				{"c", 100000, 100000, "100000:9", 100000, hdr("9")},
			}
			if got := readSessions(t, d, "out", serde.String, ""); !slices.Equal(got, want) {
				t.Fatalf("updates\n got %v\nwant %v", got, want)
			}
			// The changelog: the same writes, each at the time of the record that made it.
			var log []sessionUpdate[string]
			for _, u := range readSessions(t, d, "ops-s-changelog", serde.String, "") {
				u.h = ""
				log = append(log, u)
			}
			wantLog := []sessionUpdate[string]{
				{"a", 1000, 2000, "1000:1+2000:2", 2000, ""},
				{"b", 20000, 20000, "20000:3", 20000, ""},
				{"b", 0, 0, "0:4", 0, ""},
				{"a", 1000, 2000, "", 5000, ""},
				{"a", 1000, 6000, "1000:1+2000:2+5000:5+6000:6", 6000, ""},
				{"b", 0, 0, "", 10000, ""},
				{"b", 20000, 20000, "", 10000, ""},
				{"b", 0, 20000, "0:4+20000:3+10000:7", 10000, ""},
				{"d", 20000, 20000, "20000:10", 20000, ""},
				{"d", 20000, 20000, "", 10000, ""},
				{"d", 0, 20000, "0:11+20000:10+10000:12", 10000, ""},
				{"c", 0, 0, "0:8", 0, ""},
				{"c", 100000, 100000, "100000:9", 100000, ""},
			}
			if !slices.Equal(log, wantLog) {
				t.Fatalf("changelog\n got %v\nwant %v", log, wantLog)
			}
		})
	}
}

// A cache's entries leave their group with the cache (written deletions, evictions), so that a
// find never reads an entry the cache no longer holds.
func TestCacheGroupsFollowTheEntries(t *testing.T) {
	tc := &tableCache[string, string]{group: func(key string) string { return key[:1] }}
	cs := &cached[string, string]{m: map[string]*entry[string, string]{}, groups: map[string][]*entry[string, string]{}, used: new(int64)}
	a1, a2, b1 := &entry[string, string]{key: "a1"}, &entry[string, string]{key: "a2"}, &entry[string, string]{key: "b1"}
	for _, e := range []*entry[string, string]{a1, a2, b1} {
		tc.add(cs, e)
		cs.lru.push(e)
	}
	tc.drop(cs, a1)
	if g := cs.groups["a"]; len(g) != 1 || g[0] != a2 || cs.m["a1"] != nil {
		t.Fatalf("after a1 left: group a %v, a1 in the map %v", g, cs.m["a1"] != nil)
	}
	tc.drop(cs, a2)
	if _, ok := cs.groups["a"]; ok || len(cs.groups["b"]) != 1 || len(cs.m) != 1 {
		t.Fatalf("after a2 left: groups %v, %d entries", cs.groups, len(cs.m))
	}
}

// A session aggregation that emits final results (Kafka Streams' SessionWindowedKStream with
// EmitStrategy.onWindowClose) hands nothing on as sessions change, and each session once when the
// stream time passes its end plus the gap and the grace: after each record with a key (a late one
// too), the sessions that ended since the last emit and before that close time, in order of end,
// then start, then key, each with its count, its end as its timestamp and the headers of the record
// that closed it. The expected outputs are worked out by hand from those rules (gap 5 s, grace 2 s:
// a session closes 7 s after its end).
func TestSessionEmitFinal(t *testing.T) {
	d := run(t, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Emit(OnWindowClose).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	h := func(v string) []kgo.RecordHeader { return []kgo.RecordHeader{{Key: "h", Value: []byte(v)}} }
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 1000)
	pipeRaw(t, d, "in", []byte("b"), []byte("x"), 1500)
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 3000) // a's session grows to [1 s, 3 s]
	pipeRaw(t, d, "in", []byte("c"), []byte("x"), 3000)
	if got := readSessions(t, d, "out", serde.Int64, -1); len(got) != 0 {
		t.Fatalf("handed on before any session closed: %v", got)
	}
	pipeRaw(t, d, "in", []byte("b"), []byte("x"), 9000, h("2")...)  // closes ends before 2 s: b's first
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 12000)            // closes ends before 5 s: a's and c's, both ending at 3 s
	pipeRaw(t, d, "in", nil, []byte("x"), 30000)                    // no key: dropped, looks for nothing
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 2500)             // too late (its session ends before 5 s): dropped
	pipeRaw(t, d, "in", []byte("b"), []byte("x"), 20000, h("3")...) // closes ends before 13 s: b's and a's second
	want := []sessionUpdate[int64]{
		{"b", 1500, 1500, 1, 1500, "2"},
		{"a", 1000, 3000, 2, 3000, ""}, {"c", 3000, 3000, 1, 3000, ""},
		{"b", 9000, 9000, 1, 9000, "3"}, {"a", 12000, 12000, 1, 12000, "3"},
	}
	if got := readSessions(t, d, "out", serde.Int64, -1); !slices.Equal(got, want) {
		t.Fatalf("emitted\n got %v\nwant %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 2 {
		t.Fatalf("dropped-records-total %d, want 2 (the record without a key and the late one)", n)
	}
}

// The look for closed sessions is throttled by wall-clock time (Kafka Streams'
// __emit.interval.ms.kstreams.windowed.aggregation__), and a late record looks too: once the
// interval passed, the late record that comes next emits what closed while the looks were held.
func TestSessionEmitFinalLateRecordLooks(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.WindowedEmitInterval = time.Hour
	d := start(t, cfg, func(b *Builder) {
		g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
		SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Emit(OnWindowClose).Count().
			ToStream().To("out", Produced[windowed.Key[string], int64]{})
	})
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	}()
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 1000)  // looks (nothing closed yet); the next look in an hour
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 20000) // [1 s] closed by 13 s, but the look is held
	if got := readSessions(t, d, "out", serde.Int64, -1); len(got) != 0 {
		t.Fatalf("emitted within the interval: %v", got)
	}
	if err := d.AdvanceWallClock(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	pipeRaw(t, d, "in", []byte("a"), []byte("x"), 5000, kgo.RecordHeader{Key: "h", Value: []byte("late")}) // too late: dropped, but looks
	want := []sessionUpdate[int64]{{"a", 1000, 1000, 1, 1000, "late"}}
	if got := readSessions(t, d, "out", serde.Int64, -1); !slices.Equal(got, want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
}
