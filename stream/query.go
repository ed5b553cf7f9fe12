package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/windowed"
)

// ErrNotRunning is returned by queries before Run built the member, or after it returned.
var ErrNotRunning = errors.New("stream: the application is not running")

// ErrStoreNotReady is returned by a query of a store whose tasks on this process are all restoring
// (or restored and not started yet): their stores hold only part of their state, which Kafka
// Streams does not show either (its InvalidStateStoreException). Query again once they run. While
// some of the store's tasks run, a query reads those alone, and the keys of the others are absent.
var ErrStoreNotReady = errors.New("stream: the store's tasks on this process are restoring; query it again once they run")

// Store returns read-only access to the store name across the active tasks this process runs now,
// in all its stream threads (Kafka Streams' interactive queries over local stores): a Get looks in each task's store, a
// Range merges them in key order. Keys live in the task of their partition, so a key another
// member holds is absent here (see KeyMetadata), and so is a key of a task still restoring (every
// read is ErrStoreNotReady while all of the store's tasks are). Safe on any goroutine.
func (a *App) Store(name string) (store.ReadOnly, error) {
	if g := a.proc.global; g != nil && g.stores[name] != nil {
		return globalQuery{a: a, s: g.stores[name]}, nil
	}
	if !a.knownStore(name) {
		return nil, fmt.Errorf("%w %q: no subtopology of the topology has it", ErrUnknownStore, name)
	}
	return localStore{a: a, name: name}, nil
}

func (a *App) knownStore(name string) bool {
	for _, m := range a.storesOf {
		if _, ok := m[name]; ok {
			return true
		}
	}
	return false
}

// globalQuery is a global store read from outside the processors: whole on every process, and
// there only while Run runs (its engine is opened at start and closed at the end).
type globalQuery struct {
	a *App
	s *globalStore
}

func (q globalQuery) reader() (globalReader, error) {
	if !q.a.ran.Load() || q.a.stopped.Load() || !q.s.open.Load() {
		return globalReader{}, ErrNotRunning
	}
	return globalReader{q.s}, nil
}

func (q globalQuery) Get(key []byte) ([]byte, bool, error) {
	r, err := q.reader()
	if err != nil {
		return nil, false, err
	}
	return r.Get(key)
}

func (q globalQuery) Range(lower, upper []byte) (store.Iterator, error) {
	r, err := q.reader()
	if err != nil {
		return nil, err
	}
	return r.Range(lower, upper)
}

func (q globalQuery) Prefix(prefix []byte) (store.Iterator, error) {
	r, err := q.reader()
	if err != nil {
		return nil, err
	}
	return r.Prefix(prefix)
}

func (q globalQuery) ApproximateCount() (int64, error) {
	r, err := q.reader()
	if err != nil {
		return 0, err
	}
	return r.ApproximateCount()
}

// Query returns the value of key in the local stores of this process (see App.Store).
func (s KeyValueStore[K, V]) Query(a *App, key K) (value V, ok bool, err error) {
	st, err := a.Store(s.name)
	if err != nil {
		return value, false, err
	}
	return s.get(st, key)
}

// localStore is a store across the local active tasks.
type localStore struct {
	a    *App
	name string
}

// stores are the store's stores in the active tasks that run (not those restoring, whose state is
// partial), in order of their partition; ErrStoreNotReady when only restoring ones have it.
func (l localStore) stores() ([]*kvStore, error) {
	var out []*kvStore
	restoring := false
	for _, th := range l.a.proc.all() {
		th.mu.RLock() // the machine changes under th.mu's write lock only
		for _, t := range th.tasks {
			if s := t.stores[l.name]; s != nil && t.active {
				if th.mach.Running(t.id) {
					out = append(out, s)
				} else {
					restoring = true
				}
			}
		}
		th.mu.RUnlock()
	}
	if len(out) == 0 && restoring {
		return nil, fmt.Errorf("%w (store %q)", ErrStoreNotReady, l.name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].task.id.Partition < out[j].task.id.Partition })
	return out, nil
}

func (l localStore) Get(key []byte) ([]byte, bool, error) {
	stores, err := l.stores()
	if err != nil {
		return nil, false, err
	}
	for _, s := range stores {
		v, ok, err := s.committedGet(key)
		if err != nil || ok {
			return v, ok, err
		}
	}
	return nil, false, nil
}

func (l localStore) Range(lower, upper []byte) (store.Iterator, error) {
	stores, err := l.stores()
	if err != nil {
		return nil, err
	}
	var its []store.Iterator
	for _, s := range stores {
		it, err := s.committedRange(lower, upper)
		if err != nil {
			for _, o := range its {
				o.Close()
			}
			return nil, err
		}
		its = append(its, it)
	}
	return newMerge(its), nil
}

func (l localStore) Prefix(prefix []byte) (store.Iterator, error) {
	return l.Range(prefix, store.PrefixEnd(prefix))
}

func (l localStore) ApproximateCount() (int64, error) {
	stores, err := l.stores()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range stores {
		c, err := s.ApproximateCount()
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// merge walks several iterators in key order (their keys are disjoint: each is one partition's).
type merge struct {
	its  []store.Iterator
	live []bool
	cur  int
	err  error
}

func newMerge(its []store.Iterator) *merge {
	m := &merge{its: its, live: make([]bool, len(its)), cur: -1}
	for i, it := range its {
		m.live[i] = it.Next()
	}
	return m
}

func (m *merge) Next() bool {
	if m.cur >= 0 {
		m.live[m.cur] = m.its[m.cur].Next()
	}
	m.cur = -1
	for i, it := range m.its {
		if !m.live[i] {
			if err := it.Err(); err != nil && m.err == nil {
				m.err = err
			}
			continue
		}
		if m.cur < 0 || bytes.Compare(it.Key(), m.its[m.cur].Key()) < 0 {
			m.cur = i
		}
	}
	return m.cur >= 0 && m.err == nil
}

func (m *merge) Key() []byte   { return m.its[m.cur].Key() }
func (m *merge) Value() []byte { return m.its[m.cur].Value() }
func (m *merge) Err() error    { return m.err }
func (m *merge) Close() error {
	var first error
	for _, it := range m.its {
		if err := it.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// KeyMetadata says where a key of a store lives in the group (Kafka Streams' KeyQueryMetadata): its
// partition, the application.server endpoint of the member whose active task holds it, and those of
// the members with a standby of it.
type KeyMetadata struct {
	Task      tasks.ID
	Partition int32
	// Active is the endpoint of the active task's member; ok false in KeyMetadata's result when no
	// endpoint is known for it (a rebalance, or members without application.server).
	Active  heartbeat.Endpoint
	Standby []heartbeat.Endpoint
}

// KeyMetadata computes the partition of key (its encoded bytes) in the store name's subtopology, as
// Kafka's default partitioner places it, and finds which endpoints hold that partition, from what
// the group last told this member (members must set application.server). ok is false when no
// member's endpoint holds the partition as active right now.
func (a *App) KeyMetadata(ctx context.Context, name string, key []byte) (md KeyMetadata, ok bool, err error) {
	if st := a.State(); a.cl == nil || a.stopped.Load() || st == NotRunning || st == Error {
		return md, false, ErrNotRunning
	}
	sub := ""
	for id, m := range a.storesOf {
		if _, found := m[name]; found {
			sub = id
		}
	}
	if sub == "" {
		return md, false, fmt.Errorf("%w %q: no subtopology of the topology has it", ErrUnknownStore, name)
	}
	inputs := a.topo.InputTopics(sub)
	if len(inputs) == 0 {
		return md, false, fmt.Errorf("stream: subtopology %s has no input topic", sub)
	}
	topic := inputs[0]
	details, err := kadm.NewClient(a.cl).ListTopics(ctx, topic)
	if err != nil {
		return md, false, fmt.Errorf("stream: reading the partitions of %s: %w", topic, err)
	}
	d, found := details[topic]
	if !found || d.Err != nil || len(d.Partitions) == 0 {
		return md, false, fmt.Errorf("stream: topic %s is not known to the cluster (%v)", topic, d.Err)
	}
	p := int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: key}, len(d.Partitions)))
	md.Task, md.Partition = tasks.ID{Subtopology: sub, Partition: p}, p
	eps := a.endpoints.Load()
	if eps == nil {
		return md, false, nil
	}
	for ep, parts := range *eps {
		if slices.Contains(parts.Active[topic], p) {
			md.Active, ok = ep, true
		}
		if slices.Contains(parts.Standby[topic], p) {
			md.Standby = append(md.Standby, ep)
		}
	}
	sort.Slice(md.Standby, func(i, j int) bool { return md.Standby[i].String() < md.Standby[j].String() })
	return md, ok, nil
}

// localWindowStores are the local active tasks' stores named name that are window stores (session
// false) or session stores (session true), in order of their partition; an unknown name, or a store
// of another kind, is an error.
func (a *App) localWindowStores(name string, session bool) ([]*kvStore, error) {
	if !a.knownStore(name) {
		return nil, fmt.Errorf("%w %q: no subtopology of the topology has it", ErrUnknownStore, name)
	}
	stores, err := localStore{a: a, name: name}.stores()
	if err != nil {
		return nil, err
	}
	for _, s := range stores {
		if s.win == nil || s.win.session != session {
			kind := "window"
			if session {
				kind = "session"
			}
			return nil, fmt.Errorf("stream: store %s is not a %s store", name, kind)
		}
	}
	return stores, nil
}

// Query calls fn for key's windows in the local stores of this process whose start is in [from,
// to] (Unix ms), in order of their start, until fn returns false (Kafka Streams' interactive query
// ReadOnlyWindowStore.fetch(key, timeFrom, timeTo)): what the task holding the key wrote (under
// exactly-once, what it last committed; see App.Store). Safe on any goroutine.
func (w WindowStore[K, V]) Query(a *App, key K, from, to int64, fn func(start int64, value V) bool) error {
	k, err := w.ks.Encode(key)
	if err != nil {
		return fmt.Errorf("stream: encoding a key of store %s: %w", w.name, err)
	}
	stores, err := a.localWindowStores(w.name, false)
	if err != nil {
		return err
	}
	return queryEach(stores, w.name, w.vs, func(s *kvStore, visit func(int64, []byte) bool) error {
		return s.fetchAs(true, k, from, to, visit)
	}, fn)
}

// Query calls fn for key's sessions in the local stores of this process, in order of their end,
// then their start, until fn returns false (Kafka Streams' interactive query
// ReadOnlySessionStore.fetch(key)): what the task holding the key wrote (under exactly-once, what it
// last committed; see App.Store). Safe on any goroutine.
func (s SessionStore[K, V]) Query(a *App, key K, fn func(w windowed.Window, value V) bool) error {
	k, err := s.ks.Encode(key)
	if err != nil {
		return fmt.Errorf("stream: encoding a key of store %s: %w", s.name, err)
	}
	stores, err := a.localWindowStores(s.name, true)
	if err != nil {
		return err
	}
	return queryEach(stores, s.name, s.vs, func(st *kvStore, visit func(windowed.Window, []byte) bool) error {
		return st.findSessionsAs(true, k, 0, math.MaxInt64, visit)
	}, fn)
}

// queryEach runs scan over each store, handing fn each value it visits decoded with vs, until fn
// returns false or a value does not decode.
func queryEach[T, V any](stores []*kvStore, name string, vs serde.Serde[V], scan func(*kvStore, func(T, []byte) bool) error,
	fn func(T, V) bool) error {
	var derr error
	more := true
	for _, s := range stores {
		err := scan(s, func(at T, raw []byte) bool {
			v, err := vs.Decode(raw)
			if err != nil {
				derr = fmt.Errorf("stream: a value in store %s: %w", name, err)
				return false
			}
			more = fn(at, v)
			return more
		})
		if err != nil || derr != nil || !more {
			return errors.Join(err, derr)
		}
	}
	return nil
}
