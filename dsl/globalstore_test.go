package dsl

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// Global stores added with AddGlobalStore, through the test driver. The expected behaviour is
// Kafka Streams' StreamsBuilder.addGlobalStore: the processor alone keeps the store from every
// record of its topic (a record without a key reaches it too once the application runs), and every
// other processor reads the store without naming it; the store holds what the processor wrote, as
// written (no timestamp added, unlike a global table's).

// keeper is a global store's processor that records what it was handed and what Forward and
// Schedule answered it, and keeps "key=value" in the store "kept" (a null key as "-").
type keeper struct {
	mu                  sync.Mutex
	seen                []string
	inits               int
	forward, scheduleOK error
}

var kept = stream.KeyValue("kept", serde.String, serde.String)

func (p *keeper) Init(c ProcessorContext[Void, Void]) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inits++
	_, p.scheduleOK = c.Schedule(time.Second, stream.WallClock, func(ProcessorContext[Void, Void], time.Time) error { return nil })
	return nil
}

func (p *keeper) Process(c ProcessorContext[Void, Void], r Record[string, string]) error {
	p.mu.Lock()
	p.seen = append(p.seen, map[bool]string{true: "-", false: r.Key}[r.NullKey]+"="+map[bool]string{true: "null", false: r.Value}[r.NullValue]+
		"@"+r.Timestamp.Format("05.000"))
	p.forward = c.Forward(Record[Void, Void]{})
	p.mu.Unlock()
	k := r.Key
	if r.NullKey {
		k = "-"
	}
	if r.NullValue {
		return kept.Delete(c.Context, k)
	}
	return kept.Put(c.Context, k, r.Value)
}

func TestGlobalStoreKeptByItsProcessor(t *testing.T) {
	p := &keeper{}
	d := run(t, func(b *Builder) {
		AddGlobalStore(b, "kept", "kept-in", Consumed[string, string]{}, p)
		// Another processor reads the store without naming it.
		ProcessValues(Stream(b, "in", Consumed[string, string]{}), ProcessorFunc[string, string, string, string](
			func(c ProcessorContext[string, string], r Record[string, string]) error {
				v, ok, err := kept.Get(c.Context, r.Value)
				if err != nil {
					return err
				}
				if !ok {
					v = "absent"
				}
				return c.Forward(Record[string, string]{Key: r.Key, Value: v})
			})).To("out", Produced[string, string]{})
	})
	pipeRaw(t, d, "kept-in", []byte("a"), []byte("1"), 1000)
	pipeRaw(t, d, "kept-in", []byte("b"), []byte("2"), 1100)
	pipeRaw(t, d, "in", []byte("x"), []byte("a"), 1200)
	pipeRaw(t, d, "kept-in", nil, []byte("3"), 1300) // no key: handed to the processor all the same
	pipeRaw(t, d, "kept-in", []byte("a"), nil, 1400) // deleted by the processor
	pipeRaw(t, d, "in", []byte("y"), []byte("a"), 1500)
	pipeRaw(t, d, "in", []byte("z"), []byte("-"), 1600)
	pipeRaw(t, d, "in", []byte("w"), []byte("b"), 1700)

	want := []rawRec{{k: "x", v: "1", ts: 1200}, {k: "y", v: "absent", ts: 1500}, {k: "z", v: "3", ts: 1600}, {k: "w", v: "2", ts: 1700}}
	if got := readRaw(t, d, "out"); !slices.Equal(got, want) {
		t.Errorf("lookups\n got %v\nwant %v", got, want)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if want := []string{"a=1@01.000", "b=2@01.100", "-=3@01.300", "a=null@01.400"}; !slices.Equal(p.seen, want) {
		t.Errorf("the processor was handed %q, want %q", p.seen, want)
	}
	// Init runs before the restore and after it, as Kafka Streams starts a processor for each.
	if p.inits != 2 || !errors.Is(p.scheduleOK, stream.ErrGlobalContext) || !errors.Is(p.forward, stream.ErrGlobalContext) {
		t.Errorf("Init ran %d times (want 2); Schedule answered %v and Forward %v, want stream.ErrGlobalContext", p.inits, p.scheduleOK, p.forward)
	}
	// The store holds what the processor wrote, as it wrote it.
	st, err := d.Store("kept")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.Get([]byte("b")); err != nil || !ok || string(v) != "2" {
		t.Errorf("query of b = %q %v %v, want 2", v, ok, err)
	}
}

// A record that does not decode follows deserialization.exception.handler (here LogAndContinue:
// skipped and counted, the processor never handed it); one the processor fails on, with
// processing.exception.handler.global.enabled and LogAndContinue, is skipped and counted.
func TestGlobalStoreRecordErrors(t *testing.T) {
	cfg := config.Default("ops")
	cfg.Runtime.OnDeserializationError = config.LogAndContinue
	cfg.Runtime.OnProcessingError = config.LogAndContinue
	cfg.Runtime.GlobalProcessingErrors = true
	var seen []int64
	d := start(t, cfg, func(b *Builder) {
		AddGlobalStore(b, "nums", "nums-in", Consumed[string, int64]{}, ProcessorFunc[string, int64, Void, Void](
			func(c ProcessorContext[Void, Void], r Record[string, int64]) error {
				seen = append(seen, r.Value)
				if r.Value < 0 {
					return errors.New("negative")
				}
				return nil
			}))
		Stream(b, "in", Consumed[string, string]{}).To("out", Produced[string, string]{})
	})
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("the application failed: %v", err)
		}
	}()
	pipeRaw(t, d, "nums-in", []byte("a"), []byte("short"), 1000) // not eight bytes: does not decode
	pipeRaw(t, d, "nums-in", []byte("b"), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1100)
	pipeRaw(t, d, "nums-in", []byte("c"), []byte{0, 0, 0, 0, 0, 0, 0, 7}, 1200)
	pipeRaw(t, d, "in", []byte("k"), []byte("v"), 1300) // the driver waits for the global records first
	if !slices.Equal(seen, []int64{-1, 7}) {
		t.Errorf("the processor was handed %v, want [-1 7]", seen)
	}
	if n := d.App().Metrics().Dropped; n != 2 {
		t.Errorf("dropped %d, want 2", n)
	}
}

func TestGlobalStoresAreNumberedAmongSubtopologies(t *testing.T) {
	b := NewBuilder()
	Stream(b, "a", Consumed[string, string]{}).To("a-out", Produced[string, string]{})
	nop := ProcessorFunc[string, string, Void, Void](func(ProcessorContext[Void, Void], Record[string, string]) error { return nil })
	AddGlobalStore(b, "named", "g1", Consumed[string, string]{Name: "g1-reader"}, nop)
	AddGlobalStore(b, "unnamed", "g2", Consumed[string, string]{}, nop)
	Stream(b, "b", Consumed[string, string]{}).To("b-out", Produced[string, string]{})
	topo, procs, err := b.Build(config.Default("num"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range topo.Subtopologies() {
		ids = append(ids, s.ID)
		if len(s.StateChangelogTopics) != 0 {
			t.Errorf("subtopology %s has changelogs %v; a global store has none", s.ID, s.StateChangelogTopics)
		}
	}
	gs := topo.GlobalStores()
	if !slices.Equal(ids, []string{"0", "3"}) || len(gs) != 2 || len(procs) != 4 {
		t.Fatalf("subtopologies %v, global stores %+v, %d processors", ids, gs, len(procs))
	}
	if gs[0].Subtopology != "1" || gs[0].Name != "named" || gs[0].Topic != "g1" || gs[1].Subtopology != "2" || gs[1].Name != "unnamed" || gs[1].Topic != "g2" {
		t.Errorf("global stores %+v", gs)
	}
	// Kafka Streams' names: the named reader's source and processor, then the unnamed ones numbered
	// after the first stream's two nodes (a named node takes its number too).
	var names []string
	for _, n := range b.nodes {
		names = append(names, n.name)
	}
	want := []string{"KSTREAM-SOURCE-0000000000", "KSTREAM-SINK-0000000001", "g1-reader-source", "g1-reader",
		"KSTREAM-SOURCE-0000000004", "KTABLE-SOURCE-0000000005", "KSTREAM-SOURCE-0000000006", "KSTREAM-SINK-0000000007"}
	if !slices.Equal(names, want) {
		t.Errorf("nodes %q\nwant %q", names, want)
	}
}

func TestGlobalStoreProgramErrors(t *testing.T) {
	nop := ProcessorFunc[string, string, Void, Void](func(ProcessorContext[Void, Void], Record[string, string]) error { return nil })
	toOut := func(b *Builder) { Stream(b, "in", Consumed[string, string]{}).To("out", Produced[string, string]{}) }
	expectProgramErrors(t, map[string]func(b *Builder){
		"needs a store name": func(b *Builder) { AddGlobalStore(b, "", "g", Consumed[string, string]{}, nop); toOut(b) },
		"needs a topic":      func(b *Builder) { AddGlobalStore(b, "s", "", Consumed[string, string]{}, nop); toOut(b) },
		"needs a processor": func(b *Builder) {
			AddGlobalStore[string, string](b, "s", "g", Consumed[string, string]{}, nil)
			toOut(b)
		},
		"needs Consumed serdes": func(b *Builder) {
			AddGlobalStore(b, "s", "g", Consumed[struct{ A int }, string]{},
				ProcessorFunc[struct{ A int }, string, Void, Void](func(ProcessorContext[Void, Void], Record[struct{ A int }, string]) error { return nil }))
			toOut(b)
		},
		`the store "s" was added twice`: func(b *Builder) {
			b.AddStore("s")
			AddGlobalStore(b, "s", "g", Consumed[string, string]{}, nop)
			toOut(b)
		},
		`the store "t" was added twice`: func(b *Builder) {
			AddGlobalStore(b, "t", "g", Consumed[string, string]{}, nop)
			b.AddStore("t")
			toOut(b)
		},
		`the global store "counts" has the name of another store`: func(b *Builder) {
			AddGlobalStore(b, "counts", "g", Consumed[string, string]{}, nop)
			Stream(b, "in", Consumed[string, string]{}).GroupByKey().Count(Materialized[string, int64]{Name: "counts"}).
				ToStream().To("out", Produced[string, int64]{})
		},
		`the global store "latest" has the name of another store`: func(b *Builder) {
			GlobalTable(b, "t", Consumed[string, string]{}, Materialized[string, string]{Name: "latest"})
			AddGlobalStore(b, "latest", "g", Consumed[string, string]{}, nop)
			toOut(b)
		},
		"Process names the global store": func(b *Builder) {
			AddGlobalStore(b, "s", "g", Consumed[string, string]{}, nop)
			Stream(b, "in", Consumed[string, string]{}).Process(stream.ProcessorFunc(func(*stream.Context, *stream.Record) error { return nil }), "s")
		},
	})
}
