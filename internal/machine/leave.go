package machine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/heartbeat"
)

// leaveIntent is a leave in progress.
type leaveIntent struct {
	epoch  int32 // EpochLeave or EpochLeaveStatic
	skip   bool  // remain in the group: no leave heartbeat
	fenced bool  // the broker fenced the member meanwhile: it is gone already
	fatal  error // a fatal heartbeat error meanwhile: no leave heartbeat, stop with it
	poll   bool  // left because the poll timer expired: STALE after it, not stopped (poll.go)

	// The leave heartbeat, once the revocation is done (Leaving).
	deadline time.Time // the end of the leave budget, from the first attempt
	inFlight bool      // a SendLeave{Seq: Machine.leaveSeq} is out
	awaitHB  bool      // the leave waits for the answer to the heartbeat that was out (leaveRevoked)
	failures int       // attempts that failed and may pass
	retryAt  time.Time // the next attempt; zero when none is scheduled
	last     error     // the last failure, named when the budget ends an attempt
}

// errNoCoordinator is the leave's outcome when no coordinator of the group is known (the last
// heartbeat did not reach one): the leave heartbeat is not sent, as Kafka's client skips it, rather
// than searched for.
var errNoCoordinator = errors.New("no group coordinator known: the leave heartbeat was not sent; " +
	"the member leaves the group when its session times out")

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
	l.deadline = now.Add(m.cfg.LeaveBudget)
	if m.hb.inFlight {
		// The leave waits for the answer to the heartbeat that is out. Each request goes from its
		// own goroutine, and one still looking up its coordinator goes after a later one that
		// found it cached: a leave sent now could reach the broker first, and a join heartbeat
		// (epoch 0) arriving after it would put the member back in the group until its session
		// times out, where the next step (deleting the group, resetting its offsets) needs it
		// gone. The Java client has one heartbeat request in flight at a time.
		l.awaitHB = true
		l.last = errHeartbeatOut
		return out
	}
	return append(out, m.leaveAfterHeartbeat(now)...)
}

// errHeartbeatOut is why a leave given up was never sent: the heartbeat it waited for was not
// answered within the leave budget.
var errHeartbeatOut = errors.New("the heartbeat out before the leave was not answered, so the leave was not sent")

// leaveAfterHeartbeat sends the leave heartbeat once no other heartbeat is out, to the coordinator
// the last one reached; when it reached none, the leave is skipped.
func (m *Machine) leaveAfterHeartbeat(now time.Time) []Action {
	if !m.hb.reached {
		return m.leaveEnded(errNoCoordinator)
	}
	return m.sendLeave(now)
}

// heartbeatDoneWhileLeaving lets the leave go once the heartbeat it waited for was answered.
func (m *Machine) heartbeatDoneWhileLeaving(now time.Time) []Action {
	l := m.leave
	if l == nil || !l.awaitHB {
		return nil
	}
	l.awaitHB, l.last = false, nil
	return m.leaveAfterHeartbeat(now)
}

// leaveRetryAt is when the leave heartbeat is tried again (zero: not now).
func (m *Machine) leaveRetryAt() time.Time {
	if m.state != Leaving || m.leave == nil || m.leave.inFlight {
		return time.Time{}
	}
	if m.leave.awaitHB {
		return m.leave.deadline // the heartbeat it waits for was not answered in time: given up then
	}
	return m.leave.retryAt
}

// sendLeave sends the leave heartbeat, for what is left of the leave budget (at most one request
// timeout).
func (m *Machine) sendLeave(now time.Time) []Action {
	l := m.leave
	l.retryAt = time.Time{}
	if !now.Before(l.deadline) {
		// The retry was due before the budget ended, but the step that runs it came after.
		return m.leaveEnded(m.leaveGivenUp(l.last))
	}
	l.inFlight = true
	m.leaveSeq++
	// Built for each attempt: a shutdown requested meanwhile goes with the next one.
	req := m.b.Build(heartbeat.Report{Epoch: l.epoch, EndpointEpoch: m.endpointEpoch, Shutdown: m.shutdown})
	return []Action{SendLeave{Seq: m.leaveSeq, Request: req, Timeout: min(l.deadline.Sub(now), m.cfg.RequestTimeout)}}
}

// leaveOutcome reads a leave heartbeat's raw result: nil when the member is out of the group (the
// broker took the leave, or says the member or the group is gone already, which is what a leave
// wants), else the typed error, whose class says whether another attempt may succeed.
func leaveOutcome(in LeaveDone) error {
	if in.Err != nil {
		return heartbeat.ClassifyTransport(in.Err)
	}
	if in.Response == nil {
		return &heartbeat.ProtocolError{Reason: "the leave heartbeat got neither an answer nor an error"}
	}
	switch kerr.ErrorForCode(in.Response.ErrorCode) {
	case nil, kerr.UnknownMemberID, kerr.GroupIDNotFound:
		return nil
	}
	return heartbeat.ErrorFor(in.Response.ErrorCode, in.Response.ErrorMessage)
}

// leaveDone reads the answer to the leave heartbeat: the member is out, or the attempt is tried
// again after backoff when what failed may pass (a coordinator that moved, is loading or could not
// be reached) and the leave budget allows, or the leave is given up.
func (m *Machine) leaveDone(now time.Time, in LeaveDone) []Action {
	l := m.leave
	if m.state != Leaving || l == nil || !l.inFlight || in.Seq != m.leaveSeq {
		return nil
	}
	l.inFlight = false
	err := leaveOutcome(in)
	if err == nil {
		return m.leaveEnded(nil)
	}
	class := classOf(err)
	if class != heartbeat.Retry && class != heartbeat.Rediscover {
		return m.leaveEnded(err)
	}
	if errors.Is(in.Err, context.DeadlineExceeded) && l.last != nil {
		err = l.last // the budget ran out during this attempt: the failure before it says why
	}
	l.failures++
	l.last = err
	delay := m.cfg.Backoff.Delay(l.failures - 1)
	if _, answered := errors.AsType[*heartbeat.Error](err); answered && class == heartbeat.Rediscover && l.failures == 1 {
		delay = 0 // the coordinator moved: look it up and send again at once, as a heartbeat would
	}
	if at := now.Add(delay); at.Before(l.deadline) {
		l.retryAt = at
		return []Action{Log{Level: slog.LevelDebug, Msg: "the leave heartbeat failed; retrying", Attrs: []any{"err", err, "retry_in", delay}}}
	}
	return m.leaveEnded(m.leaveGivenUp(err))
}

// leaveGivenUp is the outcome of a leave whose budget ended; last is the failure that says why.
func (m *Machine) leaveGivenUp(last error) error {
	return fmt.Errorf("leaving the group: no answer within the leave budget of %v (last error: %w)", m.cfg.LeaveBudget, last)
}

// leaveEnded stops the member once the leave heartbeat was answered (err nil), skipped or given up.
func (m *Machine) leaveEnded(err error) []Action {
	if m.leave != nil && m.leave.poll {
		m.leave = nil
		return m.transition(Stale)
	}
	out := m.transition(Unsubscribed)
	switch {
	case err == nil:
		out = append(out, m.emit(Event{Kind: EventLeft, Message: "left the group"}))
	default:
		out = append(out, Log{Level: slog.LevelWarn, Msg: "the leave heartbeat was not answered; the broker removes the member when its session times out",
			Attrs: []any{"err", err}})
		out = append(out, m.emit(Event{Kind: EventLeft, Err: err,
			Message: "the leave was not confirmed; the broker removes the member when its session times out"}))
	}
	return append(out, m.finish(nil)...)
}
