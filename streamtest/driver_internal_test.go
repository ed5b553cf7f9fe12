package streamtest

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

var errRefused = errors.New("refused")

// echo is an application that writes each record of "in" to "out" as it is, and fails on the
// value "fail".
func echo(t *testing.T, cfg config.Config) *Driver {
	t.Helper()
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}})
	d, err := New(cfg, topo, stream.Processors{"0": stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error {
		if string(r.Value) == "fail" {
			return errRefused
		}
		return c.Send("out", r.Key, r.Value)
	})})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// New returns once the application runs; reading with nothing piped, or nothing new, returns nothing
// (at once: an input that never had a record is settled); one record piped is read back; Close
// removes the state directory the driver made.
func TestDriverLifecycle(t *testing.T) {
	d := echo(t, config.Default("echo"))
	if st := d.App().State(); st != stream.Running {
		t.Fatalf("after New the application is %v, want RUNNING", st)
	}
	out := Output(d, "out", serde.String, serde.String)
	if recs, err := out.Read(); err != nil || len(recs) != 0 {
		t.Fatalf("nothing piped: %v %v", recs, err)
	}
	if err := d.Pipe("in", []byte("k"), []byte("v"), time.UnixMilli(5)); err != nil {
		t.Fatal(err)
	}
	recs, err := out.Read()
	if err != nil || len(recs) != 1 || recs[0].Key != "k" || recs[0].Value != "v" || recs[0].Timestamp.UnixMilli() != 5 {
		t.Fatalf("one record piped: %+v %v", recs, err)
	}
	if recs, err := out.Read(); err != nil || len(recs) != 0 {
		t.Fatalf("nothing new: %v %v", recs, err)
	}
	dir := d.dir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the driver's state directory: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the state directory is still there after Close: %v", err)
	}
}

// A state.dir given is used as it is (the process ID is kept there), and kept after Close.
func TestDriverKeepsAGivenStateDir(t *testing.T) {
	cfg := config.Default("echo")
	cfg.StateDir = t.TempDir()
	d := echo(t, cfg)
	if d.dir != "" {
		t.Errorf("the driver made a state directory of its own: %s", d.dir)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(cfg.StateDir); err != nil || len(entries) == 0 {
		t.Fatalf("the given state.dir holds %v (%v); want the process's files", entries, err)
	}
}

// When the application fails, reading returns its error with the inputs it had not committed.
func TestDriverNamesTheInputsBehind(t *testing.T) {
	d := echo(t, config.Default("echo"))
	if err := d.Pipe("in", []byte("k"), []byte("fail"), time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	_, err := d.ReadRaw("out")
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "in[0] committed 0 of 1") {
		t.Fatalf("ReadRaw: %v, want the processor's error and in[0] behind", err)
	}
	if err := d.Close(); !errors.Is(err, errRefused) {
		t.Fatalf("Close: %v", err)
	}
}
