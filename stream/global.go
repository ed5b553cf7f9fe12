package stream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/consumerclose"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Global stores (topology.GlobalStore) are what Kafka Streams' global thread keeps: every process
// reads every partition of each global store's topic, outside the group and its tasks, and hands
// each record to the processor of the store's subtopology, which writes the store. Run reads each
// topic up to its end before any stream thread joins the group (Kafka Streams restores its global
// stores before its stream threads start), then keeps reading it on a goroutine of its own while
// the application runs. Every processor of the application reads the global stores (Context.Store),
// and only their own processor writes them.
//
// What this runtime chose where Kafka Streams differs: a global store is rebuilt from its topic at
// every start (Kafka Streams keeps a checkpoint of a persistent one and reads only the tail); a
// record of a global topic that fails follows deserialization.exception.handler (and
// processing.exception.handler only with processing.exception.handler.global.enabled, as in Kafka
// Streams 4.4), without a dead-letter record.

// ErrGlobalStoreReadOnly is returned by a write to a global store from a processor other than the
// one that keeps it current: a global store holds what its topic holds, and only its topic changes
// it (Kafka Streams' processors get global stores read-only too).
var ErrGlobalStoreReadOnly = errors.New("stream: a global store is written only by the processor of its global subtopology, from its topic")

// ErrGlobalContext is returned by what a global store's processor may not do: send records and
// schedule punctuations (its records come from the global topic, outside any task).
var ErrGlobalContext = errors.New("stream: a global store's processor only keeps its store: it cannot send records or schedule punctuations")

// globalState is the process's global stores and the client that keeps them current.
type globalState struct {
	app    *App // thread 1: the config, the logger, the error handlers
	stores map[string]*globalStore
	topics map[string]*globalStore
	cl     *kgo.Client
	// mu guards positions: the next offset of each partition to apply, read by Positions.
	mu        sync.Mutex
	positions map[tasks.TopicPartition]int64
	// task is the pseudo-task of each global subtopology its records are processed in.
	tasks map[string]*task
	done  chan struct{}
	// ctx is what Context.Context gives the global stores' processors: it ends with Run.
	ctx context.Context
	// restoring is true while start reads the topics up to their ends (streamhook.Restoring).
	restoring atomic.Bool
}

// globalStore is one global store: an Engine its processor writes directly (no changelog: its topic
// is its changelog).
type globalStore struct {
	g     *globalState
	def   topology.GlobalStore
	kind  store.Kind
	loc   store.Location
	eng   store.Engine
	batch store.Batch
	// open says eng may be read by queries (set once it is open, cleared before it closes; eng
	// itself is not changed after that, and a closed Engine answers ErrClosed).
	open atomic.Bool
}

// newGlobalState declares the global stores of the topology (nil when it has none).
func newGlobalState(a *App) *globalState {
	defs := a.topo.GlobalStores()
	if len(defs) == 0 {
		return nil
	}
	g := &globalState{app: a, stores: map[string]*globalStore{}, topics: map[string]*globalStore{},
		positions: map[tasks.TopicPartition]int64{}, tasks: map[string]*task{}}
	for _, d := range defs {
		s := &globalStore{g: g, def: d, kind: a.kindOf(d.Name)}
		g.stores[d.Name], g.topics[d.Topic] = s, s
		g.tasks[d.Subtopology] = &task{id: tasks.ID{Subtopology: d.Subtopology}, global: true, active: true, streamTime: -1}
	}
	return g
}

// names are the global stores' names, sorted.
func (g *globalState) names() []string { return slices.Sorted(maps.Keys(g.stores)) }

// start opens the global stores, reads their topics to their ends (the last stable offsets under
// exactly-once) and then keeps them current on a goroutine of its own until ctx ends (stop waits
// for it). An error leaves nothing running.
func (g *globalState) start(ctx context.Context) (err error) {
	a := g.app
	g.ctx = ctx
	defer func() {
		if err != nil {
			g.close()
		}
	}()
	for _, name := range g.names() {
		s := g.stores[name]
		s.loc = store.Location{ApplicationID: a.cfg.ApplicationID, Store: name}
		if s.kind.Persistent() {
			// Rebuilt from the topic at every start: what the store held may be older or newer than
			// what the topic holds now (a compacted or recreated topic), and no checkpoint says.
			s.loc.Dir = filepath.Join(a.stateDir, "global", name)
			if err := s.kind.Destroy(s.loc); err != nil {
				return fmt.Errorf("stream: clearing global store %q: %w", name, err)
			}
			if err := os.MkdirAll(filepath.Dir(s.loc.Dir), 0o755); err != nil {
				return fmt.Errorf("stream: global store %q: %w", name, err)
			}
		}
		if s.eng, err = s.kind.Open(s.loc); err != nil {
			return fmt.Errorf("stream: opening global store %q: %w", name, err)
		}
		s.open.Store(true)
	}
	opts, err := a.cfg.ClientOptions()
	if err != nil {
		return err
	}
	// The global consumer's own client, as Kafka Streams' global consumer is one of its own:
	// transaction markers kept, so that a position reaches a topic's last stable offset.
	opts = append(opts, kgo.ClientID(a.proc.clientID+"-global"), kgo.KeepControlRecords(),
		// Kafka Streams' global consumer has auto.offset.reset=none: records deleted before the
		// client read them are an error, never silently skipped (their deletions with them).
		kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	if a.eos() {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if g.cl, err = kgo.NewClient(append(opts, a.o.client...)...); err != nil {
		return fmt.Errorf("stream: building the global stores' client: %w", err)
	}
	starts, err := g.listed(ctx, false)
	if err != nil {
		return err
	}
	ends, err := g.listed(ctx, true)
	if err != nil {
		return err
	}
	if err := g.init("restore"); err != nil {
		return err
	}
	assign := map[string]map[int32]kgo.Offset{}
	for tp, start := range starts {
		if assign[tp.Topic] == nil {
			assign[tp.Topic] = map[int32]kgo.Offset{}
		}
		// From the first record kept: a partition whose records were all deleted has nothing to
		// read up to its end.
		assign[tp.Topic][tp.Partition] = kgo.NewOffset().At(start)
		g.positions[tp] = start
	}
	g.cl.AddConsumePartitions(assign)
	started := a.now()
	g.restoring.Store(true)
	defer g.restoring.Store(false)
	for !g.caughtUp(ends) {
		fs := g.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := g.apply(fs); err != nil {
			return err
		}
	}
	// Restored: what comes from here on is processed as it comes (and no longer restored), also
	// the records a fetch already holds for the goroutine that follows the topics.
	g.restoring.Store(false)
	a.log.Info("global stores restored", "stores", g.names(), "took", a.now().Sub(started).Round(time.Millisecond))
	if err := g.init("keep the stores current"); err != nil {
		return err
	}
	g.done = make(chan struct{})
	go g.follow(ctx)
	return nil
}

// init starts the processor of each global subtopology that is an Initializer, for phase. It runs
// twice, as Kafka Streams starts two processors of a global store: one before the restore (which
// restores through it) and one after it (which keeps the store current, and sees it restored).
func (g *globalState) init(phase string) error {
	a := g.app
	for _, sub := range slices.Sorted(maps.Keys(g.tasks)) {
		if in, ok := a.procs[sub].(Initializer); ok {
			t := g.tasks[sub]
			t.ctx = Context{app: a, task: t, ts: a.now()}
			if err := in.Init(&t.ctx); err != nil {
				return fmt.Errorf("stream: the processor of global subtopology %q failed to start (%s): %w", sub, phase, err)
			}
		}
	}
	return nil
}

// listed lists every partition of the global topics: its end (the last stable offset under
// exactly-once, what read_committed reaches; the high watermark otherwise), or its start (the
// first offset kept). A topic that does not exist is an error: Kafka Streams' global thread fails
// without its topic too.
func (g *globalState) listed(ctx context.Context, end bool) (map[tasks.TopicPartition]int64, error) {
	topics := slices.Sorted(maps.Keys(g.topics))
	adm := kadm.NewClient(g.cl)
	for {
		var listed kadm.ListedOffsets
		var err error
		switch {
		case !end:
			listed, err = adm.ListStartOffsets(ctx, topics...)
		case g.app.eos():
			listed, err = adm.ListCommittedOffsets(ctx, topics...)
		default:
			listed, err = adm.ListEndOffsets(ctx, topics...)
		}
		if err == nil {
			out := map[tasks.TopicPartition]int64{}
			var missing []string
			for _, topic := range topics {
				ps := listed[topic]
				if o, ok := ps[-1]; len(ps) == 0 || ok && errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					missing = append(missing, topic)
					continue
				}
				for p, o := range ps {
					if o.Err != nil {
						err = fmt.Errorf("%s[%d]: %w", topic, p, o.Err)
					}
					out[tasks.TopicPartition{Topic: topic, Partition: p}] = o.Offset
				}
			}
			if len(missing) > 0 {
				return nil, fmt.Errorf("stream: the global stores' topics %q do not exist: create them (a global store reads every partition of its topic)", missing)
			}
			if err == nil {
				return out, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		g.app.log.Warn("listing the partitions of the global stores' topics failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(g.app.cfg.RetryBackoff):
		}
	}
}

// caughtUp reports whether every partition was applied up to its end.
func (g *globalState) caughtUp(ends map[tasks.TopicPartition]int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for tp, end := range ends {
		if g.positions[tp] < end {
			return false
		}
	}
	return true
}

// follow keeps the global stores current until ctx ends; a failure stops the application.
func (g *globalState) follow(ctx context.Context) {
	defer close(g.done)
	for {
		fs := g.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		if err := g.apply(fs); err != nil {
			if ctx.Err() == nil {
				g.app.log.Error("stopping: keeping the global stores current failed", "err", err)
				g.app.proc.fail(err)
			}
			return
		}
	}
}

// apply hands each record of fs to its global store's processor, and moves the positions past
// them (and past transaction markers).
func (g *globalState) apply(fs kgo.Fetches) error {
	for _, fe := range fs.Errors() {
		switch {
		case errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded):
			continue
		case errors.Is(fe.Err, kerr.OffsetOutOfRange):
			// As Kafka Streams' global thread: records were deleted before this process read them,
			// so the store may miss their changes; a restart rebuilds it from what the topic holds.
			return fmt.Errorf("stream: global topic %s[%d]: records were deleted before this process read them (%w); "+
				"the application stops, and its next start rebuilds the global stores from what the topic holds", fe.Topic, fe.Partition, fe.Err)
		}
		return fmt.Errorf("stream: reading global topic %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
	}
	var err error
	fs.EachRecord(func(kr *kgo.Record) {
		if err != nil {
			return
		}
		if !kr.Attrs.IsControl() {
			if err = g.process(kr); err != nil {
				return
			}
		}
		g.mu.Lock()
		g.positions[tasks.TopicPartition{Topic: kr.Topic, Partition: kr.Partition}] = kr.Offset + 1
		g.mu.Unlock()
	})
	return err
}

// process hands kr to the processor of its store's subtopology, as the error handlers say.
func (g *globalState) process(kr *kgo.Record) error {
	a := g.app
	s := g.topics[kr.Topic]
	t := g.tasks[s.def.Subtopology]
	t.id.Partition = kr.Partition
	ts := kr.Timestamp.UnixMilli()
	t.rec = Record{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp, Headers: kr.Headers}
	t.ctx = Context{app: a, task: t, rec: &t.rec, ts: kr.Timestamp}
	t.streamTime = max(t.streamTime, ts)
	err := a.procs[s.def.Subtopology].Process(&t.ctx, &t.rec)
	if err == nil {
		return nil
	}
	if se := (*store.Error)(nil); errors.As(err, &se) {
		return err // the store failed, not the record: no handler skips that
	}
	var de *recordDecodeError
	if errors.As(err, &de) {
		if a.cfg.Runtime.OnDeserializationError == config.LogAndContinue {
			a.metrics.dropped.Add(1)
			a.log.Warn("skipping a record of a global topic that does not decode (deserialization.exception.handler=LogAndContinue)",
				"store", s.def.Name, "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", err)
			return nil
		}
		return &DeserializationError{Task: t.id, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Err: err}
	}
	if a.cfg.Runtime.GlobalProcessingErrors && a.cfg.Runtime.OnProcessingError == config.LogAndContinue {
		a.metrics.dropped.Add(1)
		a.log.Warn("skipping a record of a global topic its processor failed on (processing.exception.handler=LogAndContinue)",
			"store", s.def.Name, "topic", kr.Topic, "partition", kr.Partition, "offset", kr.Offset, "err", err)
		return nil
	}
	return &ProcessingError{Task: t.id, Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Err: err}
}

// stop ends the goroutine that keeps the stores current (its ctx must have ended) and closes the
// stores and the client.
func (g *globalState) stop() error {
	if g.done != nil {
		<-g.done
	}
	return g.close()
}

func (g *globalState) close() error {
	if g.cl != nil {
		consumerclose.Close(g.cl)
		g.cl = nil
	}
	var errs []error
	for _, name := range g.names() {
		if s := g.stores[name]; s.open.Swap(false) {
			errs = append(errs, s.eng.Close())
		}
	}
	return errors.Join(errs...)
}

// Positions are the next offsets of the global topics' partitions to apply (for the test driver,
// which waits until what it wrote to a global topic is in its store).
func (g *globalState) Positions() map[tasks.TopicPartition]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.positions)
}

// globalReader is a global store as every processor but its own sees it: read-only.
type globalReader struct{ s *globalStore }

func (r globalReader) Get(key []byte) ([]byte, bool, error) { return r.s.eng.Get(key) }
func (r globalReader) Range(lower, upper []byte) (store.Iterator, error) {
	return r.s.eng.Iterate(lower, upper)
}
func (r globalReader) Prefix(prefix []byte) (store.Iterator, error) {
	return r.s.eng.Iterate(prefix, store.PrefixEnd(prefix))
}
func (r globalReader) ApproximateCount() (int64, error) { return r.s.eng.ApproximateCount() }
func (r globalReader) Put(_, _ []byte) error {
	return fmt.Errorf("%w (store %q)", ErrGlobalStoreReadOnly, r.s.def.Name)
}
func (r globalReader) Delete([]byte) error {
	return fmt.Errorf("%w (store %q)", ErrGlobalStoreReadOnly, r.s.def.Name)
}

// globalWriter is a global store as its own processor sees it: each write applied at once, as a
// record of its topic is the change.
type globalWriter struct{ globalReader }

func (w globalWriter) Put(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return w.write(key, value, false)
}

func (w globalWriter) Delete(key []byte) error { return w.write(key, nil, true) }

func (w globalWriter) write(key, value []byte, del bool) error {
	s := w.s
	s.batch.Reset()
	if del {
		s.batch.Delete(key)
	} else {
		s.batch.Put(key, value)
	}
	return s.eng.Apply(&s.batch, -1)
}
