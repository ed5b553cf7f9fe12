package membership_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// This test uses only the exported API: a Manager runs against a Transport written outside the
// package.

var extTopology = topology.MustNew(
	topology.Subtopology{ID: "0", SourceTopics: []string{"orders"}},
	topology.Subtopology{ID: "1", SourceTopics: []string{"payments"}},
)

var extCaps = heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1} // Kafka 4.4

func extTasks(ids ...string) tasks.Set {
	var out []tasks.ID
	for _, s := range ids {
		id, err := tasks.ParseID(s)
		if err != nil {
			panic(err)
		}
		out = append(out, id)
	}
	return tasks.NewSet(out...)
}

// extAnswer is a broker's successful answer; a nil assignment leaves the three task lists null.
func extAnswer(epoch int32, a *tasks.Assignment) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "m-1"
	r.MemberEpoch = epoch
	r.HeartbeatIntervalMillis = 500
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if a != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = a.Active.Kmsg(), a.Standby.Kmsg(), a.Warmup.Kmsg()
	}
	return r
}

func owned(req *kmsg.StreamsGroupHeartbeatRequest) string {
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
		return fmt.Sprintf("null lists (%v %v %v)", req.ActiveTasks == nil, req.StandbyTasks == nil, req.WarmupTasks == nil)
	}
	return tasks.Assignment{Active: tasks.FromKmsg(req.ActiveTasks), Standby: tasks.FromKmsg(req.StandbyTasks),
		Warmup: tasks.FromKmsg(req.WarmupTasks)}.String()
}

// extBroker is a scripted coordinator behind the exported Transport interface: the member joins
// and gets every partition of subtopology "0" (2 tasks) as active tasks.
type extBroker struct {
	mu         sync.Mutex
	log        []string // what the member did, in order (heartbeats, leave, callbacks)
	heartbeats []*kmsg.StreamsGroupHeartbeatRequest
	at         []time.Time
	leaves     []*kmsg.StreamsGroupHeartbeatRequest
}

var _ membership.Transport = (*extBroker)(nil)

func (b *extBroker) record(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log = append(b.log, s)
}

func (b *extBroker) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if req.MemberEpoch < 0 {
		b.leaves = append(b.leaves, req)
		b.log = append(b.log, fmt.Sprintf("leave epoch=%d", req.MemberEpoch))
		r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		r.Version, r.MemberID, r.MemberEpoch = 1, req.MemberID, req.MemberEpoch
		return r, nil // taken
	}
	b.heartbeats = append(b.heartbeats, req)
	b.at = append(b.at, time.Now())
	b.log = append(b.log, fmt.Sprintf("heartbeat epoch=%d owned=%s", req.MemberEpoch, owned(req)))
	if req.MemberEpoch == 0 {
		return extAnswer(1, &tasks.Assignment{Active: extTasks("0_0", "0_1")}), nil
	}
	return extAnswer(1, nil), nil
}

func (b *extBroker) Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	return nil, errors.New("describe is not scripted")
}

func (b *extBroker) CoordinatorConfigs(context.Context, ...string) (*kmsg.DescribeConfigsResponse, error) {
	return nil, errors.New("coordinator configs are not scripted")
}

func (b *extBroker) GroupConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error) {
	return nil, errors.New("group configs are not scripted")
}

func (b *extBroker) Capabilities(ctx context.Context) (heartbeat.Capabilities, error) {
	return extCaps, nil
}

func (b *extBroker) snapshot() (log []string, heartbeats []*kmsg.StreamsGroupHeartbeatRequest, at []time.Time, leaves []*kmsg.StreamsGroupHeartbeatRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.log), slices.Clone(b.heartbeats), slices.Clone(b.at), slices.Clone(b.leaves)
}

// extListener records the callbacks into the broker's log (one order for everything) and takes
// revokeFor (fake time) to revoke, as an application committing its work would.
type extListener struct {
	b         *extBroker
	revokeFor time.Duration
	assigned  chan tasks.Assignment
}

func (l *extListener) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	l.b.record("revoked " + revoked.String())
	select {
	case <-time.After(l.revokeFor):
	case <-ctx.Done():
		return ctx.Err()
	}
	l.b.record("revoked done")
	return nil
}

func (l *extListener) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	l.b.record(fmt.Sprintf("assigned %v ready=%v", a, ready))
	l.assigned <- a
	return nil
}

func (l *extListener) OnAllTasksLost(ctx context.Context, a tasks.Assignment) error {
	l.b.record("lost " + a.String())
	return nil
}

// TestManagerWithOwnTransport runs a real Manager against a Transport written outside the package,
// in a synctest bubble (fake time, no sleeps): it joins, the listener gets its tasks, heartbeats go
// at the broker's interval — also while a slow OnTasksRevoked runs for Close — and Close leaves
// with epoch -1 and returns with no goroutine left.
func TestManagerWithOwnTransport(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		before := goleak.IgnoreCurrent()
		b := &extBroker{}
		l := &extListener{b: b, revokeFor: 2 * time.Second, assigned: make(chan tasks.Assignment, 4)}
		cfg := config.Default("app")
		cfg.ProcessID = "7f3c9a52-6f1e-4d5b-9a0e-2b8c4d6e8f10"
		m, err := membership.New(nil, cfg, extTopology,
			membership.WithTransport(b), membership.WithListener(l), membership.WithMemberID("m-1"),
			membership.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		events := m.Events()
		collected := make(chan []membership.Event, 1)
		go func() {
			var evs []membership.Event
			for e := range events {
				evs = append(evs, e)
			}
			collected <- evs
		}()
		start := time.Now()
		if err := m.Start(context.Background()); err != nil {
			t.Fatal(err)
		}

		// Join, OnTasksAssigned, ack: all at once, without waiting for any interval.
		want := tasks.Assignment{Active: extTasks("0_0", "0_1")}
		if got := <-l.assigned; !got.Equal(want) {
			t.Fatalf("OnTasksAssigned %v, want %v", got, want)
		}
		synctest.Wait()
		if a, _ := m.Assignment(); !a.Equal(want) || m.State() != membership.Stable {
			t.Fatalf("after the ack: %v in %s", a, m.State())
		}
		if id, epoch := m.Member(); id != "m-1" || epoch != 1 {
			t.Fatalf("member %s epoch %d", id, epoch)
		}
		if time.Since(start) != 0 {
			t.Fatalf("joining took %v of fake time; the join and the ack go at once", time.Since(start))
		}
		_, hbs, _, _ := b.snapshot()
		if len(hbs) != 2 || hbs[0].MemberEpoch != 0 || hbs[0].Topology == nil || hbs[0].ProcessID == nil || *hbs[0].ProcessID != cfg.ProcessID {
			t.Fatalf("join: %d heartbeats, the first %+v", len(hbs), hbs[0])
		}
		if hbs[1].MemberEpoch != 1 || owned(hbs[1]) != "active=[0_0 0_1] standby=[] warmup=[]" {
			t.Fatalf("ack at epoch %d owns %s", hbs[1].MemberEpoch, owned(hbs[1]))
		}

		// Five seconds in the group: one heartbeat per 500 ms interval, no more, no less.
		time.Sleep(5*time.Second + 250*time.Millisecond)
		_, hbs, at, _ := b.snapshot()
		if n := len(hbs) - 2; n != 10 {
			t.Fatalf("%d heartbeats in 5 s at a 500 ms interval, want 10", n)
		}
		for i := 2; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap != 500*time.Millisecond {
				t.Fatalf("heartbeat %d came %v after the previous one", i, gap)
			}
		}

		// Close: OnTasksRevoked takes 2 s; the member keeps heartbeating meanwhile (issue 9 §1.1),
		// then leaves with epoch -1.
		closeStart := time.Now()
		if err := m.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if took := time.Since(closeStart); took != 2*time.Second {
			t.Fatalf("Close took %v, want the 2 s of the revocation", took)
		}
		log, hbs, at, leaves := b.snapshot()
		if len(leaves) != 1 || leaves[0].MemberEpoch != heartbeat.EpochLeave || leaves[0].MemberID != "m-1" {
			t.Fatalf("leaves %+v, want one at epoch -1", leaves)
		}
		during := 0
		for _, ts := range at {
			if ts.After(closeStart) {
				during++
			}
		}
		if during < 3 {
			t.Fatalf("%d heartbeats during the 2 s revocation, want one per interval", during)
		}
		var calls []string
		for _, s := range log {
			if !strings.HasPrefix(s, "heartbeat") {
				calls = append(calls, s)
			}
		}
		wantCalls := []string{"assigned active=[0_0 0_1] standby=[] warmup=[] ready=true", "revoked [0_0 0_1]", "revoked done", "leave epoch=-1"}
		if !slices.Equal(calls, wantCalls) {
			t.Fatalf("callbacks and leave %q, want %q", calls, wantCalls)
		}
		if m.Err() != nil || m.State() != membership.Unsubscribed {
			t.Fatalf("after Close: err %v, state %s", m.Err(), m.State())
		}
		select {
		case <-m.Done():
		default:
			t.Fatal("Done is not closed after Close")
		}
		if a, _ := m.Assignment(); !a.IsEmpty() {
			t.Fatalf("still assigned %v after Close", a)
		}

		evs := <-collected // the channel closed
		var seen []string
		for _, e := range evs {
			switch e.Kind {
			case membership.EventStateChanged:
				seen = append(seen, e.State.String())
			case membership.EventAssigned, membership.EventLeft:
				seen = append(seen, e.Kind.String())
			}
		}
		wantSeen := []string{"JOINING", "RECONCILING", "assigned", "ACKNOWLEDGING", "STABLE", "PREPARE_LEAVING", "LEAVING", "UNSUBSCRIBED", "left"}
		if !slices.Equal(seen, wantSeen) {
			t.Fatalf("events %v, want %v", seen, wantSeen)
		}
		if len(hbs) == 0 {
			t.Fatal("no heartbeat")
		}
		goleak.VerifyNone(t, before) // nothing of the member is left once Close returned
	})
}

// replication.factor reaches the broker: the join sends every internal topic the topology declares
// without a factor with the key's, as Kafka Streams does.
func TestManagerSendsReplicationFactor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &extBroker{}
		l := &extListener{b: b, assigned: make(chan tasks.Assignment, 4)}
		cfg := config.Default("app")
		cfg.ReplicationFactor = 3
		topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"orders"},
			StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: "app"}.KeyValueChangelog("totals")}})
		m, err := membership.New(nil, cfg, topo, membership.WithTransport(b), membership.WithListener(l),
			membership.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-l.assigned
		_, hbs, _, _ := b.snapshot()
		if len(hbs) == 0 || hbs[0].Topology == nil || len(hbs[0].Topology.Subtopologies) != 1 ||
			len(hbs[0].Topology.Subtopologies[0].StateChangelogTopics) != 1 {
			t.Fatalf("join without the topology: %+v", hbs)
		}
		if rf := hbs[0].Topology.Subtopologies[0].StateChangelogTopics[0].ReplicationFactor; rf != 3 {
			t.Fatalf("the changelog's replication factor is %d on the wire, want 3 (replication.factor)", rf)
		}
		if err := m.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
