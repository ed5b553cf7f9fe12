package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/stream"
)

// The member's metrics at /metrics, in the Prometheus text exposition format, written from
// Manager.Stats by the small writer below. The example is part of the streamsgroup module, which
// does not depend on the Prometheus client; an application that uses it installs
// plugin/sgprom's hooks instead and gets the same names (with histograms where this writer, having
// only sums and counts, writes summaries without quantiles).

// serveMetrics listens on addr and serves /metrics until ctx ends. It logs the address it listens on
// (a port of 0 picks a free one).
func serveMetrics(ctx context.Context, log *slog.Logger, addr string, app *stream.App) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		writeMetrics(bw, app.Stats())
		writeRuntimeMetrics(bw, app.Metrics(), app.State())
		_ = bw.Flush()
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// expo writes the text exposition format: one family at a time, HELP and TYPE first.
type expo struct{ w io.Writer }

func (e expo) family(name, typ, help string) {
	fmt.Fprintf(e.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample; labels are name, value pairs.
func (e expo) sample(name string, v float64, labels ...string) {
	fmt.Fprint(e.w, name)
	for i := 0; i+1 < len(labels); i += 2 {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		fmt.Fprintf(e.w, "%s%s=%q", sep, labels[i], labels[i+1])
	}
	if len(labels) > 0 {
		fmt.Fprint(e.w, "}")
	}
	fmt.Fprintf(e.w, " %g\n", v)
}

func (e expo) one(name, typ, help string, v float64) {
	e.family(name, typ, help)
	e.sample(name, v)
}

// summary writes a summary without quantiles: its sum (seconds) and count.
func (e expo) summary(name string, sum time.Duration, count uint64, labels ...string) {
	e.sample(name+"_sum", sum.Seconds(), labels...)
	e.sample(name+"_count", float64(count), labels...)
}

var (
	classes = []heartbeat.Class{heartbeat.Retry, heartbeat.Rediscover, heartbeat.Fenced, heartbeat.KeepState, heartbeat.Fatal}
	states  = []membership.State{membership.Unsubscribed, membership.Joining, membership.Reconciling, membership.Acknowledging,
		membership.Stable, membership.Fenced, membership.PrepareLeaving, membership.Leaving, membership.Fatal}
)

// writeMetrics writes s with the names of plugin/sgprom (namespace streamsgroup).
func writeMetrics(w io.Writer, s membership.Stats) {
	e := expo{w}
	const ns = "streamsgroup_"
	e.one(ns+"heartbeats_sent_total", "counter", "Heartbeats sent to the group coordinator (the leave heartbeat is not counted).", float64(s.HeartbeatsSent))
	e.family(ns+"heartbeats_failed_total", "counter", "Heartbeats whose result was an error, by what the member does about it (class).")
	answered := s.HeartbeatsSucceeded
	for _, c := range classes {
		e.sample(ns+"heartbeats_failed_total", float64(s.HeartbeatsFailed[c]), "class", c.String())
		answered += s.HeartbeatsFailed[c]
	}
	e.family(ns+"heartbeat_rtt_seconds", "summary", "Time from sending a heartbeat to its result, successes and failures alike.")
	e.summary(ns+"heartbeat_rtt_seconds", s.HeartbeatRTTTotal, answered)
	e.one(ns+"heartbeat_rtt_max_seconds", "gauge", "The longest heartbeat round trip so far.", s.MaxHeartbeatRTT.Seconds())
	since := -1.0
	if d, ok := s.SinceLastHeartbeatAnswered(); ok {
		since = d.Seconds()
	}
	e.one(ns+"last_heartbeat_seconds_ago", "gauge", "Seconds since the last successful heartbeat answer; -1 before the first.", since)

	e.one(ns+"rebalances_started_total", "counter", "Reconciliations started toward a new target assignment.", float64(s.RebalancesStarted))
	e.one(ns+"rebalances_completed_total", "counter", "Reconciliations completed: the callbacks returned and the acknowledgement was built.", float64(s.RebalancesCompleted))
	e.one(ns+"rebalances_failed_total", "counter", "Reconciliations that failed: a callback failed (retried after backoff), or a fencing or a fatal heartbeat error ended it.", float64(s.RebalancesFailed))
	e.family(ns+"rebalance_latency_seconds", "summary", "Time from the arrival of a target assignment to its acknowledgement, for completed reconciliations.")
	e.summary(ns+"rebalance_latency_seconds", s.RebalanceLatencyTotal, s.RebalancesCompleted)
	e.one(ns+"rebalance_latency_max_seconds", "gauge", "The longest completed reconciliation so far.", s.MaxRebalanceLatency.Seconds())
	sinceRebalance := -1.0
	if !s.LastRebalance.IsZero() {
		sinceRebalance = s.At.Sub(s.LastRebalance).Seconds()
	}
	e.one(ns+"last_rebalance_seconds_ago", "gauge", "Seconds since the last completed rebalance; -1 before the first.", sinceRebalance)

	callbacks := []struct {
		label string
		c     membership.CallbackStats
	}{{"revoked", s.Revoked}, {"assigned", s.Assigned}, {"lost", s.Lost}}
	e.family(ns+"callback_duration_seconds", "summary", "How long the listener's callbacks ran, by callback (revoked, assigned, lost).")
	for _, cb := range callbacks {
		e.summary(ns+"callback_duration_seconds", cb.c.Total, cb.c.Calls, "callback", cb.label)
	}
	e.family(ns+"callback_failures_total", "counter", "Listener callbacks that returned an error or panicked, by callback.")
	for _, cb := range callbacks {
		e.sample(ns+"callback_failures_total", float64(cb.c.Failed), "callback", cb.label)
	}

	e.family(ns+"assigned_tasks", "gauge", "Tasks the application holds now, by type (active, standby, warmup).")
	e.sample(ns+"assigned_tasks", float64(s.ActiveTasks), "type", "active")
	e.sample(ns+"assigned_tasks", float64(s.StandbyTasks), "type", "standby")
	e.sample(ns+"assigned_tasks", float64(s.WarmupTasks), "type", "warmup")
	e.one(ns+"fencings_total", "counter", "Times the broker fenced the member (it lost its tasks and rejoined).", float64(s.Fencings))
	e.one(ns+"coordinator", "gauge", "Node ID of the group coordinator the member heartbeats to; -1 before one is known.", float64(s.Coordinator))
	e.one(ns+"coordinator_changes_total", "counter", "Times the group coordinator moved to another node after the first was known.", float64(s.CoordinatorChanges))
	e.family(ns+"member_state", "gauge", "1 for the member's current state, 0 for the others.")
	for _, st := range states {
		v := 0.0
		if st == s.State {
			v = 1
		}
		e.sample(ns+"member_state", v, "state", st.String())
	}
	e.one(ns+"member_epoch", "gauge", "The member epoch the broker gave this member.", float64(s.Epoch))
}

var appStates = []stream.State{stream.Created, stream.Rebalancing, stream.Restoring, stream.Running,
	stream.PendingShutdown, stream.NotRunning, stream.PendingError, stream.Error}

// writeRuntimeMetrics writes the processing loop's metrics and the app's state with the names of
// plugin/sgprom's RuntimeMetrics.
func writeRuntimeMetrics(w io.Writer, m stream.Metrics, state stream.State) {
	e := expo{w}
	const ns = "streamsgroup_stream_"
	e.one(ns+"polls_total", "counter", "Polls of the consumer by the processing loop, those that returned no records included.", float64(m.Polls))
	e.one(ns+"poll_seconds_total", "counter", "Time the processing loop spent polling.", m.PollTime.Seconds())
	e.one(ns+"records_processed_total", "counter", "Input records handed to a processor.", float64(m.Processed))
	e.one(ns+"process_seconds_total", "counter", "Time spent processing input records.", m.ProcessTime.Seconds())
	e.one(ns+"records_dropped_total", "counter", "Records skipped by a LogAndContinue exception handler.", float64(m.Dropped))
	e.one(ns+"records_restored_total", "counter", "Changelog records applied to stores (restoring, standby and warm-up tasks).", float64(m.Restored))
	e.one(ns+"punctuations_total", "counter", "Punctuators called.", float64(m.Punctuations))
	e.one(ns+"punctuate_seconds_total", "counter", "Time spent in punctuators.", m.PunctuateTime.Seconds())
	e.one(ns+"commits_total", "counter", "Commits of the processing loop that succeeded.", float64(m.Commits))
	e.one(ns+"commits_failed_total", "counter", "Commits of the processing loop that failed.", float64(m.FailedCommits))
	e.one(ns+"commit_seconds_total", "counter", "Time the processing loop spent committing, failed commits included.", m.CommitTime.Seconds())
	e.family(ns+"state", "gauge", "The stream app's state (Kafka Streams' KafkaStreams.State): 1 for the current one.")
	for _, st := range appStates {
		v := 0.0
		if st == state {
			v = 1
		}
		e.sample(ns+"state", v, "state", st.String())
	}
}
