package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/listoffsets"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// warnings collects what WithWarningListener reports.
type warnings struct {
	mu   sync.Mutex
	errs []error
}

func (w *warnings) add(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

func (w *warnings) missing() []*MissingChangelogWarning {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*MissingChangelogWarning
	for _, err := range w.errs {
		if mw, ok := err.(*MissingChangelogWarning); ok {
			out = append(out, mw)
		}
	}
	return out
}

// The tasks assigned while their changelog topic does not exist wait for it (the member retries
// the assignment), with one *MissingChangelogWarning and the MissingChangelogs gauge at 1; once the
// topic exists they start, process and commit, and the gauge is back at 0.
func TestAssignmentWaitsForAMissingChangelog(t *testing.T) {
	g := newFakeGroup(t, "in", "out") // no changelog topic
	g.produceInput(t, 5)
	var w warnings
	a := countApp(t, g, nil, WithWarningListener(w.add))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, func() bool { return len(w.missing()) == 1 && a.Metrics().MissingChangelogs == 1 }, "the warning and the gauge")
	mw := w.missing()[0]
	if mw.Group != testApp || fmt.Sprint(mw.Topics) != "["+countsLog+"]" {
		t.Fatalf("warning %+v; want group %s, topics [%s]", mw, testApp, countsLog)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.c.ListenAddrs()...))
	mustNotErr(t, err)
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, countsLog); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, g, a, map[tasks.TopicPartition]int64{{Topic: "in", Partition: 0}: 5, {Topic: "in", Partition: 1}: 5})
	if n, m := len(w.missing()), a.Metrics().MissingChangelogs; n != 1 || m != 0 {
		t.Errorf("%d warnings, gauge %d after the topic came; want 1 and 0", n, m)
	}
	cancel()
	mustNotErr(t, <-done)
}

// A changelog topic that never comes ends the wait after max.poll.interval.ms: Run returns a
// *MissingChangelogError naming the group and the topic.
func TestAssignmentGivesUpOnAChangelogThatNeverComes(t *testing.T) {
	g := newFakeGroup(t, "in", "out")
	a := countApp(t, g, func(c *config.Config) { c.MaxPollInterval = time.Second })
	err := a.Run(context.Background())
	var me *MissingChangelogError
	if !errors.As(err, &me) || me.Group != testApp || fmt.Sprint(me.Topics) != "["+countsLog+"]" || me.Waited < time.Second {
		t.Fatalf("Run: %v; want a *MissingChangelogError for [%s] after max.poll.interval.ms", err, countsLog)
	}
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The wait ends at max.poll.interval.ms exactly, on the App's clock: before it the listing's error
// goes back to the member (which retries), at it the application fails; a listing that succeeds
// ends the wait (the gauge back at 0), and the next missing topic starts a new one. Other errors
// pass through untouched.
func TestMissingChangelogWaitBound(t *testing.T) {
	var w warnings
	a, clk := newTestApp(t, testConfig(), testProcs(), WithWarningListener(w.add))
	missing := fmt.Errorf("consume: listing changelog offsets: %w",
		&listoffsets.PartitionError{Topic: countsLog, Partition: -1, Err: kerr.UnknownTopicOrPartition})
	if err := a.assignmentFailed(errBoom); err != errBoom || a.Metrics().MissingChangelogs != 0 || len(w.missing()) != 0 {
		t.Fatalf("another error: %v, gauge %d, warnings %d", err, a.Metrics().MissingChangelogs, len(w.missing()))
	}
	if err := a.assignmentFailed(missing); err != missing || a.fatalErr() != nil {
		t.Fatalf("the first failure: %v (fatal %v); want the listing's error back", err, a.fatalErr())
	}
	clk.t = clk.t.Add(a.cfg.MaxPollInterval - time.Millisecond)
	if err := a.assignmentFailed(missing); err != missing || a.fatalErr() != nil || len(w.missing()) != 1 {
		t.Fatalf("just before the bound: %v (fatal %v, %d warnings)", err, a.fatalErr(), len(w.missing()))
	}
	a.assignmentListed()
	if a.Metrics().MissingChangelogs != 0 {
		t.Fatal("the gauge stays up after the topics came")
	}
	// A new wait: the bound counts from its own start.
	clk.t = clk.t.Add(time.Hour)
	_ = a.assignmentFailed(missing)
	if len(w.missing()) != 2 || a.Metrics().MissingChangelogs != 1 {
		t.Fatalf("%d warnings, gauge %d for a new wait", len(w.missing()), a.Metrics().MissingChangelogs)
	}
	clk.t = clk.t.Add(a.cfg.MaxPollInterval)
	err := a.assignmentFailed(missing)
	var me *MissingChangelogError
	if !errors.As(err, &me) || me.Waited != a.cfg.MaxPollInterval || !errors.As(a.fatalErr(), &me) {
		t.Fatalf("at the bound: %v (fatal %v); want a *MissingChangelogError after exactly max.poll.interval.ms", err, a.fatalErr())
	}
}
