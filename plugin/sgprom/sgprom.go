// Package sgprom exposes the metrics of a streams-group member (membership.Manager) to Prometheus,
// as franz-go's plugin/kprom does for a kgo client. It is a module of its own so that the
// streamsgroup module does not depend on the Prometheus client.
//
// A *Metrics is both a set of membership hooks and a prometheus.Collector: install it on one
// Manager and register it where you like.
//
//	m := sgprom.NewMetrics("streamsgroup")
//	prometheus.MustRegister(m) // or a registry of your own
//	mgr, err := membership.New(cl, cfg, topo, membership.WithHooks(m))
//
// For several members in one process, give each its own *Metrics with a distinguishing constant
// label (ConstLabels), or register each in its own registry. A stream app's processing loop has a
// collector of its own, RuntimeMetrics.
//
// The metrics, with namespace ns (docs/metrics.md maps each to the Java client's metric):
//
//	ns_heartbeats_sent_total                   counter
//	ns_heartbeats_failed_total{class}          counter: retry, rediscover, fenced, keep-state, fatal
//	ns_heartbeat_rtt_seconds                   histogram: sending to result, successes and failures
//	ns_last_heartbeat_seconds_ago              gauge: since the last successful answer; -1 before one
//	ns_rebalances_started_total                counter
//	ns_rebalances_completed_total              counter
//	ns_rebalances_failed_total                 counter
//	ns_rebalance_latency_seconds               histogram: target arrived → acknowledgement built
//	ns_last_rebalance_seconds_ago              gauge: since the last completed rebalance; -1 before one
//	ns_callback_duration_seconds{callback}     histogram: revoked, assigned, lost
//	ns_callback_failures_total{callback}       counter
//	ns_assigned_tasks{type}                    gauge: active, standby, warmup
//	ns_fencings_total                          counter
//	ns_coordinator                             gauge: the coordinator's node ID; -1 before one is known
//	ns_coordinator_changes_total               counter
//	ns_member_state{state}                     gauge: 1 for the current state, 0 for the others
//	ns_member_epoch                            gauge
package sgprom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Every hook the Manager knows, so a renamed hook is a compile error here rather than a metric that
// silently stops moving.
var (
	_ membership.HookHeartbeatSent      = (*Metrics)(nil)
	_ membership.HookHeartbeatAnswered  = (*Metrics)(nil)
	_ membership.HookRebalanceStarted   = (*Metrics)(nil)
	_ membership.HookRebalanceCompleted = (*Metrics)(nil)
	_ membership.HookRebalanceFailed    = (*Metrics)(nil)
	_ membership.HookCallbackDone       = (*Metrics)(nil)
	_ membership.HookStateChanged       = (*Metrics)(nil)
	_ membership.HookFenced             = (*Metrics)(nil)
	_ membership.HookCoordinatorChanged = (*Metrics)(nil)
	_ membership.HookAssignmentChanged  = (*Metrics)(nil)
	_ prometheus.Collector              = (*Metrics)(nil)
)

// States lists the member states ns_member_state reports, in the order of membership.State.
var States = []membership.State{
	membership.Unsubscribed, membership.Joining, membership.Reconciling, membership.Acknowledging,
	membership.Stable, membership.Fenced, membership.PrepareLeaving, membership.Leaving, membership.Fatal,
}

// Opt configures NewMetrics.
type Opt func(*cfg)

type cfg struct {
	subsystem   string
	constLabels prometheus.Labels
	rttBuckets  []float64
	rebBuckets  []float64
	cbBuckets   []float64
}

// Subsystem puts a subsystem between the namespace and each metric name (ns_subsystem_name).
func Subsystem(s string) Opt { return func(c *cfg) { c.subsystem = s } }

// ConstLabels adds constant labels to every metric, for example the member or application name.
func ConstLabels(l prometheus.Labels) Opt { return func(c *cfg) { c.constLabels = l } }

// HeartbeatBuckets sets the buckets (seconds) of ns_heartbeat_rtt_seconds.
func HeartbeatBuckets(b []float64) Opt { return func(c *cfg) { c.rttBuckets = b } }

// RebalanceBuckets sets the buckets (seconds) of ns_rebalance_latency_seconds.
func RebalanceBuckets(b []float64) Opt { return func(c *cfg) { c.rebBuckets = b } }

// CallbackBuckets sets the buckets (seconds) of ns_callback_duration_seconds.
func CallbackBuckets(b []float64) Opt { return func(c *cfg) { c.cbBuckets = b } }

// Metrics is the hooks of one member and the Prometheus collector of its metrics.
type Metrics struct {
	heartbeatsSent   prometheus.Counter
	heartbeatsFailed *prometheus.CounterVec
	heartbeatRTT     prometheus.Histogram
	lastHeartbeat    prometheus.GaugeFunc
	lastAnswered     atomic.Int64 // UnixNano of the last successful answer; 0 before one

	rebalancesStarted   prometheus.Counter
	rebalancesCompleted prometheus.Counter
	rebalancesFailed    prometheus.Counter
	rebalanceLatency    prometheus.Histogram
	lastRebalance       prometheus.GaugeFunc
	lastCompleted       atomic.Int64 // UnixNano of the last completed rebalance; 0 before one

	callbackDuration *prometheus.HistogramVec
	callbackFailures *prometheus.CounterVec

	assignedTasks      *prometheus.GaugeVec
	fencings           prometheus.Counter
	coordinator        prometheus.Gauge
	coordinatorChanges prometheus.Counter
	memberState        *prometheus.GaugeVec
	memberEpoch        prometheus.Gauge

	mu          sync.Mutex
	coordinated bool // a coordinator was reported once

	all []prometheus.Collector
}

// NewMetrics returns the metrics of one member, named namespace_…; install it with
// membership.WithHooks and register it with a prometheus.Registerer.
func NewMetrics(namespace string, opts ...Opt) *Metrics {
	c := cfg{
		rttBuckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		rebBuckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		cbBuckets:  []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}
	for _, o := range opts {
		o(&c)
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels})
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Subsystem: c.subsystem, Name: name, Help: help, ConstLabels: c.constLabels, Buckets: buckets})
	}
	m := &Metrics{
		heartbeatsSent: counter("heartbeats_sent_total", "Heartbeats sent to the group coordinator (the leave heartbeat is not counted)."),
		heartbeatsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
			Name: "heartbeats_failed_total", Help: "Heartbeats whose result was an error, by what the member does about it (class)."}, []string{"class"}),
		heartbeatRTT: histogram("heartbeat_rtt_seconds", "Time from sending a heartbeat to its result, successes and failures alike.", c.rttBuckets),

		rebalancesStarted:   counter("rebalances_started_total", "Reconciliations started toward a new target assignment."),
		rebalancesCompleted: counter("rebalances_completed_total", "Reconciliations completed: the callbacks returned and the acknowledgement was built."),
		rebalancesFailed:    counter("rebalances_failed_total", "Reconciliations that failed: a callback failed (retried after backoff), or a fencing or a fatal heartbeat error ended it."),
		rebalanceLatency:    histogram("rebalance_latency_seconds", "Time from the arrival of a target assignment to its acknowledgement, for completed reconciliations.", c.rebBuckets),

		callbackDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
			Name: "callback_duration_seconds", Help: "How long the listener's callbacks ran, by callback (revoked, assigned, lost).", Buckets: c.cbBuckets}, []string{"callback"}),
		callbackFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
			Name: "callback_failures_total", Help: "Listener callbacks that returned an error or panicked, by callback."}, []string{"callback"}),

		assignedTasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
			Name: "assigned_tasks", Help: "Tasks the application holds now, by type (active, standby, warmup)."}, []string{"type"}),
		fencings:           counter("fencings_total", "Times the broker fenced the member (it lost its tasks and rejoined)."),
		coordinator:        gauge("coordinator", "Node ID of the group coordinator the member heartbeats to; -1 before one is known."),
		coordinatorChanges: counter("coordinator_changes_total", "Times the group coordinator moved to another node after the first was known."),
		memberState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
			Name: "member_state", Help: "1 for the member's current state, 0 for the others."}, []string{"state"}),
		memberEpoch: gauge("member_epoch", "The member epoch the broker gave this member."),
	}
	m.lastHeartbeat = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
		Name: "last_heartbeat_seconds_ago", Help: "Seconds since the last successful heartbeat answer; -1 before the first."}, func() float64 { return since(&m.lastAnswered) })
	m.lastRebalance = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Subsystem: c.subsystem, ConstLabels: c.constLabels,
		Name: "last_rebalance_seconds_ago", Help: "Seconds since the last completed rebalance; -1 before the first."}, func() float64 { return since(&m.lastCompleted) })
	// Every series exists from the start, so a dashboard shows 0 rather than nothing.
	for _, cl := range []heartbeat.Class{heartbeat.Retry, heartbeat.Rediscover, heartbeat.Fenced, heartbeat.KeepState, heartbeat.Fatal} {
		m.heartbeatsFailed.WithLabelValues(cl.String())
	}
	for _, k := range []membership.CallbackKind{membership.CallbackRevoked, membership.CallbackAssigned, membership.CallbackLost} {
		m.callbackDuration.WithLabelValues(callbackLabel(k))
		m.callbackFailures.WithLabelValues(callbackLabel(k))
	}
	for _, t := range []string{"active", "standby", "warmup"} {
		m.assignedTasks.WithLabelValues(t)
	}
	m.coordinator.Set(-1)
	m.OnStateChanged(membership.Unsubscribed, 0)
	m.all = []prometheus.Collector{
		m.heartbeatsSent, m.heartbeatsFailed, m.heartbeatRTT, m.lastHeartbeat,
		m.rebalancesStarted, m.rebalancesCompleted, m.rebalancesFailed, m.rebalanceLatency, m.lastRebalance,
		m.callbackDuration, m.callbackFailures,
		m.assignedTasks, m.fencings, m.coordinator, m.coordinatorChanges, m.memberState, m.memberEpoch,
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all {
		c.Collect(ch)
	}
}

// since is the seconds since the UnixNano time in at, -1 when at is 0 (never).
func since(at *atomic.Int64) float64 {
	t := at.Load()
	if t == 0 {
		return -1
	}
	return time.Since(time.Unix(0, t)).Seconds()
}

// OnHeartbeatSent implements membership.HookHeartbeatSent.
func (m *Metrics) OnHeartbeatSent() { m.heartbeatsSent.Inc() }

// OnHeartbeatAnswered implements membership.HookHeartbeatAnswered.
func (m *Metrics) OnHeartbeatAnswered(rtt time.Duration, class heartbeat.Class, _ error) {
	m.heartbeatRTT.Observe(rtt.Seconds())
	if class == 0 {
		m.lastAnswered.Store(time.Now().UnixNano())
		return
	}
	m.heartbeatsFailed.WithLabelValues(class.String()).Inc()
}

// OnRebalanceStarted implements membership.HookRebalanceStarted.
func (m *Metrics) OnRebalanceStarted() { m.rebalancesStarted.Inc() }

// OnRebalanceCompleted implements membership.HookRebalanceCompleted.
func (m *Metrics) OnRebalanceCompleted(latency time.Duration) {
	m.rebalancesCompleted.Inc()
	m.rebalanceLatency.Observe(latency.Seconds())
	m.lastCompleted.Store(time.Now().UnixNano())
}

// OnRebalanceFailed implements membership.HookRebalanceFailed.
func (m *Metrics) OnRebalanceFailed(time.Duration) { m.rebalancesFailed.Inc() }

// OnCallbackDone implements membership.HookCallbackDone.
func (m *Metrics) OnCallbackDone(kind membership.CallbackKind, took time.Duration, err error) {
	m.callbackDuration.WithLabelValues(callbackLabel(kind)).Observe(took.Seconds())
	if err != nil {
		m.callbackFailures.WithLabelValues(callbackLabel(kind)).Inc()
	}
}

// OnStateChanged implements membership.HookStateChanged.
func (m *Metrics) OnStateChanged(state membership.State, epoch int32) {
	for _, s := range States {
		v := 0.0
		if s == state {
			v = 1
		}
		m.memberState.WithLabelValues(s.String()).Set(v)
	}
	m.memberEpoch.Set(float64(epoch))
}

// OnFenced implements membership.HookFenced.
func (m *Metrics) OnFenced() { m.fencings.Inc() }

// OnCoordinatorChanged implements membership.HookCoordinatorChanged.
func (m *Metrics) OnCoordinatorChanged(node int32) {
	m.mu.Lock()
	if m.coordinated {
		m.coordinatorChanges.Inc()
	}
	m.coordinated = true
	m.mu.Unlock()
	m.coordinator.Set(float64(node))
}

// OnAssignmentChanged implements membership.HookAssignmentChanged.
func (m *Metrics) OnAssignmentChanged(owned tasks.Assignment) {
	m.assignedTasks.WithLabelValues("active").Set(float64(owned.Active.Len()))
	m.assignedTasks.WithLabelValues("standby").Set(float64(owned.Standby.Len()))
	m.assignedTasks.WithLabelValues("warmup").Set(float64(owned.Warmup.Len()))
}

// callbackLabel is the callback label value of a kind: revoked, assigned or lost.
func callbackLabel(k membership.CallbackKind) string {
	switch k {
	case membership.CallbackRevoked:
		return "revoked"
	case membership.CallbackAssigned:
		return "assigned"
	case membership.CallbackLost:
		return "lost"
	}
	return k.String()
}
