// Command metrics is a stream app that serves its member's metrics at /metrics in the Prometheus
// text format: it counts the records of an input topic per key in the store "counts" and writes
// each new count to an output topic. The metrics come from App.Stats (the member) and App.Metrics
// (the processing loop; see metrics.go); an application that already uses the Prometheus client
// installs plugin/sgprom's hooks instead (stream.WithHooks) and registers sgprom.NewRuntimeMetrics.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

func main() {
	bootstrap := flag.String("bootstrap", os.Getenv("STREAMSGROUP_BOOTSTRAP"), "Kafka bootstrap address")
	appID := flag.String("app", "metrics", "application.id (the group)")
	input := flag.String("input", "visits", "input topic (records counted per key)")
	output := flag.String("output", "visit-counts", "output topic of the counts")
	name := flag.String("name", "metrics", "client.id, shown by the group's description")
	addr := flag.String("metrics-addr", "127.0.0.1:0", "serve http://ADDR/metrics (port 0 picks a free one, logged)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("name", *name)
	if err := run(log, *bootstrap, *appID, *input, *output, *name, *addr); err != nil {
		log.Error("metrics example failed", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, bootstrap, appID, input, output, name, addr string) error {
	cfg, err := config.FromMap(map[string]string{"application.id": appID, "bootstrap.servers": bootstrap, "commit.interval.ms": "1000"})
	if err != nil {
		return err
	}
	counts := stream.KeyValue("counts", serde.Bytes, serde.Int64)
	out := stream.Output(output, serde.Bytes, serde.Int64)
	topo, err := topology.New(topology.Subtopology{ID: "0", SourceTopics: []string{input},
		StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: appID}.KeyValueChangelog(counts.Name())}})
	if err != nil {
		return err
	}
	count := stream.ProcessorFunc(func(c *stream.Context, r *stream.Record) error {
		n, _, err := counts.Get(c, r.Key)
		if err == nil {
			err = counts.Put(c, r.Key, n+1)
		}
		if err == nil {
			err = out.Send(c, r.Key, n+1)
		}
		return err
	})
	app, err := stream.New(cfg, topo, stream.Processors{"0": count}, stream.WithLogger(log), stream.WithClientOptions(kgo.ClientID(name)))
	if err != nil {
		return err
	}
	ctx, stop := stream.SignalContext(context.Background())
	defer stop()
	if err := serveMetrics(ctx, log, addr, app); err != nil {
		return err
	}
	return app.Run(ctx)
}
