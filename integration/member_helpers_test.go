package integration

import (
	"context"
	"fmt"
	"github.com/twmb/franz-go/pkg/kgo"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// ownership is a log of which member held which active task when, shared by the members of a test,
// so a test can prove no active task was ever owned by two members at once.
type ownership struct {
	mu       sync.Mutex
	start    time.Time
	holder   map[tasks.ID]string // current owner of each active task
	overlaps []string
	history  []string
}

func newOwnership() *ownership {
	return &ownership{start: time.Now(), holder: make(map[tasks.ID]string)}
}

func (o *ownership) acquire(member string, s tasks.Set) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at := time.Since(o.start) // monotonic
	for id := range s.All() {
		if h, ok := o.holder[id]; ok && h != member {
			o.overlaps = append(o.overlaps, fmt.Sprintf("%v: %s assigned %s while %s still owned it", at, member, id, h))
		}
		o.holder[id] = member
	}
	o.history = append(o.history, fmt.Sprintf("%v %s +%v", at, member, s))
}

func (o *ownership) release(member string, s tasks.Set) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range s.All() {
		if o.holder[id] == member {
			delete(o.holder, id)
		}
	}
	o.history = append(o.history, fmt.Sprintf("%v %s -%v", time.Since(o.start), member, s))
}

func (o *ownership) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.overlaps) > 0 {
		t.Fatalf("active tasks owned by two members at once:\n%s\nhistory:\n%s",
			strings.Join(o.overlaps, "\n"), strings.Join(o.history, "\n"))
	}
}

// recorder is a Listener that tracks what its member owns and logs it into a shared ownership.
type recorder struct {
	name string
	own  *ownership

	mu       sync.Mutex
	active   tasks.Set
	standby  tasks.Set
	ready    bool
	assigned int
	lost     int
	failNext error // returned once by the next OnTasksAssigned
}

func (r *recorder) OnTasksRevoked(_ context.Context, revoked tasks.Set) error {
	r.mu.Lock()
	r.active = r.active.Difference(revoked)
	r.mu.Unlock()
	if r.own != nil {
		r.own.release(r.name, revoked)
	}
	return nil
}

func (r *recorder) OnTasksAssigned(_ context.Context, a tasks.Assignment, ready bool) error {
	r.mu.Lock()
	if err := r.failNext; err != nil {
		r.failNext = nil
		r.mu.Unlock()
		return err
	}
	prev := r.active
	r.active, r.standby, r.ready = a.Active, a.Standby, ready
	r.assigned++
	r.mu.Unlock()
	if r.own != nil {
		r.own.release(r.name, prev.Difference(a.Active))
		r.own.acquire(r.name, a.Active)
	}
	return nil
}

func (r *recorder) OnAllTasksLost(_ context.Context, lost tasks.Assignment) error {
	r.mu.Lock()
	r.active, r.standby = tasks.Set{}, tasks.Set{}
	r.lost++
	r.mu.Unlock()
	if r.own != nil {
		r.own.release(r.name, lost.Active)
	}
	return nil
}

func (r *recorder) snapshot() (active, standby tasks.Set, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active, r.standby, r.ready
}

// member is a running Manager with its recorder and collected events.
type member struct {
	*membership.Manager
	rec *recorder

	mu     sync.Mutex
	events []membership.Event
	evDone chan struct{}
}

func (m *member) sawEvent(kind membership.EventKind) (membership.Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events {
		if e.Kind == kind {
			return e, true
		}
	}
	return membership.Event{}, false
}

func (m *member) eventKinds() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s []string
	for _, e := range m.events {
		s = append(s, e.Kind.String())
	}
	return strings.Join(s, ",")
}

var testLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))

func logLevel() slog.Level {
	if os.Getenv("STREAMSGROUP_TEST_LOG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelError + 4 // quiet unless asked
}

// startMember starts a member of group with topo; it is closed (leaving the group) at test end.
func startMember(t *testing.T, b *Broker, group string, topo *topology.Topology, name string, own *ownership, mutate ...func(*config.Config)) *member {
	t.Helper()
	return startMemberOn(t, b.Client(t), group, topo, name, own, mutate...)
}

// startMemberOn is startMember on the client cl (one whose connections go through a proxy, say).
func startMemberOn(t *testing.T, cl *kgo.Client, group string, topo *topology.Topology, name string, own *ownership, mutate ...func(*config.Config)) *member {
	t.Helper()
	cfg := config.Default(group)
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.RetryBackoffMax = 500 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxPollInterval = 30 * time.Second
	for _, f := range mutate {
		f(&cfg)
	}
	rec := &recorder{name: name, own: own}
	mgr, err := membership.New(cl, cfg, topo, membership.WithListener(rec),
		membership.WithLogger(testLogger.With("test_member", name)))
	if err != nil {
		t.Fatal(err)
	}
	m := watchAndStart(t, mgr, rec)
	t.Cleanup(func() { m.close(t) })
	return m
}

// watchAndStart wraps mgr as a member that records every event, and starts it.
func watchAndStart(t *testing.T, mgr *membership.Manager, rec *recorder) *member {
	t.Helper()
	m := &member{Manager: mgr, rec: rec, evDone: make(chan struct{})}
	events := mgr.Events()
	go func() {
		defer close(m.evDone)
		for e := range events {
			m.mu.Lock()
			m.events = append(m.events, e)
			m.mu.Unlock()
		}
	}()
	if err := mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *member) close(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	<-m.evDone
}

func activeIDs(s tasks.Set) string {
	var out []string
	for id := range s.All() {
		out = append(out, id.String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func taskRange(sub string, n int) tasks.Set {
	ids := make([]tasks.ID, n)
	for i := range ids {
		ids[i] = tasks.ID{Subtopology: sub, Partition: int32(i)}
	}
	return tasks.NewSet(ids...)
}

func simpleTopology(topic string) *topology.Topology {
	return topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{topic}})
}

func groupMemberIDs(t *testing.T, b *Broker, group string) map[string]bool {
	t.Helper()
	out := make(map[string]bool)
	for _, m := range b.DescribeGroup(t, group).Members {
		out[m.MemberID] = true
	}
	return out
}

func (m *member) lastEvent(kind membership.EventKind) (membership.Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.events) - 1; i >= 0; i-- {
		if m.events[i].Kind == kind {
			return m.events[i], true
		}
	}
	return membership.Event{}, false
}
