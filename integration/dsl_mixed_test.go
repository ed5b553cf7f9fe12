package integration

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/internal/dslprograms"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
	"github.com/streamsgroup/streamsgroup/windowed"
)

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
	// The Kafka Streams members run with statestore.cache.max.bytes=0, so that every count is written
	// (the tests check each key's counts 1…n); so does this one.
	cfg.Runtime.StateStoreCacheMaxBytes = -1
	// And, as they, windowed aggregations that emit final results look at every record (the
	// internal __emit.interval.ms.kstreams.windowed.aggregation__ at 0), not once a second.
	cfg.Runtime.WindowedEmitInterval = -1
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
	var lines [][2]string
	mixedGroup(t, "p-wordcount", func(phase int) [][2]string {
		var kvs [][2]string
		for i := range 60 {
			// Three words a line from a vocabulary of 13, so every word is counted in each phase.
			var ws []string
			for j := range 3 {
				ws = append(ws, fmt.Sprintf("w%d", (phase*7+i*3+j)%13))
			}
			kvs = append(kvs, [2]string{fmt.Sprintf("line-%d-%d", phase, i), strings.Join(ws, " ")})
		}
		lines = append(lines, kvs...)
		return kvs
	}, func() map[string]int64 {
		want := map[string]int64{}
		for _, l := range lines {
			for _, w := range strings.Fields(l[1]) {
				want[w]++
			}
		}
		return want
	}, true)
}

// A table regrouped by a new key and counted (DslPrograms' p-table-groupby-count: users by region),
// run by a Kafka Streams member and a Go member in one group, tasks moving Java → Go → Java: users
// move between regions, so each update takes the user out of the old region's count and into the
// new one's, through a repartition topic that carries Kafka Streams' Change format (both values)
// between the two runtimes. Every region's last committed count is the number of users it holds.
func TestDSLTableAggregateMixedGroup(t *testing.T) {
	latest := map[string]string{}
	regions := map[string]bool{}
	mixedGroup(t, "p-table-groupby-count", func(phase int) [][2]string {
		var kvs [][2]string
		for i := range 40 {
			user, region := fmt.Sprintf("u%d", i%17), fmt.Sprintf("r%d", (i*phase+i/3)%5)
			latest[user], regions[region] = region, true
			kvs = append(kvs, [2]string{user, region})
		}
		return kvs
	}, func() map[string]int64 {
		want := map[string]int64{}
		for r := range regions {
			want[r] = 0
		}
		for _, r := range latest {
			want[r]++
		}
		return want
	}, false)
}

// A cogroup of two streams (DslPrograms' p-cogroup: lengths in from one topic, out from the
// other, per key, in one store) run by a Kafka Streams member and a Go member in one group, tasks
// moving Java → Go → Java: every key's last committed aggregate is the sum over both topics.
func TestDSLCogroupMixedGroup(t *testing.T) {
	net := map[string]int64{}
	mixedGroupOn(t, "p-cogroup", func(phase int) map[string][][2]string { return cogroupInput(net, 7, phase, 30) },
		func() map[string]int64 { return maps.Clone(net) }, false)
}

// cogroupInput is a phase's n records for p-cogroup over keys keys (lengths in on -in, 2 out on
// -in2 for every third), their effect added to net.
func cogroupInput(net map[string]int64, keys, phase, n int) map[string][][2]string {
	var plus, minus [][2]string
	for i := range n {
		k := fmt.Sprintf("k%d", i%keys)
		v := strings.Repeat("x", 1+(i*phase)%5)
		plus = append(plus, [2]string{k, v})
		net[k] += int64(len(v))
		if i%3 == 0 {
			minus = append(minus, [2]string{k, "yy"})
			net[k] -= 2
		}
	}
	return map[string][][2]string{"-in": plus, "-in2": minus}
}

// A tumbling window count (DslPrograms' p-window-tumbling-count: 10 s windows, no grace) run by a
// Kafka Streams member and a Go member in one group, tasks moving Java → Go → Java: windows that
// span a hand-over are counted on from the window changelog the other runtime wrote (Kafka Streams'
// window store keys, restored by each), and the outputs' windowed keys are Kafka's
// TimeWindowedSerde's. Every key's window counts are 1…n once each, in order.
func TestDSLWindowedCountMixedGroup(t *testing.T) {
	// Recent, aligned times (an old timestamp would fall to the topics' retention), 400 ms apart,
	// increasing: no record is late, and the windows at 20 s and 40 s span the hand-overs.
	base := time.Now().Add(-5*time.Minute).UnixMilli() / 10000 * 10000
	want := map[string]int64{}
	topics := mixedGroupRecords(t, "p-window-tumbling-count", func(phase int) map[string][]*kgo.Record {
		var recs []*kgo.Record
		for i := range 60 {
			ts := base + int64((phase-1)*24000+i*400)
			k := fmt.Sprintf("k%d", i%5)
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
			want[string(windowed.AppendTimeKey(nil, []byte(k), ts/10000*10000))]++
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, true, 2)
	checkWindowedPlacement(t, Get(t), topics+"-out", 10000, 2)
}

// A left join of a stream with a table (p-join-prices) by a Kafka Streams member and a Go member in
// one group, tasks moving Java → Go → Java: each phase writes prices to the table's topic, then
// quantities to the stream's, later in time; every quantity is joined with its key's price of that
// phase (the runtimes order a task's inputs by time and wait for records the broker already has).
// Keys priced only in the first phase are joined in the later ones with that price, restored from
// the table's changelog the other runtime wrote; a key never priced gets -1.
func TestDSLStreamTableJoinMixedGroup(t *testing.T) {
	base := time.Now().Add(-5 * time.Minute).UnixMilli()
	want := map[string]int64{}
	mixedGroupRecords(t, "p-join-prices", func(phase int) map[string][]*kgo.Record {
		at := func(ms int) time.Time { return time.UnixMilli(base + int64(phase*20000+ms)) }
		var prices, qtys []*kgo.Record
		price := map[string]int64{}
		for i := range 4 {
			k := fmt.Sprintf("item%d", i)
			price[k] = int64(phase*100 + i)
			prices = append(prices, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(price[k])), Timestamp: at(i)})
		}
		if phase == 1 {
			for i := range 3 {
				k := fmt.Sprintf("old%d", i)
				price[k] = int64(1000 + i)
				prices = append(prices, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(price[k])), Timestamp: at(10 + i)})
			}
		} else {
			for i := range 3 {
				price[fmt.Sprintf("old%d", i)] = int64(1000 + i)
			}
		}
		price["none"] = -1
		for j := range 3 {
			for _, k := range slices.Sorted(maps.Keys(price)) {
				qtys = append(qtys, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(j)), Timestamp: at(1000 + j*100)})
				want[k] = price[k] + int64(j)
				if k == "none" {
					want[k] = -1
				}
			}
		}
		return map[string][]*kgo.Record{"-in": qtys, "-in2": prices}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
}

// Each window's final count (Suppress(UntilWindowCloses), p-suppress-window-close: 10 s windows, 2 s
// grace) by a Kafka Streams member and a Go member in one group, tasks moving Java → Go → Java. Each
// phase counts two windows: the first closes within the phase; the second is still open when the
// tasks move, its counts held in the suppression buffer, and closes in the next phase, on the other
// runtime: its final count is emitted there only if that runtime restored the buffer the other one
// wrote (no record of the window comes after the move).
func TestDSLSuppressMixedGroup(t *testing.T) {
	base := time.Now().Add(-10*time.Minute).UnixMilli() / 10000 * 10000
	want := map[string]int64{}
	mixedGroupRecords(t, "p-suppress-window-close", func(phase int) map[string][]*kgo.Record {
		t0 := base + int64(phase-1)*30000
		var recs []*kgo.Record
		add := func(k string, ts int64) {
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
		}
		for i := range 10 { // the first window: two records of each key
			add(fmt.Sprintf("k%d", i%5), t0+int64(i)*900)
		}
		for i := range 5 { // the second: one of each, held when the phase ends
			add(fmt.Sprintf("k%d", i), t0+10000+int64(i)*1000)
		}
		add("tick", t0+19000) // stream time 19 s: the first window closed (end 10 s + 2 s grace), the second not
		for i := range 5 {
			want[string(windowed.AppendTimeKey(nil, []byte(fmt.Sprintf("k%d", i)), t0))] = 2
			if phase > 1 { // the previous phase's second window, closed by this phase's first record
				want[string(windowed.AppendTimeKey(nil, []byte(fmt.Sprintf("k%d", i)), t0-20000))] = 1
			}
		}
		want[string(windowed.AppendTimeKey(nil, []byte("tick"), t0-30000+10000))] = 1
		if phase == 1 {
			delete(want, string(windowed.AppendTimeKey(nil, []byte("tick"), t0-30000+10000)))
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
}

// Session counts (p-session-counts-only: a 5 s gap, 2 s grace) by a Kafka Streams member and a Go
// member in one group, tasks moving Java → Go → Java. Each key's records come every 2 s through all
// three phases, so its one session grows across both moves: the runtime that takes the task merges
// each record into the session the other wrote to the session store's changelog, and the counts go
// on (3, 6, 9); a runtime that did not restore it would start a new session at 3.
func TestDSLSessionMixedGroup(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	want := map[string]int64{}
	mixedGroupRecords(t, "p-session-counts-only", func(phase int) map[string][]*kgo.Record {
		var recs []*kgo.Record
		for j := range 3 {
			ts := base + int64(phase-1)*6000 + int64(j)*2000
			for i := range 5 {
				recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
			}
		}
		end := base + int64(phase-1)*6000 + 4000
		for i := range 5 {
			want[string(windowed.AppendSessionKey(nil, []byte(fmt.Sprintf("k%d", i)), windowed.Window{Start: base, End: end}))] = int64(3 * phase)
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
}

// A stream-stream join (p-join-streams-sum: the sum of two records' numbers within 3 s) by a Kafka
// Streams member and a Go member in one group, tasks moving Java → Go → Java. Each phase writes left
// records that no right record of the phase joins, and the next phase writes their right records,
// 2.5 s later: those join only with left records the other runtime kept in its join window store,
// which the new owner restored from the changelog the other wrote (keys w… join within a phase, so
// the phase's records were processed before the move).
func TestDSLStreamStreamJoinMixedGroup(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	want := map[string]int64{}
	mixedGroupRecords(t, "p-join-streams-sum", func(phase int) map[string][]*kgo.Record {
		tp := base + int64(phase)*1500
		var left, right []*kgo.Record
		rec := func(k, v string, ts int64) *kgo.Record {
			return &kgo.Record{Key: []byte(k), Value: []byte(v), Timestamp: time.UnixMilli(ts)}
		}
		for i := range 5 {
			left = append(left, rec(fmt.Sprintf("k%d-%d", phase, i), "100", tp+int64(i)*10))
			left = append(left, rec(fmt.Sprintf("w%d-%d", phase, i), "100", tp+int64(i)*10+1))
			right = append(right, rec(fmt.Sprintf("w%d-%d", phase, i), fmt.Sprint(phase), tp+500+int64(i)*10))
			want[fmt.Sprintf("w%d-%d", phase, i)] = 100 + int64(phase)
			if phase > 1 { // the previous phase's left records, kept by the other runtime
				right = append(right, rec(fmt.Sprintf("k%d-%d", phase-1, i), fmt.Sprint(phase), tp+1000+int64(i)*10))
				want[fmt.Sprintf("k%d-%d", phase-1, i)] = 100 + int64(phase)
			}
		}
		return map[string][]*kgo.Record{"-in": left, "-in2": right}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
}

// checkWindowedPlacement says whether every record of topic, written with windowed keys by either
// runtime, is on its inner key's partition (murmur2, as Kafka Streams' WindowedStreamPartitioner
// places it), and that the test's keys would not all be there by their whole key.
func checkWindowedPlacement(t *testing.T, b *Broker, topic string, size int64, partitions int) {
	t.Helper()
	byKey := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	n, elsewhere := 0, 0
	readCommitted(t, clientsOf(t, b), topic, func(r *kgo.Record) {
		inner, _, err := windowed.SplitTimeKey(r.Key, size)
		if err != nil {
			t.Errorf("%s[%d]@%d: %v", topic, r.Partition, r.Offset, err)
			return
		}
		n++
		if want := int32(byKey.Partition(&kgo.Record{Key: inner}, partitions)); r.Partition != want {
			t.Errorf("%s[%d]@%d: window of %q on partition %d, want its inner key's %d", topic, r.Partition, r.Offset, inner, r.Partition, want)
		}
		if int32(byKey.Partition(&kgo.Record{Key: r.Key}, partitions)) != r.Partition {
			elsewhere++
		}
	})
	if n == 0 || elsewhere == 0 {
		t.Fatalf("%d records, %d of them placed apart from their whole key: the check proves nothing", n, elsewhere)
	}
}

// mixedGroup runs program as one application of a Kafka Streams member and a Go member (the Go DSL's
// form of the program), through three phases of input (produce gives each phase's records): both
// members with the tasks split; the Go member alone after Kafka Streams left cleanly; Kafka Streams
// alone after it came back and the Go member left cleanly. After each phase every key's last
// committed output (a Long) must be want's; countedOnce also requires each key's outputs to be
// 1…n once each.
func mixedGroup(t *testing.T, program string, produce func(phase int) [][2]string, want func() map[string]int64, countedOnce bool) {
	mixedGroupOn(t, program, func(phase int) map[string][][2]string { return map[string][][2]string{"-in": produce(phase)} }, want, countedOnce)
}

// mixedGroupOn is mixedGroup with input on several topics: produce gives each phase's records by
// the input's suffix (-in, -in2).
func mixedGroupOn(t *testing.T, program string, produce func(phase int) map[string][][2]string, want func() map[string]int64, countedOnce bool) {
	_ = mixedGroupRecords(t, program, func(phase int) map[string][]*kgo.Record {
		recs := map[string][]*kgo.Record{}
		for suffix, kvs := range produce(phase) {
			for _, kv := range kvs {
				recs[suffix] = append(recs[suffix], &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])})
			}
		}
		return recs
	}, want, countedOnce, 1)
}

// mixedOnEveryLine are the mixed Go/Java groups that also run against Kafka 4.2 and 4.3: one of each
// construct the windows-and-joins issue names (a windowed count with suppression, a session
// aggregate, a stream-table, a stream-stream and a foreign-key join), under at-least-once and under
// exactly-once with the Go member killed. The others run against 4.4 only, for make test's time:
// what they add is the DSL and the runtime, which do not depend on the broker's version.
var mixedOnEveryLine = map[string]bool{
	"TestDSLSuppressMixedGroup":                    true,
	"TestDSLSessionMixedGroup":                     true,
	"TestDSLStreamTableJoinMixedGroup":             true,
	"TestDSLStreamStreamJoinMixedGroup":            true,
	"TestDSLForeignKeyJoinMixedGroup":              true,
	"TestDSLSuppressMixedGroupExactlyOnce":         true,
	"TestDSLSessionMixedGroupExactlyOnce":          true,
	"TestDSLStreamTableJoinMixedGroupExactlyOnce":  true,
	"TestDSLStreamStreamJoinMixedGroupExactlyOnce": true,
	"TestDSLForeignKeyJoinMixedGroupExactlyOnce":   true,
}

// skipMixedBefore44 skips a mixed Go/Java group against a broker older than Kafka 4.4 unless it is
// one of mixedOnEveryLine.
func skipMixedBefore44(t *testing.T, b *Broker) {
	t.Helper()
	if b.StreamsHeartbeatMaxVersion(t) < 1 && !mixedOnEveryLine[t.Name()] {
		t.Skip("the mixed Go/Java DSL group runs against Kafka 4.4 only, as TestDSLInterop")
	}
}

// mixedGroupRecords is mixedGroupOn with the records given whole (their timestamps), written in
// order to partition 0 of each input, and an output topic of outPartitions; it returns the
// program's topic prefix. prefill's records (by the input's suffix) are written before any member
// starts (a global table's, which each runtime reads whole before it processes).
func mixedGroupRecords(t *testing.T, program string, produce func(phase int) map[string][]*kgo.Record, want func() map[string]int64, countedOnce bool,
	outPartitions int32, prefill ...map[string][]*kgo.Record) string {
	b := Get(t)
	skipMixedBefore44(t, b)
	prefix := Name(t, "dslmix")
	topics := prefix + "-" + program
	group := prefix + "-app"
	b.CreateTopic(t, topics+"-in", 2)
	b.CreateTopic(t, topics+"-in2", 2)
	b.CreateTopics(t, outPartitions, topics+"-out", topics+"-out2") // a program's second output, if it has one, is not checked
	b.DeleteGroupAtEnd(t, group)
	writePrefill(t, b, topics, prefill)
	build := func(db *dsl.Builder) { dslprograms.Programs[program](db, topics) }
	db := dsl.NewBuilder()
	build(db)
	topo, _, err := db.Build(baseConfig(b, group))
	if err != nil {
		t.Fatal(err)
	}
	deleteTopicsAtEnd(t, b, internalTopics(topo)...)
	all := allTasks(topo, 2)
	run := func(phase int) {
		t.Helper()
		// The second input (a join's table) is written first: its records are older, and are on the
		// broker when the first input's arrive, so a task that orders its inputs by time (as both
		// runtimes do) processes them first.
		in := produce(phase)
		for _, suffix := range slices.Backward(slices.Sorted(maps.Keys(in))) {
			produceRecords(t, b, topics+suffix, in[suffix]...)
		}
		w := want()
		Eventually(t, settle, func() (bool, string) {
			got := readCommittedCounts(t, clientsOf(t, b), topics+"-out")
			for k, n := range w {
				if s := got[k]; len(s) == 0 || s[len(s)-1] != n {
					return false, fmt.Sprintf("phase %d: %s's outputs %v, want the last %d", phase, k, s, n)
				}
			}
			return true, ""
		})
	}

	// Phase 1: Kafka Streams first, then the Go member joins; the tasks are split.
	java := startDSLPeer(t, b, prefix, map[string]string{group: program})
	Eventually(t, javaStart, func() (bool, string) {
		a := java.app(group)
		return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("Java %s owns %v", a.state, a.active)
	})
	goApp := startGoDSLApp(t, b, group, "go", build)
	Eventually(t, javaStart, func() (bool, string) {
		a, g := java.app(group), goApp.owned().Active
		if len(a.errs) > 0 {
			t.Fatalf("Kafka Streams failed: %q", a.errs)
		}
		return a.state == "RUNNING" && !g.IsEmpty() && !a.active.IsEmpty() && g.Union(a.active).Equal(all) && g.Intersect(a.active).IsEmpty(),
			fmt.Sprintf("Go owns %v, Java (%s) %v", g, a.state, a.active)
	})
	if ok, why := sameAsJava(topo, java.app(group).topology); !ok {
		t.Fatalf("the Go program's topology differs from Kafka Streams':\n%s", why)
	}
	t.Logf("phase 1: Go owns %v, Kafka Streams %v", goApp.owned().Active, java.app(group).active)
	run(1)

	// Phase 2: Kafka Streams leaves; the Go member takes its tasks over from their changelogs.
	if !java.stop() {
		t.Fatal("the Kafka Streams application did not close")
	}
	Eventually(t, settle, func() (bool, string) {
		g := goApp.owned().Active
		return g.Equal(all) && goApp.app.State() == stream.Running, fmt.Sprintf("Go (%v) owns %v", goApp.app.State(), g)
	})
	run(2)

	// Phase 3: Kafka Streams comes back and the Go member leaves; Kafka Streams restores the Go
	// member's state.
	java2 := startDSLPeer(t, b, prefix, map[string]string{group: program})
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
	run(3)
	if countedOnce {
		checkCountedOnce(t, readCommittedCounts(t, clientsOf(t, b), topics+"-out"), want())
	}
	return topics
}

// The word count of a Kafka Streams member and a Go member (its Go DSL form, as a process of its
// own) in one group under exactly_once_v2, the Go member killed (SIGKILL) while the input flows: its
// open transaction is aborted and its tasks move to Kafka Streams, which restores the Go member's
// committed state; the Go member comes back (the same state.dir) and takes tasks again; then Kafka
// Streams leaves and the Go member restores its state. Read with read_committed, every word's
// counts are 1…n once each, in order: nothing counted twice, nothing lost, across both runtimes.
func TestDSLWordCountMixedGroupExactlyOnce(t *testing.T) {
	want := map[string]int64{}
	mixedGroupExactlyOnce(t, "p-wordcount", func(phase, lines int) map[string][][2]string {
		var kvs [][2]string
		for i := range lines {
			var ws []string
			for j := range 3 {
				w := fmt.Sprintf("w%d", (phase*5+i*3+j)%11)
				ws = append(ws, w)
				want[w]++
			}
			kvs = append(kvs, [2]string{fmt.Sprintf("line-%d-%d", phase, i), strings.Join(ws, " ")})
		}
		return map[string][][2]string{"-in": kvs}
	}, func() map[string]int64 { return maps.Clone(want) }, checkCountedOnce, 0)
}

// The stream-table join of a Kafka Streams member and a Go member under exactly_once_v2, the Go
// member killed while quantities flow: prices (all 0) are written once, first; each key's
// quantities are 1, 2, 3…, so read_committed its joined outputs must be 1…n once each — none
// twice, none lost, and none -1 (a table the new owner did not restore from the other's changelog).
func TestDSLStreamTableJoinMixedGroupExactlyOnce(t *testing.T) {
	next := time.Now().Add(-10 * time.Minute).UnixMilli()
	want := map[string]int64{}
	priced := false
	mixedGroupExactlyOnceRecords(t, "p-join-prices", func(phase, n int) map[string][]*kgo.Record {
		in := map[string][]*kgo.Record{}
		if !priced {
			priced = true
			for i := range 5 {
				next++
				in["-in2"] = append(in["-in2"], &kgo.Record{Key: []byte(fmt.Sprintf("item%d", i)), Value: []byte("0"), Timestamp: time.UnixMilli(next)})
			}
		}
		for i := range n {
			next += 50
			k := fmt.Sprintf("item%d", i%5)
			want[k]++
			in["-in"] = append(in["-in"], &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(want[k])), Timestamp: time.UnixMilli(next)})
		}
		return in
	}, func() map[string]int64 { return maps.Clone(want) }, checkCountedOnce, 0)
}

// Session counts by a Kafka Streams member and a Go member under exactly_once_v2, the Go member
// killed while records flow: every key's records come 100 ms apart, so each key has one session
// from the first record to the last; read_committed, the count of that session must be the key's
// number of records — none counted twice, none lost — whichever runtime merged each record into the
// session the other left in the changelog, and whatever the kill aborted.
func TestDSLSessionMixedGroupExactlyOnce(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	next := base
	want := map[string]int64{}
	count := map[string]int64{}
	mixedGroupExactlyOnceRecords(t, "p-session-counts-only", func(phase, n int) map[string][]*kgo.Record {
		var recs []*kgo.Record
		for i := range n {
			next += 20 // each key's records 100 ms apart: one session each
			k := fmt.Sprintf("k%d", i%5)
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(next)})
			count[k]++
		}
		clear(want)
		for k, c := range count {
			// The session from the key's first record to its last.
			first := base + 20*int64(1+int(k[1]-'0'))
			last := first + 100*(c-1)
			want[string(windowed.AppendSessionKey(nil, []byte(k), windowed.Window{Start: first, End: last}))] = c
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, nil, 0)
}

// The tumbling window count (p-window-tumbling-count) under exactly_once_v2 with the Go member
// killed while the input flows, as the word count above: a window's update processed twice, or
// lost, in either runtime or across the hand-overs would break its counts 1…n.
func TestDSLWindowedCountMixedGroupExactlyOnce(t *testing.T) {
	base := time.Now().Add(-10*time.Minute).UnixMilli() / 10000 * 10000 // recent, aligned
	next := base
	want := map[string]int64{}
	mixedGroupExactlyOnceRecords(t, "p-window-tumbling-count", func(phase, n int) map[string][]*kgo.Record {
		var recs []*kgo.Record
		for i := range n {
			next += 250 // increasing: no record is late, and windows span the phases
			k := fmt.Sprintf("k%d", i%5)
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(next)})
			want[string(windowed.AppendTimeKey(nil, []byte(k), next/10000*10000))]++
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, checkCountedOnce, 0)
}

// The tumbling window count with suppression (p-suppress-window-close: 10 s windows, 2 s grace,
// each window's final count only) under exactly_once_v2 with the Go member killed while the input
// flows. Each key's records come 1.25 s apart in time, so each window of a key counts 8 of them and
// closes as the next windows fill, across the phases and the hand-overs. Read with read_committed,
// every window closed (its end plus the grace at or before the last record's time) must be emitted
// once, with its count, and no other: a final count emitted twice (the buffer's changelog and the
// output not committed together), lost, or emitted early would show.
func TestDSLSuppressMixedGroupExactlyOnce(t *testing.T) {
	base := time.Now().Add(-30*time.Minute).UnixMilli() / 10000 * 10000 // recent, aligned
	next := base
	counts := map[int64]map[string]int64{} // window start → key → count
	want := map[string]int64{}
	mixedGroupExactlyOnceRecords(t, "p-suppress-window-close", func(phase, n int) map[string][]*kgo.Record {
		var recs []*kgo.Record
		for i := range n {
			next += 250 // increasing: no record is late
			k := fmt.Sprintf("k%d", i%5)
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(next)})
			start := next / 10000 * 10000
			if counts[start] == nil {
				counts[start] = map[string]int64{}
			}
			counts[start][k]++
		}
		clear(want)
		for start, byKey := range counts {
			if start+10000+2000 > next { // not closed yet: held
				continue
			}
			for k, c := range byKey {
				want[string(windowed.AppendTimeKey(nil, []byte(k), start))] = c
			}
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, checkEmittedOnce, 0)
}

// A stream-stream join (p-join-streams-sum: the sum of two records' numbers within 3 s) under
// exactly_once_v2 with the Go member killed while the input flows. Each pair has a key of its own, a
// left record (0) and a right one (1) a few milliseconds apart, written to the two inputs: whichever
// comes second joins the first, kept in the join's window store (and restored from its changelog by
// the runtime that took the task over). Read with read_committed, every pair's key must have one
// output, 1: none twice, none lost.
func TestDSLStreamStreamJoinMixedGroupExactlyOnce(t *testing.T) {
	next := time.Now().Add(-10 * time.Minute).UnixMilli()
	want := map[string]int64{}
	mixedGroupExactlyOnceRecords(t, "p-join-streams-sum", func(phase, n int) map[string][]*kgo.Record {
		in := map[string][]*kgo.Record{}
		for i := range n / 2 {
			next += 2
			k := fmt.Sprintf("pair%d-%d", phase, i)
			in["-in"] = append(in["-in"], &kgo.Record{Key: []byte(k), Value: []byte("0"), Timestamp: time.UnixMilli(next)})
			in["-in2"] = append(in["-in2"], &kgo.Record{Key: []byte(k), Value: []byte("1"), Timestamp: time.UnixMilli(next + 1)})
			want[k] = 1
		}
		return in
	}, func() map[string]int64 { return maps.Clone(want) }, checkCountedOnce, 0)
}

// The table regrouped and counted (p-table-groupby-count) under exactly_once_v2 with the Go member
// killed, as the word count above: a user's move processed twice, or lost, would leave a region's
// count wrong (each update subtracts from the old region and adds to the new one).
func TestDSLTableAggregateMixedGroupExactlyOnce(t *testing.T) {
	latest := map[string]string{}
	regions := map[string]bool{}
	mixedGroupExactlyOnce(t, "p-table-groupby-count", func(phase, n int) map[string][][2]string {
		var kvs [][2]string
		for i := range n {
			user, region := fmt.Sprintf("u%d", i%23), fmt.Sprintf("r%d", (i*phase+i/3)%7)
			latest[user], regions[region] = region, true
			kvs = append(kvs, [2]string{user, region})
		}
		return map[string][][2]string{"-in": kvs}
	}, func() map[string]int64 {
		want := map[string]int64{}
		for r := range regions {
			want[r] = 0
		}
		for _, r := range latest {
			want[r]++
		}
		return want
	}, nil, 0)
}

// The cogroup of two streams (p-cogroup) under exactly_once_v2 with the Go member killed, with the
// record cache on at Kafka's default size on both sides: the cached updates are written as part of
// each transaction, and an aborted transaction's are dropped, so every key's last committed
// aggregate is the exact sum over both topics.
func TestDSLCogroupMixedGroupExactlyOnceCached(t *testing.T) {
	net := map[string]int64{}
	mixedGroupExactlyOnce(t, "p-cogroup", func(phase, n int) map[string][][2]string { return cogroupInput(net, 13, phase, n) },
		func() map[string]int64 { return maps.Clone(net) }, nil, config.DefaultStateStoreCacheMaxBytes)
}

// mixedGroupExactlyOnce runs program as one application of a Kafka Streams member and a Go member
// (a process of its own) under exactly_once_v2, with statestore.cache.max.bytes cacheBytes on both
// (0: the cache off): both with the tasks split; the Go member killed (SIGKILL) while the input
// flows, Kafka Streams taking its tasks; the Go member back on its state.dir; Kafka Streams gone.
// produce gives a phase's n records by input suffix. After each phase every key's last
// read_committed output (a Long) must be want's; check, if given, then checks every key's outputs
// (checkCountedOnce, checkEmittedOnce).
func mixedGroupExactlyOnce(t *testing.T, program string, produce func(phase, n int) map[string][][2]string, want func() map[string]int64,
	check outputCheck, cacheBytes int64) {
	mixedGroupExactlyOnceRecords(t, program, func(phase, n int) map[string][]*kgo.Record {
		recs := map[string][]*kgo.Record{}
		for suffix, kvs := range produce(phase, n) {
			for _, kv := range kvs {
				recs[suffix] = append(recs[suffix], &kgo.Record{Key: []byte(kv[0]), Value: []byte(kv[1])})
			}
		}
		return recs
	}, want, check, cacheBytes)
}

// outputCheck checks the outputs of an exactly-once group, each key's in order, against the last
// output wanted of each.
type outputCheck func(t *testing.T, got map[string][]int64, want map[string]int64)

// checkEmittedOnce fails the test unless every key wanted was output once, its value wanted, and no
// other key was: a suppression's final results, none emitted twice and none early.
func checkEmittedOnce(t *testing.T, got map[string][]int64, want map[string]int64) {
	t.Helper()
	var bad []string
	for k, n := range want {
		if s := got[k]; len(s) != 1 || s[0] != n {
			bad = append(bad, fmt.Sprintf("%q: emitted %v, want %d once", k, s, n))
		}
	}
	for k, s := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%q: emitted %v, want nothing", k, s))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("the final results are not each emitted once:\n%s", strings.Join(bad, "\n"))
	}
}

// mixedGroupExactlyOnceRecords is mixedGroupExactlyOnce with the records given whole (their
// timestamps), written in order to partition 0 of each input; prefill as for mixedGroupRecords.
func mixedGroupExactlyOnceRecords(t *testing.T, program string, produce func(phase, n int) map[string][]*kgo.Record, want func() map[string]int64,
	check outputCheck, cacheBytes int64, prefill ...map[string][]*kgo.Record) {
	b := Get(t)
	skipMixedBefore44(t, b)
	prefix := Name(t, "dsleos")
	topics, group := prefix+"-"+program, prefix+"-app"
	b.CreateTopic(t, topics+"-in", 2)
	b.CreateTopic(t, topics+"-in2", 2)
	b.CreateTopic(t, topics+"-out", 1)
	b.DeleteGroupAtEnd(t, group)
	writePrefill(t, b, topics, prefill)
	groupSession(t, b, group, 4000) // a killed member's tasks move within seconds, as the other exactly-once tests
	warmTransactions(t, b)
	db := dsl.NewBuilder()
	dslprograms.Programs[program](db, topics)
	topo, _, err := db.Build(baseConfig(b, group))
	if err != nil {
		t.Fatal(err)
	}
	deleteTopicsAtEnd(t, b, internalTopics(topo)...)
	all := allTasks(topo, 2)
	send := func(phase, n int) {
		in := produce(phase, n)
		for _, suffix := range slices.Backward(slices.Sorted(maps.Keys(in))) { // a join's table first, as in mixedGroupRecords
			produceRecords(t, b, topics+suffix, in[suffix]...)
		}
	}
	done := func() (bool, string) {
		got := readCommittedCounts(t, clientsOf(t, b), topics+"-out")
		for k, n := range want() {
			if s := got[k]; len(s) == 0 || s[len(s)-1] != n {
				return false, fmt.Sprintf("%s's outputs %v, want the last %d", k, s, n)
			}
		}
		return true, ""
	}
	split := func(java *dslPeer, goMember *eosChild) func() (bool, string) {
		return func() (bool, string) {
			a := java.app(group)
			if len(a.errs) > 0 {
				t.Fatalf("Kafka Streams failed: %q", a.errs)
			}
			_, g := goMember.snapshot()
			return a.state == "RUNNING" && goMember.running() && !a.active.IsEmpty() && g.Union(a.active).Equal(all) &&
				g.Intersect(a.active).IsEmpty(), fmt.Sprintf("Go %v, Java (%s) %v", goMember, a.state, a.active)
		}
	}
	dir := t.TempDir()
	goCache := cacheBytes
	if goCache == 0 {
		goCache = -1 // the cache off (0 is the default size in config.Runtime)
	}
	goArgs := []string{"-group", group, "-program", program, "-topics", topics, "-state-dir", dir, "-commit-interval-ms", "100",
		"-cache-bytes", strconv.FormatInt(goCache, 10)}

	java := startDSLPeer(t, b, prefix, map[string]string{group: program}, "--processing-guarantee=exactly_once_v2",
		"--cache-max-bytes="+strconv.FormatInt(cacheBytes, 10))
	Eventually(t, javaStart, func() (bool, string) {
		a := java.app(group)
		return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("Java %s owns %v", a.state, a.active)
	})
	goMember := startEOSMember(t, b, "go", goArgs...)
	Eventually(t, javaStart, split(java, goMember))
	send(1, 60)
	Eventually(t, settle, done)

	// The Go member dies while the input flows: whatever it had not committed is aborted.
	send(2, 400)
	goMember.kill()
	<-goMember.exited
	Eventually(t, javaStart, func() (bool, string) {
		a := java.app(group)
		return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("Java %s owns %v after the kill", a.state, a.active)
	})
	Eventually(t, settle, done)

	// The Go member comes back on its state.dir, then Kafka Streams leaves.
	goMember = startEOSMember(t, b, "go2", goArgs...)
	Eventually(t, javaStart, split(java, goMember))
	send(3, 60)
	Eventually(t, settle, done)
	if !java.stop() {
		t.Fatal("the Kafka Streams application did not close")
	}
	Eventually(t, settle, func() (bool, string) {
		_, g := goMember.snapshot()
		return goMember.running() && g.Equal(all), fmt.Sprintf("Go %v", goMember)
	})
	send(4, 60)
	Eventually(t, settle, done)
	if check != nil {
		check(t, readCommittedCounts(t, clientsOf(t, b), topics+"-out"), want())
	}
	if exit := goMember.stop(t); exit != "ok" {
		t.Fatalf("the Go member did not stop cleanly: %q", exit)
	}
}

// Final window counts (EmitStrategy.onWindowClose, p-window-emit-final-retained: 10 s windows, 2 s
// grace, kept 5 minutes) by a Kafka Streams member and a Go member in one group, tasks moving Java →
// Go → Java. Time runs on across the phases; each phase counts one window whole and starts the next,
// which closes in the next phase, on the other runtime. A window stays in the store long after it was
// emitted, so only the last emitted close time, committed with the offsets in Kafka Streams'
// processor metadata, keeps the next owner from emitting it again: every window must be emitted
// once, with its final count, whichever runtime wrote the metadata and whichever read it.
func TestDSLWindowEmitFinalMixedGroup(t *testing.T) {
	base := time.Now().Add(-10*time.Minute).UnixMilli() / 10000 * 10000
	want := map[string]int64{}
	topics := mixedGroupRecords(t, "p-window-emit-final-retained", func(phase int) map[string][]*kgo.Record {
		t0 := base + int64(phase-1)*20000
		var recs []*kgo.Record
		add := func(k string, ts int64) {
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
		}
		for i := range 10 { // the first window: two records of each key
			add(fmt.Sprintf("k%d", i%5), t0+int64(i)*900)
		}
		for i := range 5 { // the second: one of each, still open when the phase ends
			add(fmt.Sprintf("k%d", i), t0+10000+int64(i)*1000)
		}
		add("tick", t0+19000) // stream time 19 s: the first window closed (end 10 s + 2 s grace), the second not
		for i := range 5 {
			want[string(windowed.AppendTimeKey(nil, []byte(fmt.Sprintf("k%d", i)), t0))] = 2
			if phase > 1 { // the previous phase's second window, closed by this phase's records
				want[string(windowed.AppendTimeKey(nil, []byte(fmt.Sprintf("k%d", i)), t0-10000))] = 1
			}
		}
		if phase > 1 {
			want[string(windowed.AppendTimeKey(nil, []byte("tick"), t0-10000))] = 1
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
	checkEmittedOnce(t, readCommittedCounts(t, clientsOf(t, Get(t)), topics+"-out"), want)
}

// Final session counts (EmitStrategy.onWindowClose, p-session-emit-final: a 5 s gap, 2 s grace) by a
// Kafka Streams member and a Go member in one group, tasks moving Java → Go → Java. Each phase
// closes the sessions it opened but one per key, which closes in the next phase, on the other
// runtime. A closed session stays in the time-ordered session store until its minute of ends
// expires, so only the last emitted close time, committed in Kafka Streams' processor metadata,
// keeps the next owner from emitting it again: every session must be emitted once, with its final
// count, whichever runtime wrote the metadata and whichever read it.
func TestDSLSessionEmitFinalMixedGroup(t *testing.T) {
	// A minute's start: the three phases' sessions stay in one interval of the store's.
	base := time.Now().Add(-10*time.Minute).UnixMilli() / 60000 * 60000
	want := map[string]int64{}
	session := func(k string, start, end int64) string {
		return string(windowed.AppendSessionKey(nil, []byte(k), windowed.Window{Start: start, End: end}))
	}
	topics := mixedGroupRecords(t, "p-session-emit-final", func(phase int) map[string][]*kgo.Record {
		t0 := base + int64(phase-1)*15000
		var recs []*kgo.Record
		add := func(k string, ts int64) {
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte("x"), Timestamp: time.UnixMilli(ts)})
		}
		for i := range 5 { // a session [t0, t0+2 s] of two records per key; the second also closes the last phase's open ones
			add(fmt.Sprintf("k%d", i), t0)
		}
		for i := range 5 {
			add(fmt.Sprintf("k%d", i), t0+2000)
		}
		for i := range 5 { // one record per key at t0+9 s, open when the phase ends
			add(fmt.Sprintf("s%d", i), t0+9000)
		}
		add("tick", t0+10000) // close time t0+3 s: the k sessions closed, the s ones not
		for i := range 5 {
			want[session(fmt.Sprintf("k%d", i), t0, t0+2000)] = 2
			if phase > 1 {
				want[session(fmt.Sprintf("s%d", i), t0-6000, t0-6000)] = 1
			}
		}
		if phase > 1 {
			want[session("tick", t0-5000, t0-5000)] = 1
		}
		return map[string][]*kgo.Record{"-in": recs}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1)
	checkEmittedOnce(t, readCommittedCounts(t, clientsOf(t, Get(t)), topics+"-out"), want)
}

// writePrefill writes the records of prefill to the topics of their suffixes (under prefix topics).
func writePrefill(t *testing.T, b *Broker, topics string, prefill []map[string][]*kgo.Record) {
	t.Helper()
	for _, in := range prefill {
		for _, suffix := range slices.Sorted(maps.Keys(in)) {
			produceRecords(t, b, topics+suffix, in[suffix]...)
		}
	}
}

// A left join of quantities with a global table of prices (p-join-global-prices) by a Kafka Streams
// member and a Go member in one group, tasks moving Java → Go → Java. The prices are written before
// any member starts, spread over both partitions of their topic: each runtime reads the global
// table whole before it processes a record, so every quantity, whichever task and runtime
// processes it, is joined with its key's price (a key never priced gets -1). The third phase's
// Kafka Streams member starts while the Go member runs, and reads the table itself.
func TestDSLGlobalTableJoinMixedGroup(t *testing.T) {
	base := time.Now().Add(-5 * time.Minute).UnixMilli()
	prices, price := globalPrices(base)
	want := map[string]int64{}
	mixedGroupRecords(t, "p-join-global-prices", func(phase int) map[string][]*kgo.Record {
		var qtys []*kgo.Record
		for j := range 3 {
			// Each key's quantities on one partition (their last output is the last written), the
			// keys on both: no co-partitioning with the table is needed.
			for i, k := range slices.Sorted(maps.Keys(price)) {
				q := int64(phase*10 + j)
				qtys = append(qtys, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(q)), Partition: int32(i % 2),
					Timestamp: time.UnixMilli(base + int64(phase*20000+j))})
				want[k] = price[k] + q
				if price[k] < 0 {
					want[k] = -1
				}
			}
		}
		return map[string][]*kgo.Record{"-in": qtys}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1, map[string][]*kgo.Record{"-in2": prices})
}

// The same join under exactly_once_v2, the Go member killed while quantities flow: every price is
// 0 and each key's quantities are 1, 2, 3…, so read_committed its outputs must be 1…n once each —
// none twice, none lost, and none -1 (a quantity joined before its runtime held the whole table).
func TestDSLGlobalTableJoinMixedGroupExactlyOnce(t *testing.T) {
	next := time.Now().Add(-10 * time.Minute).UnixMilli()
	var prices []*kgo.Record
	for i := range 5 {
		// Keys spread over both partitions: every process reads every partition of a global topic.
		prices = append(prices, &kgo.Record{Key: []byte(fmt.Sprintf("item%d", i)), Value: []byte("0"), Partition: int32(i % 2), Timestamp: time.UnixMilli(next)})
	}
	want := map[string]int64{}
	mixedGroupExactlyOnceRecords(t, "p-join-global-prices", func(phase, n int) map[string][]*kgo.Record {
		in := map[string][]*kgo.Record{}
		for i := range n {
			next += 50
			k := fmt.Sprintf("item%d", i%5)
			want[k]++
			in["-in"] = append(in["-in"], &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(want[k])), Timestamp: time.UnixMilli(next)})
		}
		return in
	}, func() map[string]int64 { return maps.Clone(want) }, checkCountedOnce, 0, map[string][]*kgo.Record{"-in2": prices})
}

// A global store kept by a processor of the program's own (p-global-store-prices, AddGlobalStore
// and Kafka Streams' addGlobalStore: each key's highest price, a null value deleting it, a record
// without a key kept under "nokey") by a Kafka Streams member and a Go member in one group, tasks
// moving Java → Go → Java. The prices are written before either member starts, so each runtime
// builds its store by restoring the topic through the processor: a price that fell later in the
// topic keeps the higher one, a deleted price is gone, and the record without a key is never handed
// to the processor (Kafka Streams 4.4's restore skips such records), so "nokey" has no price.
// Every quantity gets its key's price plus the quantity (-1 without a price) on either runtime.
func TestDSLGlobalStoreMixedGroup(t *testing.T) {
	base := time.Now().Add(-5 * time.Minute).UnixMilli()
	price := map[string]int64{}
	var prices []*kgo.Record
	write := func(k string, p int64, partition int32) {
		var v []byte
		if p >= 0 {
			v = []byte(fmt.Sprint(p))
		}
		var key []byte
		if k != "" {
			key = []byte(k)
		}
		prices = append(prices, &kgo.Record{Key: key, Value: v, Partition: partition, Timestamp: time.UnixMilli(base + int64(len(prices)))})
	}
	for i := range 6 {
		k := fmt.Sprintf("item%d", i)
		price[k] = int64(100 + i)
		write(k, price[k], int32(i%2))
	}
	write("item1", 500, 1) // rises: the highest
	price["item1"] = 500
	write("item3", 50, 1) // falls: the processor keeps 103
	write("item4", -1, 0) // deleted
	price["item4"] = -1
	write("", 7, 0) // no key: skipped by the restore, on both runtimes
	price["nokey"] = -1
	price["none"] = -1 // never priced
	want := map[string]int64{}
	mixedGroupRecords(t, "p-global-store-prices", func(phase int) map[string][]*kgo.Record {
		var qtys []*kgo.Record
		for i, k := range slices.Sorted(maps.Keys(price)) {
			q := int64(phase*10 + i)
			qtys = append(qtys, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(q)), Partition: int32(i % 2),
				Timestamp: time.UnixMilli(base + int64(phase*20000+i))})
			want[k] = price[k] + q
			if price[k] < 0 {
				want[k] = -1
			}
		}
		return map[string][]*kgo.Record{"-in": qtys}
	}, func() map[string]int64 { return maps.Clone(want) }, false, 1, map[string][]*kgo.Record{"-in2": prices})
}

// globalPrices are the prices of TestDSLGlobalTableJoinMixedGroup: item0…item5 on both partitions
// of the topic, one of them updated and one deleted later in the topic, and "none" never priced.
func globalPrices(base int64) ([]*kgo.Record, map[string]int64) {
	price := map[string]int64{}
	var recs []*kgo.Record
	for i := range 6 {
		k := fmt.Sprintf("item%d", i)
		price[k] = int64(100 + i)
		recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprint(price[k])), Partition: int32(i % 2), Timestamp: time.UnixMilli(base + int64(i))})
	}
	price["item1"] = 500
	recs = append(recs, &kgo.Record{Key: []byte("item1"), Value: []byte("500"), Partition: 1, Timestamp: time.UnixMilli(base + 10)})
	price["item2"] = -1
	recs = append(recs, &kgo.Record{Key: []byte("item2"), Partition: 0, Timestamp: time.UnixMilli(base + 11)})
	price["none"] = -1
	return recs, price
}

// internalTopics are topo's repartition and changelog topics.
func internalTopics(topo *topology.Topology) []string {
	var internal []string
	for _, s := range topo.Subtopologies() {
		for _, ti := range slices.Concat(s.RepartitionSourceTopics, s.StateChangelogTopics) {
			internal = append(internal, ti.Name)
		}
	}
	return internal
}
