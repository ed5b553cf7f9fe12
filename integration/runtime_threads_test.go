package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// membersByProcess is what the broker's description of the group says: for each process ID, the active
// tasks of each of its members (by member ID).
func membersByProcess(tr *transport.Transport) (map[string]map[string]tasks.Set, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := tr.Describe(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]tasks.Set{}
	for _, m := range g.Members {
		if out[m.ProcessID] == nil {
			out[m.ProcessID] = map[string]tasks.Set{}
		}
		out[m.ProcessID][m.MemberID] = tasks.FromKmsg(m.Assignment.ActiveTasks)
	}
	return out, nil
}

// TestRuntimeStreamThreads: num.stream.threads=2 under exactly-once, as Kafka Streams runs threads
// under streams groups. Process a runs two members of the group (one process ID, two member IDs,
// transactional.ids ending in -1 and -2) that split its tasks; process b (one thread) joins, takes
// tasks from a's threads, and leaves again, its tasks going back to them. Throughout, input flows;
// at the end a's stores (queried across both its threads) hold every key's count and the committed
// output holds every count once, in order.
func TestRuntimeStreamThreads(t *testing.T) {
	s := newEOSSetup(t, 4)
	dirA := t.TempDir()
	// The process ID a will find in its state.dir (resolved before a starts, so that only one is
	// ever written there).
	cfgA := config.Default(s.group)
	cfgA.StateDir = dirA
	pidA, err := cfgA.ResolveProcessID()
	if err != nil {
		t.Fatal(err)
	}
	a := s.start(t, "a", rtOpts{cfg: eosCfg(dirA, func(c *config.Config) { c.Runtime.NumStreamThreads = 2 })})
	f := feed(t, s.b.Client(t), s.input, 16, 40000)
	describer := transport.New(s.b.Client(t), s.group, 5*time.Second, heartbeat.Backoff{Min: 50 * time.Millisecond, Max: time.Second})

	split := func(want int) (bool, string) {
		if done, err := a.returned(); done {
			t.Fatalf("a: Run returned %v", err)
		}
		byProc, err := membersByProcess(describer)
		if err != nil {
			return false, err.Error()
		}
		mine := byProc[pidA]
		union := tasks.NewSet()
		busy := 0
		for _, act := range mine {
			union = union.Union(act)
			if act.Len() > 0 {
				busy++
			}
		}
		return len(mine) == 2 && busy == 2 && union.Len() == want && a.app.State() == stream.Running,
			fmt.Sprintf("process a's members %v (state %s); all: %v", mine, a.app.State(), byProc)
	}
	Eventually(t, settle, func() (bool, string) { return split(4) })
	f.waitMore(t, 400)

	// Two transactional producers, one per thread, named as Kafka Streams names them.
	Eventually(t, settle, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		listed, err := s.b.Admin(t).ListTransactions(ctx, nil, nil)
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, id := range listed.TransactionalIDs() {
			if strings.HasPrefix(id, s.group+"-"+pidA) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		want := []string{s.group + "-" + pidA + "-1", s.group + "-" + pidA + "-2"}
		return slices.Equal(ids, want), fmt.Sprintf("transactional IDs of process a: %v, want %v", ids, want)
	})

	b := s.startEOS(t, "b")
	Eventually(t, settle, func() (bool, string) {
		ok, why := split(4 - b.active().Len())
		return ok && b.active().Len() > 0 && b.app.State() == stream.Running, fmt.Sprintf("b holds %v; %s", b.active(), why)
	})
	f.waitMore(t, 400)
	b.stopClean(t)
	Eventually(t, settle, func() (bool, string) { return split(4) })
	f.waitMore(t, 400)
	want := f.stop(t)
	s.waitCaughtUp(t)
	// Every record was processed (once, or again after a rebalance) by a's threads or b.
	if pa, pb := a.app.Metrics().Processed, b.app.Metrics().Processed; pa+pb < uint64(f.written()) {
		t.Errorf("a's metrics count %d processed records over its threads and b's %d; together they processed all %d at least once", pa, pb, f.written())
	}
	s.finish(t, want, a)
}
