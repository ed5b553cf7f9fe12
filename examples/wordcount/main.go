// Command wordcount counts the words of the lines in an input topic and writes every new count to
// an output topic, on the stream runtime. Run several copies with the same -app and the broker
// spreads the work between them; stop one (SIGINT/SIGTERM) and its tasks move, committed.
//
// The topology is the one Kafka Streams builds for
//
//	builder.stream(input).flatMapValues(split).groupBy((k, word) -> word, Grouped.as("words"))
//	       .count(Materialized.as("counts")).toStream().to(output)
//
// subtopology 0 splits lines into words, sent to the repartition topic <app>-words-repartition keyed
// by the word; subtopology 1 counts each word in the store "counts" (changelog
// <app>-counts-changelog) and sends the count out. The runtime restores the store before counting,
// keeps standbys current, and commits once every record written is acknowledged. A group-wide
// shutdown request (stream.ErrShutdownRequested) ends it with status 1, as Kafka Streams goes to ERROR.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

func main() {
	bootstrap := flag.String("bootstrap", os.Getenv("STREAMSGROUP_BOOTSTRAP"), "Kafka bootstrap address")
	appID := flag.String("app", "wordcount", "application.id (the group)")
	input := flag.String("input", "lines", "input topic of text lines")
	output := flag.String("output", "word-counts", "output topic of word counts")
	name := flag.String("name", "wordcount", "client.id, shown by the group's description")
	flag.Parse()

	// Kafka's keys; commit every second (Kafka Streams' default is 30 s) so the demo sees progress.
	cfg := must(config.FromMap(map[string]string{"application.id": *appID, "bootstrap.servers": *bootstrap, "commit.interval.ms": "1000"}))
	n := topology.Names{AppID: *appID}
	words := stream.Output(n.RepartitionTopic("words"), serde.String, serde.String)
	counts := stream.KeyValue("counts", serde.String, serde.Int64)
	out := stream.Output(*output, serde.String, serde.String)
	topo := topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{*input}, RepartitionSinkTopics: []string{words.Name()}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{n.Repartition("words", 0)},
			StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog(counts.Name())}})

	split := stream.Typed(serde.Bytes, serde.String, func(c *stream.Context, _ []byte, line string) error {
		for _, w := range strings.Fields(strings.ToLower(line)) {
			if err := words.Send(c, w, "1"); err != nil {
				return err
			}
		}
		return nil
	})
	count := stream.Typed(serde.String, serde.String, func(c *stream.Context, word, _ string) error {
		total, _, err := counts.Get(c, word)
		if err == nil {
			err = counts.Put(c, word, total+1)
		}
		if err == nil {
			err = out.Send(c, word, strconv.FormatInt(total+1, 10))
		}
		return err
	})
	app := must(stream.New(cfg, topo, stream.Processors{"0": split, "1": count}, stream.WithClientOptions(kgo.ClientID(*name))))
	ctx, stop := stream.SignalContext(context.Background())
	defer stop()
	must(0, app.Run(ctx)) // nil after a signal: committed, left the group
}

// must stops the program on an error.
func must[T any](v T, err error) T {
	if err != nil {
		slog.Error("wordcount failed", "err", err)
		os.Exit(1)
	}
	return v
}
