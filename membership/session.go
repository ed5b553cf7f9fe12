package membership

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The session guard closes the window in which two members process the same task across a network
// partition. The broker expires a member when it has received no heartbeat for the session timeout,
// and then gives its tasks to others; a member cut off from the coordinator cannot hear of it and,
// without the guard, keeps processing until its next answered heartbeat (the Java client has the
// same window and relies on commit fencing).
//
// The broker restarts a member's session whenever it receives a heartbeat, so the session of a
// member whose last answered heartbeat was sent at T cannot end before T + session timeout. When no
// heartbeat sent since has been answered by T + session timeout − margin, the member gives its tasks
// up (OnAllTasksLost) and rejoins as when fenced: it lets go before the broker can reassign them.
// Measuring from the send time (not the answer's arrival) keeps the guard on the safe side of any
// round trip.
//
// The session timeout is the group's, read with DescribeConfigs (the group config
// streams.session.timeout.ms, which the broker fills in from group.streams.session.timeout.ms when
// the group has none) when the member joins and again on every rejoin; session.timeout.ms in the
// member's config overrides it and is never asked. Until it is known, the guard is off.

// KeyGroupSessionTimeout is the group config that holds a streams group's session timeout.
const KeyGroupSessionTimeout = "streams.session.timeout.ms"

// sessionAskRetry is how long the member waits before asking for the session timeout again after a
// failure it may recover from (a broker not reachable yet). An authorization failure is not retried
// before the next rejoin.
const sessionAskRetry = 5 * time.Second

// SessionMargin is how long before the earliest moment the broker could expire the member's session
// the guard gives its tasks up: a tenth of the session timeout.
func SessionMargin(sessionTimeout time.Duration) time.Duration { return sessionTimeout / 10 }

// DescribeSession asks for the group's session timeout (DescribeConfigs of the group config
// streams.session.timeout.ms); answer with SessionDescribed.
type DescribeSession struct{}

// SessionDescribed is the result of a DescribeSession action: the broker's answer as it is, or the
// error that kept it from arriving. The machine reads it.
type SessionDescribed struct {
	Response *kmsg.DescribeConfigsResponse
	Err      error
}

func (DescribeSession) isAction() {}
func (SessionDescribed) isInput() {}

// SessionLostError is the error of an EventSessionLost: no heartbeat sent in the last Unanswered
// was answered, and the broker may expire the member SessionTimeout after the last answered one was
// sent.
type SessionLostError struct {
	Unanswered     time.Duration
	SessionTimeout time.Duration
	// FromConfig says SessionTimeout is session.timeout.ms from the member's config rather than the
	// group's value read from the broker.
	FromConfig bool
}

func (e *SessionLostError) Error() string {
	src := "the group's, from the broker"
	if e.FromConfig {
		src = "session.timeout.ms from this member's config"
	}
	return fmt.Sprintf("no heartbeat answered for %v (session timeout %v, %s): the broker may expire this member and "+
		"give its tasks to others, so they were given up before that could happen and the member rejoins; check the "+
		"network path to the group coordinator", e.Unanswered, e.SessionTimeout, src)
}

// sessionState is what the session guard knows.
type sessionState struct {
	timeout time.Duration // the session timeout in force; 0 while unknown
	// stale says the group's value should be asked for (at the join, and again at every rejoin).
	stale  bool
	asking bool      // a DescribeSession is out
	askAt  time.Time // when to ask again after a failure; zero: at once
	// refused: the broker refused to tell (authorization); not asked again before the next rejoin.
	refused bool
	// sentAt is when the heartbeat in flight (or the last one) was sent; answeredSent when the last
	// answered one was, zero when none was since the member (re)joined.
	sentAt, answeredSent time.Time
	// discard is the sequence number of a heartbeat that was in flight when the guard fired: its
	// answer belongs to the membership the member gave up and is dropped.
	discard uint64
}

// init sets the session timeout from the member's config (never asked), or marks it to be asked.
func (s *sessionState) init(override time.Duration) {
	s.timeout = override
	s.stale = override <= 0
}

// sessionAskAt is when to ask for the group's session timeout (zero: not now).
func (m *Machine) sessionAskAt() time.Time {
	s := &m.session
	if !s.stale || s.asking || s.refused || m.state == PrepareLeaving || !m.heartbeating() {
		return time.Time{}
	}
	if s.askAt.IsZero() {
		return m.now
	}
	return s.askAt
}

func (m *Machine) askSession() []Action {
	m.session.asking = true
	return []Action{DescribeSession{}}
}

// sessionDescribed reads the group's session timeout from the broker's answer.
func (m *Machine) sessionDescribed(now time.Time, in SessionDescribed) []Action {
	s := &m.session
	if !s.asking {
		return nil
	}
	s.asking = false
	d, err := sessionTimeoutFrom(in.Response, in.Err, m.cfg.Join.Group)
	if err != nil {
		if errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
			s.refused = true
			return []Action{Log{Level: slog.LevelWarn, Msg: "session guard off: this client may not read the group's " +
				"configs; grant DESCRIBE_CONFIGS on the group (application.id), or set session.timeout.ms in the member's config",
				Attrs: []any{"err", err}}}
		}
		s.askAt = now.Add(sessionAskRetry)
		return []Action{Log{Level: slog.LevelDebug, Msg: "could not read the group's session timeout; asking again later",
			Attrs: []any{"err", err, "retry_in", sessionAskRetry}}}
	}
	s.stale, s.askAt = false, time.Time{}
	if d == s.timeout {
		return nil
	}
	s.timeout = d
	return []Action{Log{Level: slog.LevelInfo, Msg: "session guard armed", Attrs: []any{"session_timeout", d,
		"gives_tasks_up_after", d - SessionMargin(d)}}}
}

// sessionTimeoutFrom reads streams.session.timeout.ms for group from a DescribeConfigs answer.
func sessionTimeoutFrom(resp *kmsg.DescribeConfigsResponse, sendErr error, group string) (time.Duration, error) {
	if sendErr != nil {
		return 0, sendErr
	}
	if resp == nil {
		return 0, errors.New("describing the group's configs: no answer")
	}
	for _, r := range resp.Resources {
		if r.ResourceType != kmsg.ConfigResourceTypeGroupConfig || r.ResourceName != group {
			continue
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil && *r.ErrorMessage != "" {
				return 0, fmt.Errorf("describing the group's configs: %w: %s", err, *r.ErrorMessage)
			}
			return 0, fmt.Errorf("describing the group's configs: %w", err)
		}
		for _, c := range r.Configs {
			if c.Name != KeyGroupSessionTimeout {
				continue
			}
			if c.Value == nil {
				return 0, fmt.Errorf("describing the group's configs: %s has no value", KeyGroupSessionTimeout)
			}
			ms, err := strconv.ParseInt(strings.TrimSpace(*c.Value), 10, 32)
			if err != nil || ms <= 0 {
				return 0, fmt.Errorf("describing the group's configs: %s=%q is not a positive INT", KeyGroupSessionTimeout, *c.Value)
			}
			return time.Duration(ms) * time.Millisecond, nil
		}
		return 0, fmt.Errorf("describing the group's configs: the broker did not return %s", KeyGroupSessionTimeout)
	}
	return 0, fmt.Errorf("describing the group's configs: the answer does not describe group %q", group)
}

// guardAt is when the member gives its tasks up unless a heartbeat is answered first (zero: the
// guard is off). It watches a heartbeating member once a heartbeat of its current membership was
// answered (answeredSent is cleared at every rejoin); PrepareLeaving is left alone, as the member is
// already giving its tasks up there.
func (m *Machine) guardAt() time.Time {
	s := &m.session
	if s.timeout <= 0 || s.answeredSent.IsZero() || m.state == PrepareLeaving || !m.heartbeating() {
		return time.Time{}
	}
	return s.answeredSent.Add(s.timeout - SessionMargin(s.timeout))
}

// sessionLost gives the tasks up and rejoins, as after a fencing, before the broker can expire the
// member and reassign them.
func (m *Machine) sessionLost(now time.Time) []Action {
	s := &m.session
	err := &SessionLostError{Unanswered: now.Sub(s.answeredSent), SessionTimeout: s.timeout, FromConfig: m.cfg.SessionTimeout > 0}
	if m.hb.inFlight {
		s.discard = m.hb.seq
	}
	// Offsets being collected would go with the rejoin of a member that holds nothing; the rejoin
	// collects afresh (lostThenRejoin sets the trigger).
	m.hb.collecting = nil
	m.b.Reset()
	return m.loseThenRejoin(Event{Kind: EventSessionLost, Err: err})
}

// rejoined is called when the member rejoins after losing its tasks: the guard waits for the first
// answer of the new membership, and the group's session timeout is read again.
func (s *sessionState) rejoined(override time.Duration) {
	s.answeredSent = time.Time{}
	if override <= 0 {
		s.stale, s.refused, s.askAt = true, false, time.Time{}
	}
}
