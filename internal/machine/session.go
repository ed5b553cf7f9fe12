package machine

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
// up locally (OnAllTasksLost, with the running callback's context cancelled) before the broker can
// reassign them, but keeps its identity: it goes on heartbeating at its current epoch. If the
// broker still has it, the next answer hands the target back (OnTasksAssigned); if the broker
// expired it, it says UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH and the member rejoins at epoch 0 as
// after any fencing. A static member thus never joins at epoch 0 while the broker may still hold its
// group.instance.id (which would be UNRELEASED_INSTANCE_ID, fatal). Measuring from the send time
// (not the answer's arrival) keeps the guard on the safe side of any round trip.
//
// A coordinator that answers COORDINATOR_LOAD_IN_PROGRESS is loading the group and restarts every
// member's session timer when it has loaded (Kafka's GroupMetadataManager.onLoaded), so such an
// answer re-arms the guard from its send time; so does the first NOT_COORDINATOR in a row (the
// coordinator moved after the last answered heartbeat, and the new one restarts the timers when it
// loads). A failover therefore does not cost the group its tasks.
//
// The session timeout is the group's and only the group's (Kafka's consumer refuses
// session.timeout.ms under the new protocols, and Kafka Streams ignores it): the group config
// streams.session.timeout.ms, which Kafka 4.3+ brokers fill in from group.streams.session.timeout.ms
// when the group has none, read with DescribeConfigs at the coordinator when the member starts and
// every sessionRefresh after that (kafka-configs can change it while the group runs). Until it is
// known, the guard is off. A refusal (no DESCRIBE_CONFIGS on the group) is warned about once per
// member life. Kafka 4.2 answers a group without its own value with the built-in default (45 s,
// source DEFAULT_CONFIG) even when the broker sets another, so an answer from the default is
// checked against the coordinator's group.streams.session.timeout.ms (DescribeSession{BrokerDefault:
// true}).

// KeyGroupSessionTimeout is the group config that holds a streams group's session timeout, and
// KeyBrokerSessionTimeout the broker config it defaults to.
const (
	KeyGroupSessionTimeout  = "streams.session.timeout.ms"
	KeyBrokerSessionTimeout = "group.streams.session.timeout.ms"
)

// sessionAskRetry is how long the member waits before asking for the session timeout again after a
// failure it may recover from (a broker not reachable yet); sessionRefresh how often it reads the
// group's value again once known, or after a refusal (the ACL may be granted meanwhile).
const (
	sessionAskRetry = 5 * time.Second
	sessionRefresh  = time.Minute
)

// SessionMargin is how long before the earliest moment the broker could expire the member's session
// the guard gives its tasks up: a tenth of the session timeout.
func SessionMargin(sessionTimeout time.Duration) time.Duration { return sessionTimeout / 10 }

// DescribeSession asks the group's coordinator for the config named Config, once, for at most
// Timeout: of the group (DescribeConfigs of resource type GROUP: streams.session.timeout.ms), or
// with BrokerDefault of the coordinator's broker (resource type BROKER: the default the group falls
// back to, group.streams.session.timeout.ms); answer with SessionDescribed.
type DescribeSession struct {
	BrokerDefault bool
	Config        string
	Timeout       time.Duration
}

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
}

func (e *SessionLostError) Error() string {
	return fmt.Sprintf("no heartbeat answered for %v (session timeout %v, the group's): the broker may expire this member and "+
		"give its tasks to others, so they were given up before that could happen; the member keeps heartbeating and "+
		"gets them back if the broker still has it, or rejoins if the broker expired it; check the "+
		"network path to the group coordinator", e.Unanswered, e.SessionTimeout)
}

// sessionState is what the session guard knows.
type sessionState struct {
	timeout time.Duration // the session timeout in force; 0 while unknown
	asking  bool          // a DescribeSession is out
	// defaulted is the group's value when the broker said it came from the built-in default: the
	// coordinator's broker config is asked (a DescribeSession with BrokerDefault is out) and wins.
	defaulted time.Duration
	askAt     time.Time // when to ask next (again after a failure, or to refresh); zero: at once
	// warned: a refusal (authorization) was warned about; later ones are logged at debug level.
	warned bool
	// sentAt is when the heartbeat in flight (or the last one) was sent; answeredSent when the last
	// answered one was (or the last one the coordinator's answer re-armed the guard for), zero when
	// none was since the member (re)joined.
	sentAt, answeredSent time.Time
	// tripped: the guard fired and the tasks were given up locally; the member heartbeats at its
	// epoch and takes the target back only after an answer (a fencing rejoins it instead).
	tripped bool
}

// sessionAskAt is when to ask for the group's session timeout (zero: not now).
func (m *Machine) sessionAskAt() time.Time {
	s := &m.session
	if s.asking || !m.mayAskSession() {
		return time.Time{}
	}
	if s.askAt.IsZero() {
		return m.now
	}
	return s.askAt
}

// mayAskSession says whether the member is where it reads the session timeout: in the group and
// heartbeating, not leaving.
func (m *Machine) mayAskSession() bool { return m.state != PrepareLeaving && m.heartbeating() }

func (m *Machine) askSession() []Action {
	m.session.asking = true
	return []Action{DescribeSession{Config: KeyGroupSessionTimeout, Timeout: m.cfg.RequestTimeout}}
}

// configSourceDefault is DescribeConfigs' source of a value that no one set (DEFAULT_CONFIG).
const configSourceDefault = 5

// sessionDescribed reads the group's session timeout from the broker's answer.
func (m *Machine) sessionDescribed(now time.Time, in SessionDescribed) []Action {
	s := &m.session
	if !s.asking {
		return nil
	}
	s.asking = false
	if s.defaulted > 0 {
		return m.brokerSessionDescribed(now, in)
	}
	d, fromDefault, err := sessionTimeoutFrom(in.Response, in.Err, kmsg.ConfigResourceTypeGroupConfig, m.cfg.Join.Group, KeyGroupSessionTimeout)
	if err == nil && fromDefault && m.mayAskSession() {
		// Maybe Kafka 4.2's built-in default rather than the broker's: ask the coordinator.
		s.defaulted, s.asking = d, true
		return []Action{DescribeSession{BrokerDefault: true, Config: KeyBrokerSessionTimeout, Timeout: m.cfg.RequestTimeout}}
	}
	if err != nil {
		if errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
			s.askAt = now.Add(sessionRefresh)
			level := slog.LevelDebug
			if !s.warned {
				s.warned, level = true, slog.LevelWarn
			}
			return []Action{Log{Level: level, Msg: "session guard off: this client may not read the group's " +
				"configs; grant DESCRIBE_CONFIGS on the group (application.id) so that the member can give its tasks up " +
				"before the broker expires it across a network partition", Attrs: []any{"err", err}}}
		}
		s.askAt = now.Add(sessionAskRetry)
		return []Action{Log{Level: slog.LevelDebug, Msg: "could not read the group's session timeout; asking again later",
			Attrs: []any{"err", err, "retry_in", sessionAskRetry}}}
	}
	return m.sessionKnown(now, d)
}

// brokerSessionDescribed reads the coordinator's group.streams.session.timeout.ms, asked because
// the group's value came from the built-in default. If the client may not read it, the group's value
// stands (Kafka 4.3+ reports the broker's value there, only 4.2 does not); after a failure that may
// pass (no coordinator yet) the group's value holds meanwhile and both are asked again later.
func (m *Machine) brokerSessionDescribed(now time.Time, in SessionDescribed) []Action {
	s := &m.session
	group := s.defaulted
	s.defaulted = 0
	d, _, err := sessionTimeoutFrom(in.Response, in.Err, kmsg.ConfigResourceTypeBroker, "", KeyBrokerSessionTimeout)
	if err == nil {
		return m.sessionKnown(now, d)
	}
	if errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.TopicAuthorizationFailed) || in.Err == nil {
		// Refused, or an answer without the value: asking again would not help.
		return append([]Action{Log{Level: slog.LevelDebug, Msg: "could not read the coordinator's default session timeout; " +
			"using the group's", Attrs: []any{"err", err, "session_timeout", group}}}, m.sessionKnown(now, group)...)
	}
	out := m.sessionKnown(now, group)
	s.askAt = now.Add(sessionAskRetry)
	return append(out, Log{Level: slog.LevelDebug, Msg: "could not read the coordinator's default session timeout yet; " +
		"using the group's meanwhile and asking again later", Attrs: []any{"err", err, "session_timeout", group, "retry_in", sessionAskRetry}})
}

// sessionKnown arms the guard with session timeout d and reads it again after sessionRefresh.
func (m *Machine) sessionKnown(now time.Time, d time.Duration) []Action {
	s := &m.session
	s.askAt = now.Add(sessionRefresh)
	if d == s.timeout {
		return nil
	}
	s.timeout = d
	return []Action{Log{Level: slog.LevelInfo, Msg: "session guard armed", Attrs: []any{"session_timeout", d,
		"gives_tasks_up_after", d - SessionMargin(d)}}}
}

// sessionTimeoutFrom reads the INT of milliseconds key of the resource of type typ named name ("":
// any name) from a DescribeConfigs answer, and whether it came from the built-in default.
func sessionTimeoutFrom(resp *kmsg.DescribeConfigsResponse, sendErr error, typ kmsg.ConfigResourceType, name, key string) (time.Duration, bool, error) {
	what := "the group's configs"
	if typ == kmsg.ConfigResourceTypeBroker {
		what = "the coordinator's configs"
	}
	if sendErr != nil {
		return 0, false, sendErr
	}
	if resp == nil {
		return 0, false, fmt.Errorf("describing %s: no answer", what)
	}
	for _, r := range resp.Resources {
		if r.ResourceType != typ || name != "" && r.ResourceName != name {
			continue
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil && *r.ErrorMessage != "" {
				return 0, false, fmt.Errorf("describing %s: %w: %s", what, err, *r.ErrorMessage)
			}
			return 0, false, fmt.Errorf("describing %s: %w", what, err)
		}
		for _, c := range r.Configs {
			if c.Name != key {
				continue
			}
			if c.Value == nil {
				return 0, false, fmt.Errorf("describing %s: %s has no value", what, key)
			}
			ms, err := strconv.ParseInt(strings.TrimSpace(*c.Value), 10, 32)
			if err != nil || ms <= 0 {
				return 0, false, fmt.Errorf("describing %s: %s=%q is not a positive INT", what, key, *c.Value)
			}
			return time.Duration(ms) * time.Millisecond, c.Source == configSourceDefault, nil
		}
		return 0, false, fmt.Errorf("describing %s: the broker did not return %s", what, key)
	}
	if typ == kmsg.ConfigResourceTypeBroker {
		return 0, false, fmt.Errorf("describing %s: the answer does not describe a broker", what)
	}
	return 0, false, fmt.Errorf("describing %s: the answer does not describe group %q", what, name)
}

// guardAt is when the member gives its tasks up unless a heartbeat is answered first (zero: the
// guard is off). It watches a heartbeating member once a heartbeat of its current membership was
// answered (answeredSent is cleared at every rejoin), and not again after it fired until an answer
// came; PrepareLeaving is left alone, as the member is already giving its tasks up there.
func (m *Machine) guardAt() time.Time {
	s := &m.session
	if s.timeout <= 0 || s.answeredSent.IsZero() || s.tripped || m.state == PrepareLeaving || !m.heartbeating() {
		return time.Time{}
	}
	return s.answeredSent.Add(s.timeout - SessionMargin(s.timeout))
}

// sessionLost gives the tasks up locally before the broker can expire the member and reassign them,
// and keeps the membership: heartbeats go on at the current epoch (see the top of this file).
func (m *Machine) sessionLost(now time.Time) []Action {
	s := &m.session
	err := &SessionLostError{Unanswered: now.Sub(s.answeredSent), SessionTimeout: s.timeout}
	s.tripped = true
	// The next heartbeat is a full one reporting nothing owned; offsets being collected belong to
	// tasks given up.
	m.hb.collecting = nil
	m.b.Reset()
	m.offsets.trigger = true
	return m.loseLocally(Event{Kind: EventSessionLost, Err: err})
}

// rearm restarts the guard from sent, the send time of a heartbeat the coordinator answered that it
// is loading the group or has moved: the (new) coordinator restarts the member's session timer when
// it loads.
func (s *sessionState) rearm(sent time.Time) {
	if !s.answeredSent.IsZero() && !s.tripped && sent.After(s.answeredSent) {
		s.answeredSent = sent
	}
}

// rejoined is called when the member rejoins after losing its tasks: the guard waits for the first
// answer of the new membership. The session timeout is not read again for it (sessionRefresh does).
func (s *sessionState) rejoined() {
	s.answeredSent, s.tripped = time.Time{}, false
}
