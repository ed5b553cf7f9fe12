package tasks

import "github.com/twmb/franz-go/pkg/kgo"

// Partitioner returns the kgo.Partitioner for a member's producer (kgo.RecordPartitioner): a
// record for a changelog topic of the topology goes to the partition set on the record (its task's
// partition, which the task's store writes with); every other record is partitioned by its key as
// Kafka's default partitioner does (murmur2), so that Go and Java members agree on where a key
// goes.
func (r *Router) Partitioner() kgo.Partitioner { return partitioner{r} }

type partitioner struct{ r *Router }

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if u, ok := p.r.byTopic[topic]; ok && u.kind == Changelog {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return kgo.StickyKeyPartitioner(nil).ForTopic(topic)
}
