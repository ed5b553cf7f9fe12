package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// wordCountProgram is DslPrograms' p-wordcount in the Go DSL: lines split on spaces, grouped by
// word through the repartition topic "words", counted in the store "counts", every count written
// to <t>-out.
func wordCountProgram(b *dsl.Builder, t string) {
	words := dsl.FlatMapValues(dsl.Stream(b, t+"-in", dsl.Consumed[string, string]{}),
		func(_, line string) []string { return strings.Split(line, " ") })
	dsl.GroupBy(words, func(_, w string) string { return w }, dsl.Grouped[string, string]{Name: "words"}).
		Count(dsl.Materialized[string, int64]{Name: "counts"}).
		ToStream().To(t+"-out", dsl.Produced[string, int64]{})
}

// goDSLApp runs a Go member of group built from program, until the test ends or stop.
type goDSLApp struct {
	app     *stream.App
	cancel  context.CancelFunc
	done    chan error
	owned   func() tasks.Assignment
	stopped bool // Run returned
}

func startGoDSLApp(t *testing.T, b *Broker, group, name string, program func(*dsl.Builder)) *goDSLApp {
	t.Helper()
	cfg := baseConfig(b, group)
	cfg.Runtime.CommitInterval = 100 * time.Millisecond
	db := dsl.NewBuilder()
	program(db)
	topo, procs, err := db.Build(cfg)
	if err != nil {
		t.Fatalf("building the Go program: %v", err)
	}
	rec := &rtApp{name: name, done: make(chan struct{})}
	ring := newLogRing(300)
	app, err := stream.New(cfg, topo, procs, stream.WithHooks(rec), stream.WithClientOptions(kgo.ClientID(name)),
		stream.WithLogger(slog.New(ring).With("test_member", name)))
	if err != nil {
		t.Fatalf("stream.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &goDSLApp{app: app, cancel: cancel, done: make(chan error, 1), owned: rec.assignment}
	go func() { g.done <- app.Run(ctx) }()
	t.Cleanup(func() {
		g.stop(t)
		if t.Failed() {
			t.Logf("the last things %s logged:\n%s", name, ring.String())
		}
	})
	return g
}

// stop ends the member cleanly (it commits and leaves the group); safe to call twice.
func (g *goDSLApp) stop(t *testing.T) {
	t.Helper()
	g.cancel()
	if g.stopped {
		return
	}
	select {
	case err := <-g.done:
		g.stopped = true
		if err != nil {
			t.Errorf("the Go member stopped with %v", err)
		}
	case <-time.After(time.Minute):
		t.Errorf("the Go member did not stop within a minute")
	}
}

// A Kafka Streams application and a Go program written with the dsl package, the same word count
// (DslPrograms' p-wordcount), run as one application in one group: the broker accepts the Go
// member's topology (identical to Kafka Streams'), the tasks are split between the two, and they
// move Java → Go and back as the members leave cleanly. The Go member restores the counts Kafka
// Streams wrote to the changelog and goes on from them, and Kafka Streams restores the Go member's
// in turn: under at-least-once with clean hand-overs, every word's committed counts are 1…n once
// each, in order, across the three phases.
func TestDSLWordCountMixedGroup(t *testing.T) {
	b := Get(t)
	if b.StreamsHeartbeatMaxVersion(t) < 1 {
		t.Skip("the mixed Go/Java DSL group runs against Kafka 4.4 only, as TestDSLInterop")
	}
	prefix := Name(t, "dslmix")
	topics := prefix + "-p-wordcount"
	group := prefix + "-wc"
	b.CreateTopic(t, topics+"-in", 2)
	b.CreateTopic(t, topics+"-out", 1)
	b.DeleteGroupAtEnd(t, group)
	deleteTopicsAtEnd(t, b, group+"-words-repartition", group+"-counts-changelog")
	all := tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 0}, tasks.ID{Subtopology: "0", Partition: 1},
		tasks.ID{Subtopology: "1", Partition: 0}, tasks.ID{Subtopology: "1", Partition: 1})

	want := map[string]int64{}
	produce := func(phase, lines int) {
		var kvs [][2]string
		for i := range lines {
			// Three words a line from a vocabulary of 13, so every word is counted in each phase.
			var ws []string
			for j := range 3 {
				w := fmt.Sprintf("w%d", (phase*7+i*3+j)%13)
				ws = append(ws, w)
				want[w]++
			}
			kvs = append(kvs, [2]string{fmt.Sprintf("line-%d-%d", phase, i), strings.Join(ws, " ")})
		}
		produceValues(t, b, topics+"-in", kvs...)
	}
	counted := func() (bool, string) {
		got := readCommittedCounts(t, clientsOf(t, b), topics+"-out")
		for w, n := range want {
			if s := got[w]; len(s) == 0 || s[len(s)-1] != n {
				return false, fmt.Sprintf("%s counted %v, want last %d", w, s, n)
			}
		}
		return true, ""
	}

	// Phase 1: Kafka Streams first, then the Go member joins; the tasks are split.
	java := startDSLPeer(t, b, prefix, map[string]string{group: "p-wordcount"})
	Eventually(t, javaStart, func() (bool, string) {
		a := java.app(group)
		return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("Java %s owns %v", a.state, a.active)
	})
	goApp := startGoDSLApp(t, b, group, "go", func(db *dsl.Builder) { wordCountProgram(db, topics) })
	Eventually(t, javaStart, func() (bool, string) {
		a, g := java.app(group), goApp.owned().Active
		if len(a.errs) > 0 {
			t.Fatalf("Kafka Streams failed: %q", a.errs)
		}
		return a.state == "RUNNING" && !g.IsEmpty() && !a.active.IsEmpty() && g.Union(a.active).Equal(all),
			fmt.Sprintf("Go owns %v, Java (%s) %v", g, a.state, a.active)
	})
	if ok, why := sameAsJava(mustBuild(t, group, topics), java.app(group).topology); !ok {
		t.Fatalf("the Go program's topology differs from Kafka Streams':\n%s", why)
	}
	produce(1, 60)
	Eventually(t, settle, counted)

	// Phase 2: Kafka Streams leaves; the Go member takes its tasks over from their changelog.
	if !java.stop() {
		t.Fatal("the Kafka Streams application did not close")
	}
	Eventually(t, settle, func() (bool, string) {
		g := goApp.owned().Active
		return g.Equal(all) && goApp.app.State() == stream.Running, fmt.Sprintf("Go (%v) owns %v", goApp.app.State(), g)
	})
	produce(2, 60)
	Eventually(t, settle, counted)

	// Phase 3: Kafka Streams comes back and the Go member leaves; Kafka Streams restores its counts.
	java2 := startDSLPeer(t, b, prefix, map[string]string{group: "p-wordcount"})
	Eventually(t, javaStart, func() (bool, string) {
		a := java2.app(group)
		return a.state == "RUNNING" && !a.active.IsEmpty(), fmt.Sprintf("Java %s owns %v", a.state, a.active)
	})
	goApp.stop(t)
	Eventually(t, javaStart, func() (bool, string) {
		a := java2.app(group)
		if len(a.errs) > 0 {
			t.Fatalf("Kafka Streams failed: %q", a.errs)
		}
		return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("Java %s owns %v", a.state, a.active)
	})
	produce(3, 60)
	Eventually(t, settle, counted)
	checkCountedOnce(t, readCommittedCounts(t, clientsOf(t, b), topics+"-out"), want)
}

// mustBuild is the word count's topology for group.
func mustBuild(t *testing.T, group, topics string) *topology.Topology {
	t.Helper()
	db := dsl.NewBuilder()
	wordCountProgram(db, topics)
	topo, _, err := db.Build(baseConfig(Get(t), group))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}
