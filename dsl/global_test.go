package dsl

import (
	"slices"
	"testing"

	"github.com/streamsgroup/streamsgroup/config"
)

// Stream-global-table joins, through the test driver. The expected outputs follow Kafka Streams'
// documented semantics (KStream.join/leftJoin with a GlobalKTable): each stream record looks up the
// key its key mapper gives in the global table, as the table is when the record is processed; an
// inner join drops records whose looked-up key is absent or null, a left join keeps them; records
// with a null value are dropped by both; the result keeps the stream record's key.

func TestStreamGlobalTableJoin(t *testing.T) {
	d := run(t, func(b *Builder) {
		// Byte-slice keys, so that the key mapper can give a null key (nil) as Java's can.
		customers := GlobalTable(b, "customers", Consumed[[]byte, string]{})
		orders := Stream(b, "orders", Consumed[string, string]{})
		byValue := func(_, v string) []byte {
			if v == "none" {
				return nil
			}
			return []byte(v)
		}
		JoinGlobal(orders, customers, byValue, func(k, v, name string) string { return k + " " + v + " " + name }).
			To("joined", Produced[string, string]{})
		LeftJoinGlobal(orders, customers, byValue, func(k, v, name string, found bool) string {
			if !found {
				return k + " " + v + " unknown"
			}
			return k + " " + v + " " + name
		}).To("left", Produced[string, string]{})
	})
	pipeRaw(t, d, "orders", []byte("o1"), []byte("c1"), 100) // no customer yet
	pipeRaw(t, d, "customers", []byte("c1"), []byte("Ann"), 200)
	pipeRaw(t, d, "orders", []byte("o2"), []byte("c1"), 150) // earlier than the table's record: joined
	pipeRaw(t, d, "customers", []byte("c1"), []byte("Anna"), 300)
	pipeRaw(t, d, "customers", nil, []byte("x"), 310)          // a table record without a key: dropped
	pipeRaw(t, d, "orders", nil, []byte("c1"), 400)            // no stream key: looked up by value all the same
	pipeRaw(t, d, "orders", []byte("o3"), []byte("none"), 410) // a null looked-up key
	pipeRaw(t, d, "orders", []byte("o4"), nil, 420)            // a null value: dropped by both
	pipeRaw(t, d, "customers", []byte("c1"), nil, 500)         // deleted
	pipeRaw(t, d, "orders", []byte("o5"), []byte("c1"), 600)

	want := []rawRec{{k: "o2", v: "o2 c1 Ann", ts: 150}, {k: "", v: " c1 Anna", ts: 400}}
	if got := readRaw(t, d, "joined"); !slices.Equal(got, want) {
		t.Errorf("inner join\n got %v\nwant %v", got, want)
	}
	want = []rawRec{{k: "o1", v: "o1 c1 unknown", ts: 100}, {k: "o2", v: "o2 c1 Ann", ts: 150}, {k: "", v: " c1 Anna", ts: 400},
		{k: "o3", v: "o3 none unknown", ts: 410}, {k: "o5", v: "o5 c1 unknown", ts: 600}}
	if got := readRaw(t, d, "left"); !slices.Equal(got, want) {
		t.Errorf("left join\n got %v\nwant %v", got, want)
	}
	// Dropped: the table's record without a key; the inner join's null looked-up key; the null
	// value by both joins.
	if n := d.App().Metrics().Dropped; n != 4 {
		t.Errorf("dropped %d records, want 4", n)
	}
}

func TestGlobalTableStoreAndQuery(t *testing.T) {
	var unnamed, named string
	d := run(t, func(b *Builder) {
		g := GlobalTable(b, "users", Consumed[string, string]{})
		h := GlobalTable(b, "groups", Consumed[string, string]{}, Materialized[string, string]{Name: "groups-store"})
		unnamed, named = g.StoreName(), h.StoreName()
		s := Stream(b, "in", Consumed[string, string]{})
		JoinGlobal(s, g, func(k, _ string) string { return k }, func(_, v, u string) string { return v + u }).To("out", Produced[string, string]{})
		JoinGlobal(s, h, func(k, _ string) string { return k }, func(_, v, u string) string { return v + u }).To("out2", Produced[string, string]{})
	})
	// Kafka Streams' names: the store's number comes before its source's and processor's.
	if unnamed != "users-STATE-STORE-0000000000" || named != "groups-store" {
		t.Fatalf("store names %q and %q", unnamed, named)
	}
	pipeRaw(t, d, "users", []byte("k"), []byte("v"), 1)
	st, err := d.Store(unnamed)
	if err != nil {
		t.Fatal(err)
	}
	// The DSL keeps a global table's values with their timestamp, as Kafka Streams' timestamped
	// stores do: 8 bytes of milliseconds, then the value.
	v, ok, err := st.Get([]byte("k"))
	if err != nil || !ok || string(v) != "\x00\x00\x00\x00\x00\x00\x00\x01v" {
		t.Fatalf("query = %q %v %v", v, ok, err)
	}
}

func TestGlobalTablesAreNumberedAmongSubtopologies(t *testing.T) {
	b := NewBuilder()
	Stream(b, "a", Consumed[string, string]{}).To("a-out", Produced[string, string]{})
	g := GlobalTable(b, "g", Consumed[string, string]{})
	LeftJoinGlobal(Stream(b, "b", Consumed[string, string]{}), g, func(k, _ string) string { return k },
		func(_, v, u string, _ bool) string { return v + u }).To("b-out", Produced[string, string]{})
	topo, procs, err := b.Build(config.Default("num"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range topo.Subtopologies() {
		ids = append(ids, s.ID)
	}
	gs := topo.GlobalStores()
	if !slices.Equal(ids, []string{"0", "2"}) || len(gs) != 1 || gs[0].Subtopology != "1" || gs[0].Topic != "g" ||
		gs[0].Name != "g-STATE-STORE-0000000002" || len(procs) != 3 || procs["1"] == nil {
		t.Fatalf("subtopologies %v, global stores %+v, %d processors", ids, gs, len(procs))
	}
	// The global table's store has no changelog, and the join's subtopology reads no other topic.
	for _, s := range topo.Subtopologies() {
		if len(s.StateChangelogTopics) != 0 || len(s.SourceTopics) != 1 {
			t.Fatalf("subtopology %s: %+v", s.ID, s)
		}
	}
}

func TestStreamGlobalTableJoinProgramErrors(t *testing.T) {
	other := NewBuilder()
	foreign := GlobalTable(other, "t", Consumed[string, string]{})
	key := func(k, _ string) string { return k }
	expectProgramErrors(t, map[string]func(b *Builder){
		"global table of the same Builder": func(b *Builder) {
			JoinGlobal(Stream(b, "in", Consumed[string, string]{}), foreign, key, func(_, v, u string) string { return v }).To("out", Produced[string, string]{})
		},
		"needs a key mapper and a joiner": func(b *Builder) {
			g := GlobalTable(b, "g", Consumed[string, string]{})
			LeftJoinGlobal[string, string, string, string, string](Stream(b, "in", Consumed[string, string]{}), g, nil, nil).To("out", Produced[string, string]{})
		},
		"GlobalTable needs a topic": func(b *Builder) {
			g := GlobalTable(b, "", Consumed[string, string]{})
			JoinGlobal(Stream(b, "in", Consumed[string, string]{}), g, key, func(_, v, u string) string { return v }).To("out", Produced[string, string]{})
		},
		"needs Consumed serdes": func(b *Builder) {
			g := GlobalTable(b, "g", Consumed[struct{ A int }, string]{})
			JoinGlobal(Stream(b, "in", Consumed[string, string]{}), g, func(string, string) struct{ A int } { return struct{ A int }{} },
				func(_, v, u string) string { return v }).To("out", Produced[string, string]{})
		},
	})
}
