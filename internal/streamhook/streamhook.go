// Package streamhook lets the library's own packages reach what the stream runtime (package stream)
// does not offer applications: the DSL's record cache gives a stream.Context the record context of
// a cached update while it writes it (As), as Kafka Streams' cache flush sets the entry's record
// context; the test driver (package streamtest) gives an App its clock (SetClock), to advance wall-
// clock time as Kafka Streams' TopologyTestDriver does, and waits on its global stores
// (GlobalApplied). Package stream sets them.
package streamhook

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Origin is where a cached update's record came from: its topic, partition and offset (ok false
// when it came from none, as in a punctuation).
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
	OK        bool
}

// As gives c (a *stream.Context) the timestamp, headers and origin of a cached update, for the
// writes made through it until restore is called.
var As func(c any, ts time.Time, headers []kgo.RecordHeader, origin Origin) (restore func())

// SetClock makes now the wall clock of app (a *stream.App, before its Run) and of its threads.
var SetClock func(app any, now func() time.Time)

// GlobalApplied reports, for app (a *stream.App), the next offset of each partition of its global
// stores' topics its global stores have applied ("topic/partition" keys; empty before they were
// restored): the test driver waits on it, as Kafka Streams' TopologyTestDriver applies a record of
// a global topic before the next record is piped.
var GlobalApplied func(app any) map[string]int64

// Restoring reports whether c (a *stream.Context) is a global store's processor reading its topic
// up to its end before the application starts: the DSL's global tables then copy each record as it
// is, as Kafka Streams restores them without their processor.
var Restoring func(c any) bool

// ProcessorMetadata reads, and SetProcessorMetadata sets, a value of the processor metadata of c's
// task (c a *stream.Context): Kafka Streams' ProcessorMetadata, committed with the task's offsets,
// where a windowed aggregation that emits final results keeps its last emitted window close time.
var (
	ProcessorMetadata    func(c any, key string) (int64, bool)
	SetProcessorMetadata func(c any, key string, v int64)
)
