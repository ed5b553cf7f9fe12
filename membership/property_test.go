package membership

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// checker watches the machine's actions the way an application and a broker would, and fails on
// any broken invariant (the numbers refer to the comment on Machine).
type checker struct {
	t        *rapid.T
	inFlight bool
	pending  *Invoke
	app      tasks.Set // active tasks the application holds, from the callbacks it ran
	handed   tasks.Set // active tasks of the last OnTasksAssigned that returned (emptied by OnAllTasksLost)
	reported tasks.Set // active tasks last reported as owned to the broker
	released tasks.Set // active tasks revoked or lost since they were last handed over
	needFull bool      // an error happened: the next heartbeat must be full
	dones    int
}

func (c *checker) actions(as []Action) {
	for _, a := range as {
		switch a := a.(type) {
		case Send:
			if a.Leave {
				continue
			}
			if c.inFlight {
				c.t.Fatalf("invariant 9: a heartbeat was sent while another was in flight")
			}
			c.inFlight = true
			req := a.Request
			if c.needFull {
				if req.ProcessID == nil || req.RebalanceTimeoutMillis == -1 || req.ActiveTasks == nil {
					c.t.Fatalf("invariant 4: the heartbeat after an error is not full: %+v", req)
				}
				c.needFull = false
			}
			if req.ActiveTasks != nil {
				now := tasks.FromKmsg(req.ActiveTasks)
				if extra := now.Difference(c.handed); !extra.IsEmpty() {
					c.t.Fatalf("invariant 1: reported %v as owned, but OnTasksAssigned handed only %v", extra, c.handed)
				}
				if dropped := c.reported.Difference(now).Difference(c.released); !dropped.IsEmpty() && req.MemberEpoch != 0 {
					c.t.Fatalf("invariant 1: stopped reporting %v without a revocation", dropped)
				}
				c.reported = now
			}
		case Invoke:
			if c.pending != nil {
				c.t.Fatalf("invariant 3: %s invoked while %s is outstanding", a.Kind, c.pending.Kind)
			}
			inv := a
			c.pending = &inv
			if a.Kind == CallbackAssigned {
				if stray := c.app.Difference(a.Assignment.Active); !stray.IsEmpty() {
					c.t.Fatalf("invariant 2: OnTasksAssigned(%v) while the application still holds %v unrevoked", a.Assignment.Active, stray)
				}
			}
		case Done:
			c.dones++
			if c.dones > 1 {
				c.t.Fatal("invariant 6: more than one Done")
			}
		}
	}
}

// callbackReturned applies a callback's effect on what the application holds.
func (c *checker) callbackReturned(err error) {
	inv := c.pending
	c.pending = nil
	if err != nil && inv.Kind != CallbackLost {
		return
	}
	switch inv.Kind {
	case CallbackRevoked:
		c.app = c.app.Difference(inv.Tasks)
		c.released = c.released.Union(inv.Tasks)
	case CallbackAssigned:
		c.app, c.handed = inv.Assignment.Active, inv.Assignment.Active
		c.released = c.released.Difference(inv.Assignment.Active)
	case CallbackLost:
		c.released = c.released.Union(c.handed)
		c.app, c.handed = tasks.Set{}, tasks.Set{}
	}
}

func genAssignment(t *rapid.T) *tasks.Assignment {
	if rapid.IntRange(0, 4).Draw(t, "nullLists") == 0 {
		return nil
	}
	pick := func(label string) tasks.Set {
		var ids []tasks.ID
		for _, sub := range []string{"0", "1"} {
			for p := range int32(3) {
				if rapid.Bool().Draw(t, fmt.Sprintf("%s-%s-%d", label, sub, p)) {
					ids = append(ids, tasks.ID{Subtopology: sub, Partition: p})
				}
			}
		}
		return tasks.NewSet(ids...)
	}
	a := tasks.Assignment{Active: pick("a"), Standby: pick("s"), Warmup: pick("w")}
	return &a
}

var errorCodes = []int16{
	int16(kerr.NotCoordinator.Code), int16(kerr.CoordinatorLoadInProgress.Code), int16(kerr.FencedMemberEpoch.Code),
	int16(kerr.UnknownMemberID.Code), int16(kerr.TopicAuthorizationFailed.Code), int16(kerr.GroupAuthorizationFailed.Code),
}

// TestMachineProperties feeds random sequences of answers, errors, callback results, time, leaves and
// shutdown requests, and checks the invariants after every step.
func TestMachineProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := NewMachine(MachineConfig{
			Member:  heartbeat.Member{Group: "app", MemberID: "m", ProcessID: "p", RebalanceTimeout: 1000, Topology: testTopology},
			Backoff: heartbeat.Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond},
		})
		c := &checker{t: t}
		now := time.Unix(0, 0)
		epoch := int32(0)
		c.actions(m.Start(now))
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1: // time passes
				now = now.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "ms")) * time.Millisecond)
				c.actions(m.Tick(now, nil, nil))
			case 2, 3: // the broker answers
				if !c.inFlight {
					continue
				}
				c.inFlight = false
				epoch += int32(rapid.IntRange(0, 1).Draw(t, "bump"))
				r := resp(max(epoch, 1), genAssignment(t))
				if rapid.IntRange(0, 5).Draw(t, "delayed") == 0 {
					r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: int8(heartbeat.AssignmentDelayed)})
				}
				parsed, err := heartbeat.Parse(r, testTopology)
				if err != nil {
					t.Fatalf("generated an invalid answer: %v", err)
				}
				c.actions(m.HeartbeatAnswered(now, parsed))
			case 4: // the broker answers with an error
				if !c.inFlight {
					continue
				}
				c.inFlight = false
				code := errorCodes[rapid.IntRange(0, len(errorCodes)-1).Draw(t, "code")]
				if heartbeat.ErrorFor(code, nil).Class != heartbeat.Fenced {
					c.needFull = true
				}
				c.actions(m.HeartbeatFailed(now, heartbeat.ErrorFor(code, nil)))
			case 5, 6, 7: // the outstanding callback returns
				if c.pending == nil {
					continue
				}
				var err error
				if rapid.IntRange(0, 3).Draw(t, "cbfail") == 0 {
					err = errors.New("callback failed")
				}
				seq := c.pending.Seq
				c.callbackReturned(err)
				c.actions(m.CallbackDone(now, seq, err))
			case 8:
				c.actions(m.RequestShutdown(now))
			case 9:
				if rapid.IntRange(0, 3).Draw(t, "leave") == 0 {
					c.actions(m.Leave(now, CloseMode(rapid.IntRange(0, 2).Draw(t, "mode"))))
				}
			}
			if st := m.State(); st == Fatal || m.Done() {
				if c.pending == nil && c.dones != 1 && st == Fatal {
					t.Fatalf("invariant 6: fatal with nothing outstanding but no Done")
				}
			}
		}
	})
}

// TestMachineIsDeterministic replays one scripted run twice and compares every action (invariant 8).
func TestMachineIsDeterministic(t *testing.T) {
	run := func() string {
		h := newHarness(t)
		h.stableWith(active("0_0", "0_1"))
		h.advance(interval)
		h.mustSend()
		h.answer(resp(2, active("0_1", "1_0")))
		h.complete(nil)
		h.complete(nil)
		h.mustSend()
		h.fail(int16(kerr.FencedMemberEpoch.Code))
		h.complete(nil)
		h.mustSend()
		var out []string
		for _, a := range h.actions {
			if send, ok := a.(Send); ok {
				out = append(out, fmt.Sprintf("send leave=%v %x", send.Leave, send.Request.AppendTo(nil)))
				continue
			}
			out = append(out, fmt.Sprintf("%+v", a))
		}
		return strings.Join(out, "\n")
	}
	if a, b := run(), run(); a != b {
		t.Fatal("the same inputs gave different actions")
	}
}

// TestOnlyProtocolTransitions checks the transition table against PROTOCOL §6 (invariant 10).
func TestOnlyProtocolTransitions(t *testing.T) {
	if !CanTransition(Stable, Reconciling) || CanTransition(Stable, Leaving) || CanTransition(Fatal, Joining) ||
		!CanTransition(Leaving, Unsubscribed) || CanTransition(Unsubscribed, Stable) {
		t.Fatal("transition table does not match the protocol")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an illegal transition must not pass silently")
		}
	}()
	m := NewMachine(MachineConfig{Member: heartbeat.Member{Topology: testTopology}})
	m.transition(Acknowledging) // Unsubscribed -> Acknowledging is not allowed
}

// BenchmarkMachineStep measures one state-machine step: a steady-state heartbeat answered (build the
// request, read the answer) for a member that owns 1,000 tasks.
func BenchmarkMachineStep(b *testing.B) {
	var ids []tasks.ID
	for p := range int32(500) {
		ids = append(ids, tasks.ID{Subtopology: "0", Partition: p}, tasks.ID{Subtopology: "1", Partition: p})
	}
	big := tasks.Assignment{Active: tasks.NewSet(ids...)}
	m := NewMachine(MachineConfig{
		Member:  heartbeat.Member{Group: "app", MemberID: "m", ProcessID: "p", RebalanceTimeout: 1000, Topology: testTopology},
		Backoff: heartbeat.Backoff{Min: time.Millisecond, Max: time.Second},
	})
	now := time.Unix(0, 0)
	m.Start(now)
	m.Tick(now, nil, nil)
	r, err := heartbeat.Parse(resp(1, &big), testTopology)
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range m.HeartbeatAnswered(now, r) {
		if inv, ok := a.(Invoke); ok {
			m.CallbackDone(now, inv.Seq, nil)
		}
	}
	m.Tick(now, nil, nil) // ack
	steady, _ := heartbeat.Parse(resp(1, nil), testTopology)
	m.HeartbeatAnswered(now, steady)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(interval)
		m.Tick(now, nil, nil)
		m.HeartbeatAnswered(now, steady)
	}
	if m.State() != Stable {
		b.Fatalf("state %s", m.State())
	}
}
