package topology

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedOf renders a topology as the broker's StreamsGroupDescribe answer does once the topology
// is configured: same names, replication factors and configs; internal topics with resolved
// partition counts; no copartition groups; lists in the broker's order.
func describedOf(topo *Topology, resolved int32) *kmsg.StreamsGroupDescribeResponseGroupTopology {
	req := topo.Request(0)
	out := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 0}
	for i := len(req.Subtopologies) - 1; i >= 0; i-- { // reversed: order must not matter
		s := req.Subtopologies[i]
		d := kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
			SubtopologyID:         s.SubtopologyID,
			SourceTopics:          s.SourceTopics,
			RepartitionSinkTopics: s.RepartitionSinkTopics,
		}
		for _, ti := range s.RepartitionSourceTopics {
			ti.NumPartitions = resolved
			d.RepartitionSourceTopics = append(d.RepartitionSourceTopics, ti)
		}
		for _, ti := range s.StateChangelogTopics {
			ti.NumPartitions = resolved
			d.StateChangelogTopics = append(d.StateChangelogTopics, ti)
		}
		out.Subtopologies = append(out.Subtopologies, d)
	}
	return out
}

func TestIDIsEqualForAnyDeclarationOrder(t *testing.T) {
	base := MustNew(wordcount("app")...).ID()
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		subs := wordcount("app")
		r.Shuffle(len(subs), func(i, j int) { subs[i], subs[j] = subs[j], subs[i] })
		for i := range subs {
			s := subs[i].SourceTopics
			r.Shuffle(len(s), func(a, b int) { s[a], s[b] = s[b], s[a] })
		}
		if id := MustNew(subs...).ID(); id != base {
			t.Fatalf("ID %s differs from %s for the same topology declared in another order", id, base)
		}
	}
}

func TestIDChangesWithEveryComparedField(t *testing.T) {
	base := MustNew(wordcount("app")...).ID()
	mutations := map[string]func(s []Subtopology){
		"subtopology id":     func(s []Subtopology) { s[0].ID = "5" },
		"source topic":       func(s []Subtopology) { s[0].SourceTopics = []string{"words2"} },
		"extra source":       func(s []Subtopology) { s[0].SourceTopics = append(s[0].SourceTopics, "more") },
		"repartition name":   func(s []Subtopology) { renameRepartition(s, "app-other-repartition") },
		"replication factor": func(s []Subtopology) { s[1].StateChangelogTopics[0].ReplicationFactor = 3 },
		"config value":       func(s []Subtopology) { s[1].StateChangelogTopics[0].Configs["cleanup.policy"] = "delete" },
		"config added":       func(s []Subtopology) { s[1].RepartitionSourceTopics[0].Configs["x"] = "y" },
		"changelog added": func(s []Subtopology) {
			s[1].StateChangelogTopics = append(s[1].StateChangelogTopics, TopicInfo{Name: "app-more-changelog"})
		},
		"changelog moved": func(s []Subtopology) {
			s[0].StateChangelogTopics, s[1].StateChangelogTopics = s[1].StateChangelogTopics, nil
		},
		"subtopology added": func(s []Subtopology) {},
	}
	seen := map[ID]string{base: "base"}
	for name, mutate := range mutations {
		subs := wordcount("app")
		mutate(subs)
		if name == "subtopology added" {
			subs = append(subs, Subtopology{ID: "2", SourceTopics: []string{"side"}})
		}
		id := MustNew(subs...).ID()
		if prev, dup := seen[id]; dup {
			t.Fatalf("%s: ID %s equals the ID of %s", name, id, prev)
		}
		seen[id] = name
	}
}

func renameRepartition(s []Subtopology, name string) {
	s[0].RepartitionSinkTopics = []string{name}
	s[1].RepartitionSourceTopics[0].Name = name
}

func TestIDIgnoresWhatDescribeDoesNotCarry(t *testing.T) {
	a := MustNew(Subtopology{ID: "0", SourceTopics: []string{"l", "r"}, CopartitionGroups: [][]string{{"l", "r"}}})
	b := MustNew(Subtopology{ID: "0", SourceTopics: []string{"l", "r"}})
	if a.ID() != b.ID() {
		t.Fatal("copartition groups must not change the ID (the broker's description omits them)")
	}
	if a.Equal(b) {
		t.Fatal("Equal must still tell them apart")
	}
}

func TestIDEqualsIDFromDescribe(t *testing.T) {
	topo := MustNew(wordcount("app")...)
	for _, resolved := range []int32{0, 4} {
		d, err := FromDescribe(describedOf(topo, resolved))
		if err != nil {
			t.Fatal(err)
		}
		if d.ID != topo.ID() {
			t.Fatalf("resolved=%d: described ID %s, local ID %s", resolved, d.ID, topo.ID())
		}
	}
}

// TestIDIsPinned fixes the ID of one topology forever: the encoding is documented, so a change that
// moves this value breaks every ID users have recorded and must come with a new version tag.
func TestIDIsPinned(t *testing.T) {
	const want = "eed8a8bf7bc1e97f" // also computed from the documented encoding by an independent script
	id := MustNew(wordcount("app")...).ID()
	if id.String() != want {
		t.Fatalf("ID of the reference topology is %s (full %s), pinned %s", id, id.Hex(), want)
	}
	parsed, err := ParseID(id.Hex())
	if err != nil || parsed != id || !id.Matches(want) || !id.Matches(id.Hex()) || id.IsZero() {
		t.Fatalf("ParseID/Matches round trip failed: %v", err)
	}
	if _, err := ParseID("xyz"); err == nil {
		t.Fatal("ParseID accepted garbage")
	}
}

// richSubtopologies has several topics in every list the ID covers, regexes, replication factors 0,
// -1 and others, configs, and subtopology IDs that sort differently as strings and as numbers.
func richSubtopologies() []Subtopology {
	return []Subtopology{
		{ID: "10", SourceTopicRegexes: []string{"in-.*", "a+"}},
		{ID: "0", SourceTopics: []string{"b", "a", "zeta"}, RepartitionSinkTopics: []string{"app-r2-repartition", "app-r1-repartition"},
			StateChangelogTopics: []TopicInfo{
				{Name: "app-s2-changelog", Configs: map[string]string{"message.timestamp.type": "CreateTime", "cleanup.policy": "compact"}},
				{Name: "app-s1-changelog", ReplicationFactor: 3},
			}},
		{ID: "1", SourceTopics: []string{"c"},
			RepartitionSourceTopics: []TopicInfo{
				{Name: "app-r2-repartition", Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"x": "y", "a": "b"}},
				{Name: "app-r1-repartition", ReplicationFactor: -1},
			},
			StateChangelogTopics: []TopicInfo{{Name: "app-s3-changelog", ReplicationFactor: 300, Configs: map[string]string{"k": ""}}}},
	}
}

// TestIDIsPinnedForARichTopology pins a second ID, computed from the documented encoding by an
// independent Python script (every list with several entries, so that the order inside each list is
// pinned too), and checks refID, the tests' own reading of the documentation, against it.
func TestIDIsPinnedForARichTopology(t *testing.T) {
	const want = "1f7bb9409521aa34f9b8197540d9df86baa80c644c78a46dcc7b7fda26afd423"
	if got := MustNew(richSubtopologies()...).ID().Hex(); got != want {
		t.Fatalf("ID %s, pinned %s", got, want)
	}
	if got := refID(richSubtopologies()).Hex(); got != want {
		t.Fatalf("refID gives %s, pinned %s: the tests' reference encoder is wrong", got, want)
	}
}

// computeID sorts and normalizes on its own, as its documentation says: a topology that did not go
// through New (in any order, replication factor 0) has the ID of its canonical form.
func TestComputeIDNeedsNoCanonicalInput(t *testing.T) {
	subs := richSubtopologies()
	want := MustNew(subs...).ID()
	for i := range subs {
		slices.Reverse(subs[i].SourceTopics)
		slices.Reverse(subs[i].SourceTopicRegexes)
		slices.Reverse(subs[i].RepartitionSinkTopics)
		slices.Reverse(subs[i].RepartitionSourceTopics)
		slices.Reverse(subs[i].StateChangelogTopics)
		for k := range subs[i].StateChangelogTopics {
			if subs[i].StateChangelogTopics[k].ReplicationFactor == -1 {
				subs[i].StateChangelogTopics[k].ReplicationFactor = 0
			}
		}
	}
	slices.Reverse(subs)
	if got := computeID(subs); got != want {
		t.Fatalf("computeID of the same topology in another order: %s, want %s", got, want)
	}
}

func TestParseIDSaysWhatItWants(t *testing.T) {
	for _, bad := range []string{"", "xyz", strings.Repeat("a", 63), strings.Repeat("a", 66), strings.Repeat("g", 64)} {
		_, err := ParseID(bad)
		if err == nil || !strings.Contains(err.Error(), "want 64 hex characters") {
			t.Errorf("ParseID(%q) = %v, want an error asking for 64 hex characters", bad, err)
		}
	}
	if id, err := ParseID(strings.Repeat("0A", 32)); err != nil || id.Hex() != strings.Repeat("0a", 32) || id.IsZero() {
		t.Errorf("ParseID of upper-case hex: %v %v", id, err)
	}
	var zero ID
	if !zero.IsZero() || zero.String() != "0000000000000000" || !zero.Matches(strings.Repeat("0", 64)) || zero.Matches("0") {
		t.Error("the zero ID")
	}
}
