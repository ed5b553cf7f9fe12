package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

// TestKilledMemberLosesTasksAfterSessionTimeout: a member that disappears without a leave keeps its
// tasks until the broker's session timeout (6 s here) removes it; then the survivor gets them all.
func TestKilledMemberLosesTasksAfterSessionTimeout(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)
	own := newOwnership()
	all := taskRange("0", 4)
	a := startMember(t, b, group, simpleTopology(topic), "a", own)
	c := startMember(t, b, group, simpleTopology(topic), "c", own)
	Eventually(t, settle, func() (bool, string) {
		x, _, _ := a.rec.snapshot()
		y, _, _ := c.rec.snapshot()
		return x.Len() == 2 && y.Len() == 2, fmt.Sprintf("a=%v c=%v", x, y)
	})
	aID, _ := a.Member()
	// "Kill" a: stop it without a leave heartbeat (a dynamic member remaining in the group sends none).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.CloseWith(ctx, membership.CloseRemainInGroup); err != nil {
		t.Fatal(err)
	}
	if ids := groupMemberIDs(t, b, group); !ids[aID] {
		t.Fatal("the killed member vanished at once: it must stay until its session times out")
	}
	Eventually(t, settle, func() (bool, string) {
		y, _, _ := c.rec.snapshot()
		ids := groupMemberIDs(t, b, group)
		return y.Equal(all) && !ids[aID], fmt.Sprintf("c=%v, members %v", y, ids)
	})
	own.check(t)
}

// TestBrokerRestartRecovers: the broker (the group coordinator) restarts under two running members;
// they rediscover it, keep their member IDs and end up owning every task again.
func TestBrokerRestartRecovers(t *testing.T) {
	b := Get(t)
	if b.RunDir == "" {
		t.Fatal("this test restarts the broker and needs its run directory (STREAMSGROUP_RUN_DIR)")
	}
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)
	all := taskRange("0", 4)
	a := startMember(t, b, group, simpleTopology(topic), "a", nil)
	c := startMember(t, b, group, simpleTopology(topic), "c", nil)
	split := func() (bool, string) {
		x, _, _ := a.rec.snapshot()
		y, _, _ := c.rec.snapshot()
		return x.Len() == 2 && y.Len() == 2 && x.Union(y).Equal(all) && a.State() == membership.Stable && c.State() == membership.Stable,
			fmt.Sprintf("a=%v (%s) c=%v (%s)", x, a.State(), y, c.State())
	}
	Eventually(t, settle, split)
	aID, _ := a.Member()
	cID, _ := c.Member()

	b.Restart(t)

	Eventually(t, 90*time.Second, func() (bool, string) {
		ok, why := split()
		ids := groupMemberIDs(t, b, group)
		return ok && ids[aID] && ids[cID] && len(ids) == 2, fmt.Sprintf("%s; members %v", why, ids)
	})
	if id, _ := a.Member(); id != aID {
		t.Fatalf("member ID changed across the restart: %s -> %s", aID, id)
	}
	if a.Err() != nil || c.Err() != nil {
		t.Fatalf("a member stopped: %v / %v", a.Err(), c.Err())
	}
}

// TestMissingSourceTopicThenCreated: joining with a source topic that does not exist yields the
// status event naming it, no tasks and a not-ready group; creating the topic brings the tasks.
func TestMissingSourceTopicThenCreated(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "late"), Name(t, "app")
	b.DeleteGroupAtEnd(t, group)
	m := startMember(t, b, group, simpleTopology(topic), "a", nil)
	Eventually(t, settle, func() (bool, string) {
		e, ok := m.sawEvent(membership.EventMissingSourceTopics)
		return ok && len(e.Topics) == 1 && e.Topics[0] == topic, "events: " + m.eventKinds()
	})
	Eventually(t, settle, func() (bool, string) {
		_, ok := m.sawEvent(membership.EventMissingSourceTopicsTimeout)
		return ok, "events: " + m.eventKinds()
	})
	if act, _, ready := m.rec.snapshot(); !act.IsEmpty() || ready {
		t.Fatalf("tasks %v ready=%v while the source topic is missing", act, ready)
	}
	b.CreateTopic(t, topic, 2)
	Eventually(t, settle, func() (bool, string) {
		act, _, ready := m.rec.snapshot()
		return act.Equal(taskRange("0", 2)) && ready, fmt.Sprintf("tasks %v ready=%v", act, ready)
	})
	if _, ok := m.sawEvent(membership.EventStatusCleared); !ok {
		t.Fatal("the status clearing was not reported")
	}
}

// TestShutdownRequestReachesEveryMember: one member asks the application to shut down; every member
// gets EventShutdownRequested.
func TestShutdownRequestReachesEveryMember(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	a := startMember(t, b, group, simpleTopology(topic), "a", nil)
	c := startMember(t, b, group, simpleTopology(topic), "c", nil)
	Eventually(t, settle, func() (bool, string) {
		return a.State() == membership.Stable && c.State() == membership.Stable, "not stable yet"
	})
	a.RequestShutdown()
	Eventually(t, settle, func() (bool, string) {
		_, x := a.sawEvent(membership.EventShutdownRequested)
		_, y := c.sawEvent(membership.EventShutdownRequested)
		return x && y, fmt.Sprintf("a saw %v, c saw %v", x, y)
	})
}

// TestStandbyTasks: with the group config streams.num.standby.replicas=1, each member of a
// two-process group gets standby tasks of the other's active tasks.
func TestStandbyTasks(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	b.SetGroupConfig(t, group, "streams.num.standby.replicas", "1")
	n := topology.Names{AppID: group}
	// Standby tasks exist only for stateful subtopologies.
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{topic},
		StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog("store")}})
	a := startMember(t, b, group, topo, "a", nil)
	c := startMember(t, b, group, topo, "c", nil)
	Eventually(t, settle, func() (bool, string) {
		xa, xs, _ := a.rec.snapshot()
		ya, ys, _ := c.rec.snapshot()
		ok := xa.Len() == 1 && ya.Len() == 1 && xs.Equal(ya) && ys.Equal(xa)
		return ok, fmt.Sprintf("a active=%v standby=%v; c active=%v standby=%v", xa, xs, ya, ys)
	})
}

// TestStaticMemberRestartKeepsItsTasks (Kafka 4.4+): a static member that closes (leave epoch -2)
// and comes back with the same group.instance.id gets the same tasks, and the other member's tasks
// do not move.
func TestStaticMemberRestartKeepsItsTasks(t *testing.T) {
	b := Get(t)
	b.RequireStreams44(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)
	static := func(id string) func(*config.Config) { return func(c *config.Config) { c.GroupInstanceID = id } }
	a := startMember(t, b, group, simpleTopology(topic), "a", nil, static("instance-a"))
	c := startMember(t, b, group, simpleTopology(topic), "c", nil, static("instance-c"))
	Eventually(t, settle, func() (bool, string) {
		x, _, _ := a.rec.snapshot()
		y, _, _ := c.rec.snapshot()
		return x.Len() == 2 && y.Len() == 2 && c.State() == membership.Stable, fmt.Sprintf("a=%v c=%v", x, y)
	})
	before, _, _ := a.rec.snapshot()
	cBefore, _, _ := c.rec.snapshot()
	a.close(t) // static: leave epoch -2, the broker keeps the tasks for the instance
	a2 := startMember(t, b, group, simpleTopology(topic), "a2", nil, static("instance-a"))
	Eventually(t, settle, func() (bool, string) {
		x, _, _ := a2.rec.snapshot()
		return x.Equal(before) && a2.State() == membership.Stable, fmt.Sprintf("a2=%v (%s), a had %v", x, a2.State(), before)
	})
	if y, _, _ := c.rec.snapshot(); !y.Equal(cBefore) {
		t.Fatalf("the other member's tasks moved: %v -> %v", cBefore, y)
	}
	if c.rec.lost != 0 {
		t.Fatal("the other member lost its tasks")
	}
}

// TestFeatureOffIsATypedFatalError: with streams.version=0 the cluster cannot run streams groups; the
// member stops with an error that says so and what to do. The feature is turned on again after.
func TestFeatureOffIsATypedFatalError(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 1)
	b.SetStreamsFeature(t, 0)
	t.Cleanup(func() { b.SetStreamsFeature(t, 1) })
	Eventually(t, settle, func() (bool, string) {
		m := startMember(t, b, group, simpleTopology(topic), "a", nil)
		select {
		case <-m.Done():
		case <-time.After(settle):
			return false, "the member did not stop"
		}
		err := m.Err()
		ok := errors.Is(err, heartbeat.ErrNotSupported) && strings.Contains(err.Error(), "streams.version")
		return ok, fmt.Sprintf("Err() = %v", err)
	})
}

// TestDifferentTopologyIsRefusedWithBothIDs: a member whose topology differs from the group's (same
// epoch) is refused; the typed error names the group's topology ID and ours.
func TestDifferentTopologyIsRefusedWithBothIDs(t *testing.T) {
	b := Get(t)
	t1, t2, group := Name(t, "in"), Name(t, "other"), Name(t, "app")
	b.CreateTopic(t, t1, 2)
	b.CreateTopic(t, t2, 2)
	b.DeleteGroupAtEnd(t, group)
	first := simpleTopology(t1)
	a := startMember(t, b, group, first, "a", nil)
	Eventually(t, settle, func() (bool, string) { return a.State() == membership.Stable, a.State().String() })

	other := simpleTopology(t2)
	c := startMember(t, b, group, other, "c", nil)
	select {
	case <-c.Done():
	case <-time.After(settle):
		t.Fatal("the member with another topology was not refused")
	}
	var te *membership.TopologyError
	if !errors.As(c.Err(), &te) || !errors.Is(c.Err(), heartbeat.ErrTopologyMismatch) || !errors.Is(c.Err(), kerr.InvalidRequest) {
		t.Fatalf("Err() = %v, want a *membership.TopologyError", c.Err())
	}
	if te.Mismatch.GroupID != first.ID() || te.Mismatch.LocalID != other.ID() {
		t.Fatalf("mismatch %+v; want group %s, member %s", te.Mismatch, first.ID(), other.ID())
	}
	msg := c.Err().Error()
	if !strings.Contains(msg, first.ID().String()) || !strings.Contains(msg, other.ID().String()) {
		t.Fatalf("the message must name both topology IDs: %s", msg)
	}
	Eventually(t, settle, func() (bool, string) {
		e, ok := c.sawEvent(membership.EventFatal)
		return ok && e.GroupTopology != nil, "the fatal event must carry the comparison; events " + c.eventKinds()
	})
}

// TestStaleTopologyEvent: a member whose topology epoch is lower than the group's gets the
// STALE_TOPOLOGY status as an event that names the group's epoch and topology.
func TestStaleTopologyEvent(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	topo := simpleTopology(topic)
	a := startMember(t, b, group, topo, "new", nil, func(c *config.Config) { c.TopologyEpoch = 1 })
	Eventually(t, settle, func() (bool, string) { return a.State() == membership.Stable, a.State().String() })
	old := startMember(t, b, group, topo, "old", nil) // epoch 0 < 1
	Eventually(t, settle, func() (bool, string) {
		e, ok := old.sawEvent(membership.EventStaleTopology)
		return ok && e.GroupTopology != nil && e.GroupTopology.GroupEpoch == 1 && e.GroupTopology.GroupID == topo.ID(),
			fmt.Sprintf("events %s, last %+v", old.eventKinds(), e.GroupTopology)
	})
}

// TestStaticMembershipRefusedBeforeKafka44 (Kafka 4.2/4.3 only): group.instance.id against a broker
// that cannot do static membership stops the member with a typed error before any heartbeat.
func TestStaticMembershipRefusedBeforeKafka44(t *testing.T) {
	b := Get(t)
	if v := b.StreamsHeartbeatMaxVersion(t); v >= 1 {
		t.Skipf("the broker supports static membership (heartbeat v%d); this test is for 4.2/4.3", v)
	}
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 1)
	m := startMember(t, b, group, simpleTopology(topic), "a", nil, func(c *config.Config) { c.GroupInstanceID = "i-1" })
	select {
	case <-m.Done():
	case <-time.After(settle):
		t.Fatal("the member did not stop")
	}
	if err := m.Err(); !errors.Is(err, heartbeat.ErrNotSupported) || !strings.Contains(err.Error(), "group.instance.id") {
		t.Fatalf("Err() = %v", err)
	}
}

// TestApplicationServerEndpoints: members with application.server get the interactive-query map of
// which endpoint holds which partitions. It also covers a Kafka 4.4.0 broker fault: a join with an
// endpoint, sent while the group's topology is not configured yet (the topic was just created), is
// answered with UNKNOWN_SERVER_ERROR; the member must retry rather than stop.
func TestApplicationServerEndpoints(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	endpoint := func(port string) func(*config.Config) {
		return func(c *config.Config) { c.ApplicationServer = "localhost:" + port }
	}
	a := startMember(t, b, group, simpleTopology(topic), "a", nil, endpoint("8080"))
	c := startMember(t, b, group, simpleTopology(topic), "c", nil, endpoint("8081"))
	Eventually(t, settle, func() (bool, string) {
		e, ok := a.lastEvent(membership.EventEndpointsChanged)
		if !ok {
			return false, "no endpoints event; events " + a.eventKinds()
		}
		x := e.Endpoints[heartbeat.Endpoint{Host: "localhost", Port: 8080}].Active[topic]
		y := e.Endpoints[heartbeat.Endpoint{Host: "localhost", Port: 8081}].Active[topic]
		return len(x) == 1 && len(y) == 1 && x[0] != y[0], fmt.Sprintf("endpoints %+v", e.Endpoints)
	})
	if a.Err() != nil || c.Err() != nil {
		t.Fatalf("a member stopped: %v / %v", a.Err(), c.Err())
	}
}
