package machine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const testGroup = "app"

// sessionConfigAnswer is a DescribeConfigs answer that gives group's streams.session.timeout.ms as
// value.
func sessionConfigAnswer(group, value string) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	r := kmsg.NewDescribeConfigsResponseResource()
	r.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	r.ResourceName = group
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = KeyGroupSessionTimeout
	c.Value = kmsg.StringPtr(value)
	r.Configs = append(r.Configs, c)
	resp.Resources = append(resp.Resources, r)
	return resp
}

// countActions counts the actions so far for which match holds.
func (h *harness) countActions(match func(Action) bool) int {
	n := 0
	for _, a := range h.actions {
		if match(a) {
			n++
		}
	}
	return n
}

// describeSessions counts the DescribeSession actions so far.
func (h *harness) describeSessions() int {
	return h.countActions(func(a Action) bool { _, ok := a.(DescribeSession); return ok })
}

// guardedStable is a member Stable at epoch 1 with 0_0 and 0_1, whose group's session timeout the
// broker said is 6 s.
func guardedStable(t *testing.T) *harness {
	h := newHarness(t)
	h.start()
	if h.describeSessions() != 1 {
		t.Fatalf("the join asked for the session timeout %d times, want 1", h.describeSessions())
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	if got := h.m.Snapshot().SessionTimeout; got != 6*time.Second {
		t.Fatalf("session timeout %v, want 6s", got)
	}
	h.mustSend()
	h.answer(resp(1, active("0_0", "0_1")))
	h.complete(nil)
	h.mustSend()
	h.answer(resp(1, nil))
	h.expectState(Stable)
	return h
}

// A member cut off from the coordinator gives its tasks up when no heartbeat was answered for the
// session timeout minus the margin, measured from the send time of the last answered heartbeat,
// and rejoins at epoch 0 with the same member ID, asking for the session timeout again.
func TestSessionGuardGivesTasksUpBeforeTheBrokerCan(t *testing.T) {
	h := guardedStable(t)
	h.advance(interval)
	h.mustSend()
	lastAnsweredSend := h.now
	h.advance(3 * time.Millisecond)
	h.answer(resp(1, nil))
	deadline := lastAnsweredSend.Add(6*time.Second - 600*time.Millisecond)
	if got := h.m.Next(); !got.Equal(h.now.Add(interval)) {
		t.Fatalf("next wake-up %v after the answer, want the heartbeat's %v", got.Sub(h.now), interval)
	}
	// Every heartbeat from now on fails: the network is cut.
	for {
		if req := h.tick(); req != nil {
			h.cut(errors.New("dial tcp: connection refused"))
		}
		next := h.m.Next()
		if next.After(deadline) || next.IsZero() {
			t.Fatalf("the member would sleep until %v, past the guard's deadline (%v after the last answered send)",
				next.Sub(lastAnsweredSend), deadline.Sub(lastAnsweredSend))
		}
		if next.Equal(deadline) {
			break
		}
		h.now = next
	}
	h.now = deadline.Add(-time.Millisecond)
	h.step(Tick{})
	if h.hasEvent(EventSessionLost) || h.m.State() != Stable {
		t.Fatalf("gave up 1 ms early: state %s", h.m.State())
	}
	h.now = deadline
	h.step(Tick{})
	h.expectState(Fenced)
	ev := h.lastEvent(EventSessionLost)
	var sle *SessionLostError
	if !errors.As(ev.Err, &sle) || sle.SessionTimeout != 6*time.Second || sle.Unanswered != 5400*time.Millisecond || sle.FromConfig {
		t.Fatalf("event error %#v", ev.Err)
	}
	if msg := ev.Err.Error(); !strings.Contains(msg, "check the network path to the group coordinator") ||
		!strings.Contains(msg, "the group's, from the broker") {
		t.Errorf("message %q", msg)
	}
	if h.hasEvent(EventFenced) {
		t.Error("a session loss is not reported as a fencing by the broker")
	}
	h.expectInvoke(CallbackLost, "active=[0_0 0_1] standby=[] warmup=[]")
	h.complete(nil)
	h.expectState(Joining)
	if !h.owned().IsEmpty() {
		t.Fatalf("still holds %v after OnAllTasksLost", h.owned())
	}
	if h.describeSessions() != 2 {
		t.Fatalf("the rejoin asked for the session timeout %d times in all, want 2", h.describeSessions())
	}
	req := h.mustSend()
	if req.MemberEpoch != 0 || req.MemberID != "member-1" {
		t.Fatalf("rejoin epoch %d member %q, want 0 and the same member ID", req.MemberEpoch, req.MemberID)
	}
	if req.Topology == nil || owned(req) != "active=[] standby=[] warmup=[]" {
		t.Fatalf("the rejoin is not a full join reporting nothing owned: topology %v, owned %s", req.Topology != nil, owned(req))
	}
	// Once the network is back the member gets its tasks again.
	h.answer(resp(2, active("0_0")))
	h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
}

// The guard is measured from the send time of the last answered heartbeat, not from when its answer
// arrived: a slow answer moves the deadline only by when the heartbeat left.
func TestSessionGuardCountsFromTheSendTime(t *testing.T) {
	h := guardedStable(t)
	h.advance(interval)
	h.mustSend()
	sent := h.now
	h.advance(2 * time.Second) // a slow answer
	h.answer(resp(1, nil))
	if got, want := h.m.guardAt(), sent.Add(5400*time.Millisecond); !got.Equal(want) {
		t.Fatalf("guard at %v after the send, want %v", got.Sub(sent), want.Sub(sent))
	}
}

// A heartbeat that is in flight when the guard fires belongs to the membership given up: its answer
// is dropped (no second assignment of the old epoch), and only then does the rejoin go (never two
// heartbeats in flight).
func TestSessionGuardDropsTheAnswerInFlight(t *testing.T) {
	h := guardedStable(t)
	h.advance(interval)
	h.mustSend()
	h.answer(resp(1, nil))
	answeredSend := h.now.Add(-0) // sent and answered at the same instant
	h.advance(interval)
	h.mustSend() // this one hangs
	hung := h.lastSeq()
	h.now = answeredSend.Add(5400 * time.Millisecond)
	h.step(Tick{})
	h.expectState(Fenced)
	h.complete(nil) // OnAllTasksLost
	h.expectState(Joining)
	if req := h.tick(); req != nil {
		t.Fatal("a rejoin went while the old heartbeat was still in flight")
	}
	h.step(HeartbeatDone{Seq: hung, Response: resp(1, active("0_0", "0_1"))})
	if h.m.Epoch() != 0 {
		t.Fatalf("the old answer set epoch %d", h.m.Epoch())
	}
	req := h.mustSend()
	if req.MemberEpoch != 0 {
		t.Fatalf("rejoin at epoch %d", req.MemberEpoch)
	}
}

// The guard is off while the session timeout is unknown, before the first answer, at epoch 0 and
// in PrepareLeaving; session.timeout.ms from the config arms it without asking the broker.
func TestSessionGuardOffUntilArmed(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.mustSend()
	h.answer(resp(1, active("0_0")))
	h.complete(nil)
	h.mustSend()
	h.answer(resp(1, nil))
	if !h.m.guardAt().IsZero() {
		t.Fatal("armed without knowing the session timeout")
	}
	h.advance(time.Hour)
	h.step(Tick{})
	if h.hasEvent(EventSessionLost) {
		t.Fatal("gave the tasks up without knowing the session timeout")
	}

	h = newHarness(t, func(c *Config) { c.SessionTimeout = 2 * time.Second })
	h.start()
	if h.describeSessions() != 0 {
		t.Fatal("asked the broker although session.timeout.ms was set")
	}
	if !h.m.guardAt().IsZero() {
		t.Fatal("armed before the first answer")
	}
	h.mustSend()
	sent := h.now
	h.answer(resp(1, active("0_0")))
	if got := h.m.guardAt(); !got.Equal(sent.Add(1800 * time.Millisecond)) {
		t.Fatalf("guard at %v after the send, want 1.8s", got.Sub(sent))
	}
	h.complete(nil)
	h.mustSend()
	h.answer(resp(1, nil))
	h.close(CloseDefault)
	h.expectState(PrepareLeaving)
	if !h.m.guardAt().IsZero() {
		t.Fatal("armed in PrepareLeaving, where the tasks are being given up already")
	}
	h.advance(time.Hour)
	h.step(Tick{})
	if h.hasEvent(EventSessionLost) {
		t.Fatal("session lost while leaving")
	}
	var sle *SessionLostError = &SessionLostError{SessionTimeout: time.Second, FromConfig: true}
	if !strings.Contains(sle.Error(), "session.timeout.ms from this member's config") {
		t.Errorf("%q", sle.Error())
	}
}

// Reading the answer: errors are retried later, an authorization refusal only at the next rejoin,
// and a malformed value is an error, never a timeout of 0.
func TestSessionTimeoutFromAnswer(t *testing.T) {
	mk := func(mut func(r *kmsg.DescribeConfigsResponseResource)) *kmsg.DescribeConfigsResponse {
		a := sessionConfigAnswer(testGroup, "45000")
		mut(&a.Resources[0])
		return a
	}
	if d, _, err := sessionTimeoutFrom(sessionConfigAnswer(testGroup, " 45000 "), nil, kmsg.ConfigResourceTypeGroupConfig, testGroup, KeyGroupSessionTimeout); err != nil || d != 45*time.Second {
		t.Fatalf("%v %v", d, err)
	}
	for name, c := range map[string]struct {
		resp *kmsg.DescribeConfigsResponse
		err  error
		want string
	}{
		"send error":   {nil, errors.New("boom"), "boom"},
		"no answer":    {nil, nil, "no answer"},
		"other group":  {sessionConfigAnswer("other", "1"), nil, `does not describe group "app"`},
		"other type":   {mk(func(r *kmsg.DescribeConfigsResponseResource) { r.ResourceType = kmsg.ConfigResourceTypeTopic }), nil, "does not describe"},
		"error code":   {mk(func(r *kmsg.DescribeConfigsResponseResource) { r.ErrorCode = kerr.GroupAuthorizationFailed.Code }), nil, "GROUP_AUTHORIZATION_FAILED"},
		"message":      {mk(func(r *kmsg.DescribeConfigsResponseResource) { r.ErrorCode = 2; r.ErrorMessage = kmsg.StringPtr("why") }), nil, ": why"},
		"null value":   {mk(func(r *kmsg.DescribeConfigsResponseResource) { r.Configs[0].Value = nil }), nil, "has no value"},
		"zero":         {sessionConfigAnswer(testGroup, "0"), nil, "not a positive INT"},
		"negative":     {sessionConfigAnswer(testGroup, "-5"), nil, "not a positive INT"},
		"not a number": {sessionConfigAnswer(testGroup, "6s"), nil, "not a positive INT"},
		"too big":      {sessionConfigAnswer(testGroup, "2147483648"), nil, "not a positive INT"},
		"missing":      {mk(func(r *kmsg.DescribeConfigsResponseResource) { r.Configs[0].Name = "x" }), nil, "did not return streams.session.timeout.ms"},
	} {
		if d, _, err := sessionTimeoutFrom(c.resp, c.err, kmsg.ConfigResourceTypeGroupConfig, testGroup, KeyGroupSessionTimeout); err == nil || d != 0 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v %v, want an error with %q", name, d, err, c.want)
		}
	}

	h := newHarness(t)
	h.start()
	h.step(SessionDescribed{Err: errors.New("connection refused")})
	if h.m.Snapshot().SessionTimeout != 0 || h.describeSessions() != 1 {
		t.Fatal("a failure set a timeout or asked again at once")
	}
	h.advance(sessionAskRetry - time.Millisecond)
	h.step(Tick{})
	if h.describeSessions() != 1 {
		t.Fatal("asked again before the retry delay")
	}
	h.advance(time.Millisecond)
	h.step(Tick{})
	if h.describeSessions() != 2 {
		t.Fatal("not asked again after the retry delay")
	}
	h.step(SessionDescribed{Response: mk(func(r *kmsg.DescribeConfigsResponseResource) { r.ErrorCode = kerr.GroupAuthorizationFailed.Code })})
	h.advance(time.Hour)
	h.step(Tick{})
	if h.describeSessions() != 2 {
		t.Fatal("asked again after an authorization refusal")
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	if h.m.Snapshot().SessionTimeout != 0 {
		t.Fatal("an answer nobody asked for was taken")
	}
}

// A rejoin reads the group's session timeout again, also after the broker refused to tell (the ACL
// may have been granted since), and clears the guard until the new membership's first answer. A
// value already known is not announced again.
func TestSessionGuardRejoinAsksAgain(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "x")}) // not a number: asked again later
	h.advance(sessionAskRetry)
	h.step(Tick{})
	refusal := sessionConfigAnswer(testGroup, "x")
	refusal.Resources[0].ErrorCode = kerr.GroupAuthorizationFailed.Code
	h.step(SessionDescribed{Response: refusal})
	h.mustSend()
	h.answer(resp(1, active("0_0")))
	h.complete(nil)
	h.mustSend()
	h.answer(resp(1, nil))
	asked := h.describeSessions()
	h.advance(interval)
	h.mustSend()
	h.fail(kerr.FencedMemberEpoch.Code)
	h.complete(nil) // OnAllTasksLost
	h.expectState(Joining)
	if h.describeSessions() != asked+1 {
		t.Fatalf("the rejoin after a refusal asked %d times, want once", h.describeSessions()-asked)
	}
	if !h.m.guardAt().IsZero() {
		t.Fatal("the guard is armed before the rejoin was answered")
	}
	armed := func() int {
		return h.countActions(func(a Action) bool { l, ok := a.(Log); return ok && l.Msg == "session guard armed" })
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	h.mustSend()
	sent := h.now
	h.answer(resp(2, active("0_0")))
	if got := h.m.guardAt(); !got.Equal(sent.Add(5400 * time.Millisecond)) {
		t.Fatalf("guard at %v after the rejoin's send, want 5.4s", got.Sub(sent))
	}
	h.complete(nil)
	h.mustSend()
	h.answer(resp(2, nil))
	h.advance(interval)
	h.mustSend()
	h.fail(kerr.UnknownMemberID.Code)
	h.complete(nil)
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	if armed() != 1 {
		t.Fatalf("%d \"session guard armed\" lines for one value, want 1", armed())
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "8000")})
	if h.m.Snapshot().SessionTimeout != 6*time.Second {
		t.Fatal("took an answer nobody asked for")
	}
}

// session.timeout.ms from the config: the event says where the timeout came from.
func TestSessionGuardFromConfig(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SessionTimeout = 2 * time.Second })
	h.stableWith(active("0_0"))
	h.advance(2 * time.Second)
	h.step(Tick{})
	if req := h.tick(); req != nil {
		h.cut(errors.New("connection refused"))
	}
	h.advance(2 * time.Second)
	h.step(Tick{})
	var sle *SessionLostError
	if !errors.As(h.lastEvent(EventSessionLost).Err, &sle) || !sle.FromConfig || sle.SessionTimeout != 2*time.Second {
		t.Fatalf("%#v", sle)
	}
}

// A group value from the built-in default (Kafka 4.2 reports 45 s even when the broker sets
// another) is checked against the coordinator's group.streams.session.timeout.ms, which wins; if
// that cannot be read, the group's value stands.
func TestSessionTimeoutFromTheCoordinatorsDefault(t *testing.T) {
	defaulted := sessionConfigAnswer(testGroup, "45000")
	defaulted.Resources[0].Configs[0].Source = configSourceDefault
	broker := func(value string) *kmsg.DescribeConfigsResponse {
		a := sessionConfigAnswer("1", value)
		a.Resources[0].ResourceType = kmsg.ConfigResourceTypeBroker
		a.Resources[0].Configs[0].Name = KeyBrokerSessionTimeout
		return a
	}
	brokerAsks := func(h *harness) int {
		return h.countActions(func(a Action) bool { d, ok := a.(DescribeSession); return ok && d.BrokerDefault })
	}
	h := newHarness(t)
	h.start()
	h.step(SessionDescribed{Response: defaulted})
	if brokerAsks(h) != 1 || h.m.Snapshot().SessionTimeout != 0 {
		t.Fatalf("a defaulted group value: %d coordinator asks, timeout %v; want 1 ask and none yet", brokerAsks(h), h.m.Snapshot().SessionTimeout)
	}
	h.step(SessionDescribed{Response: broker("6000")})
	if got := h.m.Snapshot().SessionTimeout; got != 6*time.Second {
		t.Fatalf("timeout %v, want the coordinator's 6s", got)
	}

	h = newHarness(t)
	h.start()
	h.step(SessionDescribed{Response: defaulted})
	refused := broker("1")
	refused.Resources[0].ErrorCode = kerr.ClusterAuthorizationFailed.Code
	h.step(SessionDescribed{Response: refused})
	if got := h.m.Snapshot().SessionTimeout; got != 45*time.Second || h.describeSessions() != 2 {
		t.Fatalf("timeout %v after %d asks, want the group's 45s after 2", got, h.describeSessions())
	}
	h.advance(time.Hour)
	h.step(Tick{})
	if h.describeSessions() != 2 {
		t.Fatal("asked again after the coordinator's config was refused")
	}

	// No coordinator yet: the group's value meanwhile, both asked again after the retry delay.
	h = newHarness(t)
	h.start()
	h.step(SessionDescribed{Response: defaulted})
	h.step(SessionDescribed{Err: errors.New("COORDINATOR_NOT_AVAILABLE")})
	if got := h.m.Snapshot().SessionTimeout; got != 45*time.Second {
		t.Fatalf("timeout %v meanwhile, want the group's 45s", got)
	}
	h.advance(sessionAskRetry - time.Millisecond)
	h.step(Tick{})
	if h.describeSessions() != 2 {
		t.Fatal("asked again before the retry delay")
	}
	h.advance(time.Millisecond)
	h.step(Tick{})
	h.step(SessionDescribed{Response: defaulted})
	h.step(SessionDescribed{Response: broker("6000")})
	if got := h.m.Snapshot().SessionTimeout; got != 6*time.Second || h.describeSessions() != 4 {
		t.Fatalf("timeout %v after %d asks, want the coordinator's 6s after 4", got, h.describeSessions())
	}

	set := sessionConfigAnswer(testGroup, "8000") // the group's own value: no second ask
	h = newHarness(t)
	h.start()
	h.step(SessionDescribed{Response: set})
	if brokerAsks(h) != 0 || h.m.Snapshot().SessionTimeout != 8*time.Second {
		t.Fatalf("a group value of its own: %d coordinator asks, timeout %v", brokerAsks(h), h.m.Snapshot().SessionTimeout)
	}
	for name, c := range map[string]*kmsg.DescribeConfigsResponse{
		"not a broker": sessionConfigAnswer(testGroup, "6000"),
		"other key":    func() *kmsg.DescribeConfigsResponse { a := broker("1"); a.Resources[0].Configs[0].Name = "x"; return a }(),
	} {
		if _, _, err := sessionTimeoutFrom(c, nil, kmsg.ConfigResourceTypeBroker, "", KeyBrokerSessionTimeout); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}
