package streamtest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/topology"
)

var errBad = errors.New("a bad record")

// countApp is a Processor API app: it counts the records of "in" per key in the store "counts" and
// writes each new count to "out"; a record whose value is "bad" fails it.
func countApp(t *testing.T, guarantee config.Guarantee) *streamtest.Driver {
	t.Helper()
	cfg := config.Default("count")
	cfg.Runtime.Guarantee = guarantee
	counts := stream.KeyValue("counts", serde.String, serde.Int64)
	out := stream.Output("out", serde.String, serde.Int64)
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"},
		StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: "count"}.KeyValueChangelog("counts")}})
	proc := stream.Typed(serde.String, serde.String, func(c *stream.Context, k, v string) error {
		if v == "bad" {
			return errBad
		}
		n, _, err := counts.Get(c, k)
		if err == nil {
			err = counts.Put(c, k, n+1)
		}
		if err == nil {
			err = out.Send(c, k, n+1)
		}
		return err
	})
	d, err := streamtest.New(cfg, topo, stream.Processors{"0": proc})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDriverRunsAProcessorAPIApp(t *testing.T) {
	for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) {
			d := countApp(t, g)
			in := streamtest.Input(d, "in", serde.String, serde.String)
			out := streamtest.Output(d, "out", serde.String, serde.Int64)
			for i, k := range []string{"a", "b", "a"} {
				if err := in.Pipe(k, "v", time.UnixMilli(int64(10+i))); err != nil {
					t.Fatal(err)
				}
			}
			recs, err := out.Read()
			if err != nil {
				t.Fatal(err)
			}
			type kv struct {
				k  string
				n  int64
				ts int64
			}
			var got []kv
			for _, r := range recs {
				got = append(got, kv{r.Key, r.Value, r.Timestamp.UnixMilli()})
			}
			want := []kv{{"a", 1, 10}, {"b", 1, 11}, {"a", 2, 12}}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Fatalf("out: got %v, want %v", got, want)
			}
			// A second read returns only what is new.
			if err := in.Pipe("b", "v", time.UnixMilli(20)); err != nil {
				t.Fatal(err)
			}
			if recs, err = out.Read(); err != nil || len(recs) != 1 || recs[0].Key != "b" || recs[0].Value != 2 {
				t.Fatalf("second read: %v %v, want b=2", recs, err)
			}
			st, err := d.Store("counts")
			if err != nil {
				t.Fatal(err)
			}
			if v, ok, err := st.Get([]byte("a")); err != nil || !ok || len(v) != 8 || v[7] != 2 {
				t.Fatalf("store: a = %v %v %v, want 2", v, ok, err)
			}
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

// A processor's error stops the application (processing.exception.handler's default): reading
// returns it, and so does Close.
func TestDriverReportsTheApplicationsFailure(t *testing.T) {
	d := countApp(t, config.AtLeastOnce)
	if err := streamtest.Input(d, "in", serde.String, serde.String).Pipe("a", "bad", time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := streamtest.Output(d, "out", serde.String, serde.Int64).Read(); !errors.Is(err, errBad) {
		t.Fatalf("Read: %v, want the processor's error", err)
	}
	if err := d.Close(); !errors.Is(err, errBad) {
		t.Fatalf("Close: %v, want the processor's error", err)
	}
}

// ticking is a processor whose Init schedules a wall-clock punctuation every minute, each writing a
// "tick" record to "ticks".
type ticking struct{}

func (ticking) Process(*stream.Context, *stream.Record) error { return nil }

func (ticking) Init(c *stream.Context) error {
	_, err := c.Schedule(time.Minute, stream.WallClock, func(c *stream.Context, at time.Time) error {
		return c.Send("ticks", []byte("tick"), []byte(at.UTC().Format(time.RFC3339)))
	})
	return err
}

// AdvanceWallClock fires the wall-clock punctuations due by the new time, and their writes are
// there when it returns, as TopologyTestDriver's advanceWallClockTime does.
func TestAdvanceWallClockFiresPunctuations(t *testing.T) {
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}})
	d, err := streamtest.New(config.Default("ticks"), topo, stream.Processors{"0": ticking{}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if recs, err := d.ReadRaw("ticks"); err != nil || len(recs) != 0 {
		t.Fatalf("before the clock moved: %d ticks, %v", len(recs), err)
	}
	if err := d.AdvanceWallClock(90 * time.Second); err != nil {
		t.Fatal(err)
	}
	recs, err := d.ReadRaw("ticks")
	if err != nil || len(recs) != 1 {
		t.Fatalf("after 90 s: %d ticks, %v; want 1", len(recs), err)
	}
	if err := d.AdvanceWallClock(-time.Second); err == nil {
		t.Fatal("the clock went back")
	}
}
