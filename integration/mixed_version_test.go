package integration

// Rolling upgrade (issue 22 §1) on a real mixed-version KRaft cluster: broker.sh start --brokers 3
// with KAFKA_NODE_VERSIONS naming the run's 4.4 release for two nodes and 4.3.1 for one, formatted
// with the 4.3 release's metadata.version and features, as a cluster halfway through an upgrade
// from 4.3 to 4.4 runs until the operator finalizes the new metadata.version. Two layouts, one
// cluster after the other: the controller (node 1) already upgraded and node 2 still on 4.3.1
// (4.4,4.3.1,4.4), and the brokers upgraded first with the controller still on 4.3.1
// (4.3.1,4.4,4.4). The 4.3.1 node answers StreamsGroupHeartbeat v0 only, the others v1.
//
// A group of Go members with a task-offsets provider lives through the upgrade as its users see it:
// the group's coordinator first sits on the 4.3.1 node (heartbeats go at v0, without offsets), then
// moves to a 4.4 node (v1: the offsets reach the broker), back to the 4.3.1 node (which loads the
// group the 4.4 coordinator wrote) and on to the other 4.4 node (the offsets reach it again, fresh).
// Each move is an operator's preferred-leader election (Cluster.MoveCoordinators, as in
// coordinator_failover_test.go) under the live members. After each one: no member failed or was
// fenced, no heartbeat got INVALID_REQUEST, UNSUPPORTED_VERSION or any fatal answer, every member
// kept its ID and its tasks, and the group is Stable with every task owned once.
//
// The waits are bounded by the cluster's own group.streams.* configs (failoverEnv.move); nothing is
// timed as an assertion.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// rollingUpgradeFrom is the release the mixed cluster's node 2 still runs: the newest 4.3 on Maven
// Central, the line upgrades to 4.4 start from.
const rollingUpgradeFrom = "4.3.1"

// fixedTaskOffsets is a task-offsets provider whose offsets the test sets: base + the task's
// partition for every task the member owns (offset and end offset alike), so the offsets the broker
// holds say which phase of the test sent them.
type fixedTaskOffsets struct{ base atomic.Int64 }

func (p *fixedTaskOffsets) TaskOffsets(owned tasks.Assignment) (offsets, ends tasks.Offsets) {
	base := p.base.Load()
	offsets, ends = tasks.Offsets{}, tasks.Offsets{}
	for id := range owned.Active.Union(owned.Standby).Union(owned.Warmup).All() {
		offsets[id], ends[id] = base+int64(id.Partition), base+int64(id.Partition)
	}
	return offsets, ends
}

// want returns the offsets the provider gives for owned now.
func (p *fixedTaskOffsets) want(owned tasks.Set) tasks.Offsets {
	o, _ := p.TaskOffsets(tasks.Assignment{Active: owned})
	return o
}

func TestRollingUpgradeMixedCluster(t *testing.T) {
	shared := Get(t)
	if kafkaLineOf(shared.Version) != "4.4" {
		t.Skipf("the mixed %s/4.4 cluster runs on the Kafka 4.4 line only (this run's Kafka is %q)", rollingUpgradeFrom, shared.Version)
	}
	newer := shared.Version
	// Controllers first: node 1, the only controller, and node 3 run 4.4; node 2 is still on 4.3.1.
	t.Run("ControllerUpgraded", func(t *testing.T) { rollingUpgrade(t, []string{newer, rollingUpgradeFrom, newer}) })
	// Brokers first: nodes 2 and 3 run 4.4, the controller (node 1) is still on 4.3.1.
	t.Run("ControllerNotYet", func(t *testing.T) { rollingUpgrade(t, []string{rollingUpgradeFrom, newer, newer}) })
}

// rollingUpgrade runs the test on a 3-node cluster whose nodes 1..3 run versions, one of them
// rollingUpgradeFrom (the old node), the other two the run's 4.4 release: the group joins at the
// old node, its coordinator moves to the first new node, back to the old one, then to the other new
// node.
func rollingUpgrade(t *testing.T, versions []string) {
	oldNode, newNodes := int32(-1), []int32{}
	for i, v := range versions {
		if v == rollingUpgradeFrom {
			oldNode = int32(i + 1)
		} else {
			newNodes = append(newNodes, int32(i+1))
		}
	}
	if oldNode < 0 || len(newNodes) != 2 {
		t.Fatalf("versions %v: want one node on %s and two on 4.4", versions, rollingUpgradeFrom)
	}
	c := startClusterEnv(t, 3, "KAFKA_NODE_VERSIONS="+strings.Join(versions, ","))
	cl := c.Client(t)
	e := &failoverEnv{c: c, cl: cl, adm: kadm.NewClient(cl)}
	e.interval = c.BrokerConfigMillis(t, e.adm, 1, "group.streams.heartbeat.interval.ms")
	e.session = c.BrokerConfigMillis(t, e.adm, 1, "group.streams.session.timeout.ms")
	requireMixed(t, c, cl, oldNode)

	topic, group := Name(t, "in"), Name(t, "app")
	const partitions = 6
	c.CreateTopic(t, e.adm, topic, partitions)
	names := topology.Names{AppID: group}
	// Stateful, so that the task offsets are what a real application reports: its store's changelog
	// positions (the broker creates the changelog topic).
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{topic},
		StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog("store")}})
	all := taskRange("0", partitions)

	// Before the upgrade reaches it, the group's coordinator is the 4.3.1 node.
	coord := c.Coordinator(t, e.adm, group) // creates __consumer_offsets with its three replicas
	if coord != oldNode {
		c.MoveCoordinators(t, cl, coord, oldNode, nil)
		Eventually(t, 30*time.Second, func() (bool, string) {
			coord = c.Coordinator(t, e.adm, group)
			return coord == oldNode, fmt.Sprintf("FindCoordinator names node %d, want %d", coord, oldNode)
		})
	}

	offs := &fixedTaskOffsets{}
	offs.base.Store(1000)
	own := newOwnership()
	var ms []*clusterMember
	for _, name := range []string{"a", "b", "c"} {
		ms = append(ms, startClusterMember(t, c, group, topo, name, own, membership.WithTaskOffsets(offs)))
	}
	Eventually(t, 60*time.Second, func() (bool, string) { return c.settledOn(cl, group, all, ms) })
	held := make(map[*clusterMember]tasks.Set)
	ids := make(map[*clusterMember]string)
	for _, m := range ms {
		held[m], _, _ = m.rec.snapshot()
		ids[m], _ = m.Member()
	}
	t.Logf("group %s settled on coordinator node %d (Kafka %s): %s", group, coord, c.Versions[coord], heldText(ms))
	checkUpgradeSafe(t, fmt.Sprintf("joined at node %d (Kafka %s)", coord, c.Versions[coord]), ms, held, ids, own, coord)

	// moveTo moves the coordinator from node coord to node to under the live members (an operator's
	// preferred-leader election) and checks what must hold after it; base: the offsets the members
	// report from then on.
	moveTo := func(to int32, base int64) {
		t.Helper()
		offs.base.Store(base)
		what := fmt.Sprintf("coordinator node %d (Kafka %s) -> node %d (Kafka %s)", coord, c.Versions[coord], to, c.Versions[to])
		now, _ := e.move(t, group, all, ms, what, coord, true, func() (time.Time, time.Time) {
			return c.MoveCoordinators(t, cl, coord, to, nil)
		})
		if now != to {
			t.Fatalf("%s: the members heartbeat at node %d", what, now)
		}
		coord = now
		checkUpgradeSafe(t, what, ms, held, ids, own, coord)
		if c.Versions[coord] == rollingUpgradeFrom {
			return
		}
		// A 4.4 coordinator takes task offsets (heartbeat v1): each member's reach it, the ones the
		// provider gives now, so they were sent to this coordinator (the 4.3.1 one took none).
		Eventually(t, e.session+2*e.interval, func() (bool, string) {
			g, err := c.Describe(cl, group)
			if err != nil {
				return false, "describe: " + err.Error()
			}
			got := make(map[string]tasks.Offsets)
			for _, bm := range g.Members {
				got[bm.MemberID] = tasks.OffsetsFromKmsg(bm.TaskOffsets)
			}
			for _, m := range ms {
				if want := offs.want(held[m]); !maps.Equal(got[ids[m]], want) {
					return false, fmt.Sprintf("%s: member %s reported %v to the broker, want %v", what, m.name, got[ids[m]], want)
				}
			}
			return true, ""
		})
		t.Logf("%s: every member's task offsets (base %d) reached the coordinator", what, base)
	}

	moveTo(newNodes[0], 2000) // the group's coordinator moves onto an upgraded node
	moveTo(oldNode, 3000)     // and back: the 4.3.1 node loads what the 4.4 coordinator wrote
	moveTo(newNodes[1], 4000) // onto the other upgraded node
}

// checkUpgradeSafe asserts what a coordinator move during a rolling upgrade must leave as it was:
// no member failed, lost its tasks or was fenced, none changed its ID or tasks, each reports the
// coordinator the cluster names, no task was owned twice, and no heartbeat was ever answered with
// INVALID_REQUEST, UNSUPPORTED_VERSION or any other fatal error (what a member would get if it sent
// a 4.4 heartbeat to a 4.3 coordinator, or the other way round).
func checkUpgradeSafe(t *testing.T, what string, ms []*clusterMember, held map[*clusterMember]tasks.Set, ids map[*clusterMember]string, own *ownership, coord int32) {
	t.Helper()
	for _, m := range ms {
		h, _, _ := m.rec.snapshot()
		id, _ := m.Member()
		st := m.Stats()
		m.rec.mu.Lock()
		lost := m.rec.lost
		m.rec.mu.Unlock()
		switch {
		case m.Err() != nil:
			t.Fatalf("%s: member %s stopped: %v", what, m.name, m.Err())
		case lost != 0 || st.Fencings != 0:
			t.Fatalf("%s: member %s lost its tasks (%d OnAllTasksLost, %d fencings); events %s", what, m.name, lost, st.Fencings, m.eventKinds())
		case id != ids[m]:
			t.Fatalf("%s: member %s's ID changed: %s -> %s", what, m.name, ids[m], id)
		case !h.Equal(held[m]):
			t.Fatalf("%s: member %s's tasks moved: %v -> %v", what, m.name, held[m], h)
		case st.Coordinator != coord:
			t.Fatalf("%s: member %s reports coordinator %d, the cluster says %d", what, m.name, st.Coordinator, coord)
		case st.HeartbeatsFailed[heartbeat.Fatal] != 0 || st.HeartbeatsFailed[heartbeat.Fenced] != 0:
			t.Fatalf("%s: member %s had failed heartbeats %v", what, m.name, st.HeartbeatsFailed)
		}
		for _, a := range m.watch.after(time.Time{}) {
			if errors.Is(a.err, kerr.InvalidRequest) || errors.Is(a.err, kerr.UnsupportedVersion) || a.class == heartbeat.Fatal {
				t.Fatalf("%s: member %s's heartbeat to node %d was answered %v", what, m.name, a.coord, a.err)
			}
		}
	}
	own.check(t)
}

// requireMixed fails the test unless the cluster is the mixed one it asked for: node old answers
// StreamsGroupHeartbeat v0 at most and the others v1, and the finalized metadata.version is one the
// old node supports (the older release's), below what the new nodes support.
func requireMixed(t *testing.T, c *Cluster, cl *kgo.Client, old int32) {
	t.Helper()
	var finalized []string
	for _, id := range slices.Sorted(maps.Keys(c.Addrs)) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req := kmsg.NewPtrApiVersionsRequest()
		// Sent to one broker, the request lacks the names kgo fills in on Client.Request; v3+
		// brokers refuse an ApiVersions without them.
		req.ClientSoftwareName, req.ClientSoftwareVersion = "streamsgroup-test", "0"
		resp, err := cl.Broker(int(id)).Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("ApiVersions of node %d: %v", id, err)
		}
		caps, err := heartbeat.CapabilitiesFrom(resp.(*kmsg.ApiVersionsResponse))
		if err != nil {
			t.Fatalf("ApiVersions of node %d: %v", id, err)
		}
		var mvMax, mvFinal int16 = -1, -1
		for _, f := range resp.(*kmsg.ApiVersionsResponse).SupportedFeatures {
			if f.Name == "metadata.version" {
				mvMax = f.MaxVersion
			}
		}
		for _, f := range resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
			if f.Name == "metadata.version" {
				mvFinal = f.MaxVersionLevel
			}
		}
		want := int16(1)
		if id == old {
			want = 0
		}
		t.Logf("node %d (Kafka %s): StreamsGroupHeartbeat up to v%d, streams.version %d, metadata.version %d finalized (the node supports up to %d)",
			id, c.Versions[id], caps.HeartbeatMaxVersion, caps.StreamsVersion, mvFinal, mvMax)
		if caps.HeartbeatMaxVersion != want {
			t.Fatalf("node %d (Kafka %s) answers StreamsGroupHeartbeat up to v%d, want v%d: the cluster is not the mixed one asked for", id, c.Versions[id], caps.HeartbeatMaxVersion, want)
		}
		if caps.StreamsVersion < 1 {
			t.Fatalf("node %d: streams.version %d finalized, want 1", id, caps.StreamsVersion)
		}
		if id == old && mvFinal > mvMax {
			t.Fatalf("node %d (Kafka %s) runs with metadata.version %d finalized, above the %d it supports", id, c.Versions[id], mvFinal, mvMax)
		}
		if id != old && mvFinal >= mvMax {
			t.Fatalf("node %d (Kafka %s): metadata.version %d finalized is its newest (%d), not the older release's", id, c.Versions[id], mvFinal, mvMax)
		}
		finalized = append(finalized, fmt.Sprint(mvFinal))
	}
	if len(slices.Compact(slices.Clone(finalized))) != 1 {
		t.Fatalf("the nodes report different finalized metadata.versions: %v", finalized)
	}
}

// kafkaLineOf is the major.minor of a Kafka version ("4.4.0" -> "4.4").
func kafkaLineOf(version string) string {
	f := strings.SplitN(version, ".", 3)
	if len(f) < 2 {
		return version
	}
	return f[0] + "." + f[1]
}
