package tasks

import (
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/streamsgroup/streamsgroup/topology"
)

// statefulTopology: subtopology 0 reads two copartitioned sources and has one store; 1 reads a
// repartition topic and has two stores; 2 is stateless.
func statefulTopology() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"orders", "payments"}, RepartitionSinkTopics: []string{"app-rep-repartition"},
			StateChangelogTopics: []topology.TopicInfo{{Name: "app-join-changelog"}},
			CopartitionGroups:    [][]string{{"orders", "payments"}}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{{Name: "app-rep-repartition"}},
			StateChangelogTopics: []topology.TopicInfo{{Name: "app-b-changelog"}, {Name: "app-a-changelog"}}},
		topology.Subtopology{ID: "2", SourceTopics: []string{"clicks"}},
	)
}

func TestChangelogPartitions(t *testing.T) {
	got, err := ChangelogPartitions(statefulTopology(), set("0_1", "0_3", "1_0", "1_3", "2_5"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int32{"app-join-changelog": {1, 3}, "app-a-changelog": {0, 3}, "app-b-changelog": {0, 3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v (a stateless task adds nothing)", got, want)
	}
	var ue *UnknownSubtopologyError
	if _, err := ChangelogPartitions(statefulTopology(), set("1_0", "9_0")); !errors.As(err, &ue) || ue.Task != (ID{"9", 0}) {
		t.Fatalf("unknown subtopology: %v", err)
	}
	if _, err := ChangelogPartitions(nil, set("0_0")); err == nil {
		t.Fatal("nil topology accepted")
	}
	if got, err := ChangelogPartitions(statefulTopology(), Set{}); err != nil || len(got) != 0 {
		t.Fatalf("no tasks: %v, %v", got, err)
	}
}

func TestRouterBothWays(t *testing.T) {
	r, err := NewRouter(statefulTopology())
	if err != nil {
		t.Fatal(err)
	}
	in, err := r.Inputs(ID{"0", 4})
	if want := []TopicPartition{{"orders", 4}, {"payments", 4}}; err != nil || !reflect.DeepEqual(in, want) {
		t.Fatalf("inputs of 0_4 = %v, %v; want both copartitioned sources at partition 4", in, err)
	}
	cl, err := r.Changelogs(ID{"1", 2})
	if want := []TopicPartition{{"app-a-changelog", 2}, {"app-b-changelog", 2}}; err != nil || !reflect.DeepEqual(cl, want) {
		t.Fatalf("changelogs of 1_2 = %v, %v", cl, err)
	}
	if cl, err := r.Changelogs(ID{"2", 0}); err != nil || len(cl) != 0 || r.Stateful(ID{"2", 0}) || !r.Stateful(ID{"1", 0}) {
		t.Fatalf("stateless task: %v, %v, stateful=%v", cl, err, r.Stateful(ID{"2", 0}))
	}
	for _, c := range []struct {
		topic string
		p     int32
		id    ID
		kind  PartitionKind
	}{
		{"orders", 3, ID{"0", 3}, Input},
		{"payments", 0, ID{"0", 0}, Input},
		{"app-rep-repartition", 7, ID{"1", 7}, Input},
		{"app-a-changelog", 1, ID{"1", 1}, Changelog},
		{"app-join-changelog", 2, ID{"0", 2}, Changelog},
		{"clicks", 9, ID{"2", 9}, Input},
	} {
		id, kind, ok := r.Task(c.topic, c.p)
		if !ok || id != c.id || kind != c.kind {
			t.Errorf("Task(%s, %d) = %v %v %v; want %v %v", c.topic, c.p, id, kind, ok, c.id, c.kind)
		}
	}
	for _, c := range []struct {
		topic string
		p     int32
	}{{"app-rep-repartition-x", 0}, {"output", 0}, {"orders", -1}, {"", 0}} {
		if id, kind, ok := r.Task(c.topic, c.p); ok {
			t.Errorf("Task(%q, %d) = %v %v: not a partition of any task", c.topic, c.p, id, kind)
		}
	}
	var ue *UnknownSubtopologyError
	if _, err := r.Inputs(ID{"7", 0}); !errors.As(err, &ue) {
		t.Fatalf("unknown subtopology: %v", err)
	}
	var ne *NegativePartitionError
	if _, err := r.Changelogs(ID{"0", -2}); !errors.As(err, &ne) || ne.Task != (ID{"0", -2}) {
		t.Fatalf("negative partition: %v", err)
	}
	if !r.Known(ID{"1", 0}) || r.Known(ID{"3", 0}) {
		t.Fatal("Known")
	}
	if Input.String() != "input" || Changelog.String() != "changelog" || PartitionKind(9).String() != "PartitionKind(9)" {
		t.Fatal("PartitionKind.String")
	}
	if s := (TopicPartition{"t", 3}).String(); s != "t[3]" {
		t.Fatalf("TopicPartition.String = %s", s)
	}
}

// The router's two directions agree: every partition a task reads or writes routes back to that
// task with the right kind.
func TestRouterRoundTrip(t *testing.T) {
	r, err := NewRouter(statefulTopology())
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"0", "1", "2"} {
		for p := int32(0); p < 8; p++ {
			id := ID{sub, p}
			in, _ := r.Inputs(id)
			cl, _ := r.Changelogs(id)
			for kind, tps := range map[PartitionKind][]TopicPartition{Input: in, Changelog: cl} {
				for _, tp := range tps {
					got, k, ok := r.Task(tp.Topic, tp.Partition)
					if !ok || got != id || k != kind {
						t.Fatalf("%v of %v routes back to %v %v %v", tp, id, got, k, ok)
					}
				}
			}
		}
	}
}

// Kafka Streams reuses a KTable's source topic as its changelog with topology.optimization=all:
// one partition is then both an input and a changelog of the task, which the router refuses.
func TestRouterRefusesSharedTopics(t *testing.T) {
	var se *SharedTopicError
	sourceAsChangelog := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"table"},
		StateChangelogTopics: []topology.TopicInfo{{Name: "table"}}})
	if _, err := NewRouter(sourceAsChangelog); !errors.As(err, &se) || se.Topic != "table" || !reflect.DeepEqual(se.Subtopologies, []string{"0", "0"}) || se.Error() == "" {
		t.Fatalf("a source reused as changelog: %v", err)
	}
	if _, err := NewRouter(nil); err == nil {
		t.Fatal("nil topology accepted")
	}
}

func TestGroup(t *testing.T) {
	got := Group([]TopicPartition{{"b", 3}, {"a", 1}, {"b", 1}, {"b", 3}})
	if want := map[string][]int32{"a": {1}, "b": {1, 3}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Group = %v", got)
	}
	if got := Group(nil); len(got) != 0 {
		t.Fatalf("Group(nil) = %v", got)
	}
}

func TestRouterChangelogTopics(t *testing.T) {
	r, err := NewRouter(statefulTopology())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.ChangelogTopics(), []string{"app-a-changelog", "app-b-changelog", "app-join-changelog"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ChangelogTopics = %v, want %v", got, want)
	}
}

// The Router and the set functions agree: the inputs and changelogs of a set of tasks, task by task
// through the Router, are what InputPartitions and ChangelogPartitions return for the set.
func TestRouterAgreesWithTheSetFunctions(t *testing.T) {
	topo := statefulTopology()
	r, err := NewRouter(topo)
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		s := NewSet(genIDs(t, "ids")...)
		wantIn, errIn := InputPartitions(topo, s)
		wantCl, errCl := ChangelogPartitions(topo, s)
		var in, cl []TopicPartition
		var err error
		for id := range s.All() {
			var a, b []TopicPartition
			if a, err = r.Inputs(id); err != nil {
				break
			}
			if b, err = r.Changelogs(id); err != nil {
				break
			}
			in, cl = append(in, a...), append(cl, b...)
		}
		if (err == nil) != (errIn == nil) || (err == nil) != (errCl == nil) {
			t.Fatalf("tasks %v: router error %v, set functions %v / %v", s, err, errIn, errCl)
		}
		if err != nil {
			return
		}
		if got := Group(in); !reflect.DeepEqual(got, wantIn) {
			t.Fatalf("inputs of %v: router %v, InputPartitions %v", s, got, wantIn)
		}
		if got := Group(cl); !reflect.DeepEqual(got, wantCl) {
			t.Fatalf("changelogs of %v: router %v, ChangelogPartitions %v", s, got, wantCl)
		}
	})
}
