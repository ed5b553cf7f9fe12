package integration

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/internal/dslprograms"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Every program of internal/dslprograms runs as a Kafka Streams application (javapeer DslPrograms,
// all in one JVM), and a Go member with the topology the Go DSL builds for the same program joins its
// group: the broker accepts a member only when its topology is identical to the group's (PROTOCOL
// §7.3), so every accepted member proves the Go DSL's topology is Kafka Streams' to the byte, with
// the tasks then shared between the two.
func TestDSLProgramsJoinKafkaStreamsGroups(t *testing.T) {
	b := Get(t)
	if b.StreamsHeartbeatMaxVersion(t) < 1 {
		t.Skip("the DSL programs run against Kafka 4.4 only, as TestDSLInterop; older brokers compare topologies the same way")
	}
	const partitions = 2
	prefix := Name(t, "dslp")
	var names []string
	for p := range dslprograms.Programs {
		names = append(names, p)
	}
	sort.Strings(names)
	apps, topos := map[string]string{}, map[string]*topology.Topology{}
	var inputs, outputs []string // created at once, in two requests
	for _, p := range names {
		group, topics := prefix+"-"+p, prefix+"-"+p
		db := dsl.NewBuilder()
		dslprograms.Programs[p](db, topics)
		cfg := baseConfig(b, group)
		dslprograms.Configure(p, &cfg)
		topo, _, err := db.Build(cfg)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		topos[group], apps[group] = topo, p
		for _, s := range topo.Subtopologies() { // the program's inputs, however many it reads
			inputs = append(inputs, s.SourceTopics...)
		}
		for _, g := range topo.GlobalStores() { // and its global tables' topics, which no task reads
			inputs = append(inputs, g.Topic)
		}
		for _, out := range []string{"-out", "-out2", "-out3", "-rest", "-out-0", "-out-1"} {
			outputs = append(outputs, topics+out)
		}
		b.DeleteGroupAtEnd(t, group)
		var internal []string
		for _, s := range topo.Subtopologies() {
			for _, ti := range slices.Concat(s.RepartitionSourceTopics, s.StateChangelogTopics) {
				internal = append(internal, ti.Name)
			}
		}
		deleteTopicsAtEnd(t, b, internal...)
	}
	slices.Sort(inputs)
	b.CreateTopics(t, partitions, slices.Compact(inputs)...)
	b.CreateTopics(t, 1, outputs...)
	start := time.Now()
	peer := startDSLPeer(t, b, prefix, apps)
	for _, p := range names {
		group := prefix + "-" + p
		all := allTasks(topos[group], partitions)
		Eventually(t, javaStart, func() (bool, string) {
			a := peer.app(group)
			if len(a.errs) > 0 {
				t.Fatalf("%s: Kafka Streams failed: %q", group, a.errs)
			}
			return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("%s: state %s, active %v of %v", group, a.state, a.active, all)
		})
		if ok, why := sameAsJava(topos[group], peer.app(group).topology); !ok {
			t.Errorf("%s: the Go DSL's topology differs from what Kafka Streams sends:\n%s", p, why)
		}
	}
	t.Logf("%d Kafka Streams applications running with their tasks %v after the JVM started", len(names), time.Since(start).Round(time.Millisecond))
	goMembers := map[string]*member{}
	for _, p := range names {
		group := prefix + "-" + p
		goMembers[group] = startMember(t, b, group, topos[group], "go-"+p, nil)
	}
	for _, p := range names {
		group := prefix + "-" + p
		m, all := goMembers[group], allTasks(topos[group], partitions)
		Eventually(t, javaStart, func() (bool, string) {
			if err := m.Err(); err != nil {
				t.Fatalf("%s: the Go member was refused: %v", group, err)
			}
			a := peer.app(group)
			if len(a.errs) > 0 {
				t.Fatalf("%s: Kafka Streams failed: %q", group, a.errs)
			}
			g, _, _ := m.rec.snapshot()
			ok := a.state == "RUNNING" && m.State() == membership.Stable && !g.IsEmpty() && !a.active.IsEmpty() &&
				g.Union(a.active).Equal(all) && g.Intersect(a.active).IsEmpty()
			return ok, fmt.Sprintf("%s: go %s owns %v, java %s owns %v, all %v", group, m.State(), g, a.state, a.active, all)
		})
		d := b.DescribeGroup(t, group)
		described, err := topology.FromDescribe(d.Topology)
		if err != nil {
			t.Fatalf("%s: %v", group, err)
		}
		if len(d.Members) != 2 || described.ID != topos[group].ID() {
			t.Fatalf("%s: %d members, group topology %s, Go built %s", group, len(d.Members), described.ID, topos[group].ID())
		}
	}
	t.Logf("every Go member accepted into its Kafka Streams application's group, tasks shared, %v after the JVM started", time.Since(start).Round(time.Millisecond))
}
