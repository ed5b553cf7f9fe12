// Command gomember is the Go side of bench-compare: N members (membership.Manager) of a streams
// group in one process, with one stateless subtopology "0" reading the input topic, which is what
// the Kafka Streams side (bench/javaapp) declares. The bench-compare driver starts it; it is not
// meant to be run by hand, though it can be:
//
//	gomember -bootstrap 127.0.0.1:9092 -app g -input t -members 100 -clients shared
//
// Stdout carries only these lines (times are microseconds since the Unix epoch):
//
//	MAIN <t>          first thing in main()
//	TASKS <t>         the first OnTasksAssigned with active tasks in this process
//	ADD <t> <k>       stdin said "ADD k": k more members are being started
//	STATS <json>      stdin said "STATS": heartbeat lateness and round trips since the last RESET
//	CLOSED <t>        every member closed (left the group)
//
// Stdin: "ADD k", "RESET" (forget the samples so far), "STATS". The members close (revoke, leave)
// and the process exits on SIGTERM or SIGINT, or when stdin ends.
//
// Lateness is measured with the Manager's hooks: a member's next heartbeat is due one interval
// after the answer to the last one (the machine's rule); lateness is the time from then until the
// heartbeat is handed to the transport. How long the request then waited in the kgo client before it
// reached the wire is measured with a kgo hook (HookBrokerWrite).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

func micros() int64 { return time.Now().UnixMicro() }

var out = struct {
	sync.Mutex
	w *bufio.Writer
}{w: bufio.NewWriter(os.Stdout)}

func emit(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(out.w, format+"\n", args...)
	out.w.Flush()
}

func main() {
	emit("MAIN %d", micros())
	bootstrap := flag.String("bootstrap", os.Getenv("STREAMSGROUP_BOOTSTRAP"), "Kafka bootstrap address")
	app := flag.String("app", "", "application.id (the group); with -groups > 1, groups <app>-0 … <app>-<groups-1>")
	groups := flag.Int("groups", 1, "spread the members round-robin over this many groups")
	input := flag.String("input", "", "the input topic (its partitions are the tasks)")
	members := flag.Int("members", 1, "members to start")
	clients := flag.String("clients", "shared", "shared: one *kgo.Client for every member; per-member: one each")
	interval := flag.Duration("interval", 500*time.Millisecond, "the broker's heartbeat interval, for lateness")
	debug := flag.Bool("log", false, "log the members' debug lines to stderr (default: no logging)")
	flag.Parse()
	if *debug {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if *bootstrap == "" || *app == "" || *input == "" || (*clients != "shared" && *clients != "per-member") {
		fmt.Fprintln(os.Stderr, "gomember: -bootstrap, -app and -input are required; -clients is shared or per-member")
		os.Exit(2)
	}
	topo, err := topology.New(topology.Subtopology{ID: "0", SourceTopics: []string{*input}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomember:", err)
		os.Exit(1)
	}
	p := &process{bootstrap: *bootstrap, app: *app, groups: *groups, topo: topo, perMember: *clients == "per-member",
		interval: *interval, wire: &wireHook{}}
	if !p.perMember {
		if p.shared, err = p.newClient(); err != nil {
			fmt.Fprintln(os.Stderr, "gomember:", err)
			os.Exit(1)
		}
	}
	go p.probe()
	if err := p.add(*members); err != nil {
		fmt.Fprintln(os.Stderr, "gomember:", err)
		p.close()
		os.Exit(1)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	stdinDone := make(chan struct{})
	go func() {
		defer close(stdinDone)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			words := strings.Fields(sc.Text())
			switch {
			case len(words) == 2 && words[0] == "ADD":
				k, err := strconv.Atoi(words[1])
				if err != nil {
					continue
				}
				emit("ADD %d %d", micros(), k)
				if err := p.add(k); err != nil {
					fmt.Fprintln(os.Stderr, "gomember:", err)
				}
			case len(words) == 1 && words[0] == "RESET":
				p.reset()
			case len(words) == 1 && words[0] == "STATS":
				b, _ := json.Marshal(p.stats())
				emit("STATS %s", b)
			}
		}
	}()
	select {
	case <-sig:
	case <-stdinDone:
	}
	p.close()
	emit("CLOSED %d", micros())
}

// process is every member of this process.
type process struct {
	bootstrap string
	app       string
	groups    int
	topo      *topology.Topology
	perMember bool
	interval  time.Duration
	shared    *kgo.Client
	wire      *wireHook
	firstTask atomic.Bool

	probeMu   sync.Mutex
	probeLate []time.Duration // lateness of a bare timer of one interval, the machine's baseline

	mu      sync.Mutex
	members []*member
}

func (p *process) newClient() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(p.bootstrap), kgo.WithHooks(p.wire))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// add starts k members.
func (p *process) add(k int) error {
	for range k {
		p.mu.Lock()
		i := len(p.members)
		p.mu.Unlock()
		group := p.app
		if p.groups > 1 {
			group = fmt.Sprintf("%s-%d", p.app, i%p.groups)
		}
		m := &member{p: p, cl: p.shared}
		if p.perMember {
			var err error
			if m.cl, err = p.newClient(); err != nil {
				return err
			}
		}
		mgr, err := membership.New(m.cl, config.Default(group), p.topo,
			membership.WithListener(m), membership.WithLogger(quiet), membership.WithHooks(m))
		if err != nil {
			return err
		}
		m.mgr = mgr
		if err := mgr.Start(context.Background()); err != nil {
			return err
		}
		p.mu.Lock()
		p.members = append(p.members, m)
		p.mu.Unlock()
	}
	return nil
}

// close closes every member at once (each revokes and leaves), then the clients.
func (p *process) close() {
	p.mu.Lock()
	ms := slices.Clone(p.members)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			if err := m.mgr.Close(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "gomember: close:", err)
			}
			if p.perMember {
				m.cl.Close()
			}
		})
	}
	wg.Wait()
	if p.shared != nil {
		p.shared.Close()
	}
}

// probe sleeps on a timer again and again, as a member waits for its next heartbeat, and records
// how late it wakes: what any timer in this process suffers from the machine's load, with no member
// code involved. It sleeps a tenth of an interval, so that its percentiles rest on as many samples
// as ten members' heartbeats.
func (p *process) probe() {
	for {
		due := time.Now().Add(p.interval / 10)
		time.Sleep(time.Until(due))
		late := time.Since(due)
		p.probeMu.Lock()
		p.probeLate = append(p.probeLate, late)
		p.probeMu.Unlock()
	}
}

func (p *process) reset() {
	p.probeMu.Lock()
	p.probeLate = p.probeLate[:0]
	p.probeMu.Unlock()
	p.mu.Lock()
	ms := slices.Clone(p.members)
	p.mu.Unlock()
	for _, m := range ms {
		m.mu.Lock()
		m.late, m.rtts, m.failed = m.late[:0], m.rtts[:0], 0
		m.mu.Unlock()
	}
	p.wire.reset()
}

// Stats is what STATS prints: milliseconds, over every member since the last RESET.
type Stats struct {
	Members    int     `json:"members"`
	Heartbeats int     `json:"heartbeats"` // heartbeats sent on their interval (lateness samples)
	Failed     int     `json:"failed"`     // heartbeat results that were not a success
	LateP50    float64 `json:"late_p50_ms"`
	LateP90    float64 `json:"late_p90_ms"`
	LateP99    float64 `json:"late_p99_ms"`
	LateMax    float64 `json:"late_max_ms"`
	LateOver   int     `json:"late_over_10pct"` // heartbeats sent more than 10% of an interval late
	RTTP50     float64 `json:"rtt_p50_ms"`
	RTTP99     float64 `json:"rtt_p99_ms"`
	JoinRTTP50 float64 `json:"join_rtt_p50_ms"` // each member's first heartbeat (its join), since start
	WireP50    float64 `json:"wire_wait_p50_ms"`
	WireP99    float64 `json:"wire_wait_p99_ms"` // heartbeat requests queued in kgo until written
	WireMax    float64 `json:"wire_wait_max_ms"`
	// Probe…: how late a bare timer woke in this process meanwhile (see probe).
	ProbeP50   float64 `json:"probe_late_p50_ms"`
	ProbeP99   float64 `json:"probe_late_p99_ms"`
	ProbeMax   float64 `json:"probe_late_max_ms"`
	ProbeOver  int     `json:"probe_late_over_10pct"` // wake-ups more than 10% of an interval late
	ProbeCount int     `json:"probe_count"`
}

func (p *process) stats() Stats {
	p.mu.Lock()
	ms := slices.Clone(p.members)
	p.mu.Unlock()
	var late, rtts, joins []time.Duration
	s := Stats{Members: len(ms)}
	for _, m := range ms {
		m.mu.Lock()
		late = append(late, m.late...)
		rtts = append(rtts, m.rtts...)
		if m.joinRTT > 0 {
			joins = append(joins, m.joinRTT)
		}
		s.Failed += m.failed
		m.mu.Unlock()
	}
	s.Heartbeats = len(late)
	for _, l := range late {
		if l > p.interval/10 {
			s.LateOver++
		}
	}
	s.LateP50, s.LateP90, s.LateP99, s.LateMax = pct(late, 0.5), pct(late, 0.9), pct(late, 0.99), pct(late, 1)
	s.RTTP50, s.RTTP99 = pct(rtts, 0.5), pct(rtts, 0.99)
	s.JoinRTTP50 = pct(joins, 0.5)
	wire := p.wire.samples()
	s.WireP50, s.WireP99, s.WireMax = pct(wire, 0.5), pct(wire, 0.99), pct(wire, 1)
	p.probeMu.Lock()
	probe := slices.Clone(p.probeLate)
	p.probeMu.Unlock()
	s.ProbeP50, s.ProbeP99, s.ProbeMax, s.ProbeCount = pct(probe, 0.5), pct(probe, 0.99), pct(probe, 1), len(probe)
	for _, l := range probe {
		if l > p.interval/10 {
			s.ProbeOver++
		}
	}
	return s
}

// pct is the q-quantile of ds in milliseconds (nearest rank), 0 for none.
func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(int(q*float64(len(s))+0.5), len(s)) - 1
	return float64(s[max(i, 0)]) / float64(time.Millisecond)
}

// member is one Manager, its listener and its hooks.
type member struct {
	p   *process
	cl  *kgo.Client
	mgr *membership.Manager

	mu         sync.Mutex
	answeredAt time.Time // the last successful answer
	joinRTT    time.Duration
	late, rtts []time.Duration
	failed     int
}

func (m *member) OnTasksRevoked(context.Context, tasks.Set) error { return nil }
func (m *member) OnAllTasksLost(context.Context, tasks.Assignment) error {
	return nil
}

func (m *member) OnTasksAssigned(_ context.Context, a tasks.Assignment, _ bool) error {
	if !a.Active.IsEmpty() && m.p.firstTask.CompareAndSwap(false, true) {
		emit("TASKS %d", micros())
	}
	return nil
}

// OnHeartbeatSent: the heartbeat was due one interval after the last answer. A heartbeat that goes
// earlier than half an interval after it (an acknowledgement, sent at once) is not on the interval
// and is not counted.
func (m *member) OnHeartbeatSent() {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answeredAt.IsZero() {
		return
	}
	if late := now.Sub(m.answeredAt.Add(m.p.interval)); late > -m.p.interval/2 {
		m.late = append(m.late, late)
	}
	m.answeredAt = time.Time{}
}

func (m *member) OnHeartbeatAnswered(rtt time.Duration, class heartbeat.Class, _ error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.joinRTT == 0 {
		m.joinRTT = rtt
	}
	if class != 0 {
		m.failed++
		m.answeredAt = time.Time{}
		return
	}
	m.rtts = append(m.rtts, rtt)
	m.answeredAt = now
}

// wireHook times StreamsGroupHeartbeat requests (API key 88) from being handed to kgo to being
// written to the connection.
type wireHook struct {
	mu   sync.Mutex
	wait []time.Duration
}

func (h *wireHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, writeWait, timeToWrite time.Duration, _ error) {
	if key != 88 {
		return
	}
	h.mu.Lock()
	h.wait = append(h.wait, writeWait+timeToWrite)
	h.mu.Unlock()
}

func (h *wireHook) reset() {
	h.mu.Lock()
	h.wait = h.wait[:0]
	h.mu.Unlock()
}

func (h *wireHook) samples() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.wait)
}
