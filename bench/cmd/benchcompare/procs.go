package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Side is what is measured: the Go member or Kafka Streams.
type Side string

const (
	Go   Side = "go"
	Java Side = "java"
)

// memberSpec says what one child process runs.
type memberSpec struct {
	side    Side
	app     string
	input   string
	members int    // Go members, or Java stream threads
	clients string // Go only: shared or per-member
	groups  int    // Go only: spread the members over this many groups
}

// child is a running member process (bench/cmd/gomember or bench/javaapp) and what it printed.
type child struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	execAt  time.Time // just before the exec
	exited  chan struct{}
	exitAt  time.Time
	logPath string

	mu     sync.Mutex
	mainAt time.Time
	tasks  time.Time
	closed time.Time
	stats  chan GoStats
	adds   chan time.Time
	proc   procMarks // the processing phase's lines (bench/procapp, ProcApp)
}

// procMarks are what a processing child (bench/procapp or bench/javaapp's ProcApp) printed, each
// with the process's CPU-seconds read from /proc/<pid>/stat when the line arrived.
type procMarks struct {
	first        time.Time // the first FIRST line
	firstCPU     float64
	firsts       map[int32]time.Time // partition → its latest FIRST line (one per time the task started here)
	restoring    time.Time
	restoringCPU float64
	assigned     time.Time // Go: when the OnTasksAssigned before RESTORING began (CPU: when the line came)
	assignedCPU  float64
	restored     time.Time
	restoredCPU  float64
	restoredN    int64
	done         time.Time
	doneCPU      float64
	doneN        int64
	ready        []readyMark // every READY line, in order
}

// readyMark is a READY line: a task initialised to process, after its restore.
type readyMark struct {
	at        time.Time
	cpu       float64
	partition int32
	restored  int64 // the records the process's restores had applied by then
}

// GoStats is a STATS line of gomember (see bench/cmd/gomember).
type GoStats struct {
	Members    int     `json:"members"`
	Heartbeats int     `json:"heartbeats"`
	Failed     int     `json:"failed"`
	LateP50    float64 `json:"late_p50_ms"`
	LateP90    float64 `json:"late_p90_ms"`
	LateP99    float64 `json:"late_p99_ms"`
	LateMax    float64 `json:"late_max_ms"`
	LateOver   int     `json:"late_over_10pct"`
	RTTP50     float64 `json:"rtt_p50_ms"`
	RTTP99     float64 `json:"rtt_p99_ms"`
	JoinRTTP50 float64 `json:"join_rtt_p50_ms"`
	WireP50    float64 `json:"wire_wait_p50_ms"`
	WireP99    float64 `json:"wire_wait_p99_ms"`
	WireMax    float64 `json:"wire_wait_max_ms"`
	ProbeP50   float64 `json:"probe_late_p50_ms"`
	ProbeP99   float64 `json:"probe_late_p99_ms"`
	ProbeMax   float64 `json:"probe_late_max_ms"`
	ProbeOver  int     `json:"probe_late_over_10pct"`
	ProbeCount int     `json:"probe_count"`
}

// children are every process started, so that none is left behind whatever happens.
var children struct {
	sync.Mutex
	all []*child
}

// start execs one member process; its stderr goes to a log file in the work directory.
func (e *env) start(spec memberSpec) (*child, error) {
	var cmd *exec.Cmd
	switch spec.side {
	case Go:
		args := []string{"-bootstrap", e.bootstrap, "-app", spec.app, "-input", spec.input,
			"-members", strconv.Itoa(spec.members), "-clients", spec.clients,
			"-interval", e.interval.String()}
		if spec.groups > 1 {
			args = append(args, "-groups", strconv.Itoa(spec.groups))
		}
		cmd = exec.Command(e.goBinary, args...)
	case Java:
		stateDir, err := os.MkdirTemp(e.work, "state-")
		if err != nil {
			return nil, err
		}
		args := append(append([]string{}, e.javaOpts...), "-cp", e.javaClasspath,
			"io.github.streamsgroup.bench.BenchApp",
			"--bootstrap="+e.bootstrap, "--app="+spec.app, "--input="+spec.input,
			"--threads="+strconv.Itoa(spec.members), "--state-dir="+stateDir)
		cmd = exec.Command(e.javaBinary, args...)
	}
	return e.launch(spec.side, cmd)
}

// launch starts cmd as a child of side, reading its stdout lines into the child.
func (e *env) launch(side Side, cmd *exec.Cmd) (*child, error) {
	e.seq++
	c := &child{
		name:    fmt.Sprintf("%s-%d", side, e.seq),
		cmd:     cmd,
		exited:  make(chan struct{}),
		stats:   make(chan GoStats, 1),
		adds:    make(chan time.Time, 4),
		logPath: filepath.Join(e.work, fmt.Sprintf("%03d-%s.log", e.seq, side)),
	}
	logf, err := os.Create(c.logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.execAt = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", side, err)
	}
	children.Lock()
	children.all = append(children.all, c)
	children.Unlock()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			c.handle(sc.Text())
		}
		_ = cmd.Wait()
		logf.Close()
		c.exitAt = time.Now()
		close(c.exited)
	}()
	return c, nil
}

func micros(s string) time.Time {
	v, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMicro(v)
}

func (c *child) handle(line string) {
	word, rest, _ := strings.Cut(line, " ")
	c.mu.Lock()
	defer c.mu.Unlock()
	switch word {
	case "MAIN":
		c.mainAt = micros(rest)
	case "TASKS":
		if c.tasks.IsZero() {
			c.tasks = micros(rest)
		}
	case "CLOSED":
		c.closed = micros(rest)
	case "ADD":
		t, _, _ := strings.Cut(rest, " ")
		select {
		case c.adds <- micros(t):
		default:
		}
	case "FIRST", "RESTORING", "ASSIGNED", "RESTORED", "DONE", "READY":
		c.procLine(word, rest)
	case "STATS":
		var s GoStats
		if json.Unmarshal([]byte(rest), &s) == nil {
			select {
			case c.stats <- s:
			default:
			}
		}
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// send writes one command line to the child's stdin.
func (c *child) send(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// waitTasks waits for the TASKS line.
func (c *child) waitTasks(timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		t := c.tasks
		c.mu.Unlock()
		if !t.IsZero() {
			return t, nil
		}
		select {
		case <-c.exited:
			return time.Time{}, fmt.Errorf("%s exited before it was handed tasks (log: %s)", c.name, c.logPath)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("%s was handed no tasks within %v (log: %s)", c.name, timeout, c.logPath)
}

func (c *child) times() (mainAt, closed time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mainAt, c.closed
}

// goStats asks a gomember for its STATS line.
func (c *child) goStats() (GoStats, error) {
	if err := c.send("STATS"); err != nil {
		return GoStats{}, err
	}
	select {
	case s := <-c.stats:
		return s, nil
	case <-time.After(30 * time.Second):
		return GoStats{}, fmt.Errorf("%s sent no STATS", c.name)
	}
}

// stop sends SIGTERM (the member closes: revokes and leaves) and waits for the exit; after
// timeout the process is killed by its PID. It returns how long the exit took after the signal.
func (c *child) stop(timeout time.Duration) (time.Duration, error) {
	at := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case <-c.exited:
		return c.exitAt.Sub(at), nil
	case <-time.After(timeout):
		c.kill()
		return 0, fmt.Errorf("%s did not exit within %v of SIGTERM; killed it", c.name, timeout)
	}
}

// kill sends SIGKILL (kill -9) and waits until the process is gone.
func (c *child) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// killAll kills every child still running, by PID.
func killAll() {
	children.Lock()
	all := append([]*child(nil), children.all...)
	children.Unlock()
	for _, c := range all {
		c.kill()
	}
}

// stopAll stops the given children gracefully at once, killing those that take longer than timeout.
func stopAll(cs []*child, timeout time.Duration) {
	var wg sync.WaitGroup
	for _, c := range cs {
		if c == nil {
			continue
		}
		wg.Go(func() {
			select {
			case <-c.exited:
				return
			default:
			}
			_, _ = c.stop(timeout)
		})
	}
	wg.Wait()
}
