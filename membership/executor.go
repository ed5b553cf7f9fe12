package membership

import (
	"context"
	"fmt"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/machine"
)

// The executor half of the Manager: the loop that feeds the machine and carries out its actions.
// Every decision is the machine's; this code only does I/O, runs the application's code on
// goroutines of its own and feeds the results back.

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
	if cd, ok := in.(machine.CallbackDone); ok {
		delete(m.cancels, cd.Seq) // its goroutine released the context already
	}
	now := time.Now()
	m.metrics.input(now, in)
	actions := m.machine.Step(now, in)
	// Publish the new snapshot before carrying out the actions: a callback started by them must
	// read the epoch and ownership the machine has now, not the previous ones.
	snap := m.machine.Snapshot()
	m.mu.Lock()
	old := m.snap
	m.snap = snap
	if m.changed != nil && (old.Epoch != snap.Epoch || old.State != snap.State || old.MemberID != snap.MemberID) {
		close(m.changed)
		m.changed = nil
	}
	m.mu.Unlock()
	if snap.State == machine.Stale {
		m.pollSignal.Store(true) // the next Poll rejoins
	}
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
		m.goNet(a.Timeout, func(ctx context.Context) machine.Input {
			caps, err := m.o.transport.Capabilities(ctx)
			return machine.CapabilitiesKnown{Caps: caps, Err: err}
		})
	case machine.SendHeartbeat:
		m.goNet(a.Timeout, func(ctx context.Context) machine.Input {
			resp, err := m.o.transport.Heartbeat(ctx, a.Request)
			return machine.HeartbeatDone{Seq: a.Seq, Response: resp, Err: err}
		})
	case machine.SendLeave:
		m.goNet(a.Timeout, func(ctx context.Context) machine.Input {
			resp, err := m.o.transport.Heartbeat(ctx, a.Request)
			return machine.LeaveDone{Seq: a.Seq, Response: resp, Err: err}
		})
	case machine.Describe:
		m.goNet(a.Timeout, func(ctx context.Context) machine.Input {
			g, err := m.o.transport.Describe(ctx)
			return machine.Described{Group: g, Err: err}
		})
	case machine.DescribeSession:
		m.goNet(a.Timeout, func(ctx context.Context) machine.Input {
			describe := m.o.transport.GroupConfigs
			if a.BrokerDefault {
				describe = m.o.transport.CoordinatorConfigs
			}
			resp, err := describe(ctx, a.Config)
			return machine.SessionDescribed{Response: resp, Err: err}
		})
	case machine.CollectOffsets:
		m.goUser(func(ctx context.Context) machine.Input {
			offs, ends := m.o.offsets.TaskOffsets(a.Owned)
			return machine.OffsetsCollected{Seq: a.Seq, Offsets: offs, Ends: ends}
		}, func(err error) machine.Input { return machine.OffsetsCollected{Seq: a.Seq} })
	case machine.Invoke:
		m.logInvoke(a)
		ctx, cancel := context.WithCancel(m.runCtx)
		m.cancels[a.Seq] = cancel
		m.goUserCtx(ctx, func(ctx context.Context) machine.Input {
			defer cancel()
			return machine.CallbackDone{Seq: a.Seq, Err: m.call(ctx, a)}
		}, func(err error) machine.Input { return machine.CallbackDone{Seq: a.Seq, Err: err} })
	case machine.CancelCallback:
		if cancel, ok := m.cancels[a.Seq]; ok {
			m.log.Warn("cancelling the running callback: its tasks were given up", "seq", a.Seq)
			cancel()
		}
	case machine.AskPoll:
		// No I/O: the answer is when the application last polled, fed back from a goroutine
		// because the loop cannot send to itself.
		m.netWG.Add(1)
		go func() {
			defer m.netWG.Done()
			m.deliver(machine.Polled{At: time.Unix(0, m.lastPoll.Load())})
		}()
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

// goNet runs a network action on its own goroutine, bounded by the action's timeout (every network
// action the machine asks for carries one), and feeds its result back.
func (m *Manager) goNet(timeout time.Duration, f func(ctx context.Context) machine.Input) {
	m.netWG.Add(1)
	go func() {
		defer m.netWG.Done()
		ctx, cancel := context.WithTimeout(m.runCtx, timeout)
		defer cancel()
		m.deliver(f(ctx))
	}()
}

// goUser runs application code on its own goroutine; a panic becomes onPanic's input.
func (m *Manager) goUser(f func(ctx context.Context) machine.Input, onPanic func(error) machine.Input) {
	m.goUserCtx(m.runCtx, f, onPanic)
}

// goUserCtx is goUser with the context the code gets.
func (m *Manager) goUserCtx(ctx context.Context, f func(ctx context.Context) machine.Input, onPanic func(error) machine.Input) {
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
			in = f(ctx)
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
	case EventMissingInternalTopics:
		// Normal on a first start, or after the internal topics were deleted: the broker is
		// creating them (the machine logs at WARN if that lasts). A denied creation is a problem.
		if e.Err != nil {
			m.log.Warn(e.String(), append(attrs, "err", e.Err)...)
		} else {
			m.log.Info(e.String(), attrs...)
		}
	default:
		m.log.Warn(e.String(), attrs...)
	}
	m.events.push(e)
}
