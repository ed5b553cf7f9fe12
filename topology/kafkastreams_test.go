package topology

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// The expectations in this file were written down from what Kafka Streams 4.4.0 itself produced for
// the same processor graphs (StreamThread.initBrokerTopology and the heartbeat request builder, run
// on Java 17 and Java 25), following the rules of PROTOCOL §7.

func info(name string, configs ...string) kmsg.TopicInfo {
	ti := kmsg.TopicInfo{Topic: name, ReplicationFactor: -1, Configs: []kmsg.TopicInfoConfig{}}
	for i := 0; i < len(configs); i += 2 {
		ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: configs[i], Value: configs[i+1]})
	}
	return ti
}

func sub(id string, sources []string, sinks []string, repSources, changelogs []kmsg.TopicInfo, groups ...[]int16) kmsg.StreamsGroupHeartbeatRequestTopologySubtopology {
	s := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		SubtopologyID: id, SourceTopics: sources, SourceTopicRegex: []string{}, RepartitionSinkTopics: sinks,
		RepartitionSourceTopics: repSources, StateChangelogTopics: changelogs,
		CopartitionGroups: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{},
	}
	for _, g := range groups {
		s.CopartitionGroups = append(s.CopartitionGroups, kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
			SourceTopics: g, SourceTopicRegex: []int16{}, RepartitionSourceTopics: []int16{}})
	}
	if s.SourceTopics == nil {
		s.SourceTopics = []string{}
	}
	if s.RepartitionSinkTopics == nil {
		s.RepartitionSinkTopics = []string{}
	}
	if s.RepartitionSourceTopics == nil {
		s.RepartitionSourceTopics = []kmsg.TopicInfo{}
	}
	if s.StateChangelogTopics == nil {
		s.StateChangelogTopics = []kmsg.TopicInfo{}
	}
	return s
}

// encodeJoin wraps a topology in a fixed join request and encodes it as a broker would receive it.
func encodeJoin(t *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID = "app", "member"
	req.EndpointInformationEpoch = -1
	req.RebalanceTimeoutMillis = 300000
	req.Topology = t
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req.AppendTo(nil)
}

func expectSameBytes(t *testing.T, got *Topology, want kmsg.StreamsGroupHeartbeatRequestTopology) {
	t.Helper()
	g, w := encodeJoin(got.Request(0)), encodeJoin(&want)
	if !bytes.Equal(g, w) {
		t.Fatalf("request differs from Kafka Streams'\n got %+v\nwant %+v", got.Request(0).Subtopologies, want.Subtopologies)
	}
}

// stream("words").groupBy(..., Grouped.as("by-word")).count(Materialized.as("counts")).
func TestWordCountMatchesKafkaStreams(t *testing.T) {
	n := Names{AppID: "app"}
	got := MustNew(
		Subtopology{ID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
		Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("by-word", 0)},
			StateChangelogTopics: []TopicInfo{n.KeyValueChangelog("counts")}},
	)
	want := kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		sub("0", []string{"words"}, []string{"app-by-word-repartition"}, nil, nil),
		sub("1", nil, nil,
			[]kmsg.TopicInfo{info("app-by-word-repartition", "cleanup.policy", "delete", "message.timestamp.type", "CreateTime", "retention.ms", "-1", "segment.bytes", "52428800")},
			[]kmsg.TopicInfo{info("app-counts-changelog", "cleanup.policy", "compact", "message.timestamp.type", "CreateTime")}),
	}}
	expectSameBytes(t, got, want)
}

// stream("clicks").groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(5 min)).count(...): the
// store's retention is the window size plus grace, 300000 ms.
func TestWindowedCountMatchesKafkaStreams(t *testing.T) {
	n := Names{AppID: "app"}
	got := MustNew(Subtopology{ID: "0", SourceTopics: []string{"clicks"}, StateChangelogTopics: []TopicInfo{n.WindowedChangelog("per-5m", 300000)}})
	want := kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		sub("0", []string{"clicks"}, nil, nil,
			[]kmsg.TopicInfo{info("app-per-5m-changelog", "cleanup.policy", "compact,delete", "message.timestamp.type", "CreateTime", "retention.ms", "86700000")}),
	}}
	expectSameBytes(t, got, want)
}

// Six stream-stream joins o0⋈o1 … o10⋈o11 whose results are merged, so all six copartition groups
// sit in one subtopology. Kafka Streams sends them in HashSet order, which is not the sorted order
// and even differs between Java 17 and Java 19+ (12 copartitioned topics is a size where the two
// runtimes size the set differently).
func TestCopartitionGroupOrderMatchesKafkaStreams(t *testing.T) {
	var sources []string
	var groups [][]string
	for i := range 6 {
		l, r := fmt.Sprintf("o%d", 2*i), fmt.Sprintf("o%d", 2*i+1)
		sources = append(sources, l, r)
		groups = append(groups, []string{l, r})
	}
	topo := MustNew(Subtopology{ID: "0", SourceTopics: sources, CopartitionGroups: groups})
	// sorted sources: o0 o1 o10 o11 o2 o3 o4 o5 o6 o7 o8 o9
	java17 := sub("0", []string{"o0", "o1", "o10", "o11", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9"}, nil, nil, nil,
		[]int16{0, 1}, []int16{4, 5}, []int16{6, 7}, []int16{8, 9}, []int16{10, 11}, []int16{3, 2})
	expectSameBytes(t, topo, kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{java17}})

	java25 := sub("0", java17.SourceTopics, nil, nil, nil,
		[]int16{0, 1}, []int16{10, 11}, []int16{4, 5}, []int16{6, 7}, []int16{3, 2}, []int16{8, 9})
	expectSameBytes(t, topo.ForJava(Java19Plus), kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{java25}})
}

func TestCopartitionGroupOrderSmallCases(t *testing.T) {
	// Three joins t0⋈t1, t2⋈t3, t4⋈t5 merged: Kafka Streams sends [t4,t5], [t0,t1], [t2,t3].
	topo := MustNew(Subtopology{ID: "0", SourceTopics: []string{"t0", "t1", "t2", "t3", "t4", "t5"},
		CopartitionGroups: [][]string{{"t0", "t1"}, {"t2", "t3"}, {"t4", "t5"}}})
	expectSameBytes(t, topo, kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		sub("0", []string{"t0", "t1", "t2", "t3", "t4", "t5"}, nil, nil, nil, []int16{4, 5}, []int16{0, 1}, []int16{2, 3})}})

	// alpha⋈gamma and delta⋈epsilon, merged: [alpha,gamma] then [epsilon,delta] (not sorted inside).
	topo = MustNew(Subtopology{ID: "0", SourceTopics: []string{"alpha", "gamma", "delta", "epsilon"},
		CopartitionGroups: [][]string{{"alpha", "gamma"}, {"delta", "epsilon"}}})
	expectSameBytes(t, topo, kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		sub("0", []string{"alpha", "delta", "epsilon", "gamma"}, nil, nil, nil, []int16{0, 3}, []int16{2, 1})}})

	// A copartition group with a repartition source topic indexes into RepartitionSourceTopics.
	topo = MustNew(
		Subtopology{ID: "0", SourceTopics: []string{"a"}, RepartitionSinkTopics: []string{"r"}},
		Subtopology{ID: "1", SourceTopics: []string{"b"}, RepartitionSourceTopics: []TopicInfo{{Name: "r"}},
			CopartitionGroups: [][]string{{"r", "b"}}})
	k := topo.Request(0).Subtopologies[1].CopartitionGroups[0]
	if len(k.SourceTopics) != 1 || k.SourceTopics[0] != 0 || len(k.RepartitionSourceTopics) != 1 || k.RepartitionSourceTopics[0] != 0 {
		t.Fatalf("indices %+v", k)
	}
}

func TestJavaStringHash(t *testing.T) {
	// Values of "…".hashCode() as printed by Java 17.
	cases := map[string]int32{"": 0, "a": 97, "orders": -1008770331, "topic-with-a-long-name-0123456789": 2135309419, "é": 233, "😀": 1772899}
	for s, want := range cases {
		if got := javaStringHash(s); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
	if javaTableSizeForAdds(12) != 16 || javaTableSizeForAdds(13) != 32 {
		t.Error("HashSet growth")
	}
	if javaTableSizeForCopy(11, Java17) != 16 || javaTableSizeForCopy(12, Java17) != 32 || javaTableSizeForCopy(12, Java19Plus) != 16 {
		t.Error("HashSet copy-constructor sizing")
	}
}

var update = flag.Bool("update", false, "rewrite the golden request files in testdata/")

// TestGoldenRequests pins the exact bytes of several join requests (kmsg encoding, version 1), so
// any change to the canonical form is seen in review.
func TestGoldenRequests(t *testing.T) {
	n := Names{AppID: "shop"}
	cases := map[string]*Topology{
		"wordcount": MustNew(
			Subtopology{ID: "0", SourceTopics: []string{"words"}, RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
			Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("by-word", 8)},
				StateChangelogTopics: []TopicInfo{n.KeyValueChangelog("counts"), n.VersionedChangelog("prices", 3600000)}}),
		"two-copartition-groups": MustNew(Subtopology{ID: "0", SourceTopics: []string{"t5", "t4", "t3", "t2", "t1", "t0"},
			CopartitionGroups: [][]string{{"t0", "t1"}, {"t2", "t3"}, {"t4", "t5"}}}),
		"ids-as-strings": MustNew(
			Subtopology{ID: "10", SourceTopics: []string{"x"}},
			Subtopology{ID: "2", SourceTopics: []string{"y"}, StateChangelogTopics: []TopicInfo{{Name: "c", ReplicationFactor: 3,
				Configs: map[string]string{"z": "1", "a": "2"}}}}),
	}
	for name, topo := range cases {
		got := hex.EncodeToString(encodeJoin(topo.Request(7)))
		path := filepath.Join("testdata", "golden", name+".hex")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./topology -run Golden -update once)", name, err)
		}
		if strings.TrimSpace(string(want)) != got {
			t.Errorf("%s: request bytes changed\n got %s\nwant %s", name, got, want)
		}
	}
}

// refJavaStringHash is String.hashCode over the UTF-16 encoding that unicode/utf16 produces.
func refJavaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

func TestJavaStringHashAgainstUTF16(t *testing.T) {
	// U+FFFF is the last rune of one code unit, U+10000 the first of two.
	for _, s := range []string{"\uffff", "\U00010000", "a\U00010000b", "\U0010ffff", "\ud7ff"} {
		if got, want := javaStringHash(s), refJavaStringHash(s); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		if got, want := javaStringHash(s), refJavaStringHash(s); got != want {
			t.Fatalf("hash(%q) = %d, want %d", s, got, want)
		}
	})
}

// The bucket counts of Java's HashSet copy constructor, worked out by hand from the two formulas
// (Java 11-18: tableSizeFor(max((int)(n/.75f)+1, 16)); Java 19+: tableSizeFor(ceil(max(n, 12)/0.75)))
// on both sides of every change.
func TestJavaTableSizeForCopy(t *testing.T) {
	cases := []struct{ n, java17, java19 int }{
		{0, 16, 16}, {11, 16, 16}, {12, 32, 16}, {13, 32, 32}, {23, 32, 32}, {24, 64, 32}, {25, 64, 64},
		{47, 64, 64}, {48, 128, 64}, {49, 128, 128}, {96, 256, 128}, {97, 256, 256},
	}
	for _, c := range cases {
		if got := javaTableSizeForCopy(c.n, Java17); got != c.java17 {
			t.Errorf("Java 17, %d elements: %d buckets, want %d", c.n, got, c.java17)
		}
		if got := javaTableSizeForCopy(c.n, Java19Plus); got != c.java19 {
			t.Errorf("Java 19+, %d elements: %d buckets, want %d", c.n, got, c.java19)
		}
	}
	for n, want := range map[int]int{0: 16, 12: 16, 13: 32, 24: 32, 25: 64, 48: 64, 49: 128} {
		if got := javaTableSizeForAdds(n); got != want {
			t.Errorf("%d adds: %d buckets, want %d", n, got, want)
		}
	}
}

// Names gives every internal topic the configured replication factor, and -1 when none is set.
func TestNamesReplicationFactor(t *testing.T) {
	for rf, want := range map[int16]int16{0: -1, 3: 3, -1: -1} {
		n := Names{AppID: "app", ReplicationFactor: rf}
		for name, ti := range map[string]TopicInfo{
			"repartition": n.Repartition("r", 0), "key-value": n.KeyValueChangelog("s"),
			"windowed": n.WindowedChangelog("w", 1), "versioned": n.VersionedChangelog("v", 1),
		} {
			if ti.ReplicationFactor != want {
				t.Errorf("replication.factor %d, %s topic: %d, want %d", rf, name, ti.ReplicationFactor, want)
			}
		}
	}
	n := Names{AppID: "app"}
	if got := n.WindowedChangelog("w", 1000).Configs; !reflect.DeepEqual(got, map[string]string{
		"cleanup.policy": "compact,delete", "retention.ms": "86401000", "message.timestamp.type": "CreateTime"}) {
		t.Errorf("windowed changelog configs %v", got)
	}
	if got := n.VersionedChangelog("v", 1000).Configs; !reflect.DeepEqual(got, map[string]string{
		"cleanup.policy": "compact", "min.compaction.lag.ms": "86401000", "message.timestamp.type": "CreateTime"}) {
		t.Errorf("versioned changelog configs %v", got)
	}
	if got := n.Repartition("r", 5); got.Name != "app-r-repartition" || got.Partitions != 5 {
		t.Errorf("repartition topic %+v", got)
	}
}
