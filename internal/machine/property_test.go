package machine

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// This file checks the Machine's invariants (the numbered comment in machine.go) on random input
// sequences, fed through Step only, as the Manager would feed them. The checker is an independent
// model built from what an application and a broker observe — the actions and the inputs fed back —
// never from the machine's own answers to the same question:
//
//   - the state, from EventStateChanged alone: every change is in canTransition (invariant 10), and
//     every other event and Snapshot().State agree with it;
//   - what the application holds, from the Invoke / CallbackDone stream: OnTasksRevoked and
//     OnAllTasksLost name only held tasks, OnTasksAssigned comes after the revocations and hands a
//     whole target (invariants 1, 2), Snapshot().Owned agrees whenever no callback is out, and a
//     STABLE member holds the broker's latest target;
//   - one callback and one heartbeat in flight at most (invariants 3, 9); in the group a heartbeat
//     goes at least every backoff-max (+ the offsets wait), callbacks running or not (invariant 3),
//     and never sooner than the interval after a success or the backoff after an error, except an
//     ack, a shutdown request, a rejoin, and one retry after a coordinator move (invariant 9);
//   - what each request carries: owned lists only from what OnTasksAssigned handed, an active task
//     dropped only after its revocation (invariant 1); a full heartbeat, with the offsets just
//     collected, after every error (invariant 4); the epoch and endpoint epoch of the last answer,
//     ShutdownApplication once requested, task offsets only to a broker that takes them;
//   - fenced → OnAllTasksLost, rejoin at epoch 0 with the same member ID (invariant 5);
//   - fatal → OnAllTasksLost, one EventFatal and exactly one Stopped with the typed error, in
//     FATAL, and nothing after it (invariants 6, 7);
//   - the leave: -1, -2 for a static member unless CloseLeaveGroup, none for a dynamic member that
//     remains, none when fenced or failed while leaving; a Close the application and broker
//     cooperate with always ends in Stopped.
//
// The error classes expected for each code are written out here from PROTOCOL §5, not taken from
// heartbeat.ErrorFor.

// fataler is what the checker needs from *testing.T or *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// chooser makes the random choices of a run: rapid's draws (shrinkable) or a seeded source.
type chooser interface {
	intn(n int, label string) int // in [0, n)
}

type rapidChooser struct{ t *rapid.T }

var (
	rapidGensMu sync.Mutex
	rapidGens   = map[int]*rapid.Generator[int]{}
)

func (c rapidChooser) intn(n int, label string) int {
	rapidGensMu.Lock()
	g, ok := rapidGens[n]
	if !ok {
		g = rapid.IntRange(0, n-1)
		rapidGens[n] = g
	}
	rapidGensMu.Unlock()
	return g.Draw(c.t, label)
}

type seededChooser struct{ r *rand.Rand }

func (c seededChooser) intn(n int, _ string) int { return c.r.IntN(n) }

// Timing of the runs: the harness' interval (500 ms) and a backoff of 100 ms .. 1 s.
const (
	propBackoffMin = 100 * time.Millisecond
	propBackoffMax = time.Second
	// propHeartbeatGap is the longest a member in the group may go without a heartbeat in flight
	// once a Step came after it was due: the interval (500 ms) or a backoff (at most 1 s).
	propHeartbeatGap = propBackoffMax
)

// errClass is what PROTOCOL §5 says a member does about an answer.
type errClass int

const (
	classUnspecified errClass = iota // PROTOCOL leaves it open; no expectation
	classSurvive                     // retry, rediscover, keep-state: neither fenced nor fatal
	classFenced
	classFatal
)

// protocolErrorCodes are the codes of the PROTOCOL §5 table, plus two it does not list, with the
// class the table gives them.
var protocolErrorCodes = []struct {
	code  int16
	class errClass
}{
	{14, classSurvive},      // COORDINATOR_LOAD_IN_PROGRESS: retry
	{15, classSurvive},      // COORDINATOR_NOT_AVAILABLE: rediscover
	{16, classSurvive},      // NOT_COORDINATOR: rediscover
	{24, classFatal},        // INVALID_GROUP_ID
	{25, classFenced},       // UNKNOWN_MEMBER_ID
	{29, classSurvive},      // TOPIC_AUTHORIZATION_FAILED: keep state
	{30, classFatal},        // GROUP_AUTHORIZATION_FAILED
	{31, classFatal},        // CLUSTER_AUTHORIZATION_FAILED
	{35, classFatal},        // UNSUPPORTED_VERSION
	{42, classFatal},        // INVALID_REQUEST
	{69, classFatal},        // GROUP_ID_NOT_FOUND
	{81, classFatal},        // GROUP_MAX_SIZE_REACHED
	{82, classFatal},        // FENCED_INSTANCE_ID
	{110, classFenced},      // FENCED_MEMBER_EPOCH
	{111, classFatal},       // UNRELEASED_INSTANCE_ID
	{130, classFatal},       // STREAMS_INVALID_TOPOLOGY
	{131, classFatal},       // STREAMS_INVALID_TOPOLOGY_EPOCH
	{132, classFatal},       // STREAMS_TOPOLOGY_FENCED
	{135, classUnspecified}, // STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED: "–" in the table
	{3, classFatal},         // "other": UNKNOWN_TOPIC_OR_PARTITION is not in the table
	{999, classFatal},       // "other": a code newer than any kerr
	{-1, classUnspecified},  // UNKNOWN_SERVER_ERROR: the library keeps state on purpose (errors.go)
}

// transportErrors are failures to get any answer; PROTOCOL §5: retryable → retry, else fatal.
var transportErrors = []struct {
	err   error
	class errClass
}{
	{errors.New("read tcp 127.0.0.1:9092: connection reset by peer"), classSurvive},
	{io.ErrUnexpectedEOF, classSurvive},
	{context.Canceled, classFatal},
	{kgo.ErrClientClosed, classFatal},
}

// weightedErrorCodes indexes protocolErrorCodes so that each class comes about as often: every
// fatal code stops the run, the other classes are where the member has to go on.
var weightedErrorCodes = func() []int {
	weight := map[errClass]int{classSurvive: 6, classFenced: 8, classFatal: 1, classUnspecified: 2}
	var out []int
	for i, e := range protocolErrorCodes {
		for range weight[e.class] {
			out = append(out, i)
		}
	}
	return out
}()

var errCallback = errors.New("the application's callback failed")

func inGroup(s State) bool {
	switch s {
	case Joining, Reconciling, Acknowledging, Stable:
		return true
	}
	return false
}

type expectation int

const (
	expectNothing expectation = iota
	expectSurvive
	expectFenced
	expectFatal
)

// traced is one input or action of a run, with its request encoded (kmsg AppendTo) so that two runs
// can be compared with reflect.DeepEqual.
type traced struct {
	At    time.Time
	In    Input
	A     Action
	Bytes []byte
}

// propDriver feeds a Machine random inputs and checks every action against its model.
type propDriver struct {
	t      fataler
	c      chooser
	m      *Machine
	static bool
	offs   bool // the application reports task offsets
	now    time.Time
	steps  int
	trace  []traced
	record bool

	// The model: only what was observed (actions) or fed (inputs).
	state         State
	entered       [16]bool // states entered during the current step
	joined        bool
	holds         tasks.Assignment   // what the application holds
	handed        tasks.Assignment   // the last OnTasksAssigned that returned nil (cleared by a loss)
	released      tasks.Set          // active tasks revoked or lost since they were last handed
	reported      tasks.Set          // active tasks of the last heartbeat that carried owned lists
	targets       []tasks.Assignment // every target the broker sent (whole), the empty one first
	lastTarget    tasks.Assignment   // the latest target answered in the group since the last join
	pending       *Invoke
	inFlight      bool
	hbSeq         uint64
	needFull      bool
	backingOff    bool      // the last heartbeat failed: the next waits for backoff
	streak        int       // heartbeats failed in a row (fencing included)
	earliest      time.Time // the next heartbeat may not go before (zero: at once)
	ackDue        bool      // a reconciliation finished: its ack may go at once
	memberEpoch   int32     // what the next heartbeat must carry
	endpointEpoch int32
	shutdown      bool // RequestShutdown was fed
	expectJoin    bool
	mayOffsets    bool // the broker was seen to take task offsets
	brokerTakes   bool // the member thinks the broker takes offsets (capabilities, then each answer in the group)
	expectOffsets bool
	probe         bool
	collect       *CollectOffsets
	collectAt     time.Time // when the heartbeat due waits for offsets (zero: it does not)
	describes     int
	leaveOut      bool
	passOpen      bool // a reconciliation started and has not completed or failed (it may be aborted silently)
	leaves        int
	leaveSeq      uint64     // of the leave heartbeat out
	leaveAttempts int        // leave heartbeats since the member entered LEAVING
	leaveRetry    bool       // the last leave heartbeat failed in a way that may pass: another may go
	leaveSkipped  bool       // no coordinator was known when the member left: no leave heartbeat
	leaveStarted  time.Time  // when the member entered LEAVING, from which the leave budget runs
	leaveAwait    bool       // the leave waits for the answer to the heartbeat out when the member entered LEAVING
	reached       bool       // the last heartbeat answered came from a coordinator (not 15/16, not a failure)
	closeMode     *CloseMode // the Close that started the leave
	leaveStopHB   bool       // fenced or fatal while leaving: no heartbeat may follow
	leaveFenced   bool
	leaveOpen     bool // an answer while leaving that PROTOCOL leaves open: no leave expectations
	forced        bool // Stop was fed
	quietSince    time.Time
	stopped       bool
	fatalEvents   int
	fatalErr      error
	want          func(error) bool // the typed fatal error the member must stop with
	wantWhy       string
	expect        expectation
	inputName     string

	// The session guard (invariant 11): the group's session timeout as last fed, the send time of
	// the heartbeat in flight and of the last one answered in the group (or re-armed by a loading or
	// moved coordinator), whether the guard fired and waits for an answer (tripped), and whether it
	// fired in this step.
	sessionAsks     int
	sessionTimeout  time.Duration
	brokerAsked     time.Duration // the group's defaulted value while the coordinator's is asked
	sentAt          time.Time
	answeredSend    time.Time
	tripped         bool
	sessionLostStep bool
}

func newPropDriver(t fataler, c chooser, static, offs bool, backoffSeed uint64) *propDriver {
	m := New(propConfig(static, offs, backoffSeed))
	d := &propDriver{t: t, c: c, m: m, static: static, offs: offs, now: time.Unix(1_000_000, 0),
		targets: []tasks.Assignment{{}}, endpointEpoch: -1}
	return d
}

func propConfig(static, offs bool, backoffSeed uint64) Config {
	cfg := Config{
		Join: heartbeat.JoinInfo{Group: "app", MemberID: "member-1", ProcessID: "p-1", RebalanceTimeout: 30000,
			Topology: testTopology, ClientTags: map[string]string{}},
		Backoff:        heartbeat.Backoff{Min: propBackoffMin, Max: propBackoffMax, Rand: rand.New(rand.NewPCG(backoffSeed, backoffSeed)).Float64},
		ReportsOffsets: offs,
	}
	if static {
		cfg.Join.InstanceID = "instance-a"
	}
	return cfg
}

func (d *propDriver) failf(format string, args ...any) {
	d.t.Fatalf("step %d (%s, state %s): %s", d.steps, d.inputName, d.state, fmt.Sprintf(format, args...))
}

// feed steps the machine with one input and checks what comes out.
func (d *propDriver) feed(in Input) {
	d.steps++
	d.inputName = fmt.Sprintf("%T", in)
	if d.record {
		d.trace = append(d.trace, traced{At: d.now, In: in})
	}
	d.entered = [16]bool{}
	d.sessionLostStep = false
	stoppedBefore := d.stopped
	as := d.m.Step(d.now, in)
	if stoppedBefore && len(as) > 0 {
		d.failf("invariant 6: %d actions after Stopped: %+v", len(as), as)
	}
	for _, a := range as {
		d.observe(a)
	}
	d.afterStep()
}

func (d *propDriver) observe(a Action) {
	if d.stopped {
		d.failf("invariant 6: %T after Stopped", a)
	}
	if d.record {
		tr := traced{At: d.now, A: a}
		switch x := a.(type) {
		case SendHeartbeat:
			tr.Bytes = x.Request.AppendTo(nil)
			x.Request = nil
			tr.A = x
		case SendLeave:
			tr.Bytes = x.Request.AppendTo(nil)
			x.Request = nil
			tr.A = x
		}
		d.trace = append(d.trace, tr)
	}
	switch a := a.(type) {
	case Emit:
		d.event(a.Event)
	case SendHeartbeat:
		d.heartbeatSent(a)
	case SendLeave:
		d.leaveSent(a)
	case Invoke:
		d.invoked(a)
	case CancelCallback:
		if d.pending == nil || d.pending.Seq != a.Seq {
			d.failf("CancelCallback{%d}, but the callback outstanding is %v", a.Seq, d.pending)
		}
		if !d.sessionLostStep {
			d.failf("CancelCallback without the session guard firing")
		}
	case ProbeCapabilities:
		if d.probe {
			d.failf("a second capability probe while one is out")
		}
		d.probe = true
	case CollectOffsets:
		c := a
		d.collect, d.collectAt = &c, d.now
		if !d.offs {
			d.failf("CollectOffsets without a TaskOffsetsProvider")
		}
	case Describe:
		d.describes++
		if d.describes > 1 {
			d.failf("two Describe actions out at once")
		}
	case DescribeSession:
		if a.BrokerDefault != (d.brokerAsked > 0) {
			d.failf("DescribeSession{BrokerDefault: %v}, but the model says the coordinator's default is asked: %v", a.BrokerDefault, d.brokerAsked > 0)
		}
		d.sessionAsks++
		if d.sessionAsks > 1 {
			d.failf("two DescribeSession actions out at once")
		}
		if !inGroup(d.state) {
			d.failf("DescribeSession in state %s: the session timeout is read when joining", d.state)
		}
	case Stopped:
		d.stoppedWith(a.Err)
	case Log:
	case HeartbeatResult:
		if (a.Err == nil) != (a.Class == 0) {
			d.failf("heartbeat result %+v: a class exactly when there is an error", a)
		}
	case Rebalance:
		if a.Phase < RebalanceStarted || a.Phase > RebalanceFailed || (a.Phase == RebalanceStarted && a.TargetAt.IsZero()) {
			d.failf("rebalance %+v", a)
		}
		// Each pass ends at most once, completed or failed (a callback failed, or a fencing or fatal
		// heartbeat error ended it), so RebalancesCompleted + RebalancesFailed never pass
		// RebalancesStarted.
		if a.Phase != RebalanceStarted && !d.passOpen {
			d.failf("rebalance %s without a reconciliation open: a pass ended twice, or one never started", a.Phase)
		}
		d.passOpen = a.Phase == RebalanceStarted
	default:
		d.failf("unknown action %T", a)
	}
}

func (d *propDriver) event(e Event) {
	if e.MemberID != "member-1" {
		d.failf("event for member %q", e.MemberID)
	}
	if e.Kind == EventStateChanged {
		from := d.state
		if !canTransition(from, e.State) {
			d.failf("invariant 10: %s -> %s is not a protocol transition", from, e.State)
		}
		d.state = e.State
		d.entered[e.State] = true
		d.transitioned(from, e.State)
		return
	}
	if e.State != d.state {
		d.failf("%s event carries state %s; the state changes said %s", e.Kind, e.State, d.state)
	}
	if e.Kind == EventSessionLost {
		d.sessionLost(e)
	}
	if e.Kind == EventFatal {
		d.fatalEvents++
		d.fatalErr = e.Err
		if e.Err == nil {
			d.failf("EventFatal without an error")
		}
	}
}

func (d *propDriver) transitioned(from, to State) {
	if to == Joining && !inGroup(from) {
		// (Re)joining: a fresh target, a heartbeat soon, at epoch 0 (invariant 5), and the session
		// guard waits for the new membership's first answer.
		d.joined, d.expectJoin = true, true
		d.memberEpoch = 0
		d.answeredSend, d.tripped = time.Time{}, false
		d.quietSince = d.now
		d.lastTarget = tasks.Assignment{}
	}
	switch to {
	case Acknowledging:
		d.ackDue = true // the ack goes at once, ignoring the interval but not a backoff (PROTOCOL §6)
	case PrepareLeaving:
		// Keepalives while leaving go at the interval: an ack not sent yet and offsets being
		// collected are dropped.
		d.ackDue, d.collectAt = false, time.Time{}
	case Leaving:
		// The leave heartbeat goes only to a coordinator the member knows: one that answered the
		// last heartbeat. A heartbeat still out is waited for (a leave sent beside it could reach
		// the broker first), and its answer decides.
		d.leaveAttempts, d.leaveRetry = 0, false
		d.leaveSkipped = !d.reached && !d.inFlight
		d.leaveAwait = d.inFlight
		d.leaveStarted = d.now
	}
	if from == PrepareLeaving {
		// The leave's callback returned (or there was none): the application holds nothing now.
		d.released = d.released.Union(d.holds.Active).Union(d.handed.Active)
		d.holds, d.handed = tasks.Assignment{}, tasks.Assignment{}
	}
}

func (d *propDriver) heartbeatSent(a SendHeartbeat) {
	req := a.Request
	if d.inFlight {
		d.failf("invariant 9: heartbeat #%d sent while #%d is in flight", a.Seq, d.hbSeq)
	}
	d.inFlight, d.hbSeq = true, a.Seq
	d.sentAt = d.now
	d.collectAt = time.Time{} // the heartbeat that waited for offsets went
	switch {
	case inGroup(d.state):
	case d.state == PrepareLeaving:
		if d.leaveStopHB {
			d.failf("a heartbeat while leaving after the broker fenced the member or a fatal error")
		}
	default:
		d.failf("a heartbeat in state %s", d.state)
	}
	if req.MemberID != "member-1" || req.Group != "app" {
		d.failf("invariant 5: heartbeat as %q in %q", req.MemberID, req.Group)
	}
	if (req.InstanceID != nil) != d.static {
		d.failf("InstanceID %v for a static=%v member", req.InstanceID, d.static)
	}
	if req.MemberEpoch != d.memberEpoch {
		d.failf("heartbeat at epoch %d; the member's epoch is %d (the last answer, 0 after a (re)join)", req.MemberEpoch, d.memberEpoch)
	}
	if req.EndpointInformationEpoch != d.endpointEpoch {
		d.failf("EndpointInformationEpoch %d; the last answer said %d", req.EndpointInformationEpoch, d.endpointEpoch)
	}
	if req.ShutdownApplication != d.shutdown {
		d.failf("ShutdownApplication %v; a shutdown was requested: %v", req.ShutdownApplication, d.shutdown)
	}
	if !d.earliest.IsZero() && d.now.Before(d.earliest) && !(d.ackDue && d.streak == 0) {
		d.failf("invariant 9: a heartbeat %v before it may go (after the last answer: interval or backoff; streak %d)",
			d.earliest.Sub(d.now), d.streak)
	}
	d.earliest, d.ackDue = time.Time{}, false
	nulls := 0
	for _, l := range [][]kmsg.TaskIDs{req.ActiveTasks, req.StandbyTasks, req.WarmupTasks} {
		if l == nil {
			nulls++
		}
	}
	if nulls != 0 && nulls != 3 {
		d.failf("%d of the three owned lists are null", nulls)
	}
	join := req.MemberEpoch == 0
	if join != (req.Topology != nil) {
		d.failf("topology %v at epoch %d: it goes with the join only", req.Topology != nil, req.MemberEpoch)
	}
	if join && (nulls != 0 || len(req.ActiveTasks)+len(req.StandbyTasks)+len(req.WarmupTasks) != 0 ||
		req.RebalanceTimeoutMillis == -1 || req.ProcessID == nil) {
		d.failf("a join that is not a full join with three empty lists: %+v", req)
	}
	if d.expectJoin {
		if !join {
			d.failf("invariant 5: the first heartbeat after (re)joining is at epoch %d", req.MemberEpoch)
		}
		d.expectJoin = false
	}
	if d.expectOffsets && req.TaskOffsets == nil {
		d.failf("invariant 4: the first heartbeat after an error goes without the task offsets just collected")
	}
	if d.needFull {
		if req.ProcessID == nil || req.RebalanceTimeoutMillis == -1 || nulls != 0 {
			d.failf("invariant 4: the heartbeat after an error is not full (process %v, rebalance timeout %d, %d null lists)",
				req.ProcessID, req.RebalanceTimeoutMillis, nulls)
		}
		d.needFull = false
	}
	if (req.TaskOffsets != nil || req.TaskEndOffsets != nil) && !d.mayOffsets {
		d.failf("task offsets sent to a broker that was never seen to take them (or without a provider)")
	}
	if nulls == 0 {
		owned := tasks.Assignment{Active: tasks.FromKmsg(req.ActiveTasks), Standby: tasks.FromKmsg(req.StandbyTasks),
			Warmup: tasks.FromKmsg(req.WarmupTasks)}
		if !subset(owned.Active, d.handed.Active) || !subset(owned.Standby, d.handed.Standby) || !subset(owned.Warmup, d.handed.Warmup) {
			d.failf("invariant 1: reports %v as owned; OnTasksAssigned handed %v", owned, d.handed)
		}
		if dropped := d.reported.Difference(owned.Active).Difference(d.released); !join && !dropped.IsEmpty() {
			d.failf("invariant 1: stopped reporting %v without OnTasksRevoked or OnAllTasksLost for them", dropped)
		}
		d.reported = owned.Active
	}
}

func (d *propDriver) leaveSent(a SendLeave) {
	req := a.Request
	if d.state != Leaving {
		d.failf("SendLeave in state %s", d.state)
	}
	if d.inFlight {
		d.failf("a leave heartbeat while heartbeat #%d is out: it could reach the broker first", d.hbSeq)
	}
	d.leaves++
	d.leaveAttempts++
	if d.leaveAttempts > 1 && !d.leaveRetry {
		d.failf("a second leave heartbeat after an answer that ended the leave")
	}
	if d.leaveSkipped {
		d.failf("a leave heartbeat though no coordinator was known")
	}
	if budget := d.leaveStarted.Add(DefaultLeaveBudget).Sub(d.now); a.Timeout <= 0 || a.Timeout > budget || a.Timeout > DefaultRequestTimeout {
		d.failf("leave heartbeat %d with timeout %v; %v of the leave budget is left", d.leaves, a.Timeout, budget)
	}
	d.leaveRetry = false
	d.leaveOut, d.leaveSeq = true, a.Seq
	if req.MemberID != "member-1" || req.Topology != nil || req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		d.failf("a leave carries identity only: %+v", req)
	}
	if req.EndpointInformationEpoch != d.endpointEpoch || req.ShutdownApplication != d.shutdown {
		d.failf("leave with EndpointInformationEpoch %d, shutdown %v; want %d, %v", req.EndpointInformationEpoch,
			req.ShutdownApplication, d.endpointEpoch, d.shutdown)
	}
	if d.leaveStopHB {
		d.failf("a leave heartbeat after the broker fenced the member (or a fatal error) while it left")
	}
	if d.closeMode == nil {
		return // the leave was started by a Close the checker did not see start it
	}
	mode := *d.closeMode
	want := heartbeat.EpochLeave
	switch {
	case !d.static && mode == CloseRemainInGroup:
		d.failf("a dynamic member that remains in the group sent a leave (epoch %d)", req.MemberEpoch)
	case d.static && mode != CloseLeaveGroup:
		want = heartbeat.EpochLeaveStatic
	}
	if req.MemberEpoch != want {
		d.failf("leave at epoch %d, want %d (static=%v, mode %s)", req.MemberEpoch, want, d.static, mode)
	}
}

func (d *propDriver) invoked(a Invoke) {
	if d.pending != nil {
		d.failf("invariant 3: %s invoked while %s #%d is outstanding", a.Kind, d.pending.Kind, d.pending.Seq)
	}
	switch a.Kind {
	case CallbackRevoked:
		if a.Tasks.IsEmpty() {
			d.failf("OnTasksRevoked with no task")
		}
		if extra := a.Tasks.Difference(d.holds.Active); !extra.IsEmpty() {
			d.failf("invariant 1: OnTasksRevoked(%v) names %v, which the application does not hold (holds %v)", a.Tasks, extra, d.holds)
		}
	case CallbackLost:
		if a.Assignment.IsEmpty() {
			d.failf("OnAllTasksLost with no task")
		}
		if !a.Assignment.Equal(d.holds) {
			d.failf("invariant 1: OnAllTasksLost(%v), but the application holds %v", a.Assignment, d.holds)
		}
	case CallbackAssigned:
		if stray := d.holds.Active.Difference(a.Assignment.Active); !stray.IsEmpty() {
			d.failf("invariant 2: OnTasksAssigned(%v) while the application still holds %v unrevoked", a.Assignment, stray)
		}
		whole := false
		for _, t := range d.targets {
			if sameTarget(a.Assignment, t) {
				whole = true
				break
			}
		}
		if !whole {
			d.failf("invariant 2: OnTasksAssigned(%v) is not a whole target the broker sent", a.Assignment)
		}
	default:
		d.failf("Invoke of kind %v", a.Kind)
	}
	inv := a
	d.pending = &inv
}

func (d *propDriver) stoppedWith(err error) {
	d.stopped = true
	if d.state == Fatal {
		if err == nil {
			d.failf("invariant 6: stopped in FATAL without an error")
		}
		if d.fatalEvents != 1 || !errors.Is(err, d.fatalErr) {
			d.failf("invariant 6: %d EventFatal (last %v) before Stopped(%v)", d.fatalEvents, d.fatalErr, err)
		}
		if !d.holds.IsEmpty() && !d.forced { // a forced stop does not wait for OnAllTasksLost
			d.failf("invariant 6: stopped by %v while the application still holds %v (no OnAllTasksLost)", err, d.holds)
		}
		if d.want != nil && !d.want(err) {
			d.failf("invariant 7: stopped with %v (%T), want %s", err, err, d.wantWhy)
		}
		return
	}
	if err != nil || d.fatalEvents != 0 {
		d.failf("Stopped(%v) in state %s after %d EventFatal", err, d.state, d.fatalEvents)
	}
	if d.leaveFenced && d.leaves > 0 {
		d.failf("fenced while leaving, yet a leave heartbeat was sent")
	}
	if d.leaveAwait && !d.forced && d.now.Before(d.leaveStarted.Add(DefaultLeaveBudget)) {
		d.failf("the leave was given up waiting for the heartbeat out %v before its budget ended", d.leaveStarted.Add(DefaultLeaveBudget).Sub(d.now))
	}
	if d.closeMode != nil && !d.forced && !d.leaveFenced && !d.leaveOpen && !d.leaveSkipped && !d.leaveAwait && d.leaves == 0 &&
		(d.static || *d.closeMode != CloseRemainInGroup) {
		d.failf("left (mode %s, static=%v) without a leave heartbeat", *d.closeMode, d.static)
	}
}

// afterStep checks what must hold once a Step's actions are done.
func (d *propDriver) afterStep() {
	switch d.expect {
	case expectFatal:
		if !d.entered[Fatal] {
			d.failf("PROTOCOL §5: a fatal answer did not make the member FATAL")
		}
	case expectFenced:
		if !d.entered[Fenced] {
			d.failf("invariant 5: a fencing answer did not fence the member")
		}
	case expectSurvive:
		if d.entered[Fatal] || (d.entered[Fenced] && !d.sessionLostStep) {
			d.failf("PROTOCOL §5: a retriable answer fenced or failed the member")
		}
	}
	d.expect, d.expectOffsets = expectNothing, false
	snap := d.m.Snapshot()
	if snap.Stopped != d.stopped {
		d.failf("Snapshot().Stopped %v, but Stopped was observed: %v", snap.Stopped, d.stopped)
	}
	if d.stopped {
		return
	}
	if snap.State != d.state {
		d.failf("Snapshot().State %s, the state changes said %s", snap.State, d.state)
	}
	if d.pending == nil && !snap.Owned.Equal(d.holds) {
		d.failf("Snapshot().Owned %v, but the callbacks left the application holding %v", snap.Owned, d.holds)
	}
	if d.state == Fatal && d.pending == nil && d.describes == 0 {
		d.failf("invariant 6: FATAL with nothing outstanding, but no Stopped")
	}
	if d.state == Leaving && d.leaves == 0 && !d.leaveAwait {
		d.failf("LEAVING without a leave heartbeat")
	}
	if at := d.guardDeadline(); !at.IsZero() && !d.now.Before(at) {
		d.failf("invariant 11: still %s at epoch %d %v after the last answered heartbeat was sent (session timeout %v): "+
			"the broker may have given its tasks away", d.state, d.memberEpoch, d.now.Sub(d.answeredSend), d.sessionTimeout)
	}
	if d.state == Unsubscribed && d.joined {
		d.failf("UNSUBSCRIBED after being in the group, but not stopped")
	}
	if d.state == Stable && d.pending == nil && !sameTarget(d.holds, d.lastTarget) {
		d.failf("STABLE while the application holds %v and the broker's target is %v", d.holds, d.lastTarget)
	}
	if d.state == Acknowledging && !d.inFlight && !d.backingOff && d.collectAt.IsZero() {
		d.failf("PROTOCOL §6: ACKNOWLEDGING with no heartbeat in flight and no backoff, yet the ack did not go at once")
	}
	heartbeats := inGroup(d.state) || (d.state == PrepareLeaving && !d.leaveStopHB && !d.leaveOpen)
	if heartbeats && !d.inFlight {
		switch {
		case !d.collectAt.IsZero():
			if d.now.Sub(d.collectAt) > DefaultOffsetsWait {
				d.failf("invariant 3/9: the heartbeat waited %v for task offsets (at most %v)", d.now.Sub(d.collectAt), DefaultOffsetsWait)
			}
		case d.now.Sub(d.quietSince) > propHeartbeatGap:
			d.failf("invariant 3/9: no heartbeat for %v in state %s (pending callback: %v)", d.now.Sub(d.quietSince), d.state, d.pending != nil)
		}
	}
}

// guardDeadline is when the model says the member must have given its tasks up unless a heartbeat
// was answered (zero: the guard is off): session timeout minus a tenth after the send time of the
// last heartbeat answered in the group, for a member in the group at a positive epoch.
func (d *propDriver) guardDeadline() time.Time {
	if !inGroup(d.state) {
		return time.Time{}
	}
	return d.guardDeadlineInGroup()
}

func (d *propDriver) guardDeadlineInGroup() time.Time {
	if d.stopped || d.sessionTimeout <= 0 || d.answeredSend.IsZero() || d.memberEpoch <= 0 || d.tripped {
		return time.Time{}
	}
	return d.answeredSend.Add(d.sessionTimeout - d.sessionTimeout/10)
}

// sessionLost checks an EventSessionLost: never before the guard's deadline, and the member stays in
// the group (RECONCILING) at its epoch, giving its tasks up locally.
func (d *propDriver) sessionLost(e Event) {
	if d.state != Reconciling {
		d.failf("EventSessionLost in state %s: the member stays in the group, RECONCILING, as it gives its tasks up", d.state)
	}
	at := d.guardDeadlineInGroup()
	if at.IsZero() || d.now.Before(at) {
		d.failf("invariant 11: the session guard fired at %v after the last answered send; the deadline is %v (session timeout %v)",
			d.now.Sub(d.answeredSend), at.Sub(d.answeredSend), d.sessionTimeout)
	}
	if _, ok := errors.AsType[*SessionLostError](e.Err); !ok {
		d.failf("EventSessionLost with %v, want a *SessionLostError", e.Err)
	}
	d.sessionLostStep = true
	d.tripped = true
	d.needFull = true
}

// rearm: a coordinator loading the group (or the first NOT_COORDINATOR of a row) restarts the
// guard from the heartbeat's send time.
func (d *propDriver) rearm() {
	if !d.answeredSend.IsZero() && !d.tripped && d.sentAt.After(d.answeredSend) {
		d.answeredSend = d.sentAt
	}
}

// discarding: no answer is dropped any more (the guard keeps the membership).
func (d *propDriver) discarding() bool { return false }

// sessionDescribed answers the DescribeSession out: 0 a failure (asked again later), 1 an
// authorization refusal, 2 and 3 a session timeout of 3 s and 6 s.
func (d *propDriver) sessionDescribed(choice int) {
	d.sessionAsks--
	if group := d.brokerAsked; group > 0 {
		// The coordinator's group.streams.session.timeout.ms: it wins; a failure keeps the group's.
		d.brokerAsked = 0
		in := SessionDescribed{Err: errors.New("dial tcp: connection refused")}
		d.sessionTimeout = group
		if choice > 0 {
			in = SessionDescribed{Response: sessionConfigAnswer("1", strconv.Itoa(choice*1000))}
			in.Response.Resources[0].ResourceType = kmsg.ConfigResourceTypeBroker
			in.Response.Resources[0].Configs[0].Name = KeyBrokerSessionTimeout
			d.sessionTimeout = time.Duration(choice) * time.Second
		}
		d.feed(in)
		return
	}
	if choice == 4 {
		// Kafka 4.2 reports the built-in default for a group without its own value.
		in := SessionDescribed{Response: sessionConfigAnswer("app", "4000")}
		in.Response.Resources[0].Configs[0].Source = configSourceDefault
		if inGroup(d.state) && !d.stopped {
			d.brokerAsked = 4 * time.Second // checked against the coordinator's default
		} else if !d.stopped {
			d.sessionTimeout = 4 * time.Second // no longer asking: the group's value stands
		}
		d.feed(in)
		return
	}
	in := SessionDescribed{Err: errors.New("dial tcp: connection refused")}
	switch choice {
	case 1:
		in = SessionDescribed{Response: sessionConfigAnswer("app", "x")}
		in.Response.Resources[0].ErrorCode = kerr.GroupAuthorizationFailed.Code
	case 2:
		in = SessionDescribed{Response: sessionConfigAnswer("app", "3000")}
		d.sessionTimeout = 3 * time.Second
	case 3:
		in = SessionDescribed{Response: sessionConfigAnswer("app", "6000")}
		d.sessionTimeout = 6 * time.Second
	}
	d.feed(in)
}

// subset reports whether every task of a is in b.
func subset(a, b tasks.Set) bool { return a.Difference(b).IsEmpty() }

// sameTarget reports whether a is the whole target t as the application gets it: active tasks win
// over the other roles (Kafka Streams). A warm-up that is also a standby may be kept as either
// (PROTOCOL §6 leaves it to the Streams listener; issue 9 §1.6 moves it to standby only).
func sameTarget(a, t tasks.Assignment) bool {
	standby := t.Standby.Difference(t.Active)
	warmup := t.Warmup.Difference(t.Active)
	return a.Active.Equal(t.Active) && a.Standby.Equal(standby) && subset(a.Warmup, warmup) &&
		subset(warmup.Difference(a.Warmup), standby)
}

// --- inputs ---

// fedOutcome records a heartbeat outcome about to be fed: r is the answer (nil when none), success
// whether it is a well-formed success. It sets what PROTOCOL §5 says must follow for class c in the
// model's current state (want checks the typed error of a fatal one), what the next heartbeat must
// echo, and how soon it may go.
func (d *propDriver) fedOutcome(c errClass, r *kmsg.StreamsGroupHeartbeatResponse, success bool, want func(error) bool, why string) {
	if d.discarding() {
		return
	}
	d.inFlight = false
	d.reached = r != nil && r.ErrorCode != 15 && r.ErrorCode != 16
	if d.state == Leaving && d.leaveAwait && !d.stopped {
		d.leaveAwait = false
		d.leaveSkipped = !d.reached
	}
	d.quietSince = d.now
	if !success {
		d.needFull = true // invariant 4
	}
	d.backingOff = !success
	if !d.stopped && (inGroup(d.state) || d.state == PrepareLeaving) {
		switch {
		case success:
			d.memberEpoch, d.endpointEpoch = r.MemberEpoch, r.EndpointInformationEpoch
			if inGroup(d.state) {
				d.brokerTakes = r.Version >= 1 && r.AcceptableRecoveryLag >= 0
				d.answeredSend, d.tripped = d.sentAt, false
			}
			d.streak = 0
			d.earliest = d.now.Add(interval)
			if inGroup(d.state) {
				d.earliest = laterOf(d.now, d.sentAt.Add(interval)) // from the send (issue 22 §5)
			}
		case c == classFenced && inGroup(d.state):
			d.streak++
			d.earliest = time.Time{} // rejoin at once (the first time)
		case inGroup(d.state) && d.streak == 0 && r != nil && (r.ErrorCode == 15 || r.ErrorCode == 16):
			if r.ErrorCode == 16 {
				d.rearm()
			}
			d.streak++
			d.earliest = time.Time{} // the coordinator moved: one retry at once
		default:
			if inGroup(d.state) && r != nil && r.ErrorCode == 14 {
				d.rearm()
			}
			d.streak++
			d.earliest = d.now.Add(propBackoffMin * 8 / 10) // backoff, less jitter
		}
	}
	setWant := func() {
		if want != nil && d.want == nil {
			d.want, d.wantWhy = want, why
		}
	}
	switch {
	case d.stopped: // nobody listens any more
	case inGroup(d.state):
		switch c {
		case classSurvive:
			d.expect = expectSurvive
		case classFenced:
			d.expect = expectFenced
		case classFatal:
			d.expect = expectFatal
			setWant()
		}
	case d.state == PrepareLeaving && !d.leaveStopHB:
		switch c {
		case classFenced:
			d.leaveStopHB, d.leaveFenced = true, true
		case classFatal:
			d.leaveStopHB = true
			setWant()
		case classUnspecified:
			d.leaveOpen = true
		}
	}
}

func (d *propDriver) genTasks(label string) *tasks.Assignment {
	mask := d.c.intn(1<<24, label)
	pick := func(shift int) tasks.Set {
		var ids []tasks.ID
		for i := range 8 {
			if mask&(1<<(shift+i)) != 0 {
				ids = append(ids, tasks.ID{Subtopology: strconv.Itoa(i / 4), Partition: int32(i % 4)})
			}
		}
		return tasks.NewSet(ids...)
	}
	return &tasks.Assignment{Active: pick(0), Standby: pick(8), Warmup: pick(16)}
}

var statusDetails = []string{"Source topics t0 are missing.", "Internal topics are missing: [rep]", "Assignment delayed due to the configured initial rebalance delay.", ""}

// answer feeds a well-formed successful answer to the heartbeat in flight.
func (d *propDriver) answer() {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	if d.c.intn(4, "v0") == 0 {
		r.Version = 0
	}
	r.MemberID = "member-1"
	r.MemberEpoch = int32(1 + d.c.intn(4, "epoch"))
	r.HeartbeatIntervalMillis = int32(interval / time.Millisecond)
	r.AcceptableRecoveryLag = -1
	if r.Version >= 1 && d.c.intn(2, "lag") == 0 {
		r.AcceptableRecoveryLag = 100
		r.TaskOffsetIntervalMillis = 5000
	}
	r.EndpointInformationEpoch = int32(d.c.intn(3, "endpointEpoch"))
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	for range d.c.intn(4, "statuses") / 2 {
		code := d.c.intn(8, "status") // 0..6 known, 7 unknown
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: int8(code),
			StatusDetail: statusDetails[code%len(statusDetails)]})
	}
	if d.c.intn(8, "endpoints") == 0 {
		r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{{
			UserEndpoint:     kmsg.Endpoint{Host: "h", Port: 8080},
			ActivePartitions: []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: "t0", Partitions: []int32{0, 1}}},
		}}
	}
	var target *tasks.Assignment
	if d.c.intn(4, "nullLists") != 0 {
		target = d.genTasks("target")
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = target.Active.Kmsg(), target.Standby.Kmsg(), target.Warmup.Kmsg()
	}
	d.scriptAnswer(r, target)
}

// errorAnswer feeds an answer with an error code from the PROTOCOL §5 table.
func (d *propDriver) errorAnswer() {
	e := protocolErrorCodes[weightedErrorCodes[d.c.intn(len(weightedErrorCodes), "errorCode")]]
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.ErrorCode = e.code
	if e.code == 42 {
		msgs := []string{"", "Topology updates are not supported yet.", "Static membership is not yet supported."}
		if msg := msgs[d.c.intn(len(msgs), "message")]; msg != "" {
			r.ErrorMessage = &msg
		}
	}
	code := e.code
	d.fedOutcome(e.class, r, false, func(err error) bool {
		he, ok := errors.AsType[*heartbeat.Error](err)
		return ok && he.Code == code
	}, fmt.Sprintf("a *heartbeat.Error with code %d", code))
	d.feed(HeartbeatDone{Seq: d.hbSeq, Response: r})
}

// transportFailure feeds a heartbeat that got no answer.
func (d *propDriver) transportFailure() {
	e := transportErrors[[]int{0, 0, 0, 1, 1, 1, 2, 3}[d.c.intn(8, "transportError")]]
	target := e.err
	d.fedOutcome(e.class, nil, false, func(err error) bool { return errors.Is(err, target) }, fmt.Sprintf("an error wrapping %v", target))
	d.feed(HeartbeatDone{Seq: d.hbSeq, Err: e.err})
}

// malformed feeds an answer that breaks the protocol (issue 9 §2, invariant 7).
func (d *propDriver) malformed() {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "member-1"
	r.MemberEpoch = 1
	r.HeartbeatIntervalMillis = 500
	r.AcceptableRecoveryLag = -1
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	class := classUnspecified
	var want func(error) bool
	var why string
	switch d.c.intn(6, "malformed") {
	case 0:
		r.MemberEpoch = -1
	case 1:
		r.HeartbeatIntervalMillis = 0
	case 2:
		r.StandbyTasks = nil // PROTOCOL §4: some null, some not → illegal state
		class, why = classFatal, "a *heartbeat.ProtocolError"
		want = func(err error) bool { _, ok := errors.AsType[*heartbeat.ProtocolError](err); return ok }
	case 3:
		r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}, {SubtopologyID: "9", Partitions: []int32{1}}}
		class, why = classFatal, "a *tasks.UnknownSubtopologyError" // invariant 7
		want = func(err error) bool { _, ok := errors.AsType[*tasks.UnknownSubtopologyError](err); return ok }
	case 4:
		r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{-3}}}
	case 5:
		d.fedOutcome(classUnspecified, nil, false, nil, "")
		d.feed(HeartbeatDone{Seq: d.hbSeq}) // neither an answer nor an error
		return
	}
	d.fedOutcome(class, r, false, want, why)
	d.feed(HeartbeatDone{Seq: d.hbSeq, Response: r})
}

func (d *propDriver) completeCallback(err error) {
	inv := *d.pending
	d.pending = nil
	switch inv.Kind {
	case CallbackRevoked:
		if err == nil {
			d.holds.Active = d.holds.Active.Difference(inv.Tasks)
			d.released = d.released.Union(inv.Tasks)
		}
	case CallbackAssigned:
		if err == nil {
			d.holds, d.handed = inv.Assignment, inv.Assignment
			d.released = d.released.Difference(inv.Assignment.Active)
		}
	case CallbackLost: // lost, whatever the callback returned
		d.released = d.released.Union(d.holds.Active).Union(d.handed.Active)
		d.holds, d.handed = tasks.Assignment{}, tasks.Assignment{}
	}
	d.feed(CallbackDone{Seq: inv.Seq, Err: err})
}

func (d *propDriver) answerProbe(choice int) {
	d.probe = false
	in := CapabilitiesKnown{Caps: caps44}
	switch choice {
	case 0:
		in = CapabilitiesKnown{Err: errors.New("dial tcp 127.0.0.1:9092: connection refused")}
	case 1:
		// Kafka 4.2/4.3 (the probed broker): a static member joins anyway, as the coordinator may be
		// a 4.4 broker during a rolling upgrade; the coordinator judges (issue 22 §1).
		in.Caps = heartbeat.Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 1}
	case 2:
		in.Caps = heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 0} // streams.version off
		d.expect, d.want, d.wantWhy = expectFatal, func(err error) bool { return errors.Is(err, heartbeat.ErrNotSupported) }, "ErrNotSupported"
	}
	if in.Err == nil && in.Caps.TaskOffsets() && d.offs {
		d.mayOffsets = true
	}
	if in.Err == nil {
		d.brokerTakes = in.Caps.TaskOffsets()
	}
	d.feed(in)
}

func (d *propDriver) described(choice int) {
	d.describes--
	in := Described{Err: errors.New("describe: coordinator not available")}
	switch choice {
	case 1:
		in = Described{Group: &kmsg.StreamsGroupDescribeResponseGroup{Group: "app"}}
	case 2:
		in = Described{Group: &kmsg.StreamsGroupDescribeResponseGroup{Group: "app", Topology: &kmsg.StreamsGroupDescribeResponseGroupTopology{
			Epoch: 3, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{{SubtopologyID: "0", SourceTopics: []string{"t0"}}},
		}}}
	}
	d.feed(in)
}

func (d *propDriver) offsetsCollected(choice int) {
	c := d.collect
	d.collect = nil
	in := OffsetsCollected{Seq: c.Seq}
	// Invariant 4: the first heartbeat after an error carries the task offsets the application
	// gives, when the broker takes them.
	d.expectOffsets = choice > 0 && !d.collectAt.IsZero() && d.needFull && d.brokerTakes && inGroup(d.state) && !d.stopped
	if choice > 0 {
		in.Offsets, in.Ends = tasks.Offsets{}, tasks.Offsets{}
		for id := range c.Owned.All().All() {
			in.Offsets[id] = int64(choice * 10)
			in.Ends[id] = int64(choice*10 + choice*40)
		}
	}
	d.feed(in)
}

// op is one kind of input with its weight among the inputs that apply.
type op int

// The order matters a little: rapid draws the smallest and the largest values more often than the
// others, so the first and the last op are the common ones, not Stop.
const (
	opCallback op = iota
	opAnswer
	opTickNext
	opErrorCode
	opTransport
	opMalformed
	opClose
	opShutdown
	opLeaveDone
	opDescribed
	opOffsets
	opStale
	opStop
	opSession
	opTick
	opCount
)

var opWeights = [opCount]int{
	opTick: 40, opTickNext: 32, opAnswer: 56, opErrorCode: 16, opTransport: 6, opMalformed: 3, opCallback: 56,
	opClose: 5, opShutdown: 3, opLeaveDone: 24, opDescribed: 24, opOffsets: 24, opStale: 3, opStop: 1, opSession: 24,
}

func (d *propDriver) applies(o op) bool {
	switch o {
	case opTickNext:
		return !d.m.Next().IsZero()
	case opAnswer, opErrorCode, opTransport, opMalformed:
		return d.inFlight
	case opCallback:
		return d.pending != nil
	case opLeaveDone:
		return d.leaveOut
	case opDescribed:
		return d.describes > 0
	case opOffsets:
		return d.collect != nil
	case opSession:
		return d.sessionAsks > 0
	}
	return true
}

// randomStep feeds one random input.
func (d *propDriver) randomStep() {
	if d.probe {
		choice := d.c.intn(24, "capabilities") // mostly a 4.4 cluster
		if choice > 2 {
			choice = 3
		}
		d.answerProbe(choice)
		return
	}
	var ops [opCount]op
	n, total := 0, 0
	for o := range opCount {
		if d.applies(o) {
			ops[n] = o
			n++
			total += opWeights[o]
		}
	}
	pick := d.c.intn(total, "input")
	var o op
	for _, o = range ops[:n] {
		if pick < opWeights[o] {
			break
		}
		pick -= opWeights[o]
	}
	switch o {
	case opTick:
		d.now = d.now.Add(time.Duration(d.c.intn(1501, "advanceMillis")) * time.Millisecond)
		d.feed(Tick{})
	case opTickNext:
		if next := d.m.Next(); next.After(d.now) {
			d.now = next
		}
		d.feed(Tick{})
	case opAnswer:
		d.answer()
	case opErrorCode:
		d.errorAnswer()
	case opTransport:
		d.transportFailure()
	case opMalformed:
		d.malformed()
	case opCallback:
		var err error
		if d.c.intn(4, "callbackFails") == 0 {
			err = errCallback
		}
		d.completeCallback(err)
	case opClose:
		d.close(CloseMode(d.c.intn(3, "closeMode")))
	case opShutdown:
		d.requestShutdown()
	case opLeaveDone:
		d.leaveOut = false
		in := LeaveDone{Seq: d.leaveSeq, Response: kmsg.NewPtrStreamsGroupHeartbeatResponse()}
		switch d.c.intn(5, "leaveAnswer") {
		case 0: // taken
		case 1: // the member is gone already: done too
			in.Response.ErrorCode = kerr.UnknownMemberID.Code
		case 2: // the coordinator moved: another attempt, unless the budget is spent
			in.Response.ErrorCode = kerr.NotCoordinator.Code
			d.leaveRetry = true
		case 3: // no answer within the attempt's timeout: another attempt, unless the budget is spent
			in.Response, in.Err = nil, context.DeadlineExceeded
			d.leaveRetry = true
		case 4: // refused: given up
			in.Response.ErrorCode = kerr.GroupAuthorizationFailed.Code
		}
		d.feed(in)
	case opDescribed:
		d.described(d.c.intn(3, "described"))
	case opOffsets:
		d.offsetsCollected(d.c.intn(4, "offsets"))
	case opSession:
		d.sessionDescribed(d.c.intn(5, "session"))
	case opStale:
		// Results nobody waits for (any more): they must change nothing.
		stale := []Input{HeartbeatDone{Seq: 1 << 40}, CallbackDone{Seq: 1 << 40}, OffsetsCollected{Seq: 1 << 40}}
		if !d.probe {
			stale = append(stale, CapabilitiesKnown{Caps: caps44})
		}
		if d.describes == 0 {
			stale = append(stale, Described{Err: errors.New("late")})
		}
		if d.sessionAsks == 0 {
			stale = append(stale, SessionDescribed{Response: sessionConfigAnswer("app", "1000")})
		}
		stale = append(stale, LeaveDone{Seq: 1 << 40}, LeaveDone{Seq: d.leaveSeq})
		if d.leaveOut {
			stale = stale[:len(stale)-1] // the answer the member waits for is not stale
		}
		d.feed(stale[d.c.intn(len(stale), "stale")])
	case opStop:
		d.forced = true
		d.feed(Stop{})
	}
}

func (d *propDriver) requestShutdown() {
	if !d.stopped {
		d.shutdown = true
		if d.streak == 0 {
			d.earliest = time.Time{} // at once, unless backing off (issue 9 §1.9)
		}
	}
	d.feed(RequestShutdown{})
}

func (d *propDriver) close(mode CloseMode) {
	if d.closeMode == nil && inGroup(d.state) {
		d.closeMode = &mode
	}
	d.feed(Close{Mode: mode})
}

// drain closes the member and then answers everything as a cooperating application and broker
// would: the member must stop.
func (d *propDriver) drain(mode CloseMode) {
	d.close(mode)
	for range 200 {
		if d.stopped {
			return
		}
		switch {
		case d.probe:
			d.answerProbe(3)
		case d.pending != nil:
			d.completeCallback(nil)
		case d.inFlight:
			r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
			r.Version, r.MemberID, r.MemberEpoch, r.HeartbeatIntervalMillis, r.AcceptableRecoveryLag = 1, "member-1", 1, 500, -1
			d.fedOutcome(classSurvive, r, true, nil, "")
			d.feed(HeartbeatDone{Seq: d.hbSeq, Response: r})
		case d.leaveOut:
			d.leaveOut = false
			d.feed(LeaveDone{Seq: d.leaveSeq, Response: kmsg.NewPtrStreamsGroupHeartbeatResponse()})
		case d.describes > 0:
			d.described(0)
		case d.collect != nil:
			d.offsetsCollected(0)
		default:
			d.now = d.now.Add(100 * time.Millisecond)
			d.feed(Tick{})
		}
	}
	d.failf("Close(%s) did not stop the member though everything was answered (pending: %s)", mode, d.m.Pending())
}

// run starts the member and feeds it steps random inputs, then (if drain) closes it.
func (d *propDriver) run(steps int, drain bool, mode CloseMode) {
	d.feed(Start{})
	for range steps {
		d.randomStep()
	}
	if drain {
		d.drain(mode)
	}
}

// TestMachineProperties runs random input sequences through Step and checks every invariant after
// every step. rounds × -rapid.checks sequences (200 × 100 = 20,000 by default; -short: 40 × 20).
func TestMachineProperties(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	// A failure prints the seed that reproduces it (-rapid.seed); no fail file is left in testdata
	// unless asked for with -rapid.failfile or -rapid.nofailfile=false.
	explicit := false
	flag.Visit(func(f *flag.Flag) {
		explicit = explicit || strings.HasPrefix(f.Name, "rapid.") && strings.Contains(f.Name, "failfile")
	})
	if !explicit {
		if err := flag.Set("rapid.nofailfile", "true"); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var sequences, steps int
	var mu sync.Mutex
	for round := range rounds {
		ok := t.Run(fmt.Sprintf("round%03d", round), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				c := rapidChooser{rt}
				static := c.intn(3, "static") == 0
				offs := c.intn(2, "offsets") == 0
				d := newPropDriver(rt, c, static, offs, uint64(c.intn(1<<16, "backoffSeed")))
				n := c.intn(80, "steps")
				drain := c.intn(3, "drain") == 0
				d.run(n, drain, CloseMode(c.intn(3, "drainMode")))
				mu.Lock()
				sequences++
				steps += d.steps
				mu.Unlock()
			})
		})
		if !ok {
			break // rapid shrank and reported the first failure; more rounds would repeat it
		}
	}
	t.Logf("%d random sequences (%d steps) in %v", sequences, steps, time.Since(start).Round(time.Millisecond))
}

// TestMachinePropertiesCatchBrokenInvariants shows that the checker can fail: the same driver, run
// on a machine whose state is corrupted the way a bug would, reports the broken invariant.
func TestMachinePropertiesCatchBrokenInvariants(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(d *propDriver)
		want string
	}{
		{"reports a task it was never handed", func(d *propDriver) {
			d.scriptStable(active("0_0", "0_1"))
			d.m.rec.current.Active = d.m.rec.current.Active.Union(set("1_3")) // the bug
			d.now = d.now.Add(interval)
			d.feed(Tick{})
		}, "invariant 1: reports"},
		{"loses a task the application gave up", func(d *propDriver) {
			d.scriptStable(active("0_0", "0_1"))
			d.now = d.now.Add(interval)
			d.feed(Tick{})
			d.scriptAnswer(resp(2, active("0_1")), active("0_1")) // OnTasksRevoked([0_0])
			d.completeCallback(nil)                               // OnTasksAssigned([0_1]) runs
			d.now = d.now.Add(interval)
			d.feed(Tick{}) // a heartbeat while the callback runs
			d.fedOutcome(classFenced, errorResponse(110), false, nil, "")
			d.feed(HeartbeatDone{Seq: d.hbSeq, Response: errorResponse(110)})
			d.m.rec.revoked = tasks.Set{}   // the bug: the revocation is forgotten
			d.completeCallback(errCallback) // OnAllTasksLost follows
		}, "invariant 1: OnAllTasksLost"},
		{"sends two heartbeats at once", func(d *propDriver) {
			d.scriptStable(active("0_0"))
			d.now = d.now.Add(interval)
			d.feed(Tick{})
			d.m.hb.inFlight = false // the bug
			d.now = d.now.Add(interval)
			d.feed(Tick{})
		}, "invariant 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			d := newPropDriver(rec, seededChooser{rand.New(rand.NewPCG(1, 1))}, false, false, 1)
			func() {
				defer func() {
					if p := recover(); p != nil && p != any(rec) {
						panic(p)
					}
				}()
				tc.run(d)
			}()
			if !strings.Contains(rec.msg, tc.want) {
				t.Fatalf("the checker reported %q, want %q", rec.msg, tc.want)
			}
		})
	}
}

// recorder is a fataler that records the first failure and stops the run by panicking with itself.
type recorder struct{ msg string }

func (r *recorder) Fatalf(format string, args ...any) {
	if r.msg == "" {
		r.msg = fmt.Sprintf(format, args...)
	}
	panic(r)
}

func errorResponse(code int16) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.ErrorCode = code
	return r
}

// scriptAnswer feeds a successful answer to the heartbeat in flight; target is the answer's task
// lists (nil when null).
func (d *propDriver) scriptAnswer(r *kmsg.StreamsGroupHeartbeatResponse, target *tasks.Assignment) {
	if d.discarding() {
		d.feed(HeartbeatDone{Seq: d.hbSeq, Response: r})
		return
	}
	if target != nil {
		d.targets = append(d.targets, *target)
		if inGroup(d.state) {
			d.lastTarget = *target
		}
	}
	if r.Version >= 1 && r.AcceptableRecoveryLag >= 0 && d.offs {
		d.mayOffsets = true
	}
	d.fedOutcome(classSurvive, r, true, nil, "")
	d.feed(HeartbeatDone{Seq: d.hbSeq, Response: r})
}

// scriptStable joins on a 4.4 cluster and reconciles to a, through the checker.
func (d *propDriver) scriptStable(a *tasks.Assignment) {
	d.feed(Start{})
	d.answerProbe(3) // the join goes
	d.scriptAnswer(resp(1, a), a)
	d.completeCallback(nil) // OnTasksAssigned; the ack goes
	d.scriptAnswer(resp(1, nil), nil)
	if d.state != Stable {
		d.failf("not STABLE after the ack")
	}
}

// TestTransitionTable compares canTransition, for every pair of states, with the table of PROTOCOL
// §6 copied here by hand (without STALE, which this client does not have), keyed by the protocol's
// names; and checks that transition refuses every other move.
func TestTransitionTable(t *testing.T) {
	// target: allowed from (PROTOCOL §6).
	protocol := map[string][]string{
		"JOINING":         {"FENCED", "UNSUBSCRIBED", "STALE"},
		"RECONCILING":     {"STABLE", "JOINING", "ACKNOWLEDGING", "RECONCILING"},
		"ACKNOWLEDGING":   {"RECONCILING"},
		"STABLE":          {"JOINING", "ACKNOWLEDGING", "RECONCILING"},
		"FENCED":          {"JOINING", "STABLE", "RECONCILING", "ACKNOWLEDGING", "PREPARE_LEAVING", "LEAVING"},
		"PREPARE_LEAVING": {"JOINING", "STABLE", "RECONCILING", "ACKNOWLEDGING", "UNSUBSCRIBED"},
		"LEAVING":         {"PREPARE_LEAVING"},
		"UNSUBSCRIBED":    {"PREPARE_LEAVING", "LEAVING", "FENCED"},
		"FATAL":           {"JOINING", "STABLE", "RECONCILING", "ACKNOWLEDGING", "PREPARE_LEAVING", "LEAVING", "UNSUBSCRIBED"},
		"STALE":           {"LEAVING"},
	}
	names := map[string]bool{}
	for _, s := range states {
		names[s.String()] = true
	}
	for to, froms := range protocol {
		if !names[to] {
			t.Errorf("state %s of PROTOCOL §6 is missing from states", to)
		}
		for _, f := range froms {
			if !names[f] {
				t.Errorf("state %s of PROTOCOL §6 is missing from states", f)
			}
		}
	}
	if len(states) != len(protocol) {
		t.Errorf("states has %d entries, PROTOCOL §6 %d", len(states), len(protocol))
	}
	pairs := 0
	for _, from := range states {
		for _, to := range states {
			pairs++
			want := false
			for _, f := range protocol[to.String()] {
				want = want || f == from.String()
			}
			if got := canTransition(from, to); got != want {
				t.Errorf("canTransition(%s, %s) = %v, PROTOCOL §6 says %v", from, to, got, want)
			}
			if from == to || want {
				continue
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("transition %s -> %s did not panic", from, to)
					}
				}()
				m := New(Config{Join: heartbeat.JoinInfo{Topology: testTopology}})
				m.state = from
				m.transition(to)
			}()
		}
	}
	if pairs != 100 {
		t.Fatalf("checked %d pairs, want 100", pairs)
	}
}

// runScript feeds one pseudo-random input sequence (its choices from scriptSeed) to a machine whose
// backoff jitter comes from its own source seeded with backoffSeed, checking every invariant, and
// returns every input and action with its time.
func runScript(t *testing.T, scriptSeed, backoffSeed uint64) []traced {
	c := seededChooser{rand.New(rand.NewPCG(scriptSeed, 0x5eed))}
	static := c.intn(3, "") == 0
	offs := c.intn(2, "") == 0
	d := newPropDriver(t, c, static, offs, backoffSeed)
	d.record = true
	d.run(40+c.intn(80, ""), c.intn(2, "") == 0, CloseMode(c.intn(3, "")))
	return d.trace
}

// firstDiff returns the index of the first entry where a and b differ, or -1.
func firstDiff(a, b []traced) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func describeTraced(tr []traced, i int) string {
	if i >= len(tr) {
		return "(end)"
	}
	x := tr[i]
	if x.In != nil {
		return fmt.Sprintf("%s input %T%+v", x.At.Format("15:04:05.000"), x.In, x.In)
	}
	return fmt.Sprintf("%s action %T%+v %x", x.At.Format("15:04:05.000"), x.A, x.A, x.Bytes)
}

// TestMachineDeterminism runs the same random input sequences through two machines whose backoff
// jitter comes from two sources with the same seed, and compares every action (requests compared
// byte for byte) and its time (invariant 8). It is not true by construction: a machine that read
// the clock, the global random source, or iterated a map would differ — and a different seed, which
// changes only the retry times, is shown to make the comparison fail.
func TestMachineDeterminism(t *testing.T) {
	const scripts = 300
	differ := 0
	for script := range uint64(scripts) {
		a, b := runScript(t, script, 42), runScript(t, script, 42)
		if i := firstDiff(a, b); i >= 0 {
			t.Fatalf("script %d: the same inputs gave different actions at %d:\n  %s\n  %s", script,
				i, describeTraced(a, i), describeTraced(b, i))
		}
		if firstDiff(a, runScript(t, script, 43)) >= 0 {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("a different backoff seed never changed a run: the comparison cannot fail")
	}
	t.Logf("a different backoff seed changed %d of %d runs", differ, scripts)

	// The retry times themselves: five COORDINATOR_LOAD_IN_PROGRESS in a row.
	retries := func(seed uint64) []time.Duration {
		d := newPropDriver(t, seededChooser{rand.New(rand.NewPCG(0, 0))}, false, false, seed)
		d.feed(Start{})
		d.answerProbe(3)
		var out []time.Duration
		for range 5 {
			failedAt := d.now
			d.fedOutcome(classSurvive, errorResponse(14), false, nil, "")
			d.feed(HeartbeatDone{Seq: d.hbSeq, Response: errorResponse(14)})
			d.now = d.m.Next()
			d.feed(Tick{})
			if !d.inFlight {
				t.Fatalf("no retry at Next()")
			}
			out = append(out, d.now.Sub(failedAt))
		}
		return out
	}
	a, b, other := retries(7), retries(7), retries(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different retry times: %v vs %v", a, b)
	}
	if reflect.DeepEqual(a, other) {
		t.Fatalf("seeds 7 and 8 gave the same retry times %v: the jitter is not used", a)
	}
	for i, d := range a {
		if d < propBackoffMin*8/10 || d > propBackoffMax {
			t.Fatalf("retry %d after %v, outside the backoff bounds", i, d)
		}
	}
}

// BenchmarkMachineStep measures one steady-state heartbeat through Step: a Tick that builds the
// request and the HeartbeatDone that reads the answer, for a member that owns 1,000 active tasks
// over 20 subtopologies.
func BenchmarkMachineStep(b *testing.B) {
	var subs []topology.Subtopology
	var ids []tasks.ID
	for s := range 20 {
		id := strconv.Itoa(s)
		subs = append(subs, topology.Subtopology{ID: id, SourceTopics: []string{"topic-" + id}})
		for p := range int32(50) {
			ids = append(ids, tasks.ID{Subtopology: id, Partition: p})
		}
	}
	topo := topology.MustNew(subs...)
	big := tasks.Assignment{Active: tasks.NewSet(ids...)}
	m := New(Config{
		Join:    heartbeat.JoinInfo{Group: "app", MemberID: "member-1", ProcessID: "p", RebalanceTimeout: 1000, Topology: topo},
		Backoff: heartbeat.Backoff{Min: time.Millisecond, Max: time.Second},
	})
	now := time.Unix(0, 0)
	var seq uint64
	var inv *Invoke
	step := func(in Input) {
		for _, a := range m.Step(now, in) {
			switch a := a.(type) {
			case SendHeartbeat:
				seq = a.Seq
			case Invoke:
				inv = &a
			}
		}
	}
	step(Start{})
	step(CapabilitiesKnown{Caps: caps44})
	step(HeartbeatDone{Seq: seq, Response: resp(1, &big)})
	if inv == nil || inv.Assignment.Active.Len() != 1000 {
		b.Fatalf("no OnTasksAssigned for 1,000 tasks: %+v", inv)
	}
	step(CallbackDone{Seq: inv.Seq}) // the ack goes
	steady := resp(1, nil)
	step(HeartbeatDone{Seq: seq, Response: steady})
	if m.State() != Stable || m.Snapshot().Owned.Active.Len() != 1000 {
		b.Fatalf("state %s, owned %d", m.State(), m.Snapshot().Owned.Active.Len())
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(interval)
		sent := seq
		step(Tick{})
		if seq == sent {
			b.Fatal("no heartbeat")
		}
		step(HeartbeatDone{Seq: seq, Response: steady})
	}
	if m.State() != Stable {
		b.Fatalf("state %s", m.State())
	}
}

// Two machine bugs the property checker found, as scripted scenarios.

// TestRetriedReconciliationGivesBackARevokedTask: OnTasksRevoked([0_0]) returns, the OnTasksAssigned
// that follows fails, and meanwhile the broker's target went back to {0_0}. When the reconciliation
// is retried, the application holds nothing but the target is {0_0}: it must be handed 0_0 again.
// The machine compares the target with the reconciled assignment (which still lists the revoked
// 0_0) instead of what the application holds, and goes STABLE with the task unprocessed — while
// the broker keeps reading it as owned.
func TestRetriedReconciliationGivesBackARevokedTask(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	h.answer(resp(2, &tasks.Assignment{})) // target {}: revoke 0_0
	h.expectInvoke(CallbackRevoked, "[0_0]")
	h.complete(nil)
	h.expectInvoke(CallbackAssigned, "active=[] standby=[] warmup=[]")
	h.advance(interval)
	h.mustSend()                     // a heartbeat while OnTasksAssigned runs
	h.answer(resp(2, active("0_0"))) // the target is {0_0} again
	h.complete(errCallback)          // OnTasksAssigned({}) fails: retried after backoff
	h.advance(time.Second)
	h.tick()
	if h.owned().Active.IsEmpty() && h.m.State() == Stable {
		t.Fatalf("STABLE with target [0_0] while the application holds %v: 0_0 was revoked and never handed back (last callback %s %v)",
			h.owned(), h.lastInvoke().Kind, h.lastInvoke().Assignment)
	}
	h.expectInvoke(CallbackAssigned, "active=[0_0] standby=[] warmup=[]")
}

// TestStopAfterFatalWhileLeavingEndsInFatal: a fatal answer to a keepalive while OnTasksRevoked runs
// for Close, then Stop (Close's ctx ended): the member stops with the fatal error — and must then be
// in FATAL, as when the callback returns, not in PREPARE_LEAVING with an EventFatal that says so.
func TestStopAfterFatalWhileLeavingEndsInFatal(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.close(CloseDefault)
	h.expectInvoke(CallbackRevoked, "[0_0]")
	h.advance(interval)
	h.mustSend() // a keepalive while leaving
	h.fail(30)   // GROUP_AUTHORIZATION_FAILED
	h.step(Stop{})
	if len(h.stopped) != 1 || h.stopped[0].Err == nil {
		t.Fatalf("stopped %+v, want one with the fatal error", h.stopped)
	}
	if ev := h.lastEvent(EventFatal); ev.State != Fatal || h.m.State() != Fatal {
		t.Fatalf("stopped with a fatal error in state %s (EventFatal says %s), want FATAL", h.m.State(), ev.State)
	}
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
