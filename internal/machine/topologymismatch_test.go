package machine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/topology"
)

// A refused member's TopologyError names what differs from the group's topology (issue 10 §4): the
// machine describes the group and puts topology.Diff's lines into the mismatch.
func TestRefusedTopologyNamesTheDifferences(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.mustSend()
	msg := "Topology updates are not supported yet."
	r := resp(0, nil)
	r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, &msg
	h.record(h.m.Step(h.now, HeartbeatDone{Seq: h.lastSeq(), Response: r}))

	// The group runs testTopology with another source topic in subtopology "1" and a changelog.
	group := kmsg.NewStreamsGroupDescribeResponseGroup()
	group.Topology = &kmsg.StreamsGroupDescribeResponseGroupTopology{Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"t0"}, RepartitionSinkTopics: []string{"rep"}},
		{SubtopologyID: "1", SourceTopics: []string{"t1-old"}, RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "rep", NumPartitions: 4, ReplicationFactor: -1}},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-s-changelog", NumPartitions: 4, ReplicationFactor: -1,
				Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}},
	}}
	h.step(Described{Group: &group})

	var te *TopologyError
	if len(h.stopped) != 1 || !errors.As(h.stopped[0].Err, &te) {
		t.Fatalf("stopped %+v", h.stopped)
	}
	want := []string{
		`subtopology "1": source topic "t1" is only in this topology`,
		`subtopology "1": source topic "t1-old" is only in the group's topology`,
		`subtopology "1": changelog topic "app-s-changelog" is only in the group's topology`,
	}
	if !slices.Equal(te.Mismatch.Differences, want) {
		t.Fatalf("differences %q, want %q", te.Mismatch.Differences, want)
	}
	if te.Mismatch.Verdict != topology.ChangedWithoutEpochBump {
		t.Fatalf("verdict %v", te.Mismatch.Verdict)
	}
	if s := te.Error(); !strings.Contains(s, "; differences: "+strings.Join(want, "; ")) {
		t.Fatalf("the error does not list the differences: %s", s)
	}
}

// The message repeats at most maxDifferencesShown differences and counts the rest.
func TestMismatchStringCapsDifferences(t *testing.T) {
	m := TopologyMismatch{Comparison: topology.Comparison{Verdict: topology.ChangedWithoutEpochBump, Action: "act"}}
	for i := range 25 {
		m.Differences = append(m.Differences, strings.Repeat("d", i+1))
	}
	s := m.String()
	if !strings.HasSuffix(s, "; and 15 more differences") || strings.Contains(s, strings.Repeat("d", 11)) {
		t.Fatalf("String = %q", s)
	}
	if m2 := (TopologyMismatch{Comparison: topology.Comparison{Action: "act"}}); strings.Contains(m2.String(), "differences") {
		t.Fatalf("no differences, yet %q", m2.String())
	}
}
