//go:build unix

package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The exactly-once proof of issue 19 §4: the counting app under processing.guarantee=exactly_once_v2
// goes through one fault per test while input flows, and afterwards the committed output (read
// with read_committed up to the end offsets) holds for every key exactly the counts 1…n, once each,
// and the stores hold exactly n. See eos_helpers_test.go for the oracle.

// childTxnID is the transactional.id of a child run with state.dir dir: Kafka Streams' EOS v2 form,
// <application.id>-<process ID>-1, the process ID being the one kept in dir.
func childTxnID(t *testing.T, dir, group string) string {
	t.Helper()
	cfg := config.Default(group)
	cfg.StateDir = dir
	var pid string
	Eventually(t, settle, func() (bool, string) {
		var err error
		pid, err = cfg.ResolveProcessID()
		return err == nil, fmt.Sprint(err)
	})
	return group + "-" + pid + "-1"
}

// txnState describes the transactional ID at its transaction coordinator ("" and the error while
// that fails).
func txnState(adm *kadm.Client, id string) (kadm.DescribedTransaction, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return kadm.DescribedTransaction{}, err
	}
	dt, ok := d[id]
	if !ok {
		return kadm.DescribedTransaction{}, fmt.Errorf("transactional ID %s not described", id)
	}
	return dt, dt.Err
}

// waitSplitChild waits until the child and the in-process app each run some tasks and together
// all of them, once.
func (s *rtSetup) waitSplitChild(t *testing.T, c *eosChild, r *rtApp) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) {
		if done, err := r.returned(); done {
			t.Fatalf("%s returned %v", r.name, err)
		}
		if c.hasExited() {
			t.Fatalf("%s exited: %s", c.name, c.exitLine())
		}
		_, x := c.snapshot()
		y := r.active()
		ok := c.running() && r.app.State() == stream.Running && !x.IsEmpty() && !y.IsEmpty() &&
			x.Union(y).Equal(s.all) && x.Intersect(y).IsEmpty()
		return ok, fmt.Sprintf("%v %v", c, r)
	})
}

// waitSplit waits until the in-process apps run all tasks between them, each some, once.
func (s *rtSetup) waitSplit(t *testing.T, apps ...*rtApp) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) {
		for _, a := range apps {
			if done, err := a.returned(); done {
				t.Fatalf("%s returned %v", a.name, err)
			}
		}
		return s.split(apps...)
	})
}

// split reports whether the apps run all tasks between them, each some, once.
func (s *rtSetup) split(apps ...*rtApp) (bool, string) {
	union, n := tasks.Set{}, 0
	var why []string
	ok := true
	for _, a := range apps {
		x := a.active()
		ok = ok && !x.IsEmpty() && a.app.State() == stream.Running
		union, n = union.Union(x), n+x.Len()
		why = append(why, a.String())
	}
	return ok && union.Equal(s.all) && n == s.all.Len(), strings.Join(why, " ")
}

// TestEOSMemberKilledMidTransaction (fault 1): member a runs as a child process with a 1 s commit
// interval, so a transaction is open most of the time; b runs in-process. While input flows, a is
// SIGKILLed with a transaction open (its transactional ID is Ongoing at the broker after the kill)
// and started again on the same state.dir: the new incarnation has the same transactional.id, and
// its InitProducerId fences the old producer epoch and aborts the dead one's transaction. The
// output and the stores are exact, and so is the store of a fresh app restored from the changelog.
func TestEOSMemberKilledMidTransaction(t *testing.T) {
	s := newEOSSetup(t, 4)
	dirA := t.TempDir()
	a := s.startChild(t, "a", dirA, 1000)
	b := s.startEOS(t, "b")
	s.waitSplitChild(t, a, b)
	txnID := childTxnID(t, dirA, s.group)
	adm := s.b.Admin(t)
	f := feed(t, s.b.Client(t), s.input, 16, 20000)
	f.waitMore(t, 200)

	// Kill a while its transaction is open. The broker may see it commit between the check and the
	// kill (a commit every second): then a is started again on the same state.dir and killed anew.
	var dead kadm.DescribedTransaction
	for attempt := 1; ; attempt++ {
		Eventually(t, settle, func() (bool, string) {
			d, err := txnState(adm, txnID)
			return err == nil && d.State == "Ongoing", fmt.Sprintf("transaction %s: %s %v", txnID, d.State, err)
		})
		a.kill()
		<-a.exited
		d, err := txnState(adm, txnID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State == "Ongoing" {
			dead = d
			t.Logf("killed a (attempt %d) with transaction %s open: producer %d epoch %d, partitions %v", attempt, txnID, d.ProducerID, d.ProducerEpoch, d.Topics)
			break
		}
		if attempt == 3 {
			t.Fatalf("a's transaction was never open when it died (last state %s)", d.State)
		}
		a = s.startChild(t, "a", dirA, 1000)
		s.waitSplitChild(t, a, b)
	}
	f.waitMore(t, 200) // input goes on while a is dead

	a2 := s.startChild(t, "a", dirA, 1000)
	// The restart fences the dead producer: a new epoch, the open transaction aborted.
	Eventually(t, settle, func() (bool, string) {
		d, err := txnState(adm, txnID)
		moved := err == nil && d.ProducerID == dead.ProducerID && d.ProducerEpoch > dead.ProducerEpoch ||
			err == nil && d.ProducerID != dead.ProducerID
		return moved, fmt.Sprintf("transaction %s: %+v %v (the dead one: epoch %d)", txnID, d, err, dead.ProducerEpoch)
	})
	s.waitSplitChild(t, a2, b)
	f.waitMore(t, 200)
	want := f.stop(t)
	s.waitCaughtUp(t)
	if exit := a2.stop(t); exit != "ok" {
		t.Fatalf("a2 did not stop cleanly: %q", exit)
	}
	b.runningWith(t, s.all)
	s.waitCaughtUp(t)
	s.finish(t, want, b)
	// The changelog holds the dead transaction's aborted records: a store restored from it with
	// read_committed must not see them.
	s.verifyFresh(t, want)
}

// zombieMember is a commit.Member frozen at a snapshot: the member as a zombie still sees itself.
type zombieMember struct{ snap membership.Snapshot }

func (z zombieMember) Snapshot() membership.Snapshot { return z.snap }

// zombieCommitRefused drives commit.Committer.CommitInTransaction against the real broker as the
// zombie would: its member ID and epoch from before the session expired, its old tasks, inside an
// open transaction that also wrote a record to the output. The broker must refuse the offsets (a
// *commit.LostError); the transaction is then aborted, and its record never becomes visible (the
// final output check fails on any key that was never input).
func (s *rtSetup) zombieCommitRefused(t *testing.T, memberID string, epoch int32, owned tasks.Set) {
	t.Helper()
	txnID := s.group + "-zombie-check"
	cl := s.b.Client(t, kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, pepoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: s.output, Key: []byte("zombie"), Value: make([]byte, 8)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cm, err := commit.New(cl, config.Default(s.group), s.topo)
	if err != nil {
		t.Fatal(err)
	}
	cm.Bind(zombieMember{snap: membership.Snapshot{State: membership.Stable, MemberID: memberID, Epoch: epoch,
		Owned: tasks.Assignment{Active: owned}}})
	offs := commit.Offsets{}
	for id := range owned.All() {
		offs[tasks.TopicPartition{Topic: s.input, Partition: id.Partition}] = 1
	}
	err = cm.CommitInTransaction(ctx, commit.Producer{TransactionalID: txnID, ID: id, Epoch: pepoch}, offs)
	le := errorAs[*commit.LostError](t, err)
	t.Logf("the broker refused the zombie's TxnOffsetCommit (member %s, epoch %d): %v", memberID, epoch, le.Err)
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("aborting the zombie's transaction: %v", err)
	}
}

// TestEOSPausedPastSessionZombieFenced (faults 2 and 7): member a, a child process, is SIGSTOPped
// with a transaction open for longer than the group's session timeout (4 s where the broker
// allows it). The broker expires it and b takes every task; b's restore waits for a's open
// transaction to be aborted by the broker (transaction.timeout.ms). The broker refuses a
// TxnOffsetCommit carrying a's old member ID and epoch (driven directly: a *commit.LostError).
// Then a is resumed: whatever its late transaction tries, none of it may become visible; it
// replaces its fenced producer and shares the tasks with b again; the output and the stores are
// exact.
func TestEOSPausedPastSessionZombieFenced(t *testing.T) {
	s := newEOSSetup(t, 4)
	session := groupSession(t, s.b, s.group, 4000)
	dirA := t.TempDir()
	a := s.startChild(t, "a", dirA, 1000)
	b := s.startEOS(t, "b")
	s.waitSplitChild(t, a, b)
	aID, aEpoch, ok := memberOf(t, s.b, s.group, "a")
	if !ok {
		t.Fatal("a is not a member of the group")
	}
	_, aTasks := a.snapshot()
	txnID := childTxnID(t, dirA, s.group)
	adm := s.b.Admin(t)
	f := feed(t, s.b.Client(t), s.input, 16, 20000)
	f.waitMore(t, 200)
	Eventually(t, settle, func() (bool, string) {
		d, err := txnState(adm, txnID)
		return err == nil && d.State == "Ongoing", fmt.Sprintf("transaction %s: %s %v", txnID, d.State, err)
	})
	a.signal(t, syscall.SIGSTOP)
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = a.cmd.Process.Signal(syscall.SIGCONT) // so that the cleanup's SIGKILL is not left pending
		}
	}()
	Eventually(t, settle, func() (bool, string) {
		ids := groupMemberIDs(t, s.b, s.group)
		return !ids[aID] && b.active().Equal(s.all) && b.app.State() == stream.Running,
			fmt.Sprintf("%v; members %v (a is %s)", b, ids, aID)
	})
	t.Logf("a paused %v ago (session %v): expired, b runs every task", time.Since(paused).Round(time.Millisecond), session)
	f.waitMore(t, 200)
	s.zombieCommitRefused(t, aID, aEpoch, aTasks)

	a.signal(t, syscall.SIGCONT)
	resumed = true
	// The zombie finds out: it gives its tasks up, aborts, and, its producer fenced since the
	// coordinator aborted its transaction (paused past transaction.timeout.ms), replaces the
	// producer and joins again, as Kafka Streams replaces its thread producer: it does not stop.
	s.waitSplitChild(t, a, b)
	if !strings.Contains(a.log(), "tasks lost") {
		t.Fatalf("a runs again without having given its tasks up after the pause; its log:\n%s", a.log())
	}
	for _, line := range strings.Split(a.log(), "\n") {
		if strings.Contains(line, "transaction") || strings.Contains(line, "producer") {
			t.Logf("a: %s", line)
		}
	}
	f.waitMore(t, 200)
	want := f.stop(t)
	s.waitCaughtUp(t)
	if exit := a.stop(t); exit != "ok" {
		t.Fatalf("the resumed zombie a did not stop cleanly: %q", exit)
	}
	b.runningWith(t, s.all)
	s.waitCaughtUp(t)
	s.finish(t, want, b)
}

// TestEOSNetworkCutPastSession (fault 3): member a reaches the broker through a proxy; the network
// is cut (every connection reset, new ones too) for longer than the group's session timeout while
// input flows. b takes a's tasks once the broker expired a; a gives them up and aborts (its session
// guard). When the network is back a rejoins and the group splits again; the output and the stores
// are exact.
func TestEOSNetworkCutPastSession(t *testing.T) {
	newestLineOnly(t, "the session guard that gives the tasks up and aborts is the member's own, and every line expires a session alike")
	s := newEOSSetup(t, 4)
	session := groupSession(t, s.b, s.group, 4000)
	p := newResetProxy(t, s.b.Bootstrap)
	a := s.start(t, "a", rtOpts{cfg: eosCfg(t.TempDir()), opts: []stream.Option{stream.WithClientOptions(proxyDialer(t, s.b, p))}})
	b := s.startEOS(t, "b")
	s.waitSplit(t, a, b)
	f := feed(t, s.b.Client(t), s.input, 16, 100000) // the cut may last a 45 s session (4.2)
	f.waitMore(t, 200)
	p.SetDown(true)
	// b gets every task once the broker expired a (within the session: 45 s on a broker that
	// refuses the 4 s one). (a's own view may lag: its OnAllTasksLost waits for the loop, which may
	// be waiting for its records to be delivered.)
	Eventually(t, session+settle, func() (bool, string) {
		return b.active().Equal(s.all) && b.app.State() == stream.Running, fmt.Sprintf("%v %v", a, b)
	})
	t.Logf("b runs every task; a: %v", a)
	f.waitMore(t, 200)
	p.SetDown(false)
	// a rejoins; or, when the broker aborted its transaction meanwhile (transaction.timeout.ms) and
	// bumped its producer epoch, a stops on the fenced producer (a fatal error for the runtime, see
	// stream.TxnError): either way none of its late work may become visible.
	survivors := []*rtApp{a, b}
	Eventually(t, settle, func() (bool, string) {
		if done, err := a.returned(); done {
			if !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.ProducerFenced) {
				t.Fatalf("a returned %v after the cut; want it to rejoin, or to stop on its fenced producer", err)
			}
			t.Logf("a stopped on its fenced producer after the cut: %v", err)
			survivors = []*rtApp{b}
			return b.active().Equal(s.all) && b.app.State() == stream.Running, b.String()
		}
		return s.split(a, b)
	})
	f.waitMore(t, 200)
	want := f.stop(t)
	s.waitCaughtUp(t)
	s.finish(t, want, survivors...)
}

// TestEOSCoordinatorMoved (fault 5): on a 3-node cluster, two exactly-once members count while the
// group coordinator moves to another node (a preferred-leader election of its __consumer_offsets
// partition, as an operator moves it); the output and the stores are exact.
func TestEOSCoordinatorMoved(t *testing.T) {
	newestLineOnly(t, "a 3-node cluster costs three JVMs; TestCoordinatorFailover and the at-least-once tests show the move on the newest line, and the transactions are the same on every line")
	c := startCluster(t, 3)
	cl := c.Client(t)
	adm := kadm.NewClient(cl)
	// The members and the test's clients bootstrap from node 1 (the controller, never stopped) and
	// find the other nodes in the metadata.
	s := &rtSetup{b: &Broker{Bootstrap: c.Addrs[1]}, group: Name(t, "app"), input: Name(t, "in"), output: Name(t, "out"), all: taskRange("0", 4)}
	s.topo = javaCompatibleTopology(s.group, s.input, rtCounts.Name())
	c.CreateTopic(t, adm, s.input, 4)
	c.CreateTopic(t, adm, s.output, 2)
	from := c.Coordinator(t, adm, s.group)
	warmTransactions(t, s.b)
	a := s.startEOS(t, "a")
	b := s.startEOS(t, "b")
	s.waitSplit(t, a, b)
	f := feed(t, s.b.Client(t), s.input, 16, 20000)
	f.waitMore(t, 300)
	to := int32(2)
	if from == 2 {
		to = 3
	}
	c.MoveCoordinators(t, cl, from, to, nil) // returns once the metadata shows node to leading
	t.Logf("moved the coordinator of %s from node %d to node %d", s.group, from, to)
	f.waitMore(t, 300)
	s.waitSplit(t, a, b)
	want := f.stop(t)
	s.waitCaughtUp(t)
	s.finish(t, want, a, b)
}

// TestEOSClusterWithoutTransactions (fault 8): a broker whose __transaction_state cannot be created
// (transaction.state.log.replication.factor=3 on one node) cannot run transactions. An
// exactly-once App's Run returns a *stream.TxnError saying so, within a bound, and does not hang.
func TestEOSClusterWithoutTransactions(t *testing.T) {
	newestLineOnly(t, "it starts a broker of its own; a cluster that cannot create __transaction_state refuses transactions alike on every line")
	d := brmDedicatedBroker(t, "transaction.state.log.replication.factor=3")
	s := &rtSetup{b: d, group: Name(t, "app"), input: Name(t, "in"), output: Name(t, "out"), all: taskRange("0", 1)}
	s.topo = javaCompatibleTopology(s.group, s.input, rtCounts.Name())
	d.CreateTopic(t, s.input, 1)
	d.CreateTopic(t, s.output, 1)
	a := s.startEOS(t, "a")
	started := time.Now()
	err := a.wait(t, time.Minute)
	te := errorAs[*stream.TxnError](t, err)
	t.Logf("Run returned after %v: %v", time.Since(started).Round(time.Millisecond), te)
	if !strings.Contains(te.Error(), "transaction.state.log.replication.factor") {
		t.Fatalf("the error does not say what to check: %v", te)
	}
	if st := a.app.State(); st != stream.Error {
		t.Fatalf("state %s after the TxnError; want ERROR", st)
	}
}

// TestEOSSharesAGroupWithKafkaStreams (fault 6): a Go exactly-once member and a Kafka Streams 4.4
// member with processing.guarantee=exactly_once_v2 (the Java peer) count in one group on one
// topology, with hand-overs both ways while input flows: Go alone; Java joins and takes some tasks
// (Go → Java, restoring Go's changelog); Java stops and Go takes them back (Java → Go, restoring
// Java's). The committed output (read_committed) and Go's stores are exact.
func TestEOSSharesAGroupWithKafkaStreams(t *testing.T) {
	buildJavaPeer(t) // before any input flows: a first build takes a while
	s := newEOSSetup(t, 4)
	g := s.startEOS(t, "go")
	g.runningWith(t, s.all)
	// A JVM start and a Kafka Streams rebalance take a while: a larger bound on the input.
	f := feed(t, s.b.Client(t), s.input, 16, 80000)
	f.waitMore(t, 200)

	p := startJavaPeer(t, s.b, s.group, s.input, s.output, rtCounts.Name(), javaDefault, "--guarantee=exactly_once_v2")
	Eventually(t, javaStart, func() (bool, string) {
		x, j := g.active(), p.activeTasks()
		ok := !x.IsEmpty() && !j.IsEmpty() && x.Union(j).Equal(s.all) && x.Intersect(j).IsEmpty() &&
			g.app.State() == stream.Running && p.currentState() == "RUNNING"
		return ok, fmt.Sprintf("%v %v", g, p)
	})
	f.waitMore(t, 400)

	p.stop(t)
	g.runningWith(t, s.all)
	f.waitMore(t, 200)
	if errs := p.errorLines(); len(errs) > 0 {
		t.Fatalf("the Java peer failed: %v", errs)
	}
	want := f.stop(t)
	s.waitCaughtUp(t)
	s.finish(t, want, g)
}

// exactProblems is checkCountedOnce's verdict as a list (empty when every key's committed counts
// are 1…n once each).
func exactProblems(got map[string][]int64, want map[string]int64) []string {
	var bad []string
	for k, n := range want {
		seq := got[k]
		ok := int64(len(seq)) == n
		for i := 0; ok && i < len(seq); i++ {
			ok = seq[i] == int64(i+1)
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: %d inputs, committed counts %v", k, n, seq))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, k+": counted but never input")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestEOSCommitOutcomeUnknown: the EndTxn that commits a transaction reaches the broker, which
// commits it, but its answer never reaches the member (a proxy resets the connection right after
// the request). kgo sends the EndTxn again on a new connection and the broker recognises the
// retry. Had the runtime taken the transaction for aborted, it would process its input again from
// the offsets it last knew committed, and the committed output would repeat counts.
func TestEOSCommitOutcomeUnknown(t *testing.T) {
	s := newEOSSetup(t, 2)
	p := newEndTxnCutProxy(t, s.b.Bootstrap)
	_, brokerPort, _ := net.SplitHostPort(s.b.Bootstrap)
	var d net.Dialer
	dial := kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if _, port, err := net.SplitHostPort(host); err == nil && port == brokerPort {
			host = p.Addr()
		}
		return d.DialContext(ctx, network, host)
	})
	a := s.start(t, "a", rtOpts{cfg: eosCfg(t.TempDir()), opts: []stream.Option{stream.WithClientOptions(dial)}})
	a.runningWith(t, s.all)
	f := feed(t, s.b.Client(t), s.input, 8, 20000)
	f.waitMore(t, 200)
	p.armed.Store(true)
	Eventually(t, settle, func() (bool, string) {
		return p.cuts.Load() == 1, "no EndTxn cut off yet"
	})
	f.waitMore(t, 200)
	want := f.stop(t)
	s.waitCaughtUp(t)
	storeWhy := storeVerdict(t, want, a)
	a.stopClean(t)
	got := readCommittedCounts(t, clientsOf(t, s.b), s.output)
	if bad := exactProblems(got, want); len(bad) > 0 {
		t.Fatalf("after an EndTxn(commit) whose answer was lost (the broker committed it), the committed output repeats "+
			"counts: the transaction was taken for aborted (stream/txn.go commitEOS → abortAfter → abortTxn rewinds to the "+
			"offsets the member last knew committed) although its outcome was unknown; %d keys wrong:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	if storeWhy != "" {
		t.Fatalf("the output is exact but %s", storeWhy)
	}
}

// TestEOSCommitOutcomeUnknownBrokerAway: as TestEOSCommitOutcomeUnknown, but after the EndTxn the
// broker seems gone for 3 s (every new connection is refused; less than the session guard), longer
// than kgo retries the EndTxn (half a second here): the commit's outcome stays unknown to the client. The runtime ends the transaction (the abort
// reloads the producer ID; the coordinator finishes the commit it received) and reads the
// committed offsets once the broker is back: they are the transaction's, so it committed, and the
// app goes on from there without a restart, its stores holding the transaction's writes.
func TestEOSCommitOutcomeUnknownBrokerAway(t *testing.T) {
	s := newEOSSetup(t, 2)
	p := newEndTxnCutProxy(t, s.b.Bootstrap)
	p.awayFor = 3 * time.Second
	_, brokerPort, _ := net.SplitHostPort(s.b.Bootstrap)
	var d net.Dialer
	dial := kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if _, port, err := net.SplitHostPort(host); err == nil && port == brokerPort {
			host = p.Addr()
		}
		return d.DialContext(ctx, network, host)
	})
	endTxnGivesUpSoon := kgo.RetryTimeoutFn(func(key int16) time.Duration {
		if key == apiKeyEndTxn {
			return 500 * time.Millisecond
		}
		return 30 * time.Second
	})
	logs := newLogCapture()
	a := s.start(t, "a", rtOpts{cfg: eosCfg(t.TempDir()), opts: []stream.Option{
		stream.WithClientOptions(dial, endTxnGivesUpSoon), stream.WithLogger(slog.New(logs).With("test_member", "a"))}})
	a.runningWith(t, s.all)
	f := feed(t, s.b.Client(t), s.input, 8, 20000)
	f.waitMore(t, 200)
	p.armed.Store(true)
	Eventually(t, settle, func() (bool, string) {
		return p.cuts.Load() == 1 && p.refused.Load() > 0 && !p.away(), "the EndTxn not cut off, or the broker not back, yet"
	})
	const learnt = "a transaction commit whose outcome was unknown committed"
	Eventually(t, settle, func() (bool, string) {
		_, ok := logs.find(slog.LevelInfo, learnt)
		return ok, fmt.Sprintf("a did not log %q (%d connections refused)", learnt, p.refused.Load())
	})
	if r, ok := logs.find(slog.LevelInfo, "tasks lost"); ok {
		t.Fatalf("a lost its tasks (%s): the broker was away for longer than the session guard allows; this test wants the commit's outcome learnt while the tasks stay", r.Message)
	}
	f.waitMore(t, 200)
	want := f.stop(t)
	s.waitCaughtUp(t)
	if done, err := a.returned(); done {
		t.Fatalf("a stopped after a commit whose outcome was unknown (%v); it should have learnt the outcome from the committed offsets and gone on", err)
	}
	storeWhy := storeVerdict(t, want, a)
	a.stopClean(t)
	got := readCommittedCounts(t, clientsOf(t, s.b), s.output)
	if bad := exactProblems(got, want); len(bad) > 0 {
		t.Fatalf("after an EndTxn(commit) whose outcome stayed unknown, the committed output is not exact; %d keys wrong:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	if storeWhy != "" {
		t.Fatalf("the output is exact but %s", storeWhy)
	}
}

// TestEOSTasksLostDuringCommit: member a's network is cut while its transaction holds records in
// flight, for just longer than its session guard (it gives its tasks up: OnAllTasksLost), then
// restored before the broker has aborted the transaction (transaction.timeout.ms, 10 s). The
// transaction holds the lost tasks' output and changelog records; its input offsets are gone with
// the tasks. Committing it makes their effects visible without their offsets, so the tasks' next
// owner restores those effects and processes the same input again: counts go past the number of
// inputs. Exactly-once needs that transaction aborted.
func TestEOSTasksLostDuringCommit(t *testing.T) {
	s := newEOSSetup(t, 4)
	session := groupSession(t, s.b, s.group, 4000)
	p := newResetProxy(t, s.b.Bootstrap)
	a := s.start(t, "a", rtOpts{cfg: eosCfg(t.TempDir()), opts: []stream.Option{stream.WithClientOptions(proxyDialer(t, s.b, p))}})
	b := s.startEOS(t, "b")
	s.waitSplit(t, a, b)
	// The cut lasts until the session guard fires: about 35 s on a broker that refuses the 4 s
	// session (4.2), in which the feeder (at most 800 records/s) would write past a 20,000 bound
	// and then never write the 200 more the test waits for after the cut.
	f := feed(t, s.b.Client(t), s.input, 16, 100000)
	f.waitMore(t, 200)
	p.SetDown(true)
	cut := time.Now()
	// The session guard fires (the member is FENCED and runs OnAllTasksLost, which may wait for the
	// loop's commit to finish: a.active() changes only after it), within the session: 45 s on a
	// broker that refuses the 4 s one (4.2).
	Eventually(t, session+settle, func() (bool, string) {
		st := a.app.Stats().State
		return st == membership.Fenced || a.active().IsEmpty(), fmt.Sprintf("%v member state %s", a, st)
	})
	p.SetDown(false)
	t.Logf("a's session guard fired %v into the cut; the network is back", time.Since(cut).Round(time.Millisecond))
	f.waitMore(t, 200)
	s.waitSplit(t, a, b)
	f.waitMore(t, 200)
	want := f.stop(t)
	s.waitCaughtUp(t)
	storeWhy := storeVerdict(t, want, a, b)
	a.stopClean(t)
	b.stopClean(t)
	if bad := exactProblems(readCommittedCounts(t, clientsOf(t, s.b), s.output), want); len(bad) > 0 {
		t.Fatalf("RUNTIME BUG: a transaction holding the records of tasks the member had lost was committed without their "+
			"input offsets, so the input was counted again on top of the committed state. consume.Consumer.OnAllTasksLost "+
			"(consume/callbacks.go) drops the lost tasks before it calls the runtime's OnAllTasksLost, which waits for a.mu; "+
			"the loop holds a.mu in commitEOS (stream/txn.go), blocked in flush while the network is down; when flush returns, "+
			"a.cons.Uncommitted() no longer has the lost tasks' offsets, CommitInTransaction sends the rest (or nothing) and "+
			"EndTransaction(TryCommit) commits their output and changelog records. commitEOS must abort when tasks were lost "+
			"since the transaction began. %d keys wrong (store: %s):\n%s", len(bad), storeWhy, strings.Join(bad, "\n"))
	}
	if storeWhy != "" {
		t.Fatalf("the output is exact but %s", storeWhy)
	}
}
