package stream

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A periodic commit whose flush finds a write that failed with a retriable error does not commit:
// production.exception.handler answers RETRY (Kafka Streams' default under at-least-once), so the
// tasks go back to their last commit and the write's retry is what is logged. The commit is not
// one to retry after a backoff, so "commit failed; retrying" is not said of it.
func TestACommitThatRetriesAWriteIsNotACommitRetry(t *testing.T) {
	logs, opt := recordLogs()
	a, clk, c := builtAppOn(t, testConfig(), testProcs(), opt, WithClientOptions(kgo.RecordRetries(1), kgo.MetadataMinAge(10*time.Millisecond)))
	// The write is answered NOT_ENOUGH_REPLICAS (retriable), once the loop's round has started:
	// its failure is found by the commit's flush, not before the round.
	release := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return produceRefused(req.(*kmsg.ProduceRequest), kerr.NotEnoughReplicas), nil, true
	})
	tk := activeTask(t, a, tid("0", 0))
	// A wall-clock punctuation runs in the round after its check of failed writes, before its
	// commit: it lets the write's answer go.
	var once sync.Once
	id := a.mach.Schedule(tk.id, false, a.cfg.Runtime.CommitInterval, 0)
	tk.punctuators = map[uint64]Punctuator{id: func(*Context, time.Time) error {
		once.Do(func() { close(release) })
		return nil
	}}
	a.mu.Lock()
	a.produce(tk.id, &kgo.Record{Topic: repartTopc, Value: []byte("v")})
	a.mu.Unlock()
	logs.take()
	clk.t = clk.t.Add(a.cfg.Runtime.CommitInterval)
	a.between()
	m := a.Metrics()
	if a.fatalErr() != nil || m.Commits != 0 || m.FailedCommits != 1 || m.ProductionRetries != 1 {
		t.Fatalf("fatal %v, %d commits, %d failed, %d write retries; want the commit failed by the write's retry, not fatal",
			a.fatalErr(), m.Commits, m.FailedCommits, m.ProductionRetries)
	}
	var retried bool
	for _, w := range logs.warnings() {
		if strings.Contains(w, "commit failed; retrying") {
			t.Errorf("warned %q: the commit is not retried after a backoff", w)
		}
		retried = retried || strings.Contains(w, "a write failed with a retriable error")
	}
	if !retried {
		t.Error("the write's retry was not logged")
	}
}
