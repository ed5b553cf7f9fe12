// Command procapp is the Go side of the processing phase of `make bench-compare`
// (bench/cmd/benchcompare): one stream.App (the runtime, one member per stream thread) running one of the apps that
// bench/javaapp's ProcApp runs on Kafka Streams, on the same topics with the same serdes, or a bare
// kgo consumer reading the input (the broker's own limit on this machine).
//
//	-mode map      subtopology 0: input → value upper-cased → output (stateless)
//	-mode count    subtopology 0: input → count per key in the store "counts" (changelog
//	               <app>-counts-changelog; keys strings, counts 8-byte big-endian as Kafka's
//	               LongSerializer) → every new count to output
//	-mode consume  no group: a kgo client reads every partition of input from the start to the end
//	               offsets it found at start
//	-mode handwritten  count, written by hand on the runtime's pieces (membership, consume, commit)
//	               with a map per task as its store (baselines.go)
//	-mode pipe     a bare kgo consume→produce pipe in a classic consumer group (baselines.go)
//	-mode dsl-count, dsl-count-cache, dsl-window, dsl-hopping, dsl-session, dsl-join, dsl-stream-join
//	               the DSL's count (without and with the record cache), tumbling 1-minute count,
//	               hopping 1-minute count (10 s advance), session count (5-minute gap), stream-table
//	               join (each record with its key's previous value) and stream-stream join (the
//	               input with a mapped copy, within 1 ms), as ProcApp's
//
// -store memory|pebble picks the store of count (store.Memory or plugin/sgpebble), -guarantee
// at_least_once|exactly_once_v2 the processing guarantee. Stdout carries only these lines, times in
// microseconds since the Unix epoch:
//
//	MAIN <t>             first thing in main()
//	FIRST <t> <p>        the first record of partition p's task processed since the task last
//	                     started processing in this process
//	RESTORING <t>        the member was first handed active tasks (their restores begin), once the
//	                     runtime's OnTasksAssigned returned
//	ASSIGNED <t>         just before that RESTORING: when that OnTasksAssigned began (it opens the
//	                     tasks' stores and looks up their changelogs' ends)
//	RESTORED <t> <n>     the active tasks' restores have applied n ≥ -expect-restore records
//	READY <t> <p> <n>    partition p's task is initialised, its restore done, and about to process
//	                     (its processor's Init); n is the records the active tasks' restores have
//	                     applied in this process so far
//	DONE <t> <n>         consume: n records read, every partition at its end offset (then it
//	                     waits for SIGTERM)
//
// SIGTERM (or SIGINT) stops it cleanly: the tasks are committed and the member leaves.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/streamsgroup/streamsgroup/windowed"
)

func micros() int64 { return time.Now().UnixMicro() }

// emit writes one protocol line; each line is one write, so lines never interleave (os.Stdout's
// writes are safe from several goroutines).
func emit(format string, args ...any) {
	_, _ = fmt.Fprintf(os.Stdout, format+"\n", args...)
}

func main() {
	emit("MAIN %d", micros())
	if path := os.Getenv("PROCAPP_CPUPROFILE"); path != "" {
		// A CPU profile of the whole run, for finding where the runtime's time goes:
		// PROCAPP_CPUPROFILE=/tmp/prof make bench-compare … writes /tmp/prof.<pid>.
		stopProfile := profile(fmt.Sprintf("%s.%d", path, os.Getpid()))
		defer stopProfile()
	}
	bootstrap := flag.String("bootstrap", os.Getenv("STREAMSGROUP_BOOTSTRAP"), "Kafka bootstrap address")
	appID := flag.String("app", "", "application.id (the group)")
	input := flag.String("input", "", "input topic")
	output := flag.String("output", "", "output topic (map, count)")
	mode := flag.String("mode", "count", "map, count, dsl-count, dsl-count-cache, dsl-window, dsl-hopping, dsl-session, dsl-join, dsl-stream-join, consume, handwritten or pipe")
	kind := flag.String("store", "memory", "store of count: memory or pebble")
	guarantee := flag.String("guarantee", "at_least_once", "processing.guarantee: at_least_once or exactly_once_v2")
	commitMS := flag.Int("commit-ms", 0, "commit.interval.ms (0: the runtime's default for the guarantee)")
	stateDir := flag.String("state-dir", "", "state.dir")
	expect := flag.Int64("expect-restore", 0, "print RESTORED once the active restores applied this many records")
	threads := flag.Int("threads", 1, "num.stream.threads (map, count)")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if *mode == "consume" {
		if err := consumeAll(*bootstrap, *input); err != nil {
			fail(err)
		}
		// Stay until SIGTERM, so that the driver reads the process's CPU and peak RSS after DONE.
		ctx, stop := stream.SignalContext(context.Background())
		defer stop()
		<-ctx.Done()
		return
	}
	if *appID == "" || *input == "" || *output == "" {
		fail(fmt.Errorf("-app, -input and -output are needed"))
	}
	if *mode == "handwritten" || *mode == "pipe" {
		ctx, stop := stream.SignalContext(context.Background())
		defer stop()
		run := handwritten
		if *mode == "pipe" {
			run = pipe
		}
		if err := run(ctx, *bootstrap, *appID, *input, *output); err != nil {
			fail(err)
		}
		return
	}
	keys := map[string]string{"application.id": *appID, "bootstrap.servers": *bootstrap,
		"processing.guarantee": *guarantee, "auto.offset.reset": "earliest"}
	if *commitMS > 0 {
		keys["commit.interval.ms"] = strconv.Itoa(*commitMS)
	}
	if *stateDir != "" {
		keys["state.dir"] = *stateDir
	}
	if *threads > 1 {
		keys["num.stream.threads"] = strconv.Itoa(*threads)
	}
	cfg, err := config.FromMap(keys)
	if err != nil {
		fail(err)
	}

	// first marks each task's first record since it last started processing here (Init), so that a
	// task that leaves and comes back is marked again. With several stream threads the processor
	// runs on all of them: the marks are guarded.
	var firstMu sync.Mutex
	first := map[int32]bool{}
	mark := func(c *stream.Context) {
		p := c.Task().Partition
		firstMu.Lock()
		defer firstMu.Unlock()
		if !first[p] {
			first[p] = true
			emit("FIRST %d %d", micros(), p)
		}
	}
	var topo *topology.Topology
	var proc stream.Processor
	var opts []stream.Option
	var dslStores []stream.Store // the stores a DSL mode declares, given to Connect again around the marking wrapper
	var restored atomic.Int64    // the active restores' records (every stream thread's)
	switch *mode {
	case "map":
		topo = topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{*input}})
		proc = stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error {
			mark(c)
			return c.Send(*output, r.Key, bytes.ToUpper(r.Value))
		})
	case "count":
		counts := stream.KeyValue("counts", serde.String, serde.Int64)
		out := stream.Output(*output, serde.String, serde.Int64)
		n := topology.Names{AppID: *appID}
		topo = topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{*input},
			StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog(counts.Name())}})
		proc = stream.Typed(serde.String, serde.Bytes, func(c *stream.Context, key string, _ []byte) error {
			mark(c)
			v, _, err := counts.Get(c, key)
			if err != nil {
				return err
			}
			if err := counts.Put(c, key, v+1); err != nil {
				return err
			}
			return out.Send(c, key, v+1)
		})
		switch *kind {
		case "memory":
			opts = append(opts, stream.WithStores(store.Memory))
		case "pebble":
			opts = append(opts, stream.WithStores(sgpebble.New()))
		default:
			fail(fmt.Errorf("-store %q: memory or pebble", *kind))
		}
		var restoring atomic.Bool // the state listener may run on the member's goroutine too
		opts = append(opts,
			// The restore begins once the member is handed its active tasks (the runtime opens their
			// stores and starts reading their changelogs in OnTasksAssigned): the hook that follows
			// it marks the start, RESTORING, and ASSIGNED says when that callback began. (The App's
			// RESTORING state is only entered once the member is Stable, which a small restore can
			// beat; so can the tasks' Init, READY, the hook that follows the callback.)
			stream.WithHooks(&assigned{fn: func(callbackStart time.Time) {
				if restoring.CompareAndSwap(false, true) {
					if !callbackStart.IsZero() {
						emit("ASSIGNED %d", callbackStart.UnixMicro())
					}
					emit("RESTORING %d", micros())
				}
			}}),
			stream.WithRestoreListener(func(b stream.RestoreBatch) {
				if b.Standby {
					return
				}
				after := restored.Add(int64(b.Records))
				if before := after - int64(b.Records); *expect > 0 && before < *expect && after >= *expect {
					emit("RESTORED %d %d", micros(), after)
				}
			}))
	case "dsl-count", "dsl-count-cache":
		// The count above written with the DSL: stream(input).groupByKey().count(Materialized.as("counts"))
		// .toStream().to(output), the same processing; what the DSL costs over the Processor API.
		// dsl-count keeps the store out of the record cache, as the Processor API count has none;
		// dsl-count-cache has it at Kafka's default size (statestore.cache.max.bytes, 10 MiB).
		b := dsl.NewBuilder()
		dsl.Stream(b, *input, dsl.Consumed[string, []byte]{}).GroupByKey().
			Count(dsl.Materialized[string, int64]{Name: "counts", CachingDisabled: *mode == "dsl-count"}).ToStream().To(*output, dsl.Produced[string, int64]{})
		var procs stream.Processors
		if topo, procs, err = b.Build(cfg); err != nil {
			fail(err)
		}
		proc = dslMarked{inner: procs["0"], mark: mark}
		opts = append(opts, stream.WithStores(store.Memory))
	case "dsl-window", "dsl-session", "dsl-join", "dsl-hopping", "dsl-stream-join":
		// Issue 28's DSL workloads, without the record cache on either side: a tumbling 1-minute count,
		// a session count (a 5-minute gap: each key's records make one growing session), and a
		// stream-table join of each record with its key's previous value (the stream read as a table
		// first, then joined with it).
		b := dsl.NewBuilder()
		in := dsl.Stream(b, *input, dsl.Consumed[string, []byte]{})
		var decl []stream.Store
		switch *mode {
		case "dsl-window":
			dsl.WindowedBy(in.GroupByKey(), windowed.OfSizeWithNoGrace(time.Minute)).
				Count(dsl.Materialized[string, int64]{Name: "counts", CachingDisabled: true}).
				ToStream().To(*output, dsl.Produced[windowed.Key[string], int64]{})
			decl = []stream.Store{stream.TimestampedWindowStore("counts", time.Minute)}
		case "dsl-hopping":
			// Hopping 1-minute windows advancing by 10 s: every record counts in six windows.
			dsl.WindowedBy(in.GroupByKey(), windowed.OfSizeWithNoGrace(time.Minute).AdvanceBy(10*time.Second)).
				Count(dsl.Materialized[string, int64]{Name: "counts", CachingDisabled: true}).
				ToStream().To(*output, dsl.Produced[windowed.Key[string], int64]{})
			decl = []stream.Store{stream.TimestampedWindowStore("counts", time.Minute)}
		case "dsl-stream-join":
			// A stream-stream join of the input with itself (a mapped copy) within 1 ms: every record
			// kept in both join stores and looked up in the other, few joined (a key's records are
			// about 10 ms apart in the bench's input).
			copied := dsl.MapValues(in, func(_ string, v []byte) []byte { return v })
			dsl.JoinStreams(in, copied, func(_ string, v, _ []byte) []byte { return v },
				windowed.JoinOfTimeDifferenceWithNoGrace(time.Millisecond), dsl.StreamJoined[string, []byte, []byte]{StoreName: "j"}).
				To(*output, dsl.Produced[string, []byte]{})
			decl = []stream.Store{stream.Window[[]byte, []byte]("j-this-join-store", 2*time.Millisecond, nil, nil).RetainDuplicates().WithRecordHeaders(),
				stream.Window[[]byte, []byte]("j-other-join-store", 2*time.Millisecond, nil, nil).RetainDuplicates().WithRecordHeaders()}
		case "dsl-session":
			dsl.SessionWindowedBy(in.GroupByKey(), windowed.OfInactivityGapWithNoGrace(5*time.Minute)).
				Count(dsl.Materialized[string, int64]{Name: "counts", CachingDisabled: true}).
				ToStream().To(*output, dsl.Produced[windowed.Key[string], int64]{})
			decl = []stream.Store{stream.Session[[]byte, []byte]("counts", 5*time.Minute, nil, nil)}
		default:
			t := in.ToTable(dsl.Materialized[string, []byte]{Name: "counts", CachingDisabled: true})
			dsl.Join(in, t, func(_ string, v, _ []byte) []byte { return v }).To(*output, dsl.Produced[string, []byte]{})
			decl = []stream.Store{stream.TimestampedStore("counts")}
		}
		var procs stream.Processors
		if topo, procs, err = b.Build(cfg); err != nil {
			fail(err)
		}
		proc = dslMarked{inner: procs["0"], mark: mark}
		switch {
		case *kind == "memory":
			opts = append(opts, stream.WithStores(store.Memory))
		case *kind == "pebble" && *mode == "dsl-window":
			opts = append(opts, stream.WithStores(sgpebble.New()))
		default:
			fail(fmt.Errorf("-store %q with -mode %s: memory (or pebble with dsl-window)", *kind, *mode))
		}
		dslStores = decl
	default:
		fail(fmt.Errorf("-mode %q: map, count, dsl-count, dsl-count-cache, dsl-window, dsl-hopping, dsl-session, dsl-join, dsl-stream-join or consume", *mode))
	}
	proc = marked{Processor: proc, init: func(c *stream.Context) {
		p := c.Task().Partition
		firstMu.Lock()
		delete(first, p)
		firstMu.Unlock()
		emit("READY %d %d %d", micros(), p, restored.Load())
	}}
	if strings.HasPrefix(*mode, "dsl-count") {
		dslStores = []stream.Store{stream.TimestampedStore("counts")}
	}
	if dslStores != nil {
		proc = stream.Connect(proc, dslStores...) // as the DSL declares its stores
	}
	app, err := stream.New(cfg, topo, stream.Processors{"0": proc}, opts...)
	if err != nil {
		fail(err)
	}
	ctx, stop := stream.SignalContext(context.Background())
	defer stop()
	if err := app.Run(ctx); err != nil {
		fail(err)
	}
}

// assigned is a membership hook that calls fn whenever the member holds active tasks after a
// change of its assignment, with the time the OnTasksAssigned that handed them over began (zero
// when unknown). A member tells OnCallbackDone and then OnAssignmentChanged in one step of its loop
// goroutine; with several stream threads, several members share the hook, hence the lock.
type assigned struct {
	fn    func(callbackStart time.Time)
	mu    sync.Mutex
	start time.Time
}

// OnCallbackDone implements membership.HookCallbackDone.
func (a *assigned) OnCallbackDone(kind membership.CallbackKind, took time.Duration, err error) {
	if kind == membership.CallbackAssigned && err == nil {
		a.mu.Lock()
		a.start = time.Now().Add(-took)
		a.mu.Unlock()
	}
}

// OnAssignmentChanged implements membership.HookAssignmentChanged.
func (a *assigned) OnAssignmentChanged(owned tasks.Assignment) {
	if owned.Active.Len() > 0 {
		a.mu.Lock()
		start := a.start
		a.mu.Unlock()
		a.fn(start)
	}
}

// dslMarked is the DSL program's processor, its first record of each partition marked; it passes
// on the program's Init and its record cache's Flush and Discard (stream.Flusher).
type dslMarked struct {
	inner stream.Processor
	mark  func(*stream.Context)
}

func (d dslMarked) Process(c *stream.Context, r *stream.Record) error {
	d.mark(c)
	return d.inner.Process(c, r)
}

func (d dslMarked) Init(c *stream.Context) error { return d.inner.(stream.Initializer).Init(c) }

func (d dslMarked) Flush(c *stream.Context) error { return d.inner.(stream.Flusher).Flush(c) }

func (d dslMarked) Discard(c *stream.Context) { d.inner.(stream.Flusher).Discard(c) }

// marked is a Processor whose Init (a task starting to process here) calls init.
type marked struct {
	stream.Processor
	init func(c *stream.Context)
}

// Init implements stream.Initializer, calling the Processor's own Init first, if it has one.
func (m marked) Init(c *stream.Context) error {
	if in, ok := m.Processor.(stream.Initializer); ok {
		if err := in.Init(c); err != nil {
			return err
		}
	}
	m.init(c)
	return nil
}

// Flush and Discard pass the record cache's on, if the Processor has one (stream.Flusher).
func (m marked) Flush(c *stream.Context) error {
	if f, ok := m.Processor.(stream.Flusher); ok {
		return f.Flush(c)
	}
	return nil
}

// Discard implements stream.Flusher.
func (m marked) Discard(c *stream.Context) {
	if f, ok := m.Processor.(stream.Flusher); ok {
		f.Discard(c)
	}
}

// consumeAll reads every partition of topic from its start to the end offsets found at the start: what
// the broker can hand one plain client on this machine, with no processing, commits or group.
func consumeAll(bootstrap, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	var n int64
	started := false
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w (%d partitions short of their end)", topic, err, len(want))
		}
		fs.EachError(func(_ string, p int32, err error) { slog.Warn("fetch", "partition", p, "err", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !started {
				started = true
				emit("FIRST %d %d", micros(), r.Partition)
			}
			n++
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	emit("DONE %d %d", micros(), n)
	return nil
}

// profile starts a CPU profile written to path and returns what stops it.
func profile(path string) func() {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fail(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// fail stops the program on an error.
func fail(err error) {
	slog.Error("procapp failed", "err", err)
	os.Exit(1)
}
