package stream_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/streamtest"
	"github.com/streamsgroup/streamsgroup/topology"
)

// enrichApp is a Processor API app with a global store: "users" holds what the global topic
// "users-in" holds (a null value deletes a key); each record of "in" is written to "out" with the
// user its value names ("?" for none). keeper replaces the global store's processor when not nil.
func enrichApp(t *testing.T, guarantee config.Guarantee, keeper stream.Processor) (*streamtest.Driver, error) {
	t.Helper()
	cfg := config.Default("enrich")
	cfg.Runtime.Guarantee = guarantee
	users := stream.KeyValue("users", serde.String, serde.String)
	out := stream.Output("out", serde.String, serde.String)
	topo, err := topology.MustNew(topology.Subtopology{ID: "1", SourceTopics: []string{"in"}}).
		WithGlobalStores(topology.GlobalStore{Subtopology: "0", Name: "users", Topic: "users-in"})
	if err != nil {
		t.Fatal(err)
	}
	if keeper == nil {
		keeper = stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error {
			if r.Value == nil {
				return c.Store("users").Delete(r.Key)
			}
			return c.Store("users").Put(r.Key, r.Value)
		})
	}
	enrich := stream.Typed(serde.String, serde.String, func(c *stream.Context, k, v string) error {
		u, ok, err := users.Get(c, v)
		if err != nil {
			return err
		}
		if !ok {
			u = "?"
		}
		return out.Send(c, k, v+"="+u)
	})
	return streamtest.New(cfg, topo, stream.Processors{"0": keeper, "1": enrich})
}

func pipe(t *testing.T, d *streamtest.Driver, topic, key, value string, ms int64) {
	t.Helper()
	var v []byte
	if value != "\\N" {
		v = []byte(value)
	}
	if err := d.Pipe(topic, []byte(key), v, time.UnixMilli(ms)); err != nil {
		t.Fatal(err)
	}
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
}

func readStrings(t *testing.T, d *streamtest.Driver, topic string) []string {
	t.Helper()
	raws, err := d.ReadRaw(topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range raws {
		got = append(got, string(r.Key)+":"+string(r.Value))
	}
	return got
}

func TestGlobalStoreIsReadByEveryTaskAndFollowsItsTopic(t *testing.T) {
	for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
		t.Run(string(g), func(t *testing.T) {
			d, err := enrichApp(t, g, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			pipe(t, d, "in", "r1", "u1", 1)        // before the user exists
			pipe(t, d, "users-in", "u1", "Ann", 2) // the global store learns u1
			pipe(t, d, "in", "r2", "u1", 3)
			pipe(t, d, "users-in", "u1", "Bob", 4) // an update
			pipe(t, d, "in", "r3", "u1", 5)
			pipe(t, d, "users-in", "u1", "\\N", 6) // a deletion
			pipe(t, d, "in", "r4", "u1", 7)
			want := []string{"r1:u1=?", "r2:u1=Ann", "r3:u1=Bob", "r4:u1=?"}
			if got := readStrings(t, d, "out"); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("out = %q, want %q", got, want)
			}
			pipe(t, d, "users-in", "u2", "Cy", 8)
			st, err := d.Store("users")
			if err != nil {
				t.Fatal(err)
			}
			if v, ok, err := st.Get([]byte("u2")); err != nil || !ok || string(v) != "Cy" {
				t.Fatalf("query u2 = %q %v %v, want Cy", v, ok, err)
			}
			if _, ok, err := st.Get([]byte("u1")); err != nil || ok {
				t.Fatalf("query u1 = %v %v, want deleted", ok, err)
			}
			if n, err := st.ApproximateCount(); err != nil || n != 1 {
				t.Fatalf("count = %d %v, want 1", n, err)
			}
			it, err := st.Prefix([]byte("u"))
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for it.Next() {
				keys = append(keys, string(it.Key()))
			}
			it.Close()
			if strings.Join(keys, ",") != "u2" {
				t.Fatalf("prefix u = %q, want [u2]", keys)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.Get([]byte("u2")); !errors.Is(err, stream.ErrNotRunning) {
				t.Fatalf("query after the end: %v, want ErrNotRunning", err)
			}
		})
	}
}

func TestGlobalProcessorSeesItsRecordContext(t *testing.T) {
	// (That a global store is restored before the first record is processed is shown against the
	// real broker: TestDSLGlobalTableJoinMixedGroup fills the topic before any member starts.)
	d, err := enrichApp(t, config.AtLeastOnce, stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error {
		// The keeper sees the records of its topic with their metadata, and stream time moves.
		topic, _, offset, ok := c.RecordMetadata()
		// The records come in time order from 0 ms: stream time is each one's time, 0 ms included.
		if !ok || topic != "users-in" || offset != r.Offset || c.Timestamp() != r.Timestamp || !c.StreamTime().Equal(r.Timestamp) {
			return errors.New("bad record context in the global processor")
		}
		return c.Store("users").Put(r.Key, r.Value)
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, u := range []string{"a", "b", "c"} {
		pipe(t, d, "users-in", u, strings.ToUpper(u), int64(i))
	}
	pipe(t, d, "in", "r", "c", 10)
	if got := readStrings(t, d, "out"); len(got) != 1 || got[0] != "r:c=C" {
		t.Fatalf("out = %q", got)
	}
}

func TestGlobalStoreIsReadOnlyOutsideItsProcessor(t *testing.T) {
	cfg := config.Default("ro")
	topo, err := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"}}).
		WithGlobalStores(topology.GlobalStore{Subtopology: "1", Name: "g", Topic: "g-in"})
	if err != nil {
		t.Fatal(err)
	}
	keep := stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error { return c.Store("g").Put(r.Key, r.Value) })
	write := stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error { return c.Store("g").Put(r.Key, r.Value) })
	d, err := streamtest.New(cfg, topo, stream.Processors{"0": write, "1": keep})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Pipe("in", []byte("k"), []byte("v"), time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	err = d.Settle()
	var pe *stream.ProcessingError
	if !errors.As(err, &pe) || !errors.Is(err, stream.ErrGlobalStoreReadOnly) {
		t.Fatalf("a stream processor's write to a global store: %v, want a ProcessingError wrapping ErrGlobalStoreReadOnly", err)
	}
}

func TestGlobalProcessorCannotSendOrSchedule(t *testing.T) {
	for name, fn := range map[string]func(c *stream.Context) error{
		"send": func(c *stream.Context) error { return c.Send("out", nil, nil) },
		"schedule": func(c *stream.Context) error {
			_, err := c.Schedule(time.Second, stream.WallClock, func(*stream.Context, time.Time) error { return nil })
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := enrichApp(t, config.AtLeastOnce, stream.ProcessorFunc(func(c *stream.Context, _ *stream.Record) error { return fn(c) }))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Pipe("users-in", []byte("u"), []byte("v"), time.UnixMilli(1)); err != nil {
				t.Fatal(err)
			}
			if err := d.Settle(); !errors.Is(err, stream.ErrGlobalContext) {
				t.Fatalf("Settle: %v, want ErrGlobalContext", err)
			}
		})
	}
}

func TestGlobalRecordErrorsFollowTheHandlers(t *testing.T) {
	fails := stream.Typed(serde.String, serde.Int64, func(c *stream.Context, k string, v int64) error {
		if v < 0 {
			return errors.New("negative")
		}
		return c.Store("users").Put([]byte(k), []byte("n"))
	})
	negative := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	cases := []struct {
		name          string
		value         []byte
		deser, proc   config.ErrorPolicy
		global        bool // processing.exception.handler.global.enabled
		wantErr       any
		wantProcessed bool
	}{
		{"undecodable, fail", []byte("x"), config.LogAndFail, config.LogAndFail, false, new(*stream.DeserializationError), false},
		{"undecodable, continue", []byte("x"), config.LogAndContinue, config.LogAndFail, false, nil, true},
		{"failing, fail", negative, config.LogAndFail, config.LogAndFail, true, new(*stream.ProcessingError), false},
		{"failing, continue", negative, config.LogAndFail, config.LogAndContinue, true, nil, true},
		// Kafka Streams 4.4 applies processing.exception.handler to global stores only when told.
		{"failing, continue, not for globals", negative, config.LogAndFail, config.LogAndContinue, false, new(*stream.ProcessingError), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default("handlers")
			cfg.Runtime.OnDeserializationError, cfg.Runtime.OnProcessingError = tc.deser, tc.proc
			cfg.Runtime.GlobalProcessingErrors = tc.global
			topo, err := topology.MustNew(topology.Subtopology{ID: "1", SourceTopics: []string{"in"}}).
				WithGlobalStores(topology.GlobalStore{Subtopology: "0", Name: "users", Topic: "users-in"})
			if err != nil {
				t.Fatal(err)
			}
			seen := stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error {
				_, ok, err := c.Store("users").Get([]byte("z"))
				if err == nil && ok {
					err = c.Send("out", r.Key, r.Value)
				}
				return err
			})
			d, err := streamtest.New(cfg, topo, stream.Processors{"0": fails, "1": seen})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Pipe("users-in", []byte("bad"), tc.value, time.UnixMilli(1)); err != nil {
				t.Fatal(err)
			}
			err = d.Settle()
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Settle: %v", err)
				}
				// The bad record was skipped: the next one is applied.
				pipe(t, d, "users-in", "z", "\x00\x00\x00\x00\x00\x00\x00\x01", 2)
				pipe(t, d, "in", "r", "v", 3)
				if got := readStrings(t, d, "out"); len(got) != 1 {
					t.Fatalf("out = %q, want the record that saw z", got)
				}
				if d.App().Metrics().Dropped != 1 {
					t.Fatalf("dropped = %d, want 1", d.App().Metrics().Dropped)
				}
				return
			}
			if !errors.As(err, tc.wantErr) {
				t.Fatalf("Settle: %v (%T), want %T", err, err, tc.wantErr)
			}
		})
	}
}

func TestNewChecksGlobalStores(t *testing.T) {
	base := topology.MustNew(topology.Subtopology{ID: "1", SourceTopics: []string{"in"},
		StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: "chk"}.KeyValueChangelog("local")}})
	nop := stream.ProcessorFunc(func(*stream.Context, *stream.Record) error { return nil })
	cfg := config.Default("chk")
	cfg.BootstrapServers = []string{"localhost:1"}
	cases := []struct {
		name   string
		global topology.GlobalStore
		procs  stream.Processors
		want   string
	}{
		{"no processor", topology.GlobalStore{Subtopology: "0", Name: "g", Topic: "g-in"}, stream.Processors{"1": nop},
			`global subtopology "0" (store "g") has no processor`},
		{"a subtopology's store name", topology.GlobalStore{Subtopology: "0", Name: "local", Topic: "g-in"}, stream.Processors{"0": nop, "1": nop},
			`store "local" is both a global store and a store of a subtopology`},
		{"connected elsewhere", topology.GlobalStore{Subtopology: "0", Name: "g", Topic: "g-in"},
			stream.Processors{"0": nop, "1": stream.Connect(nop, stream.StoreName("local"), stream.StoreName("g"))},
			`the processor of subtopology "1" is connected to global store "g"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := base.WithGlobalStores(tc.global)
			if err != nil {
				t.Fatal(err)
			}
			_, err = stream.New(cfg, topo, tc.procs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
	// Its own processor may be connected to it (as the DSL connects it).
	topo, err := base.WithGlobalStores(topology.GlobalStore{Subtopology: "0", Name: "g", Topic: "g-in"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.New(cfg, topo, stream.Processors{"0": stream.Connect(nop, stream.StoreName("g")), "1": nop}); err != nil {
		t.Fatalf("New: %v", err)
	}
}
