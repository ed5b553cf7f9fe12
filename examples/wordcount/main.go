// Command wordcount counts the words of the lines in an input topic and writes every new count to
// an output topic, written with the typed DSL as in Kafka Streams:
//
//	builder.stream(input).flatMapValues(split).groupBy((k, word) -> word, Grouped.as("words"))
//	       .count(Materialized.as("counts")).toStream().to(output)
//
// Its arguments are Kafka's keys, key=value: application.id, bootstrap.servers and any other the
// runtime reads (client.id, commit.interval.ms, processing.guarantee, …); user.input and user.output
// name the topics. Run several copies with the same application.id and the broker spreads the work
// between them; stop one (SIGINT/SIGTERM) and its tasks move, committed.
//
// The DSL derives the topology Kafka Streams would send for the same program: subtopology 0 splits
// lines into words, sent to the repartition topic <application.id>-words-repartition keyed by the
// word; subtopology 1 counts each word in the store "counts" (changelog
// <application.id>-counts-changelog) and sends the count out (a big-endian int64, Kafka's Long). The
// runtime restores the store before counting, keeps standbys current, and commits once every record
// written is acknowledged. An error (a group-wide shutdown request among them) ends it with status 1.
package main

import (
	"context"
	"log"
	"os"
	"strings"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/stream"
)

func main() {
	cfg, err := config.FromProperties(strings.NewReader(strings.Join(os.Args[1:], "\n"))) // key=value arguments
	if err != nil {
		log.Fatal(err)
	}
	b := dsl.NewBuilder()
	words := dsl.FlatMapValues(dsl.Stream(b, cfg.User["user.input"], dsl.Consumed[[]byte, string]{}), func(_ []byte, line string) []string { return strings.Fields(line) })
	dsl.GroupBy(words, func(_ []byte, w string) string { return w }, dsl.Grouped[string, string]{Name: "words"}).
		Count(dsl.Materialized[string, int64]{Name: "counts"}).ToStream().To(cfg.User["user.output"], dsl.Produced[string, int64]{})
	ctx, stop := stream.SignalContext(context.Background())
	defer stop()
	if err := dsl.Run(ctx, cfg, b); err != nil { // nil after a signal: committed, left the group
		log.Fatal(err)
	}
}
