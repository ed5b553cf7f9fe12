package topology_test

import (
	"fmt"

	"github.com/streamsgroup/streamsgroup/topology"
)

// Declare the topology Kafka Streams builds for
// stream("words").groupBy(..., Grouped.as("by-word")).count(Materialized.as("counts")).
func ExampleNew() {
	n := topology.Names{AppID: "wordcount"}
	topo, err := topology.New(
		topology.Subtopology{ID: "0", SourceTopics: []string{"words"},
			RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
		topology.Subtopology{ID: "1",
			RepartitionSourceTopics: []topology.TopicInfo{n.Repartition("by-word", 0)},
			StateChangelogTopics:    []topology.TopicInfo{n.KeyValueChangelog("counts")}},
	)
	if err != nil {
		panic(err)
	}
	fmt.Println("topology ID:", topo.ID())
	fmt.Println("subtopology 1 reads:", topo.InputTopics("1"))
	// Output:
	// topology ID: a69798ca033be4e9
	// subtopology 1 reads: [wordcount-by-word-repartition]
}
