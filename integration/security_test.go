package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// securedBroker is a dedicated broker started with `broker.sh start --secure` (see
// integration/kafka/secure.sh): SASL_SSL with SCRAM-SHA-512 users, an SSL listener that requires
// client certificates, StandardAuthorizer with allow.everyone.if.no.acl.found=false.
type securedBroker struct {
	*Broker
	env map[string]string // the env file
}

func (s *securedBroker) get(t *testing.T, key string) string {
	t.Helper()
	v := s.env[key]
	if v == "" {
		t.Fatalf("the secured broker's env file has no %s", key)
	}
	return v
}

// startSecuredBroker starts the secured broker in a run directory of its own and stops it when the
// test ends; the shared broker is not touched.
func startSecuredBroker(t *testing.T) *securedBroker {
	t.Helper()
	shared := Get(t)
	if shared.Script == "" {
		t.Fatal("broker.sh is unknown: cannot start the secured broker")
	}
	dir, err := os.MkdirTemp("", "streamsgroup-secured-")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "STREAMSGROUP_RUN_DIR="+dir)
	if shared.Version != "" {
		env = append(env, "KAFKA_VERSION="+shared.Version)
	}
	run := func(args ...string) error {
		c := exec.Command("bash", append([]string{shared.Script}, args...)...)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("broker.sh %v (run dir %s): %v\n%s", args, dir, err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		if err := run("stop"); err != nil {
			t.Errorf("stopping the secured broker: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	started := time.Now()
	if err := run("start", "--secure"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	s := &securedBroker{Broker: &Broker{RunDir: dir, Script: shared.Script, Version: shared.Version}, env: map[string]string{}}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			s.env[k] = strings.Trim(v, `"`)
		}
	}
	s.Bootstrap, s.Libs = s.env["STREAMSGROUP_BOOTSTRAP"], s.env["STREAMSGROUP_KAFKA_LIBS"]
	t.Logf("secured broker: SASL_SSL at %s, mutual TLS at %s, started in %v", s.get(t, "STREAMSGROUP_SECURE_BOOTSTRAP"),
		s.get(t, "STREAMSGROUP_MTLS_BOOTSTRAP"), time.Since(started).Round(100*time.Millisecond))
	return s
}

// saslProps are the properties of user's SCRAM login on the SASL_SSL listener, as an application
// writes them.
func (s *securedBroker) saslProps(t *testing.T, group, user, password string) map[string]string {
	return map[string]string{
		config.KeyApplicationID:         group,
		config.KeyBootstrapServers:      s.get(t, "STREAMSGROUP_SECURE_BOOTSTRAP"),
		config.KeySecurityProtocol:      "SASL_SSL",
		config.KeySASLMechanism:         "SCRAM-SHA-512",
		config.KeySASLJAASConfig:        fmt.Sprintf(`%s required username="%s" password="%s";`, config.ScramLoginModule, user, password),
		config.KeySSLTruststoreLocation: s.get(t, "STREAMSGROUP_TRUSTSTORE_P12"),
		config.KeySSLTruststorePassword: s.get(t, "STREAMSGROUP_TRUSTSTORE_PASSWORD"),
	}
}

func (s *securedBroker) password(t *testing.T, user string) string {
	return s.get(t, "STREAMSGROUP_SCRAM_PASSWORD_"+user)
}

// connCounter counts the client's connection attempts and requests written (all, and per API key),
// to show that a failure is not followed by a retry storm.
type connCounter struct {
	connects, writes atomic.Int64
	mu               sync.Mutex
	byKey            map[int16]int
}

func (c *connCounter) OnBrokerConnect(kgo.BrokerMetadata, time.Duration, net.Conn, error) {
	c.connects.Add(1)
}

func (c *connCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _ time.Duration, _ time.Duration, _ error) {
	c.writes.Add(1)
	c.mu.Lock()
	if c.byKey == nil {
		c.byKey = map[int16]int{}
	}
	c.byKey[key]++
	c.mu.Unlock()
}

// requests is how many requests of API key were written.
func (c *connCounter) requests(key int16) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKey[key]
}

// String lists the requests written per API name, for messages.
func (c *connCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, n := range c.byKey {
		parts = append(parts, fmt.Sprintf("%s=%d", kmsg.NameForKey(k), n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d connection attempts; requests %s", c.connects.Load(), strings.Join(parts, " "))
}

// logCapture is a slog handler that keeps every record (at every level) and passes on to testLogger,
// so a test can check what a member logged.
type logCapture struct {
	mu      *sync.Mutex
	records *[]slog.Record
	attrs   []slog.Attr
	next    slog.Handler
}

func newLogCapture() *logCapture {
	return &logCapture{mu: &sync.Mutex{}, records: new([]slog.Record), next: testLogger.Handler()}
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCapture) Handle(ctx context.Context, r slog.Record) error {
	l.mu.Lock()
	*l.records = append(*l.records, r.Clone())
	l.mu.Unlock()
	if l.next.Enabled(ctx, r.Level) {
		return l.next.Handle(ctx, r)
	}
	return nil
}

func (l *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	c := *l
	c.attrs = append(slices.Clone(l.attrs), as...)
	c.next = l.next.WithAttrs(as)
	return &c
}

func (l *logCapture) WithGroup(name string) slog.Handler {
	c := *l
	c.next = l.next.WithGroup(name)
	return &c
}

// find returns the first record at level whose message contains text.
func (l *logCapture) find(level slog.Level, text string) (slog.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range *l.records {
		if r.Level == level && strings.Contains(r.Message, text) {
			return r, true
		}
	}
	return slog.Record{}, false
}

// hbCounter counts the member's heartbeats (membership hook).
// hbCounter counts the member's heartbeats (a HookHeartbeatSent) and keeps when each was sent.
type hbCounter struct {
	sent atomic.Int64
	mu   sync.Mutex
	at   []time.Time
}

func (h *hbCounter) OnHeartbeatSent() {
	h.mu.Lock()
	h.at = append(h.at, time.Now())
	h.mu.Unlock()
	h.sent.Add(1)
}

// since returns the send times of the heartbeats from the n-th on (0-based).
func (h *hbCounter) since(n int64) []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n >= int64(len(h.at)) {
		return nil
	}
	return slices.Clone(h.at[n:])
}

// securedMember builds a member's client from properties with config.ClientOptions, as an
// application does, and starts the member. The member's log is kept in the returned capture.
func securedMember(t *testing.T, props map[string]string, topic string, counts *connCounter, hb *hbCounter) (*member, *logCapture) {
	t.Helper()
	return securedMemberOf(t, props, simpleTopology(topic), counts, hb)
}

// securedMemberOf is securedMember with a topology of the test's own.
func securedMemberOf(t *testing.T, props map[string]string, topo *topology.Topology, counts *connCounter, hb *hbCounter) (*member, *logCapture) {
	t.Helper()
	cfg, err := config.FromMap(props)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.RetryBackoffMax = 500 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxPollInterval = 30 * time.Second
	opts, err := cfg.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.WithHooks(counts))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	rec := &recorder{name: cfg.ApplicationID}
	logs := newLogCapture()
	mgr, err := membership.New(cl, cfg, topo, membership.WithListener(rec),
		membership.WithLogger(slog.New(logs).With("test_member", cfg.ApplicationID)), membership.WithHooks(hb))
	if err != nil {
		t.Fatal(err)
	}
	m := watchAndStart(t, mgr, rec)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.Close(ctx) // a stopped member returns its fatal error here; the test checked it
		<-m.evDone
	})
	return m, logs
}

// stoppedQuietly waits for the member to stop, then for every goroutine of it to end (none of
// before, the goroutines of membership, transport and coordinator before the member started, is
// counted), and fails if its client sent anything or tried to connect after the stop. With no
// goroutine of the member left nothing can send for it any more, so the counts then are final: no
// observation window. maxConnects bounds the connection attempts before the stop (see the callers
// for each bound and why); a retry loop makes one per backoff period.
func stoppedQuietly(t *testing.T, m *member, counts *connCounter, before map[string]string, maxConnects int64) {
	t.Helper()
	select {
	case <-m.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the member did not stop (events %s; %v)", m.eventKinds(), counts)
	}
	connects, writes := counts.connects.Load(), counts.writes.Load()
	Eventually(t, 30*time.Second, func() (bool, string) {
		var left []string
		for id, g := range memberGoroutines() {
			if _, ok := before[id]; !ok {
				left = append(left, g)
			}
		}
		return len(left) == 0, fmt.Sprintf("%d goroutines of the stopped member are left:\n%s", len(left), strings.Join(left, "\n\n"))
	})
	if c, w := counts.connects.Load(), counts.writes.Load(); c != connects || w != writes {
		t.Fatalf("after stopping, the client went on: %d more connection attempts, %d more requests (%v)", c-connects, w-writes, counts)
	}
	if connects > maxConnects {
		t.Fatalf("%d connection attempts before the member stopped, want at most %d: a retry loop (%v)", connects, maxConnects, counts)
	}
	// The events channel closes once the stopped member's last event was delivered; the test's reader
	// appends each one after receiving it, so it is read to its end before the events are looked at.
	select {
	case <-m.evDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("the stopped member's events channel did not close (events so far %s)", m.eventKinds())
	}
	if e, ok := m.sawEvent(membership.EventFatal); !ok || !errors.Is(m.Err(), e.Err) {
		t.Fatalf("no EventFatal carrying Err() (%v): events %s", m.Err(), m.eventKinds())
	}
	t.Logf("stopped, and no goroutine of the member left; nothing sent after the stop (%v)", counts)
}

// groupSessionTimeout is the group's streams.session.timeout.ms as DescribeConfigs reports it to cl.
func groupSessionTimeout(t *testing.T, ctx context.Context, cl *kgo.Client, group string) time.Duration {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	r.ConfigNames = []string{machine.KeyGroupSessionTimeout}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			t.Fatalf("describing group %s's configs: %v", group, err)
		}
		for _, c := range res.Configs {
			if c.Name == machine.KeyGroupSessionTimeout && c.Value != nil {
				ms, err := strconv.Atoi(*c.Value)
				if err != nil {
					t.Fatal(err)
				}
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	t.Fatalf("the broker did not report %s for group %s", machine.KeyGroupSessionTimeout, group)
	return 0
}

// minSpan is the least time k successive retry waits of b can take: each as short as the jitter
// allows (Rand returning 0), starting from the shortest (the first retry's).
func minSpan(b heartbeat.Backoff, k int) time.Duration {
	b.Rand = func() float64 { return 0 }
	var d time.Duration
	for i := range k {
		d += b.Delay(i)
	}
	return d
}

// TestSecuredBroker runs members and the CLI against a broker with SASL_SSL, mutual TLS and ACLs
// (PROTOCOL §2: READ on the group, DESCRIBE on the topology's topics).
func TestSecuredBroker(t *testing.T) {
	if Get(t).StreamsHeartbeatMaxVersion(t) < 1 {
		t.Skip("the secured broker runs on the Kafka 4.4 line only, for make test's time: SASL and TLS are negotiated as on 4.2 and 4.3")
	}
	sb := startSecuredBroker(t)
	adminProps := sb.saslProps(t, "admin-tool", "admin", sb.password(t, "admin"))
	adminCfg, err := config.FromMap(adminProps)
	if err != nil {
		t.Fatal(err)
	}
	adminOpts, err := adminCfg.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	adminCl, err := kgo.NewClient(adminOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer adminCl.Close()
	adm := kadm.NewClient(adminCl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	createTopic := func(t *testing.T, name string) {
		t.Helper()
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatalf("creating %s as admin: %v", name, err)
		}
	}
	grant := func(t *testing.T, b *kadm.ACLBuilder) {
		t.Helper()
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("creating ACL %+v: %v", r, r.Err)
			}
		}
	}

	t.Run("NoGroupReadIsFatal", func(t *testing.T) {
		group, topic := Name(t, "sec-noread"), Name(t, "sec-noread-in")
		createTopic(t, topic)
		// bob may find the coordinator (DESCRIBE on the group) and see the topic, but not READ the group.
		grant(t, kadm.NewACLs().Allow("User:bob").Groups(group).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
		grant(t, kadm.NewACLs().Allow("User:bob").Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
		counts, hb, before := &connCounter{}, &hbCounter{}, memberGoroutines()
		m, _ := securedMember(t, sb.saslProps(t, group, "bob", sb.password(t, "bob")), topic, counts, hb)
		// Connections: the probe's to the seed broker, and the coordinator's (the same node, under its
		// own ID, which kgo connects to separately): 2; one more allowed for kgo's own metadata
		// refresh. A loop would open none, but send: the request counts below are the real check.
		stoppedQuietly(t, m, counts, before, 3)
		err := m.Err()
		if !errors.Is(err, kerr.GroupAuthorizationFailed) {
			t.Fatalf("Err() = %v, want GROUP_AUTHORIZATION_FAILED", err)
		}
		if _, ok := errors.AsType[*heartbeat.Error](err); !ok {
			t.Fatalf("Err() = %v (%T), want a *heartbeat.Error", err, err)
		}
		// Within one heartbeat: the broker received exactly one StreamsGroupHeartbeat, answered with
		// the error, and the member sent none after it. (The member may count more heartbeat attempts:
		// the first FindCoordinator of a fresh cluster answers COORDINATOR_NOT_AVAILABLE while
		// __consumer_offsets is created, and each such look-up is an attempt that reaches no
		// coordinator.)
		if n := counts.requests(kmsg.StreamsGroupHeartbeat.Int16()); n != 1 {
			t.Fatalf("%d StreamsGroupHeartbeat requests sent, want the member to stop at the first (%v)", n, counts)
		}
		t.Logf("no READ on the group: %v (%d heartbeat attempts)", err, hb.sent.Load())
	})

	t.Run("NoTopicDescribeKeepsState", func(t *testing.T) {
		group, topic := Name(t, "sec-nodesc"), Name(t, "sec-nodesc-in")
		createTopic(t, topic)
		grant(t, kadm.NewACLs().Allow("User:alice").Groups(group).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
		counts, hb := &connCounter{}, &hbCounter{}
		m, _ := securedMember(t, sb.saslProps(t, group, "alice", sb.password(t, "alice")), topic, counts, hb)
		var denied membership.Event
		Eventually(t, 60*time.Second, func() (bool, string) {
			e, ok := m.sawEvent(membership.EventError)
			denied = e
			return ok && errors.Is(e.Err, kerr.TopicAuthorizationFailed), fmt.Sprintf("events %s, err %v", m.eventKinds(), m.Err())
		})
		// The member keeps heartbeating, gently: after a denial it waits the backoff (retry.backoff.ms
		// 50 ms doubling to retry.backoff.max.ms 500 ms, each wait at least 80% of that) before the
		// next heartbeat. So the retries heartbeats after the first one following the denial cannot
		// come sooner than the shortest backoff waits allow (minSpan), however loaded the machine: a
		// lower bound that only a loop without the backoff (one heartbeat per round trip) breaks.
		const retries = 6
		sentAtDenial := hb.sent.Load()
		Eventually(t, 60*time.Second, func() (bool, string) {
			n := len(hb.since(sentAtDenial))
			return n > retries, fmt.Sprintf("%d heartbeats since the denial, want %d", n, retries+1)
		})
		if m.Err() != nil {
			t.Fatalf("the member stopped: %v", m.Err())
		}
		select {
		case <-m.Done():
			t.Fatal("the member stopped on TOPIC_AUTHORIZATION_FAILED")
		default:
		}
		sends := hb.since(sentAtDenial)[:retries+1]
		span, least := sends[retries].Sub(sends[0]), minSpan(heartbeat.Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}, retries)
		if span < least {
			t.Fatalf("%d heartbeats in %v after the denial, sooner than the backoff allows (%v): a retry storm", retries, span, least)
		}
		t.Logf("denied: %v; %d more heartbeats in %v (the backoff allows no less than %v)", denied.Err, retries, span.Round(time.Millisecond), least)
		grant(t, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
		Eventually(t, 60*time.Second, func() (bool, string) {
			a, _ := m.Assignment()
			return a.Active.Len() == 2, fmt.Sprintf("assignment %v, events %s", a, m.eventKinds())
		})
		if a, _ := m.Assignment(); !a.Active.Equal(tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 0}, tasks.ID{Subtopology: "0", Partition: 1})) {
			t.Fatalf("assignment %v", a)
		}
	})

	t.Run("NoInternalTopicCreate", func(t *testing.T) {
		// AuthorizerIntegrationTest testStreamsGroupHeartbeat{Without,With}InternalTopicCreateAcl
		// (PROTOCOL §1 "With an authorizer"): READ on the group and DESCRIBE on every topic of the
		// topology (its internal topics too), but no CREATE for the internal topics, which the broker
		// creates as the member's principal.
		group, topic := Name(t, "sec-nocreate"), Name(t, "sec-nocreate-in")
		rep, changelog := group+"-agg-repartition", group+"-store-changelog"
		createTopic(t, topic)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = adm.DeleteTopics(ctx, rep, changelog)
		})
		grant(t, kadm.NewACLs().Allow("User:alice").Groups(group).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
		grant(t, kadm.NewACLs().Allow("User:alice").Topics(topic, rep, changelog).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
		topo := topology.MustNew(
			topology.Subtopology{ID: "0", SourceTopics: []string{topic}, RepartitionSinkTopics: []string{rep}},
			topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{{Name: rep}},
				StateChangelogTopics: []topology.TopicInfo{{Name: changelog}}},
		)
		counts, hb := &connCounter{}, &hbCounter{}
		m, _ := securedMemberOf(t, sb.saslProps(t, group, "alice", sb.password(t, "alice")), topo, counts, hb)
		internal := []string{rep, changelog}
		slices.Sort(internal)
		exist := func() map[string]int {
			t.Helper()
			td, err := adm.ListTopics(ctx, internal...)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for name, d := range td {
				if d.Err == nil {
					out[name] = len(d.Partitions)
				}
			}
			return out
		}

		// Without CREATE: the broker answers MISSING_INTERNAL_TOPICS with "Unauthorized to CREATE on
		// topics …" appended to the detail, and creates nothing. The member reports it as a typed
		// error that says what to grant, and stays in the group, without tasks and without failing.
		var denied membership.Event
		Eventually(t, 60*time.Second, func() (bool, string) {
			e, ok := m.lastEvent(membership.EventMissingInternalTopics)
			denied = e
			return ok, fmt.Sprintf("events %s, err %v", m.eventKinds(), m.Err())
		})
		de, ok := errors.AsType[*membership.InternalTopicsDeniedError](denied.Err)
		if !ok || !slices.Equal(de.Topics, internal) || !strings.Contains(denied.Message, "Unauthorized to CREATE on topics") ||
			!slices.Equal(denied.Topics, internal) {
			t.Fatalf("without CREATE: %v (err %T); want an *membership.InternalTopicsDeniedError naming %v, and the broker's detail", denied, denied.Err, internal)
		}
		t.Logf("without CREATE the member reports: %v", denied.Err)
		sent := hb.sent.Load()
		Eventually(t, 60*time.Second, func() (bool, string) {
			return hb.sent.Load() >= sent+3, fmt.Sprintf("%d heartbeats since the denial", hb.sent.Load()-sent)
		})
		if a, _ := m.Assignment(); !a.Active.IsEmpty() || m.Err() != nil {
			t.Fatalf("while the internal topics cannot be created: assignment %v, err %v; want no tasks and a running member", a, m.Err())
		}
		if _, ok := m.sawEvent(membership.EventStatusCleared); ok {
			t.Fatalf("a status cleared although nothing may create the internal topics: events %s", m.eventKinds())
		}
		if got := exist(); len(got) != 0 {
			t.Fatalf("internal topics %v exist although the member's principal may not create them", got)
		}

		// With CREATE on the application's topics (one PREFIXED ACL, as the error suggests) the
		// broker creates them at the member's next heartbeat, whose answer still says they are
		// missing (no error now); then the status clears and the tasks come.
		grant(t, kadm.NewACLs().Allow("User:alice").Topics(group+"-").Operations(kadm.OpCreate).ResourcePatternType(kadm.ACLPatternPrefixed))
		Eventually(t, 60*time.Second, func() (bool, string) {
			a, _ := m.Assignment()
			return a.Active.Len() == 4, fmt.Sprintf("assignment %v, events %s", a, m.eventKinds())
		})
		// The coordinator may see the new topics a moment before the broker's answers to Metadata do.
		want := map[string]int{rep: 2, changelog: 2}
		Eventually(t, 30*time.Second, func() (bool, string) {
			got := exist()
			return maps.Equal(got, want), fmt.Sprintf("internal topics and their partition counts: %v, want %v", got, want)
		})
		if e, _ := m.lastEvent(membership.EventMissingInternalTopics); e.Err != nil {
			t.Fatalf("after the grant the last missing-internal-topics event still carries %v", e.Err)
		}
		if e, ok := m.lastEvent(membership.EventStatusCleared); !ok || e.Status == nil || e.Status.Code != heartbeat.MissingInternalTopics {
			t.Fatalf("no MISSING_INTERNAL_TOPICS cleared: events %s", m.eventKinds())
		}
		if m.Err() != nil {
			t.Fatalf("the member failed: %v", m.Err())
		}
		t.Logf("with CREATE: topics %v created, tasks %v; events %s", exist(), activeIDs(func() tasks.Set { a, _ := m.Assignment(); return a.Active }()), m.eventKinds())
	})

	t.Run("WrongPasswordIsTypedAtStart", func(t *testing.T) {
		group := Name(t, "sec-badpw")
		counts, hb, before := &connCounter{}, &hbCounter{}, memberGoroutines()
		m, _ := securedMember(t, sb.saslProps(t, group, "alice", "not-"+sb.password(t, "alice")), "unused", counts, hb)
		// The capability probe is the member's first request and the login fails on its connection:
		// one connection attempt, and the member stops without another.
		stoppedQuietly(t, m, counts, before, 1)
		err := m.Err()
		ae, ok := errors.AsType[*heartbeat.AuthError](err)
		if !ok || ae.Kind != heartbeat.AuthSASL || !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("Err() = %v (%T), want a SASL *heartbeat.AuthError", err, err)
		}
		if strings.Contains(err.Error(), sb.password(t, "alice")) {
			t.Fatalf("the error shows the password: %v", err)
		}
		if hb.sent.Load() != 0 {
			t.Fatalf("%d heartbeats sent after a failed login", hb.sent.Load())
		}
		t.Logf("wrong password: %v", err)
	})

	t.Run("UnknownCAIsTypedAtStart", func(t *testing.T) {
		group := Name(t, "sec-unknownca")
		props := sb.saslProps(t, group, "alice", sb.password(t, "alice"))
		props[config.KeySSLTruststoreLocation] = sb.get(t, "STREAMSGROUP_UNKNOWN_CA_PEM")
		delete(props, config.KeySSLTruststorePassword)
		counts, hb, before := &connCounter{}, &hbCounter{}, memberGoroutines()
		m, _ := securedMember(t, props, "unused", counts, hb)
		// As with a wrong password: the probe's connection fails its handshake, and nothing follows.
		stoppedQuietly(t, m, counts, before, 1)
		err := m.Err()
		if ae, ok := errors.AsType[*heartbeat.AuthError](err); !ok || ae.Kind != heartbeat.AuthTLS {
			t.Fatalf("Err() = %v (%T), want a TLS *heartbeat.AuthError", err, err)
		}
		t.Logf("unknown CA: %v", err)
	})

	t.Run("MutualTLS", func(t *testing.T) {
		for name, keystore := range map[string]map[string]string{
			"PKCS12": {config.KeySSLKeystoreLocation: sb.get(t, "STREAMSGROUP_CLIENT_P12"),
				config.KeySSLKeystorePassword: sb.get(t, "STREAMSGROUP_CLIENT_P12_PASSWORD")},
			"PEM": {config.KeySSLKeystoreLocation: sb.get(t, "STREAMSGROUP_CLIENT_PEM")},
		} {
			props := map[string]string{
				config.KeyApplicationID:         "mtls",
				config.KeyBootstrapServers:      sb.get(t, "STREAMSGROUP_MTLS_BOOTSTRAP"),
				config.KeySecurityProtocol:      "SSL",
				config.KeySSLTruststoreLocation: sb.get(t, "STREAMSGROUP_CA_PEM"),
			}
			for k, v := range keystore {
				props[k] = v
			}
			cfg, err := config.FromMap(props)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := cfg.ClientOptions()
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			// ApiVersions and Metadata need no ACL: the request is answered only if the broker
			// accepted the client certificate.
			md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cl.Close()
			if err != nil || len(md.Brokers) != 1 {
				t.Fatalf("%s keystore: metadata %v, %v", name, md.Brokers, err)
			}
		}
	})

	t.Run("MutualTLSWithoutCertificateIsTypedAtStart", func(t *testing.T) {
		// The listener requires a client certificate and this client has none: the broker ends the
		// handshake with a TLS alert, which the member must take as fatal, not as a network blip.
		props := map[string]string{
			config.KeyApplicationID:         Name(t, "sec-nocert"),
			config.KeyBootstrapServers:      sb.get(t, "STREAMSGROUP_MTLS_BOOTSTRAP"),
			config.KeySecurityProtocol:      "SSL",
			config.KeySSLTruststoreLocation: sb.get(t, "STREAMSGROUP_CA_PEM"),
		}
		counts, hb, before := &connCounter{}, &hbCounter{}, memberGoroutines()
		m, _ := securedMember(t, props, "unused", counts, hb)
		// The probe's connection is refused by the broker's alert: one connection attempt.
		stoppedQuietly(t, m, counts, before, 1)
		err := m.Err()
		if ae, ok := errors.AsType[*heartbeat.AuthError](err); !ok || ae.Kind != heartbeat.AuthTLS ||
			!strings.Contains(err.Error(), config.KeySSLKeystoreLocation) {
			t.Fatalf("Err() = %v (%T), want a TLS *heartbeat.AuthError naming ssl.keystore.location", err, err)
		}
		if hb.sent.Load() != 0 {
			t.Fatalf("%d heartbeats sent after a refused certificate", hb.sent.Load())
		}
		t.Logf("no client certificate: %v", err)
	})

	t.Run("GroupACLsAndSessionGuard", func(t *testing.T) {
		// The least a member needs is READ on the group and DESCRIBE on its topics. It then works,
		// but DescribeConfigs of the group is refused, so it cannot learn the group's session timeout:
		// it warns once and runs without the session guard. With DESCRIBE_CONFIGS on the group too,
		// the guard is armed with the group's session timeout (the broker's default here: 6 s).
		run := func(t *testing.T, describeConfigs bool) (*member, *logCapture, *connCounter, string) {
			group, topic := Name(t, "sec-acls"), Name(t, "sec-acls-in")
			createTopic(t, topic)
			ops := []kadm.ACLOperation{kadm.OpRead}
			if describeConfigs {
				ops = append(ops, kadm.OpDescribeConfigs)
			}
			grant(t, kadm.NewACLs().Allow("User:alice").Groups(group).Operations(ops...).ResourcePatternType(kadm.ACLPatternLiteral))
			grant(t, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
			counts := &connCounter{}
			m, logs := securedMember(t, sb.saslProps(t, group, "alice", sb.password(t, "alice")), topic, counts, &hbCounter{})
			Eventually(t, 60*time.Second, func() (bool, string) {
				a, _ := m.Assignment()
				return a.Active.Len() == 2 && m.State() == membership.Stable, fmt.Sprintf("assignment %v, state %s, events %s", a, m.State(), m.eventKinds())
			})
			return m, logs, counts, group
		}
		t.Run("ReadAndDescribeOnly", func(t *testing.T) {
			m, logs, counts, _ := run(t, false)
			var warning slog.Record
			Eventually(t, 30*time.Second, func() (bool, string) {
				var ok bool
				warning, ok = logs.find(slog.LevelWarn, "session guard off")
				return ok, fmt.Sprintf("no warning yet (%v)", counts)
			})
			var attrs []string
			warning.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
			if !strings.Contains(strings.Join(attrs, " "), kerr.GroupAuthorizationFailed.Message) {
				t.Fatalf("the warning does not carry GROUP_AUTHORIZATION_FAILED: %s %v", warning.Message, attrs)
			}
			if d := m.Snapshot().SessionTimeout; d != 0 {
				t.Fatalf("session timeout %v without DESCRIBE_CONFIGS, want 0 (guard off)", d)
			}
			// Refused once, not asked again before a rejoin: one DescribeConfigs.
			if n := counts.requests(kmsg.DescribeConfigs.Int16()); n != 1 {
				t.Fatalf("%d DescribeConfigs requests, want 1 (%v)", n, counts)
			}
			if _, ok := m.sawEvent(membership.EventFatal); ok || m.Err() != nil {
				t.Fatalf("the member failed: %v (events %s)", m.Err(), m.eventKinds())
			}
			t.Logf("READ on the group, DESCRIBE on the topic: tasks, and the warning %q %v", warning.Message, attrs)
		})
		t.Run("WithDescribeConfigs", func(t *testing.T) {
			m, logs, _, group := run(t, true)
			// The guard is armed with what the broker reports as the group's session timeout (the
			// admin asks the same question the member asks).
			want := groupSessionTimeout(t, ctx, adminCl, group)
			Eventually(t, 30*time.Second, func() (bool, string) {
				d := m.Snapshot().SessionTimeout
				return d == want, fmt.Sprintf("session timeout %v, the broker reports %v", d, want)
			})
			if r, ok := logs.find(slog.LevelWarn, "session guard off"); ok {
				t.Fatalf("warned %q with DESCRIBE_CONFIGS granted", r.Message)
			}
			if want != 6*time.Second {
				// Kafka 4.2.x reports the static default (45 s) for a group without its own value,
				// not the broker's group.streams.session.timeout.ms (6 s here), which is what it
				// expires members with.
				t.Logf("note: the broker reports %v as the group's session timeout, its group.streams.session.timeout.ms is 6s", want)
			}
		})
	})

	t.Run("CLI", func(t *testing.T) {
		group, topic := Name(t, "sec-cli"), Name(t, "sec-cli-in")
		createTopic(t, topic)
		grant(t, kadm.NewACLs().Allow("User:alice").Groups(group).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
		grant(t, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
		m, _ := securedMember(t, sb.saslProps(t, group, "alice", sb.password(t, "alice")), topic, &connCounter{}, &hbCounter{})
		Eventually(t, 60*time.Second, func() (bool, string) {
			a, _ := m.Assignment()
			return a.Active.Len() == 2, "events " + m.eventKinds()
		})
		bin := Get(t).BuildTool(t, "./cmd/streams-groups")
		dir := t.TempDir()
		writeConfig := func(password string) string {
			f := filepath.Join(dir, "client-"+password+".properties")
			text := fmt.Sprintf("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
				"sasl.jaas.config=%s required \\\n  username=\"admin\" \\\n  password=\"%s\";\n"+
				"ssl.truststore.location=%s\n", config.ScramLoginModule, password, sb.get(t, "STREAMSGROUP_CA_PEM"))
			if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			return f
		}
		cli := func(args ...string) (string, int) {
			cmd := exec.Command(bin, append([]string{"--bootstrap-server", sb.get(t, "STREAMSGROUP_SECURE_BOOTSTRAP"), "--timeout", "20000"}, args...)...)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			return string(out), code
		}
		good := writeConfig(sb.password(t, "admin"))
		if out, code := cli("--command-config", good, "--list"); code != 0 || !strings.Contains(out, group) {
			t.Fatalf("--list: exit %d\n%s", code, out)
		}
		if out, code := cli("--command-config", good, "--describe", "--group", group); code != 0 || !strings.Contains(out, group) {
			t.Fatalf("--describe: exit %d\n%s", code, out)
		}
		wrong := "wrong-" + sb.password(t, "admin")
		out, code := cli("--command-config", writeConfig(wrong), "--list")
		if code == 0 || !strings.Contains(out, "sasl.jaas.config") || strings.Contains(out, wrong) {
			t.Fatalf("wrong password: exit %d, want a non-zero exit and a message naming sasl.jaas.config without the password:\n%s", code, out)
		}
		t.Logf("the CLI with a wrong password (exit %d): %s", code, strings.TrimSpace(out))
	})
}
