// Command wordcount is a small but real stateful stream processor on a streams group: it counts
// words in the lines of an input topic, keeping the counts in a state store backed by a changelog
// topic, and writes every new count to an output topic. Run several copies with the same -app and
// the broker spreads the work between them.
//
// The topology is the one Kafka Streams builds for
//
//	builder.stream(input).flatMapValues(split).groupBy((k, word) -> word, Grouped.as("words"))
//	       .count(Materialized.as("counts")).toStream().to(output)
//
// subtopology 0 reads the lines and writes each word to the repartition topic <app>-words-repartition
// keyed by the word; subtopology 1 reads that topic, counts in the store "counts" (changelog
// <app>-counts-changelog) and writes the counts out. The library's processing pieces do the rest:
// consume (exactly the partitions of its active tasks, each store restored from the changelog before
// its task processes, standby stores kept up to date), commit (with the member ID and epoch, on
// revocation and every second) and taskoffsets (changelog positions reported as task offsets). It
// shuts down cleanly on SIGINT/SIGTERM or a group-wide shutdown request. With -metrics-addr it serves
// the member's metrics at /metrics for Prometheus.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/taskoffsets"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func main() {
	var (
		bootstrap = flag.String("bootstrap", os.Getenv("STREAMSGROUP_BOOTSTRAP"), "Kafka bootstrap address")
		appID     = flag.String("app", "wordcount", "application.id (the group)")
		input     = flag.String("input", "lines", "input topic of text lines")
		output    = flag.String("output", "word-counts", "output topic of word counts")
		name      = flag.String("name", "wordcount", "client.id, shown by the group's description")
		server    = flag.String("application-server", "", "host:port advertised for interactive queries (optional)")
		metrics   = flag.String("metrics-addr", "", "serve the member's metrics at http://ADDR/metrics in the Prometheus text format (optional; port 0 picks a free one, logged)")
		props     = flag.String("config", "", "client properties file with Kafka's security keys (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*; optional)")
	)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("name", *name)
	if *bootstrap == "" {
		log.Error("set -bootstrap or STREAMSGROUP_BOOTSTRAP")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// TLS and SASL come from Kafka's keys through the config package, as a member's properties give them.
	var sec config.Security
	if *props != "" {
		var err error
		if sec, err = config.LoadSecurity(*props); err != nil {
			log.Error("bad -config", "err", err)
			os.Exit(2)
		}
	}
	if err := run(ctx, log, *bootstrap, *appID, *input, *output, *name, *server, *metrics, sec); err != nil {
		log.Error("wordcount failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, bootstrap, appID, input, output, name, server, metricsAddr string, sec config.Security) error {
	a := newApp(appID, input, output)
	secOpts, err := sec.Options()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ClientID(name), kgo.RecordPartitioner(consume.Partitioner(a.topo)),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond)}, secOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	a.cl = cl

	cfg := config.Default(appID)
	cfg.ApplicationServer = server
	cfg.MaxPollInterval = 60 * time.Second
	// The pieces: epoch-fenced commits, the consumer that follows the tasks (committing the revoked
	// ones' offsets once what they produced is durable), and task offsets from changelog positions.
	commits, err := commit.New(cl, appID, a.topo)
	if err != nil {
		return err
	}
	offsets, err := taskoffsets.New(cl, a.topo)
	if err != nil {
		return err
	}
	defer offsets.Close()
	var cons *consume.Consumer
	revoked := func(ctx context.Context, s tasks.Set) (commit.Offsets, error) { return cons.Processed(s), a.flush(ctx) }
	cons, err = consume.New(cl, a.topo, commits, consume.WithListener(commit.OnRevoke(commits, revoked, a)),
		consume.WithTaskOffsets(offsets), consume.WithLogger(log))
	if err != nil {
		return err
	}
	mgr, err := membership.New(cl, cfg, a.topo, membership.WithListener(cons), membership.WithTaskOffsets(offsets),
		membership.WithLogger(log))
	if err != nil {
		return err
	}
	commits.Bind(mgr)
	if metricsAddr != "" {
		metricsCtx, stopMetrics := context.WithCancel(context.Background())
		defer stopMetrics()
		if err := serveMetrics(metricsCtx, log, metricsAddr, mgr); err != nil {
			return err
		}
	}
	events := mgr.Events()
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	log.Info("started", "topology_id", a.topo.ID().String(), "group", appID)

	shutdown := make(chan string, 1)
	go func() {
		for ev := range events {
			if ev.Kind == membership.EventShutdownRequested || ev.Kind == membership.EventFatal {
				select {
				case shutdown <- ev.String():
				default:
				}
			}
		}
	}()
	processCtx, stopProcessing := context.WithCancel(context.Background())
	processed := make(chan error, 1)
	go func() { processed <- a.process(processCtx, cons) }()

	select {
	case <-ctx.Done():
		log.Info("signal received: revoking, committing and leaving")
	case why := <-shutdown:
		log.Info("shutting down", "why", why)
	case err := <-processed:
		stopProcessing()
		return err
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = mgr.Close(closeCtx) // OnTasksRevoked commits (commit.OnRevoke); then the leave heartbeat
	stopProcessing()
	<-processed
	if err != nil {
		return err
	}
	if ferr := mgr.Err(); ferr != nil {
		return ferr
	}
	log.Info("left the group cleanly")
	return nil
}
