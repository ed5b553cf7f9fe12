package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Manager makes this process a member of a streams group. It runs the state machine on one
// background goroutine and only carries out its actions: every protocol decision is the machine's.
//
// Goroutines: the loop (owns the machine); one short-lived goroutine per network action
// (heartbeat, leave, describe, capability probe); one per listener callback (the machine hands out
// one at a time) and per offsets collection; and the event pump. All of them are gone when Close
// returns, except a callback or offsets provider that ignores its ctx and is still running when
// Close's ctx ends: it is left to finish in the background and its result is discarded.
type Manager struct {
	cfg  config.Config
	topo *topology.Topology
	o    options
	log  *slog.Logger

	machine *machine.Machine // owned by the loop goroutine
	stopped bool             // the machine said Stopped (loop goroutine only)
	metrics *metrics         // measures on the loop goroutine; read by Stats

	events *eventQueue
	inputs chan machine.Input
	runCtx context.Context
	cancel context.CancelFunc
	// cancels holds the cancel function of the running callback's context, by Invoke.Seq (loop
	// goroutine only): the machine cancels it with CancelCallback.
	cancels map[uint64]context.CancelFunc
	netWG   sync.WaitGroup // the loop and network goroutines
	userWG  sync.WaitGroup // goroutines running application code
	started sync.Once
	doneCh  chan struct{}

	// lastPoll is when the application last called Poll (UnixNano); pollSignal says the next Poll
	// must tell the loop (the first one, and one in Stale).
	lastPoll   atomic.Int64
	pollSignal atomic.Bool

	mu   sync.Mutex
	snap Snapshot
	err  error
	// changed is closed (and forgotten) when the member's ID, epoch or state next changes; made on
	// demand by Changed.
	changed chan struct{}
}

// New checks the configuration and the topology and returns a Manager that has not started. It
// makes no network I/O.
func New(cl *kgo.Client, cfg config.Config, topo *topology.Topology, opts ...Option) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if topo == nil {
		return nil, errors.New("membership: a topology is required")
	}
	if err := topo.CheckJoinable(); err != nil {
		return nil, err
	}
	// replication.factor: what the member sends (and so its topology ID) is the topology with the
	// key applied, as Kafka Streams sends it.
	topo = topo.WithReplicationFactor(cfg.ReplicationFactor)
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	backoff := heartbeat.Backoff{Min: cfg.RetryBackoff, Max: cfg.RetryBackoffMax, Rand: rand.Float64}
	if o.transport == nil {
		if cl == nil {
			return nil, errors.New("membership: a *kgo.Client is required")
		}
		o.transport = transport.New(cl, cfg.ApplicationID, cfg.RequestTimeout, backoff)
	}
	if o.memberID == "" {
		o.memberID = uuid.NewString()
	}
	pid, err := cfg.ResolveProcessID()
	if err != nil {
		return nil, err
	}
	member := heartbeat.JoinInfo{
		Group:            cfg.ApplicationID,
		MemberID:         o.memberID,
		InstanceID:       cfg.GroupInstanceID,
		ProcessID:        pid,
		Rack:             cfg.ClientRack,
		RebalanceTimeout: int32(cfg.MaxPollInterval.Milliseconds()),
		ClientTags:       cfg.ClientTags,
		Topology:         topo,
		TopologyEpoch:    cfg.TopologyEpoch,
	}
	member.EndpointHost, member.EndpointPort, member.HasEndpoint = cfg.Endpoint()
	m := &Manager{
		cfg:     cfg.Clone(),
		topo:    topo,
		o:       o,
		inputs:  make(chan machine.Input, 16),
		doneCh:  make(chan struct{}),
		events:  newEventQueue(),
		cancels: make(map[uint64]context.CancelFunc),
	}
	m.log = o.logger.With("group", cfg.ApplicationID, "member", o.memberID)
	m.machine = machine.New(machine.Config{
		Join:               member,
		Backoff:            backoff,
		TaskOffsetInterval: cfg.TaskOffsetInterval,
		ReportsOffsets:     o.offsets != nil,
		RequestTimeout:     cfg.RequestTimeout,
	})
	m.snap = m.machine.Snapshot()
	m.pollSignal.Store(true)
	m.metrics = newMetrics(o.hooks, o.transport, m.snap)
	return m, nil
}

// Start launches the background goroutine and returns at once; joining happens in the background
// and shows in Events. ctx bounds only the start itself; the member runs until Close.
func (m *Manager) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	started := false
	m.started.Do(func() {
		started = true
		m.runCtx, m.cancel = context.WithCancel(context.Background())
		m.events.start()
		m.netWG.Add(1)
		go m.loop()
	})
	if !started {
		return errors.New("membership: Start called twice, or after Close")
	}
	return nil
}

// Events returns the channel of events. Call it before Start to see every event; read it until it
// closes, which happens after the member stopped and every event was delivered (Close waits for that
// until its ctx ends). Events are queued without bound, so a slow reader loses none and never slows
// the member. An application that never calls Events gets the events only in the log.
func (m *Manager) Events() <-chan Event {
	m.events.subscribed.Store(true)
	return m.events.out
}

// Assignment returns what the application holds now and whether the group is ready.
func (m *Manager) Assignment() (tasks.Assignment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.Owned, m.snap.Ready
}

// Member returns the member ID and epoch, for OffsetCommit and OffsetFetch. It and Assignment each
// read the latest snapshot on their own, so the two calls may see different moments: a commit that
// needs the epoch and the owned tasks together reads both from one Snapshot.
func (m *Manager) Member() (memberID string, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.MemberID, m.snap.Epoch
}

// State returns the member's state.
func (m *Manager) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.State
}

// Err returns the fatal error that stopped the member, or nil.
func (m *Manager) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Done is closed when the member has stopped (after a leave, a fatal error or a forced stop).
func (m *Manager) Done() <-chan struct{} { return m.doneCh }

// Poll tells the member that the application's processing loop is alive, as Kafka's poll() does
// for a Java consumer: the stream runtime calls it once per loop iteration, and a hand-written
// application may call it from its own loop. It is cheap (an atomic store; it reaches the member's
// goroutine only the first time and after the timer expired) and never blocks.
//
// Once the application has called Poll, the member enforces max.poll.interval.ms as Java's
// onPollTimerExpired does: when no Poll came for that long, the tasks are lost (OnAllTasksLost),
// the member leaves the group (epoch -1, or -2 for a static member), reports
// EventPollTimerExpired and waits in Stale; the next Poll rejoins at epoch 0. An application that
// never calls Poll keeps its tasks however long its processing takes (only the broker's rebalance
// timeout bounds a revocation).
func (m *Manager) Poll() {
	m.lastPoll.Store(time.Now().UnixNano())
	if m.pollSignal.Load() && m.pollSignal.CompareAndSwap(true, false) {
		select {
		case m.inputs <- machine.Polled{At: time.Now()}:
		default:
			m.pollSignal.Store(true) // the loop is busy: the next Poll tells it
		}
	}
}

// RequestShutdown asks every member of the group to shut down (the group reports
// SHUTDOWN_APPLICATION to all of them, this one included). The member keeps running until Close.
func (m *Manager) RequestShutdown() { m.command(context.Background(), machine.RequestShutdown{}) }

// command hands an application request to the loop; false when the member has stopped or ctx ended.
func (m *Manager) command(ctx context.Context, in machine.Input) bool {
	select {
	case m.inputs <- in:
		return true
	case <-m.doneCh:
	case <-ctx.Done():
	}
	return false
}

// Close leaves the group and stops the member; it is CloseWith(ctx, CloseDefault).
func (m *Manager) Close(ctx context.Context) error { return m.CloseWith(ctx, CloseDefault) }

// CloseWith revokes the held tasks (OnTasksRevoked), leaves the group as mode says, and stops the
// member. The leave heartbeat is skipped when the coordinator is not known, and takes at most
// min(request.timeout.ms, 5 s); the broker removes a member whose leave did not arrive when its
// session times out. ctx bounds all of it: when ctx ends first the member is stopped by force (the
// listener's ctx is cancelled) and ctx's error is returned. After a fatal error CloseWith returns at
// once. No goroutine of the member is left when it returns, except application code that ignores
// its ctx (see Manager).
func (m *Manager) CloseWith(ctx context.Context, mode CloseMode) error {
	notStarted := false
	m.started.Do(func() {
		notStarted = true
		close(m.doneCh)
		m.events.start()
		m.events.close()
	})
	if notStarted {
		return m.waitEvents(ctx, nil)
	}
	var err error
	if m.command(ctx, machine.Close{Mode: mode}) {
		m.log.Info("closing", "mode", mode.String())
	}
	select {
	case <-m.doneCh:
	case <-ctx.Done():
		err = fmt.Errorf("membership: close did not finish: %w", ctx.Err())
	}
	m.cancel() // ends the network goroutines and tells the application's code to stop
	m.netWG.Wait()
	user := make(chan struct{})
	go func() { m.userWG.Wait(); close(user) }()
	select {
	case <-user:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("membership: closed, but a listener callback is still running: %w", ctx.Err())
		}
	}
	return m.waitEvents(ctx, err)
}

// waitEvents waits until every queued event was read, or ctx ends.
func (m *Manager) waitEvents(ctx context.Context, err error) error {
	m.events.close()
	select {
	case <-m.events.finished:
	case <-ctx.Done():
		m.events.drop()
		<-m.events.finished
		if err == nil {
			err = fmt.Errorf("membership: closed, but events were left unread: %w", ctx.Err())
		}
	}
	return err
}
