//go:build unix

// Command chaos runs the chaos suite: it starts its own broker (integration/kafka/broker.sh, in a
// run directory of its own), a toxiproxy server, and member processes (cmd/chaosmember) each
// behind its own proxies; then a seeded schedule of faults, one at a time, each followed by waiting
// for the group to converge; then it stops everything it started and checks the logs
// (chaos.Check): S1 ownership, S2 recovery, S3 health. It prints the report, writes it as JSON, and
// exits 1 on any violation, printing the command that runs the same schedule again.
//
//	SEED=42 FAULTS=200 go run -C integration/chaos ./cmd/chaos
//	SOAK=30m go run -C integration/chaos ./cmd/chaos            # the soak: 20 members in one process, 20 alone
//	go run -C integration/chaos ./cmd/chaos -check DIR          # check the logs of an earlier run again
//	APP=eos SEED=7 FAULTS=8 go run -C integration/chaos ./cmd/chaos # the stateful exactly-once mode, S4 added (eos.go)
//
// integration/chaos is a module of its own (toxiproxy stays out of the core's go.mod), hence -C. A
// relative OUT or -check DIR is taken from integration/chaos.
//
// Settings come from the environment (as make passes them) or the equal flags: SEED, FAULTS,
// FAULT_TYPES (comma separated; default all that the cluster allows), MEMBERS, PARTITIONS,
// BROKERS (3 adds the coordinator-move faults), APP (eos: the counting app under exactly-once, with
// KEYS and ROUND for its input), SOAK, OUT (the run directory; default a new
// temporary one), KEEP (keep the run directory of a passing run), BROKER_SH (another broker.sh
// than the module's, e.g. a known-good copy while the module's is being changed). The broker runs with the test
// values of broker.sh: heartbeat interval 500 ms, session timeout 6 s.
package main

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/streamsgroup/streamsgroup/integration/chaos"
)

func env(key, def string) string { return cmp.Or(os.Getenv(key), def) }

func main() {
	var (
		seedS      = flag.String("seed", env("SEED", ""), "schedule seed (default: random, printed)")
		faults     = flag.Int("faults", atoi(env("FAULTS", "20")), "faults to run (chaos mode)")
		faultTypes = flag.String("fault-types", env("FAULT_TYPES", ""), "comma-separated fault types (default: all)")
		members    = flag.Int("members", atoi(env("MEMBERS", "4")), "member processes at the start (chaos mode)")
		partitions = flag.Int("partitions", atoi(env("PARTITIONS", "0")), "input partitions = tasks (default 12, soak 48)")
		brokers    = flag.Int("brokers", atoi(env("BROKERS", "1")), "broker nodes (3: coordinator moves too)")
		soak       = flag.Duration("soak", dur(env("SOAK", "0")), "soak for this long instead of a fault count")
		every      = flag.Duration("every", dur(env("SOAK_EVERY", "30s")), "soak: one fault every this long")
		out        = flag.String("out", env("OUT", ""), "run directory (default: a new temporary one)")
		keep       = flag.Bool("keep", env("KEEP", "") != "", "keep the run directory of a passing run")
		check      = flag.String("check", "", "only check the logs of the run in this directory")
		reportTo   = flag.String("report", "", "-check: also write the report as JSON to this file")
		app        = flag.String("app", env("APP", ""), `"eos": the members run the counting application on the stream runtime under exactly_once_v2 with a Pebble store, and S4 is checked`)
		keys       = flag.Int("keys", atoi(env("KEYS", "36")), "APP=eos: input keys")
		round      = flag.Duration("round", dur(env("ROUND", "250ms")), "APP=eos: one input record per key every this long")
		hangs      = flag.String("hangs", env("HANGS", ""), `APP=eos on one node: "abort" writes the ABORT marker of a transaction the broker left hanging (a run about that broker limitation); default: detect only, and every hang fails S4`)
	)
	flag.Parse()
	if *check != "" {
		rep, err := checkDir(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		rep.WriteText(os.Stdout)
		if *reportTo != "" {
			b, err := json.MarshalIndent(rep, "", "  ")
			if err == nil {
				err = os.WriteFile(*reportTo, b, 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "chaos:", err)
				os.Exit(2)
			}
		}
		if !rep.Pass {
			os.Exit(1)
		}
		return
	}
	var seed uint64
	if *seedS != "" {
		s, err := strconv.ParseUint(*seedS, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos: SEED:", err)
			os.Exit(2)
		}
		seed = s
	} else {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) % 1_000_000_000
	}
	if *partitions == 0 {
		*partitions = 12
		if *soak > 0 {
			*partitions = 48
		}
	}
	cfg := chaos.DefaultConfig()
	cfg.Seed, cfg.Faults, cfg.Partitions, cfg.Brokers, cfg.Group = seed, *faults, *partitions, *brokers, "chaos"
	if *brokers >= 3 {
		cfg.Voters = 3 // a production quorum: any one node may fail, the active controller included
	}
	types, err := pickTypes(*faultTypes, *brokers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	cfg.FaultTypes = strings.Join(types, ",")
	appEnv := ""
	switch *app {
	case "":
	case "eos":
		if *soak > 0 {
			fmt.Fprintln(os.Stderr, "chaos: APP=eos runs a fault schedule, not the soak")
			os.Exit(2)
		}
		cfg.App, cfg.Keys = "eos", *keys
		applyEOSBounds(&cfg)
		appEnv = fmt.Sprintf("APP=eos KEYS=%d ROUND=%v ", *keys, *round)
		switch *hangs {
		case "":
		case "abort":
			if *brokers > 1 {
				fmt.Fprintln(os.Stderr, "chaos: HANGS=abort is for one node (the broker limitation); on a cluster the driver only detects hangs")
				os.Exit(2)
			}
			cfg.RepairHangs = true
			appEnv += "HANGS=abort "
		default:
			fmt.Fprintf(os.Stderr, "chaos: HANGS=%q: the only value is abort\n", *hangs)
			os.Exit(2)
		}
	default:
		fmt.Fprintf(os.Stderr, "chaos: APP=%q: the only application mode is eos\n", *app)
		os.Exit(2)
	}
	if *soak > 0 {
		cfg.Soak = fmt.Sprintf("%v, a fault every %v, 20 members in one process and 20 in their own", *soak, *every)
		cfg.Command = fmt.Sprintf("SEED=%d SOAK=%v SOAK_EVERY=%v FAULT_TYPES=%s PARTITIONS=%d BROKERS=%d make soak", seed, *soak, *every, cfg.FaultTypes, *partitions, *brokers)
	} else {
		cfg.Command = fmt.Sprintf("%sSEED=%d FAULTS=%d FAULT_TYPES=%s MEMBERS=%d PARTITIONS=%d BROKERS=%d make chaos", appEnv, seed, *faults, cfg.FaultTypes, *members, *partitions, *brokers)
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", fmt.Sprintf("streamsgroup-chaos-%d-", seed)); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
	}
	fmt.Printf("chaos: seed %d, run directory %s\nchaos: to run this schedule again: %s\n", seed, dir, cfg.Command)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d := &driver{cfg: cfg, dir: dir, types: types, members: *members, soak: *soak, every: *every, eosEvery: *round,
		procs: map[string]*process{}, session: time.Duration(cfg.SessionMs) * time.Millisecond}
	runErr := d.run(ctx)
	d.cleanup()
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "chaos: the run stopped early:", runErr)
	}
	rep, err := checkDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: checking:", err)
		os.Exit(2)
	}
	rep.WriteText(os.Stdout)
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "report.txt"), []byte(rep.Text()), 0o644)
	}
	fmt.Printf("chaos: report in %s\n", filepath.Join(dir, "report.json"))
	if !rep.Pass || runErr != nil {
		fmt.Printf("chaos: FAILED; logs kept in %s; reproduce with: %s\n", dir, cfg.Command)
		os.Exit(1)
	}
	if !*keep && *out == "" {
		// Keep the report, drop the bulk.
		_ = os.RemoveAll(filepath.Join(dir, "logs"))
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %q is not a number\n", s)
		os.Exit(2)
	}
	return n
}

func dur(s string) time.Duration {
	if s == "0" || s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %q is not a duration\n", s)
		os.Exit(2)
	}
	return d
}

func pickTypes(list string, brokers int) ([]string, error) {
	all := slices.Concat(networkFaults, processFaults, brokerFaults)
	if brokers >= 3 {
		// A cluster restarts node by node (rolling-restart), as production does; all at once is
		// the single node's broker-restart.
		all = slices.Concat(networkFaults, processFaults, clusterFaults)
	}
	if list == "" {
		return all, nil
	}
	var out []string
	for t := range strings.SplitSeq(list, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if !slices.Contains(all, t) {
			return nil, fmt.Errorf("fault type %q: not one of %s", t, strings.Join(all, ","))
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("FAULT_TYPES names no fault")
	}
	return out, nil
}

// checkDir reads a run directory (driver.jsonl, logs/*.jsonl) and checks it.
func checkDir(dir string) (chaos.Report, error) {
	drv, err := chaos.ReadJSONL[chaos.DriverRecord](filepath.Join(dir, "driver.jsonl"))
	if err != nil {
		return chaos.Report{}, err
	}
	run := chaos.Run{Config: chaos.DefaultConfig(), Driver: drv}
	for _, r := range drv {
		if r.Kind == chaos.DKConfig && r.Config != nil {
			run.Config = *r.Config
		}
	}
	if run.Config.App == "eos" {
		if b, err := os.ReadFile(filepath.Join(dir, "eos.json")); err == nil {
			var e chaos.EOSData
			if err := json.Unmarshal(b, &e); err != nil {
				return chaos.Report{}, fmt.Errorf("eos.json: %w", err)
			}
			run.EOS = &e
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.jsonl"))
	for _, f := range files {
		recs, err := chaos.ReadJSONL[chaos.Record](f)
		if err != nil {
			return chaos.Report{}, err
		}
		run.Members = append(run.Members, recs...)
	}
	return chaos.Check(run), nil
}

// driver runs one chaos run or soak.
type driver struct {
	cfg     chaos.Config
	dir     string
	types   []string
	members int
	soak    time.Duration
	every   time.Duration
	session time.Duration

	eosEvery time.Duration  // APP=eos: the input's round interval
	input    *inputProducer // APP=eos: the input, while the schedule runs
	// lastFaultEnd: APP=eos, when the last fault ended (the settle time counts from there).
	lastFaultEnd *time.Time

	log       *dlog
	broker    *broker
	toxi      *toxi
	memberBin string
	procs     map[string]*process // by name: the current incarnation
	incs      map[string]int
	nextName  int

	pollStop context.CancelFunc
	pollWG   sync.WaitGroup
	snapMu   sync.Mutex
	snap     *chaos.Snapshot
	snapAt   time.Time // when the last describe (of any outcome) was taken
}

func (d *driver) run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(d.dir, "logs"), 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(d.dir, "driver.jsonl"))
	if err != nil {
		return err
	}
	d.log = &dlog{f: f}
	d.incs = map[string]int{}
	cfg := d.cfg
	d.log.write(chaos.DriverRecord{Kind: chaos.DKConfig, Config: &cfg})

	chaosDir, root, err := moduleRoot()
	if err != nil {
		return err
	}
	cache := cmp.Or(os.Getenv("STREAMSGROUP_CACHE"), filepath.Join(userCache(), "streamsgroup"))
	step := func(what string) func() {
		t := time.Now()
		fmt.Printf("chaos: %s…\n", what)
		return func() { fmt.Printf("chaos: %s: %.1f s\n", what, time.Since(t).Seconds()) }
	}
	done := step("building the member program and toxiproxy " + toxiproxyVersion)
	d.memberBin = filepath.Join(d.dir, "chaosmember")
	build := exec.CommandContext(ctx, "go", "build", "-o", d.memberBin, "./cmd/chaosmember")
	build.Dir = chaosDir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building chaosmember: %w\n%s", err, out)
	}
	toxiBin, err := buildToxiproxy(ctx, cache)
	if err != nil {
		return err
	}
	done()

	done = step(fmt.Sprintf("starting Kafka (%d node(s))", max(d.cfg.Brokers, 1)))
	script := cmp.Or(os.Getenv("BROKER_SH"), filepath.Join(root, "integration", "kafka", "broker.sh"))
	d.broker, err = startBroker(ctx, script, filepath.Join(d.dir, "broker"), d.cfg.Brokers, d.cfg.Voters)
	if err != nil {
		return err
	}
	done()
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rf := int16(min(max(d.cfg.Brokers, 1), 3))
	if _, err := d.broker.adm.CreateTopic(tctx, int32(d.cfg.Partitions), rf, nil, "chaos-input"); err != nil {
		return fmt.Errorf("creating the input topic: %w", err)
	}
	if d.cfg.App == "eos" {
		// On the cluster every topic has 3 replicas and min.insync.replicas=2 (the cluster's
		// default, clusterProps): one node may fail without losing an acknowledged write.
		for _, topic := range []string{chaos.EOSOutput, chaos.EOSWindowOutput} {
			if _, err := d.broker.adm.CreateTopic(tctx, 4, rf, nil, topic); err != nil {
				return fmt.Errorf("creating the output topic %s: %w", topic, err)
			}
		}
	}
	if d.toxi, err = startToxi(ctx, toxiBin, filepath.Join(d.dir, "toxiproxy.log")); err != nil {
		return err
	}
	d.startPoller()

	done = step("starting the members")
	if d.soak > 0 {
		if err := d.spawn("soak", 20); err != nil {
			return err
		}
		for range 20 {
			if err := d.spawn(d.newName(), 1); err != nil {
				return err
			}
		}
	} else {
		for range d.members {
			if err := d.spawn(d.newName(), 1); err != nil {
				return err
			}
		}
	}
	if _, ok := d.waitConverged(ctx, time.Now(), 2*time.Minute); !ok {
		return errors.New("the group did not converge after the start")
	}
	done()
	if d.cfg.App == "eos" {
		if err := d.startInput(); err != nil {
			return fmt.Errorf("the input producer: %w", err)
		}
		// Hanging transactions (a broker limitation) are ended until the end, while finishEOS waits
		// for the group to commit everything too (defers run last first).
		hctx, hstop := context.WithCancel(ctx)
		var hwg sync.WaitGroup
		hwg.Go(func() { d.endHanging(hctx) })
		defer func() { hstop(); hwg.Wait() }()
		lastEnd := time.Now()
		defer func() { d.finishEOS(ctx, lastEnd) }()
		d.lastFaultEnd = &lastEnd
	}

	lo, hi := max(2, d.members-1), d.members+2
	if d.soak > 0 {
		lo, hi = 39, 43
	}
	rng := rand.New(rand.NewPCG(d.cfg.Seed, 0x5eed))
	deadline := time.Now().Add(d.soak)
	var connWG sync.WaitGroup
	connCtx, connStop := context.WithCancel(ctx)
	defer func() { connStop(); connWG.Wait() }()
	connWG.Go(func() { d.sampleConns(connCtx) })
	for n := 1; ; n++ {
		if d.soak > 0 && !time.Now().Before(deadline) || d.soak == 0 && n > d.cfg.Faults {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		tick := time.Now()
		pl := draw(rng, d.types, slices.Sorted(maps.Keys(d.procs)), lo, hi, d.session)
		f, err := d.apply(ctx, n, pl)
		d.log.write(chaos.DriverRecord{Kind: chaos.DKFault, Fault: &f})
		if d.lastFaultEnd != nil {
			*d.lastFaultEnd = time.UnixMicro(f.End)
		}
		if err != nil {
			return fmt.Errorf("fault %d (%s): %w", n, pl.typ, err)
		}
		limit := d.session + 2*time.Duration(d.cfg.HeartbeatMs)*time.Millisecond + 30*time.Second
		took, ok := d.waitConverged(ctx, time.UnixMicro(f.End), limit)
		verdict := fmt.Sprintf("converged %.0f ms after its end", float64(took)/float64(time.Millisecond))
		if !ok {
			verdict = "NOT converged within " + limit.String()
		}
		who := f.Proc
		if who != "" {
			who = fmt.Sprintf(" on %s#%d", f.Proc, f.Inc)
		}
		fmt.Printf("chaos: fault %d %s%s (%s): %s\n", n, f.Type, who, f.Detail, verdict)
		if d.soak > 0 {
			sleep(ctx, time.Until(tick.Add(d.every)))
		} else {
			sleep(ctx, 500*time.Millisecond) // let the group run a moment in its converged state
		}
	}
	return nil
}

func userCache() string {
	if c, err := os.UserCacheDir(); err == nil {
		return c
	}
	return os.TempDir()
}

// moduleRoot returns the directory of the chaos module (integration/chaos, a module of its own so
// that toxiproxy stays out of the core's go.mod) and the repository root two levels up, where
// integration/kafka/broker.sh lives.
func moduleRoot() (chaosDir, repoRoot string, err error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", "", errors.New("run from inside the chaos module (cd integration/chaos, or go run -C integration/chaos ./cmd/chaos)")
	}
	chaosDir = filepath.Dir(mod)
	repoRoot = filepath.Join(chaosDir, "..", "..")
	if _, err := os.Stat(filepath.Join(repoRoot, "integration", "kafka", "broker.sh")); err != nil {
		return "", "", fmt.Errorf("run from inside the chaos module of the streamsgroup repository (%s is not it: %v)", chaosDir, err)
	}
	return chaosDir, repoRoot, nil
}

func (d *driver) newName() string {
	d.nextName++
	return fmt.Sprintf("p%02d", d.nextName)
}

// spawn starts the next incarnation of process name with n members, behind its proxies (created
// on its first start).
func (d *driver) spawn(name string, n int) error {
	p := d.procs[name]
	if p == nil {
		p = &process{name: name}
		for i, addr := range d.broker.addrs {
			px, err := d.toxi.client.CreateProxy(fmt.Sprintf("%s-b%d", name, i+1), "127.0.0.1:0", addr)
			if err != nil {
				return fmt.Errorf("proxy for %s: %w", name, err)
			}
			p.proxies = append(p.proxies, px)
		}
	}
	d.incs[name]++
	np := &process{name: name, inc: d.incs[name], proxies: p.proxies, done: make(chan struct{}),
		ids: map[string]string{}, held: map[string][]string{}, closed: map[string]bool{}}
	for i := range n {
		if n == 1 {
			np.members = append(np.members, name)
		} else {
			np.members = append(np.members, fmt.Sprintf("%s-%02d", name, i+1))
		}
	}
	var maps []string
	for i, addr := range d.broker.addrs {
		maps = append(maps, addr+"="+p.proxies[i].Listen)
	}
	base := filepath.Join(d.dir, "logs", fmt.Sprintf("%s.%d", name, np.inc))
	np.tail = &chaos.Tail[chaos.Record]{Path: base + ".jsonl"}
	errf, err := os.Create(base + ".stderr")
	if err != nil {
		return err
	}
	cmd := exec.Command(d.memberBin, "-proc", name, "-inc", strconv.Itoa(np.inc), "-members", strconv.Itoa(n),
		"-bootstrap", strings.Join(d.broker.addrs, ","), "-map", strings.Join(maps, ","),
		"-app", d.cfg.Group, "-input", "chaos-input", "-log", base+".jsonl")
	if d.cfg.App == "eos" {
		// The state.dir of the process name, kept across its incarnations: its process ID (and so
		// its transactional.id) and its Pebble stores survive a restart, as a real deployment's.
		cmd.Args = append(cmd.Args, "-eos", "-output", chaos.EOSOutput, "-state", filepath.Join(d.dir, "state", name))
		if d.cfg.Brokers >= 3 {
			cmd.Args = append(cmd.Args, "-replication", "3") // replication.factor of the internal topics
		}
	}
	cmd.Stdout, cmd.Stderr = errf, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a Ctrl-C reaches the driver, which ends them
	if err := cmd.Start(); err != nil {
		errf.Close()
		return err
	}
	np.cmd = cmd
	d.log.write(chaos.DriverRecord{Kind: chaos.DKSpawn, Proc: name, Inc: np.inc, PID: cmd.Process.Pid, Members: np.members})
	go func() {
		err := cmd.Wait()
		r := chaos.DriverRecord{Kind: chaos.DKDied, Proc: name, Inc: np.inc, PID: cmd.Process.Pid, Expected: np.expect.Load()}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			r.Code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.Signal = ws.Signal().String()
			}
		}
		// A member that failed to close cleanly (exit code 3) is not an expected exit even on SIGTERM.
		if r.Code != 0 && r.Signal == "" {
			r.Expected = false
		}
		d.log.write(r)
		errf.Close()
		close(np.done)
	}()
	d.procs[name] = np
	return nil
}

// startPoller describes the group every 100 ms in the background and logs each new view.
func (d *driver) startPoller() {
	ctx, cancel := context.WithCancel(context.Background())
	d.pollStop = cancel
	d.pollWG.Go(func() {
		var last *chaos.Snapshot
		for ctx.Err() == nil {
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			s := d.broker.describe(cctx, d.cfg.Group)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if !s.Equal(last) {
				d.log.write(chaos.DriverRecord{T: start.UnixMicro(), Kind: chaos.DKSnapshot, Snap: s})
				last = s
			}
			d.snapMu.Lock()
			d.snap, d.snapAt = s, start
			d.snapMu.Unlock()
			sleep(ctx, time.Until(start.Add(100*time.Millisecond)))
		}
	})
}

// waitConverged waits until S2's condition holds on a description taken after from, or limit
// passes; it returns how long after from it held.
func (d *driver) waitConverged(ctx context.Context, from time.Time, limit time.Duration) (time.Duration, bool) {
	for ctx.Err() == nil {
		d.snapMu.Lock()
		s, at := d.snap, d.snapAt
		d.snapMu.Unlock()
		if !at.Before(from) {
			var live []chaos.LiveMember
			for _, name := range slices.Sorted(maps.Keys(d.procs)) {
				if p := d.procs[name]; p.alive() {
					live = append(live, p.live()...)
				}
			}
			if ok, _ := chaos.Converged(s, live, d.cfg.Partitions); ok {
				return max(at.Sub(from), 0), true
			}
		}
		if time.Since(from) > limit {
			return time.Since(from), false
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return 0, false
}

// sampleConns logs the broker's established connections every 5 s.
func (d *driver) sampleConns(ctx context.Context) {
	ports := d.broker.ports()
	for ctx.Err() == nil {
		d.log.write(chaos.DriverRecord{Kind: chaos.DKConns, Conns: countConns(ports)})
		sleep(ctx, 5*time.Second)
	}
}

// cleanup ends everything the driver started, whatever happened: the members (SIGCONT first if
// paused, SIGTERM, SIGKILL after 30 s), the poller, toxiproxy and the broker.
func (d *driver) cleanup() {
	if d.log != nil {
		d.log.write(chaos.DriverRecord{Kind: chaos.DKEnd})
	}
	var wg sync.WaitGroup
	for _, p := range d.procs {
		if !p.alive() {
			continue
		}
		wg.Go(func() {
			p.expect.Store(true)
			p.signal(syscall.SIGCONT)
			p.signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				p.signal(syscall.SIGKILL)
				<-p.done
			}
		})
	}
	wg.Wait()
	if d.pollStop != nil {
		d.pollStop()
		d.pollWG.Wait()
	}
	d.toxi.stop()
	if d.broker != nil {
		d.broker.stop()
	}
	if d.log != nil {
		d.log.f.Close()
	}
}
