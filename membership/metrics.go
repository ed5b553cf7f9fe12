package membership

import (
	"maps"
	"sync"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The recorder behind Stats and the hooks (stats.go has their API): the Manager measures, on its
// loop goroutine, what the machine's actions and inputs start and end, and classifies nothing.

// hookSet is the installed hooks sorted by what they implement, once, at New.
type hookSet struct {
	hbSent      []HookHeartbeatSent
	hbAnswered  []HookHeartbeatAnswered
	rebStarted  []HookRebalanceStarted
	rebDone     []HookRebalanceCompleted
	rebFailed   []HookRebalanceFailed
	callback    []HookCallbackDone
	state       []HookStateChanged
	fenced      []HookFenced
	coordinator []HookCoordinatorChanged
	assignment  []HookAssignmentChanged
}

func newHookSet(hooks []Hook) hookSet {
	var s hookSet
	for _, h := range hooks {
		if h, ok := h.(HookHeartbeatSent); ok {
			s.hbSent = append(s.hbSent, h)
		}
		if h, ok := h.(HookHeartbeatAnswered); ok {
			s.hbAnswered = append(s.hbAnswered, h)
		}
		if h, ok := h.(HookRebalanceStarted); ok {
			s.rebStarted = append(s.rebStarted, h)
		}
		if h, ok := h.(HookRebalanceCompleted); ok {
			s.rebDone = append(s.rebDone, h)
		}
		if h, ok := h.(HookRebalanceFailed); ok {
			s.rebFailed = append(s.rebFailed, h)
		}
		if h, ok := h.(HookCallbackDone); ok {
			s.callback = append(s.callback, h)
		}
		if h, ok := h.(HookStateChanged); ok {
			s.state = append(s.state, h)
		}
		if h, ok := h.(HookFenced); ok {
			s.fenced = append(s.fenced, h)
		}
		if h, ok := h.(HookCoordinatorChanged); ok {
			s.coordinator = append(s.coordinator, h)
		}
		if h, ok := h.(HookAssignmentChanged); ok {
			s.assignment = append(s.assignment, h)
		}
	}
	return s
}

// invoked is a callback handed to the listener: its kind and when.
type invoked struct {
	kind CallbackKind
	at   time.Time
}

// metrics is the Manager's measuring half. Its unexported fields outside mu belong to the loop
// goroutine; s is read by Stats under mu.
type metrics struct {
	hooks hookSet
	coord CoordinatorReporter // nil when the transport does not report its coordinator

	sentAt  map[uint64]time.Time // heartbeats in flight, by Seq
	rttSeq  uint64               // the heartbeat whose result is being read, and its round trip
	rtt     time.Duration
	calls   map[uint64]invoked // callbacks running, by Seq
	state   State
	epoch   int32
	owned   tasks.Assignment
	coordOK bool // a coordinator was known once

	mu sync.Mutex
	s  Stats
}

func newMetrics(hooks []Hook, t Transport, snap Snapshot) *metrics {
	mt := &metrics{
		hooks:  newHookSet(hooks),
		sentAt: make(map[uint64]time.Time),
		calls:  make(map[uint64]invoked),
		state:  snap.State, epoch: snap.Epoch, owned: snap.Owned,
	}
	mt.coord, _ = t.(CoordinatorReporter)
	mt.s.State, mt.s.Epoch, mt.s.Coordinator = snap.State, snap.Epoch, -1
	mt.s.ActiveTasks, mt.s.StandbyTasks, mt.s.WarmupTasks = snap.Owned.Active.Len(), snap.Owned.Standby.Len(), snap.Owned.Warmup.Len()
	return mt
}

func (mt *metrics) snapshot(now time.Time) Stats {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	s := mt.s
	s.At = now
	s.HeartbeatsFailed = maps.Clone(mt.s.HeartbeatsFailed)
	return s
}

func (mt *metrics) update(f func(s *Stats)) {
	mt.mu.Lock()
	f(&mt.s)
	mt.mu.Unlock()
}

// input measures what an input ends: a heartbeat's round trip, a callback's run.
func (mt *metrics) input(now time.Time, in machine.Input) {
	switch in := in.(type) {
	case machine.HeartbeatDone:
		if at, ok := mt.sentAt[in.Seq]; ok {
			delete(mt.sentAt, in.Seq)
			mt.rttSeq, mt.rtt = in.Seq, now.Sub(at)
		}
		mt.observeCoordinator()
	case machine.CallbackDone:
		inv, ok := mt.calls[in.Seq]
		if !ok {
			return
		}
		delete(mt.calls, in.Seq)
		took := now.Sub(inv.at)
		mt.update(func(s *Stats) {
			var c *CallbackStats
			switch inv.kind {
			case CallbackRevoked:
				c = &s.Revoked
			case CallbackAssigned:
				c = &s.Assigned
			case CallbackLost:
				c = &s.Lost
			default:
				return
			}
			c.Calls++
			if in.Err != nil {
				c.Failed++
			}
			c.Last, c.Total, c.Max = took, c.Total+took, max(c.Max, took)
		})
		for _, h := range mt.hooks.callback {
			h.OnCallbackDone(inv.kind, took, in.Err)
		}
	}
}

// action records what an action starts or reports, before the Manager carries it out.
func (mt *metrics) action(now time.Time, a machine.Action) {
	switch a := a.(type) {
	case machine.SendHeartbeat:
		mt.sentAt[a.Seq] = now
		mt.update(func(s *Stats) { s.HeartbeatsSent++; s.LastHeartbeatSent = now })
		for _, h := range mt.hooks.hbSent {
			h.OnHeartbeatSent()
		}
	case machine.HeartbeatResult:
		var rtt time.Duration
		if mt.rttSeq == a.Seq {
			rtt = mt.rtt
		}
		mt.update(func(s *Stats) {
			s.LastHeartbeatRTT, s.MaxHeartbeatRTT = rtt, max(s.MaxHeartbeatRTT, rtt)
			s.HeartbeatRTTTotal += rtt
			if a.Class == 0 {
				s.HeartbeatsSucceeded++
				s.LastHeartbeatAnswered = now
				return
			}
			if s.HeartbeatsFailed == nil {
				s.HeartbeatsFailed = make(map[heartbeat.Class]uint64)
			}
			s.HeartbeatsFailed[a.Class]++
		})
		for _, h := range mt.hooks.hbAnswered {
			h.OnHeartbeatAnswered(rtt, a.Class, a.Err)
		}
	case machine.Rebalance:
		mt.rebalance(now, a)
	case machine.Invoke:
		mt.calls[a.Seq] = invoked{kind: a.Kind, at: now}
	case machine.Emit:
		if a.Event.Kind == EventFenced {
			mt.update(func(s *Stats) { s.Fencings++ })
			for _, h := range mt.hooks.fenced {
				h.OnFenced()
			}
		}
	}
}

func (mt *metrics) rebalance(now time.Time, a machine.Rebalance) {
	var latency time.Duration
	if !a.TargetAt.IsZero() {
		latency = max(now.Sub(a.TargetAt), 0)
	}
	switch a.Phase {
	case machine.RebalanceStarted:
		mt.update(func(s *Stats) { s.RebalancesStarted++ })
		for _, h := range mt.hooks.rebStarted {
			h.OnRebalanceStarted()
		}
	case machine.RebalanceCompleted:
		mt.update(func(s *Stats) {
			s.RebalancesCompleted++
			s.LastRebalanceLatency, s.MaxRebalanceLatency = latency, max(s.MaxRebalanceLatency, latency)
			s.RebalanceLatencyTotal += latency
			s.LastRebalance = now
		})
		for _, h := range mt.hooks.rebDone {
			h.OnRebalanceCompleted(latency)
		}
	case machine.RebalanceFailed:
		mt.update(func(s *Stats) { s.RebalancesFailed++ })
		for _, h := range mt.hooks.rebFailed {
			h.OnRebalanceFailed(latency)
		}
	}
}

// observe reports what changed in the member's snapshot after a step: state, epoch, assignment.
func (mt *metrics) observe(snap Snapshot) {
	if snap.State != mt.state || snap.Epoch != mt.epoch {
		mt.state, mt.epoch = snap.State, snap.Epoch
		mt.update(func(s *Stats) { s.State, s.Epoch = snap.State, snap.Epoch })
		for _, h := range mt.hooks.state {
			h.OnStateChanged(snap.State, snap.Epoch)
		}
	}
	if !snap.Owned.Equal(mt.owned) {
		mt.owned = snap.Owned
		mt.update(func(s *Stats) {
			s.ActiveTasks, s.StandbyTasks, s.WarmupTasks = snap.Owned.Active.Len(), snap.Owned.Standby.Len(), snap.Owned.Warmup.Len()
		})
		for _, h := range mt.hooks.assignment {
			h.OnAssignmentChanged(snap.Owned)
		}
	}
}

// observeCoordinator asks the transport which coordinator it uses, after a heartbeat's result.
func (mt *metrics) observeCoordinator() {
	if mt.coord == nil {
		return
	}
	node, known := mt.coord.Coordinator()
	if !known {
		return
	}
	mt.mu.Lock()
	changed := node != mt.s.Coordinator
	if changed {
		if mt.coordOK {
			mt.s.CoordinatorChanges++
		}
		mt.s.Coordinator = node
	}
	mt.mu.Unlock()
	mt.coordOK = true
	if changed {
		for _, h := range mt.hooks.coordinator {
			h.OnCoordinatorChanged(node)
		}
	}
}
