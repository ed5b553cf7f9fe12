package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
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
		union, n := tasks.Set{}, 0
		var why []string
		ok := true
		for _, a := range apps {
			if done, err := a.returned(); done {
				t.Fatalf("%s returned %v", a.name, err)
			}
			x := a.active()
			ok = ok && !x.IsEmpty() && a.app.State() == stream.Running
			union, n = union.Union(x), n+x.Len()
			why = append(why, a.String())
		}
		return ok && union.Equal(s.all) && n == s.all.Len(), strings.Join(why, " ")
	})
}

// TestEOSMemberKilledMidTransaction (fault 1): member a runs as a child process with a 1 s commit
// interval, so a transaction is open most of the time; b runs in-process. While input flows, a is
// SIGKILLed with a transaction open (its transactional ID is Ongoing at the broker after the kill)
// and started again on the same state.dir: the new incarnation has the same transactional.id, and
// its InitProducerId fences the old producer epoch and aborts the dead one's transaction. The
// output and the stores are exact.
func TestEOSMemberKilledMidTransaction(t *testing.T) {
	s := newRTSetup(t, 4)
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
	checkStoreTotals(t, want, b)
	b.stopClean(t)
	checkExact(t, readCommittedCounts(t, clientsOf(t, s.b), s.output), want)
}

// TestEOSBrokerRestart (fault 4): the broker restarts under two exactly-once members while input
// flows. Their open transactions fail or abort and the work is done again; afterwards the output
// and the stores are exact.
func TestEOSBrokerRestart(t *testing.T) {
	s := newRTSetup(t, 4)
	if s.b.RunDir == "" {
		t.Fatal("this test restarts the broker and needs its run directory (STREAMSGROUP_RUN_DIR)")
	}
	a := s.startEOS(t, "a")
	b := s.startEOS(t, "b")
	s.waitSplit(t, a, b)
	f := feed(t, s.b.Client(t), s.input, 16, 20000)
	f.waitMore(t, 300)
	s.b.Restart(t)
	f.waitMore(t, 300)
	s.waitSplit(t, a, b)
	want := f.stop(t)
	Eventually(t, 90*time.Second, func() (bool, string) { return caughtUp(t, s.b.Admin(t), s.group, s.input) })
	checkStoreTotals(t, want, a, b)
	a.stopClean(t)
	b.stopClean(t)
	checkExact(t, readCommittedCounts(t, clientsOf(t, s.b), s.output), want)
}

// clientsOf makes clients of b for the test (closed when it ends).
func clientsOf(t *testing.T, b *Broker) func(...kgo.Opt) *kgo.Client {
	return func(opts ...kgo.Opt) *kgo.Client { return b.Client(t, opts...) }
}
