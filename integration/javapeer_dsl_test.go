package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// DSL interop (issue 10 §4): Kafka Streams 4.4 DSL applications (javapeer/DslPeer.java, all in one
// JVM) and Go members declared with the topology package's DSL helpers share streams groups, both
// ways round. The broker accepts a member only when its topology is identical to the group's, field
// by field and list by list (PROTOCOL §7.3), so an accepted member proves the helpers produce what
// Kafka Streams sends, to the byte.

// dslConstructs are the DSL topologies run against the broker: what issue 10 lists, plus a
// stream-stream left join (its third, shared store) and a versioned table.
var dslConstructs = []string{
	"aggregate", "stream-table-join", "stream-stream-join", "fk-join", "windowed-suppress", "global-table",
	"stream-stream-left-join", "versioned-table",
}

// dslInputs are the topics each construct reads (DslPeer.build), after "<prefix>-<construct>-".
var dslInputs = map[string][]string{
	"aggregate":               {"words"},
	"stream-table-join":       {"orders", "customers"},
	"stream-stream-join":      {"left", "right"},
	"stream-stream-left-join": {"left", "right"},
	"fk-join":                 {"orders", "customers"},
	"windowed-suppress":       {"clicks"},
	"global-table":            {"countries", "visits"},
	"versioned-table":         {"events", "prices"},
}

// dslTopology is the Go declaration, with the helpers, of construct as DslPeer builds it for
// application app reading topics prefixed t (the same declarations as topology/dsl_test.go checks
// against the captured requests).
func dslTopology(construct, app, t string) *topology.Topology {
	n := topology.Names{AppID: app}
	type sub = topology.Subtopology
	type info = topology.TopicInfo
	switch construct {
	case "aggregate": // stream(words).groupBy(…, Grouped.as("by-word")).count(Materialized.as("counts"))
		return topology.MustNew(
			sub{ID: "0", SourceTopics: []string{t + "-words"}, RepartitionSinkTopics: []string{n.RepartitionTopic("by-word")}},
			sub{ID: "1", RepartitionSourceTopics: []info{n.Repartition("by-word", 0)}, StateChangelogTopics: []info{n.KeyValueChangelog("counts")}})
	case "stream-table-join": // stream(orders).join(table(customers, Materialized.as("customers")), …)
		return topology.MustNew(sub{ID: "0", SourceTopics: []string{t + "-orders", t + "-customers"},
			StateChangelogTopics: []info{n.KeyValueChangelog("customers")},
			CopartitionGroups:    [][]string{topology.CopartitionGroup([]topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000002", t+"-orders")}, []topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000000", t+"-customers")})}})
	case "stream-stream-join", "stream-stream-left-join":
		j := topology.StreamStreamJoin{StoreName: "pairs", Kind: topology.InnerJoin, Before: 5 * time.Minute, After: 5 * time.Minute}
		if construct == "stream-stream-left-join" {
			j = topology.StreamStreamJoin{StoreName: "lpairs", Kind: topology.LeftJoin, Before: 5 * time.Minute, After: 5 * time.Minute, Grace: 30 * time.Second}
		}
		j.Left, j.Right = []topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000000", t+"-left")}, []topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000001", t+"-right")}
		join := n.StreamStreamJoin(j)
		return topology.MustNew(sub{ID: "0", SourceTopics: []string{t + "-left", t + "-right"},
			StateChangelogTopics: join.Changelogs, CopartitionGroups: [][]string{join.CopartitionGroup}})
	case "fk-join": // table(orders).join(table(customers), fk, …, TableJoined.as("fk"), Materialized.as("enriched"))
		fk := n.ForeignKeyJoin("fk")
		primary := sub{ID: "0", SourceTopics: []string{t + "-orders"},
			StateChangelogTopics: []info{n.KeyValueChangelog("orders"), n.KeyValueChangelog("enriched")}}
		fk.AddToPrimary(&primary, topology.Source("KSTREAM-SOURCE-0000000000", t+"-orders"))
		foreign := sub{ID: "1", SourceTopics: []string{t + "-customers"}, StateChangelogTopics: []info{n.KeyValueChangelog("customers")}}
		fk.AddToForeign(&foreign, topology.Source("KSTREAM-SOURCE-0000000002", t+"-customers"))
		return topology.MustNew(primary, foreign)
	case "windowed-suppress": // windowedBy(TimeWindows.ofSizeAndGrace(1 min, 10 s)).count(as("per-minute")).suppress(… withName("final"))
		return topology.MustNew(sub{ID: "0", SourceTopics: []string{t + "-clicks"}, StateChangelogTopics: []info{
			n.WindowedChangelog("per-minute", topology.TimeWindowRetention(time.Minute, 10*time.Second)), n.SuppressChangelog("final")}})
	case "global-table": // the global table takes subtopology number 0 and is not sent
		return topology.MustNew(sub{ID: "1", SourceTopics: []string{t + "-visits"}})
	case "versioned-table": // stream(events).join(table(prices, versioned store "prices", 1 h))
		return topology.MustNew(sub{ID: "0", SourceTopics: []string{t + "-events", t + "-prices"},
			StateChangelogTopics: []info{n.VersionedChangelog("prices", time.Hour.Milliseconds())},
			CopartitionGroups:    [][]string{topology.CopartitionGroup([]topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000002", t+"-events")}, []topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000000", t+"-prices")})}})
	}
	panic("no Go declaration for " + construct)
}

// allTasks is every task of topo when each input topic has partitions partitions.
func allTasks(topo *topology.Topology, partitions int) tasks.Set {
	var out tasks.Set
	for _, s := range topo.Subtopologies() {
		out = out.Union(taskRange(s.ID, partitions))
	}
	return out
}

// dslApp is one Kafka Streams application of the DSL peer, as its output lines report it.
type dslApp struct {
	state    string
	states   []string
	active   tasks.Set
	topology string // the TOPOLOGY JSON it sends
	errs     []string
}

// dslPeer is a running DslPeer JVM.
type dslPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{}
	once   sync.Once

	mu     sync.Mutex
	apps   map[string]*dslApp
	lines  []string
	bad    []string
	closed bool
	code   int
}

// startDSLPeer starts one JVM running construct@application.id for each entry of apps, reading topics
// prefixed prefix. It is stopped (killed by PID if it does not exit in time) when the test ends.
func startDSLPeer(t *testing.T, b *Broker, prefix string, apps map[string]string, flags ...string) *dslPeer {
	t.Helper()
	classpath := buildJavaPeer(t)
	java, err := javaBinary()
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for app, construct := range apps {
		specs = append(specs, construct+"@"+app)
	}
	slices.Sort(specs)
	// The peers run small test loads for seconds: the quick compiler alone (C1) costs less CPU
	// than both, on a machine of two CPUs shared with the broker and the Go members.
	args := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx768m", "-cp", classpath}
	if os.Getenv("STREAMSGROUP_TEST_LOG") != "" {
		args = append(args, "-Dorg.slf4j.simpleLogger.defaultLogLevel=debug")
	}
	args = append(args, "io.github.streamsgroup.peer.DslPeer", "--bootstrap="+b.Bootstrap, "--topics="+prefix,
		"--apps="+strings.Join(specs, ","), "--state-dir="+t.TempDir())
	args = append(args, flags...)
	p := &dslPeer{cmd: exec.Command(java, args...), stderr: &lockedBuffer{}, exited: make(chan struct{}), apps: make(map[string]*dslApp)}
	for app := range apps {
		p.apps[app] = &dslApp{}
	}
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the DSL peer: %v", err)
	}
	go p.read(stdout)
	t.Cleanup(func() {
		if !p.stop() {
			t.Errorf("DSL peer (pid %d) did not exit within %v of closing its stdin; killed it", p.cmd.Process.Pid, javaStopWait)
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("DSL peer (pid %d) stdout:\n%s\n--- stderr (last 20000 bytes) ---\n%s", p.cmd.Process.Pid,
				strings.Join(p.lines, "\n"), tail(p.stderr.String(), 20000))
			p.mu.Unlock()
		}
		if len(p.bad) > 0 {
			t.Errorf("DSL peer printed lines that do not parse: %q", p.bad)
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func (p *dslPeer) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		p.handle(sc.Text())
	}
	_ = p.cmd.Wait()
	p.mu.Lock()
	p.code = -1
	if ps := p.cmd.ProcessState; ps != nil {
		p.code = ps.ExitCode()
	}
	p.mu.Unlock()
	close(p.exited)
}

func (p *dslPeer) handle(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
	if line == "CLOSED" {
		p.closed = true
		return
	}
	kind, rest, _ := strings.Cut(line, " ")
	appID, rest, _ := strings.Cut(rest, " ")
	app, ok := p.apps[appID]
	if !ok {
		p.bad = append(p.bad, line)
		return
	}
	switch kind {
	case "TOPOLOGY":
		app.topology = rest
	case "STATE":
		app.state = rest
		app.states = append(app.states, rest)
	case "TASKS":
		active, _, err := parseTasksLine(rest)
		if err != nil {
			p.bad = append(p.bad, line)
			return
		}
		app.active = active
	case "ERROR":
		app.errs = append(app.errs, rest)
	default:
		p.bad = append(p.bad, line)
	}
}

// app returns a copy of what application id has reported.
func (p *dslPeer) app(id string) dslApp {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := *p.apps[id]
	a.states = slices.Clone(a.states)
	a.errs = slices.Clone(a.errs)
	return a
}

// stop closes stdin (every application closes, leaving its group) and waits; after javaStopWait it
// kills the process by its PID and reports false. Safe to call more than once.
func (p *dslPeer) stop() bool {
	p.once.Do(func() { _ = p.stdin.Close() })
	select {
	case <-p.exited:
		return true
	case <-time.After(javaStopWait):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return false
}

// sameAsJava compares the Go topology with the TOPOLOGY line the Java application printed (its
// StreamsRebalanceData, copartition groups in wire order), for a readable failure before the
// broker's verdict: the Java topology is read back and both join requests must be equal.
func sameAsJava(goTopo *topology.Topology, javaJSON string) (bool, string) {
	if javaJSON == "" {
		return false, "the Java application printed no topology"
	}
	jt, err := topology.ReadJSON(strings.NewReader(javaJSON))
	if err != nil {
		return false, fmt.Sprintf("the Java topology does not read back: %v", err)
	}
	if !reflect.DeepEqual(jt.Request(0), goTopo.Request(0)) {
		gj, _ := goTopo.MarshalJSON()
		return false, fmt.Sprintf("Java sends  %s\nGo declares %s", javaJSON, gj)
	}
	return true, ""
}

// TestDSLInterop runs every construct of dslConstructs both ways round in one JVM: for group
// <construct>-java a Kafka Streams application creates the group and a Go member joins it; for group
// <construct>-go a Go member creates the group and the Kafka Streams application joins. Each join
// must be accepted, and the tasks shared.
func TestDSLInterop(t *testing.T) {
	b := Get(t)
	if b.StreamsHeartbeatMaxVersion(t) < 1 {
		// Brokers 4.1 to 4.4 compare topologies the same way (PROTOCOL §7.3); one broker line is
		// enough for the helpers, and make test runs the suite on three.
		t.Skip("the DSL interop matrix runs against Kafka 4.4 only (16 Kafka Streams applications); older brokers compare topologies the same way")
	}
	const partitions = 2
	prefix := Name(t, "dsl")
	type pair struct {
		construct, javaFirst, goFirst string
		topoJava, topoGo              *topology.Topology // the same topology, for the two application ids
	}
	var pairs []pair
	apps := make(map[string]string)
	for _, c := range dslConstructs {
		p := pair{construct: c, javaFirst: prefix + "-" + c + "-java", goFirst: prefix + "-" + c + "-go"}
		p.topoJava = dslTopology(c, p.javaFirst, prefix+"-"+c)
		p.topoGo = dslTopology(c, p.goFirst, prefix+"-"+c)
		for _, in := range dslInputs[c] {
			b.CreateTopic(t, prefix+"-"+c+"-"+in, partitions)
		}
		b.CreateTopic(t, prefix+"-"+c+"-out", 1)
		for _, g := range []string{p.javaFirst, p.goFirst} {
			b.DeleteGroupAtEnd(t, g)
			apps[g] = c
		}
		var internal []string
		for _, topo := range []*topology.Topology{p.topoJava, p.topoGo} {
			for _, s := range topo.Subtopologies() {
				for _, ti := range slices.Concat(s.RepartitionSourceTopics, s.StateChangelogTopics) {
					internal = append(internal, ti.Name)
				}
			}
		}
		deleteTopicsAtEnd(t, b, internal...)
		pairs = append(pairs, p)
	}

	// Go first: one Go member per <construct>-go group, each owning every task before Java comes.
	goFirst := make(map[string]*member)
	for _, p := range pairs {
		goFirst[p.construct] = startMember(t, b, p.goFirst, p.topoGo, "go-first-"+p.construct, nil)
	}
	for _, p := range pairs {
		m, all := goFirst[p.construct], allTasks(p.topoGo, partitions)
		Eventually(t, settle, func() (bool, string) {
			active, _, _ := m.rec.snapshot()
			return m.State() == membership.Stable && active.Equal(all),
				fmt.Sprintf("%s: Go member %s owns %v of %v; events %s", p.goFirst, m.State(), active, all, m.eventKinds())
		})
	}

	start := time.Now()
	peer := startDSLPeer(t, b, prefix, apps)

	// Java first: each <construct>-java application RUNNING with every task, then a Go member joins.
	for _, p := range pairs {
		all := allTasks(p.topoJava, partitions)
		Eventually(t, javaStart, func() (bool, string) {
			a := peer.app(p.javaFirst)
			if len(a.errs) > 0 {
				t.Fatalf("%s: Kafka Streams failed: %q", p.javaFirst, a.errs)
			}
			return a.state == "RUNNING" && a.active.Equal(all), fmt.Sprintf("%s: state %s, active %v of %v", p.javaFirst, a.state, a.active, all)
		})
		if ok, why := sameAsJava(p.topoJava, peer.app(p.javaFirst).topology); !ok {
			t.Errorf("%s: the Go declaration differs from what Kafka Streams sends:\n%s", p.construct, why)
		}
	}
	t.Logf("the %d Kafka Streams applications were running with their tasks %v after the JVM started", len(apps), time.Since(start).Round(time.Millisecond))
	goSecond := make(map[string]*member)
	var firstTasksMu sync.Mutex
	firstTasks := make(map[string]time.Duration) // how long after its start each member first owned a task
	for _, p := range pairs {
		m := startMember(t, b, p.javaFirst, p.topoJava, "go-second-"+p.construct, nil)
		goSecond[p.construct] = m
		go func(construct string, started time.Time) {
			for time.Since(started) < javaStart {
				if a, _, _ := m.rec.snapshot(); !a.IsEmpty() {
					firstTasksMu.Lock()
					firstTasks[construct] = time.Since(started)
					firstTasksMu.Unlock()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}(p.construct, time.Now())
	}

	// Both ways round: two members per group, the tasks split between them, none refused.
	for _, p := range pairs {
		for _, way := range []struct {
			group string
			m     *member
			topo  *topology.Topology
		}{{p.javaFirst, goSecond[p.construct], p.topoJava}, {p.goFirst, goFirst[p.construct], p.topoGo}} {
			all := allTasks(way.topo, partitions)
			Eventually(t, javaStart, func() (bool, string) {
				if err := way.m.Err(); err != nil {
					t.Fatalf("%s: the Go member was refused: %v", way.group, err)
				}
				a := peer.app(way.group)
				if len(a.errs) > 0 {
					t.Fatalf("%s: Kafka Streams was refused or failed: %q", way.group, a.errs)
				}
				g, _, _ := way.m.rec.snapshot()
				ok := a.state == "RUNNING" && way.m.State() == membership.Stable && !g.IsEmpty() && !a.active.IsEmpty() &&
					g.Union(a.active).Equal(all) && g.Intersect(a.active).IsEmpty()
				return ok, fmt.Sprintf("%s: go %s owns %v, java %s owns %v, all %v", way.group, way.m.State(), g, a.state, a.active, all)
			})
			d := b.DescribeGroup(t, way.group)
			described, err := topology.FromDescribe(d.Topology)
			if err != nil {
				t.Fatalf("%s: %v", way.group, err)
			}
			if len(d.Members) != 2 || described.ID != way.topo.ID() {
				t.Fatalf("%s: %d members, group topology %s, Go declared %s", way.group, len(d.Members), described.ID, way.topo.ID())
			}
			since := ""
			if way.group == p.javaFirst {
				firstTasksMu.Lock()
				since = fmt.Sprintf(" (first task %v after joining the busy group)", firstTasks[p.construct].Round(100*time.Millisecond))
				firstTasksMu.Unlock()
			}
			t.Logf("%-24s %-10s accepted: Go %v, Java %v%s", p.construct, strings.TrimPrefix(way.group, prefix+"-"+p.construct+"-")+"-first",
				activeIDs(must(way.m.rec.snapshot())), activeIDs(peer.app(way.group).active), since)
		}
	}
	checkRefusalNamesDifference(t, b, prefix+"-stream-stream-join-java", prefix+"-stream-stream-join")
}

// must returns the first of three values (the active tasks of a recorder snapshot).
func must(a, _ tasks.Set, _ bool) tasks.Set { return a }

// The refusal names the difference: a Go member that declares the stream-stream join's stores with
// WindowedChangelog (compact,delete, as for windowed aggregations) instead of the join helper is
// refused by the group Kafka Streams created, and its TopologyError says which config differs.
func checkRefusalNamesDifference(t *testing.T, b *Broker, group, topics string) {
	t.Helper()
	n := topology.Names{AppID: group}
	retention := (10 * time.Minute).Milliseconds()
	wrong := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{topics + "-left", topics + "-right"},
		StateChangelogTopics: []topology.TopicInfo{n.WindowedChangelog("pairs-this-join-store", retention), n.WindowedChangelog("pairs-other-join-store", retention)},
		CopartitionGroups: [][]string{topology.CopartitionGroup([]topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000000", topics+"-left")},
			[]topology.JoinInput{topology.Source("KSTREAM-SOURCE-0000000001", topics+"-right")})}})
	m := startMember(t, b, group, wrong, "go-wrong-join-stores", nil)
	Eventually(t, settle, func() (bool, string) {
		return m.Err() != nil, "the member with compact,delete join stores is not refused yet"
	})
	var te *membership.TopologyError
	if !errors.As(m.Err(), &te) {
		t.Fatalf("refused with %v (%T), want a *membership.TopologyError", m.Err(), m.Err())
	}
	want := fmt.Sprintf(`subtopology "0": changelog topic "%s-pairs-other-join-store-changelog": config "cleanup.policy" is "compact,delete" in this topology, "delete" in the group's`, group)
	if !slices.Contains(te.Mismatch.Differences, want) || !strings.Contains(te.Error(), want) {
		t.Fatalf("the refusal does not name the difference %q: %v", want, te)
	}
}
