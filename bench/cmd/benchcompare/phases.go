package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/streamsgroup/streamsgroup/bench/micro"
)

// Results is everything a run measured; results.json holds it.
type Results struct {
	Date        string            `json:"date"`
	Machine     Machine           `json:"machine"`
	Broker      map[string]string `json:"broker"`
	Plan        plan              `json:"plan"`
	WallSeconds float64           `json:"wall_seconds"`
	BrokerIdle  float64           `json:"broker_idle_cpu_s_per_s"`
	RTT         RTTs              `json:"rtt"`
	Figures     []*Figure         `json:"figures"`
	Members     []*MembersPoint   `json:"members_per_process"`
	Groups      []*GroupPoint     `json:"group_size"`
	Micro       []micro.Result    `json:"micro"`
	Growth      []micro.Growth    `json:"micro_growth"`
	Load        []PhaseLoad       `json:"load_by_phase"`
	LoadSamples []LoadSample      `json:"load_samples"`
	Processing  *Processing       `json:"processing,omitempty"`
	Errors      []string          `json:"errors,omitempty"`
	Ran         []string          `json:"phases"`
	Updated     []string          `json:"updated,omitempty"` // partial runs folded in later (-only)
}

// RTTs are the heartbeat round trips Go members measured in the run (milliseconds, medians over
// the processes that reported them); the protocol limits are derived from them.
type RTTs struct {
	Join   float64 `json:"join_ms"`
	Steady float64 `json:"steady_ms"`
	joins  []float64
	steady []float64
}

func (r *RTTs) add(s GoStats) {
	if s.JoinRTTP50 > 0 {
		r.joins = append(r.joins, s.JoinRTTP50)
	}
	if s.RTTP50 > 0 {
		r.steady = append(r.steady, s.RTTP50)
	}
	r.Join, r.Steady = median(r.joins), median(r.steady)
}

func (e *env) run(phases map[string]bool) (*Results, error) {
	res := &Results{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: machine(), Broker: map[string]string{},
		Plan: e.plan}
	if e.javaBinary != "" {
		res.Machine.Java = javaVersion(e.javaBinary)
		res.Machine.JavaOpts = fmt.Sprint(e.javaOpts)
	}
	for k, v := range e.brokerProps {
		if len(k) > 6 && (k[:6] == "group." || k == "num.partitions") {
			res.Broker[k] = v
		}
	}
	res.Broker["kafka.version"] = envOr("STREAMSGROUP_KAFKA_VERSION", "4.4.0")
	e.load = newLoadRecorder(5 * time.Second)
	fail := func(phase string, err error) {
		logf("%s: %v", phase, err)
		res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", phase, err))
	}

	if e.brokerPID != 0 {
		e.load.setPhase("idle")
		if err := e.idleBaseline(); err != nil {
			return nil, err
		}
		res.BrokerIdle = e.brokerIdle
	}
	// After each phase the results so far are saved (results.json in the output directory), so that
	// a run cut short keeps what it measured; -only with the missing phases completes it.
	done := func(phase string) {
		res.Ran = append(res.Ran, phase)
		e.checkpoint(res)
	}
	if phases["p2"] {
		e.load.setPhase("P2")
		res.Figures = append(res.Figures, e.p2(&res.RTT, fail)...)
		done("p2")
	}
	if phases["p1"] {
		e.load.setPhase("P1")
		res.Figures = append(res.Figures, e.p1(&res.RTT, fail)...)
		done("p1")
	}
	if phases["p3"] {
		e.load.setPhase("P3")
		figs, points := e.p3(fail)
		res.Figures = append(res.Figures, figs...)
		res.Members = append(res.Members, points...)
		done("p3")
	}
	if phases["sweep"] {
		e.load.setPhase("scaling: members per process")
		res.Members = append(res.Members, e.sweep(fail)...)
		done("sweep")
	}
	if phases["groups"] {
		e.load.setPhase("scaling: group size")
		res.Groups = e.groups(&res.RTT, fail)
		done("groups")
	}
	if phases["processing"] {
		// processing sets the load phases itself: the restore after an unclean stop has its own.
		res.Processing = e.processing(fail)
		done(e.procLabel())
	}
	if phases["micro"] {
		e.load.setPhase("scaling: tasks per member (micro)")
		_ = flag.Set("test.benchtime", e.BenchTime)
		res.Micro, res.Growth = micro.Run(e.MicroRounds, logf)
		res.Ran = append(res.Ran, "micro")
	}
	res.LoadSamples = e.load.finish()
	res.Load = phaseLoads(res.LoadSamples)
	for _, f := range res.Figures {
		f.finish()
	}
	return res, nil
}

// checkpoint saves the results so far as results.json in the output directory (a partial run's
// are folded into the earlier results there first, as at the end).
func (e *env) checkpoint(res *Results) {
	cp := *res
	cp.LoadSamples = e.load.samples()
	cp.Load = phaseLoads(cp.LoadSamples)
	for _, f := range cp.Figures {
		f.finish()
	}
	out := &cp
	if e.partial {
		// The earlier results are read once, before the first checkpoint overwrites them: read again
		// later, the file would hold this run's own figures and errors, folded in twice.
		if !e.baseRead {
			e.baseRead = true
			e.base, _ = readResults(filepath.Join(e.out, "results.json"))
		}
		if e.base != nil {
			out = merge(e.base, &cp)
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(e.out, "results.json"), append(b, '\n'), 0o644)
	}
	if err != nil {
		logf("saving the results so far: %v", err)
	}
}

// idleBaseline measures the broker's CPU with no member at the start of the run.
func (e *env) idleBaseline() error {
	var err error
	if e.brokerIdle, err = e.brokerRate(e.IdleWindow); err != nil {
		return err
	}
	logf("broker idle: %.4f CPU-s per second", e.brokerIdle)
	return nil
}

// brokerRate is the broker's CPU-seconds per second over d.
func (e *env) brokerRate(d time.Duration) (float64, error) {
	c0, err := cpuSeconds(e.brokerPID)
	if err != nil {
		return 0, fmt.Errorf("reading the broker's CPU: %w", err)
	}
	t0 := time.Now()
	time.Sleep(d)
	c1, err := cpuSeconds(e.brokerPID)
	if err != nil {
		return 0, fmt.Errorf("reading the broker's CPU: %w", err)
	}
	return (c1 - c0) / time.Since(t0).Seconds(), nil
}

// P2: exec → main(), exec → first active tasks, graceful stop; one member alone in a new group.
func (e *env) p2(rtt *RTTs, fail func(string, error)) []*Figure {
	topic, err := e.topic(e.P1Tasks)
	if err != nil {
		fail("P2", err)
		return nil
	}
	vals := map[Side]map[string][]float64{Go: {}, Java: {}}
	for rep := range e.Reps {
		for _, side := range sides(rep) {
			if err := e.p2Once(side, rep, topic, vals[side], rtt); err != nil {
				fail(fmt.Sprintf("P2 %s rep %d", side, rep), err)
			}
		}
	}
	joinLimit := &Limit{Value: rtt.Join / 1000,
		Derivation: fmt.Sprintf("join RTT %.1f ms: a member alone in a group is assigned every task in the answer to its join", rtt.Join)}
	return []*Figure{
		{ID: "p2.exec_to_main", Phase: "P2", Name: "exec → main()", Unit: "s",
			Go: summarize(vals[Go]["main"]), Java: summarize(vals[Java]["main"])},
		{ID: "p2.exec_to_tasks", Phase: "P2", Name: "exec → first active tasks handed to the application", Unit: "s",
			Go: summarize(vals[Go]["tasks"]), Java: summarize(vals[Java]["tasks"]), Limit: joinLimit,
			Note: fmt.Sprintf("one member, a new group, %d tasks; Go: OnTasksAssigned, Java: the first Processor.init", e.P1Tasks)},
		{ID: "p2.graceful_stop", Phase: "P2", Name: "graceful stop (SIGTERM → exit, after revoking and leaving)", Unit: "s",
			Go: summarize(vals[Go]["stop"]), Java: summarize(vals[Java]["stop"])},
	}
}

func (e *env) p2Once(side Side, rep int, topic string, vals map[string][]float64, rtt *RTTs) error {
	app := e.app("p2", side, rep)
	c, err := e.start(memberSpec{side: side, app: app, input: topic, members: 1, clients: "shared"})
	if err != nil {
		return err
	}
	defer stopAll([]*child{c}, 30*time.Second)
	tasksAt, err := c.waitTasks(120 * time.Second)
	if err != nil {
		return err
	}
	if _, err := e.waitConverged(app, 1, e.P1Tasks, 0, 60*time.Second); err != nil {
		return err
	}
	mainAt, _ := c.times()
	vals["main"] = append(vals["main"], secs(mainAt.Sub(c.execAt)))
	vals["tasks"] = append(vals["tasks"], secs(tasksAt.Sub(c.execAt)))
	if side == Go {
		if s, err := c.goStats(); err == nil {
			rtt.add(s)
		}
	}
	e.jitter(e.Settle)
	took, err := c.stop(60 * time.Second)
	if err != nil {
		return err
	}
	vals["stop"] = append(vals["stop"], secs(took))
	logf("P2 %-4s rep %d: main %.3fs, tasks %.3fs, stop %.3fs", side, rep,
		secs(mainAt.Sub(c.execAt)), secs(tasksAt.Sub(c.execAt)), secs(took))
	return nil
}

// P1: convergence of a group of P1Members processes (one member each) on scale-out by one process,
// graceful scale-in of that process, and kill -9 of another.
func (e *env) p1(rtt *RTTs, fail func(string, error)) []*Figure {
	topic, err := e.topic(e.P1Tasks)
	if err != nil {
		fail("P1", err)
		return nil
	}
	vals := map[Side]map[string][]float64{Go: {}, Java: {}}
	for rep := range e.Reps {
		for _, side := range sides(rep) {
			if err := e.p1Once(side, rep, topic, vals[side], rtt); err != nil {
				fail(fmt.Sprintf("P1 %s rep %d", side, rep), err)
			}
		}
	}
	iv := float64(e.interval.Milliseconds())
	outLimit := &Limit{Value: (rtt.Join + iv + rtt.Steady) / 1000,
		Derivation: fmt.Sprintf("join RTT %.1f ms + one heartbeat interval %.0f ms + ack RTT %.1f ms", rtt.Join, iv, rtt.Steady)}
	inLimit := &Limit{Value: (rtt.Steady + iv + rtt.Steady) / 1000,
		Derivation: fmt.Sprintf("leave RTT %.1f ms + one heartbeat interval %.0f ms + ack RTT %.1f ms", rtt.Steady, iv, rtt.Steady)}
	crashLimit := &Limit{Value: (float64(e.session.Milliseconds()) + iv + rtt.Steady) / 1000,
		Derivation: fmt.Sprintf("session timeout %d ms + one heartbeat interval %.0f ms + RTT %.1f ms", e.session.Milliseconds(), iv, rtt.Steady)}
	n := e.P1Members
	group := fmt.Sprintf("%d members (one per process), %d tasks", n, e.P1Tasks)
	return []*Figure{
		{ID: "p1.scale_out_join", Phase: "P1", Name: fmt.Sprintf("scale-out %d → %d, from the join", n, n+1), Unit: "s",
			Go: summarize(vals[Go]["out_join"]), Java: summarize(vals[Java]["out_join"]), Limit: outLimit,
			Note: group + "; from the first describe that lists the new member (±25 ms)"},
		{ID: "p1.scale_out_exec", Phase: "P1", Name: fmt.Sprintf("scale-out %d → %d, from the exec of the new process", n, n+1), Unit: "s",
			Go: summarize(vals[Go]["out_exec"]), Java: summarize(vals[Java]["out_exec"]), Limit: outLimit,
			Note: group + "; includes the new process's start-up"},
		{ID: "p1.scale_in", Phase: "P1", Name: fmt.Sprintf("graceful scale-in %d → %d (SIGTERM)", n+1, n), Unit: "s",
			Go: summarize(vals[Go]["in"]), Java: summarize(vals[Java]["in"]), Limit: inLimit, Note: group},
		{ID: "p1.crash", Phase: "P1", Name: fmt.Sprintf("crash %d → %d (kill -9)", n, n-1), Unit: "s",
			Go: summarize(vals[Go]["crash"]), Java: summarize(vals[Java]["crash"]), Limit: crashLimit, Note: group},
	}
}

func (e *env) p1Once(side Side, rep int, topic string, vals map[string][]float64, rtt *RTTs) error {
	app := e.app("p1", side, rep)
	n := e.P1Members
	spec := memberSpec{side: side, app: app, input: topic, members: 1, clients: "shared"}
	var procs []*child
	defer func() { stopAll(procs, 30*time.Second) }()
	for range n {
		c, err := e.start(spec)
		if err != nil {
			return err
		}
		procs = append(procs, c)
	}
	if _, err := e.waitConverged(app, n, e.P1Tasks, 0, 180*time.Second); err != nil {
		return err
	}
	e.jitter(e.Settle)

	// Scale-out by one process.
	pre := e.groupEpoch(app)
	extra, err := e.start(spec)
	if err != nil {
		return err
	}
	procs = append(procs, extra)
	conv, err := e.waitConverged(app, n+1, e.P1Tasks, pre, 120*time.Second)
	if err != nil {
		return fmt.Errorf("scale-out: %w", err)
	}
	outExec := conv.At.Sub(extra.execAt)
	outJoin := math.NaN()
	if !conv.Joined.IsZero() {
		outJoin = secs(conv.At.Sub(conv.Joined))
	}
	vals["out_exec"] = append(vals["out_exec"], secs(outExec))
	vals["out_join"] = append(vals["out_join"], outJoin)
	if side == Go {
		if s, err := extra.goStats(); err == nil {
			rtt.add(s)
		}
	}
	e.jitter(e.Settle)

	// Graceful scale-in: the new process is stopped with SIGTERM.
	pre = e.groupEpoch(app)
	t0 := time.Now()
	go func() { _, _ = extra.stop(60 * time.Second) }()
	conv, err = e.waitConverged(app, n, e.P1Tasks, pre, 60*time.Second)
	if err != nil {
		return fmt.Errorf("scale-in: %w", err)
	}
	in := conv.At.Sub(t0)
	vals["in"] = append(vals["in"], secs(in))
	<-extra.exited
	e.jitter(e.Settle)

	// Crash: kill -9 of the first process.
	pre = e.groupEpoch(app)
	t0 = time.Now()
	procs[0].kill()
	conv, err = e.waitConverged(app, n-1, e.P1Tasks, pre, e.session+60*time.Second)
	if err != nil {
		return fmt.Errorf("crash: %w", err)
	}
	crash := conv.At.Sub(t0)
	vals["crash"] = append(vals["crash"], secs(crash))
	logf("P1 %-4s rep %d: scale-out %.3fs from exec, %.3fs from join; scale-in %.3fs; crash %.3fs",
		side, rep, secs(outExec), outJoin, secs(in), secs(crash))
	return nil
}

// MembersPoint is the steady-state cost of one process holding Members members (P3 and the sweep).
type MembersPoint struct {
	Variant string  `json:"variant"` // go-shared, go-per-member, java-threads
	Members int     `json:"members"`
	Groups  int     `json:"groups"`
	Window  float64 `json:"window_s"`
	// Per repetition, summarized: CPU-seconds per member-hour of the process, RSS (MiB) of the
	// process and per member, threads, and the broker's CPU-seconds per member-hour above its idle.
	CPU          *Summary `json:"cpu_s_per_member_hour"`
	RSS          *Summary `json:"rss_mib"`
	RSSPerMember *Summary `json:"rss_mib_per_member"`
	Threads      *Summary `json:"threads"`
	BrokerCPU    *Summary `json:"broker_cpu_s_per_member_hour"`
	BrokerIdle   *Summary `json:"broker_idle_cpu_s_per_s"` // measured before each window
	// Go only: heartbeat lateness (ms) against the due time, p99 and max over all members, the share
	// of heartbeats more than 10% of an interval late, and the wait in kgo until written.
	LateP99  *Summary `json:"late_p99_ms,omitempty"`
	LateMax  *Summary `json:"late_max_ms,omitempty"`
	LateOver *Summary `json:"late_over_10pct_share,omitempty"`
	WireP99  *Summary `json:"wire_wait_p99_ms,omitempty"`
	RTTP99   *Summary `json:"rtt_p99_ms,omitempty"`
	Failed   *Summary `json:"failed_heartbeats,omitempty"`
	// ProbeP99 and ProbeMax: how late a bare timer of one interval woke in the same process (the
	// machine's share of the lateness); RunQueueWait: milliseconds per second that the process's
	// threads waited on a run queue for a CPU (/proc/<pid>/task/*/schedstat).
	ProbeP99     *Summary `json:"probe_late_p99_ms,omitempty"`
	ProbeMax     *Summary `json:"probe_late_max_ms,omitempty"`
	ProbeOver    *Summary `json:"probe_late_over_10pct_share,omitempty"`
	RunQueueWait *Summary `json:"run_queue_wait_ms_per_s,omitempty"`
	Failures     []string `json:"failures,omitempty"`
}

type steadySample struct {
	cpu, rss, rssPer, threads, broker float64
	brokerIdle                        float64 // the broker's CPU-s per second just before, with no member
	wait                              float64 // ms per second the process's threads waited for a CPU
	stats                             *GoStats
}

// steady runs one process with members members over groups groups (members/groups each, with as
// many tasks) and measures a steady window.
func (e *env) steady(variant string, members, groups int, rep int) (steadySample, error) {
	per := members / groups
	topic, err := e.topic(int32(per))
	if err != nil {
		return steadySample{}, err
	}
	app := e.app("p3", variant, members, rep)
	spec := memberSpec{app: app, input: topic, members: members, groups: groups}
	switch variant {
	case "go-shared":
		spec.side, spec.clients = Go, "shared"
	case "go-per-member":
		spec.side, spec.clients = Go, "per-member"
	case "java-threads":
		spec.side = Java
	}
	// The broker's idle rate drifts (JIT, log maintenance, what the machine's load does to it), so it
	// is measured again just before each window's process starts.
	idle, err := e.brokerRate(e.IdleWindow / 2)
	if err != nil {
		return steadySample{}, err
	}
	c, err := e.start(spec)
	if err != nil {
		return steadySample{}, err
	}
	defer stopAll([]*child{c}, 60*time.Second)
	names := []string{app}
	if groups > 1 {
		names = names[:0]
		for i := range groups {
			names = append(names, fmt.Sprintf("%s-%d", app, i))
		}
	}
	for _, g := range names {
		if _, err := e.waitConverged(g, per, int32(per), 0, 10*time.Minute); err != nil {
			return steadySample{}, err
		}
	}
	time.Sleep(e.Warmup)
	if spec.side == Go {
		if err := c.send("RESET"); err != nil {
			return steadySample{}, err
		}
	}
	p0, err := cpuSeconds(c.pid())
	if err != nil {
		return steadySample{}, err
	}
	b0, _ := cpuSeconds(e.brokerPID)
	w0 := runDelay(c.pid())
	t0 := time.Now()
	time.Sleep(e.Window)
	w1 := runDelay(c.pid())
	p1, err := cpuSeconds(c.pid())
	if err != nil {
		return steadySample{}, err
	}
	b1, _ := cpuSeconds(e.brokerPID)
	took := time.Since(t0)
	rss, threads, err := procStatus(c.pid())
	if err != nil {
		return steadySample{}, err
	}
	hours := took.Hours() * float64(members)
	s := steadySample{
		cpu:        (p1 - p0) / hours,
		rss:        float64(rss) / (1 << 20),
		threads:    float64(threads),
		broker:     ((b1 - b0) - idle*took.Seconds()) / hours,
		brokerIdle: idle,
		wait:       float64((w1 - w0).Milliseconds()) / took.Seconds(),
	}
	s.rssPer = s.rss / float64(members)
	if spec.side == Go {
		st, err := c.goStats()
		if err != nil {
			return s, err
		}
		s.stats = &st
	}
	late := ""
	if s.stats != nil {
		late = fmt.Sprintf(", lateness p50 %.1f p99 %.1f max %.1f ms (%d of %d > 10%%; bare timer p50 %.1f p99 %.1f max %.1f, %d of %d > 10%%), kgo wait p99 %.1f ms",
			s.stats.LateP50, s.stats.LateP99, s.stats.LateMax, s.stats.LateOver, s.stats.Heartbeats,
			s.stats.ProbeP50, s.stats.ProbeP99, s.stats.ProbeMax, s.stats.ProbeOver, s.stats.ProbeCount, s.stats.WireP99)
	}
	logf("steady %-13s %4d members rep %d: %.2f CPU-s/member-h, RSS %.1f MiB (%.2f/member), %d threads, broker %.2f CPU-s/member-h (idle %.4f CPU-s/s), run-queue wait %.0f ms/s%s",
		variant, members, rep, s.cpu, s.rss, s.rssPer, threads, s.broker, idle, s.wait, late)
	return s, nil
}

// point measures one (variant, members) point reps times and summarizes it.
func (e *env) point(variant string, members, reps int, fail func(string, error)) *MembersPoint {
	groups := max(1, (members+e.GroupMax-1)/e.GroupMax)
	var samples []steadySample
	var failures []string
	for rep := range reps {
		s, err := e.steady(variant, members, groups, rep)
		if err != nil {
			msg := fmt.Sprintf("%s %d members rep %d: %v", variant, members, rep, err)
			failures = append(failures, msg)
			fail("steady", fmt.Errorf("%s", msg))
			continue
		}
		samples = append(samples, s)
	}
	pt := e.makePoint(variant, members, groups, samples)
	pt.Failures = failures
	return pt
}

// makePoint summarizes the repetitions of one point.
func (e *env) makePoint(variant string, members, groups int, samples []steadySample) *MembersPoint {
	pt := &MembersPoint{Variant: variant, Members: members, Groups: groups, Window: e.Window.Seconds()}
	var idle []float64
	var cpu, rss, rssPer, threads, broker, wait, lateP99, lateMax, lateOver, wire, rttP99, failed, probeP99, probeMax, probeOver []float64
	for _, s := range samples {
		cpu, rss, rssPer = append(cpu, s.cpu), append(rss, s.rss), append(rssPer, s.rssPer)
		threads, broker, wait = append(threads, s.threads), append(broker, s.broker), append(wait, s.wait)
		idle = append(idle, s.brokerIdle)
		if st := s.stats; st != nil {
			lateP99, lateMax = append(lateP99, st.LateP99), append(lateMax, st.LateMax)
			if st.Heartbeats > 0 {
				lateOver = append(lateOver, float64(st.LateOver)/float64(st.Heartbeats))
			}
			wire, rttP99, failed = append(wire, st.WireP99), append(rttP99, st.RTTP99), append(failed, float64(st.Failed))
			probeP99, probeMax = append(probeP99, st.ProbeP99), append(probeMax, st.ProbeMax)
			if st.ProbeCount > 0 {
				probeOver = append(probeOver, float64(st.ProbeOver)/float64(st.ProbeCount))
			}
		}
	}
	pt.CPU, pt.RSS, pt.RSSPerMember = summarize(cpu), summarize(rss), summarize(rssPer)
	pt.Threads, pt.BrokerCPU, pt.RunQueueWait = summarize(threads), summarize(broker), summarize(wait)
	pt.BrokerIdle = summarize(idle)
	pt.LateP99, pt.LateMax, pt.LateOver = summarize(lateP99), summarize(lateMax), summarize(lateOver)
	pt.WireP99, pt.RTTP99, pt.Failed = summarize(wire), summarize(rttP99), summarize(failed)
	pt.ProbeP99, pt.ProbeMax, pt.ProbeOver = summarize(probeP99), summarize(probeMax), summarize(probeOver)
	return pt
}

// P3: P3Members members in one process, steady state: Go with a shared client, Go with a client per
// member, Java with as many stream threads; the repetitions alternate the variants.
func (e *env) p3(fail func(string, error)) ([]*Figure, []*MembersPoint) {
	n := e.P3Members
	variants := []string{"go-shared", "go-per-member", "java-threads"}
	samples := map[string][]steadySample{}
	groups := max(1, (n+e.GroupMax-1)/e.GroupMax)
	for rep := range e.Reps {
		order := variants
		if rep%2 == 1 {
			order = []string{"java-threads", "go-per-member", "go-shared"}
		}
		for _, v := range order {
			s, err := e.steady(v, n, groups, rep)
			if err != nil {
				fail(fmt.Sprintf("P3 %s rep %d", v, rep), err)
				continue
			}
			samples[v] = append(samples[v], s)
		}
	}
	col := func(v string, f func(steadySample) float64) *Summary {
		var out []float64
		for _, s := range samples[v] {
			out = append(out, f(s))
		}
		return summarize(out)
	}
	var figs []*Figure
	var points []*MembersPoint
	metrics := []struct {
		id, name, unit string
		f              func(steadySample) float64
	}{
		{"cpu", "CPU-seconds per member-hour", "CPU-s", func(s steadySample) float64 { return s.cpu }},
		{"rss", "RSS of the process", "MiB", func(s steadySample) float64 { return s.rss }},
		{"threads", "threads of the process", "", func(s steadySample) float64 { return s.threads }},
		{"broker_cpu", "broker CPU-seconds per member-hour (above idle)", "CPU-s", func(s steadySample) float64 { return s.broker }},
	}
	for _, v := range []string{"go-shared", "go-per-member"} {
		label := map[string]string{"go-shared": "Go: one shared client", "go-per-member": "Go: a client per member"}[v]
		for _, m := range metrics {
			figs = append(figs, &Figure{ID: fmt.Sprintf("p3.%s.%s", m.id, v), Phase: "P3",
				Name: fmt.Sprintf("%d members in one process, %s (%s)", n, m.name, label), Unit: m.unit,
				Go: col(v, m.f), Java: col("java-threads", m.f),
				Note: fmt.Sprintf("Java: one KafkaStreams with %d stream threads; %.0f s steady window", n, e.Window.Seconds())})
		}
	}
	for _, v := range variants {
		if len(samples[v]) > 0 {
			points = append(points, e.makePoint(v, n, groups, samples[v]))
		}
	}
	return figs, points
}

// sweep: members per process besides P3's size. Go with a shared client at every size; a client per
// member and Kafka Streams up to the size of P3 (a thousand clients or stream threads in one
// process is not what either is built for, and this machine cannot hold a thousand stream threads).
func (e *env) sweep(fail func(string, error)) []*MembersPoint {
	var out []*MembersPoint
	for _, n := range e.SweepSizes {
		out = append(out, e.point("go-shared", n, e.SweepReps, fail))
		if n <= e.P3Members {
			out = append(out, e.point("go-per-member", n, e.SweepReps, fail))
			out = append(out, e.point("java-threads", n, e.SweepReps, fail))
		}
	}
	return out
}

// GroupPoint is the convergence of one group size after a scale-out by Add members.
type GroupPoint struct {
	Base        int      `json:"base"` // the group's size N before the first scale-out
	Step        string   `json:"step"` // "+1" (N → N+1) or "+10%" (N+1 → N+1+⌈N/10⌉)
	Members     int      `json:"members"`
	Tasks       int32    `json:"tasks"`
	Add         int      `json:"add"`
	Go          *Summary `json:"go_s"`
	Java        *Summary `json:"java_s,omitempty"`
	Limit       *Limit   `json:"limit"`
	GoOverLimit float64  `json:"go_over_limit,omitempty"`
	GoOverJava  float64  `json:"go_over_java,omitempty"`
	Rounds      float64  `json:"go_heartbeat_rounds"` // Go median ÷ heartbeat interval
	Failures    []string `json:"failures,omitempty"`
}

// groups: a group of N members in one process (Go: N Managers on a shared client; Java: one
// KafkaStreams with N stream threads) and GroupTasks tasks; then one member is added, and then 10%
// of N more. Each is timed from the ADD command until the group converged.
func (e *env) groups(rtt *RTTs, fail func(string, error)) []*GroupPoint {
	topic, err := e.topic(e.GroupTasks)
	if err != nil {
		fail("group size", err)
		return nil
	}
	var out []*GroupPoint
	for _, n := range e.GroupSizes {
		tenth := max(1, (n+9)/10)
		one := &GroupPoint{Base: n, Step: "+1", Members: n, Tasks: e.GroupTasks, Add: 1}
		ten := &GroupPoint{Base: n, Step: "+10%", Members: n + 1, Tasks: e.GroupTasks, Add: tenth}
		vals := map[Side][2][]float64{}
		for rep := range e.GroupReps {
			for _, side := range sides(rep) {
				if side == Java && n > e.JavaGroupAt {
					continue
				}
				a, b, err := e.groupOnce(side, n, tenth, rep, topic, rtt)
				if err != nil {
					msg := fmt.Sprintf("%s %d members rep %d: %v", side, n, rep, err)
					one.Failures = append(one.Failures, msg)
					fail("group size", fmt.Errorf("%s", msg))
					continue
				}
				v := vals[side]
				v[0], v[1] = append(v[0], a), append(v[1], b)
				vals[side] = v
			}
		}
		iv := float64(e.interval.Milliseconds())
		limit := &Limit{Value: (rtt.Join + iv + rtt.Steady) / 1000,
			Derivation: fmt.Sprintf("join RTT %.1f ms + one heartbeat interval %.0f ms + ack RTT %.1f ms", rtt.Join, iv, rtt.Steady)}
		for i, p := range []*GroupPoint{one, ten} {
			p.Go, p.Java, p.Limit = summarize(vals[Go][i]), summarize(vals[Java][i]), limit
			if p.Go != nil {
				p.GoOverLimit = p.Go.Median / limit.Value
				p.Rounds = p.Go.Median / e.interval.Seconds()
				if p.Java != nil {
					p.GoOverJava = p.Go.Median / p.Java.Median
				}
			}
			out = append(out, p)
		}
	}
	return out
}

func (e *env) groupOnce(side Side, n, tenth, rep int, topic string, rtt *RTTs) (float64, float64, error) {
	app := e.app("group", side, n, rep)
	c, err := e.start(memberSpec{side: side, app: app, input: topic, members: n, clients: "shared"})
	if err != nil {
		return 0, 0, err
	}
	defer stopAll([]*child{c}, 60*time.Second)
	if _, err := e.waitConverged(app, n, e.GroupTasks, 0, 10*time.Minute); err != nil {
		return 0, 0, err
	}
	var took [2]float64
	want := n
	for i, k := range []int{1, tenth} {
		e.jitter(e.Settle)
		pre := e.groupEpoch(app)
		t0 := time.Now()
		if err := c.send(fmt.Sprintf("ADD %d", k)); err != nil {
			return 0, 0, err
		}
		want += k
		conv, err := e.waitConverged(app, want, e.GroupTasks, pre, 5*time.Minute)
		if err != nil {
			return 0, 0, fmt.Errorf("scale-out by %d: %w", k, err)
		}
		took[i] = secs(conv.At.Sub(t0))
	}
	if side == Go {
		if s, err := c.goStats(); err == nil {
			rtt.add(s)
		}
	}
	logf("group %-4s %3d members rep %d: +1 in %.3fs, +%d in %.3fs", side, n, rep, took[0], tenth, took[1])
	return took[0], took[1], nil
}
