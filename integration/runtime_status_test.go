package integration

import (
	"context"
	"strings"
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

// TestRuntimeStopsOnAChangelogOfTheWrongSize: a changelog that exists with fewer partitions than
// the input is the same status; the error names the changelog (not the words of the broker's
// detail) and gives the detail.
func TestRuntimeStopsOnAChangelogOfTheWrongSize(t *testing.T) {
	s := newRTSetup(t, 2)
	s.b.CreateTopic(t, s.changelog, 1)
	a := s.start(t, "a", rtOpts{})
	se := errorAs[*stream.StatusError](t, a.wait(t, time.Minute))
	if se.Kind != membership.EventIncorrectlyPartitionedTopics || len(se.Topics) != 1 || se.Topics[0] != s.changelog ||
		!strings.Contains(se.Error(), "expected 2, found 1") {
		t.Fatalf("Run returned %v (topics %v); want the changelog %s named as incorrectly partitioned, with the broker's counts",
			se, se.Topics, s.changelog)
	}
}

// TestRuntimeStopsWhenItsSourceTopicIsDeleted (Kafka Streams' HandlingSourceTopicDeletionIntegrationTest):
// the input topic of a running app is deleted. The broker reports the topic missing in its
// heartbeat answers, and the runtime stops as Kafka Streams does: Run returns a *stream.StatusError
// naming the topic, the state is ERROR. It does not hang, and it does not go on as if nothing
// happened.
func TestRuntimeStopsWhenItsSourceTopicIsDeleted(t *testing.T) {
	s := newRTSetup(t, 2)
	a := s.start(t, "a", rtOpts{})
	a.runningWith(t, s.all)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := s.b.Admin(t).DeleteTopics(ctx, s.input)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resp[s.input]; !ok || r.Err != nil {
		t.Fatalf("deleting %s: %+v", s.input, resp)
	}
	err = a.wait(t, 2*time.Minute)
	se := errorAs[*stream.StatusError](t, err)
	if se.Kind != membership.EventMissingSourceTopicsTimeout || len(se.Topics) != 1 || se.Topics[0] != s.input {
		t.Fatalf("Run returned %+v after its source topic was deleted; want the missing source topic %s", se, s.input)
	}
	if st := a.app.State(); st != stream.Error {
		t.Fatalf("state %s after the source topic was deleted; want ERROR", st)
	}
}
