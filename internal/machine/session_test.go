package machine

import (
	"errors"
	"log/slog"
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

// cutUntil fails every heartbeat that goes with err until the guard's deadline; the member never
// sleeps past it.
func (h *harness) cutUntil(deadline time.Time, err error) {
	h.t.Helper()
	for {
		if req := h.tick(); req != nil {
			h.cut(err)
		}
		next := h.m.Next()
		if next.After(deadline) || next.IsZero() {
			h.t.Fatalf("the member would sleep until %v, past the guard's deadline", next)
		}
		if next.Equal(deadline) {
			return
		}
		h.now = next
	}
}

// A member cut off from the coordinator gives its tasks up locally when no heartbeat was answered
// for the session timeout minus the margin, measured from the send time of the last answered
// heartbeat: Assignment shows nothing at once, OnAllTasksLost runs, and the member keeps its
// identity and epoch, heartbeating on; once the broker answers it takes the target back.
func TestSessionGuardGivesTasksUpBeforeTheBrokerCan(t *testing.T) {
	h := guardedStable(t)
	h.advance(interval)
	h.mustSend()
	lastAnsweredSend := h.now
	h.advance(3 * time.Millisecond)
	h.answer(resp(1, nil))
	deadline := lastAnsweredSend.Add(6*time.Second - 600*time.Millisecond)
	if got := h.m.Next(); !got.Equal(lastAnsweredSend.Add(interval)) {
		t.Fatalf("next wake-up %v after the send, want the heartbeat's %v", got.Sub(lastAnsweredSend), interval)
	}
	h.cutUntil(deadline, errors.New("dial tcp: connection refused"))
	h.now = deadline.Add(-time.Millisecond)
	h.step(Tick{})
	if h.hasEvent(EventSessionLost) || h.m.State() != Stable {
		t.Fatalf("gave up 1 ms early: state %s", h.m.State())
	}
	h.now = deadline
	h.step(Tick{})
	h.expectState(Reconciling)
	ev := h.lastEvent(EventSessionLost)
	var sle *SessionLostError
	if !errors.As(ev.Err, &sle) || sle.SessionTimeout != 6*time.Second || sle.Unanswered != 5400*time.Millisecond {
		t.Fatalf("event error %#v", ev.Err)
	}
	if msg := ev.Err.Error(); !strings.Contains(msg, "check the network path to the group coordinator") ||
		!strings.Contains(msg, "the group's") {
		t.Errorf("message %q", msg)
	}
	if h.hasEvent(EventFenced) {
		t.Error("a session loss is not reported as a fencing by the broker")
	}
	if !h.owned().IsEmpty() {
		t.Fatalf("Assignment still shows %v while OnAllTasksLost runs", h.owned())
	}
	h.expectInvoke(CallbackLost, "active=[0_0 0_1] standby=[] warmup=[]")
	h.complete(nil)
	h.expectState(Reconciling)
	if h.describeSessions() != 1 {
		t.Fatalf("the session timeout was asked %d times in all, want once per member life", h.describeSessions())
	}
	// The next heartbeat keeps the member's identity: same member ID, same epoch, a full request
	// reporting nothing owned, no topology (not a join).
	for {
		req := h.tick()
		if req != nil {
			if req.MemberEpoch != 1 || req.MemberID != "member-1" {
				t.Fatalf("after the guard: epoch %d member %q, want the same epoch 1 and member ID", req.MemberEpoch, req.MemberID)
			}
			if req.Topology != nil || owned(req) != "active=[] standby=[] warmup=[]" || req.ProcessID == nil {
				t.Fatalf("not a full heartbeat reporting nothing owned: topology %v, owned %s", req.Topology != nil, owned(req))
			}
			break
		}
		h.now = h.m.Next()
	}
	if n := h.countActions(func(a Action) bool { _, ok := a.(Invoke); return ok }); n != 2 {
		t.Fatalf("%d callbacks before the broker answered, want only OnTasksAssigned and OnAllTasksLost", n)
	}
	// The network is back and the broker still has the member: it gets the target back.
	h.answer(resp(1, nil))
	h.expectInvoke(CallbackAssigned, "active=[0_0 0_1] standby=[] warmup=[]")
	h.complete(nil)
	h.mustSend()
	h.answer(resp(1, nil))
	h.expectState(Stable)
	if got := h.owned().String(); got != "active=[0_0 0_1] standby=[] warmup=[]" {
		t.Fatalf("owns %s", got)
	}
}

// A static member whose guard fired keeps heartbeating at its epoch with its group.instance.id: a
// join at epoch 0 while the broker still holds the instance would be UNRELEASED_INSTANCE_ID, fatal.
// It rejoins at epoch 0 only when the broker says it expired the member.
func TestSessionGuardStaticMemberRejoinsOnlyWhenTheBrokerSays(t *testing.T) {
	h := newHarness(t, static)
	h.start()
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	h.mustSend()
	h.answer(resp(1, active("0_0")))
	h.complete(nil)
	h.mustSend()
	sent := h.now
	h.answer(resp(1, nil))
	deadline := sent.Add(5400 * time.Millisecond)
	h.cutUntil(deadline, errors.New("i/o timeout"))
	h.now = deadline
	h.step(Tick{})
	h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
	h.complete(nil)
	// Until the session can have expired, and after, the member heartbeats at epoch 1.
	for h.now.Before(sent.Add(30 * time.Second)) {
		if req := h.tick(); req != nil {
			if req.MemberEpoch != 1 || req.InstanceID == nil || *req.InstanceID != "instance-a" {
				t.Fatalf("heartbeat at epoch %d instance %v, want epoch 1 with the instance ID", req.MemberEpoch, req.InstanceID)
			}
			h.cut(errors.New("i/o timeout"))
		}
		h.now = h.m.Next()
	}
	// The network is back; the broker expired the member meanwhile.
	h.mustSend()
	h.fail(kerr.UnknownMemberID.Code)
	h.expectState(Joining)
	h.now = h.m.Next()
	req := h.mustSend()
	if req.MemberEpoch != 0 || req.MemberID != "member-1" || req.InstanceID == nil {
		t.Fatalf("rejoin epoch %d member %q instance %v", req.MemberEpoch, req.MemberID, req.InstanceID)
	}
	if h.countEvents(EventFatal) != 0 {
		t.Fatal("fatal")
	}
}

// A coordinator that answers COORDINATOR_LOAD_IN_PROGRESS (a failover, a slow load) restarts every
// member's session when it has loaded: each such answer re-arms the guard, so 5.4 s of loading with
// a 6 s session costs the member no task. So does the first NOT_COORDINATOR of a row.
func TestSessionGuardRearmsWhileTheCoordinatorLoads(t *testing.T) {
	for _, code := range []int16{kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code} {
		h := guardedStable(t)
		h.advance(interval)
		h.mustSend()
		sent := h.now
		h.answer(resp(1, nil))
		end := sent.Add(5400 * time.Millisecond)
		first := true
		for h.now.Before(end) {
			if req := h.tick(); req != nil {
				if code == kerr.NotCoordinator.Code && !first {
					h.fail(kerr.CoordinatorLoadInProgress.Code) // the new coordinator loads
				} else {
					h.fail(code)
				}
				first = false
				continue
			}
			h.now = h.m.Next()
		}
		if h.hasEvent(EventSessionLost) {
			t.Fatalf("%s: the tasks were given up while the coordinator loaded", kerr.ErrorForCode(code))
		}
		// A coordinator that stops answering at all still trips the guard.
		h.cutUntil(h.m.guardAt(), errors.New("connection refused"))
		h.now = h.m.guardAt()
		h.step(Tick{})
		if !h.hasEvent(EventSessionLost) {
			t.Fatalf("%s: the guard never fired once the coordinator went silent", kerr.ErrorForCode(code))
		}
	}
}

// When the guard fires while a callback runs, that callback's context is cancelled and the loss
// shows in the snapshot at once; OnAllTasksLost follows for what the application holds when the
// callback returned (here the assignment it took before giving up).
func TestSessionGuardCancelsTheRunningCallback(t *testing.T) {
	h := guardedStable(t)
	h.advance(interval)
	h.mustSend()
	sent := h.now
	h.answer(resp(1, active("0_0", "0_1", "1_0")))
	inv := h.expectInvoke(CallbackAssigned, "active=[0_0 0_1 1_0] standby=[] warmup=[]")
	h.cutUntil(sent.Add(5400*time.Millisecond), errors.New("connection refused"))
	h.now = sent.Add(5400 * time.Millisecond)
	h.step(Tick{})
	cancels := h.countActions(func(a Action) bool { c, ok := a.(CancelCallback); return ok && c.Seq == inv.Seq })
	if cancels != 1 {
		t.Fatalf("%d CancelCallback for the running OnTasksAssigned, want 1", cancels)
	}
	if !h.owned().IsEmpty() {
		t.Fatalf("the snapshot shows %v while the cancelled callback still runs", h.owned())
	}
	if h.lastInvoke().Seq != inv.Seq {
		t.Fatal("a callback started while another was outstanding")
	}
	h.complete(nil) // the application took the tasks before it saw the cancellation
	h.expectInvoke(CallbackLost, "active=[0_0 0_1 1_0] standby=[] warmup=[]")
	if !h.owned().IsEmpty() {
		t.Fatalf("owns %v during OnAllTasksLost", h.owned())
	}
	h.complete(nil)
	if !h.owned().IsEmpty() {
		t.Fatalf("owns %v after the loss", h.owned())
	}
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

// A heartbeat that is in flight when the guard fires belongs to the same membership: its answer
// counts (the broker still has the member) and, once OnAllTasksLost returned, the target is taken
// back; never two heartbeats in flight.
func TestSessionGuardTakesTheAnswerInFlight(t *testing.T) {
	h := guardedStable(t)
	h.advance(interval)
	h.mustSend()
	h.answer(resp(1, nil))
	answeredSend := h.now
	h.advance(interval)
	h.mustSend() // this one hangs
	hung := h.lastSeq()
	h.now = answeredSend.Add(5400 * time.Millisecond)
	h.step(Tick{})
	h.expectState(Reconciling)
	if req := h.tick(); req != nil {
		t.Fatal("a second heartbeat went while the old one was still in flight")
	}
	h.step(HeartbeatDone{Seq: hung, Response: resp(1, nil)})
	h.expectInvoke(CallbackLost, "active=[0_0 0_1] standby=[] warmup=[]")
	h.complete(nil)
	h.expectInvoke(CallbackAssigned, "active=[0_0 0_1] standby=[] warmup=[]")
	if h.m.Epoch() != 1 {
		t.Fatalf("epoch %d", h.m.Epoch())
	}
}

// The guard is off while the session timeout is unknown, before the first answer, at epoch 0 and
// in PrepareLeaving.
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

	h = newHarness(t)
	h.start()
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "2000")})
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
}

// Reading the answer: errors are retried later, an authorization refusal only at the next refresh
// (warned about once per member life), and a malformed value is an error, never a timeout of 0.
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
	refusal := mk(func(r *kmsg.DescribeConfigsResponseResource) { r.ErrorCode = kerr.GroupAuthorizationFailed.Code })
	warnings := func() int {
		return h.countActions(func(a Action) bool {
			l, ok := a.(Log)
			return ok && l.Level == slog.LevelWarn && strings.Contains(l.Msg, "DESCRIBE_CONFIGS")
		})
	}
	h.step(SessionDescribed{Response: refusal})
	h.advance(sessionRefresh - time.Millisecond)
	h.step(Tick{})
	if h.describeSessions() != 2 {
		t.Fatal("asked again before the refresh after an authorization refusal")
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	if h.m.Snapshot().SessionTimeout != 0 {
		t.Fatal("an answer nobody asked for was taken")
	}
	h.advance(time.Millisecond)
	h.step(Tick{})
	h.step(SessionDescribed{Response: refusal})
	if h.describeSessions() != 3 || warnings() != 1 {
		t.Fatalf("%d asks and %d warnings after two refusals, want 3 asks and one warning", h.describeSessions(), warnings())
	}
}

// The group's session timeout is read once per member life, not at every rejoin, and again every
// sessionRefresh (kafka-configs may change it while the group runs); a rejoin clears the guard
// until the new membership's first answer. A value already known is not announced again.
func TestSessionTimeoutReadOncePerLifeAndRefreshed(t *testing.T) {
	h := guardedStable(t)
	armed := func() int {
		return h.countActions(func(a Action) bool { l, ok := a.(Log); return ok && l.Msg == "session guard armed" })
	}
	h.advance(interval)
	h.mustSend()
	h.fail(kerr.FencedMemberEpoch.Code)
	h.complete(nil) // OnAllTasksLost
	h.expectState(Joining)
	if !h.m.guardAt().IsZero() {
		t.Fatal("the guard is armed before the rejoin was answered")
	}
	h.mustSend()
	sent := h.now
	h.answer(resp(2, active("0_0")))
	if got := h.m.guardAt(); !got.Equal(sent.Add(5400 * time.Millisecond)) {
		t.Fatalf("guard at %v after the rejoin's send, want 5.4s", got.Sub(sent))
	}
	if h.describeSessions() != 1 {
		t.Fatalf("asked %d times after a rejoin, want once per member life", h.describeSessions())
	}
	h.complete(nil)
	for i := 0; h.describeSessions() == 1; i++ {
		if i > 1000 {
			t.Fatal("the group's session timeout was never read again")
		}
		if req := h.tick(); req != nil {
			h.answer(resp(2, nil))
		}
		h.now = h.m.Next()
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "6000")})
	if armed() != 1 {
		t.Fatalf("%d \"session guard armed\" lines for one value, want 1", armed())
	}
	for h.describeSessions() == 2 {
		if req := h.tick(); req != nil {
			h.answer(resp(2, nil))
		}
		h.now = h.m.Next()
	}
	h.step(SessionDescribed{Response: sessionConfigAnswer(testGroup, "8000")}) // changed with kafka-configs
	if h.m.Snapshot().SessionTimeout != 8*time.Second || armed() != 2 {
		t.Fatalf("timeout %v after a change", h.m.Snapshot().SessionTimeout)
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
	h.advance(sessionRefresh - time.Millisecond)
	h.step(Tick{})
	if h.describeSessions() != 2 {
		t.Fatal("asked again before the refresh after the coordinator's config was refused")
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

// Issue 22 §2/§5 (docs/choices.md, DescribeConfigs): once known, the group's session timeout is
// read again exactly a minute later, and a refusal (no DESCRIBE_CONFIGS) is warned about once per
// member life: not again at the next refresh, nor after a rejoin (a new membership of the same life).
func TestSessionTimeoutRefreshedEveryMinuteAndRefusalWarnedOncePerLife(t *testing.T) {
	h := guardedStable(t)
	known := h.now // guardedStable fed the answer at the start
	// keepUp answers every heartbeat until at.
	keepUp := func(at time.Time) {
		for h.now.Before(at) {
			if req := h.tick(); req != nil {
				h.answer(resp(h.m.Epoch(), nil))
			}
			h.now = h.m.Next()
			if h.now.IsZero() || h.now.After(at) {
				h.now = at
			}
		}
		h.step(Tick{})
	}
	keepUp(known.Add(time.Minute - time.Nanosecond))
	if n := h.describeSessions(); n != 1 {
		t.Fatalf("asked %d times within the minute, want once", n)
	}
	keepUp(known.Add(time.Minute))
	if n := h.describeSessions(); n != 2 {
		t.Fatalf("asked %d times after a minute, want twice", n)
	}
	warnings := func() int {
		return h.countActions(func(a Action) bool {
			l, ok := a.(Log)
			return ok && l.Level == slog.LevelWarn && strings.Contains(l.Msg, "DESCRIBE_CONFIGS")
		})
	}
	refusal := sessionConfigAnswer(testGroup, "6000")
	refusal.Resources[0].ErrorCode = kerr.GroupAuthorizationFailed.Code
	h.step(SessionDescribed{Response: refusal})
	if warnings() != 1 {
		t.Fatalf("%d warnings after a refusal, want 1", warnings())
	}
	// A fencing and a rejoin: the same member life.
	h.advance(interval)
	if h.tick() == nil {
		t.Fatal("no heartbeat to fence")
	}
	h.fail(kerr.FencedMemberEpoch.Code)
	h.complete(nil) // OnAllTasksLost
	h.mustSend()
	h.answer(resp(7, nil))
	h.complete(nil) // OnTasksAssigned([])
	refused := h.now
	keepUp(known.Add(2 * time.Minute))
	if n := h.describeSessions(); n != 3 {
		t.Fatalf("asked %d times two minutes in (refused at +%v), want 3: a refusal is asked again at the refresh, not at the rejoin", n, refused.Sub(known))
	}
	h.step(SessionDescribed{Response: refusal})
	if warnings() != 1 {
		t.Fatalf("%d warnings after a refusal in a new membership of the same life, want 1", warnings())
	}
}
