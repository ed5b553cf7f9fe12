package integration

import (
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// TestRuntimeStopsOnMissingSourceTopics: as Kafka Streams fails with a MissingSourceTopicException
// once its source topics have been missing for two heartbeat intervals, Run returns a
// *stream.StatusError naming them (the member measures the two intervals; the bound here only keeps
// a broken runtime from hanging the test).
func TestRuntimeStopsOnMissingSourceTopics(t *testing.T) {
	s := newRTSetup(t, 2)
	missing := Name(t, "absent")
	s.topo = topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{missing},
		StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: s.group}.KeyValueChangelog(rtCounts.Name())}})
	a := s.start(t, "a", rtOpts{})
	err := a.wait(t, time.Minute)
	se := errorAs[*stream.StatusError](t, err)
	if se.Kind != membership.EventMissingSourceTopicsTimeout || len(se.Topics) != 1 || se.Topics[0] != missing {
		t.Fatalf("Run returned %+v; want the missing source topic %s", se, missing)
	}
	if st := a.app.State(); st != stream.Error {
		t.Fatalf("state %s after a missing source topic; want ERROR", st)
	}
}

// TestRuntimeStopsOnIncorrectlyPartitionedTopics: copartitioned source topics of different partition
// counts make Kafka Streams throw a TopologyException; Run returns a *stream.StatusError naming them.
func TestRuntimeStopsOnIncorrectlyPartitionedTopics(t *testing.T) {
	s := newRTSetup(t, 2)
	other := Name(t, "other")
	s.b.CreateTopic(t, other, 3)
	s.topo = topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{s.input, other},
		CopartitionGroups: [][]string{{s.input, other}}})
	a := s.start(t, "a", rtOpts{proc: stream.Typed(serde.String, serde.String, func(*stream.Context, string, string) error { return nil })})
	err := a.wait(t, time.Minute)
	se := errorAs[*stream.StatusError](t, err)
	if se.Kind != membership.EventIncorrectlyPartitionedTopics {
		t.Fatalf("Run returned %+v; want incorrectly partitioned topics", se)
	}
}
