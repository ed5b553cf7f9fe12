// Command benchcompare is the driver of `make bench-compare`: Go members (membership.Manager) side by
// side with Kafka Streams 4.4 on one broker, and how the Go member's cost grows. It needs the broker
// that scripts/with-broker.sh starts (STREAMSGROUP_BOOTSTRAP, STREAMSGROUP_RUN_DIR), Go, Java 17 and
// Maven. See bench/README.md for what is measured and how.
//
//	scripts/with-broker.sh go run ./bench/cmd/benchcompare [-quick] [-out DIR]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/admin"
)

// plan is how much is measured; -quick shrinks it to a couple of minutes.
type plan struct {
	Quick       bool          `json:"quick"`
	Reps        int           `json:"reps"`           // P1, P2, P3 repetitions per side
	Settle      time.Duration `json:"settle_ns"`      // quiet time between P1 events
	P1Members   int           `json:"p1_members"`     // members (processes) before the scale-out
	P1Tasks     int32         `json:"p1_tasks"`       // partitions of the P1 and P2 input topic
	P3Members   int           `json:"p3_members"`     // members in one process
	Window      time.Duration `json:"window_ns"`      // steady-state window of P3 and the sweep
	Warmup      time.Duration `json:"warmup_ns"`      // after convergence, before the window
	SweepSizes  []int         `json:"sweep_sizes"`    // members per process besides P3Members
	SweepReps   int           `json:"sweep_reps"`     // repetitions of each sweep point
	GroupMax    int           `json:"group_max"`      // members per group in the sweep (more: several groups)
	GroupSizes  []int         `json:"group_sizes"`    // group-size convergence: members
	GroupTasks  int32         `json:"group_tasks"`    // … and tasks
	GroupReps   int           `json:"group_reps"`     // … repetitions
	JavaGroupAt int           `json:"java_group_max"` // largest group size measured for Kafka Streams too
	BenchTime   string        `json:"micro_benchtime"`
	MicroRounds int           `json:"micro_rounds"`   // the fastest of this many rounds is kept
	IdleWindow  time.Duration `json:"idle_window_ns"` // broker idle CPU baseline
	// The processing phase: input records (pre-produced), its partitions and distinct keys, and
	// the records of each changelog restored.
	ProcRecords    int64 `json:"proc_records"`
	ProcPartitions int32 `json:"proc_partitions"`
	ProcKeys       int   `json:"proc_keys"`
	RestoreRecords int64 `json:"restore_records"`
}

func fullPlan() plan {
	return plan{Reps: 5, Settle: 2 * time.Second, P1Members: 3, P1Tasks: 12, P3Members: 100,
		Window: 60 * time.Second, Warmup: 5 * time.Second, SweepSizes: []int{10, 1000}, SweepReps: 3,
		GroupMax: 100, GroupSizes: []int{3, 30, 100}, GroupTasks: 1000, GroupReps: 3, JavaGroupAt: 100,
		BenchTime: "1s", MicroRounds: 3, IdleWindow: 20 * time.Second,
		ProcRecords: 1_000_000, ProcPartitions: 4, ProcKeys: 10_000, RestoreRecords: 1_000_000}
}

func quickPlan() plan {
	return plan{Quick: true, Reps: 1, Settle: time.Second, P1Members: 2, P1Tasks: 12, P3Members: 10,
		Window: 8 * time.Second, Warmup: time.Second, SweepSizes: []int{100}, SweepReps: 1,
		GroupMax: 100, GroupSizes: []int{3}, GroupTasks: 1000, GroupReps: 1, JavaGroupAt: 0,
		BenchTime: "20ms", MicroRounds: 1, IdleWindow: 5 * time.Second,
		ProcRecords: 100_000, ProcPartitions: 4, ProcKeys: 10_000, RestoreRecords: 100_000}
}

// env is the run: the broker, the two programs, and where output goes.
type env struct {
	plan
	bootstrap     string
	runDir        string
	brokerPID     int
	interval      time.Duration // group.streams.heartbeat.interval.ms
	session       time.Duration // group.streams.session.timeout.ms
	brokerProps   map[string]string
	root          string
	work          string // logs of the children, Java state dirs
	out           string
	goBinary      string
	javaBinary    string
	procBinary    string // bench/procapp, the Go side of the processing phase
	javaOpts      []string
	javaClasspath string
	cl            *kgo.Client
	admin         *admin.Client
	topics        map[string]bool
	seq           int
	runID         string
	load          *loadRecorder
	brokerIdle    float64         // broker CPU-seconds per second with no member
	procOnly      map[string]bool // -proc: the processing scenarios to run (nil: all)
	procApps      map[string]bool // -proc-apps: the throughput apps to run (nil: all)
	partial       bool            // -only or -proc: fold into the results already in out
	base          *Results        // those results, read at the first checkpoint
	baseRead      bool            // base was looked for (it may not exist)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	testing.Init() // for testing.Benchmark and its -test.benchtime
	quick := flag.Bool("quick", os.Getenv("BENCH_QUICK") != "", "the ~2-minute version (also BENCH_QUICK=1)")
	out := flag.String("out", "", "output directory (default bench/results, or $TMPDIR/streamsgroup-bench-quick with -quick)")
	readme := flag.Bool("readme", true, "a full run rewrites the generated part of docs/performance.md")
	only := flag.String("only", os.Getenv("BENCH_PHASES"), "comma-separated phases to run (p2,p1,p3,sweep,groups,micro,processing); default all (also BENCH_PHASES)")
	procRecords := flag.Int64("proc-records", 0, "override the input records (and restored changelog records) of the processing phase")
	procApps := flag.String("proc-apps", os.Getenv("BENCH_APPS"), "comma-separated apps of the throughput scenario to run (e.g. hopping-dsl,session-dsl; implies -proc throughput); default all (also BENCH_APPS)")
	procOnly := flag.String("proc", os.Getenv("BENCH_PROC"), "comma-separated scenarios of the processing phase to run ("+strings.Join(procScenarios, ",")+"); default all (also BENCH_PROC)")
	reps := flag.Int("reps", 0, "override the repetitions of P1-P3")
	sweep := flag.String("sweep", "", "override the members-per-process sizes of the sweep, e.g. 10,1000")
	window := flag.Duration("window", 0, "override the steady-state window")
	render := flag.String("render", "", "only render the table and charts of this results.json again (no broker needed)")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render, *out); err != nil {
			fmt.Fprintln(os.Stderr, "benchcompare:", err)
			os.Exit(1)
		}
		return
	}

	p := fullPlan()
	if *quick {
		p = quickPlan()
	}
	if *reps > 0 {
		p.Reps, p.SweepReps, p.GroupReps = *reps, min(*reps, p.SweepReps), min(*reps, p.GroupReps)
	}
	if *sweep != "" {
		p.SweepSizes = nil
		for _, f := range strings.Split(*sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				fmt.Fprintln(os.Stderr, "benchcompare: -sweep takes member counts, e.g. 10,1000")
				os.Exit(2)
			}
			p.SweepSizes = append(p.SweepSizes, n)
		}
	}
	if *window > 0 {
		p.Window = *window
	}
	if *procRecords > 0 {
		p.ProcRecords, p.RestoreRecords = *procRecords, *procRecords
	}
	scenarios, err := procScenariosOf(*procOnly)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(2)
	}
	apps, err := procAppsOf(*procApps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(2)
	}
	if apps != nil && scenarios == nil {
		// Some apps only are the throughput scenario only, folded in as -proc throughput is.
		scenarios = map[string]bool{"throughput": true}
	}
	started := time.Now()
	phases := phasesOf(*only)
	needBroker := len(phases) > 1 || !phases["micro"]
	e, err := setup(p, *out, needBroker, phases["processing"])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		logf("interrupted: killing every process started")
		killAll()
		os.Exit(130)
	}()
	e.procOnly, e.procApps = scenarios, apps
	// Some processing scenarios only are a partial run too: they are folded into the earlier
	// results' processing section.
	e.partial = *only != "" || scenarios != nil
	res, err := e.run(phases)
	killAll()
	if e.cl != nil {
		e.cl.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
	res.WallSeconds = time.Since(started).Seconds()
	if e.partial {
		// Some phases only: fold them into the earlier run's results in the output directory.
		if !e.baseRead {
			e.base, _ = readResults(filepath.Join(e.out, "results.json"))
		}
		if e.base != nil {
			res = merge(e.base, res)
		}
	}
	if err := e.write(res, *readme && !p.Quick); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
	logf("done in %v; results in %s", time.Since(started).Round(time.Second), e.out)
}

func phasesOf(only string) map[string]bool {
	all := map[string]bool{"p2": true, "p1": true, "p3": true, "sweep": true, "groups": true, "micro": true, "processing": true}
	if only == "" {
		return all
	}
	out := map[string]bool{}
	for _, p := range strings.Split(only, ",") {
		out[strings.TrimSpace(p)] = true
	}
	return out
}

// setup reads the broker's environment, builds both programs and connects.
func setup(p plan, out string, needBroker, processing bool) (*env, error) {
	e := &env{plan: p, bootstrap: os.Getenv("STREAMSGROUP_BOOTSTRAP"), runDir: os.Getenv("STREAMSGROUP_RUN_DIR"),
		topics: map[string]bool{}, runID: strconv.FormatInt(time.Now().Unix()%100000, 10)}
	if !needBroker {
		var err error
		if e.root, err = repoRoot(); err != nil {
			return nil, err
		}
		e.out = out
		if e.out == "" {
			e.out = filepath.Join(e.root, "bench", "results")
		}
		return e, os.MkdirAll(e.out, 0o755)
	}
	if e.bootstrap == "" || e.runDir == "" {
		return nil, fmt.Errorf("no broker: run through scripts/with-broker.sh (make bench-compare)")
	}
	pid, err := os.ReadFile(filepath.Join(e.runDir, "pid"))
	if err != nil {
		return nil, fmt.Errorf("the broker's PID: %w", err)
	}
	if e.brokerPID, err = strconv.Atoi(strings.TrimSpace(string(pid))); err != nil {
		return nil, err
	}
	if e.brokerProps, err = readProperties(filepath.Join(e.runDir, "server.properties")); err != nil {
		return nil, err
	}
	ms := func(key string, def int) time.Duration {
		v, err := strconv.Atoi(e.brokerProps[key])
		if err != nil {
			v = def
		}
		return time.Duration(v) * time.Millisecond
	}
	e.interval = ms("group.streams.heartbeat.interval.ms", 5000)
	e.session = ms("group.streams.session.timeout.ms", 45000)
	if e.root, err = repoRoot(); err != nil {
		return nil, err
	}
	e.out = out
	if e.out == "" {
		e.out = filepath.Join(e.root, "bench", "results")
		if p.Quick {
			e.out = filepath.Join(os.TempDir(), "streamsgroup-bench-quick")
		}
	}
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		return nil, err
	}
	if e.work, err = os.MkdirTemp("", "streamsgroup-bench-"); err != nil {
		return nil, err
	}
	logf("broker %s (pid %d), heartbeat interval %v, session timeout %v; logs in %s", e.bootstrap, e.brokerPID, e.interval, e.session, e.work)

	e.goBinary = filepath.Join(e.work, "gomember")
	build := exec.Command("go", "build", "-o", e.goBinary, "./bench/cmd/gomember")
	build.Dir = e.root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./bench/cmd/gomember: %v\n%s", err, out)
	}
	if processing {
		if err := e.procBuild(); err != nil {
			return nil, err
		}
	}
	if e.javaBinary, err = javaBinary(); err != nil {
		return nil, err
	}
	if s := os.Getenv("BENCH_JAVA_OPTS"); s != "" {
		e.javaOpts = strings.Fields(s)
	}
	t := time.Now()
	if e.javaClasspath, err = mavenBuild(filepath.Join(e.root, "bench", "javaapp")); err != nil {
		return nil, err
	}
	logf("built gomember, procapp and the Kafka Streams apps (mvn package: %v)", time.Since(t).Round(time.Millisecond))

	if e.cl, err = kgo.NewClient(kgo.SeedBrokers(e.bootstrap)); err != nil {
		return nil, err
	}
	e.admin = admin.NewClient(e.cl)
	return e, nil
}

func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(b), "module github.com/streamsgroup/streamsgroup\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run from inside the streamsgroup repository")
		}
		dir = parent
	}
}

func javaBinary() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if j := filepath.Join(home, "bin", "java"); fileExists(j) {
			return j, nil
		}
	}
	j, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("the Kafka Streams side needs Java 17+: apt-get install openjdk-17-jdk-headless")
	}
	return j, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// mavenBuild builds bench/javaapp as integration/javapeer is built: classes plus the runtime class
// path Maven resolved.
func mavenBuild(dir string) (string, error) {
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", errors.New("building the Kafka Streams side needs Maven (mvn): apt-get install maven")
	}
	if !built(dir) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-Dstyle.color=never", "package")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("mvn package in %s: %v\n%s", dir, err, out)
		}
	}
	deps, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return "", fmt.Errorf("mvn package wrote no class path: %v", err)
	}
	return filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps)), nil
}

// built reports whether target/ is newer than every source of the Maven project in dir.
func built(dir string) bool {
	out, err := os.Stat(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return false
	}
	class, err := os.Stat(filepath.Join(dir, "target", "classes", "io", "github", "streamsgroup", "bench", "BenchApp.class"))
	if err != nil {
		return false
	}
	newest := time.Time{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "target" {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		return nil
	})
	return out.ModTime().After(newest) && class.ModTime().After(newest)
}

// app names a fresh group.
func (e *env) app(parts ...any) string {
	s := "bench-" + e.runID
	for _, p := range parts {
		s += fmt.Sprintf("-%v", p)
	}
	return s
}

// sides returns the order of the two sides for repetition rep: alternating, so that drift of the
// machine's load hits both alike.
func sides(rep int) []Side {
	if rep%2 == 0 {
		return []Side{Go, Java}
	}
	return []Side{Java, Go}
}

// jitter sleeps d plus up to a quarter of an interval, so that events fall at random phases of the
// members' heartbeat timers.
func (e *env) jitter(d time.Duration) {
	time.Sleep(d + time.Duration(rand.Int64N(int64(e.interval/4)+1)))
}

func secs(d time.Duration) float64 { return d.Seconds() }
