package topology

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeAt is the group's topology as the broker describes it after members of topo joined at
// epoch: internal topics with the partition count the broker resolved (resolved, or the fixed count
// when there is one).
func describeAt(t *testing.T, topo *Topology, epoch, resolved int32) *Described {
	t.Helper()
	req := topo.Request(epoch)
	kt := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: epoch}
	for _, s := range req.Subtopologies {
		d := kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
			SubtopologyID: s.SubtopologyID, SourceTopics: s.SourceTopics, RepartitionSinkTopics: s.RepartitionSinkTopics,
		}
		for _, ti := range s.RepartitionSourceTopics {
			if ti.NumPartitions == 0 {
				ti.NumPartitions = resolved
			}
			d.RepartitionSourceTopics = append(d.RepartitionSourceTopics, ti)
		}
		for _, ti := range s.StateChangelogTopics {
			ti.NumPartitions = resolved
			d.StateChangelogTopics = append(d.StateChangelogTopics, ti)
		}
		kt.Subtopologies = append(kt.Subtopologies, d)
	}
	g, err := FromDescribe(kt)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// twoSubs is a topology with a repartition topic of fixed count n (0: derived by the broker).
func twoSubs(n int32) *Topology {
	return MustNew(
		Subtopology{ID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-r-repartition"}},
		Subtopology{ID: "1", RepartitionSourceTopics: []TopicInfo{{Name: "app-r-repartition", Partitions: n}},
			StateChangelogTopics: []TopicInfo{{Name: "app-s-changelog"}}},
	)
}

func TestCompare(t *testing.T) {
	a := MustNew(Subtopology{ID: "0", SourceTopics: []string{"a"}})
	b := MustNew(Subtopology{ID: "0", SourceTopics: []string{"b"}})
	ga0, ga2, ga1 := describeAt(t, a, 0, 3), describeAt(t, a, 2, 3), describeAt(t, a, 1, 3)
	cases := []struct {
		name      string
		group     *Described
		local     *Topology
		epoch     int32
		situation Situation
		want      Verdict
		says      []string // the action must contain each
	}{
		{"no group topology", nil, a, 3, BeforeJoin, NoGroupTopology, []string{"first member", "topology.epoch 3"}},
		{"stale, not described", nil, a, 0, StaleStatus, Unknown, []string{"could not be described", "--describe", "deploy"}},
		{"refused, not described", nil, a, 0, RefusedJoin, Unknown, []string{"could not be described", "--describe", "save the positions", "--export", "--from-file", "--delete-all-internal-topics", "never delete the group alone", "docs/upgrades.md", "new application.id"}},
		{"same", ga0, a, 0, BeforeJoin, Same, []string{"join normally"}},
		{"same, stale said but data wins", ga0, a, 0, StaleStatus, Same, []string{"join normally"}},
		{"same ID and epoch, refused", ga0, a, 0, RefusedJoin, SameIDDifferentDetail, []string{"copartition", "identical"}},
		{"changed at the same epoch", ga0, b, 0, BeforeJoin, ChangedWithoutEpochBump, []string{"topology.epoch 1", "save the positions", "--export", "--from-file", "--delete-all-internal-topics", "never delete the group alone", "docs/upgrades.md", "new application.id"}},
		{"changed at the same epoch, refused", ga2, b, 2, RefusedJoin, ChangedWithoutEpochBump, []string{"topology.epoch 3"}},
		{"older, other topology", ga2, b, 1, StaleStatus, Older, []string{"STALE_TOPOLOGY", a.ID().String(), "topology.epoch 2"}},
		{"older, same topology", ga2, a, 0, BeforeJoin, Older, []string{"STALE_TOPOLOGY", "topology.epoch 2"}},
		{"newer, other topology", ga1, b, 2, BeforeJoin, Newer, []string{"save the positions", "--export", "--from-file", "--delete-all-internal-topics", "never delete the group alone", "docs/upgrades.md", "new application.id"}},
		{"newer, same topology", ga1, a, 5, RefusedJoin, Newer, []string{"even for the group's own topology", "use topology.epoch 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Compare(c.group, c.local, c.epoch, c.situation)
			if got.Verdict != c.want {
				t.Fatalf("verdict %s, want %s (%s)", got.Verdict, c.want, got.Action)
			}
			for _, s := range c.says {
				if !strings.Contains(got.Action, s) {
					t.Errorf("action %q does not say %q", got.Action, s)
				}
			}
			if got.LocalID != c.local.ID() || got.LocalEpoch != c.epoch {
				t.Errorf("local side %s/%d, want %s/%d", got.LocalID, got.LocalEpoch, c.local.ID(), c.epoch)
			}
			if c.group == nil {
				if !got.GroupID.IsZero() || got.GroupEpoch != 0 {
					t.Errorf("no group topology, but group side %s/%d", got.GroupID, got.GroupEpoch)
				}
			} else if got.GroupID != c.group.ID || got.GroupEpoch != c.group.Epoch {
				t.Errorf("group side %s/%d, want %s/%d", got.GroupID, got.GroupEpoch, c.group.ID, c.group.Epoch)
			}
			if strings.Contains(got.Action, "\n") || got.Action == "" || strings.HasSuffix(got.Action, ".") {
				t.Errorf("the action must be one sentence without a final period: %q", got.Action)
			}
		})
	}
}

func TestCompareDetectsAnotherFixedPartitionCount(t *testing.T) {
	fixed4, fixed6, derived := twoSubs(4), twoSubs(6), twoSubs(0)
	if fixed4.ID() != fixed6.ID() || fixed4.ID() != derived.ID() {
		t.Fatal("partition counts are not part of the topology ID")
	}
	group := describeAt(t, fixed4, 0, 8) // the group fixed 4; changelogs resolved to 8
	cases := []struct {
		local *Topology
		want  Verdict
	}{
		{fixed4, Same},                      // the description shows the fixed 4
		{fixed6, SameIDDifferentDetail},     // another fixed count
		{derived, Same},                     // 0 locally: nothing to compare with the resolved count
		{twoSubs(8), SameIDDifferentDetail}, // the changelog's resolved 8 is not the repartition topic's 4
	}
	for _, c := range cases {
		if got := Compare(group, c.local, 0, BeforeJoin); got.Verdict != c.want {
			t.Errorf("local count %v: %s, want %s", c.local.subs[1].RepartitionSourceTopics[0].Partitions, got.Verdict, c.want)
		}
	}
	// A group whose repartition topic was derived: its description shows the resolved count.
	resolved := describeAt(t, derived, 0, 5)
	if got := Compare(resolved, fixed4, 0, BeforeJoin); got.Verdict != SameIDDifferentDetail {
		t.Errorf("fixed 4 against a group that resolved 5: %s", got.Verdict)
	}
	if got := Compare(resolved, twoSubs(5), 0, BeforeJoin); got.Verdict != Same {
		t.Errorf("fixed 5 against a group that resolved 5 cannot be told apart: %s", got.Verdict)
	}
	if got := Compare(resolved, nil, 0, BeforeJoin); !got.LocalID.IsZero() || got.Verdict != ChangedWithoutEpochBump {
		t.Errorf("no local topology: %+v", got)
	}
}

func TestComparisonString(t *testing.T) {
	a := MustNew(Subtopology{ID: "0", SourceTopics: []string{"a"}})
	b := MustNew(Subtopology{ID: "0", SourceTopics: []string{"b"}})
	c := Compare(describeAt(t, a, 2, 1), b, 1, StaleStatus)
	want := "the group runs topology " + a.ID().String() + " at epoch 2; this member runs " + b.ID().String() + " at epoch 1: " + c.Action
	if c.String() != want {
		t.Errorf("got  %q\nwant %q", c.String(), want)
	}
	if s := Compare(nil, b, 0, BeforeJoin).String(); !strings.HasPrefix(s, "the group has no topology; this member runs "+b.ID().String()+" at epoch 0: ") {
		t.Errorf("no group topology: %q", s)
	}
	if s := Compare(nil, b, 4, RefusedJoin).String(); !strings.HasPrefix(s, "the group's topology is unknown (the group could not be described); this member runs "+b.ID().String()+" at epoch 4: ") {
		t.Errorf("unknown group topology: %q", s)
	}
}

func TestVerdictAndSituationNames(t *testing.T) {
	names := map[string]bool{}
	for v := NoGroupTopology; v <= Unknown; v++ {
		s := v.String()
		if strings.HasPrefix(s, "Verdict(") || names[s] {
			t.Errorf("verdict %d has no name of its own: %q", int(v), s)
		}
		names[s] = true
	}
	if Verdict(0).String() != "Verdict(0)" || Verdict(99).String() != "Verdict(99)" {
		t.Error("unknown verdicts print their number")
	}
	if Same.String() != "same" || ChangedWithoutEpochBump.String() != "changed-without-epoch-bump" {
		t.Error("the tool's JSON uses these names")
	}
	for s, want := range map[Situation]string{BeforeJoin: "before-join", StaleStatus: "stale-status", RefusedJoin: "refused-join", 7: "Situation(7)"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", int(s), s.String(), want)
		}
	}
}
