package machine

import (
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/neterr"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// heartbeatTiming is when the next heartbeat may go and what is in flight.
type heartbeatTiming struct {
	at       time.Time // the earliest time the next heartbeat may go
	regular  time.Time // when it would go by the broker's interval alone (at may be earlier for an ack)
	inFlight bool
	seq      uint64 // of the heartbeat in flight, or of the last one
	failures int    // heartbeats failed in a row, for backoff; 0 after a success
	// reached: the last heartbeat answered was answered by a coordinator of the group (any answer
	// but NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE; those, and a failure to reach one, make
	// the transport forget the coordinator). A leave goes only to a coordinator known this way.
	reached bool
	// rejoinDelay is how long after OnAllTasksLost a fenced member rejoins: 0 the first time,
	// backoff when fencing repeats without a success in between (a broker that fences every join
	// must not get a join per round trip).
	rejoinDelay time.Duration
	// offsetsAtBefore is the offsets clock before the heartbeat in flight moved it, restored if the
	// heartbeat fails: the clock moves only for offsets the broker took.
	offsetsAtBefore time.Time
	collecting      *collecting // offsets asked for the heartbeat that is due
}

// collecting is a CollectOffsets action awaiting its OffsetsCollected.
type collecting struct {
	seq   uint64
	since time.Time
}

// heartbeating reports whether the state sends periodic heartbeats. PrepareLeaving does, so that a
// revocation that takes longer than the session timeout does not get the member expired (as the
// Java client), unless the broker already fenced it or a fatal error came meanwhile.
func (m *Machine) heartbeating() bool {
	switch m.state {
	case Joining, Reconciling, Acknowledging, Stable:
		return true
	case PrepareLeaving:
		return !m.leave.fenced && m.leave.fatal == nil
	}
	return false
}

// heartbeatAt is when the next heartbeat goes (zero: none is due by time).
func (m *Machine) heartbeatAt() time.Time {
	if !m.heartbeating() || m.hb.inFlight {
		return time.Time{}
	}
	if c := m.hb.collecting; c != nil {
		return c.since.Add(m.cfg.OffsetsWait) // the offsets came too late: go without them
	}
	return m.hb.at
}

// sendSoon makes the next heartbeat go at once unless the member is backing off after an error.
func (m *Machine) sendSoon(now time.Time) {
	if m.hb.failures == 0 && now.Before(m.hb.at) {
		m.hb.at = now
	}
}

// heartbeat is called when a heartbeat is due: it first collects task offsets when they may go.
func (m *Machine) heartbeat(now time.Time) []Action {
	if m.hb.collecting != nil {
		m.hb.collecting = nil // waited long enough
		return m.send(now, nil, nil)
	}
	if m.wantsOffsets(now) {
		m.hb.seq++
		m.hb.collecting = &collecting{seq: m.hb.seq, since: now}
		return []Action{CollectOffsets{Seq: m.hb.seq, Owned: m.held()}}
	}
	return m.send(now, nil, nil)
}

func (m *Machine) offsetsCollected(now time.Time, in OffsetsCollected) []Action {
	c := m.hb.collecting
	if c == nil || c.seq != in.Seq {
		return nil // late: the heartbeat went without them
	}
	m.hb.collecting = nil
	if !m.heartbeating() || m.hb.inFlight || now.Before(m.hb.at) {
		return nil // the state changed meanwhile (Close): the heartbeat goes when due
	}
	return m.send(now, in.Offsets, in.Ends)
}

// send builds and sends the heartbeat now.
func (m *Machine) send(now time.Time, offs, ends tasks.Offsets) []Action {
	sendOffsets := m.offsetsMayGo(now, offs, ends)
	if !sendOffsets {
		offs, ends = nil, nil
	}
	req := m.b.Build(heartbeat.Report{
		Epoch:         m.epoch,
		EndpointEpoch: m.endpointEpoch,
		Owned:         m.rec.current,
		Shutdown:      m.shutdown,
		Offsets:       offs,
		EndOffsets:    ends,
		SendOffsets:   sendOffsets,
	})
	m.offsetsSent(now, sendOffsets, req)
	m.hb.seq++
	m.hb.inFlight = true
	m.session.sentAt = now
	// The steady heartbeat's one action goes in a buffer the machine keeps (capacity 1, so appending
	// to it copies): the slice Step returns is only valid until the next Step.
	out := m.sendBuf[:1:1]
	out[0] = SendHeartbeat{Seq: m.hb.seq, Request: req, Timeout: m.cfg.RequestTimeout}
	if m.state == Acknowledging {
		// Building the ack completes the reconciliation (Kafka's
		// StreamsMembershipManager.onHeartbeatRequestGenerated): Stable, or on to the next
		// target if one arrived meanwhile.
		out = append(out, Rebalance{Phase: RebalanceCompleted, TargetAt: m.rec.ackedTargetAt})
		if m.targetDiffers() {
			out = append(out, m.transition(Reconciling)...)
			out = append(out, m.maybeReconcile()...)
		} else {
			out = append(out, m.transition(Stable)...)
		}
	}
	return out
}

// classify reads a heartbeat's raw result with heartbeat.ClassifyInto (into dst, reused from one
// answer to the next): an answer the member can act on,
// or a typed error (*heartbeat.TransportError, *heartbeat.Error, *heartbeat.ProtocolError,
// *tasks.UnknownSubtopologyError). A success must carry the member's epoch and an interval to wait,
// or the member would heartbeat in a loop: Parse refuses both. A leave epoch in a success is then
// ignored, as the Java client does, and the heartbeat retried after backoff (ignoredAnswer); a
// missing interval stays fatal, as no sane pace can be derived from it.
func classify(dst *heartbeat.Response, in HeartbeatDone, topo *topology.Topology) (*heartbeat.Response, error) {
	err := heartbeat.ClassifyInto(dst, in.Response, in.Err, topo)
	if err != nil && in.Err == nil && in.Response != nil && in.Response.ErrorCode == 0 && in.Response.MemberEpoch < 0 {
		return nil, ignoredAnswer{err}
	}
	if err != nil {
		return nil, err
	}
	return dst, nil
}

func (m *Machine) heartbeatDone(now time.Time, in HeartbeatDone) []Action {
	if !m.hb.inFlight || in.Seq != m.hb.seq {
		return nil // the answer to a heartbeat the member no longer waits for
	}
	m.hb.inFlight = false
	m.hb.reached = reachedCoordinator(in.Response, in.Err)
	r, err := classify(&m.parsed, in, m.cfg.Join.Topology)
	res := HeartbeatResult{Seq: in.Seq, Err: err}
	if err != nil {
		res.Class = classOf(err)
	}
	out := m.resultBuf[:1:1]
	out[0] = res
	switch m.state {
	case Joining, Reconciling, Acknowledging, Stable:
		if err != nil {
			return append(out, m.heartbeatFailed(now, err)...)
		}
		return append(out, m.answered(now, r)...)
	case PrepareLeaving:
		return append(out, m.answeredWhileLeaving(now, r, err)...)
	case Leaving:
		return append(out, m.heartbeatDoneWhileLeaving(now)...) // the leave may go now
	}
	return out // Unsubscribed, Fenced, Fatal: the answer changes nothing
}

// reachedCoordinator says whether a heartbeat's raw result came from the group's coordinator: an
// answer that does not say the coordinator moved or is not available.
func reachedCoordinator(resp *kmsg.StreamsGroupHeartbeatResponse, err error) bool {
	return err == nil && resp != nil && !neterr.IsCoordinatorMoved(resp.ErrorCode)
}

// answeredWhileLeaving keeps the member's epoch and interval current while OnTasksRevoked runs
// before the leave; the assignment and statuses of the answer are ignored.
func (m *Machine) answeredWhileLeaving(now time.Time, r *heartbeat.Response, err error) []Action {
	if err != nil {
		m.b.Reset()
		m.offsetsFailed()
		switch classOf(err) {
		case heartbeat.Fenced:
			m.leave.fenced = true // the broker already removed the member: no leave to send
			return []Action{Log{Level: slog.LevelInfo, Msg: "fenced while leaving; the leave completes without a leave heartbeat", Attrs: []any{"err", err}}}
		case heartbeat.Fatal:
			m.leave.fatal = err // stop heartbeating; the member stops with err once the revocation is done
			return nil
		}
		m.hb.failures++
		m.hb.at = now.Add(m.cfg.Backoff.Delay(m.hb.failures - 1))
		return []Action{Log{Level: slog.LevelDebug, Msg: "heartbeat failed while leaving; retrying after backoff", Attrs: []any{"err", err}}}
	}
	m.hb.failures = 0
	m.epoch, m.interval, m.endpointEpoch = r.Epoch, r.Interval, r.EndpointEpoch
	m.hb.at = now.Add(m.interval)
	m.hb.regular = m.hb.at
	return nil
}

// heartbeatFailed handles a failed heartbeat in the group (Kafka's
// StreamsGroupHeartbeatRequestManager.onErrorResponse).
func (m *Machine) heartbeatFailed(now time.Time, err error) []Action {
	m.b.Reset() // invariant 4: after any error the next heartbeat is full
	m.offsetsFailed()
	class := classOf(err)
	switch class {
	case heartbeat.Fenced:
		return append(m.reconciliationEndedBy(err), m.fence(now, err)...)
	case heartbeat.Fatal:
		return append(m.reconciliationEndedBy(err), m.fail(err)...)
	}
	m.hb.failures++
	he, answered := errors.AsType[*heartbeat.Error](err)
	if answered && (he.Code == kerr.CoordinatorLoadInProgress.Code ||
		he.Code == kerr.NotCoordinator.Code && m.hb.failures == 1) {
		m.session.rearm(m.session.sentAt) // session.go: the coordinator restarts the session timer when it loads
	}
	if class == heartbeat.Rediscover && answered && m.hb.failures == 1 {
		// The coordinator moved: look it up and heartbeat again at once, as the Java client does.
		// Only once in a row, so a broker that keeps answering NOT_COORDINATOR gets backoff.
		m.hb.at = now
	} else {
		m.hb.at = now.Add(m.cfg.Backoff.Delay(m.hb.failures - 1))
	}
	attrs := []any{"err", err, "class", class.String(), "retry_in", m.hb.at.Sub(now)}
	if class == heartbeat.KeepState || errors.As(err, new(ignoredAnswer)) {
		return []Action{m.emit(Event{Kind: EventError, Err: err})}
	}
	return []Action{Log{Level: slog.LevelDebug, Msg: "heartbeat failed; retrying", Attrs: attrs}}
}

// reconciliationEndedBy reports, before a fencing or a fatal heartbeat error ends it, the
// reconciliation under way as a failed rebalance: Java's StreamsMembershipManager counts a
// rebalance in progress that a heartbeat error answer or a send that cannot be retried meets as
// failed (onFatalHeartbeatFailure, failed-rebalance-total), and so does this member, for the errors
// that end it. A retriable failure does not end it (Java counts neither retriable send failures nor
// callback failures; an error answer the member retries, Java counts while this member lets the
// reconciliation go on to complete, docs/metrics.md). A pass whose callback failed and that waits for
// its retry was counted when the callback failed; a malformed answer is no heartbeat error (Java
// fails the member on it without counting).
func (m *Machine) reconciliationEndedBy(err error) []Action {
	r := m.rec.running
	if m.state != Reconciling || r == nil {
		return nil
	}
	if _, ok := errors.AsType[*heartbeat.Error](err); !ok {
		if _, ok := errors.AsType[*heartbeat.TransportError](err); !ok {
			return nil
		}
	}
	return []Action{Rebalance{Phase: RebalanceFailed, TargetAt: r.targetAt}}
}

// classOf says what to do about a heartbeat error. Errors the heartbeat package does not classify
// (a malformed answer, a task of an unknown subtopology) are fatal: the member cannot act on them.
func classOf(err error) heartbeat.Class {
	if _, ok := errors.AsType[ignoredAnswer](err); ok {
		return heartbeat.Retry
	}
	if he, ok := errors.AsType[*heartbeat.Error](err); ok {
		return he.Class
	}
	if te, ok := errors.AsType[*heartbeat.TransportError](err); ok {
		return te.Class
	}
	return heartbeat.Fatal
}

// ignoredAnswer is an answer the member ignores and retries after backoff. It unwraps to the
// *heartbeat.ProtocolError that says why.
type ignoredAnswer struct{ err error }

func (e ignoredAnswer) Error() string { return e.err.Error() }
func (e ignoredAnswer) Unwrap() error { return e.err }

// answered applies a successful answer in the group (Kafka's
// StreamsMembershipManager.onHeartbeatSuccess).
func (m *Machine) answered(now time.Time, r *heartbeat.Response) []Action {
	var out []Action
	m.hb.failures, m.hb.rejoinDelay = 0, 0
	m.session.answeredSent, m.session.tripped = m.session.sentAt, false
	m.epoch, m.interval = r.Epoch, r.Interval
	// The interval runs from the send, as Java's heartbeat timer is reset on the send attempt: the
	// period is the broker's interval, not the interval plus the round trip. A round trip longer
	// than the interval sends the next heartbeat at once.
	m.hb.at = later(now, m.session.sentAt.Add(m.interval))
	m.hb.regular = m.hb.at
	m.endpointEpoch = r.EndpointEpoch
	if r.Endpoints != nil {
		out = append(out, m.emit(Event{Kind: EventEndpointsChanged, Endpoints: r.Endpoints}))
	}
	m.offsetsAnswered(r)
	out = append(out, m.updateStatuses(now, r.Statuses)...)
	out = append(out, m.newTarget(r)...)
	if m.state == Acknowledging {
		// The answer was to a heartbeat sent while the callbacks ran; the ack goes at once.
		m.hb.at = now
	}
	return out
}

// requestShutdown makes every following heartbeat ask the group to shut down; one goes at once
// unless the member is backing off after an error.
func (m *Machine) requestShutdown(now time.Time) []Action {
	if m.shutdown {
		return nil
	}
	m.shutdown = true
	m.sendSoon(now)
	return []Action{Log{Level: slog.LevelInfo, Msg: "requesting a shutdown of the whole application"}}
}
