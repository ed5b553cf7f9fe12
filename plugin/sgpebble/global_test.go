package sgpebble_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/topology"
)

// A global store on Pebble lives under state.dir/<application.id>/global/<store> and is rebuilt
// from its topic at every start: what an earlier run left there is not read again (the second run's
// topic, on a cluster of its own, is empty, so its store is too).
func TestGlobalStoreOnPebble(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default("globalpebble")
	cfg.StateDir = dir
	topo, err := topology.MustNew(topology.Subtopology{ID: "1", SourceTopics: []string{"in"}}).
		WithGlobalStores(topology.GlobalStore{Subtopology: "0", Name: "users", Topic: "users-in"})
	if err != nil {
		t.Fatal(err)
	}
	procs := stream.Processors{
		"0": stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error { return c.Store("users").Put(r.Key, r.Value) }),
		"1": stream.ProcessorFunc(func(*stream.Context, *stream.Record) error { return nil }),
	}
	get := func(d *streamtest.Driver, key string) (string, bool) {
		t.Helper()
		st, err := d.Store("users")
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := st.Get([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		return string(v), ok
	}

	d, err := streamtest.New(cfg, topo, procs, stream.WithStores(sgpebble.New(), "users"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("users-in", []byte("u1"), []byte("Ann"), time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	if v, ok := get(d, "u1"); !ok || v != "Ann" {
		t.Fatalf("u1 = %q %v, want Ann", v, ok)
	}
	if _, err := os.Stat(filepath.Join(dir, "globalpebble", "global", "users")); err != nil {
		t.Fatalf("the store's directory: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = streamtest.New(cfg, topo, procs, stream.WithStores(sgpebble.New(), "users"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, ok := get(d, "u1"); ok {
		t.Fatalf("u1 = %q after a restart on an empty topic, want absent", v)
	}
}
