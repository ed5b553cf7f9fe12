package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/transport"
	"github.com/streamsgroup/streamsgroup/topology"
)

// resetProxy is a TCP proxy in front of the broker that can play a network failure: every open
// connection is reset (RST) and, while the network is down, every new one is reset as soon as it is
// accepted.
type resetProxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newResetProxy(t *testing.T, target string) *resetProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &resetProxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *resetProxy) Addr() string { return p.ln.Addr().String() }

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // Close sends RST, as a failing network path does
	}
	_ = c.Close()
}

// track registers c, or resets it at once when the network is down.
func (p *resetProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		resetConn(c)
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *resetProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *resetProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

func (p *resetProxy) pipe(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	broker, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(client)
		return
	}
	if !p.track(broker) {
		resetConn(client)
		return
	}
	defer p.untrack(broker)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(broker, client)
		_ = broker.Close()
		close(done)
	}()
	_, _ = io.Copy(client, broker)
	_ = client.Close()
	<-done
}

// SetDown takes the network down (resetting every open connection) or brings it back.
func (p *resetProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			resetConn(c)
		}
	}
}

func (p *resetProxy) close() {
	_ = p.ln.Close()
	p.SetDown(true)
	p.wg.Wait()
}

// proxiedClient is a client whose every connection to the broker goes through the proxy: its dialer
// maps the broker's address (the seed and the advertised listener, which are the same here) to the
// proxy's.
func proxiedClient(t *testing.T, b *Broker, p *resetProxy) *kgo.Client {
	t.Helper()
	_, brokerPort, err := net.SplitHostPort(b.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	return b.Client(t, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if _, port, err := net.SplitHostPort(host); err == nil && port == brokerPort {
			host = p.Addr()
		}
		return d.DialContext(ctx, network, host)
	}))
}

// measureReset takes the network down for about down (every connection reset, new ones too),
// heartbeats with hb as a member does after an error (the next attempt pace after a failure), brings
// the network back between two attempts, and returns the time from "network back" to the first
// answered heartbeat.
func measureReset(t *testing.T, p *resetProxy, down, pace time.Duration, hb func() (*kmsg.StreamsGroupHeartbeatResponse, error)) time.Duration {
	t.Helper()
	var (
		mu   sync.Mutex
		back time.Time
	)
	p.SetDown(true)
	timer := time.AfterFunc(down+pace/2, func() {
		mu.Lock()
		defer mu.Unlock()
		back = time.Now()
		p.SetDown(false)
	})
	defer timer.Stop()
	backAt := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return back
	}
	failed := 0
	for {
		resp, err := hb()
		now := time.Now()
		b := backAt()
		if err == nil {
			if b.IsZero() {
				t.Fatalf("a heartbeat through a failed network was answered: %+v", resp)
			}
			t.Logf("answered (code %d) after %d failed attempts", resp.ErrorCode, failed)
			return now.Sub(b)
		}
		if te := heartbeat.ClassifyTransport(err); te.Class != heartbeat.Rediscover {
			t.Fatalf("a reset must be a retriable transport failure: %v", err)
		}
		failed++
		if !b.IsZero() && now.Sub(b) > 30*time.Second {
			t.Fatalf("no heartbeat answered within 30s of the network coming back (%d attempts): %v", failed, err)
		}
		time.Sleep(pace)
	}
}

// Issue 9 item 1.11: after a connection reset the first answered heartbeat must come as soon as the
// member's own schedule sends one, not when kgo's internal retries of the coordinator look-up get
// round to it. A member joins through a proxy; the proxy resets every connection and refuses new ones
// for a while; the test heartbeats every retry.backoff.ms (100 ms) after a failure, as the member does,
// and measures the time from "network back" to the first answered heartbeat through internal/transport.
// It asserts only that the heartbeat is answered; the delay is logged (with one look-up attempt per
// heartbeat it is at most one pacing interval plus a round trip). For comparison it logs the same
// measurement with the look-up routed through kgo (Client.Request), as it was before.
func TestTransportFirstHeartbeatAfterConnectionReset(t *testing.T) {
	b := Get(t)
	topic := Name(t, "in")
	group := Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)

	p := newResetProxy(t, b.Bootstrap)
	cl := proxiedClient(t, b, p)
	tr := transport.New(cl, group, 10*time.Second, heartbeat.Backoff{Min: 100 * time.Millisecond, Max: time.Second})

	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{topic}})
	bl := heartbeat.NewBuilder(heartbeat.JoinInfo{
		Group: group, MemberID: uuid.NewString(), ProcessID: uuid.NewString(), RebalanceTimeout: 30000,
		Topology: topo, TopologyEpoch: 0,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Join (the coordinator may still be loading on a fresh broker: retry what is retriable).
	epoch := heartbeat.EpochJoin
	Eventually(t, 60*time.Second, func() (bool, string) {
		resp, err := tr.Heartbeat(ctx, bl.Build(heartbeat.Report{Epoch: epoch, EndpointEpoch: -1}))
		var r heartbeat.Response
		if err := heartbeat.ClassifyInto(&r, resp, err, topo); err != nil {
			bl.Reset()
			return false, err.Error()
		}
		epoch = r.Epoch
		return r.Epoch > 0, "joined at epoch 0"
	})
	t.Logf("joined at member epoch %d", epoch)

	const (
		pace = 100 * time.Millisecond // retry.backoff.ms: the member's wait after a failed heartbeat
		down = 3 * time.Second        // how long the network stays down
	)
	req := func() *kmsg.StreamsGroupHeartbeatRequest {
		bl.Reset() // after an error the next heartbeat is full
		return bl.Build(heartbeat.Report{Epoch: epoch, EndpointEpoch: -1})
	}

	delay := measureReset(t, p, down, pace, func() (*kmsg.StreamsGroupHeartbeatResponse, error) {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		return tr.Heartbeat(rctx, req())
	})
	t.Logf("internal/transport: network back -> first answered heartbeat: %v", delay.Round(time.Millisecond))

	// The same through a look-up that kgo routes and retries on its own schedule (the former
	// coordinator cache), on a client of its own. Logged only.
	kgoCl := proxiedClient(t, b, p)
	node := int32(-1)
	kgoDelay := measureReset(t, p, down, pace, func() (*kmsg.StreamsGroupHeartbeatResponse, error) {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		if node < 0 {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group}
			fr, err := fc.RequestWith(rctx, kgoCl)
			if err != nil {
				return nil, err
			}
			if len(fr.Coordinators) != 1 || fr.Coordinators[0].ErrorCode != 0 {
				return nil, fmt.Errorf("FindCoordinator: %+v", fr)
			}
			node = fr.Coordinators[0].NodeID
		}
		resp, err := req().RequestWith(rctx, kgoCl.Broker(int(node)))
		if err != nil {
			node = -1
		}
		return resp, err
	})
	t.Logf("kgo-routed look-up (before): network back -> first answered heartbeat: %v", kgoDelay.Round(time.Millisecond))

	// Leave, through the coordinator the transport knows. The second outage reset the transport's
	// idle connection too, so the first attempt may meet the dead connection (EOF); a member retries
	// a retriable transport failure after retry.backoff.ms, and so does the test, a few times.
	for attempt := 1; ; attempt++ {
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := tr.Heartbeat(lctx, bl.Build(heartbeat.Report{Epoch: heartbeat.EpochLeave, EndpointEpoch: -1}))
		lcancel()
		if err == nil {
			if resp.ErrorCode != 0 {
				t.Errorf("leave answered with error code %d", resp.ErrorCode)
			}
			break
		}
		if te := heartbeat.ClassifyTransport(err); te.Class != heartbeat.Rediscover || attempt == 5 {
			t.Fatalf("leave, attempt %d: %v", attempt, err)
		}
		t.Logf("leave, attempt %d: %v (retrying)", attempt, err)
		time.Sleep(pace)
	}
}
