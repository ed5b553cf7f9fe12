package dsl

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/serde"
)

// A StreamPartitioner chooses the partitions of topic a record goes to (Kafka Streams'
// StreamPartitioner.partitions, its form with headers): some of the numPartitions the topic has,
// which the runtime asks the cluster for (as Kafka Streams asks its producer). ok false leaves the
// record to Kafka's default partitioning, by murmur2 of its key (Optional.empty()); ok with no
// partitions drops it, counted as a dropped record (an empty set); several partitions write it to
// each, in their order, once each (a multicast to a set). key and value are K's and V's zero values
// for a record without one (Java's null). A partition outside [0, numPartitions) is a processing
// error.
type StreamPartitioner[K, V any] func(topic string, key K, value V, headers []kgo.RecordHeader, numPartitions int) (partitions []int32, ok bool)

// Consumed is how a source topic is read (Kafka Streams' Consumed): its serdes, and the source
// node's name (Consumed.as); empty fields take the defaults.
type Consumed[K, V any] struct {
	Key   serde.Serde[K]
	Value serde.Serde[V]
	Name  string
}

// Produced is how records are written to a topic (Kafka Streams' Produced): serdes and the sink
// node's name (Produced.as).
type Produced[K, V any] struct {
	Key   serde.Serde[K]
	Value serde.Serde[V]
	Name  string
	// Partitioner places each record (Produced.streamPartitioner); nil: by its key, a windowed key
	// by its inner key (Kafka Streams' WindowedStreamPartitioner).
	Partitioner StreamPartitioner[K, V]
}

// Grouped is how a stream is grouped (Kafka Streams' Grouped): the serdes of the repartition topic
// and its name (Grouped.as), which names the repartition topic <application.id>-<Name>-repartition
// and, for GroupBy, the key-selecting node.
type Grouped[K, V any] struct {
	Key   serde.Serde[K]
	Value serde.Serde[V]
	Name  string
}

// Materialized is how an aggregation's store is kept (Kafka Streams' Materialized): its name
// (Materialized.as, which names the changelog <application.id>-<Name>-changelog) and serdes. A
// store without a name gets a generated one, as in Kafka Streams.
type Materialized[K, V any] struct {
	Name  string
	Key   serde.Serde[K]
	Value serde.Serde[V]
	// CachingDisabled keeps the store out of the record cache (Materialized.withCachingDisabled):
	// every update is written to it, its changelog and downstream at once.
	CachingDisabled bool
	// Retention is how long a window store keeps a window after its start, in stream time
	// (Materialized.withRetention): at least the windows' size plus their grace period, which is
	// the default. Ignored for a key-value store, as Kafka Streams ignores it.
	Retention time.Duration
	// HistoryRetention, when set, keeps a table read from a topic (Table, ToTable) in a versioned
	// store named Name that keeps every version of each key for this long (Kafka Streams'
	// Materialized.as(Stores.persistentVersionedKeyValueStore(Name, HistoryRetention))): a stream
	// joined with the table finds the value valid at each record's time, and a Joined.GracePeriod
	// can hold records back. Such a table is joined with streams or turned into a stream only.
	HistoryRetention time.Duration
	// Versioned keeps the table in a versioned store also when HistoryRetention is 0: the latest
	// value of each key only, no older version (Kafka Streams'
	// Stores.persistentVersionedKeyValueStore(Name, Duration.ZERO)). A HistoryRetention above 0
	// implies it.
	Versioned bool
}

// versioned says whether m keeps its table in a versioned store, and for how long it keeps the
// versions that are no longer the latest.
func (m Materialized[K, V]) versioned() (bool, time.Duration) {
	return m.Versioned || m.HistoryRetention != 0, m.HistoryRetention
}

// Repartitioned is how Repartition writes its topic (Kafka Streams' Repartitioned): serdes, its
// name (Repartitioned.as), a fixed partition count (0: as many as the input has) and a
// partitioner (Repartitioned.streamPartitioner; nil: by the whole key, a windowed one too, as in
// Kafka Streams).
type Repartitioned[K, V any] struct {
	Key         serde.Serde[K]
	Value       serde.Serde[V]
	Name        string
	Partitions  int32
	Partitioner StreamPartitioner[K, V]
}

// TableJoined is how a foreign-key join places the records of its internal topics, and names its
// nodes (Kafka Streams' TableJoined), for tables whose topics a custom partitioner wrote: Kafka
// Streams' foreign-key join assumes each table is partitioned as Kafka's default partitioner
// places its keys, unless told otherwise. Given to JoinForeignKey and LeftJoinForeignKey as a
// TableOption.
type TableJoined[K, KO any] struct {
	// Name names the join's nodes, internal topics and store as Named does (TableJoined.as).
	Name string
	// Partitioner is how the left table's topic is partitioned: it places each answer on the
	// partition of the row that asked, given the row's key (TableJoined.partitioner); nil: the
	// partition the row was read from.
	Partitioner StreamPartitioner[K, struct{}]
	// OtherPartitioner is how the other table's topic is partitioned: it places each subscription
	// with the row of the other table it asks for, given that row's key
	// (TableJoined.otherPartitioner); nil: by the key, as Kafka's default partitioner.
	//
	// Either partitioner must choose one partition or leave the choice (ok false); a foreign-key
	// join cannot drop or copy its records, and any other choice is a processing error, as in
	// Kafka Streams.
	OtherPartitioner StreamPartitioner[KO, struct{}]
}

func (TableJoined[K, KO]) tableOption() {}
func (TableJoined[K, KO]) tableJoined() {}

// Named names an operation's processor node (Kafka Streams' Named.as); empty: a generated name.
type Named string

// A TableOption is Named or a Materialized with the table's types, given to a table operation
// (Kafka Streams' overloads with Named and Materialized).
type TableOption interface{ tableOption() }

func (Named) tableOption()              {}
func (Materialized[K, V]) tableOption() {}

// tableOptions reads opts for an operation whose result has types K and V; a Materialized of other
// types is a program error.
func tableOptions[K, V any](b *Builder, op string, opts []TableOption) (named Named, m Materialized[K, V], materialized bool) {
	for _, o := range opts {
		switch o := o.(type) {
		case Named:
			named = o
		case Materialized[K, V]:
			m, materialized = o, true
			if on, _ := o.versioned(); on && op != "ToTable" {
				b.fail("%s: a versioned store (Materialized.HistoryRetention) keeps a table read from a topic (Table, ToTable) only", op)
			}
		default:
			b.fail("%s: the option %T is not Named or Materialized[%s, %s]", op, o, typeName[K](), typeName[V]())
		}
	}
	return named, m, materialized
}
