// Package ctxhook lets the DSL's record cache (package dsl) give a stream.Context the record
// context of a cached update while it writes it, as Kafka Streams' cache flush sets the entry's
// record context: what the store's changelog and the records sent carry (timestamp, headers). It is
// not an application's API: package stream sets As.
package ctxhook

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// As gives c (a *stream.Context) the timestamp and headers of a cached update, for the writes made
// through it until restore is called.
var As func(c any, ts time.Time, headers []kgo.RecordHeader) (restore func())
