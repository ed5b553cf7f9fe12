package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/topology"
)

// countingApp is a stateful counting application (a running count per key, with a changelog) for
// the upgrade procedures of docs/upgrades.md: 10 keys over a 2-partition input.
type countingApp struct {
	b                    *Broker
	group, input, output string
	changelog            string
	topo                 *topology.Topology
	seq                  atomic.Int64
	produced             int
}

func newCountingApp(t *testing.T, b *Broker) *countingApp {
	t.Helper()
	a := &countingApp{b: b, group: Name(t, "app"), input: Name(t, "in"), output: Name(t, "out")}
	a.useStore(t, "counts")
	b.CreateTopic(t, a.input, 2)
	b.CreateTopic(t, a.output, 2)
	b.DeleteGroupAtEnd(t, a.group)
	return a
}

// useStore makes the app's topology count in the store named store (a new version that renames its
// store has another changelog, so another topology).
func (a *countingApp) useStore(t *testing.T, store string) {
	t.Helper()
	n := topology.Names{AppID: a.group}
	a.changelog = n.ChangelogTopic(store)
	a.topo = topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{a.input},
		StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog(store)}})
	adm, changelog := a.b.Admin(t), a.changelog
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, changelog)
	})
}

// produce writes perKey records for each of the 10 keys.
func (a *countingApp) produce(t *testing.T, perKey int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range perKey {
		for k := range 10 {
			recs = append(recs, &kgo.Record{Topic: a.input, Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	if err := a.b.Client(t).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	a.produced += perKey * 10
}

// run starts a counter of the app (topology epoch epoch), waits until it has processed process
// input records, checks that every key's count is want, and stops it (it commits and leaves).
func (a *countingApp) run(t *testing.T, name string, epoch int32, process int, want int64) {
	t.Helper()
	c := startCounter(t, a.b, a.group, name, a.topo, a.output, &a.seq, counterOpts{cfg: func(cfg *config.Config) { cfg.TopologyEpoch = epoch }})
	processed := func() int {
		n := 0
		for _, h := range c.log() {
			if !h.restore {
				n++
			}
		}
		return n
	}
	Eventually(t, 2*settle, func() (bool, string) {
		if errs := c.errors(); len(errs) > 0 {
			return false, strings.Join(errs, "; ")
		}
		return processed() >= process, fmt.Sprintf("%s processed %d of %d records", name, processed(), process)
	})
	// The counts before the close: revoked tasks drop their stores.
	got := map[string]int64{}
	c.mu.Lock()
	for _, st := range c.stores {
		for k, v := range st {
			got[k] = v
		}
	}
	c.mu.Unlock()
	c.close(t)
	if n := processed(); n != process {
		t.Fatalf("%s processed %d records, want %d", name, n, process)
	}
	var wrong []string
	for k := range 10 {
		key := fmt.Sprintf("k%d", k)
		if got[key] != want {
			wrong = append(wrong, fmt.Sprintf("%s=%d", key, got[key]))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%s: %d of 10 counts are not %d: %s", name, len(wrong), want, strings.Join(wrong, " "))
	}
}

// TestCLIUpgradeProcedures runs the three procedures of docs/upgrades.md against a stateful
// counting app and checks every count afterwards; and shows the doubling that --delete alone
// causes, which --delete-all-internal-topics prevents.
func TestCLIUpgradeProcedures(t *testing.T) {
	b := Get(t)
	b.RequireStreams44(t)
	bs := "--bootstrap-server=" + b.Bootstrap
	ours := func(args ...string) {
		t.Helper()
		if out, errOut, code := tool(t, b, append([]string{bs}, args...)...); code != 0 {
			t.Fatalf("streams-groups %v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	gone := func(a *countingApp) {
		t.Helper()
		Eventually(t, settle, func() (bool, string) {
			return !topicsExist(t, b, a.changelog)[a.changelog], a.changelog + " still exists"
		})
	}

	t.Run("compatible change keeps offsets and state", func(t *testing.T) {
		a := newCountingApp(t, b)
		a.produce(t, 10)
		a.run(t, "v1", 0, 100, 10)
		// The new version's topology is the group's (same topology ID): a rolling restart, nothing to
		// delete. It restores the counts and goes on from the committed offsets.
		a.produce(t, 5)
		a.run(t, "v2", 0, 50, 15)
	})

	t.Run("incompatible state keeps the input position", func(t *testing.T) {
		a := newCountingApp(t, b)
		a.produce(t, 10)
		a.run(t, "v1", 0, 100, 10)
		ours("--reset-offsets", "--group", a.group, "--all-input-topics", "--to-current", "--execute", "--delete-all-internal-topics")
		gone(a)
		a.produce(t, 5)
		// The same topology, its state gone: it counts only what comes after the committed position.
		a.run(t, "v2", 0, 50, 5)
	})

	t.Run("changed topology keeps the input position", func(t *testing.T) {
		a := newCountingApp(t, b)
		a.produce(t, 10)
		a.run(t, "v1", 0, 100, 10)
		// Brokers up to 4.4 keep a group's first topology, even when the group is empty: save the
		// positions, delete the group and its internal topics, put the positions back.
		positions, errOut, code := tool(t, b, bs, "--reset-offsets", "--group", a.group, "--all-input-topics", "--to-current", "--dry-run", "--export")
		if code != 0 {
			t.Fatalf("export: exit %d %s", code, errOut)
		}
		file := filepath.Join(t.TempDir(), "positions.csv")
		if err := os.WriteFile(file, []byte(positions), 0o644); err != nil {
			t.Fatal(err)
		}
		ours("--delete", "--group", a.group, "--delete-all-internal-topics")
		gone(a)
		ours("--reset-offsets", "--group", a.group, "--from-file", file, "--execute")
		a.produce(t, 5)
		a.useStore(t, "counts-v2")
		a.run(t, "v2", 1, 50, 5)
	})

	t.Run("reprocess from scratch", func(t *testing.T) {
		a := newCountingApp(t, b)
		a.produce(t, 10)
		a.run(t, "v1", 0, 100, 10)
		ours("--reset-offsets", "--group", a.group, "--all-input-topics", "--to-earliest", "--execute", "--delete-all-internal-topics")
		gone(a)
		a.run(t, "v2", 0, 100, 10)
	})

	t.Run("reprocess by deleting the group and its internal topics", func(t *testing.T) {
		a := newCountingApp(t, b)
		a.produce(t, 10)
		a.run(t, "v1", 0, 100, 10)
		out, errOut, code := tool(t, b, bs, "--delete", "--group", a.group, "--delete-all-internal-topics")
		if code != 0 || strings.Contains(errOut, "Warning") {
			t.Fatalf("--delete --delete-all-internal-topics: exit %d, warned\n%s%s", code, out, errOut)
		}
		gone(a)
		a.run(t, "v2", 0, 100, 10)
	})

	t.Run("delete alone doubles every count", func(t *testing.T) {
		a := newCountingApp(t, b)
		a.produce(t, 10)
		a.run(t, "v1", 0, 100, 10)
		out, errOut, code := tool(t, b, bs, "--delete", "--group", a.group)
		if code != 0 {
			t.Fatalf("--delete: exit %d\n%s%s", code, out, errOut)
		}
		// The tool says what stays behind and what the next start would do with it.
		for _, want := range []string{"Warning: the internal topics of streams group '" + a.group + "' were kept: " + a.changelog + ".",
			"doubling every count", "--from-file positions.csv", "docs/upgrades.md"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("--delete's warning does not say %q:\n%s", want, errOut)
			}
		}
		// A hand-written member (no runtime to refuse it) restores 10 and reads the input again.
		a.run(t, "v2", 0, 100, 20)
	})
}
