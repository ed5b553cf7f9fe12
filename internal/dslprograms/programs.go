// Package dslprograms holds the DSL programs written both in Java (integration/javapeer
// DslPrograms.java) and in Go here, operation for operation: the dsl package's tests compare their
// topologies with what Kafka Streams sends for them, and the integration tests run them beside
// Kafka Streams applications in one group.
package dslprograms

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Configs holds what a program sets in its application's configuration, as its Java form sets its
// properties (DslPrograms.build), by name; most set nothing.
var Configs = map[string]func(cfg *config.Config){}

// Configure applies program's settings (Configs) to cfg.
func Configure(program string, cfg *config.Config) {
	if set := Configs[program]; set != nil {
		set(cfg)
	}
}

// Programs are the Go forms of the programs by name; t is the program's topic prefix (it reads
// <t>-in and <t>-in2, and writes <t>-out and the like).
var Programs = map[string]func(b *dsl.Builder, t string){
	"p-stateless": func(b *dsl.Builder, t string) {
		in := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		up := dsl.MapValues(in.Filter(func(_, v string) bool { return v != "" }).
			FilterNot(func(_, v string) bool { return strings.HasPrefix(v, "#") }),
			func(_, v string) string { return strings.ToUpper(v) })
		up.Peek(func(string, string) {}).To(t+"-out", dsl.Produced[string, string]{})
		in.Foreach(func(string, string) {})
	},
	"p-stateless-named": func(b *dsl.Builder, t string) {
		in := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{Name: "lines"})
		up := dsl.MapValues(in.Filter(func(_, v string) bool { return v != "" }, "non-empty").
			FilterNot(func(_, v string) bool { return strings.HasPrefix(v, "#") }, "no-comments"),
			func(_, v string) string { return strings.ToUpper(v) }, "upper")
		up.Peek(func(string, string) {}, "look").To(t+"-out", dsl.Produced[string, string]{Name: "written"})
		in.Foreach(func(string, string) {}, "each")
	},
	"p-wordcount": func(b *dsl.Builder, t string) {
		words := dsl.FlatMapValues(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) []string { return strings.Split(v, " ") })
		dsl.GroupBy(words, func(_, w string) string { return w }, dsl.Grouped[string, string]{Name: "words"}).
			Count(dsl.Materialized[string, int64]{Name: "counts"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-count-unnamed": func(b *dsl.Builder, t string) {
		dsl.GroupBy(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }).
			Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-count-materialized-unnamed": func(b *dsl.Builder, t string) {
		dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }).
			GroupByKey().Count(dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-reduce": func(b *dsl.Builder, t string) {
		dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v[:min(1, len(v))] }).
			GroupByKey().Reduce(func(a, v string) string { return a + "," + v }).ToStream().To(t+"-out", dsl.Produced[string, string]{})
	},
	"p-aggregate": func(b *dsl.Builder, t string) {
		swapped := dsl.Map(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(k, v string) (string, string) { return v, k })
		dsl.Aggregate(swapped.GroupByKey(dsl.Grouped[string, string]{Name: "by-value"}), func() int64 { return 0 },
			func(_, v string, agg int64) int64 { return agg + int64(len(v)) }, dsl.Materialized[string, int64]{Name: "lengths"}).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-merge": func(b *dsl.Builder, t string) {
		a := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		c := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{})
		a.Merge(c).GroupByKey().Count(dsl.Materialized[string, int64]{Name: "merged"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-repartition": func(b *dsl.Builder, t string) {
		dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }).
			Repartition(dsl.Repartitioned[string, string]{}).GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-repartition-named": func(b *dsl.Builder, t string) {
		spread := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).Repartition(dsl.Repartitioned[string, string]{Name: "spread", Partitions: 2})
		dsl.MapValues(spread, func(_, v string) string { return v + "!" }).To(t+"-out", dsl.Produced[string, string]{})
	},
	"p-flatmap": func(b *dsl.Builder, t string) {
		dsl.FlatMap(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(k, v string) []dsl.KeyValue[string, string] {
			return []dsl.KeyValue[string, string]{{Key: v, Value: v}, {Key: k, Value: v}}
		}).GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
	"p-two-sources": func(b *dsl.Builder, t string) {
		dsl.MapValues(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v + "?" }).To(t+"-out", dsl.Produced[string, string]{})
		dsl.GroupBy(dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}), func(_, v string) string { return v }, dsl.Grouped[string, string]{Name: "second"}).
			Reduce(func(_, v string) string { return v }, dsl.Materialized[string, string]{Name: "latest"}).ToStream().To(t+"-out", dsl.Produced[string, string]{})
	},
	"p-groupbykey-source": func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	},
}

func init() {
	Programs["p-split"] = func(b *dsl.Builder, t string) {
		branches := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).Split().
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "a") }).
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "b") }).
			DefaultBranch()
		branches["KSTREAM-BRANCH-00000000011"].To(t+"-out", dsl.Produced[string, string]{})
		branches["KSTREAM-BRANCH-00000000012"].GroupByKey().Count().ToStream().To(t+"-out2", dsl.Produced[string, int64]{})
		branches["KSTREAM-BRANCH-00000000010"].To(t+"-rest", dsl.Produced[string, string]{})
	}
	Programs["p-split-named"] = func(b *dsl.Builder, t string) {
		branches := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).Split("by-").
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "a") }, "a").
			NoDefaultBranch()
		dsl.MapValues(branches["by-a"], func(_, v string) string { return v + "!" }).To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-to-extractor"] = func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).Filter(func(_, v string) bool { return true }).
			ToFunc(func(_, v string) string { return fmt.Sprintf("%s-out-%d", t, len(v)%2) }, dsl.Produced[string, string]{})
	}
	Programs["p-totable"] = func(b *dsl.Builder, t string) {
		dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }).
			ToTable().ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-table-ops"] = func(b *dsl.Builder, t string) {
		latest := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).ToTable(dsl.Materialized[string, string]{Name: "latest"})
		dsl.MapTableValues(latest.Filter(func(_, v string) bool { return len(v) > 1 }), func(_, v string) string { return strings.ToUpper(v) }).
			ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-table-ops-materialized"] = func(b *dsl.Builder, t string) {
		latest := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).ToTable(dsl.Named("as-table"), dsl.Materialized[string, string]{Name: "latest"})
		kept := latest.FilterNot(func(_, v string) bool { return v == "" }, dsl.Named("non-empty"), dsl.Materialized[string, string]{Name: "kept"})
		dsl.MapTableValues(kept, func(_, v string) int64 { return int64(len(v)) }, dsl.Materialized[string, int64]{Name: "lengths"}).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-process"] = func(b *dsl.Builder, t string) {
		b.AddStore("seen")
		dsl.MapValues(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v + "?" }).
			Process(stream.ProcessorFunc(func(*stream.Context, *stream.Record) error { return nil }), "seen")
	}
}

func init() {
	Programs["p-table-groupby-count"] = func(b *dsl.Builder, t string) {
		users := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).ToTable(dsl.Materialized[string, string]{Name: "users"})
		dsl.GroupTableBy(users, func(user, region string) (string, string) { return region, user }, dsl.Grouped[string, string]{Name: "by-region"}).
			Count(dsl.Materialized[string, int64]{Name: "per-region"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-table-groupby-reduce"] = func(b *dsl.Builder, t string) {
		table := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).ToTable()
		dsl.GroupTableBy(table, func(_, v string) (string, string) { return v[:min(1, len(v))], v }).
			Reduce(func(agg, v string) string { return agg + "+" + v }, func(agg, v string) string { return agg + "-" + v }).
			ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-table-groupby-aggregate"] = func(b *dsl.Builder, t string) {
		latest := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().
			Reduce(func(_, v string) string { return v }, dsl.Materialized[string, string]{Name: "latest"})
		dsl.AggregateTable(dsl.GroupTableBy(latest, func(k, v string) (string, string) { return v, k }), func() int64 { return 0 },
			func(_, v string, agg int64) int64 { return agg + int64(len(v)) }, func(_, v string, agg int64) int64 { return agg - int64(len(v)) },
			dsl.Materialized[string, int64]{Name: "sums"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-named-source"] = func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{Name: "src"}).GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		in2 := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{})
		mv := dsl.MapValues(in2.Filter(func(string, string) bool { return true }, "f"), func(_, v string) string { return v }, "mv")
		dsl.GroupBy(mv, func(_, v string) string { return v }, dsl.Grouped[string, string]{Name: "g"}).
			Count(dsl.Materialized[string, int64]{Name: "named-count"}).ToStream("ts").
			GroupByKey().Count().ToStream().To(t+"-out2", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-cogroup"] = func(b *dsl.Builder, t string) {
		plus := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		minus := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}).GroupByKey()
		c := dsl.Cogroup(plus, func(_, v string, agg int64) int64 { return agg + int64(len(v)) })
		dsl.CogroupWith(c, minus, func(_, v string, agg int64) int64 { return agg - int64(len(v)) }).
			Aggregate(func() int64 { return 0 }, dsl.Materialized[string, int64]{Name: "net"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-cogroup-three"] = func(b *dsl.Builder, t string) {
		a := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).Filter(func(string, string) bool { return true }).GroupByKey()
		c := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}).GroupByKey(dsl.Grouped[string, string]{Name: "second"})
		d := dsl.Stream(b, t+"-in3", dsl.Consumed[string, string]{Name: "third"}).GroupByKey()
		cg := dsl.Cogroup(a, func(_, v, _ string) string { return "a=" + v })
		cg = dsl.CogroupWith(cg, c, func(_, v, _ string) string { return "b=" + v })
		dsl.CogroupWith(cg, d, func(_, v, _ string) string { return "c=" + v }).
			Aggregate(func() string { return "" }).ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-table-source"] = func(b *dsl.Builder, t string) {
		dsl.Table(b, t+"-in", dsl.Consumed[string, string]{Name: "users"}, dsl.Materialized[string, string]{Name: "users-store"}).
			Filter(func(_, v string) bool { return v != "" }).ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-table-source-unnamed"] = func(b *dsl.Builder, t string) {
		dsl.MapTableValues(dsl.Table(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v + "!" }).
			ToStream().To(t+"-out", dsl.Produced[string, string]{})
		dsl.GroupTableBy(dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}), func(k, v string) (string, string) { return v, k }).
			Count().ToStream().To(t+"-out2", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-cogroup-one"] = func(b *dsl.Builder, t string) {
		one := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.Cogroup(one, func(_, _ string, agg int64) int64 { return agg + 1 }).
			Aggregate(func() int64 { return 0 }, dsl.Materialized[string, int64]{Name: "one"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-grouped-twice"] = func(b *dsl.Builder, t string) {
		named := dsl.GroupBy(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }, dsl.Grouped[string, string]{Name: "by-v"})
		named.Count(dsl.Materialized[string, int64]{Name: "c1"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		named.Reduce(func(_, v string) string { return v }, dsl.Materialized[string, string]{Name: "r1"}).ToStream().To(t+"-out2", dsl.Produced[string, string]{})
		unnamed := dsl.GroupBy(dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}), func(_, v string) string { return v })
		unnamed.Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		unnamed.Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-cogroup-after-aggregate"] = func(b *dsl.Builder, t string) {
		counts := dsl.GroupBy(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }).Count()
		dsl.Cogroup(counts.ToStream().GroupByKey(), func(_ string, n int64, agg int64) int64 { return agg + n }).
			Aggregate(func() int64 { return 0 }, dsl.Materialized[string, int64]{Name: "sum-of-counts"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-table-filter-unnamed-materialized"] = func(b *dsl.Builder, t string) {
		table := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).ToTable(dsl.Materialized[string, string]{Name: "t"})
		kept := table.Filter(func(string, string) bool { return true }, dsl.Materialized[string, string]{Key: serde.String, Value: serde.String})
		dsl.MapTableValues(kept, func(_, v string) string { return v }, dsl.Materialized[string, string]{Key: serde.String, Value: serde.String}).
			ToStream().GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-cogroup-after-totable"] = func(b *dsl.Builder, t string) {
		table := dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }).ToTable()
		dsl.Cogroup(table.ToStream().GroupByKey(), func(_, v, agg string) string { return agg + v }).
			Aggregate(func() string { return "" }).ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-count-filter"] = func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().
			Filter(func(_ string, n int64) bool { return n > 1 }).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-table-filter-groupby"] = func(b *dsl.Builder, t string) {
		src := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "src"})
		dsl.GroupTableBy(src.Filter(func(_, v string) bool { return len(v) > 1 }), func(k, v string) (string, string) { return v, k }).
			Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-table-unnamed-filter-groupby"] = func(b *dsl.Builder, t string) {
		long := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{}).Filter(func(_, v string) bool { return len(v) > 1 })
		marked := dsl.MapTableValues(long, func(_, v string) string { return v + "!" })
		dsl.GroupTableBy(marked, func(k, v string) (string, string) { return v, k }).
			Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-count-regroup"] = func(b *dsl.Builder, t string) {
		counts := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count()
		dsl.GroupTableBy(counts, func(k string, n int64) (string, string) { return fmt.Sprint(n), k }).
			Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-mapvalues-null"] = func(b *dsl.Builder, t string) {
		dsl.MapValues(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) []byte {
			if strings.HasPrefix(v, "a") {
				return nil // a null value
			}
			return []byte(v)
		}).To(t+"-out", dsl.Produced[string, []byte]{})
	}
	Programs["p-grouped-table-twice"] = func(b *dsl.Builder, t string) {
		users := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "users"})
		g := dsl.GroupTableBy(users, func(k, v string) (string, string) { return v, k }, dsl.Grouped[string, string]{Name: "by-region"})
		g.Count(dsl.Materialized[string, int64]{Name: "n"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		g.Reduce(func(a, v string) string { return a + v }, func(a, v string) string { return strings.ReplaceAll(a, v, "") },
			dsl.Materialized[string, string]{Name: "members"}).ToStream().To(t+"-out2", dsl.Produced[string, string]{})
	}
}

// words forwards one record per word of the value, keyed by the word (p-process-forward).
type words struct{}

func (words) Process(c dsl.ProcessorContext[string, string], r dsl.Record[string, string]) error {
	for _, w := range strings.Split(r.Value, " ") {
		r.Key, r.NullKey = w, false
		if err := c.Forward(r); err != nil {
			return err
		}
	}
	return nil
}

// lastValue forwards each value with the key's previous one, kept in the store "last"
// (p-processvalues).
type lastValue struct{}

var last = stream.KeyValue("last", serde.String, serde.String)

func (lastValue) Process(c dsl.ProcessorContext[string, string], r dsl.Record[string, string]) error {
	if r.NullKey {
		r.Value = "no key"
		return c.Forward(r)
	}
	prev, ok, err := last.Get(c.Context, r.Key)
	if err == nil {
		err = last.Put(c.Context, r.Key, r.Value)
	}
	if err != nil {
		return err
	}
	if ok {
		r.Value = prev + " > " + r.Value
	} else {
		r.Value = "first " + r.Value
	}
	return c.Forward(r)
}

func init() {
	Programs["p-process-forward"] = func(b *dsl.Builder, t string) {
		dsl.Process[string, string, string, string](dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), words{}).
			GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-processvalues"] = func(b *dsl.Builder, t string) {
		b.AddStore("last")
		dsl.ProcessValues[string, string, string](dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), lastValue{}, "last").
			To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-window-tumbling-count"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.WindowedBy(g, windowed.OfSizeWithNoGrace(10*time.Second)).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-window-emit-final"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second)).Emit(dsl.OnWindowClose).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-window-emit-final-retained"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second)).Emit(dsl.OnWindowClose).
			Count(dsl.Materialized[string, int64]{Name: "retained", Retention: 5 * time.Minute}).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-window-emit-final-hopping"] = func(b *dsl.Builder, t string) {
		g := dsl.GroupBy(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v })
		hop := windowed.OfSizeWithNoGrace(10 * time.Second).AdvanceBy(5 * time.Second)
		dsl.WindowedBy(g, hop).Emit(dsl.OnWindowClose).
			Reduce(func(a, v string) string { return a + "+" + v }, dsl.Named("final"), dsl.Materialized[string, string]{Name: "final-store"}).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], string]{})
		dsl.WindowedBy(g, hop).Emit(dsl.OnWindowUpdate).Count().
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-window-hopping-grace"] = func(b *dsl.Builder, t string) {
		g := dsl.GroupBy(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v })
		dsl.WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second).AdvanceBy(5*time.Second)).
			Count(dsl.Materialized[string, int64]{Name: "hop-counts"}).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-window-reduce-aggregate"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute)).
			Reduce(func(a, v string) string { return a + "+" + v }, dsl.Materialized[string, string]{Name: "joined", Retention: 5 * time.Minute}).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], string]{})
		dsl.WindowedAggregate(dsl.WindowedBy(g, windowed.OfSizeWithNoGrace(time.Minute)), func() int64 { return 100 },
			func(_ string, v string, agg int64) int64 { return agg + int64(len(v)) }, dsl.Named("lengths"),
			dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-named-aggregations"] = func(b *dsl.Builder, t string) {
		dsl.GroupBy(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v }, dsl.Grouped[string, string]{Name: "by-v"}).
			Count(dsl.Named("cnt"), dsl.Materialized[string, int64]{Name: "counted"}).ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}).GroupByKey().
			Reduce(func(a, v string) string { return a + v }, dsl.Named("red"), dsl.Materialized[string, string]{Name: "reduced"}).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
		dsl.GroupTableBy(dsl.Table(b, t+"-in3", dsl.Consumed[string, string]{}), func(k, v string) (string, string) { return v, k }).
			Count(dsl.Named("tcnt")).ToStream().To(t+"-out3", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-join-stream-table"] = func(b *dsl.Builder, t string) {
		in := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		users := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.Join(in, users, func(_, v, u string) string { return v + "@" + u }).To(t+"-out", dsl.Produced[string, string]{})
		dsl.LeftJoin(in, users, func(_, v, u string, found bool) string {
			if !found {
				u = "-"
			}
			return v + "@" + u
		}).To(t+"-out2", dsl.Produced[string, string]{})
	}
	Programs["p-join-global"] = func(b *dsl.Builder, t string) {
		users := dsl.GlobalTable(b, t+"-in2", dsl.Consumed[string, string]{})
		in := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		byValue := func(_, v string) string { return v }
		dsl.JoinGlobal(in, users, byValue, func(_, v, u string) string { return v + "@" + u }).To(t+"-out", dsl.Produced[string, string]{})
		dsl.LeftJoinGlobal(in, users, byValue, func(_, v, u string, found bool) string {
			if !found {
				u = "-"
			}
			return v + "@" + u
		}).To(t+"-out2", dsl.Produced[string, string]{})
	}
	Programs["p-join-global-named"] = func(b *dsl.Builder, t string) {
		in := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		users := dsl.GlobalTable(b, t+"-in2", dsl.Consumed[string, string]{Name: "users-in"}, dsl.Materialized[string, string]{Name: "users"})
		byValue := dsl.SelectKey(in, func(_, v string) string { return v })
		joined := dsl.LeftJoinGlobal(byValue, users, func(k, _ string) string { return k }, func(_, v, u string, found bool) string {
			if !found {
				u = "null"
			}
			return v + "=" + u
		}, "enrich")
		joined.GroupByKey().Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.JoinGlobal(dsl.Stream(b, t+"-in3", dsl.Consumed[string, string]{}), users, func(_, v string) string { return v },
			func(_, v, u string) string { return v + "/" + u }).To(t+"-out2", dsl.Produced[string, string]{})
	}
	Programs["p-join-global-prices"] = func(b *dsl.Builder, t string) {
		prices := dsl.GlobalTable(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.LeftJoinGlobal(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), prices, func(k, _ string) string { return k },
			func(_, q, p string, found bool) int64 {
				if !found {
					return -1
				}
				return mustInt(p) + mustInt(q)
			}).To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-join-prices"] = func(b *dsl.Builder, t string) {
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.LeftJoin(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), prices, func(_, q, p string, found bool) int64 {
			if !found {
				return -1
			}
			return mustInt(p) + mustInt(q)
		}).To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-join-rekeyed"] = func(b *dsl.Builder, t string) {
		users := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "users"})
		shown := dsl.MapTableValues(users.Filter(func(_, u string) bool { return !strings.HasPrefix(u, "x") }),
			func(_, u string) string { return strings.ToUpper(u) })
		byValue := dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v })
		dsl.Join(byValue, shown, func(k, v, u string) string { return k + ":" + v + "=" + u }, dsl.Joined[string, string, string]{Name: "enrich"}).
			To(t+"-out", dsl.Produced[string, string]{})
		swapped := dsl.Map(dsl.Stream(b, t+"-in3", dsl.Consumed[string, string]{}), func(k, v string) (string, string) { return v, k })
		dsl.LeftJoin(swapped, users, func(_, v, u string, found bool) string {
			if !found {
				u = "null" // Java's string concatenation of a null
			}
			return v + "/" + u
		}).To(t+"-out2", dsl.Produced[string, string]{})
	}
}

// mustInt is s as a decimal number; it panics otherwise, as Java's Long.parseLong throws (the
// runtime handles both as the processor's error).
func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func init() {
	// orNull is a value as Java's string concatenation writes it: "null" for an absent one.
	orNull := func(s string, has bool) string {
		if !has {
			return "null"
		}
		return s
	}
	Programs["p-join-tables"] = func(b *dsl.Builder, t string) {
		left := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{})
		right := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{})
		inner := dsl.JoinTables(left, right, func(_, a, c string) string { return a + "+" + c })
		dsl.GroupTableBy(inner, func(_, v string) (string, string) { return v[:1], v }).Count().
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.LeftJoinTables(left, right, func(_, a, c string, found bool) string { return a + "+" + orNull(c, found) }, dsl.Named("lj")).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
		dsl.OuterJoinTables(left, right, func(_, a string, hasA bool, c string, hasC bool) string {
			return orNull(a, hasA) + "+" + orNull(c, hasC)
		},
			dsl.Materialized[string, string]{Name: "outer"}).
			ToStream().To(t+"-out3", dsl.Produced[string, string]{})
	}
	// customerOf is the customer of an order "customer|item" (nil: it names none).
	customerOf := func(_ string, order string) []byte {
		i := strings.IndexByte(order, '|')
		if i < 0 {
			return nil
		}
		return []byte(order[:i])
	}
	Programs["p-fk-join"] = func(b *dsl.Builder, t string) {
		orders := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{})
		customers := dsl.Table(b, t+"-in2", dsl.Consumed[[]byte, string]{})
		dsl.JoinForeignKey(orders, customers, customerOf, func(_, o, c string) string { return o + "@" + c }).
			ToStream().To(t+"-out", dsl.Produced[string, string]{})
		dsl.LeftJoinForeignKey(orders, customers, customerOf, func(_, o, c string, found bool) string { return o + "@" + orNull(c, found) }).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
	}
	Programs["p-fk-join-named"] = func(b *dsl.Builder, t string) {
		orders := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "orders"})
		customers := dsl.Table(b, t+"-in2", dsl.Consumed[[]byte, string]{}).
			Filter(func(_ []byte, v string) bool { return !strings.HasPrefix(v, "x") })
		joined := dsl.JoinForeignKey(orders, customers, customerOf, func(_, _, c string) string { return c },
			dsl.Named("fkj"), dsl.Materialized[string, string]{Name: "fkj-out"})
		dsl.GroupTableBy(joined, func(k, v string) (string, string) { return v, k }).Count().
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		byKey := func(k, v string) []byte {
			if k == "o3" {
				return nil
			}
			return customerOf(k, v)
		}
		lj := dsl.LeftJoinForeignKey(orders, customers, byKey, func(_, o, c string, found bool) string { return o + "@" + orNull(c, found) }, dsl.Named("fkl"))
		dsl.MapTableValues(lj, func(_, v string) string { return strings.ToUpper(v) }).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
	}
	Programs["p-fk-join-prices"] = func(b *dsl.Builder, t string) {
		orders := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{})
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.JoinForeignKey(orders, prices, orderedItem, pricePlusQuantity).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-fk-join-partitioned"] = func(b *dsl.Builder, t string) {
		orders := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{})
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.JoinForeignKey(orders, prices, orderedItem, pricePlusQuantity, dsl.TableJoined[string, string]{Partitioner: ByTrailingNumber[struct{}], OtherPartitioner: ByTrailingNumber[struct{}]}).
			ToStream().
			Repartition(dsl.Repartitioned[string, int64]{Name: "rekeyed", Partitioner: func(_, k string, _ int64, _ []kgo.RecordHeader, n int) ([]int32, bool) {
				return []int32{int32((TrailingNumber(k) + 1) % n)}, true
			}}).
			To(t+"-out", dsl.Produced[string, int64]{Partitioner: FivesEverywhere})
	}
	Programs["p-zero-forms"] = func(b *dsl.Builder, t string) {
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{},
			dsl.Materialized[string, string]{Name: "prices0", Versioned: true})
		orders := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		at := func(_, o, p string) string { return o + "@" + p }
		dsl.Join(orders, prices, at, dsl.Joined[string, string, string]{Name: "zero", WithGrace: true}).
			To(t+"-out", dsl.Produced[string, string]{})
		dsl.LeftJoin(orders, prices, func(_, o, p string, found bool) string { return o + "@" + orNull(p, found) }).
			To(t+"-out2", dsl.Produced[string, string]{})
		prices.ToStream().To(t+"-out3", dsl.Produced[string, string]{})
	}
	Programs["p-join-versioned"] = func(b *dsl.Builder, t string) {
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{},
			dsl.Materialized[string, string]{Name: "prices", HistoryRetention: 30 * time.Second})
		orders := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		at := func(_, o, p string) string { return o + "@" + p }
		dsl.Join(orders, prices, at).To(t+"-out", dsl.Produced[string, string]{})
		dsl.Join(orders, prices, at, dsl.Joined[string, string, string]{GracePeriod: time.Second}).
			To(t+"-out2", dsl.Produced[string, string]{})
		dsl.LeftJoin(orders, prices, func(_, o, p string, found bool) string { return o + "@" + orNull(p, found) },
			dsl.Joined[string, string, string]{Name: "graced", GracePeriod: 3 * time.Second}).
			To(t+"-out3", dsl.Produced[string, string]{})
		prices.ToStream().To(t+"-out4", dsl.Produced[string, string]{})
	}
	Programs["p-headers-format"] = func(b *dsl.Builder, t string) {
		in := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		g := in.GroupByKey()
		g.Count().ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 5*time.Second)).Count().
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], int64]{})
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Count().
			ToStream().To(t+"-out3", dsl.Produced[windowed.Key[string], int64]{})
		customers := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "customers"})
		customers.ToStream().To(t+"-out4", dsl.Produced[string, string]{})
		orders := dsl.Table(b, t+"-in3", dsl.Consumed[string, string]{})
		dsl.JoinForeignKey(orders, customers, func(_, o string) string {
			c, _, found := strings.Cut(o, "|")
			if !found {
				return "" // no customer: the empty key, which no customer has
			}
			return c
		}, func(_, o, c string) string { return o + "@" + c }).ToStream().To(t+"-out5", dsl.Produced[string, string]{})
		dsl.JoinStreams(in, dsl.Stream(b, t+"-in4", dsl.Consumed[string, string]{}), func(_, a, c string) string { return a + "*" + c },
			windowed.JoinOfTimeDifferenceWithNoGrace(5*time.Second)).
			To(t+"-out6", dsl.Produced[string, string]{})
	}
	Configs["p-headers-format"] = func(cfg *config.Config) { cfg.Runtime.DSLStoreFormat = config.DSLStoreFormatHeaders }
	Programs["p-versioned-ops"] = func(b *dsl.Builder, t string) {
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{},
			dsl.Materialized[string, string]{Name: "prices", HistoryRetention: 30 * time.Second})
		names := dsl.Table(b, t+"-in3", dsl.Consumed[string, string]{},
			dsl.Materialized[string, string]{Name: "names", HistoryRetention: 30 * time.Second})
		num := func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
		cheap := prices.Filter(func(_, v string) bool { return num(v) < 50 })
		cheap.ToStream().To(t+"-out", dsl.Produced[string, string]{})
		doubled := dsl.MapTableValues(cheap, func(_, v string) string { return strconv.FormatInt(num(v)*2, 10) })
		dsl.JoinTables(doubled, names, func(_, p, n string) string { return n + "=" + p }).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
		dsl.GroupTableBy(prices, func(_, v string) (string, string) {
			if len(v) > 1 {
				return "big", v
			}
			return "small", v
		}).Count().ToStream().To(t+"-out3", dsl.Produced[string, int64]{})
		dsl.Join(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), doubled, func(_, o, p string) string { return o + "@" + p }).
			To(t+"-out4", dsl.Produced[string, string]{})
		dsl.JoinTables(prices.Filter(func(_, _ string) bool { return true }, dsl.Materialized[string, string]{Name: "kept"}), names,
			func(_, p, n string) string { return n + "~" + p }).ToStream().To(t+"-out5", dsl.Produced[string, string]{})
		dsl.JoinForeignKey(prices, names, func(_, v string) string { return "n" + v[:1] },
			func(_, p, n string) string { return p + "/" + n }).ToStream().To(t+"-out6", dsl.Produced[string, string]{})
	}
	Programs["p-join-versioned-prices"] = func(b *dsl.Builder, t string) {
		prices := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{},
			dsl.Materialized[string, string]{Name: "prices", HistoryRetention: 10 * time.Minute})
		dsl.Join(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), prices, func(_, q, p string) int64 {
			price, _ := strconv.ParseInt(p, 10, 64)
			qty, _ := strconv.ParseInt(q, 10, 64)
			return price*1000 + qty
		}, dsl.Joined[string, string, string]{Name: "priced", GracePeriod: 5 * time.Second}).
			To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-join-tables-chained"] = func(b *dsl.Builder, t string) {
		a := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{})
		counts := dsl.Stream(b, t+"-in3", dsl.Consumed[string, string]{}).GroupByKey().Count()
		both := dsl.LeftJoinTables(a, counts, func(_, v string, n int64, found bool) string {
			return v + "#" + orNull(fmt.Sprint(n), found)
		})
		dsl.Join(dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}), both, func(_, s, j string) string { return s + "->" + j }).
			To(t+"-out", dsl.Produced[string, string]{})
		dsl.JoinTables(a, counts, func(_, v string, n int64) int64 { return int64(len(v)) + n },
			dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			Filter(func(_ string, n int64) bool { return n%2 == 0 }).
			ToStream().To(t+"-out2", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-suppress-window-close"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second)).
			Count(dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			Suppress(dsl.UntilWindowCloses(dsl.BufferConfig{})).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-suppress-headers"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		g.Count().
			Suppress(dsl.UntilTimeLimit(5*time.Second, dsl.BufferConfig{MaxRecords: 2}).WithName("limited")).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}, dsl.Materialized[string, string]{Name: "tbl"}).
			Suppress(dsl.UntilTimeLimit(3*time.Second, dsl.BufferConfig{})).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
		dsl.WindowedBy(g, windowed.OfSizeAndGrace(10*time.Second, 2*time.Second)).
			Count(dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			Suppress(dsl.UntilWindowCloses(dsl.BufferConfig{})).
			ToStream().To(t+"-out3", dsl.Produced[windowed.Key[string], int64]{})
	}
	Configs["p-suppress-headers"] = func(cfg *config.Config) { cfg.Runtime.DSLStoreFormat = config.DSLStoreFormatHeaders }
	Programs["p-suppress-zero"] = func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().
			Suppress(dsl.UntilTimeLimit(5*time.Second, dsl.BufferConfig{MaxRecords: -1}).WithName("none")).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}).
			Suppress(dsl.UntilTimeLimit(3*time.Second, dsl.BufferConfig{MaxBytes: -1})).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
		dsl.Table(b, t+"-in3", dsl.Consumed[string, string]{}).
			Suppress(dsl.UntilTimeLimit(3*time.Second, dsl.BufferConfig{MaxRecords: -1, WhenFull: dsl.ShutDownWhenFull})).
			ToStream().To(t+"-out3", dsl.Produced[string, string]{})
	}
	Programs["p-suppress-time-limit"] = func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().
			Suppress(dsl.UntilTimeLimit(5*time.Second, dsl.BufferConfig{MaxRecords: 2}).WithName("limited")).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
		dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}).
			Suppress(dsl.UntilTimeLimit(3*time.Second, dsl.BufferConfig{LoggingDisabled: true})).
			ToStream().To(t+"-out2", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-join-copartition-edges"] = func(b *dsl.Builder, t string) {
		byV := dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v })
		dsl.Join(byV, dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}), func(_, v, u string) string { return v + "|" + u }).
			To(t+"-out", dsl.Produced[string, string]{})
		dsl.Join(byV, dsl.Table(b, t+"-in3", dsl.Consumed[string, string]{}), func(_, v, u string) string { return v + "&" + u }).
			To(t+"-out2", dsl.Produced[string, string]{})
		co := dsl.Cogroup(dsl.Stream(b, t+"-in4", dsl.Consumed[string, string]{}).GroupByKey(), func(_, _ string, a int64) int64 { return a + 1 }).
			Aggregate(func() int64 { return 0 }, dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64})
		dsl.Join(dsl.Stream(b, t+"-in5", dsl.Consumed[string, string]{}), co, func(_, v string, n int64) string { return v + fmt.Sprint(n) }).
			To(t+"-out3", dsl.Produced[string, string]{})
	}
	Programs["p-join-keyless-regroup"] = func(b *dsl.Builder, t string) {
		r := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).Repartition(dsl.Repartitioned[string, string]{})
		r.To(t+"-out2", dsl.Produced[string, string]{})
		counts := dsl.GroupTableBy(r.ToTable(), func(k, v string) (string, string) { return v, k }).Count().ToStream()
		dsl.LeftJoin(counts, dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{}), func(_ string, n int64, u string, found bool) string {
			if !found {
				u = "null"
			}
			return fmt.Sprint(n) + "/" + u
		}).To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-session-emit-final"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Emit(dsl.OnWindowClose).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(3*time.Second, 0)).Emit(dsl.OnWindowClose).
			Reduce(func(a, v string) string { return a + "+" + v }, dsl.Named("joined"), dsl.Materialized[string, string]{Name: "joined-store"}).
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], string]{})
	}
	Programs["p-session-count"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-session-counts-only"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Count().
			ToStream().Filter(func(_ windowed.Key[string], n int64) bool { return n != 0 }). // a deletion's count reads 0
			To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
	}
	Programs["p-session-cache"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapWithNoGrace(3*time.Second)).
			Reduce(func(a, v string) string { return a + "+" + v }).
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], string]{})
	}
	Configs["p-session-cache"] = func(cfg *config.Config) {
		cfg.Runtime.StateStoreCacheMaxBytes = config.DefaultStateStoreCacheMaxBytes
	}
	Programs["p-session-reduce-aggregate"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SessionWindowedBy(g, windowed.OfInactivityGapWithNoGrace(3*time.Second)).
			Reduce(func(a, v string) string { return a + "+" + v }, dsl.Materialized[string, string]{Name: "sessions", Retention: time.Minute}).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], string]{})
		dsl.SessionAggregate(dsl.SessionWindowedBy(g, windowed.OfInactivityGapWithNoGrace(3*time.Second)), func() int64 { return 0 },
			func(_, v string, agg int64) int64 { return agg + int64(len(v)) }, func(_ string, a, b int64) int64 { return a + b },
			dsl.Named("lens"), dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], int64]{})
	}
}

func init() {
	Programs["p-sliding"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SlidingWindowedBy(g, windowed.OfTimeDifferenceAndGrace(5*time.Second, 2*time.Second)).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
		dsl.SlidingWindowedBy(g, windowed.OfTimeDifferenceWithNoGrace(3*time.Second)).
			Reduce(func(a, v string) string { return a + "+" + v }, dsl.Named("slide"), dsl.Materialized[string, string]{Name: "slid"}).
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], string]{})
	}
	Programs["p-sliding-cache"] = Programs["p-sliding"]
	Configs["p-sliding-cache"] = Configs["p-session-cache"] // the record cache at Kafka's default size
	Programs["p-sliding-emit-final"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		dsl.SlidingWindowedBy(g, windowed.OfTimeDifferenceAndGrace(5*time.Second, 2*time.Second)).Emit(dsl.OnWindowClose).Count().
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
		dsl.SlidingWindowedBy(g, windowed.OfTimeDifferenceWithNoGrace(3*time.Second)).Emit(dsl.OnWindowClose).
			Reduce(func(a, v string) string { return a + "+" + v }, dsl.Named("slide"), dsl.Materialized[string, string]{Name: "slid"}).
			ToStream().To(t+"-out2", dsl.Produced[windowed.Key[string], string]{})
	}
}

func init() {
	Programs["p-join-streams"] = func(b *dsl.Builder, t string) {
		left := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		right := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.JoinStreams(left, right, func(_, a, c string) string { return a + "*" + c },
			windowed.JoinOfTimeDifferenceAndGrace(5*time.Second, time.Second).Before(2*time.Second)).
			To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-join-streams-sum"] = func(b *dsl.Builder, t string) {
		left := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		dsl.JoinStreams(left, dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}), func(_, a, c string) int64 { return mustInt(a) + mustInt(c) },
			windowed.JoinOfTimeDifferenceWithNoGrace(3*time.Second)).
			To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-join-streams-named"] = func(b *dsl.Builder, t string) {
		l := dsl.SelectKey(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), func(_, v string) string { return v })
		r := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.JoinStreams(l, r, func(_, a, c string) string { return a + "*" + c }, windowed.JoinOfTimeDifferenceWithNoGrace(3*time.Second),
			dsl.StreamJoined[string, string, string]{Name: "sj", StoreName: "st"}).
			To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-suppress-getter"] = func(b *dsl.Builder, t string) {
		counts := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().
			Suppress(dsl.UntilTimeLimit(10*time.Second, dsl.BufferConfig{}))
		dsl.Join(dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{}), counts, func(_, s string, n int64) string { return s + "#" + fmt.Sprint(n) }).
			To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-suppress-leftjoin-ts"] = func(b *dsl.Builder, t string) {
		counts := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().
			Suppress(dsl.UntilTimeLimit(10*time.Second, dsl.BufferConfig{}))
		other := dsl.Table(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.LeftJoinTables(counts, other, func(_ string, n int64, s string, found bool) string {
			if !found {
				s = "null"
			}
			return fmt.Sprint(n) + "/" + s
		}).ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
	Programs["p-suppress-bytes"] = func(b *dsl.Builder, t string) {
		dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey().Count().
			Suppress(dsl.UntilTimeLimit(100*time.Second, dsl.BufferConfig{MaxBytes: 65})).
			ToStream().To(t+"-out", dsl.Produced[string, int64]{})
	}
	Programs["p-session-suppress-regroup"] = func(b *dsl.Builder, t string) {
		g := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}).GroupByKey()
		s := dsl.SessionWindowedBy(g, windowed.OfInactivityGapAndGrace(5*time.Second, 2*time.Second)).
			Count(dsl.Materialized[string, int64]{Key: serde.String, Value: serde.Int64})
		s.Suppress(dsl.UntilWindowCloses(dsl.BufferConfig{})).
			ToStream().To(t+"-out", dsl.Produced[windowed.Key[string], int64]{})
		dsl.GroupTableBy(s, func(wk windowed.Key[string], n int64) (string, int64) { return wk.Key, n },
			dsl.Grouped[string, int64]{Key: serde.String, Value: serde.Int64}).
			Reduce(func(a, v int64) int64 { return a + v }, func(a, v int64) int64 { return a - v }).
			ToStream().To(t+"-out2", dsl.Produced[string, int64]{})
	}
}

func init() {
	Programs["p-self-join"] = func(b *dsl.Builder, t string) {
		a := dsl.Table(b, t+"-in", dsl.Consumed[string, string]{})
		dsl.JoinTables(a, a.Filter(func(_, v string) bool { return len(v) > 1 }), func(_, x, y string) string { return x + "=" + y }).
			ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-suppress-dedup"] = func(b *dsl.Builder, t string) {
		dsl.Table(b, t+"-in", dsl.Consumed[string, string]{}).
			Suppress(dsl.UntilTimeLimit(10*time.Second, dsl.BufferConfig{MaxBytes: 111})).
			ToStream().To(t+"-out", dsl.Produced[string, string]{})
	}
}

func init() {
	Programs["p-join-streams-left-outer"] = func(b *dsl.Builder, t string) {
		orNull := func(s string, has bool) string {
			if !has {
				return "null"
			}
			return s
		}
		left := dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{})
		right := dsl.Stream(b, t+"-in2", dsl.Consumed[string, string]{})
		dsl.LeftJoinStreams(left, right, func(_, a, c string, found bool) string { return a + "*" + orNull(c, found) },
			windowed.JoinOfTimeDifferenceAndGrace(2*time.Second, time.Second)).
			To(t+"-out", dsl.Produced[string, string]{})
		dsl.OuterJoinStreams(left, right, func(_, a string, hasA bool, c string, hasC bool) string {
			return orNull(a, hasA) + "*" + orNull(c, hasC)
		},
			windowed.JoinOfTimeDifferenceWithNoGrace(3*time.Second).After(time.Second),
			dsl.StreamJoined[string, string, string]{Name: "outer", StoreName: "oj"}).
			To(t+"-out2", dsl.Produced[string, string]{})
	}
}

// TrailingNumber is the number key ends with ("o12" is 12; none is 0).
func TrailingNumber(key string) int {
	i := len(key)
	for i > 0 && key[i-1] >= '0' && key[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(key[i:])
	return n
}

// ByTrailingNumber places a key on the partition its trailing number names, modulo the partitions:
// a custom partitioner, as p-fk-join-partitioned's Java twin has.
func ByTrailingNumber[V any](_ string, key string, _ V, _ []kgo.RecordHeader, n int) ([]int32, bool) {
	return []int32{int32(TrailingNumber(key) % n)}, true
}

// FivesEverywhere places a key whose number is a multiple of 5 on every partition, any other by
// its number (ByTrailingNumber).
func FivesEverywhere(topic string, key string, v int64, h []kgo.RecordHeader, n int) ([]int32, bool) {
	if TrailingNumber(key)%5 != 0 {
		return ByTrailingNumber(topic, key, v, h, n)
	}
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	return all, true
}

// orderedItem is the item of an order "item#quantity": p-fk-join-prices' foreign key.
func orderedItem(_, order string) string { return order[:strings.IndexByte(order, '#')] }

// pricePlusQuantity is an order's item price plus its quantity: p-fk-join-prices' result.
func pricePlusQuantity(_, order, price string) int64 {
	p, _ := strconv.ParseInt(price, 10, 64)
	qty, _ := strconv.ParseInt(order[strings.IndexByte(order, '#')+1:], 10, 64)
	return p + qty
}

// highestPrice keeps each key's highest price in the global store "prices" (p-global-store-prices):
// a null value deletes the key's price, and a record without a key is kept under "nokey" (Kafka
// Streams' restore never hands the processor such a record; later ones reach it).
type highestPrice struct{}

var prices = stream.KeyValue("prices", serde.String, serde.String)

func (highestPrice) Process(c dsl.ProcessorContext[dsl.Void, dsl.Void], r dsl.Record[string, string]) error {
	k := r.Key
	if r.NullKey {
		k = "nokey"
	}
	if r.NullValue {
		return prices.Delete(c.Context, k)
	}
	old, ok, err := prices.Get(c.Context, k)
	if err != nil || (ok && mustInt(old) >= mustInt(r.Value)) {
		return err
	}
	return prices.Put(c.Context, k, r.Value)
}

// pricedQuantity gives each quantity its key's price from the global store "prices" plus the
// quantity, or -1 without a price (p-global-store-prices).
type pricedQuantity struct{}

func (pricedQuantity) Process(c dsl.ProcessorContext[string, int64], r dsl.Record[string, string]) error {
	p, ok := "", false
	if !r.NullKey && !r.NullValue {
		var err error
		if p, ok, err = prices.Get(c.Context, r.Key); err != nil {
			return err
		}
	}
	out := dsl.Record[string, int64]{Key: r.Key, NullKey: r.NullKey, Value: -1, Headers: r.Headers} // Java's withValue keeps them
	if ok {
		out.Value = mustInt(p) + mustInt(r.Value)
	}
	return c.Forward(out)
}

func init() {
	Programs["p-global-store-prices"] = func(b *dsl.Builder, t string) {
		dsl.AddGlobalStore(b, "prices", t+"-in2", dsl.Consumed[string, string]{}, highestPrice{})
		dsl.ProcessValues[string, string, int64](dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}), pricedQuantity{}).
			To(t+"-out", dsl.Produced[string, int64]{})
	}
}
