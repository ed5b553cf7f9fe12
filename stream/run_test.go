package stream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/membership"
)

func TestRunFailsWhenTheClientCannotBeBuilt(t *testing.T) {
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	var changes []State
	a, _ := newTestApp(t, cfg, testProcs(), WithClientOptions(kgo.BrokerMaxWriteBytes(1)),
		WithStateListener(func(_, to State) { changes = append(changes, to) }))
	err := a.Run(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "stream: building the client: ") {
		t.Fatalf("got %v", err)
	}
	// As Kafka Streams: REBALANCING at start, then PENDING_ERROR and ERROR.
	if a.State() != Error || fmt.Sprint(changes) != "[REBALANCING PENDING_ERROR ERROR]" {
		t.Errorf("state %v, changes %v", a.State(), changes)
	}
	// The state.dir lock was given back.
	l, err := lockDir(filepath.Join(cfg.StateDir, testApp))
	mustNotErr(t, err)
	l.release()
}

func TestRunFailsOnALockedStateDir(t *testing.T) {
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	dir := filepath.Join(cfg.StateDir, testApp)
	mustNotErr(t, os.MkdirAll(dir, 0o755))
	l, err := lockDir(dir)
	mustNotErr(t, err)
	defer l.release()
	a, _ := newTestApp(t, cfg, testProcs())
	var le *LockError
	if err := a.Run(context.Background()); !errors.As(err, &le) || a.State() != Error {
		t.Fatalf("got %v in %v", err, a.State())
	}
}

func TestBuildWiresOptions(t *testing.T) {
	type hook struct{}
	a, _ := builtApp(t, testProcs(), WithHooks(hook{}), WithClientOptions(kgo.ClientID("mine")))
	if len(a.o.hooks) != 1 || len(a.o.client) != 1 || a.mgr == nil || a.cons == nil || a.commits == nil || a.offsets == nil {
		t.Fatal("pieces missing")
	}
	// The committer is bound to the member: a commit is fenced by the member's tasks, not refused.
	err := a.commits.Commit(context.Background(), commit.Offsets{{Topic: "in", Partition: 0}: 1})
	if err == nil || errors.Is(err, commit.ErrNotBound) {
		t.Errorf("a commit with no tasks owned: %v", err)
	}
	if s := a.Stats(); s.At.IsZero() || s.HeartbeatsSent != 0 {
		t.Errorf("the member's stats once it is built: %+v", s)
	}
}

func TestLoopStopsWhenTheClientCloses(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	a.cl.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	a.runCtx, a.cancelRun = ctx, cancel
	a.loop(ctx)
	if !errors.Is(a.fatalErr(), consume.ErrClosed) || !errors.Is(context.Cause(ctx), consume.ErrClosed) {
		t.Fatalf("fatal %v", a.fatalErr())
	}
}

func TestLoopRunsBetweenPollsUntilItsContextEnds(t *testing.T) {
	a, clk := builtApp(t, testProcs())
	ctx, cancel := context.WithCancelCause(context.Background())
	a.runCtx, a.cancelRun = ctx, cancel
	calls := 0
	a.now = func() time.Time {
		calls++
		if calls == 2 {
			cancel(context.Canceled)
		}
		return clk.t
	}
	a.loop(ctx)
	if calls != 2 || a.fatalErr() != nil {
		t.Fatalf("between ran %d times, fatal %v", calls, a.fatalErr())
	}
	if m := a.Metrics(); m.Polls != 2 || m.PollTime <= 0 {
		t.Fatalf("%d polls in %v; want the two before each between, timed", m.Polls, m.PollTime)
	}
	// Ended already: nothing runs.
	a.loop(ctx)
	if calls != 2 {
		t.Fatal("the loop ran with its context ended")
	}
}

func TestBuildTunesTheClient(t *testing.T) {
	a, _ := builtApp(t, testProcs())
	want := []struct {
		opt  any
		name string
		v    any
	}{
		{kgo.ClientID, "client.id", testApp},
		{kgo.ProducerLinger, "linger", 5 * time.Millisecond},
		{kgo.MaxConcurrentFetches, "concurrent fetches", 1},
		{kgo.FetchMaxBytes, "fetch bytes", int32(256 << 10)},
		{kgo.FetchMaxPartitionBytes, "partition bytes", int32(128 << 10)},
		{kgo.FetchMaxWait, "fetch wait", 200 * time.Millisecond},
		{kgo.MaxBufferedBytes, "buffered bytes", int64(16 << 20)},
		{kgo.RecordDeliveryTimeout, "no delivery timeout counted from the input's timestamp", time.Duration(0)},
		{kgo.ProducerBatchMaxBytes, "Kafka's max.request.size", int32(1 << 20)},
	}
	for _, w := range want {
		if got := a.cl.OptValue(w.opt); got != w.v {
			t.Errorf("%s: %v (%T), want %v (%T)", w.name, got, got, w.v, w.v)
		}
	}
	// client.id names the clients when set; poll.ms sets the fetch wait (twice the poll); under
	// exactly-once the producer carries transaction.timeout.ms.
	cfg := testConfig()
	cfg.ClientID, cfg.Runtime.PollInterval = "orders-eu", 50*time.Millisecond
	c, _ := builtAppWith(t, cfg, testProcs())
	if got := c.cl.OptValue(kgo.ClientID); got != "orders-eu" {
		t.Errorf("client.id=orders-eu: the client is %v", got)
	}
	if got := c.cl.OptValue(kgo.FetchMaxWait); got != 100*time.Millisecond {
		t.Errorf("poll.ms=50: fetch wait %v, want 100ms", got)
	}
	cfg = testConfig()
	cfg.Runtime.Guarantee, cfg.Runtime.CommitInterval, cfg.Runtime.TransactionTimeout = config.ExactlyOnceV2, time.Second, 25*time.Second
	e, _ := builtAppWith(t, cfg, testProcs())
	if got := e.producer().OptValue(kgo.TransactionTimeout); got != 25*time.Second {
		t.Errorf("transaction.timeout.ms=25000: the producer's is %v", got)
	}
	if got := e.producer().OptValue(kgo.MetadataMinAge); got != 250*time.Millisecond {
		t.Errorf("the transactional producer's metadata min age is %v; want 250ms (CONCURRENT_TRANSACTIONS retries wait for it)", got)
	}
	e.producer().Close()
	// The caller's options come last, so they win.
	b, _ := builtApp(t, testProcs(), WithClientOptions(kgo.ProducerLinger(time.Second)))
	if got := b.cl.OptValue(kgo.ProducerLinger); got != time.Second {
		t.Errorf("a caller's linger: %v", got)
	}
}

func TestRunStopsOnTheMembersFatalError(t *testing.T) {
	// A kfake cluster does not know StreamsGroupHeartbeat: the member's first heartbeat is fatal.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in", repartTopc, countsLog, sumsLog))
	mustNotErr(t, err)
	defer c.Close()
	cfg := testConfig()
	cfg.BootstrapServers = c.ListenAddrs()
	cfg.StateDir = t.TempDir()
	var states []State
	hook := &stateHook{}
	a, _ := newTestApp(t, cfg, testProcs(), WithStateListener(func(_, to State) { states = append(states, to) }), WithHooks(hook))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = a.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "StreamsGroupHeartbeat") || a.fatalErr() != err {
		t.Fatalf("Run: %v", err)
	}
	if fmt.Sprint(states) != "[REBALANCING PENDING_ERROR ERROR]" {
		t.Errorf("states %v", states)
	}
	if hook.calls.Load() == 0 {
		t.Error("the member was not given the hooks")
	}
	if a.cfg.ClientID != "" || len(a.proc.all()) != 1 {
		t.Errorf("one thread: client ID %q (want client.id as set: none), %d threads", a.cfg.ClientID, len(a.proc.all()))
	}
	l, err := lockDir(filepath.Join(cfg.StateDir, testApp))
	mustNotErr(t, err)
	l.release()
	if err := a.Run(ctx); err == nil {
		t.Error("a second Run")
	}
}

// stateHook counts the member's state changes (membership.HookStateChanged).
type stateHook struct{ calls atomic.Int32 }

func (h *stateHook) OnStateChanged(membership.State, int32) { h.calls.Add(1) }
