package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
)

// TestRuntimeRetriesWritesAfterAnOutage: under at-least-once, writes that fail because the brokers
// were unreachable for longer than delivery.timeout.ms (3 s here; 2 minutes by default) do not stop
// the application: Kafka Streams' default production.exception.handler answers RETRY, the tasks go
// back to their last commit and process again once the brokers answer. The member's connections
// go through a proxy that is cut for 8 s while a slow processor works through a backlog; the app
// keeps running, and afterwards no input is missing from the counts (at-least-once may count some
// twice).
func TestRuntimeRetriesWritesAfterAnOutage(t *testing.T) {
	s := newRTSetup(t, 1)
	groupSession(t, s.b, s.group, 30000) // the member outlives the cut
	p := newResetProxy(t, s.b.Bootstrap)
	count := countTo(s.output)
	slow := stream.Typed(serde.String, serde.String, func(c *stream.Context, k, v string) error {
		time.Sleep(2 * time.Millisecond) // the workload: a backlog is being processed when the cut comes
		return count(c, k, v)
	})
	a := s.start(t, "a", rtOpts{proc: slow, cfg: func(c *config.Config) { c.Runtime.DeliveryTimeout = 3 * time.Second },
		opts: []stream.Option{stream.WithClientOptions(proxyDialer(t, s.b, p))}})
	a.runningWith(t, s.all)
	want := map[string]int64{}
	produceValues(t, s.b, s.input, keyed(3000, 10, 0, want)...)
	Eventually(t, settle, func() (bool, string) {
		m := a.app.Metrics()
		return m.Processed > 200, fmt.Sprintf("%d processed", m.Processed)
	})
	p.SetDown(true)
	Eventually(t, settle, func() (bool, string) {
		if done, err := a.returned(); done {
			t.Fatalf("the app stopped during the outage: %v", err)
		}
		n := a.app.Metrics().ProductionRetries
		return n > 0, fmt.Sprintf("%d production retries: no write has failed yet", n)
	})
	time.Sleep(5 * time.Second) // the outage goes on: part of the fault, not an assertion
	p.SetDown(false)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		if done, err := a.returned(); done {
			t.Fatalf("the app stopped after the outage: %v", err)
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
	t.Logf("production retries: %d", a.app.Metrics().ProductionRetries)
}
