package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Stream-table joins, through the test driver. The expected outputs follow Kafka Streams'
// documented semantics: only stream records produce results, each joined with the table's value
// for its key at the time it is processed; an inner join drops records without a table value, a
// left join keeps them; records with a null value are dropped, records with a null key by the
// inner join only.

// rawRec is one record written to a topic, as bytes (nil: null) and milliseconds.
type rawRec struct {
	k, v string
	null bool // the value is null
	ts   int64
}

func readRaw(t *testing.T, d *streamtest.Driver, topic string) []rawRec {
	t.Helper()
	raws, err := d.ReadRaw(topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []rawRec
	for _, r := range raws {
		got = append(got, rawRec{k: string(r.Key), v: string(r.Value), null: r.Value == nil, ts: r.Timestamp.UnixMilli()})
	}
	return got
}

// pipeRaw pipes one record (with headers, if given) and waits until it is processed.
func pipeRaw(t *testing.T, d *streamtest.Driver, topic string, key, value []byte, ts int64, headers ...kgo.RecordHeader) {
	t.Helper()
	if err := d.Pipe(topic, key, value, time.UnixMilli(ts), headers...); err != nil {
		t.Fatal(err)
	}
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
}

func TestStreamTableJoin(t *testing.T) {
	d := run(t, func(b *Builder) {
		orders := Stream(b, "orders", Consumed[string, int64]{Value: serde.Int64})
		names := Table(b, "customers", Consumed[string, string]{})
		Join(orders, names, func(k string, amount int64, name string) string {
			return k + " " + name + " " + strings.Repeat("$", int(amount))
		}).To("joined", Produced[string, string]{})
		LeftJoin(orders, names, func(_ string, amount int64, name string, found bool) string {
			if !found {
				return "unknown"
			}
			return name
		}).To("left", Produced[string, string]{})
	})
	i64 := func(n int64) []byte { b, _ := serde.Int64.Encode(n); return b }
	pipeRaw(t, d, "orders", []byte("c1"), i64(1), 100) // no customer yet: the inner join drops it
	pipeRaw(t, d, "customers", []byte("c1"), []byte("Ann"), 200)
	pipeRaw(t, d, "orders", []byte("c1"), i64(2), 150) // earlier than the table's record: still joined
	pipeRaw(t, d, "customers", []byte("c1"), []byte("Anna"), 300)
	pipeRaw(t, d, "customers", []byte("c2"), []byte("Bo"), 310) // a table update alone makes no result
	pipeRaw(t, d, "orders", []byte("c1"), i64(3), 400)
	pipeRaw(t, d, "orders", []byte("c1"), nil, 410) // a null value: dropped by both
	pipeRaw(t, d, "orders", nil, i64(1), 420)       // a null key: the left join keeps it
	pipeRaw(t, d, "customers", []byte("c1"), nil, 500)
	pipeRaw(t, d, "orders", []byte("c1"), i64(1), 600) // deleted from the table
	pipeRaw(t, d, "orders", []byte("c2"), i64(1), 700)

	want := []rawRec{{k: "c1", v: "c1 Ann $$", ts: 150}, {k: "c1", v: "c1 Anna $$$", ts: 400}, {k: "c2", v: "c2 Bo $", ts: 700}}
	if got := readRaw(t, d, "joined"); !slices.Equal(got, want) {
		t.Errorf("inner join\n got %v\nwant %v", got, want)
	}
	want = []rawRec{{k: "c1", v: "unknown", ts: 100}, {k: "c1", v: "Ann", ts: 150}, {k: "c1", v: "Anna", ts: 400},
		{k: "", v: "unknown", ts: 420}, {k: "c1", v: "unknown", ts: 600}, {k: "c2", v: "Bo", ts: 700}}
	got := readRaw(t, d, "left")
	if !slices.Equal(got, want) {
		t.Errorf("left join\n got %v\nwant %v", got, want)
	}
	raws, _ := d.ReadRaw("left")
	if len(raws) > 3 && raws[3].Key != nil {
		t.Errorf("the left join's record without a key was written with the key %q", raws[3].Key)
	}
	// Dropped: the inner join's record with a null key, and the null value by both joins.
	if n := d.App().Metrics().Dropped; n != 3 {
		t.Errorf("dropped %d records, want 3", n)
	}
}

// A join reads the table through the record cache: an update the cache still holds, not yet in
// the store, is what the join sees. The stream's records update the table first (its first child)
// and are joined with it next, in one record's processing, long before any flush.
func TestStreamTableJoinReadsTheCachedTable(t *testing.T) {
	d := run(t, func(b *Builder) {
		in := Stream(b, "in", Consumed[string, string]{})
		latest := in.ToTable(Materialized[string, string]{Name: "latest"})
		Join(MapValues(in, func(_, v string) string { return v + "'" }), latest, func(_, v, l string) string { return v + "=" + l }).
			To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "in", []byte("u"), []byte("a"), 1)
	pipeRaw(t, d, "in", []byte("u"), []byte("b"), 2)
	want := []rawRec{{k: "u", v: "a'=a", ts: 1}, {k: "u", v: "b'=b", ts: 2}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A filtered and mapped table without a store is read through its parent's store: a key the filter
// rejects is not in it, and the mapping applies to what the join sees.
func TestStreamTableJoinThroughDerivedTables(t *testing.T) {
	d := run(t, func(b *Builder) {
		users := Table(b, "users", Consumed[string, string]{})
		active := MapTableValues(users.FilterNot(func(_, v string) bool { return strings.HasPrefix(v, "-") }),
			func(_, v string) int { return len(v) })
		LeftJoin(Stream(b, "clicks", Consumed[string, string]{}), active, func(_, page string, n int, found bool) *string {
			if !found {
				return nil // a nil result is a null value
			}
			s := page + strings.Repeat("!", n)
			return &s
		}).To("out", Produced[string, *string]{Value: ptrSerde{}})
	})
	pipeRaw(t, d, "users", []byte("a"), []byte("xy"), 1)
	pipeRaw(t, d, "users", []byte("b"), []byte("-gone"), 2)
	pipeRaw(t, d, "clicks", []byte("a"), []byte("p"), 3)
	pipeRaw(t, d, "clicks", []byte("b"), []byte("q"), 4)
	pipeRaw(t, d, "clicks", []byte("c"), []byte("r"), 5)
	want := []rawRec{{k: "a", v: "p!!", ts: 3}, {k: "b", null: true, ts: 4}, {k: "c", null: true, ts: 5}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// ptrSerde writes a *string as its text (nil never reaches it: a nil result is a null value).
type ptrSerde struct{}

func (ptrSerde) Encode(s *string) ([]byte, error) { return []byte(*s), nil }
func (ptrSerde) Decode(b []byte) (*string, error) { s := string(b); return &s, nil }

// After a key change the stream is repartitioned before the join; records without a key reach a
// left join through the repartition, and a grouping's repartition still drops them.
func TestStreamTableJoinAfterAKeyChange(t *testing.T) {
	d := run(t, func(b *Builder) {
		users := Table(b, "users", Consumed[string, string]{})
		byUser := SelectKey(Stream(b, "clicks", Consumed[string, string]{}), func(_, v string) string { return v })
		LeftJoin(byUser, users, func(k, v, u string, found bool) string { return k + "=" + u }).To("out", Produced[string, string]{})
		byPage := SelectKey(Stream(b, "views", Consumed[string, string]{}), func(_, v string) string { return v })
		byPage.GroupByKey().Count().ToStream().To("counts", Produced[string, int64]{})
	})
	pipeRaw(t, d, "users", []byte("ann"), []byte("Ann"), 1)
	pipeRaw(t, d, "clicks", []byte("x"), []byte("ann"), 2)
	pipeRaw(t, d, "clicks", []byte("y"), nil, 3) // its new key is null: kept for the left join, and dropped there (null value)
	pipeRaw(t, d, "views", []byte("p"), nil, 4)  // its new key is null: the grouping's repartition drops it
	pipeRaw(t, d, "views", []byte("q"), []byte("p"), 5)
	if got, want := readRaw(t, d, "out"), []rawRec{{k: "ann", v: "ann=Ann", ts: 2}}; !slices.Equal(got, want) {
		t.Errorf("join: got %v, want %v", got, want)
	}
	if got := readRaw(t, d, "counts"); len(got) != 1 || got[0].k != "p" {
		t.Errorf("counts: got %v, want one count of p", got)
	}
	reps := map[string]int{}
	for _, topic := range []string{"ops-KSTREAM-KEY-SELECT-0000000004-repartition", "ops-KSTREAM-AGGREGATE-STATE-STORE-0000000012-repartition"} {
		raws, err := d.ReadRaw(topic)
		if err != nil {
			t.Fatal(err)
		}
		reps[topic] = len(raws)
	}
	// The join's repartition carries the record whose new key is null; the grouping's does not.
	if want := map[string]int{"ops-KSTREAM-KEY-SELECT-0000000004-repartition": 2, "ops-KSTREAM-AGGREGATE-STATE-STORE-0000000012-repartition": 1}; !mapsEqual(reps, want) {
		t.Errorf("repartition topics hold %v records, want %v", reps, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A stream joined twice without names after a key change writes one repartition topic, which both
// joins read.
func TestTwoJoinsOfOneRekeyedStreamShareTheRepartition(t *testing.T) {
	b := NewBuilder()
	users := Table(b, "users", Consumed[string, string]{})
	byUser := SelectKey(Stream(b, "clicks", Consumed[string, string]{}), func(_, v string) string { return v })
	Join(byUser, users, func(_, v, u string) string { return u }).To("a", Produced[string, string]{})
	LeftJoin(byUser, users, func(_, v, u string, _ bool) string { return u }).To("b", Produced[string, string]{})
	topo, _, err := b.Build(config.Default("ops"))
	if err != nil {
		t.Fatal(err)
	}
	var sinks []string
	for _, s := range topo.Subtopologies() {
		sinks = append(sinks, s.RepartitionSinkTopics...)
	}
	if want := []string{"ops-KSTREAM-KEY-SELECT-0000000004-repartition"}; !slices.Equal(sinks, want) {
		t.Fatalf("repartition sinks %v, want %v", sinks, want)
	}
}

func TestStreamTableJoinProgramErrors(t *testing.T) {
	other := NewBuilder()
	foreign := Table(other, "t", Consumed[string, string]{})
	expectProgramErrors(t, map[string]func(b *Builder){
		"same Builder": func(b *Builder) { // a table of another builder
			Join(Stream(b, "in", Consumed[string, string]{}), foreign, func(_, v, u string) string { return v }).To("out", Produced[string, string]{})
		},
		"windowed table": func(b *Builder) {
			g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
			counts := WindowedBy(g, windowed.OfSizeWithNoGrace(time.Second)).Count()
			keys := Map(Stream(b, "in2", Consumed[string, string]{}), func(k, v string) (windowed.Key[string], string) {
				return windowed.Key[string]{Key: k}, v
			})
			Join(keys, counts, func(_ windowed.Key[string], v string, n int64) string { return v }).To("out", Produced[windowed.Key[string], string]{})
		},
		"Joined serdes": func(b *Builder) { // a repartition without serdes
			rekeyed := Map(Stream(b, "in", Consumed[string, string]{}), func(k, v string) (struct{ A int }, string) { return struct{ A int }{}, v })
			users := Table(b, "users", Consumed[struct{ A int }, string]{Key: serde.JSON[struct{ A int }]()})
			Join(rekeyed, users, func(_ struct{ A int }, v, u string) string { return v }).To("out", Produced[struct{ A int }, string]{Key: serde.JSON[struct{ A int }]()})
		},
	})
}

// Table-table joins, from Kafka Streams' documented semantics (the KTable-KTable join table of its
// developer guide): an update of either side joins the other's current value; inner keeps keys
// both hold, left every key of the left table, outer every key of either; a key a join no longer
// holds is deleted downstream (once: a key absent before and after writes nothing). Each result
// carries the later timestamp of the two values it joins.
func TestTableTableJoins(t *testing.T) {
	d := run(t, func(b *Builder) {
		l := Table(b, "left", Consumed[string, string]{})
		r := Table(b, "right", Consumed[string, string]{})
		show := func(s string, has bool) string {
			if !has {
				return "_"
			}
			return s
		}
		JoinTables(l, r, func(_, a, c string) string { return a + c }).ToStream().To("inner", Produced[string, string]{})
		LeftJoinTables(l, r, func(_, a, c string, found bool) string { return a + show(c, found) }).ToStream().To("left-out", Produced[string, string]{})
		OuterJoinTables(l, r, func(_, a string, hasA bool, c string, hasC bool) string { return show(a, hasA) + show(c, hasC) }).
			ToStream().To("outer", Produced[string, string]{})
	})
	pipeRaw(t, d, "left", []byte("k"), []byte("a"), 10)
	pipeRaw(t, d, "right", []byte("k"), []byte("b"), 5) // older than the left value: the result keeps 10
	pipeRaw(t, d, "left", []byte("k"), []byte("c"), 20)
	pipeRaw(t, d, "right", []byte("k"), nil, 30)
	pipeRaw(t, d, "left", []byte("k"), nil, 40)
	pipeRaw(t, d, "right", []byte("k"), []byte("d"), 50)
	pipeRaw(t, d, "right", []byte("k"), nil, 60)
	pipeRaw(t, d, "right", []byte("j"), nil, 70) // a key neither table ever held: nothing

	del := func(ts int64) rawRec { return rawRec{k: "k", null: true, ts: ts} }
	for _, c := range []struct {
		topic string
		want  []rawRec
	}{
		{"inner", []rawRec{{k: "k", v: "ab", ts: 10}, {k: "k", v: "cb", ts: 20}, del(30)}},
		{"left-out", []rawRec{{k: "k", v: "a_", ts: 10}, {k: "k", v: "ab", ts: 10}, {k: "k", v: "cb", ts: 20}, {k: "k", v: "c_", ts: 30}, del(40)}},
		{"outer", []rawRec{{k: "k", v: "a_", ts: 10}, {k: "k", v: "ab", ts: 10}, {k: "k", v: "cb", ts: 20}, {k: "k", v: "c_", ts: 30}, del(40),
			{k: "k", v: "_d", ts: 50}, del(60)}},
	} {
		if got := readRaw(t, d, c.topic); !slices.Equal(got, c.want) {
			t.Errorf("%s\n got %v\nwant %v", c.topic, got, c.want)
		}
	}
}

// A join's result kept in no store is read through both tables: a table joined with it sees the
// joined value and its later timestamp; a joiner's nil result is a deletion.
func TestTableJoinOfAJoin(t *testing.T) {
	d := run(t, func(b *Builder) {
		a := Table(b, "a", Consumed[string, string]{})
		bt := Table(b, "b", Consumed[string, string]{})
		c := Table(b, "c", Consumed[string, string]{})
		ab := JoinTables(a, bt, func(_, x, y string) *string {
			if x == "none" {
				return nil
			}
			s := x + y
			return &s
		})
		JoinTables(c, ab, func(_, z string, xy *string) string { return z + "/" + *xy }).ToStream().To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "a", []byte("k"), []byte("x"), 30)
	pipeRaw(t, d, "b", []byte("k"), []byte("y"), 10)
	pipeRaw(t, d, "c", []byte("k"), []byte("z"), 20) // joined with ab's value, stamped 30
	pipeRaw(t, d, "a", []byte("k"), []byte("none"), 40)
	pipeRaw(t, d, "c", []byte("k"), []byte("w"), 50) // ab holds nothing for k now
	want := []rawRec{{k: "k", v: "z/xy", ts: 30}, {k: "k", null: true, ts: 40}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTableTableJoinProgramErrors(t *testing.T) {
	other := NewBuilder()
	foreign := Table(other, "t", Consumed[string, string]{})
	expectProgramErrors(t, map[string]func(b *Builder){
		"same Builder": func(b *Builder) {
			JoinTables(Table(b, "in", Consumed[string, string]{}), foreign, func(_, v, u string) string { return v })
		},
		"windowed tables": func(b *Builder) {
			g := Stream(b, "in", Consumed[string, string]{}).GroupByKey()
			w := WindowedBy(g, windowed.OfSizeWithNoGrace(time.Second))
			OuterJoinTables(w.Count(), w.Count(), func(_ windowed.Key[string], _ int64, _ bool, _ int64, _ bool) int64 { return 0 })
		},
		"Materialized": func(b *Builder) {
			LeftJoinTables(Table(b, "in", Consumed[string, string]{}), Table(b, "in2", Consumed[string, string]{}),
				func(_, v, u string, _ bool) string { return v }, Materialized[string, int64]{Name: "x"})
		},
	})
}

// A stream-stream join, from Kafka Streams' documented semantics: a record joins every record of
// the other stream with its key within the windows (seen from the left stream: at most Before
// earlier, at most After later), whichever arrives second producing the result, stamped with the
// later time; records without a key or value join nothing.
func TestStreamStreamJoin(t *testing.T) {
	d := run(t, func(b *Builder) {
		l := Stream(b, "left", Consumed[string, string]{})
		r := Stream(b, "right", Consumed[string, string]{})
		JoinStreams(l, r, func(k, a, c string) string { return k + ":" + a + c }, windowed.JoinOfTimeDifferenceWithNoGrace(10*time.Second).Before(time.Second)).
			To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "left", []byte("k"), []byte("A"), 10000)
	pipeRaw(t, d, "right", []byte("k"), []byte("b"), 20000) // 10 s after: joins (After 10 s)
	pipeRaw(t, d, "right", []byte("k"), []byte("c"), 8999)  // 1.001 s before: out of the window
	pipeRaw(t, d, "right", []byte("k"), []byte("d"), 9000)  // 1 s before: joins
	pipeRaw(t, d, "left", []byte("k"), []byte("E"), 19000)  // joins b (1 s later: within After); c and d are more than Before earlier
	pipeRaw(t, d, "left", []byte("k"), nil, 19500)
	pipeRaw(t, d, "right", []byte("j"), []byte("x"), 19600) // another key
	want := []rawRec{{k: "k", v: "k:Ab", ts: 20000}, {k: "k", v: "k:Ad", ts: 10000}, {k: "k", v: "k:Eb", ts: 20000}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if n := d.App().Metrics().Dropped; n != 1 {
		t.Fatalf("dropped %d, want the record without a value", n)
	}
}

// The shared store of a stream-stream outer join holds Kafka Streams' ListValueStore lists: 1 (the
// variable-size strategy), the count, each value length-prefixed.
func TestJoinStoreLists(t *testing.T) {
	l, err := appendListValue(nil, []byte("ab"))
	if err != nil || !bytes.Equal(l, []byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 'a', 'b'}) {
		t.Fatalf("%x %v", l, err)
	}
	l, err = appendListValue(l, []byte{})
	if err != nil || !bytes.Equal(l, []byte{1, 0, 0, 0, 2, 0, 0, 0, 2, 'a', 'b', 0, 0, 0, 0}) {
		t.Fatalf("%x %v", l, err)
	}
	for _, bad := range [][]byte{{}, {0, 0, 0, 0, 0}, {1, 0, 0, 0, 1}, {1, 0, 0, 0, 1, 0, 0, 0, 3, 'a'}, {1, 0, 0, 0, 0, 9}, {1, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := splitListValue(bad); !errors.Is(err, ErrJoinStore) {
			t.Errorf("%x: %v, want ErrJoinStore", bad, err)
		}
	}
	if _, _, _, err := splitSharedKey([]byte{0, 0, 0, 0, 0, 0, 0, 1, 2, 'k'}); !errors.Is(err, ErrJoinStore) {
		t.Errorf("a side byte of 2: %v", err)
	}
	if ts, left, k, err := splitSharedKey([]byte{0, 0, 0, 0, 0, 0, 0, 7, 1, 'k'}); ts != 7 || !left || string(k) != "k" || err != nil {
		t.Errorf("%d %v %q %v", ts, left, k, err)
	}
}

func FuzzJoinStoreList(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 'a', 'b'})
	f.Fuzz(func(t *testing.T, b []byte) {
		values, err := splitListValue(b)
		if err != nil {
			if !errors.Is(err, ErrJoinStore) {
				t.Fatal(err)
			}
			return
		}
		var again []byte
		for _, v := range values {
			if again, err = appendListValue(again, v); err != nil {
				t.Fatal(err)
			}
		}
		if len(values) > 0 && !bytes.Equal(again, b) {
			t.Fatalf("%x read and written again is %x", b, again)
		}
	})
}

// A stream-stream left join emits a left record no right record joined once its window closed (its
// time plus After plus the grace, in stream time), with its own time; a right record that comes in
// time joins it instead. An outer join does so for both sides. (streamtest looks at every record,
// as TopologyTestDriver does.)
func TestStreamStreamLeftAndOuterJoin(t *testing.T) {
	d := run(t, func(b *Builder) {
		l := Stream(b, "left", Consumed[string, string]{})
		r := Stream(b, "right", Consumed[string, string]{})
		jw := windowed.JoinOfTimeDifferenceWithNoGrace(time.Second)
		LeftJoinStreams(l, r, func(_, a, c string, found bool) string {
			if !found {
				return a + "-"
			}
			return a + c
		}, jw).To("left-out", Produced[string, string]{})
		OuterJoinStreams(l, r, func(_, a string, hasA bool, c string, hasC bool) string {
			return map[bool]string{true: a, false: "-"}[hasA] + map[bool]string{true: c, false: "-"}[hasC]
		}, jw).To("outer-out", Produced[string, string]{})
	})
	pipeRaw(t, d, "left", []byte("k"), []byte("A"), 1000)
	pipeRaw(t, d, "right", []byte("j"), []byte("x"), 1500)
	pipeRaw(t, d, "left", []byte("k"), []byte("B"), 1800)
	// b: stream time 2.7 s, past A's window (1 s + 1 s) and x's (1.5 s + 1 s): they are emitted first;
	// then b joins B (0.9 s before it), whose window is still open, and not A (1.7 s before).
	pipeRaw(t, d, "right", []byte("k"), []byte("b"), 2700)
	pipeRaw(t, d, "left", []byte("m"), []byte("C"), 2800) // C's window is open: nothing yet
	want := []rawRec{{k: "k", v: "A-", ts: 1000}, {k: "k", v: "Bb", ts: 2700}}
	if got := readRaw(t, d, "left-out"); !slices.Equal(got, want) {
		t.Errorf("left join: got %v, want %v", got, want)
	}
	want = []rawRec{{k: "k", v: "A-", ts: 1000}, {k: "j", v: "-x", ts: 1500}, {k: "k", v: "Bb", ts: 2700}}
	if got := readRaw(t, d, "outer-out"); !slices.Equal(got, want) {
		t.Errorf("outer join: got %v, want %v", got, want)
	}
}

// A stream-stream left join's store of records not joined yet writes its changelog as Kafka Streams'
// ListValueStore does: the key (the time, 1 for the left side, the key), the whole list (1, the
// count, each side-tagged value length-prefixed), stamped with the record's time.
func TestStreamStreamJoinSharedStoreChangelog(t *testing.T) {
	d := run(t, func(b *Builder) {
		LeftJoinStreams(Stream(b, "left", Consumed[string, string]{}), Stream(b, "right", Consumed[string, string]{}),
			func(_, a, c string, _ bool) string { return a + c }, windowed.JoinOfTimeDifferenceWithNoGrace(time.Second),
			StreamJoined[string, string, string]{StoreName: "sj"}).To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "left", []byte("k"), []byte("A"), 1000)
	raws, err := d.ReadRaw("ops-sj-left-shared-join-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	wantKey := []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe8, 1, 'k'}
	wantValue := []byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 1, 'A'}
	if len(raws) != 1 || !bytes.Equal(raws[0].Key, wantKey) || !bytes.Equal(raws[0].Value, wantValue) || raws[0].Timestamp.UnixMilli() != 1000 {
		t.Fatalf("changelog %+v, want %x=%x at 1000", raws, wantKey, wantValue)
	}
}

// A stream-stream join's window stores are headers-aware in Kafka Streams 4.4 whatever
// dsl.store.format says (KStreamJoinWindow keeps each record with its headers): every changelog
// record carries the headers of the record it holds, and its plain value; the shared store of a left
// join's records not joined yet stays plain (no headers).
func TestStreamStreamJoinStoresCarryTheRecordsHeaders(t *testing.T) {
	d := run(t, func(b *Builder) {
		LeftJoinStreams(Stream(b, "left", Consumed[string, string]{}), Stream(b, "right", Consumed[string, string]{}),
			func(_, a, c string, _ bool) string { return a + c }, windowed.JoinOfTimeDifferenceWithNoGrace(time.Second),
			StreamJoined[string, string, string]{StoreName: "sj"}).To("out", Produced[string, string]{})
	})
	for _, r := range []struct{ topic, v, h string }{{"left", "A", "l"}, {"right", "b", "r"}} {
		pipeRaw(t, d, r.topic, []byte("k"), []byte(r.v), 1000, kgo.RecordHeader{Key: "h", Value: []byte(r.h)})
	}
	for topic, want := range map[string]string{"ops-sj-this-join-store-changelog": "A h=l", "ops-sj-outer-other-join-store-changelog": "b h=r"} {
		raws, err := d.ReadRaw(topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(raws) != 1 || len(raws[0].Headers) != 1 || fmt.Sprintf("%s %s=%s", raws[0].Value, raws[0].Headers[0].Key, raws[0].Headers[0].Value) != want {
			t.Errorf("%s: %+v, want one record %s", topic, raws, want)
		}
	}
	raws, err := d.ReadRaw("ops-sj-left-shared-join-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raws {
		if len(r.Headers) != 0 {
			t.Errorf("the shared store's changelog record carries headers %v", r.Headers)
		}
	}
}
