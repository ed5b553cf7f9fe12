package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// TestWindowStoreOnPebbleRestoresOnlyTheTail: a windowed count (1-minute tumbling windows, kept a
// minute) in a Pebble window store. Member A counts 300 orders spread over 10 minutes of event time
// and stops; member B (another state.dir) counts 200 more and stops; A restarts: it restores exactly
// the 200 changelog records B wrote after its checkpoint, and its counts go on exactly. While A
// runs, the window store answers for the newest windows and no longer for those its retention let
// go (expired, their segments deleted with a range tombstone).
func TestWindowStoreOnPebbleRestoresOnlyTheTail(t *testing.T) {
	group := fmt.Sprintf("totals-windows-%d", time.Now().UnixNano())
	cl := client(t)
	adm := kadm.NewClient(cl)
	freshTopics(t, adm, topology.Names{AppID: group}.ChangelogTopic("counts"))
	dir := t.TempDir()
	// Recent times (an old timestamp would fall to the changelog's retention), aligned to the
	// minute, one order every 2 s: 30 a window.
	base := time.Now().Add(-30*time.Minute).UnixMilli() / 60000 * 60000
	want := map[string]int64{}
	send := func(from, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			c, ts := fmt.Sprintf("c%02d", i%7), base+int64(i)*2000
			v, _ := serde.Int64.Encode(1)
			recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(c), Value: v, Timestamp: time.UnixMilli(ts)})
			want[string(windowed.AppendTimeKey(nil, []byte(c), ts/60000*60000))]++
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var restoredA, restoredB, restoredA2 int
	send(0, 300)
	runWindowed(t, adm, group, filepath.Join(dir, "a"), &restoredA, nil)
	send(300, 200)
	runWindowed(t, adm, group, filepath.Join(dir, "b"), &restoredB, nil)
	runWindowed(t, adm, group, filepath.Join(dir, "a"), &restoredA2, func(app *stream.App) {
		// The newest window of c04 (order 494 at base+988 s: the window at 960 s) is kept; its window
		// at base (orders 4, 11, …) is long expired.
		st, err := app.Store("counts")
		if err != nil {
			t.Fatal(err)
		}
		newest := windowed.AppendStoreKey(nil, []byte("c04"), base+960000, 0)
		if v, ok, err := st.Get(newest); err != nil || !ok || len(v) != 16 {
			t.Fatalf("the newest window: %x %v %v", v, ok, err)
		}
		if _, ok, err := st.Get(windowed.AppendStoreKey(nil, []byte("c04"), base, 0)); ok || err != nil {
			t.Fatalf("an expired window is still read: %v %v", ok, err)
		}
	})
	if restoredA != 0 || restoredB != 300 || restoredA2 != 200 {
		t.Fatalf("changelog records restored: A %d (want 0), B %d (want 300: the whole changelog), A again %d (want 200: only what B wrote after A's checkpoint)",
			restoredA, restoredB, restoredA2)
	}
	got := outputTotals(t, adm)
	for k, n := range want {
		if s := got[k]; len(s) == 0 || s[len(s)-1] != n {
			t.Errorf("window %x: counts %v, want the last %d", k, s, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d windows written, want %d", len(got), len(want))
	}
}

// runWindowed runs the windowed count in-process (group, stateDir, Pebble) until it is Running and
// everything is committed, calls check (if any) with the app, then stops it cleanly; restored counts
// the changelog records it restored.
func runWindowed(t *testing.T, adm *kadm.Client, group, stateDir string, restored *int, check func(*stream.App)) {
	t.Helper()
	cfg, err := config.FromMap(map[string]string{"bootstrap.servers": bootstrap, "application.id": group,
		"commit.interval.ms": "200", "state.dir": stateDir,
		"statestore.cache.max.bytes": "0"}) // every update to the changelog: one record an order
	if err != nil {
		t.Fatal(err)
	}
	b := dsl.NewBuilder()
	g := dsl.Stream(b, "orders", dsl.Consumed[string, int64]{Value: serde.Int64}).GroupByKey()
	dsl.WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute)).Count(dsl.Materialized[string, int64]{Name: "counts"}).
		ToStream().To("order-totals", dsl.Produced[windowed.Key[string], int64]{})
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCaughtUp(t, adm, group, stateDir, cfg, topo, procs, restored, check)
}
