package dsl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
)

// Versioned tables and stream-table joins with a grace period, through the test driver. Their
// outputs for ordered, out-of-order, late and too-old records are compared with Kafka Streams' in the
// program p-join-versioned (outputs_test.go); these tests pin what it cannot reach.

// versionedProgram joins orders with prices kept 30 s: left, with a grace of 2 s, named graced.
func versionedProgram(b *Builder) {
	prices := Table(b, "prices", Consumed[string, string]{}, Materialized[string, string]{Name: "prices", HistoryRetention: 30 * time.Second})
	orders := Stream(b, "orders", Consumed[string, string]{})
	LeftJoin(orders, prices, func(_, o, p string, found bool) string {
		if !found {
			return o + "@none"
		}
		return o + "@" + p
	}, Joined[string, string, string]{Name: "graced", GracePeriod: 2 * time.Second}).To("out", Produced[string, string]{})
}

// The records held are written to the buffer's changelog in Kafka Streams' format — the key a 0
// byte (its time-first prefix), the time (8 bytes), the key and a sequence number from 1; the value a BufferValue (the record's
// context, no prior or old value, the new value) and 8 bytes of time 0 — and deleted (a tombstone)
// once joined. The versioned store's changelog carries each version at its time.
func TestJoinBufferChangelog(t *testing.T) {
	d := run(t, versionedProgram)
	pipeRaw(t, d, "prices", []byte("a"), []byte("10"), 1000)
	pipeRaw(t, d, "orders", []byte("a"), []byte("o1"), 1500)
	pipeRaw(t, d, "orders", []byte("a"), []byte("o2"), 3600) // moves time 2.1 s past o1: o1 is joined
	raws, err := d.ReadRaw("ops-graced-Buffer-changelog")
	if err != nil {
		t.Fatal(err)
	}
	key := func(ts int64, seq uint32) []byte {
		k := binary.BigEndian.AppendUint64([]byte{0}, uint64(ts))
		return binary.BigEndian.AppendUint32(append(k, 'a'), seq)
	}
	value := func(ts, offset int64, v string) []byte {
		b := binary.BigEndian.AppendUint64(nil, uint64(ts))
		b = binary.BigEndian.AppendUint64(b, uint64(offset))
		b = binary.BigEndian.AppendUint32(b, uint32(len("orders")))
		b = append(b, "orders"...)
		b = binary.BigEndian.AppendUint32(b, 0)              // partition
		b = binary.BigEndian.AppendUint32(b, 0)              // no headers
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)     // no prior value
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)     // no old value
		b = binary.BigEndian.AppendUint32(b, uint32(len(v))) // the new value
		b = append(b, v...)
		return binary.BigEndian.AppendUint64(b, 0)
	}
	want := []struct {
		k, v []byte
	}{{key(1500, 1), value(1500, 0, "o1")}, {key(3600, 2), value(3600, 1, "o2")}, {key(1500, 1), nil}}
	if len(raws) != len(want) {
		t.Fatalf("%d buffer changelog records, want %d: %+v", len(raws), len(want), raws)
	}
	for i, w := range want {
		if !bytes.Equal(raws[i].Key, w.k) || !bytes.Equal(raws[i].Value, w.v) || (w.v == nil) != (raws[i].Value == nil) {
			t.Errorf("record %d: % x = % x\nwant % x = % x", i, raws[i].Key, raws[i].Value, w.k, w.v)
		}
	}
	if got := readRaw(t, d, "out"); len(got) != 1 || got[0] != (rawRec{"a", "o1@10", false, 1500}) {
		t.Errorf("out %v, want o1 joined with 10 at 1500", got)
	}
	raws, err = d.ReadRaw("ops-prices-changelog")
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 1 || string(raws[0].Key) != "a" || string(raws[0].Value) != "10" || raws[0].Timestamp.UnixMilli() != 1000 {
		t.Errorf("versioned store changelog %+v, want a=10 at 1000", raws)
	}
}

// A record without a key is joined at once, with no table value, where Kafka Streams 4.4's buffer
// fails on it (a NullPointerException); one without a value is dropped, as in Kafka Streams.
func TestJoinBufferRecordsWithoutKeyOrValue(t *testing.T) {
	d := run(t, versionedProgram)
	pipeRaw(t, d, "orders", nil, []byte("o1"), 1000)
	pipeRaw(t, d, "orders", []byte("a"), nil, 1000)
	if got := readRaw(t, d, "out"); len(got) != 1 || got[0] != (rawRec{"", "o1@none", false, 1000}) {
		t.Fatalf("out %v, want the keyless record joined with nothing at once", got)
	}
	if n := d.App().Metrics().Dropped; n != 1 {
		t.Errorf("dropped %d, want the record without a value", n)
	}
}

// A program that uses a versioned table or a grace period where Kafka Streams does not allow it is
// refused, naming the operation.
func TestVersionedProgramErrors(t *testing.T) {
	versioned := func(b *Builder) *KTable[string, string] {
		return Table(b, "prices", Consumed[string, string]{}, Materialized[string, string]{Name: "prices", HistoryRetention: time.Minute})
	}
	expectProgramErrors(t, map[string]func(b *Builder){
		"a grace period needs a table kept in a versioned store": func(b *Builder) {
			Join(Stream(b, "in", Consumed[string, string]{}), Table(b, "t", Consumed[string, string]{}),
				func(_, v, _ string) string { return v }, Joined[string, string, string]{GracePeriod: time.Second}).To("out", Produced[string, string]{})
		},
		"a negative grace period": func(b *Builder) {
			Join(Stream(b, "in", Consumed[string, string]{}), versioned(b),
				func(_, v, _ string) string { return v }, Joined[string, string, string]{GracePeriod: -time.Second}).To("out", Produced[string, string]{})
		},
		"a versioned store (Materialized.HistoryRetention) needs a name": func(b *Builder) {
			Table(b, "prices", Consumed[string, string]{}, Materialized[string, string]{HistoryRetention: time.Minute}).ToStream().To("out", Produced[string, string]{})
		},
		"Suppress: suppression is only supported for tables that are not versioned, as in Kafka Streams (the table is kept in the versioned store \"prices\")": func(b *Builder) {
			versioned(b).Suppress(UntilTimeLimit(time.Second, BufferConfig{})).ToStream().To("out", Produced[string, string]{})
		},
		// Versioned semantics go through a filter or mapping without a Materialized.
		"Suppress: suppression is only supported for tables that are not versioned, as in Kafka Streams (this one derives from a versioned table": func(b *Builder) {
			MapTableValues(versioned(b).Filter(func(_, _ string) bool { return true }), func(_, v string) string { return v }).
				Suppress(UntilTimeLimit(time.Second, BufferConfig{})).ToStream().To("out", Produced[string, string]{})
		},
		"the grace period 1m0.001s is longer than the history retention 1m0s of the versioned store it reads": func(b *Builder) {
			Join(Stream(b, "in", Consumed[string, string]{}), versioned(b).Filter(func(_, _ string) bool { return true }),
				func(_, v, _ string) string { return v }, Joined[string, string, string]{GracePeriod: time.Minute + time.Millisecond}).To("out", Produced[string, string]{})
		},
		// A table filtered into a store of its own is not versioned: its getter reads the latest.
		"Join \"KSTREAM-JOIN-0000000004\": a grace period needs a table kept in a versioned store": func(b *Builder) {
			Join(Stream(b, "in", Consumed[string, string]{}), versioned(b).Filter(func(_, _ string) bool { return true }, Materialized[string, string]{Name: "f"}),
				func(_, v, _ string) string { return v }, Joined[string, string, string]{GracePeriod: time.Second}).To("out", Produced[string, string]{})
		},
		"Count: a versioned store (Materialized.HistoryRetention) keeps a table read from a topic": func(b *Builder) {
			Stream(b, "in", Consumed[string, string]{}).GroupByKey().Count(Materialized[string, int64]{Name: "c", HistoryRetention: time.Minute})
		},
		"a global table cannot be kept in a versioned store": func(b *Builder) {
			GlobalTable(b, "g", Consumed[string, string]{}, Materialized[string, string]{Name: "g", HistoryRetention: time.Minute})
			Stream(b, "in", Consumed[string, string]{}).To("out", Produced[string, string]{})
		},
		"the records held for the grace period need serdes": func(b *Builder) {
			Join(MapValues(Stream(b, "in", Consumed[string, point]{Value: serde.JSON[point]()}), func(_ string, p point) point { return p }), versioned(b),
				func(_ string, p point, _ string) string { return "" }, Joined[string, point, string]{GracePeriod: time.Second}).To("out", Produced[string, string]{})
		},
	})
}

// The zero forms (Materialized.Versioned without a history, Joined.WithGrace without a grace) are
// refused where their non-zero forms are.
func TestZeroFormProgramErrors(t *testing.T) {
	expectProgramErrors(t, map[string]func(b *Builder){
		"a grace period needs a table kept in a versioned store": func(b *Builder) {
			Join(Stream(b, "in", Consumed[string, string]{}), Table(b, "t", Consumed[string, string]{}),
				func(_, v, _ string) string { return v }, Joined[string, string, string]{WithGrace: true}).To("out", Produced[string, string]{})
		},
		"a versioned store (Materialized.HistoryRetention) needs a name": func(b *Builder) {
			Table(b, "prices", Consumed[string, string]{}, Materialized[string, string]{Versioned: true}).ToStream().To("out", Produced[string, string]{})
		},
		"Count: a versioned store (Materialized.HistoryRetention) keeps a table read from a topic": func(b *Builder) {
			Stream(b, "in", Consumed[string, string]{}).GroupByKey().Count(Materialized[string, int64]{Name: "c", Versioned: true})
		},
		"a global table cannot be kept in a versioned store": func(b *Builder) {
			GlobalTable(b, "g", Consumed[string, string]{}, Materialized[string, string]{Name: "g", Versioned: true})
			Stream(b, "in", Consumed[string, string]{}).To("out", Produced[string, string]{})
		},
	})
}

// A record held is joined in its own context: a processor after the join sees its time, headers and
// origin (topic and offset), not those of the record that released it.
func TestJoinBufferJoinsInTheHeldRecordsContext(t *testing.T) {
	d := run(t, func(b *Builder) {
		prices := Table(b, "prices", Consumed[string, string]{}, Materialized[string, string]{Name: "prices", HistoryRetention: time.Minute})
		joined := Join(Stream(b, "orders", Consumed[string, string]{}), prices, func(_, o, p string) string { return o + "@" + p },
			Joined[string, string, string]{GracePeriod: time.Second})
		Process(joined, ProcessorFunc[string, string, string, string](func(c ProcessorContext[string, string], r Record[string, string]) error {
			var h string
			for _, x := range c.Headers() {
				h += string(x.Value)
			}
			_, _, offset, _ := c.RecordMetadata()
			r.Value = fmt.Sprintf("%s h=%s at=%d offset=%d", r.Value, h, c.Timestamp().UnixMilli(), offset)
			return c.Forward(r)
		})).To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "prices", []byte("a"), []byte("10"), 1000)
	for _, r := range []struct {
		v, h string
		ts   int64
	}{{"o1", "first", 2000}, {"o2", "second", 3500}} {
		pipeRaw(t, d, "orders", []byte("a"), []byte(r.v), r.ts, kgo.RecordHeader{Key: "h", Value: []byte(r.h)})
	}
	if got := readRaw(t, d, "out"); len(got) != 1 || got[0] != (rawRec{"a", "o1@10 h=first at=2000 offset=0", false, 2000}) {
		t.Fatalf("out %v, want o1 joined in its own context", got)
	}
}

// The grace's edges: a record exactly the grace behind the newest time held is held, then joined at
// once (Kafka Streams joins at once only what is older), a record at time 0 is released when the
// newest time reaches the grace, and an empty key is a key.
func TestJoinBufferEdges(t *testing.T) {
	d := run(t, versionedProgram)
	pipeRaw(t, d, "prices", []byte(""), []byte("7"), 0)
	pipeRaw(t, d, "orders", []byte(""), []byte("o0"), 0)
	pipeRaw(t, d, "orders", []byte(""), []byte("o1"), 2000) // releases o0: 2000 - 2000 = 0
	pipeRaw(t, d, "orders", []byte(""), []byte("edge"), 0)  // exactly 2000 - 2000: held, then released
	want := []rawRec{{"", "o0@7", false, 0}, {"", "edge@7", false, 0}}
	if got := readRaw(t, d, "out"); !equalRecs(got, want) {
		t.Fatalf("out %v\nwant %v", got, want)
	}
	raws, err := d.ReadRaw("ops-graced-Buffer-changelog")
	if err != nil {
		t.Fatal(err)
	}
	// o0 held and released, o1 held, edge held and released.
	var got []string
	for _, r := range raws {
		got = append(got, fmt.Sprintf("%d:%v", binary.BigEndian.Uint64(r.Key[1:9]), r.Value == nil))
	}
	if fmt.Sprint(got) != "[0:false 2000:false 0:true 0:false 0:true]" {
		t.Fatalf("buffer changelog (time:tombstone) %v", got)
	}
}

// A Materialized below a versioned table ends its versioned semantics, as Kafka Streams'
// maybeSetOutputVersioned does: what is below builds as below any other table (a suppression), and
// its filter drops an update that is out of its result before and after.
func TestMaterializedEndsVersionedSemantics(t *testing.T) {
	program := func(b *Builder) {
		prices := Table(b, "prices", Consumed[string, string]{}, Materialized[string, string]{Name: "prices", HistoryRetention: time.Minute})
		kept := prices.Filter(func(_, v string) bool { return v != "x" }, Materialized[string, string]{Name: "kept"})
		kept.Filter(func(_, v string) bool { return v != "y" }).ToStream().To("out", Produced[string, string]{})
		kept.Suppress(UntilTimeLimit(time.Second, BufferConfig{})).ToStream().To("out2", Produced[string, string]{})
	}
	b := NewBuilder()
	program(b)
	if _, _, err := b.Build(config.Default("ops")); err != nil {
		t.Fatalf("Build: %v", err)
	}
	d := run(t, program)
	pipeRaw(t, d, "prices", []byte("a"), []byte("y"), 1000) // kept holds y; the filter below rejects it
	pipeRaw(t, d, "prices", []byte("b"), []byte("x"), 1000) // kept rejects x: not in it before or after
	pipeRaw(t, d, "prices", []byte("c"), []byte("z"), 1000)
	// Below a versioned table without the Materialized, a and b would be deletions (see
	// p-versioned-ops): a filter there drops nothing.
	if got := readRaw(t, d, "out"); len(got) != 1 || got[0] != (rawRec{"c", "z", false, 1000}) {
		t.Fatalf("out = %+v, want only c=z", got)
	}
}
