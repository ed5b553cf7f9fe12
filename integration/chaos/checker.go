package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Run is everything the checker reads: the driver's log and every member record of the run.
type Run struct {
	Config  Config
	Driver  []DriverRecord
	Members []Record
	// EOS is the exactly-once mode's read of the topics (eos.json); nil otherwise.
	EOS *EOSData
}

// maxListed caps the violations a Verdict lists; Count counts them all.
const maxListed = 25

// Verdict is the outcome of one property.
type Verdict struct {
	OK         bool     `json:"ok"`
	Count      int      `json:"violations"`
	Violations []string `json:"list,omitempty"`
}

func (v *Verdict) add(format string, args ...any) {
	v.Count++
	if len(v.Violations) < maxListed {
		v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
	}
}

// FaultResult is what the checker found about one fault.
type FaultResult struct {
	Fault
	// RecoveryMs: from the fault's end to the first moment S2's convergence held; -1 if it never did
	// before the next fault (or the end of the run).
	RecoveryMs float64 `json:"recovery_ms"`
	DeadlineMs float64 `json:"deadline_ms"`
	// WindowMs: the longest double-processing window this fault opened (S1's exception): the time a
	// task was held both by the faulted member and by another. PausedMs is the part of it while the
	// faulted process was stopped (it could not act), AfterMs the part after it resumed or was
	// reconnected.
	WindowMs float64 `json:"window_ms"`
	PausedMs float64 `json:"paused_ms"`
	AfterMs  float64 `json:"after_ms"`
}

// Dist summarises durations in milliseconds.
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
	Max    float64 `json:"max_ms"`
}

// NewDist summarises xs (nearest-rank percentiles).
func NewDist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return Dist{N: len(s), Median: rank(0.5), P95: rank(0.95), Max: s[len(s)-1]}
}

// ProcStats are the extremes of one process incarnation's samples.
type ProcStats struct {
	Proc          string  `json:"proc"`
	Inc           int     `json:"inc"`
	Members       int     `json:"members"`
	Samples       int     `json:"samples"`
	MaxGoroutines int     `json:"max_goroutines"`
	MaxHeapMiB    float64 `json:"max_heap_mib"`
}

// Report is the checker's answer.
type Report struct {
	Config   Config                 `json:"config"`
	Faults   []FaultResult          `json:"faults"`
	Recovery map[string]Dist        `json:"recovery"`        // per fault type
	Windows  map[string]Dist        `json:"s1_windows"`      // per expiring fault type: WindowMs
	After    map[string]Dist        `json:"s1_after_resume"` // per expiring fault type: AfterMs
	Paused   map[string]Dist        `json:"s1_while_paused"` // per pause fault type: PausedMs
	S1       Verdict                `json:"s1"`
	S2       Verdict                `json:"s2"`
	S3       Verdict                `json:"s3"`
	S4       Verdict                `json:"s4"` // exactly-once mode only (always OK otherwise)
	EOS      *EOSSummary            `json:"eos,omitempty"`
	Procs    []ProcStats            `json:"processes"`
	Conns    Dist                   `json:"broker_connections"` // counts, not ms (soak)
	Extra    map[string]interface{} `json:"extra,omitempty"`
	// Markers are the transaction markers the driver wrote for hanging transactions (a broker
	// limitation, see package integration/hanging; only in a run with Config.RepairHangs).
	Markers []string `json:"markers,omitempty"`
	// Hanging are the hanging transactions the driver's detector found (each fails S4), and
	// HangDetector says the detector ran (an exactly-once run without RepairHangs).
	Hanging      []string `json:"hanging,omitempty"`
	HangDetector bool     `json:"hang_detector,omitempty"`
	// HangLooks is how many looks the detector took (at every partition's open transactions).
	HangLooks int     `json:"hang_looks,omitempty"`
	Pass      bool    `json:"pass"`
	WallSecs  float64 `json:"wall_seconds"`
}

type procKey struct {
	proc string
	inc  int
}

type holderKey struct {
	procKey
	member string
}

func (h holderKey) String() string { return fmt.Sprintf("%s#%d/%s", h.proc, h.inc, h.member) }

type proc struct {
	spawn, died int64 // died: math.MaxInt64 while alive
	expected    bool
	diedSeen    bool
	members     int
}

type holder struct {
	key      holderKey
	recs     []Record // sorted by time
	owned    []Record // its KindOwned records, sorted by time
	memberID string
	started  int64 // its KindStart (member ID known from here)
	closed   int64 // its KindClosed, MaxInt64 if none
	end      int64 // when its process ended (or the run did)
}

type interval struct {
	h    holderKey
	a, b int64
}

// Check reads a run and returns the report. It never fails: what it cannot make sense of is a
// violation.
func Check(run Run) Report {
	cfg := run.Config
	rep := Report{Config: cfg, Recovery: map[string]Dist{}, Windows: map[string]Dist{}, After: map[string]Dist{}, Paused: map[string]Dist{}}
	rep.S1.OK, rep.S2.OK, rep.S3.OK = true, true, true

	drv := slices.Clone(run.Driver)
	slices.SortStableFunc(drv, func(a, b DriverRecord) int { return cmp.Compare(a.T, b.T) })
	var runStart, runEnd int64 = math.MaxInt64, 0
	for _, r := range drv {
		runStart, runEnd = min(runStart, r.T), max(runEnd, r.T)
	}
	for _, r := range run.Members {
		runStart, runEnd = min(runStart, r.T), max(runEnd, r.T)
	}
	for _, r := range drv {
		if r.Kind == DKEnd {
			runEnd = r.T
		}
	}
	if runStart < runEnd {
		rep.WallSecs = float64(runEnd-runStart) / 1e6
	}

	// Processes and their lifetimes.
	procs := map[procKey]*proc{}
	getProc := func(k procKey) *proc {
		p := procs[k]
		if p == nil {
			p = &proc{spawn: math.MaxInt64, died: math.MaxInt64, members: 1}
			procs[k] = p
		}
		return p
	}
	var faults []Fault
	var snaps []DriverRecord
	for _, r := range drv {
		switch r.Kind {
		case DKSpawn:
			p := getProc(procKey{r.Proc, r.Inc})
			p.spawn = min(p.spawn, r.T)
			p.members = max(len(r.Members), 1)
		case DKDied:
			p := getProc(procKey{r.Proc, r.Inc})
			p.died, p.diedSeen, p.expected = r.T, true, r.Expected
			// Also after the schedule's end: a member that fails to close when the driver stops
			// it at the end has not exited as it should.
			if !r.Expected {
				rep.S3.add("process %s#%d exited unexpectedly at %s (code %d %s)", r.Proc, r.Inc, ts(r.T, runStart), r.Code, r.Signal)
			}
		case DKFault:
			if r.Fault != nil {
				faults = append(faults, *r.Fault)
			}
		case DKMarker:
			rep.Markers = append(rep.Markers, r.Detail)
		case DKHang:
			rep.Hanging = append(rep.Hanging, r.Detail)
		case DKHangLooks:
			rep.HangLooks += r.Looks
		case DKSnapshot:
			if r.Snap != nil {
				snaps = append(snaps, r)
			}
		}
	}
	slices.SortStableFunc(faults, func(a, b Fault) int { return cmp.Compare(a.Start, b.Start) })

	// Holders (one member of one process incarnation) and their records. Every member a process was
	// started with is a holder from its spawn on, even before it logs anything, so that a process
	// whose members are still starting is never taken for converged.
	holders := map[holderKey]*holder{}
	for _, r := range drv {
		if r.Kind != DKSpawn {
			continue
		}
		for _, m := range r.Members {
			hk := holderKey{procKey{r.Proc, r.Inc}, m}
			if holders[hk] == nil {
				holders[hk] = &holder{key: hk, closed: math.MaxInt64, started: math.MaxInt64}
			}
		}
	}
	samples := map[procKey][]Record{}
	recs := slices.Clone(run.Members)
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.T, b.T) })
	for _, r := range recs {
		pk := procKey{r.Proc, r.Inc}
		p := getProc(pk)
		p.spawn = min(p.spawn, r.T)
		if r.Kind == KindSample {
			samples[pk] = append(samples[pk], r)
			continue
		}
		hk := holderKey{pk, r.Member}
		h := holders[hk]
		if h == nil {
			h = &holder{key: hk, closed: math.MaxInt64, started: math.MaxInt64}
			holders[hk] = h
		}
		h.recs = append(h.recs, r)
		switch r.Kind {
		case KindOwned:
			h.owned = append(h.owned, r)
		case KindStart:
			h.memberID, h.started = r.MemberID, min(h.started, r.T)
		case KindClosed:
			h.closed = min(h.closed, r.T)
		case KindEvent:
			if r.Event == "fatal" {
				rep.S3.add("%s: fatal event at %s: %s", hk, ts(r.T, runStart), r.Err)
			}
		}
	}
	for hk, h := range holders {
		h.end = min(procs[hk.procKey].died, runEnd)
	}

	// Ownership intervals, per task.
	byTask := map[string][]interval{}
	for _, hk := range sortedKeys(holders) {
		h := holders[hk]
		open := map[string]int64{}
		closeAt := func(task string, t int64) {
			if a, ok := open[task]; ok {
				if t > a {
					byTask[task] = append(byTask[task], interval{hk, a, t})
				}
				delete(open, task)
			}
		}
		for _, r := range h.recs {
			if r.Kind != KindOwned || r.T > h.end {
				continue
			}
			now := map[string]bool{}
			for _, t := range r.Active {
				now[t] = true
				if _, ok := open[t]; !ok {
					open[t] = r.T
				}
			}
			for _, t := range slices.Sorted(maps.Keys(open)) {
				if !now[t] {
					closeAt(t, r.T)
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(open)) {
			closeAt(t, h.end)
		}
	}

	// S1's exceptions: for an expiring fault, each member of the faulted process, from the fault's
	// start until its first answered heartbeat after the fault's end, plus the grace.
	type excuse struct {
		fault int // index in faults
		a, b  int64
	}
	excuses := map[holderKey][]excuse{}
	grace := cfg.GraceMs * 1000
	for i, f := range faults {
		if !f.Expiring {
			continue
		}
		for hk, h := range holders {
			if hk.proc != f.Proc || hk.inc != f.Inc {
				continue
			}
			until := f.End
			for _, r := range h.recs {
				if r.Kind == KindHeartbeat && r.Answered && r.T >= f.End {
					until = r.T
					break
				}
			}
			excuses[hk] = append(excuses[hk], excuse{i, f.Start, until + grace})
		}
	}

	results := make([]FaultResult, len(faults))
	for i, f := range faults {
		results[i] = FaultResult{Fault: f, RecoveryMs: -1}
	}

	// S1: no task held by two holders at once, outside the exceptions.
	for _, task := range slices.Sorted(maps.Keys(byTask)) {
		ivs := byTask[task]
		for i := range ivs {
			for j := i + 1; j < len(ivs); j++ {
				x, y := ivs[i], ivs[j]
				if x.h == y.h {
					continue
				}
				a, b := max(x.a, y.a), min(x.b, y.b)
				if a >= b {
					continue
				}
				// The parts of [a,b) covered by an exception of either holder.
				var cover [][2]int64
				for _, hk := range []holderKey{x.h, y.h} {
					for _, e := range excuses[hk] {
						ca, cb := max(a, e.a), min(b, e.b)
						if ca >= cb {
							continue
						}
						cover = append(cover, [2]int64{ca, cb})
						f := faults[e.fault]
						r := &results[e.fault]
						total := float64(cb-ca) / 1000
						var paused float64
						if f.Paused {
							if pa, pb := max(ca, f.Start), min(cb, f.End); pb > pa {
								paused = float64(pb-pa) / 1000
							}
						}
						r.WindowMs = max(r.WindowMs, total)
						r.PausedMs = max(r.PausedMs, paused)
						r.AfterMs = max(r.AfterMs, total-paused)
					}
				}
				for _, gap := range uncovered(a, b, cover) {
					rep.S1.add("task %s held by %s and %s at once from %s for %.0f ms (no exception covers it)",
						task, x.h, y.h, ts(gap[0], runStart), float64(gap[1]-gap[0])/1000)
				}
			}
		}
	}

	// S2: after each fault, convergence within session timeout + 2 heartbeat intervals.
	deadline := float64(cfg.SessionMs + 2*cfg.HeartbeatMs + cfg.ExtraDeadlineMs)
	for i, f := range faults {
		r := &results[i]
		r.DeadlineMs = deadline
		limit := runEnd
		if i+1 < len(faults) {
			limit = faults[i+1].Start
		}
		at, why := firstConverged(f.End, limit, snaps, holders, procs, recs, cfg.Partitions)
		if at >= 0 {
			r.RecoveryMs = float64(at-f.End) / 1000
		}
		switch {
		case at < 0:
			rep.S2.add("fault %d (%s on %s): not converged before %s; last reason: %s", f.N, f.Type, target(f), ts(limit, runStart), why)
		case r.RecoveryMs > deadline:
			rep.S2.add("fault %d (%s on %s): converged after %.0f ms, deadline %.0f ms", f.N, f.Type, target(f), r.RecoveryMs, deadline)
		}
	}
	rep.Faults = results
	byType := func(val func(FaultResult) (float64, bool)) map[string]Dist {
		m := map[string][]float64{}
		for _, r := range results {
			if v, ok := val(r); ok {
				m[r.Type] = append(m[r.Type], v)
			}
		}
		out := map[string]Dist{}
		for k, xs := range m {
			out[k] = NewDist(xs)
		}
		return out
	}
	rep.Recovery = byType(func(r FaultResult) (float64, bool) { return r.RecoveryMs, r.RecoveryMs >= 0 })
	rep.Windows = byType(func(r FaultResult) (float64, bool) { return r.WindowMs, r.Expiring })
	rep.After = byType(func(r FaultResult) (float64, bool) { return r.AfterMs, r.Expiring })
	rep.Paused = byType(func(r FaultResult) (float64, bool) { return r.PausedMs, r.Expiring && r.Paused })

	// S3: bounds on goroutines, heap and connections, and no growth over long runs.
	for _, pk := range sortedKeys(samples) {
		ss := samples[pk]
		p := procs[pk]
		ps := ProcStats{Proc: pk.proc, Inc: pk.inc, Members: p.members, Samples: len(ss)}
		gBound := cfg.GoroutinesBase + cfg.GoroutinesPerMember*p.members
		hBound := cfg.HeapBaseMiB + cfg.HeapPerMemberMiB*float64(p.members)
		for _, s := range ss {
			ps.MaxGoroutines = max(ps.MaxGoroutines, s.Goroutines)
			ps.MaxHeapMiB = max(ps.MaxHeapMiB, float64(s.HeapInuse)/(1<<20))
		}
		if ps.MaxGoroutines > gBound {
			rep.S3.add("process %s#%d: %d goroutines, bound %d", pk.proc, pk.inc, ps.MaxGoroutines, gBound)
		}
		if ps.MaxHeapMiB > hBound {
			rep.S3.add("process %s#%d: %.1f MiB heap in use, bound %.1f", pk.proc, pk.inc, ps.MaxHeapMiB, hBound)
		}
		if g, ok := growth(ss, func(r Record) float64 { return float64(r.Goroutines) }); ok && g.late > 1.25*g.early+10 {
			rep.S3.add("process %s#%d: goroutines grew from a median of %.0f to %.0f", pk.proc, pk.inc, g.early, g.late)
		}
		if g, ok := growth(ss, func(r Record) float64 { return float64(r.HeapInuse) / (1 << 20) }); ok && g.late > 1.5*g.early+8 {
			rep.S3.add("process %s#%d: heap in use grew from a median of %.1f MiB to %.1f MiB", pk.proc, pk.inc, g.early, g.late)
		}
		rep.Procs = append(rep.Procs, ps)
	}
	var conns []float64
	var connRecs []Record
	for _, r := range drv {
		if r.Kind != DKConns {
			continue
		}
		conns = append(conns, float64(r.Conns))
		connRecs = append(connRecs, Record{T: r.T, Goroutines: r.Conns})
		clients := 0
		for _, p := range procs {
			if p.spawn <= r.T && r.T < p.died {
				clients += p.members
			}
		}
		if cfg.App == "eos" {
			clients *= 2 // an exactly-once member produces with a transactional client of its own
		}
		if bound := cfg.ConnsPerClient*clients*max(cfg.Brokers, 1) + cfg.ConnsBase; r.Conns > bound {
			rep.S3.add("%d connections to the broker at %s, bound %d (%d clients)", r.Conns, ts(r.T, runStart), bound, clients)
		}
	}
	rep.Conns = NewDist(conns)
	if g, ok := growth(connRecs, func(r Record) float64 { return float64(r.Goroutines) }); ok && g.late > 1.25*g.early+10 {
		rep.S3.add("broker connections grew from a median of %.0f to %.0f", g.early, g.late)
	}

	checkS4(run, drv, &rep)
	rep.S1.OK, rep.S2.OK, rep.S3.OK = rep.S1.Count == 0, rep.S2.Count == 0, rep.S3.Count == 0
	rep.Pass = rep.S1.OK && rep.S2.OK && rep.S3.OK && rep.S4.OK
	return rep
}

// growthSpan is the shortest span of samples over which growth is judged: shorter runs are bounded
// by the absolute bounds only.
const growthSpan = 10 * 60 * 1e6

type growthMedians struct{ early, late float64 }

// growth compares the median of the second fifth of the samples (after the warm-up) with the median
// of the last fifth, when they span growthSpan or more.
func growth(ss []Record, v func(Record) float64) (growthMedians, bool) {
	if len(ss) < 10 || ss[len(ss)-1].T-ss[0].T < growthSpan {
		return growthMedians{}, false
	}
	n := len(ss) / 5
	med := func(part []Record) float64 {
		xs := make([]float64, len(part))
		for i, r := range part {
			xs[i] = v(r)
		}
		return NewDist(xs).Median
	}
	return growthMedians{early: med(ss[n : 2*n]), late: med(ss[len(ss)-n:])}, true
}

// uncovered returns the parts of [a,b) that no interval of cover covers.
func uncovered(a, b int64, cover [][2]int64) [][2]int64 {
	slices.SortFunc(cover, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var out [][2]int64
	at := a
	for _, c := range cover {
		if c[0] > at {
			out = append(out, [2]int64{at, min(c[0], b)})
		}
		at = max(at, c[1])
		if at >= b {
			return out
		}
	}
	if at < b {
		out = append(out, [2]int64{at, b})
	}
	return out
}

// LiveMember is a member that is alive (its process runs, it has not closed) at some moment: its
// member ID ("" if it has not said it yet) and the active tasks its application holds.
type LiveMember struct {
	Name     string
	MemberID string
	Active   []string
}

// Converged is S2's condition at one moment: the broker's view is Stable, every one of the
// partitions' tasks is active at exactly one member and no other task is, every member has
// reconciled (current = target), the broker's members are exactly the live members, and each live
// member holds exactly what the broker says it owns. The reason says what does not hold.
func Converged(s *Snapshot, live []LiveMember, partitions int) (bool, string) {
	if s == nil {
		return false, "no description of the group yet"
	}
	if s.State != "Stable" {
		if s.Err != "" {
			return false, "describe failed: " + s.Err
		}
		return false, "group state " + s.State
	}
	owners := map[string]int{}
	broker := map[string][]string{}
	for _, m := range s.Members {
		for _, t := range m.Active {
			owners[t]++
		}
		if !slices.Equal(m.Active, m.Target) {
			return false, fmt.Sprintf("member %s has not reconciled (owns %v, target %v)", short(m.ID), m.Active, m.Target)
		}
		broker[m.ID] = m.Active
	}
	for p := range partitions {
		if n := owners[Task(p)]; n != 1 {
			return false, fmt.Sprintf("task %s active at %d members", Task(p), n)
		}
	}
	if len(owners) != partitions {
		return false, fmt.Sprintf("%d distinct active tasks, want %d", len(owners), partitions)
	}
	seen := map[string]bool{}
	for _, m := range live {
		if m.MemberID == "" {
			return false, "member " + m.Name + " has not started"
		}
		b, ok := broker[m.MemberID]
		if !ok {
			return false, "member " + m.Name + " is not in the group"
		}
		seen[m.MemberID] = true
		own := slices.Sorted(slices.Values(m.Active))
		if !slices.Equal(own, slices.Sorted(slices.Values(b))) {
			return false, fmt.Sprintf("member %s holds %v, the broker says %v", m.Name, own, b)
		}
	}
	for id := range broker {
		if !seen[id] {
			return false, "the group has member " + short(id) + ", which is no live member"
		}
	}
	return true, ""
}

// firstConverged finds the first moment in [from, limit] at which Converged holds, evaluated at
// from and at every change (snapshot, member record, process start or end) after it. It returns -1
// and the last reason if there is none.
func firstConverged(from, limit int64, snaps []DriverRecord, holders map[holderKey]*holder, procs map[procKey]*proc, recs []Record, partitions int) (int64, string) {
	times := []int64{from}
	for _, s := range snaps {
		if s.T > from && s.T <= limit {
			times = append(times, s.T)
		}
	}
	for _, r := range recs {
		if r.T > from && r.T <= limit && r.Kind != KindSample && r.Kind != KindHeartbeat && r.Kind != KindEvent {
			times = append(times, r.T)
		}
	}
	for _, p := range procs {
		for _, t := range []int64{p.spawn, p.died} {
			if t > from && t <= limit {
				times = append(times, t)
			}
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	why := "nothing observed"
	for _, t := range times {
		var snap *Snapshot
		if i := sort.Search(len(snaps), func(i int) bool { return snaps[i].T > t }); i > 0 {
			snap = snaps[i-1].Snap
		}
		var live []LiveMember
		for _, hk := range sortedKeys(holders) {
			h := holders[hk]
			p := procs[hk.procKey]
			if p.spawn > t || p.died <= t || h.closed <= t {
				continue
			}
			lm := LiveMember{Name: hk.String()}
			if h.started <= t {
				lm.MemberID = h.memberID
			}
			if i := sort.Search(len(h.owned), func(i int) bool { return h.owned[i].T > t }); i > 0 {
				lm.Active = h.owned[i-1].Active
			}
			live = append(live, lm)
		}
		// A process that is spawned but has not written its start record yet is live too.
		for pk, p := range procs {
			if p.spawn > t || p.died <= t {
				continue
			}
			has := false
			for hk := range holders {
				if hk.procKey == pk {
					has = true
					break
				}
			}
			if !has {
				live = append(live, LiveMember{Name: fmt.Sprintf("%s#%d", pk.proc, pk.inc)})
			}
		}
		ok, reason := Converged(snap, live, partitions)
		if ok {
			return t, ""
		}
		why = reason
	}
	return -1, why
}

func sortedKeys[K interface {
	procKey | holderKey
}, V any](m map[K]V) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return keys
}

func target(f Fault) string {
	if f.Proc == "" {
		return "the broker"
	}
	return fmt.Sprintf("%s#%d", f.Proc, f.Inc)
}

// ts prints a time as seconds since the run's start.
func ts(t, start int64) string { return fmt.Sprintf("+%.3fs", float64(t-start)/1e6) }

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
