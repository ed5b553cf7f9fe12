package admin

import (
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/topology"
)

func TestCompareTopology(t *testing.T) {
	a := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"a"}})
	b := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"b"}})
	group := func(epoch int32, topo *topology.Topology) *Group {
		return &Group{ID: "g", Topology: &topology.Described{Epoch: epoch, ID: topo.ID()}}
	}
	cases := []struct {
		g     *Group
		local *topology.Topology
		epoch int32
		want  Verdict
		says  string
	}{
		{nil, a, 0, NoGroupTopology, "first member"},
		{&Group{ID: "g"}, a, 0, NoGroupTopology, "first member"},
		{group(0, a), a, 0, Same, "runs this topology"},
		{group(0, a), b, 0, ChangedWithoutEpochBump, "topology.epoch 1"},
		{group(2, a), b, 1, Older, "STALE_TOPOLOGY"},
		{group(1, a), b, 2, Newer, "new application.id"},
	}
	for _, c := range cases {
		got := CompareTopology(c.g, c.local, c.epoch)
		if got.Verdict != c.want || !strings.Contains(got.Explanation, c.says) || got.LocalID != c.local.ID() {
			t.Errorf("%v: got %s %q", c.want, got.Verdict, got.Explanation)
		}
	}
	if NextEpoch(group(3, a), 0) != 4 || NextEpoch(nil, -1) != 0 || NextEpoch(nil, 4) != 5 {
		t.Error("NextEpoch")
	}
	if Verdict(99).String() == "" || Same.String() != "same" {
		t.Error("Verdict names")
	}
}

func TestGroupErrorMessages(t *testing.T) {
	for _, e := range []*GroupError{
		{Group: "g", Kind: ErrGroupNotFound},
		{Group: "g", Kind: ErrNotStreamsGroup, Type: "consumer"},
		{Group: "g", Kind: ErrGroupNotEmpty},
	} {
		if !strings.Contains(e.Error(), `"g"`) {
			t.Errorf("%v does not name the group", e)
		}
	}
}
