package dsl_test

import (
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/streamtest"
)

// TestTotals is the README's test of the README's app (keep the two the same).
func TestTotals(t *testing.T) {
	b := dsl.NewBuilder()
	orders := dsl.Stream(b, "orders", dsl.Consumed[string, int64]{})
	totals := orders.GroupByKey().Reduce(func(total, amount int64) int64 { return total + amount }, dsl.Materialized[string, int64]{Name: "totals"})
	totals.ToStream().To("order-totals", dsl.Produced[string, int64]{})
	cfg := config.Default("totals")
	topo, procs, err := b.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streamtest.New(cfg, topo, procs) // the runtime itself, on an in-process fake cluster
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := streamtest.Input(d, "orders", serde.String, serde.Int64)
	for _, amount := range []int64{5, 7} {
		if err := in.Pipe("alice", amount, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := streamtest.Output(d, "order-totals", serde.String, serde.Int64).Read()
	if err != nil || len(recs) != 2 || recs[0].Value != 5 || recs[1].Value != 12 {
		t.Fatalf("order-totals: %v %v, want alice 5 then 12", recs, err)
	}
}
