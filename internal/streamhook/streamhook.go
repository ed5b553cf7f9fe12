// Package streamhook lets the library's own packages reach what the stream runtime (package stream)
// does not offer applications: the DSL's record cache gives a stream.Context the record context of
// a cached update while it writes it (As), as Kafka Streams' cache flush sets the entry's record
// context; the test driver (package streamtest) gives an App its clock (SetClock), to advance wall-
// clock time as Kafka Streams' TopologyTestDriver does. Package stream sets both.
package streamhook

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// As gives c (a *stream.Context) the timestamp and headers of a cached update, for the writes made
// through it until restore is called.
var As func(c any, ts time.Time, headers []kgo.RecordHeader) (restore func())

// SetClock makes now the wall clock of app (a *stream.App, before its Run) and of its threads.
var SetClock func(app any, now func() time.Time)
