package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

const group = "app"

var fastBackoff = heartbeat.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}

// env is a three-broker kfake cluster that knows the streams APIs, whose FindCoordinator and
// StreamsGroupHeartbeat requests are counted and scripted, reached through a dialer that can reset the
// connection a FindCoordinator request travels on.
type env struct {
	c      *kfake.Cluster
	cl     *kgo.Client
	dialer *resetDialer

	findCode atomic.Int32 // FindCoordinator answers with this code when non-zero
	findNode atomic.Int32 // FindCoordinator answers with this node when >= 0 (set by newEnv to -1)
	v0Node   atomic.Int32 // this node advertises StreamsGroupHeartbeat v0 only (Kafka 4.3); -1: none
	finds    atomic.Int64 // FindCoordinator requests the cluster received

	mu     sync.Mutex
	codes  []int16 // the next heartbeat answers' error codes; -1 closes the connection; empty: 0
	hbs    []*kmsg.StreamsGroupHeartbeatRequest
	hbNode []int32
}

func newEnv(t *testing.T, opts ...kgo.Opt) *env {
	t.Helper()
	e := &env{dialer: &resetDialer{}}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e.c = c
	e.findNode.Store(-1)
	e.v0Node.Store(-1)
	heartbeatMax := func(node int32) int16 {
		if node == e.v0Node.Load() {
			return 0
		}
		return 1
	}
	if err := kfakestreams.AdvertiseBy(context.Background(), c, heartbeatMax, 1, 1); err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		e.finds.Add(1)
		code := int16(e.findCode.Load())
		if node := e.findNode.Load(); node >= 0 && code == 0 {
			fr := req.(*kmsg.FindCoordinatorRequest)
			r := fr.ResponseKind().(*kmsg.FindCoordinatorResponse)
			host, port, _ := net.SplitHostPort(c.ListenAddrs()[node])
			p, _ := strconv.Atoi(port)
			for _, k := range fr.CoordinatorKeys {
				r.Coordinators = append(r.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: k, NodeID: node, Host: host, Port: int32(p)})
			}
			r.NodeID, r.Host, r.Port = node, host, int32(p)
			return r, nil, true
		}
		if code == 0 {
			return nil, nil, false
		}
		fr := req.(*kmsg.FindCoordinatorRequest)
		r := fr.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, k := range fr.CoordinatorKeys {
			r.Coordinators = append(r.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: k, ErrorCode: code})
		}
		r.ErrorCode = code
		return r, nil, true
	})
	c.ControlKey(int16(kmsg.StreamsGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		hr := req.(*kmsg.StreamsGroupHeartbeatRequest)
		e.mu.Lock()
		e.hbs = append(e.hbs, hr)
		e.hbNode = append(e.hbNode, c.CurrentNode())
		var code int16
		if len(e.codes) > 0 {
			code, e.codes = e.codes[0], e.codes[1:]
		}
		e.mu.Unlock()
		if code == -1 {
			return nil, errors.New("scripted connection failure"), true
		}
		r := hr.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		r.ErrorCode = code
		r.MemberID, r.MemberEpoch, r.HeartbeatIntervalMillis = hr.MemberID, hr.MemberEpoch+1, 500
		return r, nil, true
	})
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.Dialer(e.dialer.dial)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	e.cl = cl
	return e
}

func (e *env) script(codes ...int16) {
	e.mu.Lock()
	e.codes = append(e.codes, codes...)
	e.mu.Unlock()
}

func (e *env) heartbeats() []*kmsg.StreamsGroupHeartbeatRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*kmsg.StreamsGroupHeartbeatRequest(nil), e.hbs...)
}

func (e *env) transport() *Transport { return New(e.cl, group, 5*time.Second, fastBackoff) }

func hbReq(epoch int32) *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = group, "m1", epoch
	return r
}

// resetDialer dials normally, but while reset is set, a connection that carries a FindCoordinator
// request is reset (ECONNRESET) instead of sending it, as a connection through a failing network is.
// It counts the FindCoordinator requests it saw, reset or not.
type resetDialer struct {
	reset atomic.Bool
	finds atomic.Int64
}

func (d *resetDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &resetConn{Conn: c, d: d}, nil
}

type resetConn struct {
	net.Conn
	d     *resetDialer
	dead  atomic.Bool
	frame []byte // the start of the request being written, until its API key is known
	left  int    // bytes of the current request still to come
}

var errReset = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

func (c *resetConn) Write(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, errReset
	}
	// Requests are frames: a 4-byte length, then the API key. Follow them through the stream.
	for rest := p; len(rest) > 0; {
		if c.left == 0 {
			need := 6 - len(c.frame)
			n := min(need, len(rest))
			c.frame = append(c.frame, rest[:n]...)
			rest = rest[n:]
			if len(c.frame) < 6 {
				break
			}
			c.left = int(binary.BigEndian.Uint32(c.frame[:4])) - 2
			key := int16(binary.BigEndian.Uint16(c.frame[4:6]))
			c.frame = c.frame[:0]
			if key == int16(kmsg.FindCoordinator) {
				c.d.finds.Add(1)
				if c.d.reset.Load() {
					c.dead.Store(true)
					c.Conn.Close()
					return len(p), nil // "sent", and then the connection is reset
				}
			}
			continue
		}
		n := min(c.left, len(rest))
		c.left -= n
		rest = rest[n:]
	}
	return c.Conn.Write(p)
}

func (c *resetConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.dead.Load() {
		return 0, errReset
	}
	return n, err
}

// Issue 9 item 1.11: a heartbeat whose coordinator look-up fails makes exactly one FindCoordinator
// attempt, whatever the failure; kgo must not retry it on its own schedule. The error comes back raw
// (not classified) and nothing reaches the group.
func TestHeartbeatMakesOneLookupAttemptWhenItFails(t *testing.T) {
	t.Run("connection reset", func(t *testing.T) {
		e := newEnv(t)
		tr := e.transport()
		e.dialer.reset.Store(true)
		for i := int64(1); i <= 3; i++ {
			resp, err := tr.Heartbeat(context.Background(), hbReq(0))
			if err == nil || resp != nil {
				t.Fatalf("heartbeat %d through a reset connection: %v, %v", i, resp, err)
			}
			if _, ok := errors.AsType[*heartbeat.TransportError](err); ok {
				t.Fatalf("the transport must not classify: %T", err)
			}
			if !neterr.IsRetriableTransport(err) || !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("a reset is a retriable transport failure: %v", err)
			}
			if got := e.dialer.finds.Load(); got != i {
				t.Fatalf("after %d heartbeats %d FindCoordinator attempts, want %d", i, got, i)
			}
		}
		if len(e.heartbeats()) != 0 {
			t.Fatal("no heartbeat may be sent without a coordinator")
		}
		e.dialer.reset.Store(false)
		if resp, err := tr.Heartbeat(context.Background(), hbReq(0)); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("the network is back: %v, %v", resp, err)
		}
	})
	t.Run("error code", func(t *testing.T) {
		e := newEnv(t)
		tr := e.transport()
		e.findCode.Store(int32(kerr.CoordinatorNotAvailable.Code))
		for i := int64(1); i <= 3; i++ {
			_, err := tr.Heartbeat(context.Background(), hbReq(0))
			if le, ok := errors.AsType[*neterr.LookupError](err); !ok || !errors.Is(le, kerr.CoordinatorNotAvailable) {
				t.Fatalf("heartbeat %d: want the raw *neterr.LookupError, got %T %v", i, err, err)
			}
			if got := e.finds.Load(); got != i {
				t.Fatalf("after %d heartbeats %d FindCoordinator requests, want %d", i, got, i)
			}
		}
		if len(e.heartbeats()) != 0 {
			t.Fatal("no heartbeat may be sent without a coordinator")
		}
	})
}

// Which answers forget the coordinator: the next heartbeat looks it up again exactly when the
// previous answer said the coordinator moved, or the send failed. COORDINATOR_LOAD_IN_PROGRESS keeps
// it (issue 9 item 1.5).
func TestHeartbeatForgetsTheCoordinatorOnlyWhenItMoved(t *testing.T) {
	cases := []struct {
		code    int16 // -1: the connection fails
		forgets bool
	}{
		{0, false},
		{kerr.CoordinatorLoadInProgress.Code, false},
		{kerr.FencedMemberEpoch.Code, false},
		{kerr.UnknownMemberID.Code, false},
		{kerr.GroupAuthorizationFailed.Code, false},
		{kerr.NotCoordinator.Code, true},
		{kerr.CoordinatorNotAvailable.Code, true},
		{-1, true},
	}
	for _, c := range cases {
		t.Run(kerrName(c.code), func(t *testing.T) {
			e := newEnv(t)
			tr := e.transport()
			if _, err := tr.Heartbeat(context.Background(), hbReq(0)); err != nil {
				t.Fatal(err)
			}
			if e.finds.Load() != 1 || !cachedCoordinator(tr) {
				t.Fatalf("the first heartbeat looks the coordinator up once: %d", e.finds.Load())
			}
			e.script(c.code)
			resp, err := tr.Heartbeat(context.Background(), hbReq(1))
			if c.code == -1 {
				if err == nil || resp != nil {
					t.Fatalf("a failed connection is an error: %v, %v", resp, err)
				}
			} else if err != nil || resp.ErrorCode != c.code {
				t.Fatalf("the answer comes back as it is: %v, %v", resp, err)
			}
			if cachedCoordinator(tr) == c.forgets {
				t.Fatalf("coordinator known after %s: %v", kerrName(c.code), !c.forgets)
			}
			// After the scripted connection failure the client may not have noticed yet that the
			// connection died: a request sent at once can fail with that, and is then sent again (a
			// member would back off first). Each such failure forgets the coordinator again.
			redone := int64(0)
			for {
				_, err := tr.Heartbeat(context.Background(), hbReq(1))
				if err == nil {
					break
				}
				if c.code != -1 || redone == 5 || !strings.Contains(err.Error(), "connection has died") {
					t.Fatal(err)
				}
				redone++
			}
			want := int64(1)
			if c.forgets {
				want = 2 + redone
			}
			if got := e.finds.Load(); got != want {
				t.Fatalf("%d look-ups, want %d", got, want)
			}
			hbs := e.heartbeats()
			if len(hbs) != 3 || hbs[1].MemberEpoch != 1 || hbs[0].Group != group {
				t.Fatalf("heartbeats sent: %d", len(hbs))
			}
			if node := e.c.CoordinatorFor(group); e.hbNode[2] != node {
				t.Fatalf("heartbeat went to %d, the coordinator is %d", e.hbNode[2], node)
			}
		})
	}
}

func kerrName(code int16) string {
	switch code {
	case -1:
		return "connection-failure"
	case 0:
		return "ok"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func TestDescribe(t *testing.T) {
	e := newEnv(t)
	var codes []int16
	var mu sync.Mutex
	e.c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		mu.Lock()
		code := int16(0)
		if len(codes) > 0 {
			code, codes = codes[0], codes[1:]
		}
		mu.Unlock()
		r := req.(*kmsg.StreamsGroupDescribeRequest)
		resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		resp.Groups = []kmsg.StreamsGroupDescribeResponseGroup{{Group: r.Groups[0], ErrorCode: code, Epoch: 4, State: "Stable"}}
		return resp, nil, true
	})
	tr := e.transport()
	codes = []int16{kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code}
	g, err := tr.Describe(context.Background())
	if err != nil || g.Group != group || g.Epoch != 4 {
		t.Fatalf("Describe = %+v, %v", g, err)
	}
	codes = []int16{kerr.GroupIDNotFound.Code}
	_, err = tr.Describe(context.Background())
	if he, ok := errors.AsType[*heartbeat.Error](err); !ok || !errors.Is(he, kerr.GroupIDNotFound) {
		t.Fatalf("a group error is a *heartbeat.Error: %T %v", err, err)
	}
}

func TestCapabilities(t *testing.T) {
	for _, c := range []struct {
		hbMax, streams int16
		want           heartbeat.Capabilities
	}{
		{1, 1, heartbeat.Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}},
		{0, 0, heartbeat.Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 0}},
		{-1, 0, heartbeat.Capabilities{HeartbeatMaxVersion: -1, StreamsVersion: 0}},
	} {
		kc, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		var ours atomic.Int32
		kc.ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
			kc.KeepControl()
			if req.(*kmsg.ApiVersionsRequest).ClientSoftwareName == "streamsgroup" {
				if v := req.(*kmsg.ApiVersionsRequest).ClientSoftwareVersion; v == "" || sanitize(v) != v {
					t.Errorf("software version %q", v)
				}
				ours.Add(1)
			}
			return nil, nil, false
		})
		if err := kfakestreams.Advertise(context.Background(), kc, c.hbMax, c.hbMax, c.streams); err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		tr := New(cl, group, 5*time.Second, heartbeat.Backoff{})
		got, err := tr.Capabilities(context.Background())
		if err != nil || got != c.want {
			t.Errorf("advertised heartbeat v%d, streams.version %d: got %+v, %v", c.hbMax, c.streams, got, err)
		}
		if ours.Load() != 1 {
			t.Errorf("%d ApiVersions requests of ours, want 1", ours.Load())
		}
		cl.Close()
		kc.Close()
	}
}

func TestCapabilitiesIsOneAttempt(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var ours atomic.Int32
	kc.ControlKey(int16(kmsg.ApiVersions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		r := req.(*kmsg.ApiVersionsRequest)
		if r.ClientSoftwareName != "streamsgroup" {
			return nil, nil, false
		}
		ours.Add(1)
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = New(cl, group, time.Second, fastBackoff).Capabilities(context.Background())
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) || ours.Load() != 1 {
		t.Fatalf("got %v after %d requests", err, ours.Load())
	}
	// A closed client: no broker answers.
	cl.Close()
	if _, err := New(cl, group, time.Second, fastBackoff).Capabilities(context.Background()); err == nil {
		t.Fatal("a closed client has no capabilities")
	}
}

func TestNewReplacesAMissingBackoff(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, b := range []heartbeat.Backoff{{}, {Max: time.Second}, {Min: -1}} {
		// The defaults of retry.backoff.ms and retry.backoff.max.ms, jittered as the member's own.
		if got := New(cl, group, time.Second, b).backoff; got.Min != config.DefaultRetryBackoff ||
			got.Max != config.DefaultRetryBackoffMax || got.Rand == nil {
			t.Errorf("%+v became %+v", b, got)
		}
	}
	if got := New(cl, group, time.Second, fastBackoff).backoff; got.Min != fastBackoff.Min || got.Max != fastBackoff.Max {
		t.Errorf("a given backoff is kept: %+v", got)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                     "v1.2.3",
		"v0.0.0-20260101-abcdef":     "v0.0.0-20260101-abcdef",
		"v2.0.0+incompatible":        "v2.0.0-incompatible",
		"-.x.-":                      "x",
		"":                           "unknown",
		"+++":                        "unknown",
		"v1.0.0+dirty.build/1":       "v1.0.0-dirty.build-1",
		"ünïcode":                    "n--code", // bytes, not runes
		"v1.2.3-rc.1+meta.data.here": "v1.2.3-rc.1-meta.data.here",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if v := softwareVersion(); v == "" || sanitize(v) != v {
		t.Errorf("softwareVersion() = %q", v)
	}
}

// Issue 22 §2: the group's session timeout is read from the coordinator, not whichever broker
// answers first: the value of a config the group does not set is the answering broker's default.
func TestGroupConfigsGoToTheCoordinator(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var nodes []int32
	e.c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		mu.Lock()
		nodes = append(nodes, e.c.CurrentNode())
		mu.Unlock()
		r := req.(*kmsg.DescribeConfigsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range r.Resources {
			resp.Resources = append(resp.Resources, kmsg.DescribeConfigsResponseResource{ResourceType: res.ResourceType, ResourceName: res.ResourceName})
		}
		return resp, nil, true
	})
	tr := e.transport()
	for range 6 {
		resp, err := tr.GroupConfigs(context.Background(), "streams.session.timeout.ms")
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ResourceName != group {
			t.Fatalf("GroupConfigs = %+v, %v", resp, err)
		}
	}
	coord, ok := tr.Coordinator()
	if !ok {
		t.Fatal("no coordinator known after GroupConfigs")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, n := range nodes {
		if n != coord {
			t.Fatalf("DescribeConfigs #%d went to broker %d, the coordinator is %d (all: %v)", i, n, coord, nodes)
		}
	}
}

// Issue 22 §1, a rolling upgrade from Kafka 4.3 to 4.4: the group's coordinator moves from a v1
// broker to a v0 one. The heartbeat after the move goes at v0, without task offsets, end offsets and
// warm-up tasks (a 4.3 coordinator refuses them as INVALID_REQUEST), although the same request, and
// the probe of another broker, would take them; the answer says v0. Back on a v1 coordinator, the
// same request carries them again.
func TestHeartbeatFollowsTheCoordinatorsVersion(t *testing.T) {
	e := newEnv(t)
	e.v0Node.Store(2)
	e.findNode.Store(0)
	tr := e.transport()
	withOffsets := func() *kmsg.StreamsGroupHeartbeatRequest {
		r := hbReq(1)
		r.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1}}}
		r.TaskOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 1, Offset: 5}}
		r.TaskEndOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 1, Offset: 9}}
		return r
	}
	send := func(want int16, node int32) *kmsg.StreamsGroupHeartbeatRequest {
		t.Helper()
		req := withOffsets()
		resp, err := tr.Heartbeat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		hbs := e.heartbeats()
		got := hbs[len(hbs)-1]
		e.mu.Lock()
		at := e.hbNode[len(e.hbNode)-1]
		e.mu.Unlock()
		if at != node || resp.Version != want || req.GetVersion() != want {
			t.Fatalf("heartbeat went to node %d at v%d (answer v%d), want node %d at v%d", at, req.GetVersion(), resp.Version, node, want)
		}
		return got
	}
	if got := send(1, 0); len(got.TaskOffsets) != 1 || len(got.TaskEndOffsets) != 1 || len(got.WarmupTasks) != 1 {
		t.Fatalf("v1 coordinator got %+v, want the offsets and warm-up tasks", got)
	}
	// The coordinator moves to node 2, a 4.3 broker.
	e.findNode.Store(2)
	e.script(kerr.NotCoordinator.Code)
	if resp, err := tr.Heartbeat(context.Background(), withOffsets()); err != nil || resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("%v %v", resp, err)
	}
	got := send(0, 2)
	if got.TaskOffsets != nil || got.TaskEndOffsets != nil || len(got.WarmupTasks) != 0 {
		t.Fatalf("v0 coordinator got offsets %v ends %v warm-up %v: Kafka 4.3 refuses them", got.TaskOffsets, got.TaskEndOffsets, got.WarmupTasks)
	}
	// And back to a 4.4 broker.
	e.findNode.Store(1)
	e.script(kerr.NotCoordinator.Code)
	if _, err := tr.Heartbeat(context.Background(), withOffsets()); err != nil {
		t.Fatal(err)
	}
	if got := send(1, 1); len(got.TaskOffsets) != 1 {
		t.Fatalf("back on a v1 coordinator: %+v", got)
	}
}

// cachedCoordinator reports whether tr holds its group's coordinator.
func cachedCoordinator(tr *Transport) bool {
	_, ok := tr.coord.Cached(tr.group)
	return ok
}

// The version ApiVersions reports: this module's, from the main module or a dependency, and
// "unknown" for a work-tree build or a build without it.
func TestVersionOf(t *testing.T) {
	mod := func(path, version string) *debug.Module { return &debug.Module{Path: path, Version: version} }
	for _, c := range []struct {
		mods []*debug.Module
		want string
	}{
		{nil, "unknown"},
		{[]*debug.Module{mod(modulePath, "v1.4.0")}, "v1.4.0"},
		{[]*debug.Module{mod("example.com/app", "v9.9.9"), mod(modulePath, "v1.4.0+dirty")}, "v1.4.0-dirty"},
		{[]*debug.Module{mod(modulePath, "(devel)")}, "unknown"},
		{[]*debug.Module{mod(modulePath, "")}, "unknown"},
		{[]*debug.Module{mod("example.com/app", "v9.9.9")}, "unknown"},
		{[]*debug.Module{mod(modulePath+"/plugin/sgprom", "v0.3.0")}, "unknown"},
	} {
		if got := versionOf(c.mods); got != c.want {
			t.Errorf("versionOf(%v) = %q, want %q", c.mods, got, c.want)
		}
	}
}

// ApiVersions allows [a-zA-Z0-9.-]: the characters just outside each range become '-'.
func TestSanitizeAtTheEdgesOfTheAlphabet(t *testing.T) {
	if got := sanitize("aAzZ09`{@[/:x"); got != "aAzZ09------x" {
		t.Errorf("sanitize = %q", got)
	}
}

// DescribeConfigs of the coordinator's broker config: a failed look-up or send is the error, named.
func TestCoordinatorConfigsFailures(t *testing.T) {
	e := newEnv(t)
	e.findCode.Store(int32(kerr.CoordinatorNotAvailable.Code))
	if _, err := e.transport().CoordinatorConfigs(context.Background(), "group.streams.session.timeout.ms"); !errors.Is(err, kerr.CoordinatorNotAvailable) ||
		!strings.Contains(err.Error(), "describing the coordinator's configs") {
		t.Fatalf("a failed look-up: %v", err)
	}
	e.findCode.Store(0)
	e.c.ControlKey(int16(kmsg.DescribeConfigs), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		return nil, errors.New("scripted connection failure"), true
	})
	if _, err := e.transport().CoordinatorConfigs(context.Background(), "group.streams.session.timeout.ms"); err == nil ||
		!strings.Contains(err.Error(), "describing the coordinator's configs") {
		t.Fatalf("a failed send: %v", err)
	}
}
