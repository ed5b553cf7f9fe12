package tasks

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Partitioner returns the kgo.Partitioner for a member's producer (kgo.RecordPartitioner): a
// record for a changelog topic of the topology goes to the partition set on the record (its task's
// partition, which the task's store writes with); every other record is partitioned by its key as
// Kafka's default partitioner does (murmur2), so that Go and Java members agree on where a key
// goes — or by the partition key its context carries (WithPartitionKey), as Kafka Streams
// partitions a windowed key by its inner key.
func (r *Router) Partitioner() kgo.Partitioner { return partitioner{r} }

type partitioner struct{ r *Router }

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if u, ok := p.r.byTopic[topic]; ok && u.kind == Changelog {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return keyed{kgo.StickyKeyPartitioner(nil).ForTopic(topic)}
}

// placementKey is the context key of WithPartitionKey and WithPartition: one key, so that the
// partitioner looks the record's context up once (a lookup walks the whole context chain).
type placementKey struct{}

// placement is where a record's context places it: by a partition key, or at a fixed partition.
type placement struct {
	key       []byte
	partition int32
	fixed     bool
}

// WithPartitionKey returns ctx carrying key: a record produced with it as its context (kgo.Record's
// Context) is partitioned by murmur2 of key rather than of its own key, as Kafka Streams'
// WindowedStreamPartitioner partitions a windowed key by its inner key alone.
func WithPartitionKey(ctx context.Context, key []byte) context.Context {
	if key == nil {
		key = []byte{} // an empty key is a key
	}
	return context.WithValue(ctx, placementKey{}, placement{key: key})
}

// WithPartition returns ctx carrying partition: a record produced with it as its context goes to
// that partition of its topic, as a Kafka Streams StreamPartitioner that names one places it (the
// foreign-key join's responses go back to the partition their subscription came from).
func WithPartition(ctx context.Context, partition int32) context.Context {
	return context.WithValue(ctx, placementKey{}, placement{partition: partition, fixed: true})
}

// keyed is the default partitioner of a topic with partition keys (WithPartitionKey) and fixed
// partitions (WithPartition) heeded. It passes OnNewBatch on, which keeps the default's stickiness
// for records without a key.
type keyed struct{ kgo.TopicPartitioner }

// placementOf is where r's context places it, if it does.
func placementOf(r *kgo.Record) (placement, bool) {
	if r.Context == nil {
		return placement{}, false
	}
	p, ok := r.Context.Value(placementKey{}).(placement)
	return p, ok
}

func (k keyed) RequiresConsistency(r *kgo.Record) bool {
	if _, ok := placementOf(r); ok {
		return true
	}
	return k.TopicPartitioner.RequiresConsistency(r)
}

func (k keyed) Partition(r *kgo.Record, n int) int {
	if p, ok := placementOf(r); ok {
		if p.fixed {
			return int(p.partition)
		}
		return k.TopicPartitioner.Partition(&kgo.Record{Key: p.key}, n)
	}
	return k.TopicPartitioner.Partition(r, n)
}

func (k keyed) OnNewBatch() {
	if o, ok := k.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}
