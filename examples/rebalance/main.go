// Command rebalance shows a streams group at work: three Go members join one group over a
// six-partition topic, the broker splits the tasks between them, one member leaves and its tasks
// move, a fourth joins and takes its share. A table of members, states, epochs and tasks is
// printed whenever something changes.
//
//	go run ./examples/rebalance -bootstrap 127.0.0.1:9092
//
// (make demo starts a local broker and runs it.)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

func main() {
	bootstrap := flag.String("bootstrap", os.Getenv("STREAMSGROUP_BOOTSTRAP"), "Kafka bootstrap address (host:port)")
	partitions := flag.Int("partitions", 6, "partitions of the input topic (= tasks)")
	props := flag.String("config", "", "client properties file with Kafka's security keys (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*; optional)")
	flag.Parse()
	if *props != "" {
		// TLS and SASL from Kafka's keys, through the config package: every client below uses them.
		sec, err := config.LoadSecurity(*props)
		if err == nil {
			securityOpts, err = sec.Options()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "rebalance: -config:", err)
			os.Exit(2)
		}
	}
	if *bootstrap == "" {
		fmt.Fprintln(os.Stderr, "rebalance: set -bootstrap or STREAMSGROUP_BOOTSTRAP")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *bootstrap, int32(*partitions)); err != nil {
		fmt.Fprintln(os.Stderr, "rebalance:", err)
		os.Exit(1)
	}
}

// member is one Go member of the group and what its listener last saw.
type member struct {
	name string
	cl   *kgo.Client
	mgr  *membership.Manager

	mu     sync.Mutex
	active tasks.Set
	ready  bool
}

func (m *member) OnTasksRevoked(_ context.Context, revoked tasks.Set) error {
	m.mu.Lock()
	m.active = m.active.Difference(revoked)
	m.mu.Unlock()
	say("%s: revoked %v", m.name, revoked)
	return nil
}

func (m *member) OnTasksAssigned(_ context.Context, a tasks.Assignment, ready bool) error {
	m.mu.Lock()
	m.active, m.ready = a.Active, ready
	m.mu.Unlock()
	say("%s: assigned %v (group ready: %v)", m.name, a.Active, ready)
	return nil
}

func (m *member) OnAllTasksLost(_ context.Context, lost tasks.Assignment) error {
	m.mu.Lock()
	m.active = tasks.Set{}
	m.mu.Unlock()
	say("%s: lost %v", m.name, lost.Active)
	return nil
}

var start = time.Now()

func say(format string, args ...any) {
	fmt.Printf("[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

// securityOpts are the TLS and SASL options from -config (none without it).
var securityOpts []kgo.Opt

func run(ctx context.Context, bootstrap string, partitions int32) error {
	app := fmt.Sprintf("rebalance-demo-%d", time.Now().Unix())
	input := app + "-input"
	admin, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, securityOpts...)...)
	if err != nil {
		return err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, input); err != nil {
		return fmt.Errorf("creating %s: %w", input, err)
	}
	for {
		// Wait until the topic's metadata is visible, so the members do not start with a missing topic.
		td, err := adm.ListTopics(ctx, input)
		if err == nil && td.Has(input) && len(td[input].Partitions) == int(partitions) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	say("created topic %s with %d partitions; group %s", input, partitions, app)

	topo, err := topology.New(topology.Subtopology{ID: "0", SourceTopics: []string{input}})
	if err != nil {
		return err
	}
	say("topology ID %s", topo.ID())

	var members []*member
	startMember := func(name string) (*member, error) {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ClientID(name)}, securityOpts...)...)
		if err != nil {
			return nil, err
		}
		m := &member{name: name, cl: cl}
		cfg := config.Default(app)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		m.mgr, err = membership.New(cl, cfg, topo, membership.WithListener(m), membership.WithLogger(quiet))
		if err != nil {
			cl.Close()
			return nil, err
		}
		go func() {
			for ev := range m.mgr.Events() {
				switch ev.Kind {
				case membership.EventStateChanged, membership.EventAssigned, membership.EventGroupReadyChanged, membership.EventEndpointsChanged:
				default:
					say("%s: event %s", name, ev)
				}
			}
		}()
		if err := m.mgr.Start(ctx); err != nil {
			return nil, err
		}
		members = append(members, m)
		say("%s joins", name)
		return m, nil
	}
	stopMember := func(m *member) error {
		say("%s leaves (revoke, leave heartbeat)", m.name)
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := m.mgr.Close(cctx)
		m.cl.Close()
		for i, x := range members {
			if x == m {
				members = append(members[:i], members[i+1:]...)
				break
			}
		}
		return err
	}
	defer func() {
		for len(members) > 0 {
			_ = stopMember(members[0])
		}
	}()

	for _, name := range []string{"member-1", "member-2", "member-3"} {
		if _, err := startMember(name); err != nil {
			return err
		}
	}
	if err := settle(ctx, &members, partitions); err != nil {
		return err
	}
	if err := stopMember(members[1]); err != nil {
		return err
	}
	if err := settle(ctx, &members, partitions); err != nil {
		return err
	}
	if _, err := startMember("member-4"); err != nil {
		return err
	}
	if err := settle(ctx, &members, partitions); err != nil {
		return err
	}
	say("done: after every change each task was owned by exactly one member and the tasks were balanced")
	return nil
}

// settle prints the table whenever it changes until every member is stable and every task is
// owned exactly once, or a minute passes.
func settle(ctx context.Context, members *[]*member, partitions int32) error {
	deadline := time.Now().Add(time.Minute)
	last := ""
	for {
		table, done := render(*members, partitions)
		if table != last {
			fmt.Print(table)
			last = table
		}
		if done {
			time.Sleep(time.Second) // let a person read the table before the next change
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the group did not settle within a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func render(members []*member, partitions int32) (string, bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  %-10s %-14s %-6s %s\n", "MEMBER", "STATE", "EPOCH", "ACTIVE TASKS")
	owners := map[tasks.ID]int{}
	allStable := true
	sorted := append([]*member(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, m := range sorted {
		_, epoch := m.mgr.Member()
		m.mu.Lock()
		act := m.active
		m.mu.Unlock()
		for id := range act.All() {
			owners[id]++
		}
		st := m.mgr.State()
		if st != membership.Stable {
			allStable = false
		}
		fmt.Fprintf(&b, "  %-10s %-14s %-6d %v\n", m.name, st, epoch, act)
	}
	b.WriteString("\n")
	covered := len(owners) == int(partitions)
	for _, n := range owners {
		if n != 1 {
			covered = false
		}
	}
	// Balanced: the sticky assignor gives every member within one task of the others.
	lo, hi := int(partitions), 0
	for _, m := range members {
		m.mu.Lock()
		n := m.active.Len()
		m.mu.Unlock()
		lo, hi = min(lo, n), max(hi, n)
	}
	return b.String(), allStable && covered && hi-lo <= 1
}
