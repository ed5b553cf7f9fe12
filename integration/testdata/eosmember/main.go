// Command eosmember is the exactly-once counting app of the integration tests (integration/eos_test.go)
// as a process of its own, so that a test can SIGKILL it mid-transaction or SIGSTOP it past its
// session. It counts records per key in the store "counts" under processing.guarantee=exactly_once_v2
// and sends every new count to the output topic (keys as strings, counts as 8-byte big-endian, as
// the in-process counting app and the Java peer write them).
//
// Stdout carries machine-readable lines only:
//
//	STATE <stream.State>
//	TASKS active=0_0,0_1
//	EXIT <Run's error, or ok>
//
// With -program it runs that DSL program of internal/dslprograms instead (its topics prefixed by
// -topics), as the Go member of a group shared with Kafka Streams.
//
// Logs (slog text, debug level) go to stderr. The process stops cleanly when stdin reaches EOF.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/internal/dslprograms"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

var out sync.Mutex

func emit(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Printf(format+"\n", args...)
}

// hook reports every assignment on stdout.
type hook struct{}

func (hook) OnAssignmentChanged(owned tasks.Assignment) {
	var ids []string
	for _, id := range owned.Active.IDs() {
		ids = append(ids, id.String())
	}
	emit("TASKS active=%s", strings.Join(ids, ","))
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap servers, comma-separated")
	group := flag.String("group", "", "application.id")
	input := flag.String("input", "", "input topic")
	output := flag.String("output", "", "output topic")
	stateDir := flag.String("state-dir", "", "state.dir (keeps the process ID, and so the transactional.id)")
	name := flag.String("name", "eosmember", "client ID")
	commitMs := flag.Int("commit-interval-ms", 100, "commit.interval.ms")
	program := flag.String("program", "", "a DSL program of internal/dslprograms to run instead of the count")
	topics := flag.String("topics", "", "the DSL program's topic prefix")
	cacheBytes := flag.Int64("cache-bytes", -1, "statestore.cache.max.bytes of the DSL program (-1: the cache off, "+
		"as the Kafka Streams members of the mixed tests run, so every count is written)")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_member", *name)
	cfg := config.Default(*group)
	cfg.BootstrapServers = strings.Split(*bootstrap, ",")
	cfg.StateDir = *stateDir
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.RetryBackoffMax = 500 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxPollInterval = 30 * time.Second
	cfg.Runtime.Guarantee = config.ExactlyOnceV2
	cfg.Runtime.CommitInterval = time.Duration(*commitMs) * time.Millisecond
	cfg.Runtime.StateStoreCacheMaxBytes = *cacheBytes

	topo, procs, err := countApp(*group, *input, *output)
	if *program != "" {
		build := dslprograms.Programs[*program]
		if build == nil {
			emit("EXIT no program %q", *program)
			os.Exit(2)
		}
		b := dsl.NewBuilder()
		build(b, *topics)
		dslprograms.Configure(*program, &cfg)
		topo, procs, err = b.Build(cfg)
	}
	if err != nil {
		emit("EXIT %v", err)
		os.Exit(2)
	}
	app, err := stream.New(cfg, topo, procs, stream.WithLogger(log),
		stream.WithClientOptions(kgo.ClientID(*name)), stream.WithHooks(hook{}),
		stream.WithStateListener(func(_, to stream.State) { emit("STATE %s", to) }))
	if err != nil {
		emit("EXIT %v", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // stdin is the life line: EOF stops the app cleanly
		cancel()
	}()
	if err := app.Run(ctx); err != nil {
		emit("EXIT %v", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
	emit("EXIT ok")
}

// countApp is the counting app: records of input counted per key in the store "counts", every new
// count sent to output.
func countApp(group, input, output string) (*topology.Topology, stream.Processors, error) {
	if input == "" {
		return nil, nil, nil // a DSL program instead
	}
	names := topology.Names{AppID: group}
	counts := stream.KeyValue("counts", serde.String, serde.Int64)
	topo, err := topology.New(topology.Subtopology{ID: "0", SourceTopics: []string{input},
		StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog(counts.Name())}})
	if err != nil {
		return nil, nil, err
	}
	send := stream.Output(output, serde.String, serde.Int64)
	proc := stream.Typed(serde.String, serde.String, func(c *stream.Context, key, _ string) error {
		if key == "" {
			return nil
		}
		n, _, err := counts.Get(c, key)
		if err != nil {
			return err
		}
		if err := counts.Put(c, key, n+1); err != nil {
			return err
		}
		return send.Send(c, key, n+1)
	})
	return topo, stream.Processors{"0": proc}, nil
}
