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

// placement is where a record's context places it: by a partition key, by the first bytes of its
// own key, or at a fixed partition.
type placement struct {
	key       []byte
	prefix    int // byPrefix: how many bytes of the record's key
	byPrefix  bool
	partition int32
	fixed     bool
}

// placed is a context carrying a placement: one allocation per record sent, where
// context.WithValue would take two (the context and the boxed placement), on the path of every
// windowed record a DSL sink writes.
type placed struct {
	context.Context
	p placement
}

// Value answers placementKey with the placement (a pointer: no allocation), and every other key
// from the context placed wraps.
func (c *placed) Value(key any) any {
	if _, ok := key.(placementKey); ok {
		return &c.p
	}
	return c.Context.Value(key)
}

// WithPartitionKey returns ctx carrying key: a record produced with it as its context (kgo.Record's
// Context) is partitioned by murmur2 of key rather than of its own key, as Kafka Streams'
// WindowedStreamPartitioner partitions a windowed key by its inner key alone.
func WithPartitionKey(ctx context.Context, key []byte) context.Context {
	if key == nil {
		key = []byte{} // an empty key is a key
	}
	return &placed{ctx, placement{key: key}}
}

// WithKeyPrefix returns ctx carrying n: a record produced with it as its context is partitioned by
// murmur2 of the first n bytes of its own key (all of it if shorter), as WithPartitionKey with
// those bytes would place it. A windowed key leads with its inner key, so one such context per
// length serves every record of a windowed sink, where WithPartitionKey takes one per record.
func WithKeyPrefix(ctx context.Context, n int) context.Context {
	return &placed{ctx, placement{prefix: max(n, 0), byPrefix: true}}
}

// WithPartition returns ctx carrying partition: a record produced with it as its context goes to
// that partition of its topic, as a Kafka Streams StreamPartitioner that names one places it (the
// foreign-key join's responses go back to the partition their subscription came from).
func WithPartition(ctx context.Context, partition int32) context.Context {
	return &placed{ctx, placement{partition: partition, fixed: true}}
}

// keyed is the default partitioner of a topic with partition keys (WithPartitionKey) and fixed
// partitions (WithPartition) heeded. It passes OnNewBatch on, which keeps the default's stickiness
// for records without a key.
type keyed struct{ kgo.TopicPartitioner }

// placementOf is where r's context places it, if it does.
func placementOf(r *kgo.Record) (*placement, bool) {
	if r.Context == nil {
		return nil, false
	}
	if c, ok := r.Context.(*placed); ok {
		return &c.p, true // the usual case, without the walk of Value
	}
	p, ok := r.Context.Value(placementKey{}).(*placement)
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
		switch {
		case p.fixed:
			return int(p.partition)
		case p.byPrefix:
			return KeyPartition(r.Key[:min(p.prefix, len(r.Key))], n)
		}
		return KeyPartition(p.key, n)
	}
	return k.TopicPartitioner.Partition(r, n)
}

func (k keyed) OnNewBatch() {
	if o, ok := k.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// KeyPartition is the partition of n that Kafka's default partitioner gives a record with key:
// murmur2 of the key, made positive, modulo n (Java's Utils.toPositive(Utils.murmur2(key)) % n).
// It is what kgo's default partitioner computes for a keyed record, without a record to hand it.
func KeyPartition(key []byte, n int) int {
	return int(murmur2(key)&0x7fffffff) % n
}

// murmur2 is the 32-bit MurmurHash2 with Kafka's seed, as Kafka's default partitioner hashes keys.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
