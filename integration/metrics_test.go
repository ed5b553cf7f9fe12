package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// appProc is a running examples/metrics binary; its log is kept for failure messages.
type appProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}

	mu      sync.Mutex
	log     strings.Builder
	metrics string // the /metrics URL it logged
	urlSeen chan struct{}
}

var metricsURL = regexp.MustCompile(`url=(http://\S+/metrics)`)

// startMetricsApp runs the metrics example with args; it is stopped with SIGTERM when the test ends.
func startMetricsApp(t *testing.T, bin, name string, args ...string) *appProc {
	t.Helper()
	p := &appProc{name: name, done: make(chan struct{}), urlSeen: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"-name", name}, args...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			if m := metricsURL.FindStringSubmatch(line); m != nil && p.metrics == "" {
				p.metrics = m[1]
				close(p.urlSeen)
			}
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(javaStopWait):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *appProc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// metricsURL waits until the process logged where it serves its metrics.
func (p *appProc) metricsURL(t *testing.T) string {
	t.Helper()
	select {
	case <-p.urlSeen:
	case <-p.done:
		t.Fatalf("%s exited before serving metrics:\n%s", p.name, p.logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s logged no metrics address within 60 s:\n%s", p.name, p.logs())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.metrics
}

// scrapeMetrics reads a text exposition into sample → value (the sample as written, labels
// included: `streamsgroup_assigned_tasks{type="active"}`).
func scrapeMetrics(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("not a sample line: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// describedMember is what the broker says of the member with a client ID: its epoch and how many
// active tasks it holds; ok is false when it is not in the group (or the group does not exist yet).
func describedMember(tr *transport.Transport, clientID string) (epoch int32, active int, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := tr.Describe(ctx)
	if err != nil {
		return 0, 0, false
	}
	for _, mem := range g.Members {
		if mem.ClientID == clientID {
			return mem.MemberEpoch, tasks.FromKmsg(mem.Assignment.ActiveTasks).Len(), true
		}
	}
	return 0, 0, false
}

// TestStreamAppServesMetrics runs examples/metrics (a stream app) with -metrics-addr and scrapes /metrics while
// the group changes: alone the member holds every task, and the active-task gauge equals what the
// broker's description of the group says it holds; when a second one joins, the completed
// rebalance counter moves and the gauge again equals the broker's view, now fewer tasks.
func TestStreamAppServesMetrics(t *testing.T) {
	b := Get(t)
	input, output, group := Name(t, "lines"), Name(t, "counts"), Name(t, "wc")
	b.CreateTopic(t, input, 4)
	b.CreateTopic(t, output, 4)
	b.DeleteGroupAtEnd(t, group)
	deleteTopicsAtEnd(t, b, group+"-counts-changelog")
	bin := b.BuildTool(t, "./examples/metrics")
	describer := transport.New(b.Client(t), group, 5*time.Second, heartbeat.Backoff{Min: 50 * time.Millisecond, Max: time.Second})
	common := []string{"-bootstrap", b.Bootstrap, "-app", group, "-input", input, "-output", output}

	first := startMetricsApp(t, bin, "wc-1", append(common, "-metrics-addr", "127.0.0.1:0")...)
	url := first.metricsURL(t)

	const active = `streamsgroup_assigned_tasks{type="active"}`
	var alone map[string]float64
	total := 0
	Eventually(t, 90*time.Second, func() (bool, string) {
		m, err := scrapeMetrics(url)
		if err != nil {
			return false, err.Error()
		}
		alone = m
		epoch, n, ok := describedMember(describer, "wc-1")
		total = n
		return ok && n > 0 && m[active] == float64(n) && m["streamsgroup_member_epoch"] == float64(epoch) &&
				m[`streamsgroup_member_state{state="STABLE"}`] == 1 && m["streamsgroup_rebalances_completed_total"] >= 1,
			fmt.Sprintf("broker: wc-1 in the group %v, epoch %d, %d active; scraped %v\n%s", ok, epoch, n, m, first.logs())
	})
	if total != 4 { // 1 subtopology × 4 partitions, all on the only member
		t.Fatalf("alone, wc-1 holds %d active tasks; want 4", total)
	}
	if alone["streamsgroup_heartbeats_sent_total"] < 1 || alone[`streamsgroup_callback_duration_seconds_count{callback="assigned"}`] < 1 ||
		alone["streamsgroup_last_heartbeat_seconds_ago"] < 0 {
		t.Errorf("alone: %v", alone)
	}

	// The processing loop's metrics: every record produced is processed once (one member, no
	// failure), and the loop polls and commits (commit.interval.ms is 1000 in the example).
	const records = 200
	cl := b.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var batch []*kgo.Record
	for i := range records {
		batch = append(batch, &kgo.Record{Topic: input, Key: []byte(fmt.Sprint("k", i%10)), Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, func() (bool, string) {
		m, err := scrapeMetrics(url)
		if err != nil {
			return false, err.Error()
		}
		return m["streamsgroup_stream_records_processed_total"] == records && m["streamsgroup_stream_commits_total"] >= 1 &&
				m[`streamsgroup_stream_state{state="RUNNING"}`] == 1,
			fmt.Sprintf("want %d records processed, a commit, RUNNING; scraped %v\n%s", records, m, first.logs())
	})
	if m, err := scrapeMetrics(url); err != nil || m["streamsgroup_stream_records_processed_total"] != records ||
		m["streamsgroup_stream_records_dropped_total"] != 0 || m["streamsgroup_stream_records_restored_total"] != 0 ||
		m["streamsgroup_stream_polls_total"] < 1 || m["streamsgroup_stream_commits_failed_total"] != 0 || m[`streamsgroup_stream_state{state="RESTORING"}`] != 0 {
		t.Errorf("processing metrics after %d records: %v (%v)", records, m, err)
	}

	second := startMetricsApp(t, bin, "wc-2", append(common, "-metrics-addr", "127.0.0.1:0")...)
	Eventually(t, 90*time.Second, func() (bool, string) {
		m, err := scrapeMetrics(url)
		if err != nil {
			return false, err.Error()
		}
		epoch, n, ok := describedMember(describer, "wc-1")
		_, n2, ok2 := describedMember(describer, "wc-2")
		moved := m["streamsgroup_rebalances_completed_total"] > alone["streamsgroup_rebalances_completed_total"]
		return ok && ok2 && n > 0 && n2 > 0 && n+n2 == total && moved && m[active] == float64(n) &&
				m["streamsgroup_member_epoch"] == float64(epoch) && m[`streamsgroup_member_state{state="STABLE"}`] == 1 &&
				m["streamsgroup_heartbeats_sent_total"] > alone["streamsgroup_heartbeats_sent_total"] &&
				m[`streamsgroup_callback_duration_seconds_count{callback="revoked"}`] >= 1,
			fmt.Sprintf("broker: wc-1 %v epoch %d with %d active, wc-2 %v with %d; scraped %v\nwc-2:\n%s", ok, epoch, n, ok2, n2, m, second.logs())
	})
}
