package tasks

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/topology"
)

func TestPartitionerSendsChangelogRecordsToTheirTask(t *testing.T) {
	r, err := NewRouter(topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"in"},
		StateChangelogTopics: []topology.TopicInfo{{Name: "app-store-changelog"}}}))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Partitioner()
	if got := p.ForTopic("app-store-changelog").Partition(&kgo.Record{Topic: "app-store-changelog", Partition: 5, Key: []byte("word")}, 8); got != 5 {
		t.Fatalf("changelog record went to %d, want its task's partition 5", got)
	}
	// Kafka 4.4's Utils.toPositive(Utils.murmur2(key)) % 8, computed with its kafka-clients jar.
	for key, want := range map[string]int{"word": 3, "k": 0, "customer-42": 1} {
		for _, topic := range []string{"out", "in"} {
			rec := &kgo.Record{Topic: topic, Key: []byte(key), Partition: 7}
			if got := p.ForTopic(topic).Partition(rec, 8); got != want {
				t.Errorf("key %q to %s went to partition %d, want %d as Kafka's default partitioner", key, topic, got, want)
			}
		}
	}
}
