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

// partitionKey is the context key of WithPartitionKey.
type partitionKey struct{}

// WithPartitionKey returns ctx carrying key: a record produced with it as its context (kgo.Record's
// Context) is partitioned by murmur2 of key rather than of its own key, as Kafka Streams'
// WindowedStreamPartitioner partitions a windowed key by its inner key alone.
func WithPartitionKey(ctx context.Context, key []byte) context.Context {
	if key == nil {
		key = []byte{} // an empty key is a key
	}
	return context.WithValue(ctx, partitionKey{}, key)
}

// fixedPartition is the context key of WithPartition.
type fixedPartition struct{}

// WithPartition returns ctx carrying partition: a record produced with it as its context goes to
// that partition of its topic, as a Kafka Streams StreamPartitioner that names one places it (the
// foreign-key join's responses go back to the partition their subscription came from).
func WithPartition(ctx context.Context, partition int32) context.Context {
	return context.WithValue(ctx, fixedPartition{}, partition)
}

// keyed is the default partitioner of a topic with partition keys (WithPartitionKey) heeded. It
// passes OnNewBatch on, which keeps the default's stickiness for records without a key.
type keyed struct{ kgo.TopicPartitioner }

// keyOf is the partition key of r, if its context carries one.
func keyOf(r *kgo.Record) ([]byte, bool) {
	if r.Context == nil {
		return nil, false
	}
	k, ok := r.Context.Value(partitionKey{}).([]byte)
	return k, ok
}

// partitionOf is the partition r's context fixes, if it fixes one.
func partitionOf(r *kgo.Record) (int32, bool) {
	if r.Context == nil {
		return 0, false
	}
	p, ok := r.Context.Value(fixedPartition{}).(int32)
	return p, ok
}

func (k keyed) RequiresConsistency(r *kgo.Record) bool {
	if _, ok := partitionOf(r); ok {
		return true
	}
	if _, ok := keyOf(r); ok {
		return true
	}
	return k.TopicPartitioner.RequiresConsistency(r)
}

func (k keyed) Partition(r *kgo.Record, n int) int {
	if p, ok := partitionOf(r); ok {
		return int(p)
	}
	if pk, ok := keyOf(r); ok {
		return k.TopicPartitioner.Partition(&kgo.Record{Key: pk}, n)
	}
	return k.TopicPartitioner.Partition(r, n)
}

func (k keyed) OnNewBatch() {
	if o, ok := k.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}
