package consume

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Partitioner returns a kgo.Partitioner for a member's producer: a record for a changelog topic of
// topo goes to the partition set on the record (its task's partition), every other record is
// partitioned by its key as Kafka's default partitioner does (murmur2), so Go and Java members
// agree on where a key goes. Use it with kgo.RecordPartitioner.
func Partitioner(topo *topology.Topology) kgo.Partitioner {
	p := partitioner{changelogs: make(map[string]bool)}
	if r, err := tasks.NewRouter(topo); err == nil {
		for _, t := range r.ChangelogTopics() {
			p.changelogs[t] = true
		}
	}
	return p
}

type partitioner struct{ changelogs map[string]bool }

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.changelogs[topic] {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return kgo.StickyKeyPartitioner(nil).ForTopic(topic)
}
