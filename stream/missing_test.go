package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
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
