// Package micro holds the scaling micro-benchmarks of bench-compare: what one member does per
// heartbeat and per rebalance, for 10, 1,000 and 10,000 tasks, so that a cost that grows faster than
// the number of tasks shows as a growing time per task. They run under `go test -bench ./bench/micro`
// and inside the bench-compare driver (testing.Benchmark).
//
// Every case uses one topology of 20 stateful subtopologies (a source topic and a changelog each);
// n tasks are spread round-robin over them, as the broker's assignor spreads them.
package micro

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/machine"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Sizes are the tasks per member the cases are run for.
var Sizes = []int{10, 1_000, 10_000}

// Case is one operation measured at every size.
type Case struct {
	Name string
	What string // one line: what one operation is
	Run  func(b *testing.B, n int)
}

// Cases are the operations, in the order a member meets them.
var Cases = []Case{
	{"heartbeat/build+encode steady", "a steady heartbeat built and encoded (owned lists unchanged, so not sent)", buildEncodeSteady},
	{"heartbeat/build+encode full", "a heartbeat that carries the n owned tasks (an ack, or the first after an error)", buildEncodeFull},
	{"heartbeat/decode+parse", "an answer carrying a new assignment of n tasks, decoded and parsed", decodeParse},
	{"machine/steady step", "Machine.Step: Tick sends a heartbeat, HeartbeatDone reads its answer", machineSteady},
	{"machine/steady step + snapshot", "what Manager.step does per input: Step, Snapshot, compare with the last snapshot", managerSteady},
	{"machine/reconcile 10%", "a new target moving 10% of n tasks: answer, revoke, assign, ack, answer", machineReconcile},
	{"machine/reconcile 10% + snapshots", "the same with the snapshot the Manager takes after every step", managerReconcile},
	{"tasks/FromKmsg", "a task list of a heartbeat answer read into a Set", fromKmsg},
	{"tasks/Set.Kmsg", "a Set written as a heartbeat task list", setKmsg},
	{"tasks/InputPartitions", "the input partitions of n tasks", inputPartitions},
	{"tasks/ChangelogPartitions", "the changelog partitions of n tasks", changelogPartitions},
}

const subtopologies = 20

// Topology returns the topology every case uses.
func Topology() *topology.Topology {
	names := topology.Names{AppID: "bench"}
	subs := make([]topology.Subtopology, subtopologies)
	for i := range subs {
		id := strconv.Itoa(i)
		subs[i] = topology.Subtopology{ID: id, SourceTopics: []string{"bench-in-" + id},
			StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog("store-" + id)}}
	}
	return topology.MustNew(subs...)
}

// Tasks returns n tasks spread over the 20 subtopologies, partitions starting at shift.
func Tasks(n, shift int) tasks.Set {
	ids := make([]tasks.ID, n)
	for i := range n {
		ids[i] = tasks.ID{Subtopology: strconv.Itoa(i % subtopologies), Partition: int32(i/subtopologies + shift)}
	}
	return tasks.NewSet(ids...)
}

// moved is the shift that moves about 10% of n tasks (at least one per subtopology).
func moved(n int) int { return max(1, n/subtopologies/10) }

func join(topo *topology.Topology) heartbeat.JoinInfo {
	return heartbeat.JoinInfo{Group: "bench", MemberID: "member-1", ProcessID: "process-1",
		RebalanceTimeout: 300_000, Topology: topo}
}

func buildEncodeSteady(b *testing.B, n int) {
	owned := tasks.Assignment{Active: Tasks(n, 0)}
	bl := heartbeat.NewBuilder(join(Topology()))
	bl.Build(heartbeat.Report{Epoch: heartbeat.EpochJoin})
	bl.Build(heartbeat.Report{Epoch: 1, Owned: owned})
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = bl.Build(heartbeat.Report{Epoch: 1, Owned: owned}).AppendTo(buf[:0])
	}
}

func buildEncodeFull(b *testing.B, n int) {
	owned := tasks.Assignment{Active: Tasks(n, 0)}
	bl := heartbeat.NewBuilder(join(Topology()))
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		bl.Reset()
		buf = bl.Build(heartbeat.Report{Epoch: 3, Owned: owned}).AppendTo(buf[:0])
	}
}

// answer is a successful answer at epoch with a 500 ms interval; a nil assignment leaves the task
// lists null (unchanged).
func answer(epoch int32, a *tasks.Assignment) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = 1
	r.MemberID = "member-1"
	r.MemberEpoch = epoch
	r.HeartbeatIntervalMillis = 500
	r.AcceptableRecoveryLag = -1
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if a != nil {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = a.Active.Kmsg(), a.Standby.Kmsg(), a.Warmup.Kmsg()
	}
	return r
}

func decodeParse(b *testing.B, n int) {
	topo := Topology()
	a := tasks.Assignment{Active: Tasks(n, 0)}
	raw := answer(2, &a).AppendTo(nil)
	var r heartbeat.Response // reused, as the machine reuses its own
	b.ReportAllocs()
	for b.Loop() {
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.Version = 1
		if err := resp.ReadFrom(raw); err != nil {
			b.Fatal(err)
		}
		if err := heartbeat.ParseInto(&r, resp, topo); err != nil {
			b.Fatal(err)
		}
		if r.Assignment == nil || r.Assignment.Active.Len() != n {
			b.Fatal("the assignment was not read")
		}
	}
}

// driver runs a Machine the way the Manager does, with callbacks that return at once.
type driver struct {
	m        *machine.Machine
	now      time.Time
	snapshot bool   // take the Manager's snapshot after every step
	seq      uint64 // of the last heartbeat sent
	sent     bool   // a heartbeat went in the last feed
	inFlight bool   // a heartbeat was sent and not answered
	epoch    int32
	snap     machine.Snapshot
}

func newDriver(tb testing.TB, owned tasks.Set) *driver {
	d := &driver{now: time.Unix(1_000_000, 0), epoch: 1}
	d.m = machine.New(machine.Config{
		Join:    join(Topology()),
		Backoff: heartbeat.Backoff{Min: time.Millisecond, Max: time.Second},
	})
	d.feed(machine.Start{})
	d.feed(machine.CapabilitiesKnown{Caps: heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}})
	a := tasks.Assignment{Active: owned}
	d.answer(tb, &a)
	if d.m.State() != machine.Stable || d.m.Snapshot().Owned.Active.Len() != owned.Len() {
		tb.Fatalf("state %s, owned %d; want Stable with %d", d.m.State(), d.m.Snapshot().Owned.Active.Len(), owned.Len())
	}
	return d
}

// feed steps one input and answers every callback at once (CallbackDone), as a listener that
// returns immediately does.
func (d *driver) feed(in machine.Input) {
	d.sent = false
	var done []machine.Input
	for _, a := range d.m.Step(d.now, in) {
		switch a := a.(type) {
		case machine.SendHeartbeat:
			d.seq, d.sent, d.inFlight = a.Seq, true, true
		case machine.Invoke:
			done = append(done, machine.CallbackDone{Seq: a.Seq})
		}
	}
	if d.snapshot {
		d.snap = d.m.Snapshot()
	}
	for _, in := range done {
		d.feed(in)
	}
}

// done answers the heartbeat in flight with target a (nil: unchanged).
func (d *driver) done(a *tasks.Assignment) {
	d.inFlight = false
	d.feed(machine.HeartbeatDone{Seq: d.seq, Response: answer(d.epoch, a)})
}

// answer answers the heartbeat in flight with target a (nil: unchanged) and runs the member until
// it is Stable again with no heartbeat in flight: callbacks, the ack, and the ack's answer.
func (d *driver) answer(tb testing.TB, a *tasks.Assignment) {
	if a != nil {
		d.epoch++
	}
	d.done(a)
	for range 10 {
		switch {
		case d.inFlight:
			d.done(nil)
		case d.m.State() == machine.Stable:
			return
		default:
			d.now = d.now.Add(time.Millisecond)
			d.feed(machine.Tick{})
		}
	}
	tb.Fatalf("not Stable after a new target: %s", d.m.State())
}

// steady is one steady heartbeat: Tick after an interval, then the answer.
func (d *driver) steady(tb testing.TB) {
	d.now = d.now.Add(500 * time.Millisecond)
	d.feed(machine.Tick{})
	if !d.sent {
		tb.Fatal("no heartbeat after an interval")
	}
	d.done(nil)
}

func machineSteady(b *testing.B, n int) {
	d := newDriver(b, Tasks(n, 0))
	b.ReportAllocs()
	for b.Loop() {
		d.steady(b)
	}
}

// managerSteady adds what the Manager does after every Step: it takes the machine's snapshot and
// compares what is owned with the last one (metrics), twice per heartbeat.
func managerSteady(b *testing.B, n int) {
	d := newDriver(b, Tasks(n, 0))
	last := d.m.Snapshot()
	observe := func() {
		s := d.m.Snapshot()
		if !s.Owned.Equal(last.Owned) {
			last = s
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		d.now = d.now.Add(500 * time.Millisecond)
		d.feed(machine.Tick{})
		if !d.sent {
			b.Fatal("no heartbeat after an interval")
		}
		observe()
		d.done(nil)
		observe()
	}
}

func machineReconcile(b *testing.B, n int) { reconcile(b, n, false) }

// managerReconcile is machineReconcile with the snapshot the Manager takes after every step.
func managerReconcile(b *testing.B, n int) { reconcile(b, n, true) }

func reconcile(b *testing.B, n int, snapshots bool) {
	from, to := Tasks(n, 0), Tasks(n, moved(n))
	d := newDriver(b, from)
	d.snapshot = snapshots
	targets := [2]tasks.Assignment{{Active: to}, {Active: from}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.now = d.now.Add(500 * time.Millisecond)
		d.feed(machine.Tick{})
		if !d.sent {
			b.Fatal("no heartbeat after an interval")
		}
		d.answer(b, &targets[i%2])
		i++
	}
	if d.m.Snapshot().Owned.Active.Len() != n {
		b.Fatal("the member does not own n tasks after reconciling")
	}
}

func fromKmsg(b *testing.B, n int) {
	list := Tasks(n, 0).Kmsg()
	b.ReportAllocs()
	for b.Loop() {
		if tasks.FromKmsg(list).Len() != n {
			b.Fatal("lost tasks")
		}
	}
}

func setKmsg(b *testing.B, n int) {
	s := Tasks(n, 0)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Kmsg()
	}
}

func inputPartitions(b *testing.B, n int) {
	topo, s := Topology(), Tasks(n, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tasks.InputPartitions(topo, s); err != nil {
			b.Fatal(err)
		}
	}
}

func changelogPartitions(b *testing.B, n int) {
	topo, s := Topology(), Tasks(n, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tasks.ChangelogPartitions(topo, s); err != nil {
			b.Fatal(err)
		}
	}
}

// Result is one case at one size.
type Result struct {
	Case        string  `json:"case"`
	Tasks       int     `json:"tasks"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	NsPerTask   float64 `json:"ns_per_task"`
}

// Growth is how a case's cost grows from the smallest to the largest size.
type Growth struct {
	Case string `json:"case"`
	What string `json:"what"`
	// TimeRatio is (ns/op at 10,000) ÷ (ns/op at 1,000): 10 is linear. AllocRatio likewise.
	TimeRatio  float64 `json:"time_ratio_10k_over_1k"`
	AllocRatio float64 `json:"alloc_ratio_10k_over_1k"`
	// Verdict: "constant", "linear", "superlinear" (time grows > 15× for 10× the tasks), or
	// "per-task allocations" (allocations grow with the tasks: ≥ 1 per task at 10,000).
	Verdict string `json:"verdict"`
}

// Run runs every case at every size with testing.Benchmark (the -test.benchtime flag applies when
// testing.Init was called), rounds times, and keeps the fastest round: on a shared machine the
// fastest is the closest to the cost of the code itself. It returns the results and the growth of
// each case.
func Run(rounds int, log func(format string, args ...any)) ([]Result, []Growth) {
	var out []Result
	var growth []Growth
	for _, c := range Cases {
		byN := map[int]Result{}
		for _, n := range Sizes {
			var r testing.BenchmarkResult
			for range max(rounds, 1) {
				x := testing.Benchmark(func(b *testing.B) { c.Run(b, n) })
				if x.N > 0 && (r.N == 0 || x.NsPerOp() < r.NsPerOp()) {
					r = x
				}
			}
			if r.N == 0 {
				log("micro: %s at %d tasks failed", c.Name, n)
				continue
			}
			res := Result{Case: c.Name, Tasks: n, NsPerOp: float64(r.T.Nanoseconds()) / float64(r.N),
				AllocsPerOp: r.AllocsPerOp(), BytesPerOp: r.AllocedBytesPerOp()}
			res.NsPerTask = res.NsPerOp / float64(n)
			byN[n] = res
			out = append(out, res)
			log("micro: %-32s %6d tasks %12.0f ns/op %8d allocs/op", c.Name, n, res.NsPerOp, res.AllocsPerOp)
		}
		g := Growth{Case: c.Name, What: c.What}
		if a, b := byN[1_000], byN[10_000]; a.NsPerOp > 0 && b.NsPerOp > 0 {
			g.TimeRatio = b.NsPerOp / a.NsPerOp
			g.AllocRatio = float64(b.AllocsPerOp) / float64(max(a.AllocsPerOp, 1))
			g.Verdict = verdict(g, b)
		}
		growth = append(growth, g)
	}
	return out, growth
}

func verdict(g Growth, at10k Result) string {
	switch {
	case g.TimeRatio > 15:
		return fmt.Sprintf("superlinear (×%.0f for ×10 tasks)", g.TimeRatio)
	case g.TimeRatio < 2:
		return "constant"
	case at10k.AllocsPerOp >= int64(at10k.Tasks):
		return "linear, with allocations per task"
	}
	return "linear"
}
