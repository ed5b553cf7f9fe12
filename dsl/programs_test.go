package dsl

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// programs are the Go forms of integration/javapeer DslPrograms.java, operation for operation: t
// is the program's topic prefix.
var programs = map[string]func(b *Builder, t string){
	"p-stateless": func(b *Builder, t string) {
		in := Stream(b, t+"-in", Consumed[string, string]{})
		up := MapValues(in.Filter(func(_, v string) bool { return v != "" }).
			FilterNot(func(_, v string) bool { return strings.HasPrefix(v, "#") }),
			func(_, v string) string { return strings.ToUpper(v) })
		up.Peek(func(string, string) {}).To(t+"-out", Produced[string, string]{})
		in.Foreach(func(string, string) {})
	},
	"p-stateless-named": func(b *Builder, t string) {
		in := Stream(b, t+"-in", Consumed[string, string]{Name: "lines"})
		up := MapValues(in.Filter(func(_, v string) bool { return v != "" }, "non-empty").
			FilterNot(func(_, v string) bool { return strings.HasPrefix(v, "#") }, "no-comments"),
			func(_, v string) string { return strings.ToUpper(v) }, "upper")
		up.Peek(func(string, string) {}, "look").To(t+"-out", Produced[string, string]{Name: "written"})
		in.Foreach(func(string, string) {}, "each")
	},
	"p-wordcount": func(b *Builder, t string) {
		words := FlatMapValues(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) []string { return strings.Split(v, " ") })
		GroupBy(words, func(_, w string) string { return w }, Grouped[string, string]{Name: "words"}).
			Count(Materialized[string, int64]{Name: "counts"}).ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-count-unnamed": func(b *Builder, t string) {
		GroupBy(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v }).
			Count().ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-count-materialized-unnamed": func(b *Builder, t string) {
		SelectKey(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v }).
			GroupByKey().Count(Materialized[string, int64]{Key: serde.String, Value: serde.Int64}).
			ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-reduce": func(b *Builder, t string) {
		SelectKey(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v[:min(1, len(v))] }).
			GroupByKey().Reduce(func(a, v string) string { return a + "," + v }).ToStream().To(t+"-out", Produced[string, string]{})
	},
	"p-aggregate": func(b *Builder, t string) {
		swapped := Map(Stream(b, t+"-in", Consumed[string, string]{}), func(k, v string) (string, string) { return v, k })
		Aggregate(swapped.GroupByKey(Grouped[string, string]{Name: "by-value"}), func() int64 { return 0 },
			func(_, v string, agg int64) int64 { return agg + int64(len(v)) }, Materialized[string, int64]{Name: "lengths"}).
			ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-merge": func(b *Builder, t string) {
		a := Stream(b, t+"-in", Consumed[string, string]{})
		c := Stream(b, t+"-in2", Consumed[string, string]{})
		a.Merge(c).GroupByKey().Count(Materialized[string, int64]{Name: "merged"}).ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-repartition": func(b *Builder, t string) {
		SelectKey(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v }).
			Repartition(Repartitioned[string, string]{}).GroupByKey().Count().ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-repartition-named": func(b *Builder, t string) {
		spread := Stream(b, t+"-in", Consumed[string, string]{}).Repartition(Repartitioned[string, string]{Name: "spread", Partitions: 2})
		MapValues(spread, func(_, v string) string { return v + "!" }).To(t+"-out", Produced[string, string]{})
	},
	"p-flatmap": func(b *Builder, t string) {
		FlatMap(Stream(b, t+"-in", Consumed[string, string]{}), func(k, v string) []KeyValue[string, string] {
			return []KeyValue[string, string]{{v, v}, {k, v}}
		}).GroupByKey().Count().ToStream().To(t+"-out", Produced[string, int64]{})
	},
	"p-two-sources": func(b *Builder, t string) {
		MapValues(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v + "?" }).To(t+"-out", Produced[string, string]{})
		GroupBy(Stream(b, t+"-in2", Consumed[string, string]{}), func(_, v string) string { return v }, Grouped[string, string]{Name: "second"}).
			Reduce(func(_, v string) string { return v }, Materialized[string, string]{Name: "latest"}).ToStream().To(t+"-out", Produced[string, string]{})
	},
	"p-groupbykey-source": func(b *Builder, t string) {
		Stream(b, t+"-in", Consumed[string, string]{}).GroupByKey().Count().ToStream().To(t+"-out", Produced[string, int64]{})
	},
}

// encodeJoin is topo as a broker receives it in a joining heartbeat.
func encodeJoin(topo *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "app", "member", 0
	req.Topology = topo
	return req.AppendTo(nil)
}

// Every program's topology is, to the byte of the joining heartbeat, the one Kafka Streams 4.4
// sends for the same program written in Java (testdata, captured from the real applications).
func TestProgramsMatchKafkaStreams(t *testing.T) {
	f, err := os.Open("testdata/kafkastreams-4.4.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		app, js, _ := strings.Cut(line, " ")
		program := strings.TrimPrefix(app, "app-")
		seen[program] = true
		t.Run(program, func(t *testing.T) {
			build := programs[program]
			if build == nil {
				t.Fatalf("no Go form of %s", program)
			}
			want, err := topology.ReadJSON(strings.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			b := NewBuilder()
			build(b, "t-"+program)
			got, procs, err := b.Build(config.Default(app))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := encodeJoin(got.Request(0)), encodeJoin(want.Request(0)); !bytes.Equal(g, w) {
				gj, _ := got.MarshalJSON()
				t.Fatalf("topology differs from Kafka Streams'\n  go: %s\njava: %s", gj, js)
			}
			for _, s := range got.Subtopologies() {
				if procs[s.ID] == nil {
					t.Errorf("no processor for subtopology %s", s.ID)
				}
			}
			if len(procs) != len(got.Subtopologies()) {
				t.Errorf("%d processors for %d subtopologies", len(procs), len(got.Subtopologies()))
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for p := range programs {
		if !seen[p] {
			t.Errorf("program %s has no capture from Kafka Streams", p)
		}
	}
}

func init() {
	programs["p-split"] = func(b *Builder, t string) {
		branches := Stream(b, t+"-in", Consumed[string, string]{}).Split().
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "a") }).
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "b") }).
			DefaultBranch()
		branches["KSTREAM-BRANCH-00000000011"].To(t+"-out", Produced[string, string]{})
		branches["KSTREAM-BRANCH-00000000012"].GroupByKey().Count().ToStream().To(t+"-out2", Produced[string, int64]{})
		branches["KSTREAM-BRANCH-00000000010"].To(t+"-rest", Produced[string, string]{})
	}
	programs["p-split-named"] = func(b *Builder, t string) {
		branches := Stream(b, t+"-in", Consumed[string, string]{}).Split("by-").
			Branch(func(_, v string) bool { return strings.HasPrefix(v, "a") }, "a").
			NoDefaultBranch()
		MapValues(branches["by-a"], func(_, v string) string { return v + "!" }).To(t+"-out", Produced[string, string]{})
	}
	programs["p-to-extractor"] = func(b *Builder, t string) {
		Stream(b, t+"-in", Consumed[string, string]{}).Filter(func(_, v string) bool { return true }).
			ToFunc(func(_, v string) string { return fmt.Sprintf("%s-out-%d", t, len(v)%2) }, Produced[string, string]{})
	}
	programs["p-totable"] = func(b *Builder, t string) {
		SelectKey(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v }).
			ToTable().ToStream().To(t+"-out", Produced[string, string]{})
	}
	programs["p-table-ops"] = func(b *Builder, t string) {
		latest := Stream(b, t+"-in", Consumed[string, string]{}).ToTable(Materialized[string, string]{Name: "latest"})
		MapTableValues(latest.Filter(func(_, v string) bool { return len(v) > 1 }), func(_, v string) string { return strings.ToUpper(v) }).
			ToStream().To(t+"-out", Produced[string, string]{})
	}
	programs["p-table-ops-materialized"] = func(b *Builder, t string) {
		latest := Stream(b, t+"-in", Consumed[string, string]{}).ToTable(Named("as-table"), Materialized[string, string]{Name: "latest"})
		kept := latest.FilterNot(func(_, v string) bool { return v == "" }, Named("non-empty"), Materialized[string, string]{Name: "kept"})
		MapTableValues(kept, func(_, v string) int64 { return int64(len(v)) }, Materialized[string, int64]{Name: "lengths"}).
			ToStream().To(t+"-out", Produced[string, int64]{})
	}
	programs["p-process"] = func(b *Builder, t string) {
		b.AddStore("seen")
		MapValues(Stream(b, t+"-in", Consumed[string, string]{}), func(_, v string) string { return v + "?" }).
			Process(stream.ProcessorFunc(func(*stream.Context, *stream.Record) error { return nil }), "seen")
	}
}
