//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/integration/chaos"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// dlog writes the driver's records (chaos.DriverRecord) as JSON lines.
type dlog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *dlog) write(r chaos.DriverRecord) {
	if r.T == 0 {
		r.T = time.Now().UnixMicro()
	}
	b, _ := json.Marshal(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(append(b, '\n'))
}

// broker is the Kafka broker (or cluster) this run started with broker.sh in its own run directory.
type broker struct {
	script string
	runDir string
	extra  []string // more environment for broker.sh (the cluster's voters and properties)
	env    map[string]string
	addrs  []string // every node's advertised host:port, in node order
	nodes  []int32
	cl     *kgo.Client
	adm    *kadm.Client
	sg     *admin.Client
}

func (b *broker) sh(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "bash", append([]string{b.script}, args...)...)
	cmd.Env = append(append(os.Environ(), "STREAMSGROUP_RUN_DIR="+b.runDir), b.extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("broker.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// clusterSupported says whether broker.sh knows `start --brokers N` (being added alongside).
func clusterSupported(script string) bool {
	b, err := os.ReadFile(script)
	return err == nil && strings.Contains(string(b), "stop-node") && strings.Contains(string(b), "--brokers")
}

// clusterProps are the cluster's server properties beyond broker.sh's: what production runs
// exactly-once with. Every topic's writes need two in-sync replicas (the topics have three), and so
// do the transaction log's.
const clusterProps = "min.insync.replicas=2 transaction.state.log.min.isr=2"

func startBroker(ctx context.Context, script, runDir string, brokers, voters int) (*broker, error) {
	b := &broker{script: script, runDir: runDir}
	args := []string{"start"}
	if brokers > 1 {
		if !clusterSupported(script) {
			return nil, errors.New("BROKERS>1 needs broker.sh start --brokers N, which this broker.sh does not have yet")
		}
		args = append(args, "--brokers", strconv.Itoa(brokers))
		if voters > 1 {
			b.extra = []string{"STREAMSGROUP_CLUSTER_VOTERS=" + strconv.Itoa(voters), "STREAMSGROUP_BROKER_EXTRA=" + clusterProps}
		}
	}
	if err := b.sh(ctx, args...); err != nil {
		return b, err
	}
	env, err := readEnv(filepath.Join(runDir, "env"))
	if err != nil {
		return b, err
	}
	b.env = env
	if ids := env["STREAMSGROUP_NODE_IDS"]; ids != "" {
		for f := range strings.FieldsSeq(strings.ReplaceAll(ids, ",", " ")) {
			n, _ := strconv.Atoi(f)
			b.nodes = append(b.nodes, int32(n))
			b.addrs = append(b.addrs, env["STREAMSGROUP_NODE_"+f+"_ADDRESS"])
		}
	} else {
		b.nodes, b.addrs = []int32{1}, []string{env["STREAMSGROUP_BOOTSTRAP"]}
	}
	b.cl, err = kgo.NewClient(kgo.SeedBrokers(b.addrs...))
	if err != nil {
		return b, err
	}
	b.adm, b.sg = kadm.NewClient(b.cl), admin.NewClient(b.cl)
	return b, nil
}

func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return env, sc.Err()
}

func (b *broker) stop() {
	if b.cl != nil {
		b.cl.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.sh(ctx, "stop"); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
	}
}

// ports are the broker ports, for counting connections.
func (b *broker) ports() map[int]bool {
	out := map[int]bool{}
	for _, a := range b.addrs {
		if _, p, err := net.SplitHostPort(a); err == nil {
			n, _ := strconv.Atoi(p)
			out[n] = true
		}
	}
	return out
}

// describe takes the broker's view of the group.
func (b *broker) describe(ctx context.Context, group string) *chaos.Snapshot {
	g, err := b.sg.Describe(ctx, group)
	if err != nil {
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		return &chaos.Snapshot{State: "unavailable", Err: msg}
	}
	s := &chaos.Snapshot{State: g.State, Epoch: g.Epoch}
	for _, m := range g.Members {
		s.Members = append(s.Members, chaos.SnapMember{ID: m.MemberID, Epoch: m.MemberEpoch,
			Active: taskNames(m.Assignment.Active), Target: taskNames(m.TargetAssignment.Active)})
	}
	slices.SortFunc(s.Members, func(a, b chaos.SnapMember) int { return strings.Compare(a.ID, b.ID) })
	return s
}

func taskNames(s tasks.Set) []string {
	var out []string
	for t := range s.All() {
		out = append(out, fmt.Sprintf("%s_%d", t.Subtopology, t.Partition))
	}
	slices.Sort(out)
	return out
}

// countConns counts established TCP connections whose local port is a broker port: the broker's
// side of every client connection (toxiproxy's upstream ones, the driver's, other brokers').
func countConns(ports map[int]bool) int {
	n := 0
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 4 || fs[3] != "01" { // 01: ESTABLISHED
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && ports[int(p)] {
				n++
			}
		}
		f.Close()
	}
	return n
}

// toxi is the toxiproxy server this run started, and its client.
type toxi struct {
	cmd    *exec.Cmd
	done   chan struct{}
	client *toxiproxy.Client
}

// toxiproxyVersion is the toxiproxy server the driver builds (its client is in go.mod at the same
// version).
const toxiproxyVersion = "v2.5.0"

// buildToxiproxy builds toxiproxy's server once into the cache and returns its path.
func buildToxiproxy(ctx context.Context, cacheDir string) (string, error) {
	dir := filepath.Join(cacheDir, "toxiproxy-"+toxiproxyVersion)
	bin := filepath.Join(dir, "toxiproxy-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// go install pkg@version builds outside this module, so toxiproxy's server dependencies stay out
	// of go.mod.
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/Shopify/toxiproxy/v2/cmd/server@"+toxiproxyVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building toxiproxy: %w\n%s", err, out)
	}
	return bin, os.Rename(filepath.Join(dir, "server"), bin)
}

func startToxi(ctx context.Context, bin, logPath string) (*toxi, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "LOG_LEVEL=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	t := &toxi{cmd: cmd, done: make(chan struct{}), client: toxiproxy.NewClient(fmt.Sprintf("127.0.0.1:%d", port))}
	go func() { _ = cmd.Wait(); lf.Close(); close(t.done) }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := t.client.Proxies(); err == nil {
			return t, nil
		}
		select {
		case <-t.done:
			return nil, fmt.Errorf("toxiproxy exited at start (log %s)", logPath)
		case <-ctx.Done():
			t.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.stop()
			return nil, errors.New("toxiproxy did not answer within 20 s")
		}
	}
}

func (t *toxi) stop() {
	if t == nil || t.cmd.Process == nil {
		return
	}
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(5 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// process is one member process (its current incarnation), its proxies and the driver's live view
// of its log.
type process struct {
	name    string
	inc     int
	members []string
	proxies []*toxiproxy.Proxy // one per broker node, same order as broker.addrs
	cmd     *exec.Cmd
	done    chan struct{}
	expect  atomic.Bool // the driver ended it (a kill, a SIGTERM)
	paused  bool

	tail   *chaos.Tail[chaos.Record]
	ids    map[string]string
	held   map[string][]string
	closed map[string]bool
}

func (p *process) signal(sig syscall.Signal) {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// follow reads what the process logged since the last call into the live view.
func (p *process) follow() {
	recs, _ := p.tail.Next()
	for _, r := range recs {
		switch r.Kind {
		case chaos.KindStart:
			p.ids[r.Member] = r.MemberID
		case chaos.KindOwned:
			p.held[r.Member] = r.Active
		case chaos.KindClosed:
			p.closed[r.Member] = true
		}
	}
}

// live is the process's members as S2 sees them.
func (p *process) live() []chaos.LiveMember {
	p.follow()
	var out []chaos.LiveMember
	for _, m := range p.members {
		if !p.closed[m] {
			out = append(out, chaos.LiveMember{Name: p.name + "/" + m, MemberID: p.ids[m], Active: p.held[m]})
		}
	}
	return out
}
