package sgprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamsgroup/streamsgroup/stream"
)

// Runtime is what RuntimeMetrics reads: a *stream.App.
type Runtime interface {
	Metrics() stream.Metrics
	State() stream.State
}

// AppStates lists the states ns_stream_state reports, in the order of stream.State.
var AppStates = []stream.State{
	stream.Created, stream.Rebalancing, stream.Restoring, stream.Running,
	stream.PendingShutdown, stream.NotRunning, stream.PendingError, stream.Error,
}

// RuntimeMetrics is the Prometheus collector of a stream app's processing loop: Kafka Streams'
// thread-level processing metrics (poll, process, punctuate, commit), its dropped records, the
// records restored into stores, and the app's state (docs/metrics.md maps each to Kafka Streams'
// metric). It reads rt when scraped; register it beside the member's *Metrics:
//
//	m := sgprom.NewMetrics("streamsgroup")
//	app, err := stream.New(cfg, topo, procs, stream.WithHooks(m))
//	prometheus.MustRegister(m, sgprom.NewRuntimeMetrics("streamsgroup", app))
//
// The metrics, with namespace ns (Subsystem and ConstLabels apply; the bucket options do not):
//
//	ns_stream_polls_total                  counter
//	ns_stream_poll_seconds_total           counter: time spent polling
//	ns_stream_records_processed_total      counter
//	ns_stream_process_seconds_total        counter: time spent processing them
//	ns_stream_records_dropped_total        counter: skipped by a LogAndContinue handler
//	ns_stream_records_restored_total       counter: changelog records applied to stores
//	ns_stream_punctuations_total           counter
//	ns_stream_punctuate_seconds_total      counter
//	ns_stream_commits_total                counter
//	ns_stream_commits_failed_total         counter
//	ns_stream_commit_seconds_total         counter: time spent committing, failed commits included
//	ns_stream_missing_changelogs           gauge: changelog topics the app waits for (they do not exist yet)
//	ns_stream_state{state}                 gauge: 1 for the current state, 0 for the others
type RuntimeMetrics struct {
	rt    Runtime
	descs []*prometheus.Desc // in the order of values
	state *prometheus.Desc
}

var _ prometheus.Collector = (*RuntimeMetrics)(nil)

// runtimeValues are the counters (and gauges) of a Metrics, in a fixed order, with their names and
// help.
var runtimeValues = []struct {
	name, help string
	value      func(stream.Metrics) float64
	gauge      bool
}{
	{"stream_polls_total", "Polls of the consumer by the processing loop, those that returned no records included.", func(m stream.Metrics) float64 { return float64(m.Polls) }, false},
	{"stream_poll_seconds_total", "Time the processing loop spent polling.", func(m stream.Metrics) float64 { return m.PollTime.Seconds() }, false},
	{"stream_records_processed_total", "Input records handed to a processor.", func(m stream.Metrics) float64 { return float64(m.Processed) }, false},
	{"stream_process_seconds_total", "Time spent processing input records.", func(m stream.Metrics) float64 { return m.ProcessTime.Seconds() }, false},
	{"stream_records_dropped_total", "Records skipped by a LogAndContinue exception handler.", func(m stream.Metrics) float64 { return float64(m.Dropped) }, false},
	{"stream_records_restored_total", "Changelog records applied to stores (restoring, standby and warm-up tasks).", func(m stream.Metrics) float64 { return float64(m.Restored) }, false},
	{"stream_punctuations_total", "Punctuators called.", func(m stream.Metrics) float64 { return float64(m.Punctuations) }, false},
	{"stream_punctuate_seconds_total", "Time spent in punctuators.", func(m stream.Metrics) float64 { return m.PunctuateTime.Seconds() }, false},
	{"stream_commits_total", "Commits of the processing loop that succeeded.", func(m stream.Metrics) float64 { return float64(m.Commits) }, false},
	{"stream_commits_failed_total", "Commits of the processing loop that failed.", func(m stream.Metrics) float64 { return float64(m.FailedCommits) }, false},
	{"stream_commit_seconds_total", "Time the processing loop spent committing, failed commits included.", func(m stream.Metrics) float64 { return m.CommitTime.Seconds() }, false},
	{"stream_production_retries_total", "Writes that failed with a retriable error and took the tasks back to their last commit.", func(m stream.Metrics) float64 { return float64(m.ProductionRetries) }, false},
	{"stream_missing_changelogs", "Changelog topics of the assigned tasks that the app waits for because they do not exist (yet).", func(m stream.Metrics) float64 { return float64(m.MissingChangelogs) }, true},
}

// NewRuntimeMetrics returns the collector of rt's processing metrics, named namespace_….
func NewRuntimeMetrics(namespace string, rt Runtime, opts ...Opt) *RuntimeMetrics {
	var c cfg
	for _, o := range opts {
		o(&c)
	}
	r := &RuntimeMetrics{rt: rt}
	for _, v := range runtimeValues {
		r.descs = append(r.descs, prometheus.NewDesc(prometheus.BuildFQName(namespace, c.subsystem, v.name), v.help, nil, c.constLabels))
	}
	r.state = prometheus.NewDesc(prometheus.BuildFQName(namespace, c.subsystem, "stream_state"),
		"The stream app's state (Kafka Streams' KafkaStreams.State): 1 for the current one.", []string{"state"}, c.constLabels)
	return r
}

// Describe implements prometheus.Collector.
func (r *RuntimeMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range r.descs {
		ch <- d
	}
	ch <- r.state
}

// Collect implements prometheus.Collector: one read of the app's metrics and state per scrape.
func (r *RuntimeMetrics) Collect(ch chan<- prometheus.Metric) {
	m, now := r.rt.Metrics(), r.rt.State()
	for i, v := range runtimeValues {
		kind := prometheus.CounterValue
		if v.gauge {
			kind = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(r.descs[i], kind, v.value(m))
	}
	for _, s := range AppStates {
		on := 0.0
		if s == now {
			on = 1
		}
		ch <- prometheus.MustNewConstMetric(r.state, prometheus.GaugeValue, on, s.String())
	}
}
