package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/topology"
)

// These tests run against a real Kafka broker: the one STREAMSGROUP_BOOTSTRAP names (set by
// scripts/with-broker.sh, as `make test` does), or one started here with the repository's
// integration/kafka/broker.sh and stopped at the end. They never skip for want of a broker.

var bootstrap string

func TestMain(m *testing.M) {
	bootstrap = os.Getenv("STREAMSGROUP_BOOTSTRAP")
	if bootstrap != "" {
		os.Exit(m.Run())
	}
	runDir, err := os.MkdirTemp("", "sgpebble-broker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "totals:", err)
		os.Exit(1)
	}
	script := filepath.Join("..", "..", "..", "..", "integration", "kafka", "broker.sh")
	broker := func(cmd string) ([]byte, error) {
		c := exec.Command("bash", script, cmd)
		c.Env = append(os.Environ(), "STREAMSGROUP_RUN_DIR="+runDir)
		return c.CombinedOutput()
	}
	if out, err := broker("start"); err != nil {
		fmt.Fprintf(os.Stderr, "totals: no Kafka broker (set STREAMSGROUP_BOOTSTRAP, or let broker.sh start one): %v\n%s", err, out)
		os.Exit(1)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "bootstrap"))
	bootstrap = strings.TrimSpace(string(b))
	code := 1
	if err == nil {
		code = m.Run()
	}
	if out, err := broker("stop"); err != nil {
		fmt.Fprintf(os.Stderr, "totals: stopping the broker: %v\n%s", err, out)
	}
	os.RemoveAll(runDir)
	os.Exit(code)
}

func client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freshTopics deletes the example's fixed topics (and the group's changelog) and creates them anew.
func freshTopics(t *testing.T, adm *kadm.Client, changelog string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = adm.DeleteTopics(ctx, "orders", "order-totals", changelog)
	eventually(t, time.Minute, func() (bool, string) {
		resp, err := adm.CreateTopics(ctx, 4, 1, nil, "orders", "order-totals")
		if err != nil {
			return false, err.Error()
		}
		for _, r := range resp {
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				return false, r.Err.Error()
			}
			if errors.Is(r.Err, kerr.TopicAlreadyExists) {
				_, _ = adm.DeleteTopics(ctx, r.Topic) // still being deleted from before
				return false, "topic " + r.Topic + " still exists"
			}
		}
		return true, ""
	})
}

// setGroupConfig sets a streams group config (IncrementalAlterConfigs on a GROUP resource).
func setGroupConfig(t *testing.T, cl *kgo.Client, group, key, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceType(32), group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, &value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err == nil && len(resp.Resources) > 0 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("setting %s=%s on %s: %v", key, value, group, err)
	}
}

// orders produces n orders spread over customers, amount i%7+1, and returns the expected totals and
// order counts.
func orders(t *testing.T, cl *kgo.Client, from, n int) (map[string]int64, map[string]int) {
	t.Helper()
	want, count := map[string]int64{}, map[string]int{}
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		c, amount := fmt.Sprintf("c%02d", i%23), int64(i%7+1)
		v, _ := serde.Int64.Encode(amount)
		recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(c), Value: v})
		want[c] += amount
		count[c]++
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return want, count
}

// outputTotals reads order-totals with read_committed to its end: every total written, by customer.
func outputTotals(t *testing.T, adm *kadm.Client) map[string][]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "order-totals")
	if err != nil {
		t.Fatal(err)
	}
	r := client(t, kgo.ConsumeTopics("order-totals"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	got := map[string][]int64{}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	for len(left) > 0 {
		fs := r.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading order-totals: %v (partitions left %v)", ctx.Err(), left)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if !rec.Attrs.IsControl() {
				v := int64(binary.BigEndian.Uint64(rec.Value))
				got[string(rec.Key)] = append(got[string(rec.Key)], v)
			}
			if end, ok := left[rec.Partition]; ok && rec.Offset+1 >= end {
				delete(left, rec.Partition)
			}
		})
	}
	return got
}

// caughtUp reports whether the group committed every partition of orders at its end.
func caughtUp(adm *kadm.Client, group string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		return false, err.Error()
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, err.Error()
	}
	var behind []string
	ends.Each(func(o kadm.ListedOffset) {
		if c, ok := committed.Lookup("orders", o.Partition); !ok || c.At < o.Offset {
			behind = append(behind, fmt.Sprintf("orders[%d] committed %v of %d", o.Partition, c.At, o.Offset))
		}
	})
	return len(behind) == 0, strings.Join(behind, "; ")
}

// ledger is what the orders written so far must total: per customer, the total and the number of
// orders (under exactly-once, each order is one update of its customer's total).
type ledger struct {
	mu    sync.Mutex
	want  map[string]int64
	count map[string]int
}

func newLedger() *ledger { return &ledger{want: map[string]int64{}, count: map[string]int{}} }

// produce writes the orders from to from+n-1 and adds them.
func (l *ledger) produce(t *testing.T, cl *kgo.Client, from, n int) {
	t.Helper()
	w, c := orders(t, cl, from, n)
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range w {
		l.want[k] += v
		l.count[k] += c[k]
	}
}

// buildTotals builds the example into the test's temporary directory and returns the binary.
func buildTotals(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "totals")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	return bin
}

// member is a running totals process.
type member struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

func start(t *testing.T, bin, logDir, name string, keys ...string) *member {
	t.Helper()
	f, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	m := &member{cmd: exec.Command(bin, keys...), log: f, done: make(chan error, 1)}
	m.cmd.Stdout, m.cmd.Stderr = f, f
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.done <- m.cmd.Wait(); f.Close() }()
	t.Cleanup(func() { m.stop(syscall.SIGKILL) })
	return m
}

// stop sends sig and waits for the process to end; it returns how it ended.
func (m *member) stop(sig syscall.Signal) error {
	if m.cmd.ProcessState != nil {
		return nil
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case err := <-m.done:
		m.done <- err
		return err
	case <-time.After(time.Minute):
		_ = m.cmd.Process.Kill()
		return fmt.Errorf("did not stop within a minute")
	}
}

// TestTotalsSurviveSIGTERMAndSIGKILL runs two totals members with a standby replica while orders
// come in, stops one with SIGTERM (it commits and leaves; the other takes over at once) and kills
// the other with SIGKILL, restarting each on its own state.dir. Under exactly_once_v2 every total is
// exact and every update visible once; under at_least_once no order is lost, and the orders counted
// twice (the records a SIGKILL replays) are counted and reported, as at-least-once allows.
func TestTotalsSurviveSIGTERMAndSIGKILL(t *testing.T) {
	bin := buildTotals(t)
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) {
			group := fmt.Sprintf("totals-%s-%d", strings.ReplaceAll(guarantee, "_", ""), time.Now().UnixNano())
			cl := client(t)
			adm := kadm.NewClient(cl)
			freshTopics(t, adm, topology.Names{AppID: group}.ChangelogTopic("totals"))
			setGroupConfig(t, cl, group, "streams.num.standby.replicas", "1")
			dir := t.TempDir()
			keys := func(name string) []string {
				return []string{"bootstrap.servers=" + bootstrap, "application.id=" + group, "processing.guarantee=" + guarantee,
					"commit.interval.ms=200", "state.dir=" + filepath.Join(dir, name)}
			}
			a := start(t, bin, dir, "a", keys("a")...)
			b := start(t, bin, dir, "b", keys("b")...)

			l := newLedger()
			want, count := l.want, l.count
			produce := func(from, n int) { l.produce(t, cl, from, n) }
			produce(0, 2000)
			eventually(t, 2*time.Minute, func() (bool, string) { return caughtUp(adm, group) })
			if err := a.stop(syscall.SIGTERM); err != nil {
				t.Fatalf("member a after SIGTERM: %v (log in %s)", err, dir)
			}
			produce(2000, 2000)
			a = start(t, bin, dir, "a2", keys("a")...)
			produce(4000, 2000)
			time.Sleep(300 * time.Millisecond) // let b be mid-way through the new orders when it dies
			_ = b.stop(syscall.SIGKILL)
			produce(6000, 2000)
			b = start(t, bin, dir, "b2", keys("b")...)
			produce(8000, 2000)
			eventually(t, 3*time.Minute, func() (bool, string) { return caughtUp(adm, group) })

			got := outputTotals(t, adm)
			var wrong []string
			doubled := 0
			for c, total := range want {
				updates := got[c]
				if len(updates) == 0 {
					wrong = append(wrong, fmt.Sprintf("%s: no total", c))
					continue
				}
				last := updates[len(updates)-1]
				switch {
				case guarantee == "exactly_once_v2" && (last != total || len(updates) != count[c]):
					wrong = append(wrong, fmt.Sprintf("%s: total %d after %d updates, want %d after %d", c, last, len(updates), total, count[c]))
				case last < total:
					wrong = append(wrong, fmt.Sprintf("%s: total %d < %d: orders lost", c, last, total))
				case last > total:
					doubled++
				}
			}
			if len(wrong) > 0 {
				t.Fatalf("%d of %d totals wrong (logs in %s):\n%s", len(wrong), len(want), dir, strings.Join(wrong, "\n"))
			}
			t.Logf("%s: %d totals checked; %d counted some order twice after the SIGKILL", guarantee, len(want), doubled)
			_ = a.stop(syscall.SIGTERM)
			_ = b.stop(syscall.SIGTERM)
		})
	}
}

// TestRestartRestoresOnlyAfterTheCheckpoint: a Pebble-backed member that restarts on its state.dir
// restores only the changelog records written after its checkpoint. Member A totals 300 orders and
// stops; member B (another state.dir) totals 200 more and stops; A restarts: it restores exactly the
// 200 changelog records B wrote, not the 500 of the whole changelog, and its totals go on exactly.
func TestRestartRestoresOnlyAfterTheCheckpoint(t *testing.T) {
	group := fmt.Sprintf("totals-restart-%d", time.Now().UnixNano())
	cl := client(t)
	adm := kadm.NewClient(cl)
	freshTopics(t, adm, topology.Names{AppID: group}.ChangelogTopic("totals"))
	dir := t.TempDir()
	want := map[string]int64{}
	add := func(w map[string]int64, _ map[string]int) {
		for k, v := range w {
			want[k] += v
		}
	}
	run := func(name string, restored *int) {
		t.Helper()
		runTotals(t, adm, group, filepath.Join(dir, name), restored)
	}
	var restoredA, restoredB, restoredA2 int
	add(orders(t, cl, 0, 300))
	run("a", &restoredA)
	add(orders(t, cl, 300, 200))
	run("b", &restoredB)
	run("a", &restoredA2)
	if restoredA != 0 || restoredB != 300 || restoredA2 != 200 {
		t.Fatalf("changelog records restored: A %d (want 0), B %d (want 300: the whole changelog), A again %d (want 200: only what B wrote after A's checkpoint)",
			restoredA, restoredB, restoredA2)
	}
	lastTotalsAre(t, adm, want, "")
}

// runTotals runs the totals app in-process (group, stateDir) until it is Running and everything is
// committed, then stops it cleanly; restored counts the changelog records it restored.
func runTotals(t *testing.T, adm *kadm.Client, group, stateDir string, restored *int) {
	t.Helper()
	cfg, err := config.FromMap(map[string]string{"bootstrap.servers": bootstrap, "application.id": group,
		"commit.interval.ms": "200", "state.dir": stateDir})
	if err != nil {
		t.Fatal(err)
	}
	totals := stream.KeyValue("totals", serde.String, serde.Int64)
	out := stream.Output("order-totals", serde.String, serde.Int64)
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{"orders"},
		StateChangelogTopics: []topology.TopicInfo{topology.Names{AppID: group}.KeyValueChangelog("totals")}})
	proc := stream.Typed(serde.String, serde.Int64, func(c *stream.Context, k string, v int64) error {
		n, _, err := totals.Get(c, k)
		if err == nil {
			err = totals.Put(c, k, n+v)
		}
		if err == nil {
			err = out.Send(c, k, n+v)
		}
		return err
	})
	runCaughtUp(t, adm, group, stateDir, cfg, topo, stream.Processors{"0": proc}, restored, nil)
}

// runCaughtUp runs the application of cfg, topo and procs in-process on Pebble stores until it is
// Running and everything is committed, calls check (if any) with it, then stops it cleanly;
// restored counts the changelog records it restored.
func runCaughtUp(t *testing.T, adm *kadm.Client, group, stateDir string, cfg config.Config, topo *topology.Topology, procs stream.Processors,
	restored *int, check func(*stream.App)) {
	t.Helper()
	app, err := stream.New(cfg, topo, procs, stream.WithStores(sgpebble.New()),
		stream.WithRestoreListener(func(b stream.RestoreBatch) { *restored += b.Records }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	// Running: joined, every task assigned here restored and processing; then everything committed.
	eventually(t, 2*time.Minute, func() (bool, string) {
		if s := app.State(); s != stream.Running {
			return false, "state " + s.String()
		}
		return caughtUp(adm, group)
	})
	if check != nil {
		check(app)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("%s: Run: %v", stateDir, err)
	}
}

// TestStoreBehindItsDeletedChangelogIsWiped: a store whose changelog lost records past the store's
// checkpoint (deleted while the store was away: retention, DeleteRecords) cannot be brought up to
// date by replaying the rest over it, since it would keep what the deleted records overwrote: it
// is wiped and restored from the changelog's first offset, as Kafka Streams wipes a corrupted
// task's stores. Member A totals 300 orders and stops; member B (another state.dir) totals 200
// more and stops; every changelog record is deleted (the changelog is created compact,delete so
// that DeleteRecords is allowed); 100 more orders come and A restarts: its store is wiped, it
// restores nothing, and its totals are those of the last 100 orders alone. Without the wipe they
// would be A's 300-order totals plus the last 100 (B's 200 lost in between).
func TestStoreBehindItsDeletedChangelogIsWiped(t *testing.T) {
	group := fmt.Sprintf("totals-wipe-%d", time.Now().UnixNano())
	cl := client(t)
	adm := kadm.NewClient(cl)
	changelog := topology.Names{AppID: group}.ChangelogTopic("totals")
	freshTopics(t, adm, changelog)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	policy := "compact,delete"
	resp, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{"cleanup.policy": &policy, "retention.ms": kadm.StringPtr("-1")}, changelog)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating the changelog %s: %v", changelog, err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), changelog) })
	dir := t.TempDir()
	var restoredA, restoredB, restoredA2 int
	orders(t, cl, 0, 300)
	runTotals(t, adm, group, filepath.Join(dir, "a"), &restoredA)
	orders(t, cl, 300, 200)
	runTotals(t, adm, group, filepath.Join(dir, "b"), &restoredB)

	ends, err := adm.ListEndOffsets(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	del := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		del.Add(kadm.Offset{Topic: changelog, Partition: o.Partition, At: o.Offset})
	})
	dresp, err := adm.DeleteRecords(ctx, del)
	if err == nil {
		err = dresp.Error()
	}
	if err != nil {
		t.Fatalf("deleting every record of %s: %v", changelog, err)
	}

	want, _ := orders(t, cl, 500, 100)
	runTotals(t, adm, group, filepath.Join(dir, "a"), &restoredA2)
	if restoredA != 0 || restoredB != 300 || restoredA2 != 0 {
		t.Fatalf("changelog records restored: A %d (want 0), B %d (want 300), A again %d (want 0: everything was deleted)",
			restoredA, restoredB, restoredA2)
	}
	lastTotalsAre(t, adm, want, " (the last 100 orders' alone: the store was wiped)")
}

// lastTotalsAre checks that the last total order-totals holds for each customer is want's; why is
// added to the failure.
func lastTotalsAre(t *testing.T, adm *kadm.Client, want map[string]int64, why string) {
	t.Helper()
	got := outputTotals(t, adm)
	for c, total := range want {
		if u := got[c]; len(u) == 0 || u[len(u)-1] != total {
			t.Fatalf("%s: totals %v, want the last to be %d%s", c, u, total, why)
		}
	}
}
