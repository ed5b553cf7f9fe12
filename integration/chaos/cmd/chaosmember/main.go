// Command chaosmember is one process of the chaos suite: one or more members (membership.Manager)
// of a streams group with one stateless subtopology "0" reading the input topic, using only the
// library's public API. It writes JSON lines (chaos.Record) to its log file: each member's start
// and member ID, every change of the active tasks its application holds, every event, every
// heartbeat result, and once a second the process's goroutines and heap in use. With -eos it runs
// the counting application on the stream runtime under exactly-once instead (eos.go). The driver
// (cmd/chaos) starts it; SIGTERM closes every member (revoke, leave) and exits 0.
//
// -map rewrites broker addresses in the dialer (broker=proxy,…), so that every connection of this
// process goes through its own toxiproxy listeners and a network fault hits this process only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/integration/chaos"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// logw writes records as JSON lines, one write per line, so a kill -9 loses at most the line being
// written (the checker ignores a cut last line).
type logw struct {
	mu   sync.Mutex
	f    *os.File
	proc string
	inc  int
}

func (l *logw) write(r chaos.Record) {
	r.T = time.Now().UnixMicro()
	r.Proc, r.Inc = l.proc, l.inc
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(b)
}

func main() {
	proc := flag.String("proc", "m1", "process name (the driver's)")
	inc := flag.Int("inc", 1, "incarnation of this process name")
	members := flag.Int("members", 1, "members in this process")
	bootstrap := flag.String("bootstrap", "", "seed broker address(es), comma separated")
	mapping := flag.String("map", "", "dialer rewrites: broker=proxy,… (host:port each)")
	app := flag.String("app", "chaos", "application.id (the group)")
	input := flag.String("input", "chaos-input", "input topic")
	logPath := flag.String("log", "", "the JSON-lines log file (appended to)")
	debug := flag.String("debug", "", "write the library's debug log here")
	eos := flag.Bool("eos", false, "run the counting application on the stream runtime under exactly_once_v2 (one member)")
	output := flag.String("output", chaos.EOSOutput, "-eos: the output topic")
	stateDir := flag.String("state", "", "-eos: state.dir (kept across the process's restarts)")
	replication := flag.String("replication", "-1", "-eos: replication.factor of the internal topics")
	flag.Parse()
	if *bootstrap == "" || *logPath == "" {
		fmt.Fprintln(os.Stderr, "chaosmember: -bootstrap and -log are required")
		os.Exit(2)
	}
	f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		os.Exit(2)
	}
	lw := &logw{f: f, proc: *proc, inc: *inc}
	rewrite := map[string]string{}
	for kv := range strings.SplitSeq(*mapping, ",") {
		if from, to, ok := strings.Cut(kv, "="); ok {
			rewrite[from] = to
		}
	}
	var logger *slog.Logger
	if *debug != "" {
		df, err := os.Create(*debug)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaosmember:", err)
			os.Exit(2)
		}
		logger = slog.New(slog.NewTextHandler(df, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	topo, err := topology.New(topology.Subtopology{ID: "0", SourceTopics: []string{*input}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go sample(ctx, lw)
	if *eos {
		if *members != 1 || *stateDir == "" {
			fmt.Fprintln(os.Stderr, "chaosmember: -eos runs one member (-members 1) and needs -state")
			os.Exit(2)
		}
		code := runEOS(ctx, lw, *proc, strings.Split(*bootstrap, ","), rewrite, *app, *input, *output, *stateDir, *replication, logger)
		stop()
		os.Exit(code)
	}

	var ms []*member
	for i := range *members {
		name := *proc
		if *members > 1 {
			name = fmt.Sprintf("%s-%02d", *proc, i+1)
		}
		m, err := start(lw, name, strings.Split(*bootstrap, ","), rewrite, *app, topo, logger)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaosmember:", err)
			os.Exit(1)
		}
		ms = append(ms, m)
	}
	<-ctx.Done()

	// Close every member at once; each revokes its tasks and leaves.
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	failed := false
	var fmu sync.Mutex
	for _, m := range ms {
		wg.Go(func() {
			err := m.mgr.Close(cctx)
			r := chaos.Record{Member: m.name, Kind: chaos.KindClosed}
			if err != nil && !errors.Is(err, context.Canceled) {
				r.Err = err.Error()
				fmu.Lock()
				failed = true
				fmu.Unlock()
			}
			m.events.Wait()
			lw.write(r)
			m.cl.Close()
		})
	}
	wg.Wait()
	if failed {
		os.Exit(3)
	}
}

// member is one Manager with its client, listener and hooks.
type member struct {
	name   string
	lw     *logw
	cl     *kgo.Client
	mgr    *membership.Manager
	events sync.WaitGroup

	mu   sync.Mutex
	held []string // the active tasks the application holds
}

func start(lw *logw, name string, seeds []string, rewrite map[string]string, app string, topo *topology.Topology, logger *slog.Logger) (*member, error) {
	m := &member{name: name, lw: lw}
	var d net.Dialer
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("chaos-"+name),
		kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			if to, ok := rewrite[host]; ok {
				host = to
			}
			return d.DialContext(ctx, network, host)
		}))
	if err != nil {
		return nil, err
	}
	m.cl = cl
	id := uuid.NewString()
	mgr, err := membership.New(cl, config.Default(app), topo, membership.WithListener(m), membership.WithHooks(m),
		membership.WithMemberID(id), membership.WithLogger(logger.With("member", name)))
	if err != nil {
		cl.Close()
		return nil, err
	}
	m.mgr = mgr
	lw.write(chaos.Record{Member: name, Kind: chaos.KindStart, MemberID: id, PID: os.Getpid()})
	events := mgr.Events() // before Start, so that no event is missed
	if err := mgr.Start(context.Background()); err != nil {
		cl.Close()
		return nil, err
	}
	m.events.Go(func() {
		for ev := range events {
			r := chaos.Record{Member: name, Kind: chaos.KindEvent, Event: ev.Kind.String(), MemberID: ev.MemberID, Epoch: ev.Epoch}
			if ev.Err != nil {
				r.Err = ev.Err.Error()
			} else if ev.Message != "" {
				r.Err = ev.Message
			}
			lw.write(r)
		}
	})
	return m, nil
}

func (m *member) setHeld(held []string, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held = held
	id, epoch := m.mgr.Member()
	m.lw.write(chaos.Record{Member: m.name, Kind: chaos.KindOwned, Active: held, Why: why, MemberID: id, Epoch: epoch})
}

func names(s tasks.Set) []string {
	var out []string
	for t := range s.All() {
		out = append(out, fmt.Sprintf("%s_%d", t.Subtopology, t.Partition))
	}
	slices.Sort(out)
	return out
}

// OnTasksRevoked lets the revoked tasks go before anything else: from here on the application does
// not process them.
func (m *member) OnTasksRevoked(_ context.Context, revoked tasks.Set) error {
	gone := names(revoked)
	m.mu.Lock()
	held := slices.DeleteFunc(slices.Clone(m.held), func(t string) bool { return slices.Contains(gone, t) })
	m.mu.Unlock()
	m.setHeld(held, "revoked")
	return nil
}

// OnAllTasksLost lets every task go at once.
func (m *member) OnAllTasksLost(context.Context, tasks.Assignment) error {
	m.setHeld(nil, "lost")
	return nil
}

// OnTasksAssigned holds the whole assignment from its last statement on.
func (m *member) OnTasksAssigned(_ context.Context, a tasks.Assignment, _ bool) error {
	m.setHeld(names(a.Active), "assigned")
	return nil
}

// OnHeartbeatAnswered logs each heartbeat result; Answered says the broker answered (with or
// without an error code) rather than the transport failing.
func (m *member) OnHeartbeatAnswered(_ time.Duration, class heartbeat.Class, err error) {
	_, coded := errors.AsType[*heartbeat.Error](err)
	r := chaos.Record{Member: m.name, Kind: chaos.KindHeartbeat, Answered: err == nil || coded}
	if err != nil {
		r.Err = fmt.Sprintf("%s: %v", class, err)
	}
	r.MemberID, r.Epoch = m.mgr.Member()
	m.lw.write(r)
}

// sample logs the goroutine count and heap in use once a second.
func sample(ctx context.Context, lw *logw) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var ms runtime.MemStats
	for {
		runtime.ReadMemStats(&ms)
		lw.write(chaos.Record{Kind: chaos.KindSample, Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, PID: os.Getpid()})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
