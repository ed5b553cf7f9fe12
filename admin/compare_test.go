package admin

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/topology"
)

// CompareTopology is topology.Compare before joining; these pin that it passes the group's side on
// (nil group, group without topology) and keeps the former field name in step.
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
		want  topology.Verdict
		says  string
	}{
		{nil, a, 0, topology.NoGroupTopology, "first member"},
		{&Group{ID: "g"}, a, 0, topology.NoGroupTopology, "first member"},
		{group(0, a), a, 0, topology.Same, "join normally"},
		{group(0, a), b, 0, topology.ChangedWithoutEpochBump, "topology.epoch 1"},
		{group(2, a), b, 1, topology.Older, "STALE_TOPOLOGY"},
		{group(1, a), b, 2, topology.Newer, "new application.id"},
	}
	for _, c := range cases {
		got := CompareTopology(c.g, c.local, c.epoch)
		want := topology.Compare(nil, c.local, c.epoch, topology.BeforeJoin)
		if c.g != nil && c.g.Topology != nil {
			want = topology.Compare(c.g.Topology, c.local, c.epoch, topology.BeforeJoin)
		}
		if got != want || got.Verdict != c.want || !strings.Contains(got.Action, c.says) {
			t.Errorf("%v: got %s %q", c.want, got.Verdict, got.Action)
		}
	}
	// A fallback of 0 is an epoch like any other (the one topology-upgrade passes): the next is 1.
	if NextEpoch(group(3, a), 0) != 4 || NextEpoch(nil, -1) != 0 || NextEpoch(nil, 4) != 5 || NextEpoch(&Group{ID: "g"}, 1) != 2 ||
		NextEpoch(nil, 0) != 1 || NextEpoch(&Group{ID: "g"}, 0) != 1 {
		t.Error("NextEpoch")
	}
}

// Describe retries with describeBackoff for as long as its context allows: the wait must stay at the
// maximum however many attempts were made (the former 50ms<<attempt turned negative at attempt 38
// and then retried without waiting, hammering the broker). The backoff is the member's: the
// defaults of retry.backoff.ms and retry.backoff.max.ms, jittered.
func TestDescribeBackoffNeverSpins(t *testing.T) {
	if describeBackoff.Min != config.DefaultRetryBackoff || describeBackoff.Max != config.DefaultRetryBackoffMax || describeBackoff.Rand == nil {
		t.Fatalf("describeBackoff = %+v; want the jittered defaults of retry.backoff.ms and retry.backoff.max.ms", describeBackoff)
	}
	for _, r := range []float64{0, 0.5, 0.999999} {
		b := describeBackoff
		b.Rand = func() float64 { return r }
		for _, n := range []int{0, 1, 5, 37, 38, 39, 40, 63, 64, 1000, math.MaxInt} {
			if d := b.Delay(n); d < 80*time.Millisecond || d > time.Second {
				t.Errorf("rand %v: attempt %d waits %v; want between 80ms and 1s", r, n, d)
			}
		}
		if d := b.Delay(40); d < 800*time.Millisecond {
			t.Errorf("rand %v: attempt 40 waits %v, want about the maximum 1s", r, d)
		}
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
