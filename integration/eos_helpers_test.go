package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The exactly-once tests (eos_test.go) run the counting app of runtime_helpers_test.go under
// processing.guarantee=exactly_once_v2, in-process (rtApp) or as a child process (eosChild, built
// from testdata/eosmember so that it can be SIGKILLed or SIGSTOPped), while a feeder writes input.
// After the fault the oracle is exact: the output topic read with read_committed holds, for every
// key, the counts 1…n once each and in order (n = the inputs of that key), and a fresh app's store,
// restored from the changelog with read_committed, holds n for every key and nothing else. Under
// at-least-once a replay after a fault repeats counts (and damages the store), which both checks see.

// eosCfg makes a runtime config exactly-once, with its own state.dir (the process ID, and so the
// transactional.id, lives there) and Kafka Streams' EOS commit interval.
func eosCfg(dir string, more ...func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Runtime.Guarantee = config.ExactlyOnceV2
		c.Runtime.CommitInterval = config.DefaultCommitIntervalEOS
		c.StateDir = dir
		for _, m := range more {
			m(c)
		}
	}
}

// startEOS starts an in-process exactly-once counting app with a state.dir of its own.
func (s *rtSetup) startEOS(t *testing.T, name string, more ...func(*config.Config)) *rtApp {
	t.Helper()
	return s.start(t, name, rtOpts{cfg: eosCfg(t.TempDir(), more...)})
}

// feeder writes keyed input records (k0…k<keys-1> in turn, partitioned by key) in small batches
// until stopped, and counts what it wrote per key. Its producer is idempotent (kgo's default), so a
// broker restart does not duplicate input.
type feeder struct {
	cl     *kgo.Client
	topic  string
	keys   int
	stopCh chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	counts map[string]int64
	n      int
	err    error
}

// feed starts a feeder of topic; it writes at most limit records (a bound on the test's work).
func feed(t *testing.T, cl *kgo.Client, topic string, keys, limit int) *feeder {
	t.Helper()
	f := &feeder{cl: cl, topic: topic, keys: keys, stopCh: make(chan struct{}), done: make(chan struct{}), counts: map[string]int64{}}
	go f.run(limit)
	t.Cleanup(func() { f.stop(t) })
	return f
}

func (f *feeder) run(limit int) {
	defer close(f.done)
	const batch = 20
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < limit; i += batch {
		select {
		case <-f.stopCh:
			return
		case <-tick.C:
		}
		recs := make([]*kgo.Record, 0, batch)
		counted := map[string]int64{}
		for j := i; j < i+batch; j++ {
			k := fmt.Sprintf("k%d", j%f.keys)
			counted[k]++
			recs = append(recs, &kgo.Record{Topic: f.topic, Key: []byte(k), Value: []byte(fmt.Sprint(j))})
		}
		// Generous: a broker restart or a coordinator move holds a batch for a while.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := f.cl.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		f.mu.Lock()
		if err != nil {
			f.err = err
			f.mu.Unlock()
			return
		}
		addCounts(f.counts, counted)
		f.n += batch
		f.mu.Unlock()
	}
}

// written is how many records the feeder wrote so far.
func (f *feeder) written() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// waitWritten waits until the feeder wrote at least n more records than it had when called.
func (f *feeder) waitMore(t *testing.T, n int) {
	t.Helper()
	from := f.written()
	Eventually(t, settle, func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.err != nil {
			t.Fatalf("the feeder failed: %v", f.err)
		}
		return f.n >= from+n, fmt.Sprintf("the feeder wrote %d records, waiting for %d", f.n, from+n)
	})
}

// stop stops the feeder and returns what it wrote per key; a feeder that failed fails the test.
func (f *feeder) stop(t *testing.T) map[string]int64 {
	t.Helper()
	select {
	case <-f.stopCh:
	default:
		close(f.stopCh)
	}
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		t.Fatalf("the feeder failed after %d records: %v", f.n, f.err)
	}
	out := map[string]int64{}
	addCounts(out, f.counts)
	return out
}

// readCommittedCounts reads the output topic as a read_committed consumer: per key, the counts in
// the order written. It first waits until no transaction is open on the topic (its last stable
// offsets equal its end offsets, so every transaction is committed or aborted), then reads up to
// the end offsets, control records kept: the last offset of a partition is usually a transaction
// marker, which a read_committed reader never gets as a record otherwise.
func readCommittedCounts(t *testing.T, newClient func(...kgo.Opt) *kgo.Client, topic string) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	readCommitted(t, newClient, topic, func(r *kgo.Record) {
		if len(r.Value) != 8 {
			t.Errorf("output %s[%d]@%d: value of %d bytes", topic, r.Partition, r.Offset, len(r.Value))
			return
		}
		out[string(r.Key)] = append(out[string(r.Key)], int64(binary.BigEndian.Uint64(r.Value)))
	})
	return out
}

// readCommitted calls fn with every record of topic (its transaction markers left out), read with
// read_committed to its end once no transaction is open on it, in order within each partition.
func readCommitted(t *testing.T, newClient func(...kgo.Opt) *kgo.Client, topic string, fn func(*kgo.Record)) {
	t.Helper()
	adm := kadm.NewClient(newClient())
	var ends map[int32]int64
	Eventually(t, 2*time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		ends = map[int32]int64{}
		var open []string
		hw.Each(func(o kadm.ListedOffset) {
			ends[o.Partition] = o.Offset
			if l, ok := lso.Lookup(topic, o.Partition); !ok || l.Offset != o.Offset {
				open = append(open, fmt.Sprintf("%s[%d] stable up to %d of %d", topic, o.Partition, l.Offset, o.Offset))
			}
		})
		sort.Strings(open)
		return len(open) == 0, "a transaction is still open: " + strings.Join(open, "; ")
	})
	cl := newClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	remaining := map[int32]int64{}
	for p, e := range ends {
		if e > 0 {
			remaining[p] = e
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s with read_committed: %v (left %v)", topic, ctx.Err(), remaining)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetching %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if !r.Attrs.IsControl() {
				fn(r)
			}
		})
	}
}

// checkExact is the exactly-once oracle on the output: every key's committed counts are 1…n once
// each, in order. It says so in the failure message, and that at-least-once would show repeats.
func checkExact(t *testing.T, got map[string][]int64, want map[string]int64) {
	t.Helper()
	total := int64(0)
	for _, n := range want {
		total += n
	}
	t.Logf("oracle: %d keys, %d inputs; checking the committed output holds 1…n once per key", len(want), total)
	checkCountedOnce(t, got, want)
}

// storeCounts reads every key of the app's "counts" store (the committed state: what queries see).
func storeCounts(t *testing.T, r *rtApp) map[string]int64 {
	t.Helper()
	st, err := r.app.Store(rtCounts.Name())
	if err != nil {
		t.Fatal(err)
	}
	it, err := st.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]int64{}
	for it.Next() {
		v, err := serde.Int64.Decode(it.Value())
		if err != nil {
			t.Fatalf("%s's store: key %q: %v", r.name, it.Key(), err)
		}
		out[string(it.Key())] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// storesHold reports whether the stores of apps hold together exactly want: every key once, with
// its total. (A store applies a transaction's writes just after the transaction committed, so a
// test waits for this with Eventually once the input is committed.)
func storesHold(t *testing.T, want map[string]int64, apps ...*rtApp) (bool, string) {
	t.Helper()
	got := map[string]int64{}
	holder := map[string]string{}
	for _, a := range apps {
		for k, v := range storeCounts(t, a) {
			if h, ok := holder[k]; ok {
				return false, fmt.Sprintf("key %s is in the stores of both %s and %s", k, h, a.name)
			}
			holder[k], got[k] = a.name, v
		}
	}
	var bad []string
	for k, n := range want {
		if got[k] != n {
			bad = append(bad, fmt.Sprintf("%s: store %d, inputs %d", k, got[k], n))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%s: in a store, never produced", k))
		}
	}
	sort.Strings(bad)
	return len(bad) == 0, "the stores do not hold exactly the totals: " + strings.Join(bad, "; ")
}

// checkStoreTotals waits until the stores of apps hold exactly want, and fails the test if they
// do not within settle.
func checkStoreTotals(t *testing.T, want map[string]int64, apps ...*rtApp) {
	t.Helper()
	Eventually(t, settle, func() (bool, string) { return storesHold(t, want, apps...) })
}

// verifyFresh starts a fresh exactly-once app of the group (a new state.dir: it restores every
// store from its changelog with read_committed), waits until it runs every task, checks its stores
// hold exactly want and stops it. It runs after every other member stopped.
func (s *rtSetup) verifyFresh(t *testing.T, want map[string]int64) {
	t.Helper()
	v := s.startEOS(t, "verifier")
	v.runningWith(t, s.all)
	s.waitCaughtUp(t)
	checkStoreTotals(t, want, v)
	v.stopClean(t)
}

// eosChild is the exactly-once counting app as a child process (testdata/eosmember).
type eosChild struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{}

	mu     sync.Mutex
	state  string
	active tasks.Set
	exit   string // the EXIT line's text
	lines  []string
}

// startChild runs testdata/eosmember as a member of s's group, with state.dir dir (the same dir
// means the same process ID and transactional.id: a restart of the same process).
func (s *rtSetup) startChild(t *testing.T, name, dir string, commitMs int) *eosChild {
	t.Helper()
	return startEOSMember(t, s.b, name, "-group", s.group, "-input", s.input, "-output", s.output,
		"-state-dir", dir, "-commit-interval-ms", fmt.Sprint(commitMs))
}

// startEOSMember runs testdata/eosmember named name with args (beside -bootstrap and -name).
func startEOSMember(t *testing.T, b *Broker, name string, args ...string) *eosChild {
	t.Helper()
	bin := b.BuildTool(t, "./integration/testdata/eosmember")
	c := &eosChild{name: name, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	c.cmd = exec.Command(bin, append([]string{"-bootstrap", b.Bootstrap, "-name", name}, args...)...)
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go c.read(stdout)
	t.Cleanup(func() {
		c.kill() // by its PID; a no-op once it exited
		<-c.exited
		if t.Failed() {
			c.mu.Lock()
			t.Logf("child %s (pid %d) stdout:\n%s\nstderr (last 20000 bytes):\n%s", name, c.cmd.Process.Pid,
				strings.Join(c.lines, "\n"), tail(c.stderr.String(), 20000))
			c.mu.Unlock()
		}
	})
	return c
}

func (c *eosChild) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		c.lines = append(c.lines, line)
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "STATE":
			c.state = rest
		case "TASKS":
			if a, _, err := parseTasksLine(rest); err == nil {
				c.active = a
			}
		case "EXIT":
			c.exit = rest
		}
		c.mu.Unlock()
	}
	_ = c.cmd.Wait()
	close(c.exited)
}

func (c *eosChild) snapshot() (state string, active tasks.Set) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.active
}

func (c *eosChild) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%s(state %s, active %v, exit %q)", c.name, c.state, c.active, c.exit)
}

// running reports whether the child's app is RUNNING with some active task.
func (c *eosChild) running() bool {
	st, a := c.snapshot()
	return st == stream.Running.String() && !a.IsEmpty()
}

func (c *eosChild) hasExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the child's PID.
func (c *eosChild) kill() {
	if !c.hasExited() {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
}

func (c *eosChild) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", c.name, sig, err)
	}
}

// stop closes stdin (a clean stop) and waits for the child to exit; it returns the EXIT line.
func (c *eosChild) stop(t *testing.T) string {
	t.Helper()
	_ = c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(time.Minute):
		c.kill()
		t.Fatalf("%s did not exit within a minute of its stdin closing", c.name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

// exitLine is the EXIT line so far ("" while running).
func (c *eosChild) exitLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

// log is the child's stderr so far.
func (c *eosChild) log() string { return c.stderr.String() }

// proxyDialer is a client option that sends every connection to the broker through p.
func proxyDialer(t *testing.T, b *Broker, p interface{ Addr() string }) kgo.Opt {
	t.Helper()
	_, brokerPort, err := net.SplitHostPort(b.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if _, port, err := net.SplitHostPort(host); err == nil && port == brokerPort {
			host = p.Addr()
		}
		return d.DialContext(ctx, network, host)
	})
}

// groupSession sets the group's streams.session.timeout.ms to ms where the broker allows it (Kafka
// 4.2 refuses values below its built-in bounds) and returns the session timeout that applies.
func groupSession(t *testing.T, b *Broker, group string, ms int) time.Duration {
	t.Helper()
	v := fmt.Sprint(ms)
	if err := trySetGroupConfig(t, b, group, "streams.session.timeout.ms", v); err != nil {
		t.Logf("this broker refuses streams.session.timeout.ms=%s (%v): the broker's default applies", v, err)
		return brokerSessionTimeout(t, b)
	}
	b.SetGroupConfig(t, group, "streams.session.timeout.ms", v)
	return time.Duration(ms) * time.Millisecond
}

// memberOf returns the member ID and epoch of the group member whose client ID is clientID.
func memberOf(t *testing.T, b *Broker, group, clientID string) (string, int32, bool) {
	t.Helper()
	for _, m := range b.DescribeGroup(t, group).Members {
		if m.ClientID == clientID {
			return m.MemberID, m.MemberEpoch, true
		}
	}
	return "", 0, false
}

// storeVerdict waits (at most settle) until the stores of apps hold exactly want, and returns ""
// then, or why they do not. Unlike checkStoreTotals it does not fail the test, so that the output
// can be checked too before the test fails.
func storeVerdict(t *testing.T, want map[string]int64, apps ...*rtApp) string {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		ok, why := storesHold(t, want, apps...)
		if ok {
			return ""
		}
		if time.Now().After(deadline) {
			return why
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inputCounts reads the whole input topic and counts its records per key: what the feeder wrote,
// as the broker holds it (a check that the input itself was not duplicated).
func inputCounts(t *testing.T, b *Broker, topic string) map[string]int64 {
	t.Helper()
	ends := endOffsets(t, b, topic)
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left := map[int32]int64{}
	for p, e := range ends {
		if e > 0 {
			left[p] = e
		}
	}
	out := map[string]int64{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[string(r.Key)]++
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return out
}

// finish is the end of every fault test: the input as the broker holds it must be what the feeder
// wrote; then the stores of the running apps (their committed state), then the committed output.
// The apps are stopped cleanly before the output is read.
func (s *rtSetup) finish(t *testing.T, want map[string]int64, apps ...*rtApp) {
	t.Helper()
	if got := inputCounts(t, s.b, s.input); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the input topic holds %v; the feeder wrote %v (the input itself is not what the test thinks)", got, want)
	}
	storeWhy := storeVerdict(t, want, apps...)
	for _, a := range apps {
		a.stopClean(t)
	}
	checkExact(t, readCommittedCounts(t, clientsOf(t, s.b), s.output), want)
	if storeWhy != "" {
		t.Fatalf("the output is exact but %s", storeWhy)
	}
}

// clientsOf makes clients of b for the test (closed when it ends).
func clientsOf(t *testing.T, b *Broker) func(...kgo.Opt) *kgo.Client {
	return func(opts ...kgo.Opt) *kgo.Client { return b.Client(t, opts...) }
}

// warmed holds the bootstrap addresses whose transaction coordinator was warmed up.
var warmed sync.Map

// warmTransactions waits, once per broker (or cluster), until a transactional producer can get a
// producer ID: the first one makes the broker create __transaction_state, which on a loaded
// machine takes longer than an App's start bound (stream's initProducer gives up after 10 s with a
// *stream.TxnError, by design: a cluster without transactions is refused at start).
func warmTransactions(t *testing.T, b *Broker) {
	t.Helper()
	if _, ok := warmed.Load(b.Bootstrap); ok {
		return
	}
	cl := b.Client(t, kgo.TransactionalID(Name(t, "warmup")))
	Eventually(t, 2*time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _, err := cl.ProducerID(ctx)
		return err == nil, fmt.Sprintf("no producer ID yet: %v", err)
	})
	warmed.Store(b.Bootstrap, true)
}

// newEOSSetup is newRTSetup on a broker whose transactions are warmed up.
func newEOSSetup(t *testing.T, partitions int32) *rtSetup {
	t.Helper()
	s := newRTSetup(t, partitions)
	warmTransactions(t, s.b)
	return s
}
