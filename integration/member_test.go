package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
)

const settle = 45 * time.Second // generous bound for conditions that take a few heartbeats

// TestOneMemberGetsAllTasks: a lone member ends up stable with every task and a ready group.
func TestOneMemberGetsAllTasks(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)

	m := startMember(t, b, group, simpleTopology(topic), "a", nil)
	want := taskRange("0", 4)
	Eventually(t, settle, func() (bool, string) {
		active, _, ready := m.rec.snapshot()
		owned, _ := m.Assignment()
		_, epoch := m.Member()
		return active.Equal(want) && ready && owned.Active.Equal(want) && m.State() == membership.Stable && epoch >= 1,
			fmt.Sprintf("state %s epoch %d, listener has %v ready=%v; events %s", m.State(), epoch, active, ready, m.eventKinds())
	})
}

// TestSecondMemberSplitsTasksWithoutOverlap: a second member joins, the tasks split between the two,
// and at no moment was an active task owned by both (every assign/revoke is logged with a monotonic
// timestamp). Then the first member closes gracefully and the second gets every task well before a
// session timeout could have passed.
func TestSecondMemberSplitsTasksWithoutOverlap(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 6)
	b.DeleteGroupAtEnd(t, group)
	own := newOwnership()
	all := taskRange("0", 6)

	a := startMember(t, b, group, simpleTopology(topic), "a", own)
	Eventually(t, settle, func() (bool, string) {
		act, _, _ := a.rec.snapshot()
		return act.Equal(all), fmt.Sprintf("a owns %v", act)
	})
	c := startMember(t, b, group, simpleTopology(topic), "c", own)
	Eventually(t, settle, func() (bool, string) {
		x, _, _ := a.rec.snapshot()
		y, _, _ := c.rec.snapshot()
		split := x.Len() == 3 && y.Len() == 3 && x.Union(y).Equal(all) && x.Intersect(y).IsEmpty()
		return split && a.State() == membership.Stable && c.State() == membership.Stable,
			fmt.Sprintf("a=%v (%s) c=%v (%s)", x, a.State(), y, c.State())
	})
	own.check(t)

	aID, _ := a.Member()
	a.close(t)
	// Right after Close the broker must already have removed the member: that is the leave heartbeat,
	// not the session timeout (which would leave it listed for seconds).
	if ids := groupMemberIDs(t, b, group); ids[aID] {
		t.Fatalf("member %s is still in the group right after Close: the leave did not reach the broker (members %v)", aID, ids)
	}
	Eventually(t, settle, func() (bool, string) {
		y, _, _ := c.rec.snapshot()
		return y.Equal(all), fmt.Sprintf("c owns %v", y)
	})
	own.check(t)
}

// heartbeatCounter counts StreamsGroupHeartbeat requests a client writes.
type heartbeatCounter struct{ n atomic.Int64 }

func (h *heartbeatCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 88 && err == nil {
		h.n.Add(1)
	}
}

// TestSteadyStateIsQuiet: once a member is stable, further heartbeats produce no events (and so no
// log lines above debug): statuses, endpoints and assignments are reported only when they change.
func TestSteadyStateIsQuiet(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	hb := &heartbeatCounter{}
	cl := b.Client(t, kgo.WithHooks(hb))
	cfg := config.Default(group)
	cfg.ApplicationServer = "localhost:7070"
	mgr, err := membership.New(cl, cfg, simpleTopology(topic), membership.WithLogger(testLogger))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []membership.Event
	evs := mgr.Events()
	go func() {
		for e := range evs {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
	}()
	if err := mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer mgr.Close(context.Background())
	Eventually(t, settle, func() (bool, string) {
		a, ready := mgr.Assignment()
		return mgr.State() == membership.Stable && ready && a.Active.Len() == 2, mgr.State().String()
	})
	// Events arrive on their own goroutine: the steady state counts from the event that says the
	// member became stable at its current epoch, once it was read.
	_, epoch := mgr.Member()
	var before int
	Eventually(t, settle, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for i, e := range events {
			if e.Kind == membership.EventStateChanged && e.State == membership.Stable && e.Epoch == epoch {
				before = i + 1
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events read, none yet says stable at epoch %d", len(events), epoch)
	})
	start := hb.n.Load()
	Eventually(t, settle, func() (bool, string) {
		return hb.n.Load() >= start+6, fmt.Sprintf("%d heartbeats so far", hb.n.Load()-start)
	})
	mu.Lock()
	defer mu.Unlock()
	if extra := events[before:]; len(extra) > 0 {
		t.Fatalf("%d events in the steady state, first: %v", len(extra), extra[0])
	}
}
