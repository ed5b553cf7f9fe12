// Command totals keeps a running total per key on the stream runtime, in a persistent Pebble store:
// it reads int64 amounts (8 big-endian bytes) keyed by customer from "orders" and writes each new
// total to "order-totals". Its arguments are Kafka keys, e.g.
//
//	totals bootstrap.servers=127.0.0.1:9092 application.id=totals state.dir=/var/lib/totals \
//	       processing.guarantee=exactly_once_v2
//
// A restart restores only the changelog records after the store's checkpoint; with a standby
// replica (the group config streams.num.standby.replicas=1) another member takes over a stopped
// member's tasks at once. Under at_least_once a member killed with SIGKILL may count some records
// twice; under exactly_once_v2 never.
package main

import (
	"context"
	"log"
	"os"
	"strings"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

func main() {
	cfg := must(config.FromProperties(strings.NewReader(strings.Join(os.Args[1:], "\n")))) // key=value arguments
	totals := stream.KeyValue("totals", serde.String, serde.Int64)
	out := stream.Output("order-totals", serde.String, serde.Int64)
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"orders"},
		StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: cfg.ApplicationID}.KeyValueChangelog(totals.Name())}})
	add := stream.Typed(serde.String, serde.Int64, func(c *stream.Context, customer string, amount int64) error {
		total, _, err := totals.Get(c, customer)
		if err == nil {
			err = totals.Put(c, customer, total+amount)
		}
		if err == nil {
			err = out.Send(c, customer, total+amount)
		}
		return err
	})
	app := must(stream.New(cfg, topo, stream.Processors{"0": add}, stream.WithStores(sgpebble.New())))
	ctx, stop := stream.SignalContext(context.Background())
	defer stop()
	must(0, app.Run(ctx)) // nil after SIGINT/SIGTERM: committed and left the group
}

// must stops the program on an error.
func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
