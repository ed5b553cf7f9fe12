package topology

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dslTopology declares, with the helpers, the topology of each DSL construct of
// integration/javapeer/DslPeer.java (same names) for application app, input topics prefixed t, with
// topology.optimization none or all (optimized: KTables reuse their source topics as changelogs).
func dslTopology(construct, app, t string, optimized bool) *Topology {
	n := Names{AppID: app}
	table := func(store, source string) TopicInfo { // a KTable's changelog
		ti := n.KeyValueChangelog(store)
		if optimized {
			ti = ti.ReusingSource(source)
		}
		return ti
	}
	switch construct {
	case "aggregate": // stream(words).groupBy(Grouped.as("by-word")).count(Materialized.as("counts"))
		return MustNew(
			Subtopology{ID: "0", SourceTopics: []string{t + "-words"}, RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
			Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("by-word", 0)},
				StateChangelogTopics: []TopicInfo{n.KeyValueChangelog("counts")}})
	case "aggregate-unnamed": // the same without names: node numbers name the store and the topic
		const name = "KSTREAM-AGGREGATE-STATE-STORE-0000000002"
		return MustNew(
			Subtopology{ID: "0", SourceTopics: []string{t + "-words"}, RepartitionSinkTopics: []string{n.RepartitionTopic(name)}},
			Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition(name, 0)},
				StateChangelogTopics: []TopicInfo{n.KeyValueChangelog(name)}})
	case "stream-table-join": // stream(orders).join(table(customers, Materialized.as("customers")))
		return MustNew(Subtopology{ID: "0", SourceTopics: []string{t + "-orders", t + "-customers"},
			StateChangelogTopics: []TopicInfo{table("customers", t+"-customers")},
			CopartitionGroups:    [][]string{CopartitionGroup([]JoinInput{Source("KSTREAM-SOURCE-0000000002", t+"-orders")}, []JoinInput{Source("KSTREAM-SOURCE-0000000000", t+"-customers")})}})
	case "stream-stream-join", "stream-stream-left-join", "stream-stream-outer-join":
		j := map[string]StreamStreamJoin{
			"stream-stream-join":       {StoreName: "pairs", Kind: InnerJoin, Before: 5 * time.Minute, After: 5 * time.Minute},
			"stream-stream-left-join":  {StoreName: "lpairs", Kind: LeftJoin, Before: 5 * time.Minute, After: 5 * time.Minute, Grace: 30 * time.Second},
			"stream-stream-outer-join": {StoreName: "opairs", Kind: OuterJoin, Before: time.Minute, After: time.Minute},
		}[construct]
		j.Left, j.Right = []JoinInput{Source("KSTREAM-SOURCE-0000000000", t+"-left")}, []JoinInput{Source("KSTREAM-SOURCE-0000000001", t+"-right")}
		join := n.StreamStreamJoin(j)
		return MustNew(Subtopology{ID: "0", SourceTopics: []string{t + "-left", t + "-right"},
			StateChangelogTopics: join.Changelogs, CopartitionGroups: [][]string{join.CopartitionGroup}})
	case "table-table-join": // table(left).join(table(right), Materialized.as("joined"))
		return MustNew(Subtopology{ID: "0", SourceTopics: []string{t + "-left", t + "-right"},
			StateChangelogTopics: []TopicInfo{table("left", t+"-left"), table("right", t+"-right"), n.KeyValueChangelog("joined")},
			CopartitionGroups:    [][]string{CopartitionGroup([]JoinInput{Source("KSTREAM-SOURCE-0000000000", t+"-left")}, []JoinInput{Source("KSTREAM-SOURCE-0000000002", t+"-right")})}})
	case "fk-join": // table(orders).join(table(customers), fk, TableJoined.as("fk"), Materialized.as("enriched"))
		fk := n.ForeignKeyJoin("fk")
		primary := Subtopology{ID: "0", SourceTopics: []string{t + "-orders"},
			StateChangelogTopics: []TopicInfo{table("orders", t+"-orders"), n.KeyValueChangelog("enriched")}}
		fk.AddToPrimary(&primary, Source("KSTREAM-SOURCE-0000000000", t+"-orders"))
		foreign := Subtopology{ID: "1", SourceTopics: []string{t + "-customers"},
			StateChangelogTopics: []TopicInfo{table("customers", t+"-customers")}}
		fk.AddToForeign(&foreign, Source("KSTREAM-SOURCE-0000000002", t+"-customers"))
		return MustNew(primary, foreign)
	case "windowed-suppress": // windowedBy(TimeWindows.ofSizeAndGrace(1 min, 10 s)).count(as("per-minute")).suppress(…withName("final"))
		return MustNew(Subtopology{ID: "0", SourceTopics: []string{t + "-clicks"}, StateChangelogTopics: []TopicInfo{
			n.WindowedChangelog("per-minute", TimeWindowRetention(time.Minute, 10*time.Second)), n.SuppressChangelog("final")}})
	case "session-count": // windowedBy(SessionWindows.ofInactivityGapAndGrace(5 min, 1 min)).count(as("sessions"))
		return MustNew(Subtopology{ID: "0", SourceTopics: []string{t + "-clicks"}, StateChangelogTopics: []TopicInfo{
			n.WindowedChangelog("sessions", SessionWindowRetention(5*time.Minute, time.Minute))}})
	case "global-table": // globalTable(countries) first: it takes subtopology number 0 and sends nothing
		return MustNew(Subtopology{ID: "1", SourceTopics: []string{t + "-visits"}})
	case "versioned-table": // stream(events).join(table(prices, versioned store "prices", 1 h history))
		ti := n.VersionedChangelog("prices", time.Hour.Milliseconds())
		if optimized {
			ti = ti.ReusingSource(t + "-prices")
		}
		return MustNew(Subtopology{ID: "0", SourceTopics: []string{t + "-events", t + "-prices"}, StateChangelogTopics: []TopicInfo{ti},
			CopartitionGroups: [][]string{CopartitionGroup([]JoinInput{Source("KSTREAM-SOURCE-0000000002", t+"-events")}, []JoinInput{Source("KSTREAM-SOURCE-0000000000", t+"-prices")})}})
	case "readme": // the worked example of docs/topology.md, "Matching a Kafka Streams topology"
		ordersJoin := CopartitionGroup(
			[]JoinInput{Source("KSTREAM-SOURCE-0000000004", t+"-orders")},    // this: the stream
			[]JoinInput{Source("KSTREAM-SOURCE-0000000002", t+"-customers")}) // other: the table
		return MustNew(
			// "Sub-topology: 0 for global store": no subtopology is sent for it, but it took number 0.
			Subtopology{ID: "1",
				SourceTopics:          []string{t + "-orders", t + "-customers"},
				RepartitionSinkTopics: []string{n.RepartitionTopic("by-country")},
				StateChangelogTopics:  []TopicInfo{n.KeyValueChangelog("customers")},
				CopartitionGroups:     [][]string{ordersJoin}},
			Subtopology{ID: "2",
				RepartitionSourceTopics: []TopicInfo{n.Repartition("by-country", 0)},
				StateChangelogTopics:    []TopicInfo{n.KeyValueChangelog("per-country")}})
	case "repartition-fixed": // selectKey().repartition(Repartitioned.as("rekeyed").withNumberOfPartitions(3)).groupByKey().count(as("per-key"))
		return MustNew(
			Subtopology{ID: "0", SourceTopics: []string{t + "-events"}, RepartitionSinkTopics: []string{n.RepartitionTopic("rekeyed")}},
			Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("rekeyed", 3)},
				StateChangelogTopics: []TopicInfo{n.KeyValueChangelog("per-key")}})
	}
	return nil
}

// capturedTopology is one TOPOLOGY line of testdata/kafkastreams/dsl-4.4.0.txt.
type capturedTopology struct {
	Subtopologies []struct {
		ID                      string     `json:"id"`
		SourceTopics            []string   `json:"sourceTopics"`
		RepartitionSinkTopics   []string   `json:"repartitionSinkTopics"`
		RepartitionSourceTopics []capTopic `json:"repartitionSourceTopics"`
		StateChangelogTopics    []capTopic `json:"stateChangelogTopics"`
		CopartitionGroups       [][]string `json:"copartitionGroups"`
	} `json:"subtopologies"`
}

type capTopic struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replicationFactor"`
	Configs           map[string]string `json:"configs"`
}

// request is the captured topology as the heartbeat carries it (PROTOCOL §7.2): lists sorted as
// captured, configs by key, copartition groups in the captured (wire) order with their topics
// turned into indices of the sorted source and repartition source lists.
func (c capturedTopology) request() kmsg.StreamsGroupHeartbeatRequestTopology {
	infos := func(in []capTopic) []kmsg.TopicInfo {
		out := []kmsg.TopicInfo{}
		for _, ti := range in {
			var kv []string
			keys := make([]string, 0, len(ti.Configs))
			for k := range ti.Configs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				kv = append(kv, k, ti.Configs[k])
			}
			k := info(ti.Name, kv...)
			k.NumPartitions, k.ReplicationFactor = ti.Partitions, ti.ReplicationFactor
			out = append(out, k)
		}
		return out
	}
	var req kmsg.StreamsGroupHeartbeatRequestTopology
	for _, s := range c.Subtopologies {
		k := sub(s.ID, s.SourceTopics, s.RepartitionSinkTopics, infos(s.RepartitionSourceTopics), infos(s.StateChangelogTopics))
		for _, g := range s.CopartitionGroups {
			kg := kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{SourceTopics: []int16{}, SourceTopicRegex: []int16{}, RepartitionSourceTopics: []int16{}}
			for _, topic := range g {
				if i := slices.Index(s.SourceTopics, topic); i >= 0 {
					kg.SourceTopics = append(kg.SourceTopics, int16(i))
				} else if i := slices.IndexFunc(s.RepartitionSourceTopics, func(ti capTopic) bool { return ti.Name == topic }); i >= 0 {
					kg.RepartitionSourceTopics = append(kg.RepartitionSourceTopics, int16(i))
				}
			}
			k.CopartitionGroups = append(k.CopartitionGroups, kg)
		}
		req.Subtopologies = append(req.Subtopologies, k)
	}
	return req
}

// Every DSL construct declared with the helpers gives, to the byte, the join request Kafka Streams
// 4.4 sends for it (captured from the real applications, with and without topology.optimization=all).
func TestDSLHelpersMatchKafkaStreams(t *testing.T) {
	f, err := os.Open("testdata/kafkastreams/dsl-4.4.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		mode, rest, _ := strings.Cut(line, " ")
		app, js, _ := strings.Cut(rest, " ")
		construct := strings.SplitN(app, "-", 2)[1]
		t.Run(mode+"/"+construct, func(t *testing.T) {
			var c capturedTopology
			if err := json.Unmarshal([]byte(js), &c); err != nil {
				t.Fatal(err)
			}
			got := dslTopology(construct, app, "t-"+construct, mode == "all")
			if got == nil {
				t.Fatalf("no Go declaration for %s", construct)
			}
			want := c.request()
			if g, w := encodeJoin(got.Request(0)), encodeJoin(&want); !bytes.Equal(g, w) {
				gj, _ := got.MarshalJSON()
				t.Fatalf("request differs from Kafka Streams'\n go: %s\njava: %s", gj, js)
			}
		})
		seen++
	}
	if seen != 27 {
		t.Fatalf("%d captured topologies, want 27 (13 constructs × 2 optimization settings, and the example of docs/topology.md)", seen)
	}
}

// The captured values, spelled out for the constructs issue 10 names: what Kafka Streams 4.4 really
// sends (the same file, read by eye).
func TestDSLFindings(t *testing.T) {
	n := Names{AppID: "app"}
	join := n.StreamStreamJoin(StreamStreamJoin{StoreName: "pairs", Before: 5 * time.Minute, After: 5 * time.Minute,
		Left: []JoinInput{Source("KSTREAM-SOURCE-0000000000", "l")}, Right: []JoinInput{Source("KSTREAM-SOURCE-0000000001", "r")}})
	if len(join.Changelogs) != 2 || join.Changelogs[0].Name != "app-pairs-this-join-store-changelog" ||
		join.Changelogs[1].Name != "app-pairs-other-join-store-changelog" ||
		join.Changelogs[0].Configs["cleanup.policy"] != "delete" || join.Changelogs[0].Configs["retention.ms"] != "87000000" {
		t.Errorf("stream-stream join stores: %+v", join.Changelogs)
	}
	// "l".hashCode() = 108 (bucket 12 of 16), "r" = 114 (bucket 2): r first.
	if !slices.Equal(join.CopartitionGroup, []string{"r", "l"}) {
		t.Errorf("stream-stream join copartition group %v", join.CopartitionGroup)
	}
	fk := n.ForeignKeyJoin("fk")
	if fk.Registration.Name != "app-fk-subscription-registration-topic" || fk.Response.Name != "app-fk-subscription-response-topic" ||
		fk.SubscriptionStore.Name != "app-fk-subscription-store-changelog" || fk.Registration.Configs["segment.bytes"] != "52428800" {
		t.Errorf("foreign-key join topics: %+v", fk)
	}
	if s := n.SuppressChangelog("final"); s.Name != "app-final-store-changelog" || s.Configs["cleanup.policy"] != "compact" {
		t.Errorf("suppress buffer: %+v", s)
	}
}

func TestCopartitionGroupsMergeAsKafkaStreams(t *testing.T) {
	cases := []struct {
		joins [][]string
		want  [][]string
	}{
		{[][]string{{"a", "b"}, {"c", "d"}}, [][]string{{"a", "b"}, {"c", "d"}}},
		{[][]string{{"a", "b"}, {"b", "c"}}, [][]string{{"a", "b", "c"}}},
		// a later join linking two groups merges into the first group found; d stays in the second,
		// which keeps c too: Kafka Streams sends two groups sharing c.
		{[][]string{{"a", "b"}, {"c", "d"}, {"b", "c"}}, [][]string{{"a", "b", "c"}, {"c", "d"}}},
		{[][]string{{"x", "x", "y"}}, [][]string{{"x", "y"}}},
	}
	for _, c := range cases {
		if got := CopartitionGroups(c.joins...); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("CopartitionGroups(%v) = %v, want %v", c.joins, got, c.want)
		}
	}
}

// A copartition group whose two topics share a Java hash bucket: Kafka Streams orders them by their
// source nodes' names. These topic names and the order come from a real run (the TOPOLOGY line of
// the DSL peer for stream(events).join(table(prices, versioned)), table declared first): Kafka
// Streams sent [prices, events], the order of nodes KSTREAM-SOURCE-0000000000 (prices) and
// KSTREAM-SOURCE-0000000002 (events), not the join's this-then-other order.
func TestCopartitionGroupTieFollowsSourceNodes(t *testing.T) {
	events, prices := "dsl-testdslinterop-587069-1-versioned-table-events", "dsl-testdslinterop-587069-1-versioned-table-prices"
	got := CopartitionGroup([]JoinInput{Source("KSTREAM-SOURCE-0000000002", events)}, []JoinInput{Source("KSTREAM-SOURCE-0000000000", prices)})
	if want := []string{prices, events}; !slices.Equal(got, want) {
		t.Fatalf("CopartitionGroup = %v, want %v", got, want)
	}
	// Without node names the order given is kept for the tie: the this side first.
	if got := CopartitionGroup([]JoinInput{{Topics: []string{events}}}, []JoinInput{{Topics: []string{prices}}}); !slices.Equal(got, []string{events, prices}) {
		t.Fatalf("without node names: %v", got)
	}
	topo := MustNew(Subtopology{ID: "0", SourceTopics: []string{events, prices}, CopartitionGroups: [][]string{{prices, events}}})
	if g := topo.Request(0).Subtopologies[0].CopartitionGroups[0]; !slices.Equal(g.SourceTopics, []int16{1, 0}) {
		t.Fatalf("request indices %v, want [1 0] (prices, events)", g.SourceTopics)
	}
}
