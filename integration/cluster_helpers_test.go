package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// offsetsTopic is the topic whose partition leaders are the group coordinators.
const offsetsTopic = "__consumer_offsets"

// Cluster is a dedicated multi-node Kafka cluster started with `broker.sh start --brokers N` (the
// shared broker's script and Kafka version, its own run directory), stopped when the test ends. Node
// 1 is the only controller (tests stop and kill broker-only nodes) unless the cluster was started
// with more voters (startProductionCluster: every node a controller too, any one may stop).
type Cluster struct {
	Addrs    map[int32]string // node ID -> host:port of its PLAINTEXT listener
	Versions map[int32]string // node ID -> its Kafka version (all the same unless KAFKA_NODE_VERSIONS)
	Libs     string
	RunDir   string

	script  string
	env     []string
	voters  int
	mu      sync.Mutex
	stopped map[int32]bool
}

// startCluster starts an n-node cluster for the test. A cluster that cannot start fails the test:
// a skip would let the failover tests pass without running on exactly the machines (little memory,
// slow disks) where nobody looks at them.
func startCluster(t *testing.T, n int) *Cluster {
	t.Helper()
	return startClusterEnv(t, n)
}

// startClusterEnv is startCluster with more environment (KEY=value) for broker.sh, after the shared
// broker's: KAFKA_NODE_VERSIONS for a cluster of mixed versions, say.
func startClusterEnv(t *testing.T, n int, env ...string) *Cluster {
	t.Helper()
	shared := Get(t)
	if shared.Script == "" {
		t.Fatal("broker.sh is unknown: cannot start a cluster")
	}
	dir, err := os.MkdirTemp("", "streamsgroup-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{RunDir: dir, script: shared.Script, Addrs: make(map[int32]string), Versions: make(map[int32]string), stopped: make(map[int32]bool), voters: 1}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "STREAMSGROUP_CLUSTER_VOTERS="); ok {
			c.voters, _ = strconv.Atoi(v)
		}
	}
	c.env = append(os.Environ(), "STREAMSGROUP_RUN_DIR="+dir)
	if shared.Version != "" {
		c.env = append(c.env, "KAFKA_VERSION="+shared.Version)
	}
	c.env = append(c.env, env...)
	t.Cleanup(func() {
		if err := c.run("stop"); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	started := time.Now()
	if err := c.run("start", "--brokers", strconv.Itoa(n)); err != nil {
		msg := err.Error()
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		t.Fatalf("a %d-node cluster (%s) could not start, so it cannot be tested: %s", n, strings.Join(env, " "), msg)
	}
	envFile, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(envFile), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if k == "STREAMSGROUP_KAFKA_LIBS" {
			c.Libs = v
		}
		if rest, ok := strings.CutPrefix(k, "STREAMSGROUP_NODE_"); ok {
			for suffix, into := range map[string]map[int32]string{"_ADDRESS": c.Addrs, "_VERSION": c.Versions} {
				if id, ok := strings.CutSuffix(rest, suffix); ok {
					nid, err := strconv.Atoi(id)
					if err != nil {
						t.Fatalf("env file: %s", line)
					}
					into[int32(nid)] = v
				}
			}
		}
	}
	if len(c.Addrs) != n {
		t.Fatalf("the cluster's env file names %d node addresses, want %d:\n%s", len(c.Addrs), n, envFile)
	}
	t.Logf("%d-node cluster %v (Kafka %v) started in %v", n, c.Addrs, c.Versions, time.Since(started).Round(100*time.Millisecond))
	return c
}

func (c *Cluster) run(args ...string) error {
	cmd := exec.Command("bash", append([]string{c.script}, args...)...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("broker.sh %s (run dir %s): %v\n%s", strings.Join(args, " "), c.RunDir, err, out)
	}
	return nil
}

// StopNode stops node id: a clean shutdown (SIGTERM, the broker moves its leaderships away first), or
// a crash (SIGKILL) when kill is set. Node 1, the controller, is refused.
func (c *Cluster) StopNode(t *testing.T, id int32, kill bool) {
	t.Helper()
	if id == 1 && c.voters == 1 {
		t.Fatal("node 1 is the cluster's only controller: stopping it would stop every leadership change")
	}
	args := []string{"stop-node", strconv.Itoa(int(id))}
	if kill {
		args = append(args, "--kill")
	}
	if err := c.run(args...); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.stopped[id] = true
	c.mu.Unlock()
}

// Alive returns the IDs of the nodes not stopped by the test, in order.
func (c *Cluster) Alive() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int32
	for id := range c.Addrs {
		if !c.stopped[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Seeds returns the addresses of every node.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(c.Addrs)) {
		out = append(out, c.Addrs[id])
	}
	return out
}

// Client returns a franz-go client seeded with every node, closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates a topic replicated on every node (so that stopping one keeps its partitions
// online) and deletes it when the test ends.
func (c *Cluster) CreateTopic(t *testing.T, adm *kadm.Client, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, int16(min(len(c.Addrs), 3)), nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating topic %s: %v", name, err)
	}
}

// Coordinator asks the cluster (FindCoordinator, through kadm) which node coordinates group,
// retrying while __consumer_offsets is being created or moves.
func (c *Cluster) Coordinator(t *testing.T, adm *kadm.Client, group string) int32 {
	t.Helper()
	var node int32
	Eventually(t, 60*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := adm.FindGroupCoordinators(ctx, group)[group]
		if r.Err != nil {
			return false, fmt.Sprintf("FindCoordinator(%s): %v %s", group, r.Err, r.ErrMessage)
		}
		node = r.NodeID
		return true, ""
	})
	return node
}

// OffsetsLeaders returns the leader of each __consumer_offsets partition and its replicas, asking an
// alive node directly (kgo answers metadata requests sent through Client.Request from its cache for
// a while; a request to one broker is not cached).
func (c *Cluster) OffsetsLeaders(t *testing.T, cl *kgo.Client) (leaders map[int32]int32, replicas map[int32][]int32) {
	t.Helper()
	var last error
	for _, id := range c.Alive() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(offsetsTopic)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(id)).Request(ctx, req)
		cancel()
		if err != nil {
			last = err
			continue
		}
		leaders, replicas = make(map[int32]int32), make(map[int32][]int32)
		for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
			if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
				last = fmt.Errorf("metadata of %s from node %d: %w", offsetsTopic, id, err)
				leaders = nil
				break
			}
			for _, p := range tp.Partitions {
				leaders[p.Partition], replicas[p.Partition] = p.Leader, p.Replicas
			}
		}
		if leaders != nil {
			return leaders, replicas
		}
	}
	t.Fatalf("no alive node answered the metadata of %s: %v", offsetsTopic, last)
	return nil, nil
}

// MoveCoordinators moves the leadership of every __consumer_offsets partition led by from to node to,
// as an operator does: reorder the replicas so that to is preferred (AlterPartitionAssignments, the
// same replica set, so no data moves), then elect the preferred leaders (ElectLeaders). It returns
// when the election was sent and when it was answered, and waits until the metadata shows to leading
// those partitions. during, when not nil, is called right before the election is sent.
func (c *Cluster) MoveCoordinators(t *testing.T, cl *kgo.Client, from, to int32, during func()) (sent, answered time.Time) {
	t.Helper()
	adm := kadm.NewClient(cl)
	leaders, replicas := c.OffsetsLeaders(t, cl)
	var req kadm.AlterPartitionAssignmentsReq
	var set kadm.TopicsSet
	for p, l := range leaders {
		if l != from {
			continue
		}
		if !slices.Contains(replicas[p], to) {
			t.Fatalf("node %d is not a replica of %s-%d (%v)", to, offsetsTopic, p, replicas[p])
		}
		order := []int32{to}
		for _, r := range replicas[p] {
			if r != to {
				order = append(order, r)
			}
		}
		req.Assign(offsetsTopic, p, order)
		set.Add(offsetsTopic, p)
	}
	if len(set) == 0 {
		t.Fatalf("node %d leads no %s partition (leaders %v)", from, offsetsTopic, leaders)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("reordering the replicas of %v: %v", set, err)
	}
	Eventually(t, 30*time.Second, func() (bool, string) {
		r, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		r.Each(func(kadm.ListPartitionReassignmentsResponse) { n++ })
		return n == 0, fmt.Sprintf("%d reassignments still running", n)
	})
	if during != nil {
		during()
	}
	sent = time.Now()
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	answered = time.Now()
	if err != nil {
		t.Fatalf("electing the preferred leaders of %v: %v", set, err)
	}
	for _, ps := range res {
		for p, r := range ps {
			if r.Err != nil {
				t.Fatalf("electing node %d leader of %s-%d: %v %s", to, offsetsTopic, p, r.Err, r.ErrMessage)
			}
		}
	}
	Eventually(t, 30*time.Second, func() (bool, string) {
		now, _ := c.OffsetsLeaders(t, cl)
		for p := range set[offsetsTopic] {
			if now[p] != to {
				return false, fmt.Sprintf("leaders %v, want %d for %v", now, to, set)
			}
		}
		return true, ""
	})
	return sent, answered
}

// BrokerConfigMillis reads a broker config (in ms) of node id, as the broker runs with it.
func (c *Cluster) BrokerConfigMillis(t *testing.T, adm *kadm.Client, id int32, key string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, id)
	if err != nil {
		t.Fatalf("describing node %d's configs: %v", id, err)
	}
	for _, rc := range rcs {
		for _, cfg := range rc.Configs {
			if cfg.Key == key && cfg.Value != nil {
				ms, err := strconv.Atoi(*cfg.Value)
				if err != nil {
					t.Fatalf("%s=%q: %v", key, *cfg.Value, err)
				}
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	t.Fatalf("node %d does not report %s", id, key)
	return 0
}

// Describe describes group at its coordinator; nil and the error while that fails (the coordinator
// may be moving).
func (c *Cluster) Describe(cl *kgo.Client, group string) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return transport.New(cl, group, 2*time.Second, heartbeat.Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}).Describe(ctx)
}

// hbAnswer is one heartbeat result a member's coordWatch saw.
type hbAnswer struct {
	at    time.Time
	class heartbeat.Class
	sent  time.Time // when the heartbeat was sent
	err   error
	coord int32 // the coordinator the transport reported after this result (the answering node)
}

// coordWatch is a metrics hook (membership.WithHooks) that keeps every heartbeat result with the
// coordinator node the transport reported for it, so a test can time the rediscovery of a moved
// coordinator: the first failure after a move, and the first success answered by another node.
type coordWatch struct {
	mu      sync.Mutex
	coord   int32
	answers []hbAnswer
}

// OnCoordinatorChanged implements membership.HookCoordinatorChanged. The Manager asks the transport
// after each heartbeat result and tells this hook before it tells OnHeartbeatAnswered about the same
// result, so coord is the node that answered.
func (w *coordWatch) OnCoordinatorChanged(node int32) {
	w.mu.Lock()
	w.coord = node
	w.mu.Unlock()
}

// OnHeartbeatAnswered implements membership.HookHeartbeatAnswered.
func (w *coordWatch) OnHeartbeatAnswered(rtt time.Duration, class heartbeat.Class, err error) {
	now := time.Now()
	w.mu.Lock()
	w.answers = append(w.answers, hbAnswer{at: now, sent: now.Add(-rtt), class: class, err: err, coord: w.coord})
	w.mu.Unlock()
}

// after returns the results since t.
func (w *coordWatch) after(t time.Time) []hbAnswer {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []hbAnswer
	for _, a := range w.answers {
		if !a.at.Before(t) {
			out = append(out, a)
		}
	}
	return out
}

// rediscovery is how one member went through a coordinator move: its last success before it, its
// first failed heartbeat after it, its first answer from a node other than the old coordinator (the
// rediscovery: that node may still be loading the group and answer COORDINATOR_LOAD_IN_PROGRESS) and
// its first success from such a node.
type rediscovery struct {
	lastBefore   *hbAnswer
	firstFail    *hbAnswer
	firstNew     *hbAnswer
	firstSuccess *hbAnswer
	failures     []string
	// failedBeforeNew counts the failed heartbeats from the first failure up to the first answer
	// from a new node: how many tries the member needed to find the new coordinator.
	failedBeforeNew int
}

// rediscovered reads w's results since the move: done when a success from another node than old came.
func (w *coordWatch) rediscovered(since time.Time, old int32) (r rediscovery, done bool) {
	defer func() { // named results: this sets what the returns below return
		// The last success before the outage: before the first failure (a heartbeat may still have
		// been answered between the fault's start and its effect), or before the fault.
		until := since
		if r.firstFail != nil {
			until = r.firstFail.at
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := len(w.answers) - 1; i >= 0; i-- {
			if a := w.answers[i]; a.at.Before(until) && a.class == 0 {
				r.lastBefore = &a
				return
			}
		}
	}()
	for _, a := range w.after(since) {
		isNew := a.coord != old && a.coord != 0
		if isNew && r.firstNew == nil {
			r.firstNew = &a
		}
		if a.class != 0 {
			if r.firstFail == nil {
				r.firstFail = &a
			}
			if r.firstNew == nil {
				r.failedBeforeNew++
			}
			r.failures = append(r.failures, fmt.Sprintf("+%v (coordinator %d) %v", a.at.Sub(since).Round(time.Millisecond), a.coord, a.err))
			continue
		}
		if isNew {
			r.firstSuccess = &a
			return r, true
		}
	}
	return r, false
}

// clusterMember is a member on the cluster: the integration member (recorder, events) with its
// coordinator watch.
type clusterMember struct {
	*member
	name  string
	watch *coordWatch
}

// startClusterMember starts a member of group on the cluster with its own client (seeded with every
// node) and the test's usual fast settings, and opts after those of the test (a task-offsets
// provider, say); it is closed (leaving the group) at test end.
func startClusterMember(t *testing.T, c *Cluster, group string, topo *topology.Topology, name string, own *ownership, opts ...membership.Option) *clusterMember {
	t.Helper()
	cfg := config.Default(group)
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.RetryBackoffMax = 500 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.MaxPollInterval = 30 * time.Second
	rec := &recorder{name: name, own: own}
	w := &coordWatch{}
	mgr, err := membership.New(c.Client(t), cfg, topo, append([]membership.Option{membership.WithListener(rec), membership.WithHooks(w),
		membership.WithLogger(testLogger.With("test_member", name))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m := watchAndStart(t, mgr, rec)
	t.Cleanup(func() { m.close(t) })
	return &clusterMember{member: m, name: name, watch: w}
}

// settledOn reports whether the broker and the members agree on a settled group: the group is
// Stable, has exactly these members, every task of all is owned by exactly one of them, and each
// member holds exactly what the broker says it is assigned, in state Stable.
func (c *Cluster) settledOn(cl *kgo.Client, group string, all tasks.Set, ms []*clusterMember) (bool, string) {
	g, err := c.Describe(cl, group)
	if err != nil {
		return false, "describe: " + err.Error()
	}
	if !strings.EqualFold(g.State, "stable") {
		return false, fmt.Sprintf("group state %s (epoch %d)", g.State, g.Epoch)
	}
	if len(g.Members) != len(ms) {
		return false, fmt.Sprintf("%d members at the broker, want %d", len(g.Members), len(ms))
	}
	byID := make(map[string]kmsg.StreamsGroupDescribeResponseGroupMember)
	for _, bm := range g.Members {
		byID[bm.MemberID] = bm
	}
	union, total := tasks.Set{}, 0
	var why []string
	for _, m := range ms {
		id, _ := m.Member()
		bm, ok := byID[id]
		if !ok {
			return false, fmt.Sprintf("member %s (%s) unknown to the broker", m.name, id)
		}
		assigned := tasks.FromKmsg(bm.Assignment.ActiveTasks)
		held, _, _ := m.rec.snapshot()
		if !held.Equal(assigned) || m.State() != membership.Stable {
			why = append(why, fmt.Sprintf("%s holds %v (%s), broker assigns %v", m.name, held, m.State(), assigned))
		}
		union = union.Union(assigned)
		total += assigned.Len()
	}
	if len(why) > 0 {
		return false, strings.Join(why, "; ")
	}
	if !union.Equal(all) || total != all.Len() {
		return false, fmt.Sprintf("assigned %v (%d in all), want each of %v once", union, total, all)
	}
	return true, ""
}

// memberGoroutines returns the IDs of the goroutines running code of the membership, transport or
// coordinator packages (a member's own goroutines), from a dump of all stacks.
func memberGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := make(map[string]string)
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		id, ok := strings.CutPrefix(header, "goroutine ")
		if !ok {
			continue
		}
		id, _, _ = strings.Cut(id, " ")
		if strings.Contains(g, "streamsgroup/streamsgroup/membership.") ||
			strings.Contains(g, "streamsgroup/streamsgroup/internal/transport.") ||
			strings.Contains(g, "streamsgroup/streamsgroup/internal/coordinator.") {
			out[id] = g
		}
	}
	return out
}

// productionProps are the server properties of startProductionCluster beyond broker.sh's: every
// write needs two in-sync replicas, the transaction log's too.
const productionProps = "min.insync.replicas=2 transaction.state.log.min.isr=2"

// startProductionCluster starts the cluster exactly-once is meant to run on: 3 nodes, each a
// controller (a quorum of three, so any one node may fail, the active controller included) and a
// broker; topics the test creates get 3 replicas (CreateTopic) and, like the internal topics of an
// app with replication.factor=3, need 2 of them in sync.
func startProductionCluster(t *testing.T) *Cluster {
	t.Helper()
	return startClusterEnv(t, 3, "STREAMSGROUP_CLUSTER_VOTERS=3", "STREAMSGROUP_BROKER_EXTRA="+productionProps)
}

// StartNode starts node id again (broker.sh start-node: on its ports and data) and waits until it
// is registered.
func (c *Cluster) StartNode(t *testing.T, id int32) {
	t.Helper()
	if err := c.run("start-node", strconv.Itoa(int(id))); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	delete(c.stopped, id)
	c.mu.Unlock()
}

// WaitInSync waits until every partition of every topic (the internal ones too) has a leader and
// all its replicas in sync: what an operator waits for before the next node of a rolling restart.
func (c *Cluster) WaitInSync(t *testing.T, adm *kadm.Client) {
	t.Helper()
	Eventually(t, 2*time.Minute, everyPartition(adm, func(td kadm.TopicDetail, p kadm.PartitionDetail) string {
		if td.Err != nil {
			return fmt.Sprintf("%s: %v", td.Topic, td.Err)
		}
		if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			return fmt.Sprintf("%s[%d]: leader %d, in sync %v of %v", td.Topic, p.Partition, p.Leader, p.ISR, p.Replicas)
		}
		return ""
	}))
}

// LeadsNothing waits until node id leads no partition (the controller fenced it after a crash and
// moved its leaderships).
func (c *Cluster) LeadsNothing(t *testing.T, adm *kadm.Client, id int32) {
	t.Helper()
	Eventually(t, time.Minute, everyPartition(adm, func(td kadm.TopicDetail, p kadm.PartitionDetail) string {
		if p.Leader == id {
			return fmt.Sprintf("node %d still leads %s[%d]", id, td.Topic, p.Partition)
		}
		return ""
	}))
}

// everyPartition is an Eventually condition: every partition of every topic (the internal ones too)
// passes bad (which says what is wrong, or ""); a topic with an error and no partitions is still
// shown to bad once.
func everyPartition(adm *kadm.Client, bad func(kadm.TopicDetail, kadm.PartitionDetail) string) func() (bool, string) {
	return func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tds, err := adm.ListTopicsWithInternal(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, td := range tds.Sorted() {
			ps := td.Partitions.Sorted()
			if len(ps) == 0 && td.Err != nil {
				ps = []kadm.PartitionDetail{{Leader: -1}}
			}
			for _, p := range ps {
				if why := bad(td, p); why != "" {
					return false, why
				}
			}
		}
		return true, ""
	}
}
