package sgpebble_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// A session store and a versioned store on Pebble behave as in memory: a session count merging
// sessions (removals and puts of session keys), and a stream joined with a versioned table as of
// each record's time. The expected outputs follow Kafka Streams' semantics: sessions within a 5 s gap
// merge into one, counted; a record finds the price valid at its time.
func TestSessionAndVersionedStoresOnPebble(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default("dslpebble")
	cfg.StateDir = dir
	cfg.Runtime.StateStoreCacheMaxBytes = -1
	b := dsl.NewBuilder()
	dsl.SessionWindowedBy(dsl.Stream(b, "clicks", dsl.Consumed[string, string]{}).GroupByKey(), windowed.OfInactivityGapWithNoGrace(5*time.Second)).
		Count(dsl.Materialized[string, int64]{Name: "sessions"}).
		ToStream().To("session-counts", dsl.Produced[windowed.Key[string], int64]{Key: windowed.SessionKeySerde(serde.String)})
	prices := dsl.Table(b, "prices", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "prices", HistoryRetention: time.Minute})
	dsl.Join(dsl.Stream(b, "orders", dsl.Consumed[string, string]{}), prices, func(_, o, p string) string { return o + "@" + p }).
		To("priced", dsl.Produced[string, string]{})
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streamtest.New(cfg, topo, procs, stream.WithStores(sgpebble.New(), "sessions", "prices"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, r := range []struct {
		topic, k, v string
		ts          int64
	}{
		{"clicks", "u", "c", 1000}, {"clicks", "u", "c", 4000}, {"clicks", "u", "c", 8000}, {"clicks", "u", "c", 20000},
		{"prices", "p", "10", 1000}, {"prices", "p", "12", 5000}, {"prices", "p", "11", 3000},
		{"orders", "p", "o1", 2000}, {"orders", "p", "o2", 4000}, {"orders", "p", "o3", 6000},
	} {
		if err := d.Pipe(r.topic, []byte(r.k), []byte(r.v), time.UnixMilli(r.ts)); err != nil {
			t.Fatal(err)
		}
		if err := d.Settle(); err != nil {
			t.Fatal(err)
		}
	}
	sessions, err := streamtest.Output(d, "session-counts", windowed.SessionKeySerde(serde.String), serde.Int64).Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sessions {
		if r.NullValue {
			got = append(got, fmt.Sprintf("%s[%d,%d]=null", r.Key.Key, r.Key.Window.Start, r.Key.Window.End))
			continue
		}
		got = append(got, fmt.Sprintf("%s[%d,%d]=%d", r.Key.Key, r.Key.Window.Start, r.Key.Window.End, r.Value))
	}
	// [1,1]=1; merged into [1,4]=2 (the old session deleted), then into [1,8]=3; 20 s is a session
	// of its own.
	want := []string{"u[1000,1000]=1", "u[1000,1000]=null", "u[1000,4000]=2", "u[1000,4000]=null", "u[1000,8000]=3", "u[20000,20000]=1"}
	if !slices.Equal(got, want) {
		t.Errorf("session counts\n got %v\nwant %v", got, want)
	}
	priced, err := streamtest.Output(d, "priced", serde.String, serde.String).Read()
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range priced {
		got = append(got, r.Value)
	}
	if want := []string{"o1@10", "o2@11", "o3@12"}; !slices.Equal(got, want) {
		t.Errorf("priced %v, want %v", got, want)
	}
	for _, st := range []string{"sessions", "prices"} {
		matches, err := filepath.Glob(filepath.Join(dir, "dslpebble", "*", st))
		if err != nil || len(matches) == 0 {
			t.Errorf("no Pebble directory for %s under %s: %v", st, dir, err)
			continue
		}
		if _, err := os.Stat(matches[0]); err != nil {
			t.Error(err)
		}
	}
}
