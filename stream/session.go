package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// Session stores. A session store keeps values by key and session (Kafka Streams' SessionStore):
// its keys, in the store and its changelog, are Kafka Streams' session keys (the key, the session's
// end, then its start; windowed.AppendSessionKey), so a Go and a Java member restore each other's.
// It is a window store underneath (window.go) whose time is the session's end: segments by end,
// kept while the end is after the newest end written minus the retention.

// ErrSessionKey is a session store key that is not one: shorter than a session's end and start,
// a session that ends before it starts, or one before the epoch.
var ErrSessionKey = errors.New("stream: not a session store key (the key, an 8-byte session end, an 8-byte session start)")

// endOf is the end of session store key k.
func endOf(k []byte) (int64, error) {
	_, w, err := windowed.SplitSessionKey(k)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrSessionKey, err)
	}
	if w.Start < 0 {
		return 0, fmt.Errorf("%w: the session starts at %d", ErrSessionKey, w.Start)
	}
	return w.End, nil
}

// findSessions calls fn for the live sessions of the key with bytes k that end at or after
// earliestEnd and start at or before latestStart, in order of their end, then start (Kafka
// Streams' findSessions), with the engine's view merged with the open transaction's writes.
func (s *kvStore) findSessions(k []byte, earliestEnd, latestStart int64, fn func(w windowed.Window, value []byte) bool) error {
	return s.findSessionsAs(false, k, earliestEnd, latestStart, fn)
}

// findSessionsAs is findSessions as a processor reads (query false) or as a query does (what was
// committed, as of the last commit).
// sessionKeysEnd follows a key's bytes in the bound above all of its sessions' keys (the key, 8
// bytes of end, 8 of start; the 17th byte puts it above a longer key's too).
var sessionKeysEnd = bytes.Repeat([]byte{0xff}, 17)

func (s *kvStore) findSessionsAs(query bool, k []byte, earliestEnd, latestStart int64, fn func(w windowed.Window, value []byte) bool) error {
	observed := s.observedAs(query)
	from := max(earliestEnd, 0, observed-s.win.retention+1)
	last := lastSegment(observed, s.win.span, math.MaxInt64)
	var bounds []byte // one buffer for the bounds of every segment: the engine keeps neither
	for seg := from / s.win.span; seg <= last; seg++ {
		next, ok, err := s.segmentFrom(query, seg, last)
		if err != nil || !ok || next > last {
			return err
		}
		seg = next
		// k's sessions in the segment, and those of longer keys with k as their prefix, which the
		// loop skips: every key that starts with the segment and k sorts below k and 17 bytes of 0xff.
		if bounds == nil {
			bounds = make([]byte, 0, segmentKeyLen+len(k)+len(sessionKeysEnd))
		}
		bounds = appendSegmentKey(bounds[:0], k, seg)
		n := len(bounds)
		bounds = append(bounds, sessionKeysEnd...)
		it, err := s.rangeAs(query, bounds[:n:n], bounds)
		if err != nil {
			return err
		}
		for it.Next() {
			key, w, err := windowed.SplitSessionKey(it.Key()[segmentKeyLen:])
			if err != nil || !bytes.Equal(key, k) || w.End < from || w.Start > latestStart {
				continue
			}
			if !fn(w, it.Value()) {
				return errors.Join(it.Err(), it.Close())
			}
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return s.fail("find sessions", err)
		}
	}
	return nil
}

// SessionStore is typed access to a session store by name (Kafka Streams' SessionStore): values by
// key and session, kept for a retention period after the session's end (see Session). Declare it
// once and give it to Connect with the processor that uses it.
type SessionStore[K, V any] struct {
	name        string
	retention   int64
	headers     bool
	timeOrdered bool
	ks          serde.Serde[K]
	vs          serde.Serde[V]
}

// Session declares typed access to the session store name (its changelog is
// topology.Names.WindowedChangelog(name, …)), which keeps each session until the newest session end
// written is more than retention after its end. A retention under 1 ms is taken as 1 ms.
func Session[K, V any](name string, retention time.Duration, ks serde.Serde[K], vs serde.Serde[V]) SessionStore[K, V] {
	return SessionStore[K, V]{name: name, retention: max(retention.Milliseconds(), 1), ks: ks, vs: vs}
}

// Name is the store's name.
func (s SessionStore[K, V]) Name() string { return s.name }

func (s SessionStore[K, V]) spec() windowSpec {
	return windowSpec{retention: s.retention, session: true, headers: s.headers, timeOrdered: s.timeOrdered}
}

// WithHeaders returns the declaration of a session store whose changelog is written as Kafka
// Streams 4.4's headers-aware session stores write theirs (the DSL's, with dsl.store.format=HEADERS):
// the DSL keeps each aggregate with empty headers, so an update's record carries none, and a
// removal's carries the headers of the record that removed the session (a merge).
func (s SessionStore[K, V]) WithHeaders() SessionStore[K, V] {
	s.headers = true
	return s
}

// TimeOrdered returns the declaration of a session store that expires as Kafka Streams'
// time-ordered session store does (RocksDbTimeOrderedSessionBytesStoreSupplier, where a session
// aggregation that emits its final results keeps its sessions): sessions expire by whole intervals
// of their ends, half the retention and at least a minute long, once the newest end written minus
// the retention is past the interval. FindSessionsEnding reads every session of the intervals kept,
// so a session that ended more than the retention ago is read until its interval expires; a key's
// FindSessions, as on any session store, reads only those that ended within the retention. The
// changelog is the same.
func (s SessionStore[K, V]) TimeOrdered() SessionStore[K, V] {
	s.timeOrdered = true
	return s
}

// FindSessionsEnding calls fn for every session kept in c's task's store, whatever its key, that ends
// in [earliestEnd, latestEnd] (Unix ms), in order of their end, then start, then their keys' bytes
// (Kafka Streams' findSessions(earliestSessionEndTime, latestSessionEndTime) on its time-ordered
// session store, what a session aggregation that emits its final results reads), until fn returns
// false. See TimeOrdered for which sessions are kept.
func (s SessionStore[K, V]) FindSessionsEnding(c *Context, earliestEnd, latestEnd int64, fn func(key K, w windowed.Window, value V) bool) error {
	st, err := s.sessionStore(c)
	if err != nil {
		return err
	}
	var derr error
	err = st.findSessionsEnding(earliestEnd, latestEnd, func(kb []byte, w windowed.Window, raw []byte) bool {
		var k K
		var v V
		if k, v, derr = decodeEntry(s.name, s.ks, s.vs, kb, raw); derr != nil {
			return false
		}
		return fn(k, w, v)
	})
	return errors.Join(err, derr)
}

// sessionStore is c's task's store of s, which must be a session store.
func (s SessionStore[K, V]) sessionStore(c *Context) (*kvStore, error) {
	st, ok := c.Store(s.name).(*kvStore)
	if !ok || st.win == nil || !st.win.session {
		if u, isUnknown := c.Store(s.name).(unknownStore); isUnknown {
			return nil, u.err()
		}
		return nil, fmt.Errorf("stream: store %s is not a session store: connect its processor with the stream.Session declaring it (stream.Connect)", s.name)
	}
	return st, nil
}

// key is the session store key of key and w.
func (s SessionStore[K, V]) key(key K, w windowed.Window) ([]byte, error) {
	k, err := s.ks.Encode(key)
	if err != nil {
		return nil, fmt.Errorf("stream: encoding a key of store %s: %w", s.name, err)
	}
	if w.Start < 0 || w.End < w.Start {
		return nil, fmt.Errorf("stream: store %s: not a session: %d..%d", s.name, w.Start, w.End)
	}
	return windowed.AppendSessionKey(make([]byte, 0, len(k)+16), k, w), nil
}

// Put sets the value of key's session w (start and end in Unix ms, both included) in c's task's
// store and its changelog. A session that is no longer kept is not written, as Kafka Streams skips it.
func (s SessionStore[K, V]) Put(c *Context, key K, w windowed.Window, value V) error {
	k, err := s.key(key, w)
	if err != nil {
		return err
	}
	v, err := s.vs.Encode(value)
	if err != nil {
		return fmt.Errorf("stream: encoding a value of store %s: %w", s.name, err)
	}
	if v == nil {
		v = []byte{}
	}
	return c.Store(s.name).Put(k, v)
}

// Get returns the value of key's session w (Kafka Streams' fetchSession), ok false when absent or no
// longer kept.
func (s SessionStore[K, V]) Get(c *Context, key K, w windowed.Window) (value V, ok bool, err error) {
	k, err := s.key(key, w)
	if err != nil {
		return value, false, err
	}
	return getDecoded(c.Store(s.name), k, s.vs, s.name)
}

// Remove removes key's session w (a tombstone in the changelog).
func (s SessionStore[K, V]) Remove(c *Context, key K, w windowed.Window) error {
	k, err := s.key(key, w)
	if err != nil {
		return err
	}
	return c.Store(s.name).Delete(k)
}

// FindSessions calls fn for key's sessions kept in c's task's store that end at or after
// earliestEnd and start at or before latestStart (Kafka Streams' findSessions), in order of their
// end, then their start, until fn returns false.
func (s SessionStore[K, V]) FindSessions(c *Context, key K, earliestEnd, latestStart int64, fn func(w windowed.Window, value V) bool) error {
	k, err := s.ks.Encode(key)
	if err != nil {
		return fmt.Errorf("stream: encoding a key of store %s: %w", s.name, err)
	}
	st, err := s.sessionStore(c)
	if err != nil {
		return err
	}
	var derr error
	err = st.findSessions(k, earliestEnd, latestStart, func(w windowed.Window, raw []byte) bool {
		v, err := s.vs.Decode(raw)
		if err != nil {
			derr = fmt.Errorf("stream: a value in store %s: %w", s.name, err)
			return false
		}
		return fn(w, v)
	})
	return errors.Join(err, derr)
}
