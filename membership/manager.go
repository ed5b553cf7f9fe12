package membership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Listener is told about the tasks the application owns. Callbacks run one at a time, in order, on
// a goroutine of their own (never the heartbeat loop), each with its own copy of the data. An error
// (or a panic) from OnTasksRevoked or OnTasksAssigned is reported as an EventError and the
// reconciliation is retried after backoff; the member keeps its previous assignment meanwhile. ctx
// is cancelled when the member is stopped by force (Close's ctx ended).
type Listener interface {
	// OnTasksRevoked: stop processing these active tasks and commit their progress. Called before any
	// new assignment, and only for tasks the application holds.
	OnTasksRevoked(ctx context.Context, revoked tasks.Set) error
	// OnTasksAssigned hands over the whole assignment the application now owns (not a delta), and
	// whether the group is ready (no missing or mis-partitioned topics, no delayed assignment).
	OnTasksAssigned(ctx context.Context, assignment tasks.Assignment, groupReady bool) error
	// OnAllTasksLost: the tasks are gone without a clean hand-over (fenced, fatal error); do not
	// commit for them.
	OnAllTasksLost(ctx context.Context, lost tasks.Assignment) error
}

// TaskOffsetsProvider gives the changelog positions of the member's tasks (Kafka 4.4+ brokers use
// them to place warm-up tasks). offsets and ends are, per task, the sums of the changelog offsets and
// end offsets (tasks.SumOffsets). It is called on a goroutine of its own, only when offsets may be
// sent; the heartbeat waits for it at most 250 ms and goes without
// offsets after that, so it should be quick (read a snapshot).
type TaskOffsetsProvider interface {
	TaskOffsets(owned tasks.Assignment) (offsets, ends tasks.Offsets)
}

// Transport is what the Manager needs from the network. The default sends through the user's
// *kgo.Client to the group coordinator; tests and applications with their own routing may supply
// another with WithTransport. Every method is called from a goroutine of its own and must return
// once ctx ends.
type Transport interface {
	// Heartbeat sends req once and returns the broker's answer as it is (error code included), or
	// the error that kept it from arriving. It must not retry: the member decides.
	Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)
	// Leave sends a leave heartbeat, retrying coordinator moves until answered or ctx ends.
	Leave(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) error
	// Describe describes the group (StreamsGroupDescribe) at its coordinator.
	Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error)
	// Capabilities asks the cluster what it supports (ApiVersions), once.
	Capabilities(ctx context.Context) (heartbeat.Capabilities, error)
	// GroupConfigs describes the group's dynamic configs named (DescribeConfigs, resource type
	// GROUP), once, and returns the answer as it is (the session guard reads
	// streams.session.timeout.ms from it).
	GroupConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error)
	// CoordinatorConfigs describes the broker configs named of the group's coordinator
	// (DescribeConfigs of resource type BROKER), once, and returns the answer as it is.
	CoordinatorConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error)
}

type options struct {
	listener  Listener
	offsets   TaskOffsetsProvider
	logger    *slog.Logger
	memberID  string
	transport Transport
	hooks     []Hook
}

// Option configures a Manager.
type Option func(*options)

// WithListener sets the application's listener (default: none, tasks are only reported as events).
func WithListener(l Listener) Option { return func(o *options) { o.listener = l } }

// WithTaskOffsets sets where task offsets come from (default: none are reported).
func WithTaskOffsets(p TaskOffsetsProvider) Option { return func(o *options) { o.offsets = p } }

// WithLogger sets the logger (default slog.Default()). Lines carry group, member, epoch and state.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMemberID fixes the member ID (default: a new random UUID). It is kept across rejoins.
func WithMemberID(id string) Option { return func(o *options) { o.memberID = id } }

// WithTransport replaces the network: the member talks to t instead of the cluster behind the
// *kgo.Client (which may then be nil).
func WithTransport(t Transport) Option { return func(o *options) { o.transport = t } }

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

	events  *eventQueue
	inputs  chan machine.Input
	runCtx  context.Context
	cancel  context.CancelFunc
	netWG   sync.WaitGroup // the loop and network goroutines
	userWG  sync.WaitGroup // goroutines running application code
	started sync.Once
	doneCh  chan struct{}

	mu   sync.Mutex
	snap Snapshot
	err  error
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
		cfg:    cfg.Clone(),
		topo:   topo,
		o:      o,
		inputs: make(chan machine.Input, 16),
		doneCh: make(chan struct{}),
		events: newEventQueue(),
	}
	m.log = o.logger.With("group", cfg.ApplicationID, "member", o.memberID)
	m.machine = machine.New(machine.Config{
		Join:               member,
		Backoff:            backoff,
		TaskOffsetInterval: cfg.TaskOffsetInterval,
		ReportsOffsets:     o.offsets != nil,
		LeaveBudget:        min(cfg.RequestTimeout, machine.DefaultLeaveBudget),
		SessionTimeout:     cfg.SessionTimeout,
	})
	m.snap = m.machine.Snapshot()
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

// loop feeds the machine its inputs and carries out its actions until it stops.
func (m *Manager) loop() {
	defer m.netWG.Done()
	defer close(m.doneCh)
	defer m.events.close()
	defer m.cancel()
	m.step(machine.Start{})
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !m.stopped {
		wait := time.Hour
		if next := m.machine.Next(); !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
			m.step(machine.Tick{})
		case in := <-m.inputs:
			m.step(in)
		case <-m.runCtx.Done():
			m.step(machine.Stop{})
		}
	}
}

// step feeds one input to the machine, carries out the actions and publishes the new snapshot.
func (m *Manager) step(in machine.Input) {
	now := time.Now()
	m.metrics.input(now, in)
	actions := m.machine.Step(now, in)
	// Publish the new snapshot before carrying out the actions: a callback started by them must
	// read the epoch and ownership the machine has now, not the previous ones.
	snap := m.machine.Snapshot()
	m.mu.Lock()
	m.snap = snap
	m.mu.Unlock()
	for _, a := range actions {
		m.metrics.action(now, a)
		m.execute(a)
	}
	m.metrics.observe(snap)
}

// execute carries out one action; results come back through m.inputs.
func (m *Manager) execute(a machine.Action) {
	switch a := a.(type) {
	case machine.ProbeCapabilities:
		m.goNet(func(ctx context.Context) machine.Input {
			caps, err := m.o.transport.Capabilities(ctx)
			return machine.CapabilitiesKnown{Caps: caps, Err: err}
		})
	case machine.SendHeartbeat:
		m.goNet(func(ctx context.Context) machine.Input {
			resp, err := m.o.transport.Heartbeat(ctx, a.Request)
			return machine.HeartbeatDone{Seq: a.Seq, Response: resp, Err: err}
		})
	case machine.SendLeave:
		m.goNet(func(ctx context.Context) machine.Input {
			ctx, cancel := context.WithTimeout(ctx, a.Budget)
			defer cancel()
			return machine.LeaveDone{Err: m.o.transport.Leave(ctx, a.Request)}
		})
	case machine.Describe:
		m.goNet(func(ctx context.Context) machine.Input {
			ctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
			defer cancel()
			g, err := m.o.transport.Describe(ctx)
			return machine.Described{Group: g, Err: err}
		})
	case machine.DescribeSession:
		m.goNet(func(ctx context.Context) machine.Input {
			ctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
			defer cancel()
			if a.BrokerDefault {
				resp, err := m.o.transport.CoordinatorConfigs(ctx, machine.KeyBrokerSessionTimeout)
				return machine.SessionDescribed{Response: resp, Err: err}
			}
			resp, err := m.o.transport.GroupConfigs(ctx, machine.KeyGroupSessionTimeout)
			return machine.SessionDescribed{Response: resp, Err: err}
		})
	case machine.CollectOffsets:
		m.goUser(func(ctx context.Context) machine.Input {
			offs, ends := m.o.offsets.TaskOffsets(a.Owned)
			return machine.OffsetsCollected{Seq: a.Seq, Offsets: offs, Ends: ends}
		}, func(err error) machine.Input { return machine.OffsetsCollected{Seq: a.Seq} })
	case machine.Invoke:
		m.logInvoke(a)
		m.goUser(func(ctx context.Context) machine.Input {
			return machine.CallbackDone{Seq: a.Seq, Err: m.call(ctx, a)}
		}, func(err error) machine.Input { return machine.CallbackDone{Seq: a.Seq, Err: err} })
	case machine.Emit:
		m.publish(a.Event)
	case machine.Log:
		m.log.Log(context.Background(), a.Level, a.Msg,
			append(a.Attrs, "epoch", m.machine.Epoch(), "state", m.machine.State().String())...)
	case machine.Stopped:
		m.stopped = true
		m.mu.Lock()
		m.err = a.Err
		m.mu.Unlock()
	}
}

// goNet runs a network action on its own goroutine and feeds its result back.
func (m *Manager) goNet(f func(ctx context.Context) machine.Input) {
	m.netWG.Add(1)
	go func() {
		defer m.netWG.Done()
		m.deliver(f(m.runCtx))
	}()
}

// goUser runs application code on its own goroutine; a panic becomes onPanic's input.
func (m *Manager) goUser(f func(ctx context.Context) machine.Input, onPanic func(error) machine.Input) {
	m.userWG.Add(1)
	go func() {
		defer m.userWG.Done()
		var in machine.Input
		func() {
			defer func() {
				if p := recover(); p != nil {
					in = onPanic(fmt.Errorf("panic: %v", p))
				}
			}()
			in = f(m.runCtx)
		}()
		m.deliver(in)
	}()
}

func (m *Manager) deliver(in machine.Input) {
	select {
	case m.inputs <- in:
	case <-m.runCtx.Done():
	}
}

// call runs one listener callback.
func (m *Manager) call(ctx context.Context, inv machine.Invoke) error {
	l := m.o.listener
	if l == nil {
		return nil
	}
	switch inv.Kind {
	case CallbackRevoked:
		return l.OnTasksRevoked(ctx, inv.Tasks)
	case CallbackAssigned:
		return l.OnTasksAssigned(ctx, inv.Assignment, inv.Ready)
	case CallbackLost:
		return l.OnAllTasksLost(ctx, inv.Assignment)
	}
	return nil
}

func (m *Manager) logInvoke(a machine.Invoke) {
	switch a.Kind {
	case CallbackRevoked:
		m.log.Info("revoking tasks", "tasks", a.Tasks.String(), "epoch", m.machine.Epoch())
	case CallbackLost:
		m.log.Info("tasks lost", "assignment", a.Assignment.String(), "epoch", m.machine.Epoch())
	default:
		m.log.Debug("assigning tasks", "assignment", a.Assignment.String(), "ready", a.Ready)
	}
}

func (m *Manager) publish(e Event) {
	attrs := []any{"event", e.Kind.String(), "epoch", e.Epoch, "state", e.State.String()}
	switch e.Kind {
	case EventFatal:
		m.log.Error("member stopped", append(attrs, "err", e.Err)...)
	case EventStateChanged, EventAssigned, EventGroupReadyChanged, EventLeft, EventShutdownRequested, EventStatusCleared:
		m.log.Info(e.String(), attrs...)
	case EventEndpointsChanged:
		m.log.Debug(e.String(), attrs...)
	default:
		m.log.Warn(e.String(), attrs...)
	}
	m.events.push(e)
}
