package machine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Details no other test asserts, one per test: event and error texts, late or duplicate answers
// ignored, sequence numbers, the offsets clock and trigger, backoff while leaving, what a snapshot
// carries. (Most were written when mutation testing found the detail unpinned.)

func TestEventString(t *testing.T) {
	err := errors.New("boom")
	cases := []struct {
		e    Event
		want string
	}{
		{Event{Kind: EventAssigned, State: Reconciling, Epoch: 3, Assignment: *active("0_0"), Ready: true},
			"assigned state=RECONCILING epoch=3 active=[0_0] standby=[] warmup=[] ready=true"},
		{Event{Kind: EventGroupReadyChanged, State: Stable, Epoch: 1, Ready: false}, "group-ready-changed state=STABLE epoch=1 ready=false"},
		{Event{Kind: EventMissingSourceTopics, State: Stable, Epoch: 1, Topics: []string{"a", "b"}, Message: "Source topics a, b are missing."},
			"missing-source-topics state=STABLE epoch=1 topics=[a b]: Source topics a, b are missing."},
		{Event{Kind: EventError, State: Stable, Epoch: 2, Err: err}, "error state=STABLE epoch=2: boom"},
		{Event{Kind: EventLeft, State: Unsubscribed, Epoch: 2}, "left state=UNSUBSCRIBED epoch=2"},
		{Event{Kind: EventKind(99)}, "EventKind(99) state=UNSUBSCRIBED epoch=0"},
	}
	for _, c := range cases {
		if got := c.e.String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// describedGroup is a StreamsGroupDescribe group running testTopology at epoch.
func describedGroup(epoch int32) *kmsg.StreamsGroupDescribeResponseGroup {
	g := kmsg.NewStreamsGroupDescribeResponseGroup()
	req := testTopology.Request(epoch)
	tp := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
	tp.Epoch = epoch
	for _, s := range req.Subtopologies {
		d := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
		d.SubtopologyID, d.SourceTopics, d.RepartitionSinkTopics = s.SubtopologyID, s.SourceTopics, s.RepartitionSinkTopics
		for _, r := range s.RepartitionSourceTopics {
			r.NumPartitions = 4 // described topologies carry resolved counts
			d.RepartitionSourceTopics = append(d.RepartitionSourceTopics, r)
		}
		for _, c := range s.StateChangelogTopics {
			c.NumPartitions = 4
			d.StateChangelogTopics = append(d.StateChangelogTopics, c)
		}
		tp.Subtopologies = append(tp.Subtopologies, d)
	}
	g.Topology = &tp
	return &g
}

func TestStaleTopologyNamesTheGroupsTopology(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.described = Described{Group: describedGroup(4)}
	h.advance(interval)
	h.mustSend()
	h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.StaleTopology}))
	ev := h.lastEvent(EventStaleTopology)
	if tm := ev.GroupTopology; tm == nil || tm.GroupID != testTopology.ID() || tm.GroupEpoch != 4 || tm.LocalEpoch != 0 {
		t.Fatalf("mismatch %+v", ev.GroupTopology)
	}
	if !strings.Contains(ev.GroupTopology.String(), "at epoch 4") {
		t.Fatalf("String %q", ev.GroupTopology.String())
	}
}

// A late OffsetsCollected from an earlier collection is not taken for the current one.
func TestLateOffsetsOfAnEarlierCollectionAreIgnored(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReportsOffsets = true })
	h.holdOffs = true
	h.start()
	first := *h.pendingCollect
	h.pendingCollect = nil
	h.advance(DefaultOffsetsWait)
	h.step(Tick{}) // the join goes without offsets
	h.answer44(1, warmup("0_0"))
	h.complete(nil) // the ack wants offsets: a second collection
	if h.pendingCollect == nil || h.pendingCollect.Seq == first.Seq {
		t.Fatalf("second collection %+v, first %+v", h.pendingCollect, first)
	}
	n := len(h.sent)
	h.step(OffsetsCollected{Seq: first.Seq, Offsets: offs("0_0", 1), Ends: offs("0_0", 2)})
	if len(h.sent) != n {
		t.Fatal("offsets of the first collection sent the second heartbeat")
	}
}

// A duplicate answer to an earlier heartbeat is not taken for the one in flight.
func TestDuplicateAnswerIsIgnored(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReportsOffsets = true })
	h.start() // collects (answered at once by the harness), then joins
	h.mustSend()
	joinSeq := h.lastSeq()
	h.answer44(1, nil)
	h.advance(interval)
	h.mustSend() // collects, then sends
	if h.lastSeq() == joinSeq {
		t.Fatal("two heartbeats with one sequence number")
	}
	n := len(h.invokes)
	h.step(HeartbeatDone{Seq: joinSeq, Response: resp(1, active("0_0"))})
	if len(h.invokes) != n || !h.m.hb.inFlight {
		t.Fatal("a duplicate answer to the join was taken for the heartbeat in flight")
	}
}

// An answer with epoch 0 and no interval is a malformed success, fatal, not an ignored leave epoch.
func TestZeroEpochWithoutIntervalIsFatal(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.mustSend()
	r := resp(0, nil)
	r.HeartbeatIntervalMillis = 0
	h.answer(r)
	h.expectState(Fatal)
	var pe *heartbeat.ProtocolError
	if len(h.stopped) != 1 || !errors.As(h.stopped[0].Err, &pe) {
		t.Fatalf("stopped %+v", h.stopped)
	}
}

// Retries of keepalives while leaving back off as everywhere else.
func TestBackoffGrowsWhileLeaving(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.close(CloseDefault)
	h.advance(interval)
	h.mustSend()
	h.fail(int16(kerr.CoordinatorLoadInProgress.Code))
	h.advance(100 * time.Millisecond)
	h.mustSend()
	h.fail(int16(kerr.CoordinatorLoadInProgress.Code))
	h.advance(199 * time.Millisecond)
	if h.tick() != nil {
		t.Fatal("the second retry came before the doubled backoff")
	}
	h.advance(time.Millisecond)
	h.mustSend()
}

// The observation actions metrics are built on: how each answer was read, and each reconciliation's
// start, completion and failure with the time its target arrived.
func TestObservationActions(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.mustSend()
	joinAt := h.now
	h.answer(resp(1, active("0_0")))
	h.advance(30 * time.Millisecond)
	h.complete(errors.New("boom")) // OnTasksAssigned fails
	h.advance(100 * time.Millisecond)
	h.step(Tick{})
	h.complete(nil) // the retry succeeds; the ack is built
	h.mustSend()
	h.answer(resp(1, nil))
	h.advance(interval)
	h.mustSend()
	h.fail(int16(kerr.NotCoordinator.Code))
	var results []HeartbeatResult
	var phases []RebalancePhase
	for _, a := range h.actions {
		switch a := a.(type) {
		case HeartbeatResult:
			results = append(results, a)
		case Rebalance:
			phases = append(phases, a.Phase)
			if !a.TargetAt.Equal(joinAt) {
				t.Fatalf("%s: target arrived at %v, want %v", a.Phase, a.TargetAt, joinAt)
			}
		}
	}
	want := []RebalancePhase{RebalanceStarted, RebalanceFailed, RebalanceStarted, RebalanceCompleted}
	if len(phases) != len(want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	for i := range want {
		if phases[i] != want[i] {
			t.Fatalf("phases %v, want %v", phases, want)
		}
	}
	if len(results) != 3 || results[0].Class != 0 || results[1].Class != 0 || results[2].Class != heartbeat.Rediscover ||
		results[2].Seq != h.seqs[2] || !errors.Is(results[2].Err, kerr.NotCoordinator) {
		t.Fatalf("results %+v", results)
	}
}

func TestSnapshotPendingNamesTheWork(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	if p := h.m.Pending(); p != "" {
		t.Fatalf("pending %q while stable", p)
	}
	h.advance(interval)
	h.mustSend()
	h.answer(resp(2, active("0_1")))
	p := h.m.Pending()
	for _, want := range []string{"running #", "revoke OnTasksRevoked[0_0]", "reconciliation#2 toward {active=[0_1]"} {
		if !strings.Contains(p, want) {
			t.Fatalf("pending %q lacks %q", p, want)
		}
	}
	h.complete(nil)
	if p := h.m.Pending(); !strings.Contains(p, "assign OnTasksAssigned{active=[0_1]") {
		t.Fatalf("pending %q", p)
	}
	h.close(CloseDefault) // queued behind the running assignment
	if p := h.m.Pending(); !strings.Contains(p, "waiting #") || !strings.Contains(p, " leave") {
		t.Fatalf("pending %q", p)
	}
}

// Callback sequence numbers increase, so a result is matched to its callback alone.
func TestInvokeSequenceNumbersIncrease(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	h.answer(resp(2, active("0_1")))
	h.complete(nil)
	h.complete(nil)
	for i := 1; i < len(h.invokes); i++ {
		if h.invokes[i].Seq <= h.invokes[i-1].Seq {
			t.Fatalf("sequence %d after %d", h.invokes[i].Seq, h.invokes[i-1].Seq)
		}
	}
	if h.invokes[0].Seq != 1 {
		t.Fatalf("first sequence %d", h.invokes[0].Seq)
	}
}

// Without any interval (the broker's is 0 and none is configured) offsets go only on a trigger.
func TestNoOffsetIntervalMeansTriggersOnly(t *testing.T) {
	h := offsetsHarness(t)
	h.start()
	h.tickOffsets(offs("0_0", 1), offs("0_0", 2))
	r := resp(1, active("0_0"))
	r.AcceptableRecoveryLag = 100 // a 4.4 broker, but no offset interval
	h.answer(r)
	h.complete(nil)
	h.tickOffsets(offs("0_0", 1), offs("0_0", 2)) // the ack: nothing changed
	h.answer(r)
	h.advance(time.Hour)
	if req := h.tickOffsets(offs("0_0", 5), offs("0_0", 9)); req == nil || req.TaskOffsets != nil {
		t.Fatalf("offsets sent without a trigger: %+v", req)
	}
}

// Either list alone goes: a provider may know end offsets before positions.
func TestOffsetListsGoAlone(t *testing.T) {
	for _, c := range []struct {
		name       string
		offs, ends tasks.Offsets
	}{{"ends only", nil, offs("0_0", 9)}, {"offsets only", offs("0_0", 1), nil}} {
		t.Run(c.name, func(t *testing.T) {
			h := offsetsHarness(t)
			h.start()
			req := h.tickOffsets(c.offs, c.ends)
			if (req.TaskOffsets != nil) != (c.offs != nil) || (req.TaskEndOffsets != nil) != (c.ends != nil) {
				t.Fatalf("join %+v", req)
			}
		})
	}
}

// An acceptable recovery lag of 0 still places warm-ups: a warm-up that caught up exactly is hot.
func TestZeroAcceptableLagWarmupIsHot(t *testing.T) {
	h := offsetsHarness(t)
	h.start()
	h.tickOffsets(nil, nil)
	r := resp(1, warmup("0_0"))
	r.AcceptableRecoveryLag, r.TaskOffsetIntervalMillis = 0, 15000
	h.answer(r)
	h.complete(nil)
	h.tickOffsets(offs("0_0", 0), offs("0_0", 10))
	h.answer(resp44(1))
	h.advance(interval)
	if req := h.tickOffsets(offs("0_0", 10), offs("0_0", 10)); req == nil || req.TaskOffsets == nil {
		t.Fatal("a caught-up warm-up with lag 0 allowed is hot")
	}
}

func resp44(epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
	r := resp(epoch, nil)
	r.AcceptableRecoveryLag, r.TaskOffsetIntervalMillis = 0, 15000
	return r
}

// Offsets of 0 are real positions: a warm-up at offset 0 within the lag is hot, and so is one whose
// changelog is empty (0 of 0).
func TestWarmupAtOffsetZeroIsHot(t *testing.T) {
	for _, c := range []struct {
		name     string
		off, end int
	}{{"offset 0", 0, 50}, {"empty changelog", 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			h := offsetsHarness(t)
			h.start()
			h.tickOffsets(nil, nil)
			h.answer44(1, warmup("0_0"))
			h.complete(nil)
			h.tickOffsets(offs("0_0", 7), offs("0_0", 1000)) // the ack: lag 993, not hot
			h.answer44(1, nil)
			h.advance(interval)
			if req := h.tickOffsets(offs("0_0", c.off), offs("0_0", c.end)); req == nil || req.TaskOffsets == nil {
				t.Fatalf("offset %d of %d with lag 100 allowed is hot", c.off, c.end)
			}
		})
	}
}

// The interval clock moves only for offsets a heartbeat carried, and a trigger is used up once.
func TestOffsetClockAndTrigger(t *testing.T) {
	h := offsetsHarness(t)
	h.start()
	h.tickOffsets(offs("0_0", 1), offs("0_0", 2)) // join at t0: offsets go, the clock starts
	h.answer44(1, nil)                            // 15 s offset interval
	h.complete(nil)
	h.tickOffsets(offs("0_0", 1), offs("0_0", 2)) // the ack uses up the assignment trigger
	h.answer44(1, nil)
	h.advance(interval)
	if req := h.tickOffsets(offs("0_0", 3), offs("0_0", 4)); req == nil || req.TaskOffsets != nil {
		t.Fatal("the trigger was used by the ack: changed offsets wait for the interval")
	}
	h.answer44(1, nil)
	h.advance(15 * time.Second)
	if req := h.tickOffsets(offs("0_0", 1), offs("0_0", 2)); req == nil || req.TaskOffsets != nil {
		t.Fatal("unchanged offsets are not resent at the interval")
	}
	h.answer44(1, nil)
	h.advance(interval)
	// Nothing was carried at the interval, so the clock did not move: changed offsets go now.
	if req := h.tickOffsets(offs("0_0", 5), offs("0_0", 6)); req == nil || req.TaskOffsets == nil {
		t.Fatal("the interval clock moved although no offsets were sent")
	}
}

// A capability answer nobody asked for (a duplicate, or one after the member joined) changes nothing.
func TestUnaskedCapabilitiesIgnored(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	n, events := len(h.sent), len(h.events)
	h.step(CapabilitiesKnown{Caps: heartbeat.Capabilities{HeartbeatMaxVersion: -1}})
	h.step(CapabilitiesKnown{Err: errors.New("late failure")})
	h.expectState(Stable)
	if len(h.sent) != n || len(h.events) != events || h.probes != 1 {
		t.Fatalf("an unasked capability answer acted: %d sent, %d events, %d probes", len(h.sent)-n, len(h.events)-events, h.probes)
	}
}

// An unreachable cluster is logged once, not at every retry, and its recovery once.
func TestUnreachableClusterLoggedOnce(t *testing.T) {
	h := newHarness(t)
	h.capsErr = errors.New("connection refused")
	h.start()
	for range 3 {
		h.advance(time.Second)
		h.step(Tick{})
	}
	h.capsErr = nil
	h.advance(time.Second)
	h.step(Tick{})
	var warn, back int
	for _, a := range h.actions {
		if l, ok := a.(Log); ok {
			switch l.Msg {
			case "cannot reach the cluster yet; retrying":
				warn++
			case "the cluster answers now":
				back++
			}
		}
	}
	if h.probes != 5 || warn != 1 || back != 1 {
		t.Fatalf("%d probes, %d warnings, %d recoveries", h.probes, warn, back)
	}
}

// A readiness change alone is a new target: the rebalance it starts dates from that answer.
func TestReadinessChangeDatesItsRebalance(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	at := h.now
	n := len(h.actions)
	h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.AssignmentDelayed}))
	found := false
	for _, a := range h.actions[n:] {
		if r, ok := a.(Rebalance); ok && r.Phase == RebalanceStarted {
			found = true
			if !r.TargetAt.Equal(at) {
				t.Fatalf("rebalance dated %v, want the answer's %v", r.TargetAt, at)
			}
		}
	}
	if !found {
		t.Fatal("a readiness change started no rebalance")
	}
}

func TestZeroValuesAreNotKinds(t *testing.T) {
	for got, want := range map[string]string{
		EventKind(0).String():      "EventKind(0)",
		jobOp(0).String():          "jobOp(0)",
		RebalancePhase(0).String(): "RebalancePhase(0)",
		CallbackKind(0).String():   "CallbackKind(0)",
	} {
		if got != want {
			t.Errorf("zero value reads %q, want %q", got, want)
		}
	}
}

// EventGroupReadyChanged comes only when readiness changes.
func TestReadyChangedOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	n := h.countEvents(EventGroupReadyChanged)
	h.advance(interval)
	h.mustSend()
	h.answer(resp(2, active("0_0", "0_1")))
	h.complete(nil)
	if h.countEvents(EventGroupReadyChanged) != n {
		t.Fatal("a new assignment at the same readiness reported a readiness change")
	}
}

// A fatal error whose OnAllTasksLost fails still stops the member, and the failure is logged.
func TestFatalWithFailingLostStops(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	h.fail(int16(kerr.GroupAuthorizationFailed.Code))
	n := len(h.actions)
	h.complete(errors.New("lost failed"))
	logged := false
	for _, a := range h.actions[n:] {
		if l, ok := a.(Log); ok && l.Msg == "OnAllTasksLost failed" {
			logged = true
		}
	}
	if !logged || len(h.stopped) != 1 || !errors.Is(h.stopped[0].Err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("logged %v, stopped %+v", logged, h.stopped)
	}
	h2 := newHarness(t)
	h2.stableWith(active("0_0"))
	h2.advance(interval)
	h2.mustSend()
	h2.fail(int16(kerr.GroupAuthorizationFailed.Code))
	n = len(h2.actions)
	h2.complete(nil)
	for _, a := range h2.actions[n:] {
		if _, ok := a.(Log); ok {
			t.Fatal("a successful OnAllTasksLost logged a failure")
		}
	}
}

// The timeout event names the missing source topics, whatever other statuses come with them.
func TestMissingTimeoutNamesTheMissingTopics(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.mustSend()
	missing := heartbeat.Status{Code: heartbeat.MissingSourceTopics, Detail: "Source topics a, b are missing."}
	other := heartbeat.Status{Code: heartbeat.MissingInternalTopics, Detail: "Internal topics are missing: x"}
	h.answer(resp(1, active(), missing, other))
	h.complete(nil)
	h.advance(2 * interval)
	h.step(Tick{})
	ev := h.lastEvent(EventMissingSourceTopicsTimeout)
	if len(ev.Topics) != 2 || ev.Topics[0] != "a" || ev.Topics[1] != "b" {
		t.Fatalf("timeout names %v", ev.Topics)
	}
}

// A failed describe is logged; a good one is not.
func TestDescribeFailureLogged(t *testing.T) {
	for _, fails := range []bool{true, false} {
		h := newHarness(t)
		h.stableWith(active("0_0"))
		h.described = Described{Group: describedGroup(3)}
		if fails {
			h.described = Described{Err: errors.New("timeout")}
		}
		h.advance(interval)
		h.mustSend()
		n := len(h.actions)
		h.answer(resp(1, nil, heartbeat.Status{Code: heartbeat.StaleTopology}))
		logged := false
		for _, a := range h.actions[n:] {
			if l, ok := a.(Log); ok && l.Msg == "could not describe the group to compare topologies" {
				logged = true
			}
		}
		if logged != fails {
			t.Fatalf("describe fails %v, logged %v", fails, logged)
		}
	}
}

// A member that holds active tasks at epoch 0 (the broker answered the join at epoch 0) loses them
// on Close: OnTasksRevoked is only for a member past epoch 0, whose revocation the broker waits for.
func TestLeaveAtEpochZeroWithTasks(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.mustSend()
	h.answer(resp(0, active("0_0")))
	h.complete(nil)
	h.close(CloseDefault)
	h.expectInvoke(CallbackLost, "active=[0_0] standby=[] warmup=[]")
}

// An answer whose target equals what is held ends a pending retry at once: Stable.
func TestTargetBackToHeldEndsRetry(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	h.answer(resp(2, active("0_0", "0_1")))
	h.advance(interval)
	h.mustSend()                   // in flight while OnTasksAssigned runs
	h.complete(errors.New("boom")) // the assignment fails; a retry is pending
	h.expectState(Reconciling)
	h.answer(resp(2, active("0_0"))) // the broker takes 0_1 back
	h.expectState(Stable)
	n := len(h.invokes)
	h.advance(time.Second)
	h.step(Tick{})
	if len(h.invokes) != n {
		t.Fatal("the cancelled retry still ran")
	}
}

func TestSnapshotCarriesTheBrokersOffsetSettings(t *testing.T) {
	h := newHarness(t)
	if s := h.m.Snapshot(); s.AcceptableRecoveryLag != -1 || s.TaskOffsetInterval != 0 {
		t.Fatalf("before any answer: %+v", s)
	}
	h.start()
	h.mustSend()
	h.answer44(1, nil)
	if s := h.m.Snapshot(); s.AcceptableRecoveryLag != 100 || s.TaskOffsetInterval != 15*time.Second {
		t.Fatalf("after a 4.4 answer: lag %d, interval %v", s.AcceptableRecoveryLag, s.TaskOffsetInterval)
	}
}

// A cluster that answered at once gets no "answers now" line.
func TestReachableClusterLogsNoRecovery(t *testing.T) {
	h := newHarness(t)
	h.start()
	for _, a := range h.actions {
		if l, ok := a.(Log); ok && l.Msg == "the cluster answers now" {
			t.Fatal("a recovery logged without a failure")
		}
	}
}

// The pending work names at most briefLimit tasks of a set and counts the others, so a snapshot of
// a member with thousands of tasks costs no string per task.
func TestBriefNamesAFewTasks(t *testing.T) {
	var ids []string
	for p := range 20 {
		ids = append(ids, fmt.Sprintf("0_%d", p))
	}
	if got, want := brief(set(ids[:8]...)), set(ids[:8]...).String(); got != want {
		t.Errorf("%d tasks: %q, want %q", 8, got, want)
	}
	if got, want := brief(set(ids[:9]...)), "[0_0 0_1 0_2 0_3 0_4 0_5 0_6 0_7 … 1 more]"; got != want {
		t.Errorf("9 tasks: %q, want %q", got, want)
	}
	if got := brief(set(ids...)); !strings.HasSuffix(got, "0_7 … 12 more]") || strings.Contains(got, "0_8") {
		t.Errorf("20 tasks: %q", got)
	}
	if got, want := briefAssignment(tasks.Assignment{Active: set("0_1"), Standby: set("1_0")}), "active=[0_1] standby=[1_0] warmup=[]"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
