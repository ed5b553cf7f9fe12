package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// These tests run a real Kafka Streams 4.4 application (the Java peer, javapeer/) and Go members in
// one streams group. The broker compares the topology of every joining member with the group's field
// by field, every list in order (PROTOCOL §7.3), and refuses any difference; so a Go member that is
// accepted into a group a Java member created, and the other way round, proves the Go topology is
// the one Kafka Streams sends, to the byte once encoded.

// interop is the shared setup of an interop test: an input topic of 4 partitions (so 4 tasks), an
// output topic, a group, and the topology both sides run.
type interop struct {
	b                           *Broker
	group, input, output, store string
	topo                        *topology.Topology // what the Java peer in javaDefault mode sends
	all                         tasks.Set
}

func newInterop(t *testing.T) *interop {
	t.Helper()
	b := Get(t)
	in := &interop{
		b:      b,
		group:  Name(t, "app"),
		input:  Name(t, "in"),
		output: Name(t, "out"),
		store:  "counts",
		all:    taskRange("0", 4),
	}
	in.topo = javaCompatibleTopology(in.group, in.input, in.store)
	b.CreateTopic(t, in.input, 4)
	b.CreateTopic(t, in.output, 1)
	b.DeleteGroupAtEnd(t, in.group)
	// The broker creates the store's changelog topic for the group; it outlives the group.
	deleteTopicsAtEnd(t, b, topology.Names{AppID: in.group}.ChangelogTopic(in.store))
	return in
}

// startJava starts a Java peer in mode on this setup's group and topics; it does not wait for it.
func (in *interop) startJava(t *testing.T, mode string) *javaPeer {
	t.Helper()
	return startJavaPeer(t, in.b, in.group, in.input, in.output, in.store, mode)
}

// javaOwnsAll waits until the Java peer is RUNNING and reports every task active.
func (in *interop) javaOwnsAll(t *testing.T, p *javaPeer) {
	t.Helper()
	Eventually(t, javaStart, func() (bool, string) {
		active, _, state := p.snapshot()
		return state == "RUNNING" && active.Equal(in.all), p.String()
	})
}

// goOwnsAll waits until the Go member is stable with every task active.
func (in *interop) goOwnsAll(t *testing.T, m *member) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) {
		active, _, _ := m.rec.snapshot()
		return m.State() == membership.Stable && active.Equal(in.all),
			fmt.Sprintf("go member %s owns %v; events %s", m.State(), active, m.eventKinds())
	})
}

// splitBetween waits until the Go member and the Java peer share the tasks: each owns some, together
// all, none twice. It checks this first as both processes see it (the Go listener and the Java
// peer's task metadata), then as the broker sees it (StreamsGroupDescribe: two members whose
// reconciled assignments cover every task once, and the group's topology is the Go topology).
func (in *interop) splitBetween(t *testing.T, m *member, p *javaPeer) {
	t.Helper()
	Eventually(t, javaStart, func() (bool, string) {
		g, _, _ := m.rec.snapshot()
		j, _, state := p.snapshot()
		ok := !g.IsEmpty() && !j.IsEmpty() && g.Union(j).Equal(in.all) && g.Intersect(j).IsEmpty() &&
			m.State() == membership.Stable && state == "RUNNING"
		return ok, fmt.Sprintf("go=%v (%s) %s", g, m.State(), p)
	})

	goID, _ := m.Member()
	Eventually(t, settle, func() (bool, string) {
		d := in.b.DescribeGroup(t, in.group)
		if len(d.Members) != 2 {
			return false, fmt.Sprintf("group %s has %d members, want 2", d.State, len(d.Members))
		}
		var union tasks.Set
		var seen []string
		goSeen := false
		for _, mem := range d.Members {
			goSeen = goSeen || mem.MemberID == goID
			cur, target := tasks.FromKmsg(mem.Assignment.ActiveTasks), tasks.FromKmsg(mem.TargetAssignment.ActiveTasks)
			seen = append(seen, fmt.Sprintf("%s(go=%v) current=%v target=%v", mem.MemberID, mem.MemberID == goID, cur, target))
			if cur.IsEmpty() || !cur.Equal(target) || !union.Intersect(cur).IsEmpty() {
				return false, strings.Join(seen, "; ")
			}
			union = union.Union(cur)
		}
		if !union.Equal(in.all) || !goSeen {
			return false, strings.Join(seen, "; ")
		}
		described, err := topology.FromDescribe(d.Topology)
		if err != nil {
			return false, fmt.Sprintf("group topology: %v", err)
		}
		if described.ID != in.topo.ID() {
			t.Fatalf("group runs topology %s, the Go member declared %s", described.ID, in.topo.ID())
		}
		return d.State == "Stable", fmt.Sprintf("group state %s; %s", d.State, strings.Join(seen, "; "))
	})
}

// TestJavaCreatesGroupGoJoins: a Kafka Streams application creates the group and owns every task; a
// Go member with the same topology joins, is accepted, and the tasks split between the two.
func TestJavaCreatesGroupGoJoins(t *testing.T) {
	in := newInterop(t)
	p := in.startJava(t, javaDefault)
	in.javaOwnsAll(t, p)

	m := startMember(t, in.b, in.group, in.topo, "go", nil)
	in.splitBetween(t, m, p)
	if errs := p.errorLines(); len(errs) > 0 {
		t.Fatalf("Java peer reported errors: %q", errs)
	}
}

// TestGoCreatesGroupJavaJoins: the Go member creates the group (so the broker stores the Go
// topology) and a Kafka Streams application joins it with its own: the broker accepts it, which it
// does only for an identical topology, and the tasks split.
func TestGoCreatesGroupJavaJoins(t *testing.T) {
	in := newInterop(t)
	m := startMember(t, in.b, in.group, in.topo, "go", nil)
	in.goOwnsAll(t, m)

	p := in.startJava(t, javaDefault)
	in.splitBetween(t, m, p)
	if errs := p.errorLines(); len(errs) > 0 {
		t.Fatalf("Java peer reported errors: %q", errs)
	}
}

// TestJavaLeavesGoTakesOver: with the tasks split, the Java application is stopped gracefully
// (KafkaStreams.close with LEAVE_GROUP); the Go member then gets every task.
func TestJavaLeavesGoTakesOver(t *testing.T) {
	in := newInterop(t)
	p := in.startJava(t, javaDefault)
	in.javaOwnsAll(t, p)
	m := startMember(t, in.b, in.group, in.topo, "go", nil)
	in.splitBetween(t, m, p)

	p.stop(t)
	if a := p.activeTasks(); !a.IsEmpty() {
		t.Fatalf("closed Java peer still reports active tasks %v", a)
	}
	goID, _ := m.Member()
	// The close sent the leave heartbeat before it returned, so the broker has already dropped the
	// Java member: the Go member does not wait for a session timeout.
	if ids := groupMemberIDs(t, in.b, in.group); len(ids) != 1 || !ids[goID] {
		t.Fatalf("right after the Java peer closed, the group's members are %v; want only the Go member %s", ids, goID)
	}
	in.goOwnsAll(t, m)
}

// TestGoWithOtherTopologyRefusedByJavaGroup: a Go member whose topology differs from the group's (an
// extra source topic) is refused by a group a Kafka Streams application created. The member stops
// with a *membership.TopologyError naming the group's topology, which is the Java-compatible one;
// the Java application keeps every task.
func TestGoWithOtherTopologyRefusedByJavaGroup(t *testing.T) {
	in := newInterop(t)
	extra := in.input + "-extra"
	in.b.CreateTopic(t, extra, 4)
	p := in.startJava(t, javaDefault)
	in.javaOwnsAll(t, p)

	n := topology.Names{AppID: in.group}
	other := topology.MustNew(topology.Subtopology{
		ID:                   "0",
		SourceTopics:         []string{in.input, extra},
		StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog(in.store)},
	})
	m := startMember(t, in.b, in.group, other, "go-other", nil)
	Eventually(t, settle, func() (bool, string) {
		return m.Err() != nil, fmt.Sprintf("go member %s, no error yet; events %s", m.State(), m.eventKinds())
	})
	var te *membership.TopologyError
	if !errors.As(m.Err(), &te) {
		t.Fatalf("go member stopped with %v (%T); want a *membership.TopologyError", m.Err(), m.Err())
	}
	if te.Mismatch.GroupID != in.topo.ID() {
		t.Fatalf("mismatch names group topology %s; want the Java-compatible %s (%v)", te.Mismatch.GroupID, in.topo.ID(), te)
	}
	if te.Mismatch.LocalID != other.ID() {
		t.Fatalf("mismatch names member topology %s; want %s", te.Mismatch.LocalID, other.ID())
	}
	if a, _, _ := m.rec.snapshot(); !a.IsEmpty() {
		t.Fatalf("refused go member was assigned %v", a)
	}
	if d := in.b.DescribeGroup(t, in.group); len(d.Members) != 1 {
		t.Fatalf("group has %d members after the refusal; want only the Java peer", len(d.Members))
	}
	in.javaOwnsAll(t, p)
}

// TestJavaWithOtherTopologyRefusedByGoGroup: a Kafka Streams application whose topology differs from
// the one a Go member created the group with (an extra source topic) is refused.
//
// What Kafka Streams 4.4.0 does, as observed: the broker answers its joining heartbeat with
// INVALID_REQUEST "Topology updates are not supported yet." (the group keeps the stored topology,
// PROTOCOL §7.3); the stream thread dies with a StreamsException wrapping that
// InvalidRequestException, the uncaught exception handler sees it (the ERROR line) and, returning
// SHUTDOWN_CLIENT, takes the client from REBALANCING through PENDING_ERROR to ERROR, never RUNNING.
// The Java member never joined: it owned no task and the group still has only the Go member, which
// keeps every task. The JVM stays up in ERROR until stdin closes, and then still closes cleanly.
func TestJavaWithOtherTopologyRefusedByGoGroup(t *testing.T) {
	in := newInterop(t)
	in.b.CreateTopic(t, in.input+"-extra", 4)
	m := startMember(t, in.b, in.group, in.topo, "go", nil)
	in.goOwnsAll(t, m)

	p := in.startJava(t, javaExtraSource)
	Eventually(t, javaStart, func() (bool, string) {
		return p.currentState() == "ERROR" && len(p.errorLines()) > 0, p.String()
	})
	const refusal = "InvalidRequestException: Topology updates are not supported yet."
	if errs := p.errorLines(); !strings.Contains(errs[0], refusal) {
		t.Fatalf("Java peer failed with %q; want the broker's refusal %q", errs[0], refusal)
	}
	if owned := p.everActive(); !owned.IsEmpty() {
		t.Fatalf("refused Java peer was assigned %v", owned)
	}
	if states := p.stateHistory(); slices.Contains(states, "RUNNING") {
		t.Fatalf("refused Java peer went through RUNNING: states %v", states)
	}
	goID, _ := m.Member()
	if ids := groupMemberIDs(t, in.b, in.group); len(ids) != 1 || !ids[goID] {
		t.Fatalf("group members are %v; want only the Go member %s", ids, goID)
	}
	in.goOwnsAll(t, m)
	p.stop(t)
}
