package sgprom_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/plugin/sgprom"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The test runs against a real Kafka broker: the one STREAMSGROUP_BOOTSTRAP names (set by
// scripts/with-broker.sh, as `make test` does), or else one started here with the repository's
// integration/kafka/broker.sh and stopped at the end. It never skips for want of a broker.

var bootstrap string

func TestMain(m *testing.M) {
	bootstrap = os.Getenv("STREAMSGROUP_BOOTSTRAP")
	if bootstrap != "" {
		os.Exit(m.Run())
	}
	runDir, err := os.MkdirTemp("", "sgprom-broker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sgprom:", err)
		os.Exit(1)
	}
	script := filepath.Join("..", "..", "integration", "kafka", "broker.sh")
	broker := func(cmd string) ([]byte, error) {
		c := exec.Command("bash", script, cmd)
		c.Env = append(os.Environ(), "STREAMSGROUP_RUN_DIR="+runDir)
		return c.CombinedOutput()
	}
	if out, err := broker("start"); err != nil {
		fmt.Fprintf(os.Stderr, "sgprom: no Kafka broker (set STREAMSGROUP_BOOTSTRAP, or let broker.sh start one): %v\n%s", err, out)
		os.Exit(1)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "bootstrap"))
	bootstrap = strings.TrimSpace(string(b))
	code := 1
	if err == nil {
		code = m.Run()
	}
	if out, err := broker("stop"); err != nil {
		fmt.Fprintf(os.Stderr, "sgprom: stopping the broker: %v\n%s", err, out)
	}
	os.RemoveAll(runDir)
	os.Exit(code)
}

// eventually polls cond every 50 ms until it holds or the deadline passes, then fails with why.
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
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape gathers reg and returns each sample as "name{label=value,…}" → value; a histogram gives
// name_count and name_sum.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "member" {
					continue
				}
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				base, rest, _ := strings.Cut(name, "{")
				if rest != "" {
					rest = "{" + rest
				}
				out[base+"_count"+rest] = float64(m.GetHistogram().GetSampleCount())
				out[base+"_sum"+rest] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func newMember(t *testing.T, cl *kgo.Client, group string, topo *topology.Topology, hooks ...membership.Hook) *membership.Manager {
	t.Helper()
	cfg := config.Default(group)
	cfg.StateDir = t.TempDir()
	m, err := membership.New(cl, cfg, topo, membership.WithHooks(hooks...),
		membership.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

// One member with the plugin's hooks joins a group of a 4-partition topic and gets its 4 tasks; a
// second member joins and takes some. The registry shows every step: heartbeats counted, one
// completed rebalance per reconciliation, the active-task gauge equal to what the member holds,
// the state and the epoch; after Close every counter equals the Manager's own Stats.
func TestMetricsAgainstABroker(t *testing.T) {
	const partitions = 4
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	suffix := time.Now().UnixNano() % 1_000_000_000
	topic, group := fmt.Sprintf("sgprom-in-%d", suffix), fmt.Sprintf("sgprom-app-%d", suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, resp.Err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteGroups(ctx, group)
		_, _ = adm.DeleteTopics(ctx, topic)
	}()
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{topic}})

	metrics := sgprom.NewMetrics("streamsgroup", sgprom.ConstLabels(prometheus.Labels{"member": "first"}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	before := scrape(t, reg)
	if before["streamsgroup_last_heartbeat_seconds_ago"] != -1 || before["streamsgroup_last_rebalance_seconds_ago"] != -1 || before[`streamsgroup_member_state{state=UNSUBSCRIBED}`] != 1 ||
		before[`streamsgroup_assigned_tasks{type=active}`] != 0 || before["streamsgroup_coordinator"] != -1 {
		t.Fatalf("before the start: %v", before)
	}

	first := newMember(t, cl, group, topo, metrics)
	var joined map[string]float64
	eventually(t, 60*time.Second, func() (bool, string) {
		joined = scrape(t, reg)
		owned, _ := first.Assignment()
		_, epoch := first.Member()
		return owned.Active.Len() == partitions && first.State() == membership.Stable &&
				joined[`streamsgroup_assigned_tasks{type=active}`] == partitions &&
				joined[`streamsgroup_member_state{state=STABLE}`] == 1 &&
				joined["streamsgroup_member_epoch"] == float64(epoch) &&
				joined["streamsgroup_rebalances_completed_total"] >= 1,
			fmt.Sprintf("member %s holds %v; scraped %v", first.State(), owned, joined)
	})
	if joined["streamsgroup_heartbeats_sent_total"] < 2 || joined["streamsgroup_heartbeat_rtt_seconds_count"] < 1 ||
		joined[`streamsgroup_callback_duration_seconds_count{callback=assigned}`] < 1 ||
		joined["streamsgroup_rebalance_latency_seconds_count"] != joined["streamsgroup_rebalances_completed_total"] {
		t.Errorf("after joining: %v", joined)
	}
	if joined["streamsgroup_last_heartbeat_seconds_ago"] < 0 || joined["streamsgroup_last_rebalance_seconds_ago"] < 0 {
		t.Errorf("seconds ago still -1 after answered heartbeats and a rebalance: %v", joined)
	}

	// A second member (without hooks) takes some of the tasks: the first one revokes, and the
	// counter and the gauge follow.
	second := newMember(t, cl, group, topo)
	var split map[string]float64
	eventually(t, 60*time.Second, func() (bool, string) {
		split = scrape(t, reg)
		mine, _ := first.Assignment()
		theirs, _ := second.Assignment()
		return mine.Active.Len() > 0 && theirs.Active.Len() > 0 && mine.Active.Len()+theirs.Active.Len() == partitions &&
				first.State() == membership.Stable &&
				split[`streamsgroup_assigned_tasks{type=active}`] == float64(mine.Active.Len()) &&
				split["streamsgroup_rebalances_completed_total"] > joined["streamsgroup_rebalances_completed_total"],
			fmt.Sprintf("first %s holds %v, second %v; scraped %v", first.State(), mine, theirs, split)
	})
	if split[`streamsgroup_callback_duration_seconds_count{callback=revoked}`] < 1 ||
		split["streamsgroup_rebalances_started_total"] < split["streamsgroup_rebalances_completed_total"] {
		t.Errorf("after the split: %v", split)
	}

	// Close: the first member revokes what it holds and leaves. Nothing moves after that, so the
	// registry and Stats must agree on every count.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if err := first.Close(ctx2); err != nil {
		t.Fatal(err)
	}
	got, s := scrape(t, reg), first.Stats()
	failed := 0.0
	for _, n := range s.HeartbeatsFailed {
		failed += float64(n)
	}
	for name, want := range map[string]float64{
		"streamsgroup_heartbeats_sent_total":                              float64(s.HeartbeatsSent),
		"streamsgroup_heartbeat_rtt_seconds_count":                        float64(s.HeartbeatsSucceeded) + failed,
		"streamsgroup_rebalances_started_total":                           float64(s.RebalancesStarted),
		"streamsgroup_rebalances_completed_total":                         float64(s.RebalancesCompleted),
		"streamsgroup_rebalances_failed_total":                            float64(s.RebalancesFailed),
		`streamsgroup_callback_duration_seconds_count{callback=revoked}`:  float64(s.Revoked.Calls),
		`streamsgroup_callback_duration_seconds_count{callback=assigned}`: float64(s.Assigned.Calls),
		`streamsgroup_assigned_tasks{type=active}`:                        0,
		`streamsgroup_member_state{state=UNSUBSCRIBED}`:                   1,
		"streamsgroup_fencings_total":                                     float64(s.Fencings),
	} {
		if got[name] != want {
			t.Errorf("%s = %v after Close; Stats says %v", name, got[name], want)
		}
	}
	if s.ActiveTasks != 0 || s.State != membership.Unsubscribed {
		t.Errorf("Stats after Close: %d active, %s", s.ActiveTasks, s.State)
	}
}
