package dsl

import (
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
)

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
// name (Repartitioned.as) and a fixed partition count (0: as many as the input has).
type Repartitioned[K, V any] struct {
	Key        serde.Serde[K]
	Value      serde.Serde[V]
	Name       string
	Partitions int32
}

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
