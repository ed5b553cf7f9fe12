package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The Java peer is a real Kafka Streams 4.4 application (javapeer/, built with Maven) that joins
// streams groups next to Go members. It speaks a line protocol on stdout (see Peer.java):
//
//	STATE <KafkaStreams state>
//	TASKS active=0_0,0_1 standby=
//	ERROR <uncaught exception, one line>
//	CLOSED
//
// and keeps stdin open as a life line: when stdin reaches EOF (closed by stop, or because the test
// binary died) it closes Kafka Streams, leaving the group, and exits.

// Java peer modes (the --mode flag of Peer.java).
const (
	// javaDefault is the topology javaCompatibleTopology describes.
	javaDefault = "default"
	// javaExtraSource also reads <input>-extra: a topology a group of javaDefault members refuses.
	javaExtraSource = "extra-source"
)

const (
	// javaStart bounds how long a Java peer may take from exec to RUNNING with its tasks: JVM start,
	// Kafka Streams start-up and a few heartbeats.
	javaStart = 90 * time.Second
	// javaStopWait bounds a graceful stop; Peer.java closes Kafka Streams with a 30 s timeout.
	javaStopWait = 45 * time.Second
)

// javaCompatibleTopology is the topology, in Go, that the Java peer in javaDefault mode sends: the
// Processor API graph source(input) → counter(store) → sink(output) is one subtopology "0" with the
// input as source topic and the store's changelog. The sink to the output topic is not part of the
// protocol topology (only repartition sinks are), so output does not appear.
func javaCompatibleTopology(group, input, store string) *topology.Topology {
	n := topology.Names{AppID: group}
	return topology.MustNew(topology.Subtopology{
		ID:                   "0",
		SourceTopics:         []string{input},
		StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog(store)},
	})
}

// deleteTopicsAtEnd deletes topics the test did not create itself (internal topics the broker
// created for a streams group) when the test ends, so they do not pile up in a long-lived broker.
func deleteTopicsAtEnd(t *testing.T, b *Broker, topics ...string) {
	t.Helper()
	adm := b.Admin(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, topics...)
	})
}

// javaBuild is the result of building the Java peer, shared by every test of the run.
var javaBuild struct {
	once      sync.Once
	classpath string // class path for `java -cp`
	err       error
	took      time.Duration
}

// buildJavaPeer builds the Java peer with Maven once per test run and returns its class path. A
// failed build fails the calling test (and every later one) with Maven's output: the interop tests
// never skip silently.
func buildJavaPeer(t *testing.T) string {
	t.Helper()
	built := false
	javaBuild.once.Do(func() {
		start := time.Now()
		javaBuild.classpath, javaBuild.err = mavenBuild()
		javaBuild.took, built = time.Since(start), true
	})
	if javaBuild.err != nil {
		t.Fatalf("building the Java peer (integration/javapeer): %v", javaBuild.err)
	}
	if built {
		t.Logf("built the Java peer in %v", javaBuild.took.Round(time.Millisecond))
	}
	return javaBuild.classpath
}

// mavenBuild runs `mvn package` in javapeer/, which compiles Peer.java into target/classes and
// writes the runtime dependency class path (jars in ~/.m2) to target/classpath.txt.
func mavenBuild() (string, error) {
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", errors.New("Maven (mvn) is needed to build the Java peer: apt-get install maven")
	}
	dir, err := filepath.Abs("javapeer")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-Dstyle.color=never", "package")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mvn package: %v\n%s", err, out)
	}
	deps, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return "", fmt.Errorf("mvn package wrote no class path: %v", err)
	}
	return filepath.Join(dir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps)), nil
}

// javaPeer is a running Java peer and what it has reported so far.
type javaPeer struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{} // closed once the process exited and its output was read

	stdinOnce sync.Once

	mu       sync.Mutex
	state    string   // latest KafkaStreams state
	states   []string // every state, in order
	active   tasks.Set
	standby  tasks.Set
	everAct  tasks.Set // every task ever reported active
	errs     []string  // ERROR lines
	closed   bool      // printed CLOSED
	lines    []string  // every stdout line, for failure reports
	bad      []string  // lines that did not parse
	waitErr  error     // from cmd.Wait
	exitCode int
}

// lockedBuffer is a bytes.Buffer safe for the exec copier goroutine and test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startJavaPeer starts a Java peer as a member of group (its application.id) reading input, writing
// output and keeping a key-value store named store; mode is javaDefault or javaExtraSource; flags
// are more --name=value flags of Peer.java (--guarantee=exactly_once_v2). When the
// test ends the peer is stopped (gracefully, killed by PID if that takes too long) and, if the test
// failed, its stdout lines and stderr log are printed.
func startJavaPeer(t *testing.T, b *Broker, group, input, output, store, mode string, flags ...string) *javaPeer {
	t.Helper()
	classpath := buildJavaPeer(t)
	java, err := javaBinary()
	if err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir() // removed after the cleanup below stopped the peer (cleanups run LIFO)
	// The peers run small test loads for seconds: the quick compiler alone (C1) costs less CPU
	// than both, on a machine of two CPUs shared with the broker and the Go members.
	args := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", classpath}
	if os.Getenv("STREAMSGROUP_TEST_LOG") != "" { // as for the Go members: debug logs on request
		for _, logger := range []string{"defaultLogLevel", "log.org.apache.kafka.streams", "log.org.apache.kafka.clients.consumer.internals"} {
			args = append(args, "-Dorg.slf4j.simpleLogger."+logger+"=debug")
		}
	}
	args = append(args, "io.github.streamsgroup.peer.Peer",
		"--bootstrap="+b.Bootstrap, "--app="+group, "--input="+input, "--output="+output,
		"--store="+store, "--mode="+mode, "--state-dir="+stateDir)
	args = append(args, flags...) // more --name=value flags, e.g. --guarantee=exactly_once_v2

	p := &javaPeer{
		name:   "java-" + mode,
		cmd:    exec.Command(java, args...),
		stderr: &lockedBuffer{},
		exited: make(chan struct{}),
	}
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the Java peer: %v", err)
	}
	go p.read(stdout)
	t.Cleanup(func() {
		if !p.shutdown() {
			t.Errorf("Java peer %s did not exit within %v of closing its stdin; killed it", p.name, javaStopWait)
		}
		if t.Failed() {
			t.Logf("Java peer %s (pid %d):\n%s", p.name, p.cmd.Process.Pid, p.report())
		}
		if bad := p.badLines(); len(bad) > 0 {
			t.Errorf("Java peer %s printed lines that do not parse: %q", p.name, bad)
		}
	})
	return p
}

// javaBinary is $JAVA_HOME/bin/java if JAVA_HOME is set, else java from PATH.
func javaBinary() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if j := filepath.Join(home, "bin", "java"); fileExists(j) {
			return j, nil
		}
	}
	j, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("Java 17+ is needed to run the Java peer: apt-get install openjdk-17-jdk-headless")
	}
	return j, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// read consumes stdout until the process closes it, then reaps the process. Reaping only after
// stdout is drained is what os/exec requires of StdoutPipe.
func (p *javaPeer) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 1024*1024) // ERROR lines carry whole cause chains
	for sc.Scan() {
		p.handle(sc.Text())
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waitErr, p.exitCode = err, -1
	if ps := p.cmd.ProcessState; ps != nil {
		p.exitCode = ps.ExitCode()
	}
	p.mu.Unlock()
	close(p.exited)
}

func (p *javaPeer) handle(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "STATE":
		p.state = rest
		p.states = append(p.states, rest)
	case "TASKS":
		active, standby, err := parseTasksLine(rest)
		if err != nil {
			p.bad = append(p.bad, line)
			return
		}
		p.active, p.standby = active, standby
		p.everAct = p.everAct.Union(active)
	case "ERROR":
		p.errs = append(p.errs, rest)
	case "CLOSED":
		p.closed = true
	default:
		p.bad = append(p.bad, line)
	}
}

// parseTasksLine reads "active=0_0,0_1 standby=0_2".
func parseTasksLine(s string) (active, standby tasks.Set, err error) {
	for _, field := range strings.Fields(s) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return tasks.Set{}, tasks.Set{}, fmt.Errorf("field %q has no '='", field)
		}
		var ids []tasks.ID
		if v != "" {
			for _, raw := range strings.Split(v, ",") {
				id, err := tasks.ParseID(raw)
				if err != nil {
					return tasks.Set{}, tasks.Set{}, err
				}
				ids = append(ids, id)
			}
		}
		switch k {
		case "active":
			active = tasks.NewSet(ids...)
		case "standby":
			standby = tasks.NewSet(ids...)
		default:
			return tasks.Set{}, tasks.Set{}, fmt.Errorf("unknown field %q", k)
		}
	}
	return active, standby, nil
}

// snapshot returns the latest reported active and standby tasks and KafkaStreams state.
func (p *javaPeer) snapshot() (active, standby tasks.Set, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active, p.standby, p.state
}

// activeTasks returns the latest reported active tasks.
func (p *javaPeer) activeTasks() tasks.Set {
	a, _, _ := p.snapshot()
	return a
}

// everActive returns every task the peer ever reported active.
func (p *javaPeer) everActive() tasks.Set {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.everAct
}

// currentState returns the latest KafkaStreams state ("" before the first).
func (p *javaPeer) currentState() string {
	_, _, s := p.snapshot()
	return s
}

// stateHistory returns every state the peer went through, in order.
func (p *javaPeer) stateHistory() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.states...)
}

// errorLines returns the ERROR lines so far (uncaught exceptions of stream threads).
func (p *javaPeer) errorLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

func (p *javaPeer) badLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bad...)
}

// String is a one-line summary for failure messages.
func (p *javaPeer) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%s state=%s active=%v standby=%v errors=%d", p.name, p.state, p.active, p.standby, len(p.errs))
}

func (p *javaPeer) report() string {
	p.mu.Lock()
	lines := strings.Join(p.lines, "\n")
	p.mu.Unlock()
	return fmt.Sprintf("--- stdout ---\n%s\n--- stderr ---\n%s", lines, p.stderr.String())
}

// stop stops the peer gracefully, as a Java application is stopped in production: close stdin, let
// Kafka Streams close (leaving the group), and wait. It fails the test unless the process printed
// CLOSED and exited with status 0 in time.
func (p *javaPeer) stop(t *testing.T) {
	t.Helper()
	if !p.shutdown() {
		t.Fatalf("Java peer %s did not exit within %v of closing its stdin; killed it", p.name, javaStopWait)
	}
	p.mu.Lock()
	closed, code, err := p.closed, p.exitCode, p.waitErr
	p.mu.Unlock()
	if !closed || code != 0 {
		t.Fatalf("Java peer %s did not stop cleanly: CLOSED printed %v, exit status %d (%v)", p.name, closed, code, err)
	}
}

// shutdown closes stdin and waits for the process to exit; if it does not in javaStopWait, it kills
// the process by its PID and reports false. It is safe to call more than once.
func (p *javaPeer) shutdown() bool {
	p.stdinOnce.Do(func() { _ = p.stdin.Close() })
	select {
	case <-p.exited:
		return true
	case <-time.After(javaStopWait):
	}
	_ = p.cmd.Process.Kill() // SIGKILL to this PID only
	<-p.exited
	return false
}
