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
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Listener is told about the tasks the application owns. Callbacks run one at a time, in order, on
// a goroutine of their own (never the heartbeat loop), each with its own copy of the data. An error
// (or a panic) from OnTasksRevoked or OnTasksAssigned is reported as an EventError and the
// reconciliation is retried; the member keeps its previous assignment meanwhile. ctx is cancelled
// when the member is stopped by force.
type Listener interface {
	// OnTasksRevoked: stop processing these active tasks and commit their progress. Called before any
	// new assignment.
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
// end offsets (tasks.SumOffsets). It is called on the heartbeat loop only when offsets may be sent,
// so it must be quick (read a snapshot).
type TaskOffsetsProvider interface {
	TaskOffsets(owned tasks.Assignment) (offsets, ends tasks.Offsets)
}

// Transport is what the Manager needs from the network; *heartbeat.Transport is the real one.
type Transport interface {
	Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)
	Leave(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, backoff heartbeat.Backoff) error
	Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error)
	Capabilities(ctx context.Context) (heartbeat.Capabilities, error)
}

type options struct {
	listener  Listener
	offsets   TaskOffsetsProvider
	logger    *slog.Logger
	memberID  string
	transport Transport
	clock     func() time.Time
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

// WithTransport replaces the network (for tests that script broker answers).
func WithTransport(t Transport) Option { return func(o *options) { o.transport = t } }

// Manager makes this process a member of a streams group. It runs the state machine on one
// background goroutine; see the package documentation.
type Manager struct {
	cfg  config.Config
	topo *topology.Topology
	o    options
	log  *slog.Logger

	machine *Machine
	backoff heartbeat.Backoff

	events *eventQueue
	cbs    *callbackRunner

	hbResults chan hbResult
	cmds      chan command
	runCtx    context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	startOnce sync.Once
	doneCh    chan struct{}

	shutdownPending bool // RequestShutdown before the first heartbeat (loop goroutine only)

	mu       sync.Mutex
	snap     snapshot
	err      error
	mismatch *TopologyMismatch // last description of a topology mismatch
}

type snapshot struct {
	state    State
	epoch    int32
	owned    tasks.Assignment
	ready    bool
	memberID string
}

type hbResult struct {
	resp     *heartbeat.Response
	err      error
	mismatch *TopologyMismatch
}

type command struct {
	shutdown bool
	leave    *CloseMode
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
	o := options{logger: slog.Default(), clock: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.transport == nil {
		if cl == nil {
			return nil, errors.New("membership: a *kgo.Client is required")
		}
		o.transport = heartbeat.NewTransport(cl, cfg.ApplicationID, cfg.RequestTimeout)
	}
	if o.memberID == "" {
		o.memberID = uuid.NewString()
	}
	pid, err := cfg.ResolveProcessID()
	if err != nil {
		return nil, err
	}
	member := heartbeat.Member{
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
		cfg:       cfg.Clone(),
		topo:      topo,
		o:         o,
		hbResults: make(chan hbResult, 1),
		cmds:      make(chan command, 4),
		doneCh:    make(chan struct{}),
	}
	m.log = o.logger.With("group", cfg.ApplicationID, "member", o.memberID)
	m.backoff = heartbeat.Backoff{Min: cfg.RetryBackoff, Max: cfg.RetryBackoffMax, Rand: rand.Float64}
	m.machine = NewMachine(MachineConfig{Member: member, Backoff: m.backoff, TaskOffsetInterval: cfg.TaskOffsetInterval})
	m.snap = snapshot{memberID: o.memberID, state: Unsubscribed}
	m.events = newEventQueue()
	return m, nil
}

// Start launches the background goroutine and returns at once; joining happens in the background
// and shows in Events. ctx bounds only the start itself; the member runs until Close.
func (m *Manager) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	started := false
	m.startOnce.Do(func() {
		started = true
		m.runCtx, m.cancel = context.WithCancel(context.Background())
		m.cbs = newCallbackRunner(m.runCtx, m.o.listener)
		m.wg.Add(1)
		go m.loop()
	})
	if !started {
		return errors.New("membership: Start called twice")
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

// Assignment returns what the application owns now and whether the group is ready.
func (m *Manager) Assignment() (tasks.Assignment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.owned, m.snap.ready
}

// Member returns the member ID and epoch, for OffsetCommit and OffsetFetch. Both are read together
// with the assignment, so a commit never pairs a new epoch with an old assignment.
func (m *Manager) Member() (memberID string, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.memberID, m.snap.epoch
}

// State returns the member's state.
func (m *Manager) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap.state
}

// Err returns the fatal error that stopped the member, or nil.
func (m *Manager) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Done is closed when the member has stopped (after a leave or a fatal error).
func (m *Manager) Done() <-chan struct{} { return m.doneCh }

// RequestShutdown asks every member of the group to shut down (the group reports
// SHUTDOWN_APPLICATION to all of them, this one included). The member keeps running until Close.
func (m *Manager) RequestShutdown() {
	select {
	case m.cmds <- command{shutdown: true}:
	case <-m.doneCh:
	}
}

// Close revokes the owned tasks (OnTasksRevoked), leaves the group as mode says (CloseDefault when
// omitted), and stops the member; no goroutine of it is left when Close returns. If ctx ends first
// the member is stopped by force and ctx's error returned. After a fatal error Close returns at once.
func (m *Manager) Close(ctx context.Context, mode ...CloseMode) error {
	md := CloseDefault
	if len(mode) > 0 {
		md = mode[0]
	}
	notStarted := false
	m.startOnce.Do(func() { notStarted = true; close(m.doneCh); m.events.close() })
	if notStarted {
		<-m.events.finished
		return nil
	}
	select {
	case m.cmds <- command{leave: &md}:
	case <-m.doneCh:
	}
	var err error
	select {
	case <-m.doneCh:
	case <-ctx.Done():
		err = fmt.Errorf("membership: close did not finish: %w", ctx.Err())
		m.cancel()
	}
	m.cancel()
	m.wg.Wait()
	m.cbs.stop()
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

func (m *Manager) loop() {
	defer m.wg.Done()
	defer m.events.close()
	defer close(m.doneCh)
	now := m.o.clock()

	caps, err := m.capabilities()
	if err == nil {
		err = caps.Check()
		if err == nil && m.cfg.GroupInstanceID != "" && !caps.StaticMembership() {
			err = fmt.Errorf("group.instance.id is set but the brokers do not support static membership of streams groups "+
				"(StreamsGroupHeartbeat max version %d; Kafka 4.4+ needed): %w; remove group.instance.id", caps.HeartbeatMaxVersion, heartbeat.ErrNotSupported)
		}
	}
	if err != nil {
		if m.runCtx.Err() != nil || errors.Is(err, errClosedBeforeJoin) {
			m.run(m.machine.finish(nil))
		} else {
			m.run(m.machine.Fail(now, err))
		}
		return
	}
	m.machine.SetTaskOffsetsSupported(caps.TaskOffsets())
	m.run(m.machine.Start(m.o.clock()))
	if m.shutdownPending {
		m.run(m.machine.RequestShutdown(m.o.clock()))
	}

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !m.machine.Done() {
		m.run(m.tick())
		if m.machine.Done() {
			break
		}
		wait := time.Hour
		if next := m.machine.Next(); !next.IsZero() {
			wait = max(next.Sub(m.o.clock()), 0)
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case r := <-m.hbResults:
			if r.mismatch != nil {
				m.mu.Lock()
				m.mismatch = r.mismatch
				m.mu.Unlock()
			}
			if r.err != nil {
				m.logHeartbeatError(r.err)
				m.run(m.machine.HeartbeatFailed(m.o.clock(), r.err))
			} else {
				m.run(m.machine.HeartbeatAnswered(m.o.clock(), r.resp))
			}
		case d := <-m.cbs.results:
			m.run(m.machine.CallbackDone(m.o.clock(), d.seq, d.err))
		case c := <-m.cmds:
			switch {
			case c.shutdown:
				m.log.Info("requesting a shutdown of the whole application")
				m.run(m.machine.RequestShutdown(m.o.clock()))
			case c.leave != nil:
				m.log.Info("closing", "mode", c.leave.String())
				m.run(m.machine.Leave(m.o.clock(), *c.leave))
			}
		case <-m.runCtx.Done():
			m.run(m.machine.finish(nil))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// capabilities asks the cluster what it supports, retrying with backoff until it answers or the
// member is closed; the first failure is logged, so an unreachable cluster does not go unnoticed.
func (m *Manager) capabilities() (heartbeat.Capabilities, error) {
	for attempt := 0; ; attempt++ {
		caps, err := m.o.transport.Capabilities(m.runCtx)
		if err == nil {
			if attempt > 0 {
				m.log.Info("the cluster answers now")
			}
			return caps, nil
		}
		if attempt == 0 {
			m.log.Warn("cannot reach the cluster yet; retrying", "err", err)
		}
		select {
		case <-m.runCtx.Done():
			return heartbeat.Capabilities{}, m.runCtx.Err()
		case c := <-m.cmds:
			if c.leave != nil {
				return heartbeat.Capabilities{}, errClosedBeforeJoin // never joined: nothing to leave
			}
			m.shutdownPending = m.shutdownPending || c.shutdown
		case <-time.After(m.backoff.Delay(attempt)):
		}
	}
}

// errClosedBeforeJoin: Close came before the cluster ever answered.
var errClosedBeforeJoin = errors.New("closed before joining")

func (m *Manager) tick() []Action {
	now := m.o.clock()
	var offs, ends tasks.Offsets
	if m.o.offsets != nil && m.machine.WantsOffsets(now) {
		owned, _ := m.machine.Owned()
		offs, ends = m.o.offsets.TaskOffsets(owned)
	}
	return m.machine.Tick(now, offs, ends)
}

// run carries out the machine's actions.
func (m *Manager) run(actions []Action) {
	for _, a := range actions {
		switch a := a.(type) {
		case Send:
			if a.Leave {
				m.sendLeave(a.Request)
			} else {
				m.wg.Add(1)
				go m.sendHeartbeat(a.Request)
			}
		case Invoke:
			switch a.Kind {
			case CallbackRevoked:
				m.log.Info("revoking tasks", "tasks", a.Tasks.String(), "epoch", m.machine.Epoch())
			case CallbackLost:
				m.log.Info("tasks lost", "assignment", a.Assignment.String(), "epoch", m.machine.Epoch())
			default:
				m.log.Debug("assigning tasks", "assignment", a.Assignment.String(), "ready", a.Ready)
			}
			m.cbs.submit(a)
		case Emit:
			m.publish(a.Event)
		case Done:
			m.mu.Lock()
			m.err = a.Err
			m.mu.Unlock()
		}
	}
	m.mu.Lock()
	owned, ready := m.machine.Owned()
	m.snap = snapshot{state: m.machine.State(), epoch: m.machine.Epoch(), owned: owned, ready: ready, memberID: m.machine.MemberID()}
	m.mu.Unlock()
}

func (m *Manager) sendHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) {
	defer m.wg.Done()
	r := hbResult{}
	resp, err := m.o.transport.Heartbeat(m.runCtx, req)
	switch {
	case err != nil:
		r.err = err
	case resp.ErrorCode != 0:
		herr := heartbeat.ErrorFor(resp.ErrorCode, resp.ErrorMessage)
		r.err = herr
		if errors.Is(herr, heartbeat.ErrTopologyMismatch) {
			tm := m.describeMismatch(false)
			r.mismatch = &tm
			r.err = &TopologyError{Mismatch: tm, Err: herr}
		}
	default:
		r.resp, r.err = heartbeat.Parse(resp, m.topo)
		if r.err == nil && r.resp.Has(heartbeat.StaleTopology) && m.currentMismatch() == nil {
			tm := m.describeMismatch(true)
			r.mismatch = &tm
		}
	}
	select {
	case m.hbResults <- r:
	case <-m.runCtx.Done():
	}
}

func (m *Manager) currentMismatch() *TopologyMismatch {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mismatch
}

func (m *Manager) describeMismatch(stale bool) TopologyMismatch {
	ctx, cancel := context.WithTimeout(m.runCtx, m.cfg.RequestTimeout)
	defer cancel()
	g, err := m.o.transport.Describe(ctx)
	if err != nil {
		m.log.Warn("could not describe the group to compare topologies", "err", err)
	}
	return compareTopologies(g, m.topo, m.cfg.TopologyEpoch, stale)
}

func (m *Manager) sendLeave(req *kmsg.StreamsGroupHeartbeatRequest) {
	ctx, cancel := context.WithTimeout(m.runCtx, m.cfg.RequestTimeout)
	defer cancel()
	if err := m.o.transport.Leave(ctx, req, m.backoff); err != nil {
		m.log.Warn("leave heartbeat failed; the broker removes the member when its session times out", "err", err, "epoch", req.MemberEpoch)
		return
	}
	m.log.Info("left the group", "leave_epoch", req.MemberEpoch)
}

func (m *Manager) logHeartbeatError(err error) {
	switch classOf(err) {
	case heartbeat.Retry, heartbeat.Rediscover:
		m.log.Debug("heartbeat failed; retrying after backoff", "err", err, "epoch", m.machine.Epoch(), "state", m.machine.State().String())
	default:
		m.log.Warn("heartbeat failed", "err", err, "epoch", m.machine.Epoch(), "state", m.machine.State().String())
	}
}

func (m *Manager) publish(e Event) {
	if e.Kind == EventStaleTopology {
		e.GroupTopology = m.currentMismatch()
	}
	if te, ok := errors.AsType[*TopologyError](e.Err); ok {
		tm := te.Mismatch
		e.GroupTopology = &tm
	}
	attrs := []any{"event", e.Kind.String(), "epoch", e.Epoch, "state", e.State.String()}
	switch e.Kind {
	case EventFatal:
		m.log.Error("member stopped", append(attrs, "err", e.Err)...)
	case EventError, EventMissingSourceTopicsTimeout, EventFenced:
		m.log.Warn(e.String(), attrs...)
	case EventStateChanged, EventAssigned, EventGroupReadyChanged, EventLeft, EventShutdownRequested, EventStatusCleared:
		m.log.Info(e.String(), attrs...)
	case EventEndpointsChanged:
		m.log.Debug(e.String(), attrs...)
	default:
		m.log.Warn(e.String(), attrs...)
	}
	m.events.push(e)
}
