// Command demo runs the word-count example end to end against a broker (make demo starts one):
// it creates the topics, starts three wordcount processes and a producer process, shows a live
// view of the group (members, epochs, active and standby tasks) from the broker's own description,
// stops one member to show its tasks move, and finally reads every count from the output topic and
// checks it against what was produced: no count lost or doubled.
//
//	go run ./examples/demo            (with STREAMSGROUP_BOOTSTRAP set; run from the repository root)
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/admin"
)

var vocabulary = strings.Fields(`kafka stream group task member epoch topic partition broker offset
changelog standby replica rebalance revoke assign heartbeat coordinator topology state`)

// lines generates the demo's input deterministically: the producer writes it, the checker counts it.
func lines(n int) []string {
	r := rand.New(rand.NewPCG(2026, 11))
	out := make([]string, n)
	for i := range out {
		words := make([]string, 3+r.IntN(6))
		for j := range words {
			words[j] = vocabulary[r.IntN(len(vocabulary))]
		}
		out[i] = strings.Join(words, " ")
	}
	return out
}

func main() {
	produce := flag.String("produce", "", "internal: run as the producer process, writing to this topic")
	n := flag.Int("lines", 3000, "lines to produce")
	rate := flag.Duration("every", 4*time.Millisecond, "pause between produced lines")
	flag.Parse()
	bootstrap := os.Getenv("STREAMSGROUP_BOOTSTRAP")
	if bootstrap == "" {
		fmt.Fprintln(os.Stderr, "demo: set STREAMSGROUP_BOOTSTRAP (make demo does)")
		os.Exit(2)
	}
	var err error
	if *produce != "" {
		err = runProducer(bootstrap, *produce, *n, *rate)
	} else {
		err = runDemo(bootstrap, *n, *rate)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func runProducer(bootstrap, topic string, n int, every time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	for i, l := range lines(n) {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(l)}, nil)
		time.Sleep(every)
	}
	return cl.Flush(ctx)
}

var start = time.Now()

func say(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func startProc(name, logDir, bin string, args ...string) (*proc, error) {
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	return p, nil
}

// stop asks the process to shut down cleanly (SIGTERM: revoke, commit, leave) and waits for it.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		return err
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within 40 s; killed", p.name)
	}
}

func runDemo(bootstrap string, nLines int, every time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := fmt.Sprintf("wordcount-demo-%d", time.Now().Unix())
	input, output := app+"-lines", app+"-counts"
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 6, 1, nil, input, output); err != nil {
		return err
	}
	if err := setGroupConfig(ctx, cl, app, "streams.num.standby.replicas", "1"); err != nil {
		return err
	}
	say("topics %s and %s (6 partitions); group %s with one standby replica per task", input, output, app)

	dir, err := os.MkdirTemp("", "wordcount-demo-")
	if err != nil {
		return err
	}
	keepLogs := true // removed only when the demo succeeds, so a failure can be investigated
	defer func() {
		if !keepLogs {
			os.RemoveAll(dir)
		}
	}()
	bin := filepath.Join(dir, "wordcount")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/wordcount").CombinedOutput(); err != nil {
		return fmt.Errorf("building examples/wordcount (run from the repository root): %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	members := map[string]*proc{}
	defer func() {
		for _, p := range members {
			_ = p.stop()
		}
	}()
	for _, name := range []string{"member-1", "member-2", "member-3"} {
		p, err := startProc(name, dir, bin, "application.id="+app, "bootstrap.servers="+bootstrap, "client.id="+name,
			"commit.interval.ms=1000", "user.input="+input, "user.output="+output)
		if err != nil {
			return err
		}
		members[name] = p
		say("started %s (pid %d)", name, p.cmd.Process.Pid)
	}
	producer, err := startProc("producer", dir, self, "-produce", input, "-lines", strconv.Itoa(nLines), "-every", every.String())
	if err != nil {
		return err
	}
	say("started the producer: %d lines", nLines)

	view := &viewer{adm: admin.NewClient(cl), group: app}
	waitView := func(cond func(*admin.Group) bool, limit time.Duration) error {
		deadline := time.Now().Add(limit)
		for {
			g := view.show(ctx)
			if g != nil && cond(g) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the group did not reach the expected state within %v (member logs in %s)", limit, dir)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	if err := waitView(func(g *admin.Group) bool { return stableWith(g, 3) }, time.Minute); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	say("stopping member-2 (SIGTERM: it revokes its tasks, commits and leaves); watch its tasks move")
	if err := members["member-2"].stop(); err != nil {
		return fmt.Errorf("member-2: %w", err)
	}
	delete(members, "member-2")
	if err := waitView(func(g *admin.Group) bool { return stableWith(g, 2) }, time.Minute); err != nil {
		return err
	}
	select {
	case err := <-producer.done:
		if err != nil {
			return fmt.Errorf("producer: %w", err)
		}
	case <-time.After(2 * time.Minute):
		return errors.New("the producer did not finish")
	}
	say("producer done; waiting until every line is counted and committed")
	if err := waitCaughtUp(ctx, view.adm, app, 2*time.Minute); err != nil {
		return fmt.Errorf("%w (member logs in %s)", err, dir)
	}
	if err := verify(ctx, cl, adm, output, nLines); err != nil {
		return fmt.Errorf("%w\n(member logs in %s)", err, dir)
	}
	keepLogs = false
	return nil
}

// stableWith: the group is stable with n members and every active task of both subtopologies
// (6 + 6) is owned once.
func stableWith(g *admin.Group, n int) bool {
	if g.State != "Stable" || len(g.Members) != n {
		return false
	}
	owned := 0
	for _, m := range g.Members {
		owned += m.Assignment.Active.Len()
	}
	return owned == 12
}

type viewer struct {
	adm   *admin.Client
	group string
	last  string
}

// show prints the group as the broker describes it, when it changed.
func (v *viewer) show(ctx context.Context) *admin.Group {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	g, err := v.adm.Describe(dctx, v.group)
	if err != nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "group %s: %s, group epoch %d\n", g.ID, g.State, g.Epoch)
	fmt.Fprintf(&b, "  %-9s %-6s %-34s %s\n", "MEMBER", "EPOCH", "ACTIVE", "STANDBY")
	ms := append([]admin.Member(nil), g.Members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ClientID < ms[j].ClientID })
	for _, m := range ms {
		fmt.Fprintf(&b, "  %-9s %-6d %-34s %s\n", m.ClientID, m.MemberEpoch, m.Assignment.Active, m.Assignment.Standby)
	}
	if s := b.String(); s != v.last {
		v.last = s
		say("%s", s)
	}
	return g
}

func waitCaughtUp(ctx context.Context, adm *admin.Client, group string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		g, err := adm.Describe(ctx, group)
		if err == nil {
			offs, err := adm.Offsets(ctx, g)
			if err == nil && len(offs) > 0 {
				lag := int64(0)
				for _, o := range offs {
					lag += o.Lag
				}
				if lag == 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the group did not catch up within %v", limit)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// verify reads every count from the output topic and compares the last count of each word with the
// number of times the producer wrote it.
func verify(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, nLines int) error {
	want := map[string]int64{}
	total := 0
	for _, l := range lines(nLines) {
		for _, w := range strings.Fields(l) {
			want[w]++
			total++
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	reader, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// read_committed, with transaction markers kept: under exactly-once the last offset of a
		// partition is a marker, which tells the reader it reached the end.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	defer reader.Close()
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining++
		}
	})
	got := map[string]int64{}
	records := 0
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done := map[int32]bool{}
	for remaining > 0 {
		fetches := reader.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return fmt.Errorf("reading the output topic: %w", err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				records++
				if len(r.Value) == 8 { // Kafka's Long: a big-endian int64
					got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value)) // one word's records are in order: the last wins
				}
			}
			if end, ok := ends.Lookup(topic, r.Partition); ok && r.Offset+1 >= end.Offset && !done[r.Partition] {
				done[r.Partition] = true
				remaining--
			}
		})
	}
	var bad []string
	for w, n := range want {
		if got[w] != n {
			bad = append(bad, fmt.Sprintf("%s: counted %d, produced %d", w, got[w], n))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 || len(got) != len(want) {
		return fmt.Errorf("counts differ from what was produced:\n  %s", strings.Join(bad, "\n  "))
	}
	say("read %d count updates from %s", records, topic)
	var top []string
	for _, w := range vocabulary[:5] {
		top = append(top, fmt.Sprintf("%s=%d", w, got[w]))
	}
	say("final counts (first five words): %s …", strings.Join(top, " "))
	say("counts verified: %d distinct words, %d words in %d lines, none lost or doubled", len(want), total, nLines)
	return nil
}

func setGroupConfig(ctx context.Context, cl *kgo.Client, group, key, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceType(32), group // GROUP
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = key, &value
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Resources) > 0 && resp.Resources[0].ErrorCode != 0 {
		return fmt.Errorf("setting %s on group %s: error code %d", key, group, resp.Resources[0].ErrorCode)
	}
	return nil
}
