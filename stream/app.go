package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/consumerclose"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/taskoffsets"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// State is where an App is in its life, as Kafka Streams' KafkaStreams.State, with Restoring made
// visible: Created → (Run) Rebalancing ⇄ Restoring ⇄ Running → PendingShutdown → NotRunning, or →
// PendingError → Error after a fatal error.
type State int

// The states of an App.
const (
	Created State = iota
	// Rebalancing: the member is joining, or its tasks are changing.
	Rebalancing
	// Restoring: the member is stable and at least one active task is restoring its stores.
	Restoring
	// Running: the member is stable and every active task processes.
	Running
	// PendingShutdown: Run's context ended; the tasks are being committed and the member leaves.
	PendingShutdown
	// NotRunning: Run returned after a clean stop.
	NotRunning
	// PendingError: a fatal error happened; the member is being closed.
	PendingError
	// Error: Run returned a fatal error.
	Error
)

// String names the state as Kafka Streams does (RUNNING, …).
func (s State) String() string {
	switch s {
	case Created:
		return "CREATED"
	case Rebalancing:
		return "REBALANCING"
	case Restoring:
		return "RESTORING"
	case Running:
		return "RUNNING"
	case PendingShutdown:
		return "PENDING_SHUTDOWN"
	case NotRunning:
		return "NOT_RUNNING"
	case PendingError:
		return "PENDING_ERROR"
	case Error:
		return "ERROR"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// txnMetadataMinAge is the transactional producer's minimum metadata age (see build).
const txnMetadataMinAge = 250 * time.Millisecond

// closeBound bounds the stop: the last commits, the leave, and closing the client.
const closeBound = 30 * time.Second

// Option wires a collaborator into an App. Behaviour is configured by Kafka keys in config.Config.
type Option func(*options)

type options struct {
	logger    *slog.Logger
	kinds     map[string]store.Kind
	client    []kgo.Opt
	listeners []func(from, to State)
	hooks     []membership.Hook
	onStore   func(err *store.Error) StoreAction
	onRestore []func(RestoreBatch)
	onWarning []func(error)
}

// WithWarningListener calls fn with each warning the runtime finds (typed: *OrphanedStateWarning,
// *MissingChangelogWarning, *WeakReplicationWarning), besides logging it; on a stream thread's
// goroutine (several at once with num.stream.threads above 1), or for the *WeakReplicationWarning on
// a goroutine of its own beside them: keep it short, and safe to call concurrently.
func WithWarningListener(fn func(error)) Option {
	return func(o *options) { o.onWarning = append(o.onWarning, fn) }
}

// OrphanedState is what a task's stores hold when it starts without any committed input offset: the
// stores that hold data, with their changelog partitions and about how many keys each holds.
type OrphanedState struct {
	Store     string
	Changelog tasks.TopicPartition
	// Keys is about how many keys the store holds.
	Keys int64
}

// OrphanedStateError stops the application when a task would start processing with stores that
// hold restored state but without any committed offset on its inputs: the group's offsets were
// deleted (or expired) while its changelog topics were kept — `streams-groups --delete` without
// --delete-all-internal-topics does that — so its inputs would be read again from auto.offset.reset
// on top of the state they already built, and every count and total would end up doubled. The task
// processed nothing. The two ways on that keep results exact: delete the internal topics too (the
// application then computes everything again from its input), or put back the input positions the
// state was built up to (saved with `streams-groups --reset-offsets … --to-current --dry-run
// --export`). allow.state.without.committed.offsets=true starts such a task anyway, with an
// *OrphanedStateWarning. See docs/upgrades.md.
type OrphanedStateError struct {
	Group string
	Task  tasks.ID
	// Stores are the task's stores that hold data (at least one).
	Stores []OrphanedState
}

func (e *OrphanedStateError) Error() string {
	return fmt.Sprintf("stream: group %s: task %s has restored state (%s) but none of its inputs has a committed offset; "+
		"processing its input again on top of that state would double every count and total, so it does not start. "+
		"The group's offsets were deleted (or expired) while its internal topics were kept. To start over, stop every member "+
		"and delete the internal topics too (streams-groups --delete --group %s --delete-all-internal-topics, or, the group "+
		"being gone already, delete the topics %s); to keep the state, put back the input positions it was built up to "+
		"(streams-groups --reset-offsets --group %s --from-file <saved positions> --execute). To reprocess onto the old "+
		"state anyway, set %s=true. See docs/upgrades.md",
		e.Group, e.Task, orphanedList(e.Stores), e.Group, changelogList(e.Stores), e.Group, config.KeyAllowStateWithoutCommittedOffsets)
}

// orphanedList says which stores hold what: "store counts (changelog app-counts-changelog-0, about 10
// keys)".
func orphanedList(ss []OrphanedState) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("store %s (changelog %s-%d, about %d keys)", s.Store, s.Changelog.Topic, s.Changelog.Partition, s.Keys)
	}
	return strings.Join(parts, ", ")
}

// changelogList names the changelog topics of ss.
func changelogList(ss []OrphanedState) string {
	var topics []string
	for _, s := range ss {
		if !slices.Contains(topics, s.Changelog.Topic) {
			topics = append(topics, s.Changelog.Topic)
		}
	}
	return strings.Join(topics, ", ")
}

// OrphanedStateWarning is what allow.state.without.committed.offsets=true makes of an
// OrphanedStateError: the task starts on its restored state and processes its input again from
// auto.offset.reset, as asked; the warning is logged and passed to WithWarningListener.
type OrphanedStateWarning struct {
	Task  tasks.ID
	Group string
	// Keys is about how many keys the task's stores hold.
	Keys int64
}

func (w *OrphanedStateWarning) Error() string {
	return fmt.Sprintf("stream: task %s restored state (about %d keys) but has no committed input offsets: its inputs are "+
		"processed again from auto.offset.reset on top of that state (%s=true), which doubles counts", w.Task, w.Keys,
		config.KeyAllowStateWithoutCommittedOffsets)
}

// RestoreBatch is one batch of changelog records applied to a store: of an active task restoring
// before it processes, or of a standby (or warm-up) task following its active task.
type RestoreBatch struct {
	Task  tasks.ID
	Store string
	// Changelog is the partition the records came from; Next is the offset after the last one.
	Changelog tasks.TopicPartition
	Next      int64
	// Records is how many records the batch applied.
	Records int
	// Standby is true for a standby or warm-up task, false for an active task restoring.
	Standby bool
}

// WithRestoreListener calls fn after each batch of changelog records a store applied (Kafka
// Streams' StateRestoreListener and StandbyUpdateListener in one), on a stream thread's goroutine
// (several at once with num.stream.threads above 1): keep it short.
func WithRestoreListener(fn func(RestoreBatch)) Option {
	return func(o *options) { o.onRestore = append(o.onRestore, fn) }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithStores keeps the named stores (every store of the topology when no name is given) in kind, for
// example a persistent Pebble store (plugin/sgpebble); the default is store.Memory.
func WithStores(kind store.Kind, names ...string) Option {
	return func(o *options) {
		if len(names) == 0 {
			names = []string{""}
		}
		for _, n := range names {
			o.kinds[n] = kind
		}
	}
}

// WithClientOptions adds franz-go options to the client the App builds (a dialer, a client ID, …),
// after the ones from the config's bootstrap and security keys.
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(o *options) { o.client = append(o.client, opts...) }
}

// WithStateListener calls fn on every change of the App's State (on Run's goroutine or the member's;
// keep it short).
func WithStateListener(fn func(from, to State)) Option {
	return func(o *options) { o.listeners = append(o.listeners, fn) }
}

// WithHooks passes metrics hooks to the member (see membership.WithHooks; plugin/sgprom).
func WithHooks(hooks ...membership.Hook) Option {
	return func(o *options) { o.hooks = append(o.hooks, hooks...) }
}

// StoreAction is what to do with a store that cannot be opened or written.
type StoreAction int

const (
	// FailOnStoreError stops the application with the store's error (the default).
	FailOnStoreError StoreAction = iota
	// WipeAndRestore deletes the store and restores it from its changelog (at open only).
	WipeAndRestore
)

// WithStoreErrorHandler decides what a store that cannot be opened (damaged, foreign files) does:
// fail the application (the default), or wipe the store and restore it from its changelog.
func WithStoreErrorHandler(fn func(err *store.Error) StoreAction) Option {
	return func(o *options) { o.onStore = fn }
}

// ErrShutdownRequested is what Run returns when a member of the group requested that the whole
// application shut down (membership.Manager.RequestShutdown, or KafkaStreams' SHUTDOWN_APPLICATION).
var ErrShutdownRequested = errors.New("stream: a member of the group requested that the application shut down")

// App is a stream application: one member of a streams group with its processors and stores. Build
// it with New, run it with Run.
type App struct {
	cfg    config.Config
	topo   *topology.Topology
	procs  Processors
	o      options
	log    *slog.Logger
	router *tasks.Router
	now    func() time.Time

	// storesOf maps a subtopology to its stores (name → changelog topic).
	storesOf map[string]map[string]string
	// connected maps a subtopology whose processor was connected to its stores (Connect) to them.
	connected  map[string]*connected
	changelogs map[string]bool
	stateDir   string // state.dir/<application.id>; "" when nothing is persisted
	lock       *dirLock

	metrics loopMetrics
	// waiting is the wait for changelog topics an assignment needs (missing.go).
	waiting changelogWait
	// startRetryAt is when a failed commit of new tasks' starting positions is tried again, after
	// startFailures failures in a row (starts.go).
	startRetryAt  time.Time
	startFailures int
	// calls hands the member's listener calls to the loop's goroutine (calls.go).
	calls callQueue

	cl      *kgo.Client
	mgr     *membership.Manager
	cons    *consume.Consumer
	commits *commit.Committer
	offsets *taskoffsets.Tracker

	runCtx    context.Context
	cancelRun context.CancelCauseFunc
	// failCtx ends only on a fatal error (fail), not when Run's context ends: the work that a clean
	// stop must finish (a commit under way) runs on it.
	failCtx    context.Context
	cancelFail context.CancelCauseFunc
	ran        atomic.Bool
	stopped    atomic.Bool // Run returned

	// mu guards tasks (the loop's, the member's calls included: calls.go) against queries and the
	// other goroutines that read them (metrics, the lag listing).
	mu    sync.RWMutex
	tasks map[tasks.ID]*task
	// proc is what the process's stream threads share; index is this thread's (1 for the App New
	// returned).
	proc  *process
	index int
	// ordering: some subtopology reads several input topics, so its tasks order their records by
	// timestamp (order.go); lags lists the ends of their inputs; queuedFirst alternates which of
	// queued and batch records a batch processes first, so that neither waits for ever.
	ordering    bool
	lags        lagLister
	queuedFirst bool
	// outPromise is the callback of output and repartition writes (send).
	outPromise promiser
	// keyBuf and valueBuf are the loop's scratch for the keys and values typed stores encode and
	// their stores copy (KeyValueStore).
	keyBuf, valueBuf []byte

	// txnGen counts the aborted transactions, so that a late failure of an aborted transaction's
	// record is not taken for one of the next transaction's.
	txnGen atomic.Int64
	// txnEpoch holds the producer epoch the open transaction's records were acknowledged at.
	txnEpoch txnEpoch
	// pcl is the client every record is produced with: cl itself under at-least-once; under
	// exactly-once a transactional client of its own, replaced when the transaction coordinator
	// fences it (renewProducer) with one built from popts.
	pcl   atomic.Pointer[kgo.Client]
	popts []kgo.Opt
	// mach decides the commit step (a.mu): when to commit, in what order, what errors mean.
	mach *sm.Machine

	state      atomic.Int32
	produceErr atomic.Pointer[ProduceError]
	fatal      atomic.Pointer[error]
	// cur is the batch being processed (the loop's goroutine only): only a batch can pause for a
	// commit (processUntil).
	cur *consume.Batch
	// initBound bounds the wait for the transaction coordinator at start (taskTimeout).
	initBound time.Duration
	// backoff paces retries (retry.backoff.ms, retry.backoff.max.ms, jittered): the member's.
	backoff heartbeat.Backoff

	// deliver is the context every write goes out with: it bounds how long a record may wait to be
	// written (Kafka's delivery.timeout.ms). See deliveryContext.
	deliverCtx     context.Context
	deliverBy      time.Time
	deliverWrites  uint64
	deliverCancels [2]context.CancelFunc
	// deliverPrefixes are deliverCtx with a key prefix (tasks.WithKeyPrefix) by its length, made
	// when first asked for and dropped when deliverCtx is renewed (keyPrefixContext).
	deliverPrefixes []context.Context
	// partitionCounts are the partition counts of the topics a StreamPartitioner chose among
	// (PartitionCount), with when each was learned.
	partitionCounts map[string]partitionCount
	endpoints       atomic.Pointer[map[heartbeat.Endpoint]heartbeat.EndpointPartitions]
}

// New builds an App for the member config cfg (Kafka keys: application.id, bootstrap.servers,
// security, the runtime's commit.interval.ms, processing.guarantee, state.dir, …), the topology topo
// and a Processor for each of its subtopologies. It checks everything it can before any I/O; it
// connects nothing until Run.
func New(cfg config.Config, topo *topology.Topology, procs Processors, opts ...Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if topo == nil {
		return nil, errors.New("stream: the topology is required")
	}
	if err := topo.CheckJoinable(); err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	// The topology the member sends, with replication.factor applied (membership does the same), so
	// that its ID in the log and in comparisons is the group's.
	topo = topo.WithReplicationFactor(cfg.ReplicationFactor)
	if len(cfg.BootstrapServers) == 0 {
		return nil, fmt.Errorf("stream: %s is required: the App builds its own client", config.KeyBootstrapServers)
	}
	if id := cfg.GroupInstanceID; id != "" && len(id)+1+len(strconv.Itoa(cfg.Runtime.Threads())) > config.MaxInstanceIDLength {
		return nil, &config.Error{Keys: []config.KeyError{{Key: config.KeyGroupInstanceID, Value: id,
			Reason: fmt.Sprintf("each stream thread's static member is group.instance.id-<thread>, which must fit Kafka's limit of %d characters: "+
				"shorten it", config.MaxInstanceIDLength)}}}
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	o := options{logger: slog.Default(), kinds: map[string]store.Kind{}}
	for _, opt := range opts {
		opt(&o)
	}
	p := newProcess()
	p.clientID, p.instanceID = cmp.Or(cfg.ClientID, cfg.ApplicationID), cfg.GroupInstanceID
	a := newThread(cfg.Clone(), topo, procs, o, router, p, 1)
	p.publish()
	a.storesOf, a.changelogs = map[string]map[string]string{}, map[string]bool{}
	for _, st := range topo.Subtopologies() {
		a.ordering = a.ordering || len(st.SourceTopics)+len(st.RepartitionSourceTopics) > 1
	}
	p.global = newGlobalState(a)
	if err := a.checkProcessors(); err != nil {
		return nil, err
	}
	if err := a.mapStores(); err != nil {
		return nil, err
	}
	if err := a.checkConnections(); err != nil {
		return nil, err
	}
	return a, nil
}

// newThread makes stream thread index of process p (thread 1 is the App New returns).
func newThread(cfg config.Config, topo *topology.Topology, procs Processors, o options, router *tasks.Router, p *process, index int) *App {
	a := &App{cfg: cfg, topo: topo, procs: procs, o: o, log: o.logger, router: router, now: time.Now,
		backoff: heartbeat.Backoff{Min: cfg.RetryBackoff, Max: cfg.RetryBackoffMax, Rand: rand.Float64},
		tasks:   map[tasks.ID]*task{}, initBound: taskTimeout, proc: p, index: index}
	p.threads = append(p.threads, a)
	a.failCtx, a.cancelFail = context.WithCancelCause(context.Background())
	a.mach = sm.New(a.machineConfig())
	a.lags.answers = make(chan []listedEnd, 1)
	return a
}

// sibling makes thread index beside a (thread 1, after New checked everything): what New derived
// from the topology is shared, read only. Each thread names its clients after its index, as Kafka
// Streams' threads do (client.id, or application.id, then -StreamThread-<index>), and a static
// member's threads get group.instance.id-<index>.
func (a *App) sibling(index int) *App {
	t := newThread(a.cfg.Clone(), a.topo, a.procs, a.o, a.router, a.proc, index)
	t.storesOf, t.connected, t.changelogs, t.ordering = a.storesOf, a.connected, a.changelogs, a.ordering
	t.stateDir, t.now = a.stateDir, a.now // one clock for the process
	t.nameThread(true)
	return t
}

// nameThread gives a thread its static member ID, as Kafka Streams names its threads' members
// (group.instance.id-<index>, with one thread too, so that adding threads renames no member); and,
// in a process of several threads, its client ID (client.id, or application.id, then
// -StreamThread-<index>) and logger. The names derive from the application's config, whichever
// thread's config was named already.
func (a *App) nameThread(several bool) {
	if a.proc.instanceID != "" {
		a.cfg.GroupInstanceID = a.proc.instanceID + "-" + strconv.Itoa(a.index)
	}
	if several {
		a.cfg.ClientID = a.proc.clientID + "-StreamThread-" + strconv.Itoa(a.index)
		a.log = a.o.logger.With("thread", a.index)
	}
}

// checkConnections checks that every store a processor was connected to (Connect) is a store of its
// subtopology: a misspelled name, or a store whose changelog the topology lacks, is refused here,
// not at the first Get.
func (a *App) checkConnections() error {
	a.connected = map[string]*connected{}
	var problems []string
	for sub, p := range a.procs {
		c := connectionsOf(p)
		if c == nil {
			continue
		}
		a.connected[sub] = c
		have := slices.Sorted(maps.Keys(a.storesOf[sub]))
		for _, name := range c.names {
			if g := a.proc.global; g != nil && g.stores[name] != nil {
				if own := g.stores[name].def.Subtopology; own != sub {
					problems = append(problems, fmt.Sprintf("the processor of subtopology %q is connected to global store %q: every processor reads a global store without "+
						"connecting to it, and only the processor of global subtopology %q writes it", sub, name, own))
				}
				continue
			}
			if _, ok := a.storesOf[sub][name]; !ok {
				problems = append(problems, fmt.Sprintf("the processor of subtopology %q uses store %q, which the subtopology does not have "+
					"(its stores: %q; a store's changelog topology.Names.KeyValueChangelog(%q) declares it)", sub, name, have, name))
			}
			if h, ok := c.versioned[name]; ok && h < 0 {
				problems = append(problems, fmt.Sprintf("the versioned store %q has a negative history retention (%d ms)", name, h))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("stream: %s", strings.Join(problems, "; "))
	}
	return nil
}

func (a *App) checkProcessors() error {
	var problems []string
	for _, st := range a.topo.Subtopologies() {
		if a.procs[st.ID] == nil {
			problems = append(problems, fmt.Sprintf("subtopology %q has no processor", st.ID))
		}
	}
	globals := map[string]bool{}
	for _, g := range a.topo.GlobalStores() {
		globals[g.Subtopology] = true
		if a.procs[g.Subtopology] == nil {
			problems = append(problems, fmt.Sprintf("global subtopology %q (store %q) has no processor", g.Subtopology, g.Name))
		}
	}
	for id := range a.procs {
		if !a.topo.HasSubtopology(id) && !globals[id] {
			problems = append(problems, fmt.Sprintf("a processor is given for subtopology %q, which the topology does not have", id))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("stream: %s (stream.Processors maps every subtopology ID to its processor)", strings.Join(problems, "; "))
	}
	return nil
}

// mapStores names the stores of each subtopology from its changelog topics
// (<application.id>-<store>-changelog) and checks the WithStores names.
func (a *App) mapStores() error {
	prefix := a.cfg.ApplicationID + "-"
	known := map[string]bool{}
	for _, st := range a.topo.Subtopologies() {
		m := map[string]string{}
		for _, cl := range st.StateChangelogTopics {
			name, hasPrefix := strings.CutPrefix(cl.Name, prefix)
			name, hasSuffix := strings.CutSuffix(name, "-changelog")
			if !hasPrefix || !hasSuffix || name == "" {
				return fmt.Errorf("stream: changelog topic %q of subtopology %s is not named <application.id>-<store>-changelog "+
					"(application.id %q): name it with topology.Names{AppID: …}.KeyValueChangelog(store)", cl.Name, st.ID, a.cfg.ApplicationID)
			}
			m[name] = cl.Name
			known[name] = true
			a.changelogs[cl.Name] = true
		}
		a.storesOf[st.ID] = m
	}
	for _, g := range a.topo.GlobalStores() {
		if known[g.Name] {
			return fmt.Errorf("stream: store %q is both a global store and a store of a subtopology", g.Name)
		}
		known[g.Name] = true
	}
	for n := range a.o.kinds {
		if n != "" && !known[n] {
			return fmt.Errorf("stream: WithStores names store %q, which no subtopology has (a changelog topic %s)", n, topology.Names{AppID: a.cfg.ApplicationID}.ChangelogTopic(n))
		}
	}
	return nil
}

// kindOf is the Kind of store name.
func (a *App) kindOf(name string) store.Kind {
	if k := a.o.kinds[name]; k != nil {
		return k
	}
	if k := a.o.kinds[""]; k != nil {
		return k
	}
	return store.Memory
}

func (a *App) persistent() bool {
	for _, g := range a.topo.GlobalStores() {
		if a.kindOf(g.Name).Persistent() {
			return true
		}
	}
	for _, m := range a.storesOf {
		for name := range m {
			if a.kindOf(name).Persistent() {
				return true
			}
		}
	}
	return false
}

// State is the App's state now: with several stream threads, the least advanced thread's
// (Rebalancing while any thread rebalances, Running when all run).
func (a *App) State() State { return State(a.proc.state.Load()) }

// setState moves this thread to state to, and the App with it.
func (a *App) setState(to State) {
	if State(a.state.Swap(int32(to))) == to {
		return
	}
	a.proc.refresh(a.log, a.o.listeners)
}

// fail records this thread's first fatal error and stops its loop, and the process's other
// threads (cleanly: their work is committed).
func (a *App) fail(err error) {
	if a.fatal.CompareAndSwap(nil, &err) {
		a.log.Error("stopping on a fatal error", "err", err)
	}
	if a.cancelRun != nil {
		a.cancelRun(err)
	}
	a.cancelFail(err)
	a.proc.fail(err)
}

// closingDirty reports whether the App stops on a fatal error after which its open work must not
// be committed: every fatal error but a group-wide shutdown request (a clean stop of every member).
func (a *App) closingDirty() bool {
	err := a.fatalErr()
	return err != nil && !errors.Is(err, ErrShutdownRequested)
}

func (a *App) fatalErr() error {
	if p := a.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// compressionCodec is kgo's codec for compression.type.
func compressionCodec(c config.Compression) kgo.CompressionCodec {
	switch c {
	case config.CompressionGzip:
		return kgo.GzipCompression()
	case config.CompressionSnappy:
		return kgo.SnappyCompression()
	case config.CompressionLz4:
		return kgo.Lz4Compression()
	case config.CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// build makes the client and the pieces: the client (and under exactly-once the transactional
// producer); the member, whose listener is the App (memberCalls); the committer bound to it; the
// consumer, which fetches what the App asks for.
func (a *App) build() error {
	opts, err := a.cfg.ClientOptions()
	if err != nil {
		return err
	}
	if a.cfg.ClientID == "" {
		opts = append(opts, kgo.ClientID(a.cfg.ApplicationID))
	}
	opts = append(opts,
		kgo.RecordPartitioner(a.router.Partitioner()),
		// Kafka's producer max.request.size (1 MiB): a record the topic accepts (max.message.bytes,
		// 1 MiB and 12 bytes by default) is not refused by the client first, as kgo's default batch
		// limit (1,000,012 bytes) would.
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerLinger(5*time.Millisecond),
		// compression.type: Kafka's producer compresses nothing unless told (kgo's default is snappy).
		kgo.ProducerBatchCompression(compressionCodec(a.cfg.Runtime.Compression)),
		// Bounded buffers: one fetch at a time of at most 256 KiB (128 KiB per partition), and at
		// most 16 MiB of records waiting to be produced. The fetch limit counts compressed bytes,
		// and every fetched record is held decoded (a kgo.Record each, its key and value in the
		// decompressed batch) until the whole batch is processed, so small compressible records
		// take many times the fetch size: a backlog of 30-byte records peaked at 174 MiB with 1 MiB
		// fetches, 110 MiB with 256 KiB, 88 MiB with 64 KiB (a Pebble count on a loaded machine).
		// 256 KiB keeps the next fetch arriving while one is processed for records up to a few
		// KiB. Kafka Streams' defaults (50 MiB fetches, 1000 records buffered per partition) are
		// what makes it heavy. An application may set others with WithClientOptions.
		kgo.MaxConcurrentFetches(1),
		kgo.FetchMaxBytes(256<<10),
		kgo.FetchMaxPartitionBytes(128<<10),
		kgo.FetchMaxWait(a.cfg.Runtime.Poll()*2),
		kgo.MaxBufferedBytes(16<<20),
		// No kgo.RecordDeliveryTimeout: kgo counts it from the record's timestamp, which is the
		// input's (as Kafka Streams forwards it), so reprocessing a backlog older than the timeout
		// would fail every write. Kafka's delivery.timeout.ms (2 minutes from the send) is the
		// context of each write instead (deliveryContext).
		// Transaction markers come back with the records, so positions move past them (consume
		// hands out everything else): a changelog ending with a marker finishes restoring.
		kgo.KeepControlRecords(),
		// A position out of range (its records deleted) is reported, not reset by the client: the
		// consumer moves an input to auto.offset.reset and a changelog to its first offset, as Kafka
		// Streams does; kgo's own reset would move both the same way.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	)
	if a.eos() {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	// The application's own client options come last, so that they win, on both clients.
	if a.cl, err = kgo.NewClient(append(slices.Clone(opts), a.o.client...)...); err != nil {
		return fmt.Errorf("stream: building the client: %w", err)
	}
	a.pcl.Store(a.cl)
	if a.eos() {
		// The transactional producer is a client of its own (as Kafka Streams' thread producer is
		// beside its consumer): when the transaction coordinator fences it, it is replaced without
		// touching the member or the consumer.
		a.popts = append(opts, kgo.TransactionalID(a.transactionalID()), kgo.TransactionTimeout(a.cfg.Runtime.TxnTimeout()),
			// A write refused with CONCURRENT_TRANSACTIONS (the first ones after a commit, while the
			// coordinator completes it) is retried by kgo after a metadata refresh, which waits out
			// the minimum metadata age (5 s by default): a fresh app stalled 5 s after its first
			// records. Kafka's producer retries after retry.backoff.ms.
			kgo.MetadataMinAge(txnMetadataMinAge))
		a.popts = append(a.popts, a.o.client...)
		pcl, err := kgo.NewClient(a.popts...)
		if err != nil {
			return fmt.Errorf("stream: building the transactional producer: %w", err)
		}
		a.pcl.Store(pcl)
	}
	// The member first: its listener is the App (its calls run on the loop, calls.go), and it
	// reports the task offsets of the stores the consumer feeds. The committer and the consumer
	// follow, bound to it.
	if a.offsets, err = taskoffsets.New(a.cl, a.topo, (*storePositions)(a)); err != nil {
		return err
	}
	mopts := []membership.Option{membership.WithListener((*memberCalls)(a)), membership.WithTaskOffsets(a.offsets), membership.WithLogger(a.log)}
	if len(a.o.hooks) > 0 {
		mopts = append(mopts, membership.WithHooks(a.o.hooks...))
	}
	if a.mgr, err = membership.New(a.cl, a.cfg, a.topo, mopts...); err != nil {
		return err
	}
	if a.commits, err = commit.New(a.cl, a.cfg, a.topo, commit.WithMember(a.mgr), commit.WithMetadata((*inputMeta)(a))); err != nil {
		return err
	}
	reset := kgo.NewOffset().AtStart()
	if a.cfg.Runtime.ResetLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	if a.cons, err = consume.New(a.cl, a.topo, a.commits, consume.WithResetOffset(reset), consume.WithLogger(a.log)); err != nil {
		return err
	}
	return nil
}

// storePositions is the App as the source of the task offsets the member reports (taskoffsets):
// where the consumer stands in the changelogs of the stores it feeds. The member asks only once
// it started, after the consumer was built.
type storePositions App

// ChangelogPosition is the consumer's (taskoffsets.Stores).
func (s *storePositions) ChangelogPosition(tp tasks.TopicPartition) (next, end int64) {
	return s.cons.ChangelogPosition(tp)
}

// Processing is the consumer's (taskoffsets.Stores).
func (s *storePositions) Processing(id tasks.ID) bool { return s.cons.Processing(id) }

// openStateDir takes state.dir/<application.id> for this process (R6) when stores are persistent,
// under exactly-once (the process ID, and so the transactional.id, must survive a restart) or when
// state.dir is set. Without state.dir they live under the system's temporary directory in
// kafka-streams/, as in Kafka Streams.
func (a *App) openStateDir() error {
	if a.cfg.StateDir == "" && !a.persistent() && !a.eos() {
		return nil // nothing to keep: the process ID is a new one at every start
	}
	if a.cfg.StateDir == "" {
		a.cfg.StateDir = filepath.Join(os.TempDir(), "kafka-streams")
	}
	a.stateDir = filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID)
	if err := os.MkdirAll(a.stateDir, 0o755); err != nil {
		return &config.Error{Keys: []config.KeyError{{Key: config.KeyStateDir, Value: a.cfg.StateDir,
			Reason: fmt.Sprintf("cannot create %s: %v (state.dir must be a directory this process can write)", a.stateDir, err), Err: err}}}
	}
	l, err := lockDir(a.stateDir)
	if err != nil {
		return err
	}
	a.lock = l
	a.scanOldTasks()
	return nil
}

// stateOf is this thread's own state (the App's is State).
func (a *App) stateOf() State { return State(a.state.Load()) }

// Run runs the application until ctx ends (a clean stop: the tasks are committed, the member
// leaves, Run returns nil) or a fatal error (returned: a processor's error under LogAndFail, a write
// that failed, a store that failed, the member's fatal error, ErrShutdownRequested). With
// num.stream.threads above 1 it runs that many stream threads, each a member of the group; a fatal
// error in one stops the others cleanly, and Run returns it. Run may be called once.
func (a *App) Run(ctx context.Context) (err error) {
	if !a.ran.CompareAndSwap(false, true) {
		return errors.New("stream: Run was already called")
	}
	p := a.proc
	defer func() {
		p.stateMu.Lock()
		defer p.stateMu.Unlock()
		if err != nil {
			p.set(a.log, a.o.listeners, Error)
		} else {
			p.set(a.log, a.o.listeners, NotRunning)
		}
	}()
	if err := a.openStateDir(); err != nil {
		return err
	}
	defer a.lock.release()
	pid, err := a.cfg.ResolveProcessID()
	if err != nil {
		return err
	}
	a.cfg.ProcessID = pid
	runCtx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Canceled) })
	defer stop()
	n := a.cfg.Runtime.Threads()
	a.nameThread(n > 1)
	for i := 2; i <= n; i++ {
		a.sibling(i)
	}
	p.publish()
	p.cancel = cancel
	for _, t := range p.threads {
		t.runCtx, t.cancelRun = context.WithCancelCause(runCtx)
		// Rebalancing from the start, as Kafka Streams' start() moves to it at once: a thread still
		// building its clients (or the global stores restoring) does not hold the App back in CREATED.
		t.setState(Rebalancing)
	}
	if g := p.global; g != nil {
		// Kafka Streams restores its global stores before its stream threads start: no member
		// joins the group before they hold their topics.
		if err := g.start(runCtx); err != nil {
			if ferr := p.firstErr(); ferr != nil {
				return ferr
			}
			if ctx.Err() != nil {
				return nil // stopped while restoring: nothing else was started
			}
			return err
		}
		defer func() {
			cancel(nil)
			if cerr := g.stop(); cerr != nil && err == nil {
				err = fmt.Errorf("stream: the application stopped, but a global store failed to close: %w", cerr)
			}
		}()
	}
	defer a.stopped.Store(true) // queries say ErrNotRunning from now on
	errs := make([]error, len(p.threads))
	var wg sync.WaitGroup
	for i, t := range p.threads[1:] {
		wg.Go(func() { errs[i+1] = t.runThread() })
	}
	errs[0] = a.runThread()
	wg.Wait()
	if ferr := p.firstErr(); ferr != nil {
		return ferr
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	a.log.Info("stopped cleanly")
	return nil
}

// runThread runs one stream thread until its run context ends: it builds the thread's clients and
// member, processes, and at the end revokes its tasks (committing them unless it failed), leaves
// the group and closes its stores.
func (a *App) runThread() error {
	defer a.cancelRun(nil)
	if err := a.build(); err != nil {
		if p := a.pcl.Load(); p != nil && p != a.cl {
			p.Close()
		}
		if a.cl != nil {
			consumerclose.Close(a.cl)
		}
		a.fail(err)
		a.setState(PendingError)
		return err
	}
	defer consumerclose.Close(a.cl)
	defer func() {
		if p := a.pcl.Load(); p != a.cl {
			p.Close()
		}
	}()
	defer a.offsets.Close()
	defer a.releaseDelivery()
	runCtx := a.runCtx

	if a.eos() {
		if err := a.initProducer(runCtx); err != nil {
			if runCtx.Err() != nil && a.fatalErr() == nil {
				a.setState(PendingShutdown)
				return nil // stopped while waiting for the cluster: nothing was started
			}
			a.fail(err)
			a.setState(PendingError)
			return err
		}
	}
	if a.eos() && a == a.proc.threads[0] {
		// Once per App: does the cluster keep exactly-once's results through a broker's failure?
		var checked sync.WaitGroup
		checked.Go(func() { a.checkReplication(runCtx) })
		defer func() { a.cancelRun(nil); checked.Wait() }()
	}
	events := a.mgr.Events()
	// The member's calls run on this goroutine from its start: the loop serves them.
	a.startServing()
	if err := a.mgr.Start(runCtx); err != nil {
		a.stopServing()
		a.fail(err)
		a.setState(PendingError)
		return err
	}
	a.setState(Rebalancing)
	a.log.Info("started", "group", a.cfg.ApplicationID, "topology_id", a.topo.ID().String())
	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		a.watch(events)
	}()
	a.mu.Lock()
	a.mach.Step(a.now(), sm.Started{})
	a.mu.Unlock()
	a.loop(runCtx)
	a.stopServing()  // from here the member's calls (Close's revocation) run on its own goroutine
	a.lags.wg.Wait() // a listing of input ends in flight ends with runCtx

	if a.fatalErr() != nil {
		a.setState(PendingError)
	} else {
		a.setState(PendingShutdown)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), closeBound)
	defer cancel()
	cerr := a.mgr.Close(closeCtx) // revokes every active task: their offsets are committed (when nothing failed)
	<-eventsDone
	a.mu.Lock()
	if a.mach.TxnOpen() { // the last commit failed (or Close gave up): nothing of it may become visible
		if err := a.abortOpen(closeCtx); err != nil {
			a.log.Warn("aborting the open transaction at close failed; the broker aborts it after transaction.timeout.ms", "err", err)
		}
	}
	a.mu.Unlock()
	serr := a.closeAllStores()
	if ferr := a.fatalErr(); ferr != nil {
		return ferr
	}
	if merr := a.mgr.Err(); merr != nil {
		return merr
	}
	if cerr != nil {
		return fmt.Errorf("stream: closing the member: %w", cerr)
	}
	if serr != nil {
		return fmt.Errorf("stream: the application stopped, but a store failed to close (its next start restores it from the changelog): %w", serr)
	}
	return nil
}

// watch follows the member's events: fatal errors and shutdown requests stop the application;
// endpoints are kept for queries; state changes move the App's state.
func (a *App) watch(events <-chan membership.Event) {
	for ev := range events {
		switch ev.Kind {
		case membership.EventFatal:
			a.fail(ev.Err)
		case membership.EventShutdownRequested:
			a.fail(ErrShutdownRequested)
		case membership.EventMissingSourceTopicsTimeout:
			// Kafka Streams fails with a MissingSourceTopicException once the source topics have been
			// missing for two heartbeat intervals (the member measures them).
			a.fail(&StatusError{Kind: ev.Kind, Topics: ev.Topics, Err: ev.Err})
		case membership.EventIncorrectlyPartitionedTopics:
			// Kafka Streams throws a TopologyException at once: no assignment can come until the
			// topics are fixed.
			a.fail(&StatusError{Kind: ev.Kind, Topics: ev.Topics, Err: statusErr(ev)})
		case membership.EventEndpointsChanged:
			eps := ev.Endpoints
			a.endpoints.Store(&eps)
		case membership.EventStateChanged:
			if ev.State != membership.Stable && a.running() {
				a.setState(Rebalancing)
			}
		}
	}
}

// StatusError is a status of the group that stops the application, as it stops Kafka Streams:
// source topics missing for two heartbeat intervals (EventMissingSourceTopicsTimeout; Kafka
// Streams' MissingSourceTopicException), or incorrectly partitioned topics
// (EventIncorrectlyPartitionedTopics; its TopologyException).
type StatusError struct {
	Kind   membership.EventKind
	Topics []string
	Err    error
}

func (e *StatusError) Error() string {
	what := "the group reported " + e.Kind.String()
	switch e.Kind {
	case membership.EventMissingSourceTopicsTimeout:
		what = fmt.Sprintf("source topics %v are missing: create them (with the partition counts the topology needs), then start the application again", e.Topics)
	case membership.EventIncorrectlyPartitionedTopics:
		what = fmt.Sprintf("topics %v are partitioned incorrectly (copartitioned topics must have the same partition count, "+
			"and an internal topic the count its subtopology's inputs give it): fix them (an internal topic can be deleted: "+
			"the broker creates it again), then start the application again", e.Topics)
	}
	if e.Err != nil {
		return fmt.Sprintf("stream: %s (%v)", what, e.Err)
	}
	return "stream: " + what
}

// Unwrap returns the member's error, if any.
func (e *StatusError) Unwrap() error { return e.Err }

// statusErr is the broker's detail of a status event as an error, if it has one.
func statusErr(ev membership.Event) error {
	if ev.Err != nil {
		return ev.Err
	}
	if ev.Status != nil && ev.Status.Detail != "" {
		return errors.New(ev.Status.Detail)
	}
	return nil
}

// running reports whether this thread is in one of Run's working states.
func (a *App) running() bool {
	switch a.stateOf() {
	case Rebalancing, Restoring, Running:
		return true
	}
	return false
}

// Stats are the member's statistics (heartbeats, rebalances, callbacks, tasks), for metrics; the
// zero value before Run built the member. With several stream threads, they are thread 1's member's.
func (a *App) Stats() membership.Stats {
	if a.mgr == nil {
		return membership.Stats{}
	}
	return a.mgr.Stats()
}

// deliveryLook is how many writes share one look at the clock in deliveryContext (a clock read per
// write cost about 5% of a count's CPU).
const deliveryLook = 64

// deliveryContext returns the context writes go out with: its deadline is between half of
// deliveryTimeout and all of it from when the clock was last looked at (at most deliveryLook writes
// ago), so every write gets about half at least. One context serves every write for a minute (no
// timer per record); the one before the previous is released at each renewal, when its deadline
// has passed.
// Called by send, with a.mu held (every write is the loop's): no lock of its own.
func (a *App) deliveryContext() context.Context {
	a.deliverWrites++
	if a.deliverCtx != nil && a.deliverWrites%deliveryLook != 0 {
		return a.deliverCtx
	}
	deliveryTimeout := a.cfg.Runtime.Delivery()
	if now := time.Now(); a.deliverCtx == nil || a.deliverBy.Sub(now) < deliveryTimeout/2 {
		if old := a.deliverCancels[0]; old != nil {
			old()
		}
		a.deliverBy = now.Add(deliveryTimeout)
		var cancel context.CancelFunc
		a.deliverCtx, cancel = context.WithDeadline(context.Background(), a.deliverBy)
		a.deliverCancels = [2]context.CancelFunc{a.deliverCancels[1], cancel}
		clear(a.deliverPrefixes)
	}
	return a.deliverCtx
}

// maxKeyPrefix bounds the key prefixes keyPrefixContext keeps a context for: inner keys of windowed
// records (ids, names, words) are shorter; a longer one gets a context of its own per record.
const maxKeyPrefix = 256

// keyPrefixContext is deliveryContext placing a record by murmur2 of the first n bytes of its key
// (tasks.WithKeyPrefix), one context per length for every write until the delivery context is
// renewed, rather than one per record. Called with a.mu held, as deliveryContext.
func (a *App) keyPrefixContext(n int) context.Context {
	ctx := a.deliveryContext()
	if n >= maxKeyPrefix {
		return tasks.WithKeyPrefix(ctx, n)
	}
	if n >= len(a.deliverPrefixes) {
		a.deliverPrefixes = append(a.deliverPrefixes, make([]context.Context, n+1-len(a.deliverPrefixes))...)
	}
	if a.deliverPrefixes[n] == nil {
		a.deliverPrefixes[n] = tasks.WithKeyPrefix(ctx, n)
	}
	return a.deliverPrefixes[n]
}

// releaseDelivery releases the delivery contexts when Run returns (every write is done then).
func (a *App) releaseDelivery() {
	for _, cancel := range a.deliverCancels {
		if cancel != nil {
			cancel()
		}
	}
}

// Member returns the member's ID and epoch, as membership.Manager.Member does ("" and 0 before Run
// built the member; thread 1's member with several stream threads). Call it from a hook (WithHooks) or after Run started the member: a tool that
// relates the App to the broker's description of the group (the chaos suite) needs the ID.
func (a *App) Member() (memberID string, epoch int32) {
	if a.mgr == nil {
		return "", 0
	}
	return a.mgr.Member()
}
