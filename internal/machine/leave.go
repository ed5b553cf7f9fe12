package machine

import (
	"log/slog"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
)

// leaveIntent is a leave in progress.
type leaveIntent struct {
	epoch  int32 // EpochLeave or EpochLeaveStatic
	skip   bool  // remain in the group: no leave heartbeat
	fenced bool  // the broker fenced the member meanwhile: it is gone already
	fatal  error // a fatal heartbeat error meanwhile: no leave heartbeat, stop with it
	poll   bool  // left because the poll timer expired: STALE after it, not stopped (poll.go)
}

// close starts leaving (Kafka's StreamsMembershipManager.leaveGroup): revoke the held active tasks
// (OnTasksRevoked, or OnAllTasksLost when the member never got past epoch 0), then send the leave
// heartbeat: -1, or -2 for a static member (unless the mode is CloseLeaveGroup); none for a dynamic
// member that remains in the group.
func (m *Machine) close(now time.Time, mode CloseMode) []Action {
	static := m.cfg.Join.InstanceID != ""
	intent := &leaveIntent{epoch: heartbeat.EpochLeave}
	switch {
	case static && mode != CloseLeaveGroup:
		intent.epoch = heartbeat.EpochLeaveStatic
	case !static && mode == CloseRemainInGroup:
		intent.skip = true
	}
	if m.leave != nil && m.leave.poll {
		m.leave.poll = false // a leave for the poll timer is under way: it ends the member now
	}
	switch m.state {
	case Unsubscribed, Stale:
		// Never joined (or still probing the cluster), or left for the poll timer: nothing to leave.
		return m.finish(nil)
	case Fenced:
		// Not in the group: nothing to send; OnAllTasksLost is running or done.
		out := m.transition(Unsubscribed)
		return append(out, m.finish(nil)...)
	case Fatal, PrepareLeaving, Leaving:
		return nil // already on the way out
	}
	m.leave = intent
	m.abortReconciliation()
	// Keepalives while leaving go at the broker's interval: an ack that was about to go at once is
	// not sent, and offsets being collected are not wanted any more.
	m.hb.collecting = nil
	m.hb.at = later(m.hb.at, m.hb.regular)
	out := m.transition(PrepareLeaving)
	return append(out, m.enqueue(job{op: opLeave})...)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// leaveRevoked goes on once the leave's callback returned: the application holds nothing now.
func (m *Machine) leaveRevoked(now time.Time, j job, err error) []Action {
	var out []Action
	if err != nil {
		out = append(out, m.emit(Event{Kind: EventError, Err: &CallbackError{Callback: j.kind, Err: err},
			Message: "the member leaves anyway"}))
	}
	m.loseAll()
	if m.state != PrepareLeaving {
		return out
	}
	l := m.leave
	switch {
	case l.fatal != nil:
		out = append(out, m.transition(Fatal)...)
		out = append(out, m.emit(Event{Kind: EventFatal, Err: l.fatal}))
		return append(out, m.finish(l.fatal)...)
	case l.fenced && l.poll:
		m.leave = nil
		out = append(out, m.transition(Leaving)...) // no leave heartbeat: the broker removed the member
		return append(out, m.transition(Stale)...)
	case l.fenced:
		out = append(out, m.transition(Unsubscribed)...)
		out = append(out, m.emit(Event{Kind: EventLeft,
			Message: "the broker had already removed this member (fenced while leaving); no leave heartbeat was needed"}))
		return append(out, m.finish(nil)...)
	case l.skip:
		out = append(out, m.transition(Unsubscribed)...)
		out = append(out, m.emit(Event{Kind: EventLeft, Message: "remaining in the group until the session times out"}))
		return append(out, m.finish(nil)...)
	}
	out = append(out, m.transition(Leaving)...)
	req := m.b.Build(heartbeat.Report{Epoch: l.epoch, EndpointEpoch: m.endpointEpoch, Shutdown: m.shutdown})
	return append(out, SendLeave{Request: req, Budget: m.cfg.LeaveBudget})
}

// leaveDone stops the member once the leave heartbeat was answered or given up.
func (m *Machine) leaveDone(in LeaveDone) []Action {
	if m.state != Leaving {
		return nil
	}
	if m.leave != nil && m.leave.poll {
		m.leave = nil
		return m.transition(Stale)
	}
	out := m.transition(Unsubscribed)
	switch {
	case in.Err == nil:
		out = append(out, m.emit(Event{Kind: EventLeft, Message: "left the group"}))
	default:
		out = append(out, Log{Level: slog.LevelWarn, Msg: "the leave heartbeat was not answered; the broker removes the member when its session times out",
			Attrs: []any{"err", in.Err}})
		out = append(out, m.emit(Event{Kind: EventLeft, Err: in.Err,
			Message: "the leave was not confirmed; the broker removes the member when its session times out"}))
	}
	return append(out, m.finish(nil)...)
}
