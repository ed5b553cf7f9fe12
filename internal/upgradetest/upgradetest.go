// Package upgradetest runs the topology upgrade procedures of docs/upgrades.md, and the wrong turn
// the runtime refuses, against a real broker with a stateful application on the stream runtime:
// two members keep a running total per customer while orders keep coming in, the procedure is
// carried out with the streams-groups tool as a user would, two members of the new version take
// over, and every customer's last total is compared with the one the procedure promises, computed
// from the orders written (never from the application's output). The integration suite runs it
// with in-memory stores, plugin/sgpebble with Pebble stores.
package upgradetest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/internal/stableoffsets"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Env is where the procedures run.
type Env struct {
	// Bootstrap is the broker's address.
	Bootstrap string
	// Tool is the path of a built streams-groups command.
	Tool string
	// Stores are the options that choose the application's store engine (none: in memory).
	Stores []stream.Option
}

// Procedure is one way through an upgrade, from docs/upgrades.md.
type Procedure struct {
	Name string
	// upgrade stops the first version's members, carries the procedure out, and starts the new
	// version's. It returns what every total must be at the end.
	upgrade func(r *run) expect
}

// expect says which orders the final totals count: all of them, or only those at or after the
// input positions the first version stopped at (its state dropped, its position kept).
type expect struct{ from map[int32]int64 }

// Procedures are the procedures of docs/upgrades.md, and the wrong turn of deleting the group alone
// (refused by the runtime, then put right as its error says).
var Procedures = []Procedure{
	{"compatible change: a rolling restart", func(r *run) expect {
		for _, slot := range []string{"a", "b"} {
			r.stop(slot)
			r.start(slot, same)
			r.waitRunning()
		}
		return expect{}
	}},
	{"changed topology, state kept: positions saved, the group deleted alone, positions put back", func(r *run) expect {
		r.stopAll()
		positions := r.export()
		_, warning := r.tool("--delete", "--group", r.app)
		if !strings.Contains(warning, "were kept: "+r.changelog(v1)) {
			r.t.Errorf("--delete did not warn of the changelog it keeps: %q", warning)
		}
		r.tool("--reset-offsets", "--group", r.app, "--from-file", positions, "--execute")
		r.startBoth(extraSource)
		return expect{}
	}},
	{"incompatible state, same topology: --to-current with the internal topics deleted", func(r *run) expect {
		r.stopAll()
		from := r.committed()
		r.tool("--reset-offsets", "--group", r.app, "--all-input-topics", "--to-current", "--execute", "--delete-all-internal-topics")
		r.waitGone(r.changelog(v1))
		r.startBoth(same)
		return expect{from: from}
	}},
	{"changed topology, state dropped: positions saved, the group and its internal topics deleted, positions put back", func(r *run) expect {
		r.stopAll()
		from := r.committed()
		positions := r.export()
		r.tool("--delete", "--group", r.app, "--delete-all-internal-topics")
		r.waitGone(r.changelog(v1))
		r.tool("--reset-offsets", "--group", r.app, "--from-file", positions, "--execute")
		r.startBoth(renamedStore)
		return expect{from: from}
	}},
	{"reprocess: --to-earliest with the internal topics deleted", func(r *run) expect {
		r.stopAll()
		r.tool("--reset-offsets", "--group", r.app, "--all-input-topics", "--to-earliest", "--execute", "--delete-all-internal-topics")
		r.waitGone(r.changelog(v1))
		r.startBoth(same)
		return expect{}
	}},
	{"reprocess: the group deleted with its internal topics", func(r *run) expect {
		r.stopAll()
		r.tool("--delete", "--group", r.app, "--delete-all-internal-topics")
		r.waitGone(r.changelog(v1))
		r.startBoth(renamedStore)
		return expect{}
	}},
	{"wrong turn: the group deleted alone is refused, then its internal topics deleted as the error says", func(r *run) expect {
		r.stopAll()
		r.tool("--delete", "--group", r.app)
		// Both members of the next start refuse the old state with no position: nothing processed.
		r.startBoth(same)
		var topics []string
		for _, slot := range []string{"a", "b"} {
			m := r.members[slot]
			err := r.wait(slot)
			var oe *stream.OrphanedStateError
			if !errors.As(err, &oe) || oe.Group != r.app || len(oe.Stores) == 0 {
				r.t.Fatalf("member %s: Run returned %v; want a *stream.OrphanedStateError for group %s", slot, err, r.app)
			}
			if n := m.app.Metrics().Processed; n != 0 {
				r.t.Errorf("member %s processed %d records before refusing", slot, n)
			}
			for _, s := range oe.Stores {
				topics = append(topics, s.Changelog.Topic)
			}
		}
		// The error's first way on: delete the internal topics too, and start over from the input.
		slices.Sort(topics)
		topics = slices.Compact(topics)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := r.adm.DeleteTopics(ctx, topics...); err != nil {
			r.t.Fatalf("deleting %v: %v", topics, err)
		}
		r.waitGone(topics...)
		r.startBoth(same)
		return expect{}
	}},
}

// The versions of the application: the first, and three new ones.
type version int

const (
	v1           version = iota
	same                 // the first version's topology again (a code change that keeps it)
	extraSource          // also reads the refunds topic: another topology, the store kept
	renamedStore         // its store renamed: another topology, and the state starts empty
)

// RunAll carries every procedure out under both guarantees, as subtests; the two guarantees of a
// procedure run in parallel (each with its own group and topics).
func RunAll(t *testing.T, env Env) {
	for _, p := range Procedures {
		t.Run(strings.ReplaceAll(p.Name, " ", "_"), func(t *testing.T) {
			for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
				t.Run(string(g), func(t *testing.T) {
					t.Parallel()
					Run(t, env, p, g)
				})
			}
		})
	}
}

// Run carries procedure p out under guarantee g.
func Run(t *testing.T, env Env, p Procedure, g config.Guarantee) {
	r := newRun(t, env, g)
	r.feed()
	r.startBoth(v1)
	r.waitProcessed(200)
	want := p.upgrade(r)
	r.waitRunning()
	r.lastRound()
	r.stopFeeding()
	r.waitCaughtUp()
	r.stopAll()
	r.check(want)
}

// run is one procedure's run.
type run struct {
	t   *testing.T
	env Env
	g   config.Guarantee
	app string
	// orders is the input, refunds the second input of the extraSource version (never written),
	// totals the output.
	orders, refunds, totals string
	cl                      *kgo.Client
	adm                     *kadm.Client

	mu     sync.Mutex
	ledger []order // every order written, in no particular order
	round  int

	logs lockedBuffer // what the members logged, shown when the run fails
	// stoppedAt holds the committed positions after each stop of every member, for the failure's
	// description.
	stoppedAt []map[int32]int64

	feedStop, feedDone chan struct{}
	members            map[string]*member
	dirs               map[string]string // each member slot's state.dir, kept across versions
}

// order is one order written: its partition and offset, customer and amount.
type order struct {
	partition int32
	offset    int64
	customer  string
	amount    int64
}

// customers is how many customers the orders are spread over.
const customers = 20

func newRun(t *testing.T, env Env, g config.Guarantee) *run {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	base := fmt.Sprintf("upgrade-%d", time.Now().UnixNano())
	r := &run{t: t, env: env, g: g, app: base + "-app", orders: base + "-orders", refunds: base + "-refunds", totals: base + "-totals",
		cl: cl, adm: kadm.NewClient(cl), members: map[string]*member{}, dirs: map[string]string{"a": t.TempDir(), "b": t.TempDir()}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.adm.CreateTopics(ctx, 2, 1, nil, r.orders, r.refunds, r.totals); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what the members logged:\n%s", r.logs.String())
		}
		r.stopFeeding()
		for slot := range r.members {
			r.stop(slot)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = r.adm.DeleteGroup(ctx, r.app)
		topics := []string{r.orders, r.refunds, r.totals, r.changelog(v1), r.changelog(renamedStore)}
		_, _ = r.adm.DeleteTopics(ctx, topics...)
	})
	return r
}

// changelog is the changelog topic of version v's store.
func (r *run) changelog(v version) string {
	return topology.Names{AppID: r.app}.ChangelogTopic(storeOf(v))
}

func storeOf(v version) string {
	if v == renamedStore {
		return "totals-v2"
	}
	return "totals"
}

// newApp builds a member of version v in slot.
func (r *run) newApp(slot string, v version) *stream.App {
	n := topology.Names{AppID: r.app}
	sources := []string{r.orders}
	if v == extraSource {
		sources = append(sources, r.refunds)
	}
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: sources,
		StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog(storeOf(v))}})
	totals := stream.KeyValue(storeOf(v), serde.String, serde.Int64)
	out := stream.Output(r.totals, serde.String, serde.Int64)
	add := stream.Typed(serde.String, serde.Int64, func(c *stream.Context, customer string, amount int64) error {
		total, _, err := totals.Get(c, customer)
		if err == nil {
			err = totals.Put(c, customer, total+amount)
		}
		if err == nil {
			err = out.Send(c, customer, total+amount)
		}
		return err
	})
	cfg := config.Default(r.app)
	cfg.BootstrapServers = []string{r.env.Bootstrap}
	cfg.StateDir = r.dirs[slot]
	cfg.RetryBackoff, cfg.RetryBackoffMax = 50*time.Millisecond, 500*time.Millisecond
	cfg.MaxPollInterval = 30 * time.Second
	cfg.Runtime.Guarantee = r.g
	cfg.Runtime.CommitInterval = 100 * time.Millisecond
	logger := slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("member", slot, "version", int(v))
	app, err := stream.New(cfg, topo, stream.Processors{"0": add}, append(slices.Clone(r.env.Stores), stream.WithLogger(logger))...)
	if err != nil {
		r.t.Fatalf("member %s: %v", slot, err)
	}
	return app
}

// member is a running member.
type member struct {
	app    *stream.App
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// start runs a member of version v in slot.
func (r *run) start(slot string, v version) {
	m := &member{app: r.newApp(slot, v), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		m.err = m.app.Run(ctx)
	}()
	r.members[slot] = m
}

func (r *run) startBoth(v version) {
	r.start("a", v)
	r.start("b", v)
}

// wait waits for slot's member to return on its own and returns Run's result.
func (r *run) wait(slot string) error {
	m := r.members[slot]
	select {
	case <-m.done:
		delete(r.members, slot)
		return m.err
	case <-time.After(time.Minute):
		r.t.Fatalf("member %s did not stop within a minute", slot)
		return nil
	}
}

// stop stops slot's member cleanly: Run must return nil.
func (r *run) stop(slot string) {
	m := r.members[slot]
	if m == nil {
		return
	}
	m.cancel()
	if err := r.wait(slot); err != nil {
		r.t.Errorf("member %s: Run returned %v after a clean stop", slot, err)
	}
}

func (r *run) stopAll() {
	r.stop("a")
	r.stop("b")
	r.stoppedAt = append(r.stoppedAt, r.committed())
}

// eventually polls cond until it holds, failing after two minutes with its last word.
func (r *run) eventually(what string, cond func() (bool, string)) {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, why := cond()
		if ok {
			return
		}
		for slot, m := range r.members {
			select {
			case <-m.done:
				r.t.Fatalf("waiting for %s: member %s stopped: %v", what, slot, m.err)
			default:
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("waiting for %s: %s", what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRunning waits until every member runs.
func (r *run) waitRunning() {
	r.eventually("the members to run", func() (bool, string) {
		for slot, m := range r.members {
			if m.app.State() != stream.Running {
				return false, fmt.Sprintf("member %s is %s", slot, m.app.State())
			}
		}
		return true, ""
	})
}

// waitProcessed waits until the members have processed at least n orders between them.
func (r *run) waitProcessed(n uint64) {
	r.eventually(fmt.Sprintf("%d orders processed", n), func() (bool, string) {
		var done uint64
		for _, m := range r.members {
			done += m.app.Metrics().Processed
		}
		return done >= n, fmt.Sprintf("%d processed", done)
	})
}

// feed writes orders until stopFeeding: ten every 20 ms, round after round over the customers.
func (r *run) feed() {
	r.feedStop, r.feedDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.feedDone)
		for {
			select {
			case <-r.feedStop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if err := r.write(10); err != nil {
				r.t.Errorf("writing orders: %v", err)
				return
			}
		}
	}()
}

// write writes n orders and records them in the ledger.
func (r *run) write(n int) error {
	r.mu.Lock()
	recs := make([]*kgo.Record, n)
	amounts := make([]int64, n)
	for i := range recs {
		k := r.round*n + i
		amounts[i] = int64(1 + k%97)
		v := binary.BigEndian.AppendUint64(nil, uint64(amounts[i]))
		recs[i] = &kgo.Record{Topic: r.orders, Key: fmt.Appendf(nil, "c%02d", k%customers), Value: v}
	}
	r.round++
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, rec := range recs {
		r.ledger = append(r.ledger, order{partition: rec.Partition, offset: rec.Offset, customer: string(rec.Key), amount: amounts[i]})
	}
	return nil
}

func (r *run) stopFeeding() {
	if r.feedStop == nil {
		return
	}
	close(r.feedStop)
	<-r.feedDone
	r.feedStop = nil
}

// lastRound writes one order for every customer after the new version runs, so that every
// customer's last total is one the new version computed.
func (r *run) lastRound() {
	if err := r.write(customers); err != nil {
		r.t.Fatalf("writing the last round: %v", err)
	}
}

// committed is the group's committed offsets on the orders, by partition.
func (r *run) committed() map[int32]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetched, err := stableoffsets.Fetch(ctx, r.adm, r.app)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		r.t.Fatalf("fetching the group's offsets: %v", err)
	}
	out := map[int32]int64{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == r.orders && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// waitCaughtUp waits until the group has committed the end of the orders.
func (r *run) waitCaughtUp() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := r.adm.ListEndOffsets(ctx, r.orders)
	if err != nil {
		r.t.Fatal(err)
	}
	r.eventually("the group to commit the end of the orders", func() (bool, string) {
		c := r.committed()
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			if c[o.Partition] < o.Offset {
				behind = append(behind, fmt.Sprintf("orders[%d] committed %d of %d", o.Partition, c[o.Partition], o.Offset))
			}
		})
		return len(behind) == 0, strings.Join(behind, "; ")
	})
}

// tool runs streams-groups with args; it must succeed. It returns its output and error output.
func (r *run) tool(args ...string) (string, string) {
	r.t.Helper()
	cmd := exec.Command(r.env.Tool, append([]string{"--bootstrap-server=" + r.env.Bootstrap}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("streams-groups %s: %v\n%s%s\nthe group's members now:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String(), r.membersNow())
	}
	return stdout.String(), stderr.String()
}

// membersNow is the group's members as the tool describes them, for a failure's description: a
// member still listed after its clean stop did not leave.
func (r *run) membersNow() string {
	out, err := exec.Command(r.env.Tool, "--bootstrap-server="+r.env.Bootstrap, "--describe", "--group", r.app, "--members", "--verbose").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(describe failed: %v) %s", err, out)
	}
	return string(out)
}

// export saves the group's input positions to a file, as docs/upgrades.md does, and returns its path.
func (r *run) export() string {
	out, _ := r.tool("--reset-offsets", "--group", r.app, "--all-input-topics", "--to-current", "--dry-run", "--export")
	path := r.t.TempDir() + "/positions.csv"
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return path
}

// waitGone waits until none of topics exists.
func (r *run) waitGone(topics ...string) {
	r.eventually(fmt.Sprintf("%v to be deleted", topics), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		listed, err := r.adm.ListTopics(ctx, topics...)
		if err != nil {
			return false, err.Error()
		}
		for _, t := range topics {
			if listed.Has(t) {
				return false, t + " still exists"
			}
		}
		return true, ""
	})
}

// check compares every customer's last total in the output with the sum of the orders want counts.
func (r *run) check(want expect) {
	r.mu.Lock()
	expected := map[string]int64{}
	for _, o := range r.ledger {
		if from, ok := want.from[o.partition]; ok && o.offset < from {
			continue // processed by the first version, whose state was dropped
		}
		expected[o.customer] += o.amount
	}
	r.mu.Unlock()
	got := r.lastTotals()
	var wrong []string
	for c, total := range expected {
		if got[c] != total {
			// Where the customer's orders are, and what they sum to from each stop's position on.
			var part int32
			var after []int64
			r.mu.Lock()
			for _, o := range r.ledger {
				if o.customer == c {
					part = o.partition
				}
			}
			for _, at := range r.stoppedAt {
				var sum int64
				for _, o := range r.ledger {
					if o.customer == c && o.offset >= at[o.partition] {
						sum += o.amount
					}
				}
				after = append(after, sum)
			}
			r.mu.Unlock()
			wrong = append(wrong, fmt.Sprintf("%s (orders[%d]): %d, want %d; the orders from each stop's position on sum to %v (positions %v)",
				c, part, got[c], total, after, r.stoppedAt))
		}
	}
	slices.Sort(wrong)
	if len(wrong) > 0 {
		r.t.Fatalf("%d of %d totals wrong (%s):\n%s", len(wrong), len(expected), r.g, strings.Join(wrong, "\n"))
	}
}

// lastTotals reads the output to its end as a read_committed consumer and returns each customer's
// last total. The members have stopped cleanly, so no transaction is open.
func (r *run) lastTotals() map[string]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := r.adm.ListEndOffsets(ctx, r.totals)
	if err != nil {
		r.t.Fatal(err)
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.env.Bootstrap), kgo.ConsumeTopics(r.totals),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]int64{}
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.t.Fatalf("reading %s: %v (left %v)", r.totals, ctx.Err(), remaining)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if !rec.Attrs.IsControl() {
				out[string(rec.Key)] = int64(binary.BigEndian.Uint64(rec.Value))
			}
			if end, ok := remaining[rec.Partition]; ok && rec.Offset+1 >= end {
				delete(remaining, rec.Partition)
			}
		})
	}
	return out
}

// lockedBuffer is a buffer several members log to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
