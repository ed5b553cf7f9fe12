package dsl

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// windowQuery is how a windowed aggregation's table is queried: the serde of its inner keys (a
// serde.Serde of the aggregation's key type) and its windows' size (0: sessions, whose stores keep
// plain values; time and sliding windows keep them with their timestamp).
type windowQuery struct {
	ks   any
	size int64
}

// ErrNotWindowed is a query of windows of a table that is not a windowed aggregation's, or keeps no
// store.
var ErrNotWindowed = errors.New("dsl: not a windowed aggregation's table")

// QueryWindows calls fn for key's windows of the windowed aggregation t whose start is in [from,
// to], from the local stores of app, in order of their start, until fn returns false (Kafka Streams'
// interactive query ReadOnlyWindowStore.fetch(key, timeFrom, timeTo) of a windowed aggregation's
// store): what the task holding the key wrote to its store (under exactly-once, what it last
// committed; not what the record cache holds unflushed). For a session aggregation's table
// it visits key's sessions that start in [from, to], in order of their end (Kafka Streams'
// ReadOnlySessionStore.fetch(key), bounded). Safe on any goroutine; see stream.App.Store for where
// keys live.
func QueryWindows[K, V any](app *stream.App, t *KTable[windowed.Key[K], V], key K, from, to time.Time, fn func(w windowed.Window, v V) bool) error {
	if t == nil || t.windows == nil || t.store == "" {
		return ErrNotWindowed
	}
	ks, ok := t.windows.ks.(serde.Serde[K])
	if !ok || t.vs == nil {
		return fmt.Errorf("%w: the table's store %q has no key or value serde", ErrNotWindowed, t.store)
	}
	lo, hi := from.UnixMilli(), to.UnixMilli()
	if t.windows.size == 0 {
		return stream.Session(t.store, 0, ks, t.vs).Query(app, key, func(w windowed.Window, v V) bool {
			if w.Start < lo || w.Start > hi {
				return true
			}
			return fn(w, v)
		})
	}
	size := t.windows.size
	vs := serde.Serde[stamped[V]](newStampedSerde(t.store, t.vs))
	return stream.Window(t.store, 0, ks, vs).Query(app, key, lo, hi, func(start int64, v stamped[V]) bool {
		end := start + size
		if start > math.MaxInt64-size {
			end = math.MaxInt64
		}
		return fn(windowed.Window{Start: start, End: end}, v.v)
	})
}
