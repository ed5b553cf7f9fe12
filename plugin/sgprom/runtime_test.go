package sgprom_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/streamsgroup/streamsgroup/plugin/sgprom"
	"github.com/streamsgroup/streamsgroup/stream"
)

// fakeRuntime is a stream app's metrics and state as a test sets them.
type fakeRuntime struct {
	m     stream.Metrics
	state stream.State
}

func (f *fakeRuntime) Metrics() stream.Metrics { return f.m }
func (f *fakeRuntime) State() stream.State     { return f.state }

// Every field of stream.Metrics reaches its own metric, with its unit, and the state gauge is 1 for
// the current state only; each scrape reads the app again.
func TestRuntimeMetricsExportEveryField(t *testing.T) {
	rt := &fakeRuntime{state: stream.Restoring, m: stream.Metrics{
		Polls: 1, PollTime: 2 * time.Second, Processed: 3, ProcessTime: 4 * time.Second, Dropped: 5, Restored: 6,
		Punctuations: 7, PunctuateTime: 8 * time.Second, Commits: 9, CommitTime: 10 * time.Second, FailedCommits: 11,
		ProductionRetries: 12, MissingChangelogs: 13,
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(sgprom.NewRuntimeMetrics("ns", rt, sgprom.Subsystem("app"), sgprom.ConstLabels(prometheus.Labels{"member": "m1"})))
	want := map[string]float64{
		"ns_app_stream_polls_total": 1, "ns_app_stream_poll_seconds_total": 2,
		"ns_app_stream_records_processed_total": 3, "ns_app_stream_process_seconds_total": 4,
		"ns_app_stream_records_dropped_total": 5, "ns_app_stream_records_restored_total": 6,
		"ns_app_stream_punctuations_total": 7, "ns_app_stream_punctuate_seconds_total": 8,
		"ns_app_stream_commits_total": 9, "ns_app_stream_commit_seconds_total": 10, "ns_app_stream_commits_failed_total": 11,
		"ns_app_stream_production_retries_total": 12, "ns_app_stream_missing_changelogs": 13,
	}
	for _, s := range sgprom.AppStates {
		want["ns_app_stream_state{state="+s.String()+"}"] = 0
	}
	want["ns_app_stream_state{state=RESTORING}"] = 1
	got := scrape(t, reg)
	if len(got) != len(want) {
		t.Errorf("%d series, want %d: %v", len(got), len(want), got)
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		gauge := mf.GetName() == "ns_app_stream_missing_changelogs" || mf.GetName() == "ns_app_stream_state"
		if gauge != (mf.GetType() == dto.MetricType_GAUGE) {
			t.Errorf("%s is a %v", mf.GetName(), mf.GetType())
		}
	}
	rt.state, rt.m.Processed = stream.Running, 30
	got = scrape(t, reg)
	if got["ns_app_stream_records_processed_total"] != 30 || got["ns_app_stream_state{state=RUNNING}"] != 1 || got["ns_app_stream_state{state=RESTORING}"] != 0 {
		t.Errorf("the second scrape did not read the app again: %v", got)
	}
	if len(sgprom.AppStates) != int(stream.Error)+1 {
		t.Errorf("AppStates has %d states; stream.State has %d", len(sgprom.AppStates), int(stream.Error)+1)
	}
}
