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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/transport"
)

// Broker is the real Kafka broker the tests run against. Either the environment names one that is
// already running (STREAMSGROUP_BOOTSTRAP, as written by `broker.sh start` into its env file), or
// Main starts one with kafka/broker.sh and stops it when the tests are done.
type Broker struct {
	Bootstrap string // host:port of the PLAINTEXT listener (a cluster's: every node's, comma separated)
	Version   string // Apache Kafka version, e.g. 4.4.0
	Libs      string // directory of the broker's jars (for Kafka's own tools)
	RunDir    string // the broker's run directory (config, data, log)
	Script    string // path of broker.sh

	startedHere bool
	binDir      string // where BuildTool puts binaries; removed by Main
}

var current *Broker

// Main is the body of TestMain for packages with real-broker tests. It finds or starts the broker and
// runs the tests. If no broker can be had the run fails and says why: integration tests never skip
// silently.
func Main(m *testing.M) int {
	b, err := findOrStart()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: no Kafka broker: %v\n", err)
		return 1
	}
	current = b
	if b.binDir, err = os.MkdirTemp("", "streamsgroup-bin-"); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	defer os.RemoveAll(b.binDir)
	code := m.Run()
	if b.startedHere {
		if err := b.run("stop"); err != nil {
			fmt.Fprintf(os.Stderr, "integration: stopping the broker: %v\n", err)
		}
	}
	return code
}

// Get returns the broker of this test run.
func Get(t testing.TB) *Broker {
	t.Helper()
	if current == nil {
		t.Fatal("integration.Main was not called from TestMain: no broker")
	}
	return current
}

func findOrStart() (*Broker, error) {
	script := scriptPath()
	if bs := os.Getenv("STREAMSGROUP_BOOTSTRAP"); bs != "" {
		return &Broker{
			Bootstrap: bs,
			Version:   os.Getenv("STREAMSGROUP_KAFKA_VERSION"),
			Libs:      os.Getenv("STREAMSGROUP_KAFKA_LIBS"),
			RunDir:    os.Getenv("STREAMSGROUP_RUN_DIR"),
			Script:    script,
		}, nil
	}
	runDir, err := os.MkdirTemp("", "streamsgroup-test-broker-")
	if err != nil {
		return nil, err
	}
	b := &Broker{RunDir: runDir, Script: script, startedHere: true}
	if err := b.run("start"); err != nil {
		return nil, err
	}
	env, err := os.ReadFile(filepath.Join(runDir, "env"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(env), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "STREAMSGROUP_BOOTSTRAP":
			b.Bootstrap = v
		case "STREAMSGROUP_KAFKA_VERSION":
			b.Version = v
		case "STREAMSGROUP_KAFKA_LIBS":
			b.Libs = v
		}
	}
	return b, nil
}

func scriptPath() string {
	if s := os.Getenv("STREAMSGROUP_BROKER_SCRIPT"); s != "" {
		return s
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "kafka", "broker.sh")
}

func (b *Broker) run(cmd string) error {
	c := exec.Command("bash", b.Script, cmd)
	c.Env = append(os.Environ(), "STREAMSGROUP_RUN_DIR="+b.RunDir)
	if b.Version != "" {
		c.Env = append(c.Env, "KAFKA_VERSION="+b.Version)
	}
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("broker.sh %s: %v\n%s", cmd, err, out)
	}
	return nil
}

// Restart stops the broker and starts it again on the same ports and data, as a broker restart or a
// coordinator failover looks to a client. It needs the run directory (set when broker.sh started it).
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if b.RunDir == "" {
		t.Fatal("cannot restart a broker without its run directory (STREAMSGROUP_RUN_DIR)")
	}
	if err := b.run("restart"); err != nil {
		t.Fatal(err)
	}
}

// Client returns a franz-go client for the broker, closed when the test ends.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(b.Bootstrap, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client for the broker, closed when the test ends.
func (b *Broker) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(b.Client(t))
}

// CreateTopic creates a topic with the given number of partitions and deletes it when the test ends.
func (b *Broker) CreateTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	adm := b.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, name)
	})
}

// CreateTopics is CreateTopic for many topics of one partition count, in one request (and one
// deletion when the test ends): a test that creates hundreds spends seconds less.
func (b *Broker) CreateTopics(t testing.TB, partitions int32, names ...string) {
	t.Helper()
	if len(names) == 0 {
		return
	}
	adm := b.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resps, err := adm.CreateTopics(ctx, partitions, 1, nil, names...)
	if err != nil {
		t.Fatalf("creating %d topics: %v", len(names), err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Fatalf("creating topic %s: %v", r.Topic, r.Err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, names...)
	})
}

// StreamsHeartbeatMaxVersion asks the broker which StreamsGroupHeartbeat versions it supports. Tests
// use it as a capability check: v1 comes with the 4.4 features (static membership, warm-up tasks,
// task offsets); a version string is never consulted.
func (b *Broker) StreamsHeartbeatMaxVersion(t testing.TB) int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, b.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 88 {
			return k.MaxVersion
		}
	}
	return -1
}

// RequireStreams44 skips the calling test when the broker lacks the 4.4 streams-group features.
func (b *Broker) RequireStreams44(t *testing.T) {
	t.Helper()
	if v := b.StreamsHeartbeatMaxVersion(t); v < 1 {
		t.Skipf("broker's StreamsGroupHeartbeat max version is %d; this test needs v1 (Kafka 4.4+)", v)
	}
}

// DeleteGroupAtEnd deletes the group when the test ends, so groups do not pile up in the broker. A
// group that still has members cannot be deleted; that is ignored here (its members' tests stop them).
func (b *Broker) DeleteGroupAtEnd(t testing.TB, group string) {
	t.Helper()
	adm := b.Admin(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteGroups(ctx, group)
	})
}

var nameSeq atomic.Int64

// Name returns a name unique to this test run, for topics and groups.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	clean := strings.NewReplacer("/", "-", " ", "-", "_", "-").Replace(t.Name())
	if len(clean) > 60 {
		clean = clean[:60]
	}
	return fmt.Sprintf("%s-%s-%d-%d", prefix, strings.ToLower(clean), time.Now().UnixNano()%1_000_000, nameSeq.Add(1))
}

// Eventually calls cond until it reports true or the timeout passes; then it fails the test with the
// last reason cond gave. It is how tests wait for a condition without sleeping as an assertion.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var buildMu sync.Mutex

// BuildTool builds the main package at pkg (e.g. "./cmd/streams-groups", relative to the module
// root) once per test run and returns the binary's path.
func (b *Broker) BuildTool(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	bin := filepath.Join(b.binDir, filepath.Base(pkg))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = filepath.Dir(filepath.Dir(file))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// KafkaTool runs one of Kafka's own command-line tools (a main class from the broker's jars) and
// returns its standard output. It fails the test if the broker's jars are unknown.
func (b *Broker) KafkaTool(t testing.TB, mainClass string, args ...string) (string, error) {
	t.Helper()
	if b.Libs == "" {
		t.Fatal("the broker's jar directory is unknown (STREAMSGROUP_KAFKA_LIBS)")
	}
	full := append([]string{"-cp", filepath.Join(b.Libs, "*"), mainClass}, args...)
	cmd := exec.Command("java", full...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %v: %w\n%s", mainClass, args, err, stderr.String())
	}
	return stdout.String(), err
}

// DescribeGroup describes a streams group at its coordinator.
func (b *Broker) DescribeGroup(t testing.TB, group string) *kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := transport.New(b.Client(t), group, 10*time.Second, heartbeat.Backoff{Min: 50 * time.Millisecond, Max: time.Second}).Describe(ctx)
	if err != nil {
		t.Fatalf("describing %s: %v", group, err)
	}
	return g
}

// SetStreamsFeature sets the finalized feature streams.version (0 turns streams groups off for the
// whole cluster; 1 turns them on again).
func (b *Broker) SetStreamsFeature(t testing.TB, level int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30000
	up := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	up.Feature, up.MaxVersionLevel = "streams.version", level
	up.AllowDowngrade = level == 0
	up.UpgradeType = 1 // upgrade
	if level == 0 {
		up.UpgradeType = 2 // safe downgrade
	}
	req.FeatureUpdates = append(req.FeatureUpdates, up)
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
		for _, r := range resp.Results {
			if err == nil {
				err = kerr.ErrorForCode(r.ErrorCode)
			}
		}
	}
	if err != nil {
		t.Fatalf("setting streams.version=%d: %v", level, err)
	}
}

// testBrokerGroupDefaults are the streams group settings the test broker is started with
// (integration/kafka/broker.sh) that a test setting a group config pins on the group too
// (pinnedGroupConfigs).
var testBrokerGroupDefaults = map[string]string{
	"streams.heartbeat.interval.ms": "500",
	"streams.session.timeout.ms":    "6000",
}

// pinnedGroupConfigs are the settings to send with a test's change of the group config key: Kafka
// 4.2 gives a group with any streams group config of its own the built-in defaults of the others,
// not the broker's — a 5 s heartbeat interval and a 45 s session instead of the test broker's 500 ms
// and 6 s — which made each rebalance of such a group seconds slower there than on 4.3 and later.
// So the broker's values of the others (testBrokerGroupDefaults) are set with it: the same values,
// a no-op on 4.3 and later.
func pinnedGroupConfigs(key string) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
	if !strings.HasPrefix(key, "streams.") {
		return nil
	}
	var pins []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, k := range slices.Sorted(maps.Keys(testBrokerGroupDefaults)) {
		if k != key {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(testBrokerGroupDefaults[k])
			pins = append(pins, c)
		}
	}
	return pins
}

// SetGroupConfig sets a dynamic group config (e.g. streams.num.standby.replicas) with
// IncrementalAlterConfigs on resource type GROUP.
func (b *Broker) SetGroupConfig(t testing.TB, group, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceType(32) // GROUP
	res.ResourceName = group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = key, &value
	res.Configs = append(res.Configs, cfg)
	res.Configs = append(res.Configs, pinnedGroupConfigs(key)...)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err == nil && len(resp.Resources) > 0 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("setting group config %s=%s on %s: %v", key, value, group, err)
	}
	// The controller has the change when the alter returns, the broker's metadata a moment later:
	// return once a describe shows it, so that a member started next reads the new value.
	Eventually(t, 30*time.Second, func() (bool, string) {
		d := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{key}
		d.Resources = append(d.Resources, r)
		resp, err := d.RequestWith(ctx, b.Client(t))
		if err != nil {
			return false, err.Error()
		}
		for _, res := range resp.Resources {
			for _, c := range res.Configs {
				if c.Name == key && c.Value != nil && *c.Value == value {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%s of group %s not %s yet", key, group, value)
	})
}

// newestLineOnly skips t unless the broker is of the Kafka 4.4 line (StreamsGroupHeartbeat v1), for
// make test's time: why says what the test checks that does not depend on the broker's line.
func newestLineOnly(t *testing.T, why string) {
	t.Helper()
	if Get(t).StreamsHeartbeatMaxVersion(t) < 1 {
		t.Skip("runs on the Kafka 4.4 line only, for make test's time: " + why)
	}
}
