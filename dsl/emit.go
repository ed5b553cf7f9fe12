package dsl

import (
	"bytes"
	"cmp"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/streamhook"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// EmitStrategy is when a windowed aggregation hands its results on (Kafka Streams' EmitStrategy).
type EmitStrategy int

const (
	// OnWindowUpdate hands every update of a window on (Kafka Streams' EmitStrategy.onWindowUpdate,
	// the default), through the record cache when the table has one.
	OnWindowUpdate EmitStrategy = iota
	// OnWindowClose hands each window on once, with its final result, when it closes: when the
	// stream time passes its end plus the grace (Kafka Streams' EmitStrategy.onWindowClose).
	OnWindowClose
)

// checkEmit refuses an EmitStrategy that is neither.
func checkEmit(b *Builder, e EmitStrategy) {
	if e != OnWindowUpdate && e != OnWindowClose {
		b.fail("Emit: unknown emit strategy %d", e)
	}
}

// finalEmitter emits the windows of a windowed aggregation once each, when they close (Kafka
// Streams' AbstractKStreamTimeWindowAggregateProcessor under ON_WINDOW_CLOSE): after each record,
// at most once per __emit.interval.ms.kstreams.windowed.aggregation__ of wall-clock time and only
// when the close time moved, it reads the windows that closed since the last emit from the store by
// time (stream.WindowStore.FetchAll) and hands each on with its final aggregate and timestamp and
// the current record's headers, in order of window start and key. The last emitted close time is
// kept in the task's processor metadata under the store's name, so that the task's next owner, Go
// or Java, goes on from it instead of emitting the windows still in the store again.
type finalEmitter[K, VA any] struct {
	emitGate
	t       *KTable[windowed.Key[K], VA]
	ks      serde.Serde[K]
	windows stream.WindowStore[K, stamped[VA]]
	size    int64 // a window's end minus its start
	// bounds are the window starts to read for close time close after the last emitted one (-1:
	// none), inclusive, and whether to read them at all (the windows' kind's rules).
	bounds func(last, close int64) (lower, upper int64, fetch bool)
}

// emitGate is what window and session aggregations that emit final results share: each task's
// last emitted close time, kept in its processor metadata under the store's name, and the
// wall-clock throttle of their looks.
type emitGate struct {
	store string
	emits sync.Map // tasks.ID → *emitState (the processor is shared by the stream threads)
}

// emitState is one task's progress: the last window close time it emitted up to (-1: none), and
// when the wall clock next lets it look.
type emitState struct {
	last, next int64
}

// start starts c's task from the close time its processor metadata holds.
func (g *emitGate) start(c *stream.Context) {
	last, ok := streamhook.ProcessorMetadata(c, g.store)
	if !ok {
		last = -1
	}
	g.emits.Store(c.Task(), &emitState{last: last})
}

// due is c's task's state when it may look for what closed by closeTime: the throttle lets it (and
// is then set for the next look, whatever the answer), and the close time moved since the last
// emit (Kafka Streams' shouldEmitFinal).
func (g *emitGate) due(c *stream.Context, closeTime int64) (*emitState, bool) {
	p, ok := g.emits.Load(c.Task())
	if !ok {
		p, _ = g.emits.LoadOrStore(c.Task(), &emitState{last: -1})
	}
	st := p.(*emitState)
	now := c.CurrentSystemTime().UnixMilli()
	if now < st.next {
		return st, false
	}
	st.next = now + c.Config().Runtime.WindowedEmitEvery()
	return st, st.last < 0 || st.last < closeTime
}

// emitted records that c's task emitted what closed by closeTime.
func (g *emitGate) emitted(c *stream.Context, st *emitState, closeTime int64) {
	st.last = closeTime
	streamhook.SetProcessorMetadata(c, g.store, closeTime)
}

// newFinalEmitter makes the emitter of t, kept in store (read with windows live ms, its keys ks and
// its values vas once built).
func newFinalEmitter[K, VA any](b *Builder, n *node, t *KTable[windowed.Key[K], VA], store string, live, size int64,
	ks serde.Serde[K], vas serde.Serde[VA], bounds func(last, close int64) (lower, upper int64, fetch bool)) *finalEmitter[K, VA] {
	e := &finalEmitter[K, VA]{emitGate: emitGate{store: store}, t: t, ks: ks, size: size, bounds: bounds}
	if ks != nil && vas != nil {
		n.onBuild = append(n.onBuild, func() {
			e.windows = stream.Window(store, time.Duration(live)*time.Millisecond, ks, serde.Serde[stamped[VA]](newStampedSerde(store, vas)))
		})
	}
	return e
}

// emit emits what closed by closeTime (Kafka Streams' maybeForwardFinalResult).
func (e *finalEmitter[K, VA]) emit(c *stream.Context, md meta, closeTime int64) error {
	st, due := e.due(c, closeTime)
	if !due {
		return nil
	}
	lower, upper, fetch := e.bounds(st.last, closeTime)
	if upper < 0 || !fetch {
		return nil // no window closed ever, or none since the last emit
	}
	closed, err := e.closed(c, lower, upper)
	if err != nil {
		return err
	}
	headers := md.headersOf(c)
	for _, w := range closed {
		wk := windowed.Key[K]{Key: w.k, Window: windowed.Window{Start: w.start, End: w.start + e.size}}
		if err := e.t.out.emit(c, meta{at: w.v.at, headers: headers, ownHeaders: true}, wk, change[VA]{new: w.v.v, hasNew: true}); err != nil {
			return err
		}
	}
	e.emitted(c, st, closeTime)
	return nil
}

// closedWindow is a window to emit: its key (and the key's bytes, its order), start and aggregate.
type closedWindow[K, VA any] struct {
	k     K
	kb    []byte
	start int64
	v     stamped[VA]
}

// closed is the windows starting in [lower, upper] as Kafka Streams' caching time-ordered window
// store reads them (TimeOrderedCachingWindowStore.fetchAll): the store's, which hides the windows
// past its retention as of what was written to it, merged with the record cache's entries of the
// task, which win (a deleted one hides the store's) and are read whatever their age; in order of
// start, then key bytes.
func (e *finalEmitter[K, VA]) closed(c *stream.Context, lower, upper int64) ([]closedWindow[K, VA], error) {
	byKey := map[string]closedWindow[K, VA]{}
	var kerr error
	err := e.windows.FetchAll(c, lower, upper, func(k K, start int64, v stamped[VA]) bool {
		kb, err := e.ks.Encode(k)
		if err != nil {
			kerr = err
			return false
		}
		byKey[string(windowed.AppendStoreKey(nil, kb, start, 0))] = closedWindow[K, VA]{k: k, kb: kb, start: start, v: v}
		return true
	})
	if err = errors.Join(err, kerr); err != nil {
		return nil, err
	}
	if e.t.cached() {
		for key, ent := range e.t.cache.of(c).m {
			start := ent.k.Window.Start
			if start < lower || start > upper {
				continue
			}
			if !ent.has {
				delete(byKey, key)
				continue
			}
			kb, _, _, err := windowed.SplitStoreKey([]byte(key))
			if err != nil {
				return nil, err
			}
			byKey[key] = closedWindow[K, VA]{k: ent.k.Key, kb: kb, start: start, v: stamped[VA]{v: ent.v, at: ent.at}}
		}
	}
	out := slices.SortedFunc(maps.Values(byKey), func(a, b closedWindow[K, VA]) int {
		return cmp.Or(cmp.Compare(a.start, b.start), bytes.Compare(a.kb, b.kb))
	})
	return out, nil
}

// sessionEmitter emits the sessions of a session aggregation once each, when they close (Kafka
// Streams' KStreamSessionWindowAggregate under ON_WINDOW_CLOSE): after each record with a key, when
// the gate lets it, the sessions that end in [the last emitted close time (0 at first), the close
// time - 1] are read from the store by end (stream.SessionStore.FindSessionsEnding: the store is
// time-ordered, so a session is read until its interval of ends expires) and each is handed on with
// its aggregate, its end as its timestamp and the current record's headers.
type sessionEmitter[K, VA any] struct {
	emitGate
	t        *KTable[windowed.Key[K], VA]
	sessions stream.SessionStore[K, VA]
}

// emit emits what closed by closeTime (Kafka Streams' maybeForwardFinalResult of sessions).
func (e *sessionEmitter[K, VA]) emit(c *stream.Context, md meta, closeTime int64) error {
	st, due := e.due(c, closeTime)
	upper := closeTime - 1 // a session's end is in it
	if !due || upper < 0 {
		return nil
	}
	// From the last close time (its sessions were after the last range), which is before this
	// one when due: the range is never empty (Kafka Streams' shouldRangeFetch always holds here).
	lower := max(0, st.last)
	headers := md.headersOf(c)
	var ferr error
	err := e.sessions.FindSessionsEnding(c, lower, upper, func(k K, w windowed.Window, v VA) bool {
		ferr = e.t.out.emit(c, meta{at: time.UnixMilli(w.End), headers: headers, ownHeaders: true},
			windowed.Key[K]{Key: k, Window: w}, change[VA]{new: v, hasNew: true})
		return ferr == nil
	})
	if err = errors.Join(err, ferr); err != nil {
		return err
	}
	e.emitted(c, st, closeTime)
	return nil
}
