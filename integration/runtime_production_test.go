package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/stream"
)

// TestRuntimeRetriesWritesThatFailRetriably: under at-least-once, writes that fail with a
// retriable error past delivery.timeout.ms (3 s here; 2 minutes by default) do not stop the
// application: Kafka Streams' default production.exception.handler answers RETRY, the tasks go
// back to their last commit and process again. A proxy in front of the broker answers every write
// to the output topic with NOT_ENOUGH_REPLICAS (retriable) until the test stops it; the app keeps
// running and retrying, and once writes are taken it catches up with no input missing from the
// counts (at-least-once may count some twice).
func TestRuntimeRetriesWritesThatFailRetriably(t *testing.T) {
	s := newRTSetup(t, 1)
	p := newProduceRefusingProxy(t, s.b, s.output)
	p.refusing.Store(true)
	a := s.start(t, "a", rtOpts{cfg: func(c *config.Config) { c.Runtime.DeliveryTimeout = 3 * time.Second },
		opts: []stream.Option{stream.WithClientOptions(proxyDialer(t, s.b, p))}})
	a.runningWith(t, s.all)
	want := map[string]int64{}
	produceValues(t, s.b, s.input, keyed(500, 10, 0, want)...)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		if done, err := a.returned(); done {
			t.Fatalf("the app stopped on a retriable write failure: %v", err)
		}
		n := a.app.Metrics().ProductionRetries
		return n >= 2, fmt.Sprintf("%d production retries (%d answers refused); metrics %+v", n, p.refused.Load(), a.app.Metrics())
	})
	p.refusing.Store(false)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		if done, err := a.returned(); done {
			t.Fatalf("the app stopped: %v", err)
		}
		return caughtUp(t, s.b.Admin(t), s.group, s.input)
	})
	a.stopClean(t)
	got := readCounts(t, s.b, s.output)
	for k, n := range want {
		seq := got[k]
		if len(seq) == 0 || seq[len(seq)-1] < n {
			t.Errorf("%s: counts %v; the last is below the %d inputs: records were lost", k, seq, n)
		}
	}
	t.Logf("production retries: %d; write answers refused: %d", a.app.Metrics().ProductionRetries, p.refused.Load())
}
