package topology

import (
	"slices"
	"strings"
	"testing"
)

// Diff names every difference the broker's description lets it see, one line each, in order.
func TestDiffNamesEachDifference(t *testing.T) {
	n := Names{AppID: "app"}
	groupTopo := MustNew(
		Subtopology{ID: "0", SourceTopics: []string{"words", "extra"}, RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
		Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("by-word", 6)},
			StateChangelogTopics: []TopicInfo{n.WindowedChangelog("pairs", 600000), n.KeyValueChangelog("gone")}},
		Subtopology{ID: "2", SourceTopics: []string{"old"}},
	)
	local := MustNew(
		Subtopology{ID: "0", SourceTopics: []string{"words", "new"}, RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
		Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{n.Repartition("by-word", 8)},
			StateChangelogTopics: []TopicInfo{n.JoinWindowChangelog("pairs", 600000), {Name: "app-added-changelog", ReplicationFactor: 3}}},
		Subtopology{ID: "3", SourceTopics: []string{"fresh", "fresh2"}},
	)
	got := Diff(describeAt(t, groupTopo, 0, 6), local)
	want := []string{
		`subtopology "0": source topic "new" is only in this topology`,
		`subtopology "0": source topic "extra" is only in the group's topology`,
		`subtopology "1": repartition source topic "app-by-word-repartition": 8 partitions in this topology, 6 in the group's`,
		`subtopology "1": changelog topic "app-added-changelog" is only in this topology`,
		`subtopology "1": changelog topic "app-gone-changelog" is only in the group's topology`,
		`subtopology "1": changelog topic "app-pairs-changelog": config "cleanup.policy" is "delete" in this topology, "compact,delete" in the group's`,
		`subtopology "2" is only in the group's topology (it reads "old")`,
		`subtopology "3" is only in this topology (it reads "fresh", "fresh2")`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	if d := Diff(describeAt(t, local, 0, 8), local); d != nil {
		t.Fatalf("a topology differs from itself: %q", d)
	}
	if Diff(nil, local) != nil || Diff(describeAt(t, local, 0, 1), nil) != nil {
		t.Fatal("nil sides give differences")
	}
	// A count the local topology leaves to the broker (0) is no difference.
	if d := Diff(describeAt(t, twoSubs(0), 0, 5), twoSubs(0)); d != nil {
		t.Fatalf("a resolved count is taken for a difference: %q", d)
	}
}

func TestDiffReplicationFactorAndConfigs(t *testing.T) {
	group := MustNew(Subtopology{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []TopicInfo{
		{Name: "c", Configs: map[string]string{"a": "1", "b": "2"}}}})
	local := MustNew(Subtopology{ID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []TopicInfo{
		{Name: "c", ReplicationFactor: 3, Configs: map[string]string{"b": "2", "z": "\x00"}}}})
	got := Diff(describeAt(t, group, 0, 1), local)
	want := []string{
		`subtopology "0": changelog topic "c": replication factor 3 in this topology, -1 in the group's`,
		`subtopology "0": changelog topic "c": config "a"="1" only in the group's topology`,
		`subtopology "0": changelog topic "c": config "z"="\x00" only in this topology`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := JoinDiff(want, 2); s != want[0]+"; "+want[1]+"; and 1 more differences" {
		t.Fatalf("JoinDiff: %q", s)
	}
}
