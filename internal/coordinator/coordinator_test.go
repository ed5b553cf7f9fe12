package coordinator

import (
	"context"
	"errors"
	"net"
	"slices"
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
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"

	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

// fake is a three-broker kfake cluster whose FindCoordinator requests are counted (and the nodes that
// got them recorded) and can be made to fail: with an error code (fail > 0) or by closing the
// connection (fail < 0).
type fake struct {
	c     *kfake.Cluster
	cl    *kgo.Client
	fail  atomic.Int32
	finds atomic.Int64

	mu    sync.Mutex
	nodes []int32 // the node of each FindCoordinator
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.c = c
	c.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		f.finds.Add(1)
		f.mu.Lock()
		f.nodes = append(f.nodes, c.CurrentNode())
		f.mu.Unlock()
		switch code := f.fail.Load(); {
		case code < 0:
			return nil, errors.New("scripted connection failure"), true
		case code > 0:
			fr := req.(*kmsg.FindCoordinatorRequest)
			r := fr.ResponseKind().(*kmsg.FindCoordinatorResponse)
			for _, k := range fr.CoordinatorKeys {
				r.Coordinators = append(r.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: k, ErrorCode: int16(code)})
			}
			r.ErrorCode = int16(code)
			return r, nil, true
		}
		return nil, nil, false // let the fake cluster answer
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	f.cl = cl
	return f
}

func (f *fake) lookupNodes() []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int32(nil), f.nodes...)
}

func TestCacheLooksUpOnceAndCollapsesConcurrentLookups(t *testing.T) {
	f := newFake(t)
	c := NewCache(f.cl)
	ctx := context.Background()
	var wg sync.WaitGroup
	nodes := make([]int32, 16)
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.Node(ctx, "g")
			if err != nil {
				t.Error(err)
			}
			nodes[i] = n
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n != nodes[0] {
			t.Fatalf("different coordinators for one group: %v", nodes)
		}
	}
	if got := f.finds.Load(); got != 1 {
		t.Fatalf("%d FindCoordinator requests for 16 concurrent look-ups, want 1", got)
	}
	if want := f.c.CoordinatorFor("g"); nodes[0] != want {
		t.Fatalf("coordinator %d, the cluster says %d", nodes[0], want)
	}
	b, err := c.Lookup(ctx, "g")
	if err != nil || b.Node != nodes[0] || b.Host == "" || b.Port == 0 {
		t.Fatalf("Lookup = %+v, %v", b, err)
	}
	if cb, ok := c.Cached("g"); !ok || cb != b || !cached(c, "g") || cached(c, "other") {
		t.Fatalf("Cached = %+v, %v; Known(g) = %v", cb, ok, cached(c, "g"))
	}
	c.Invalidate("g", b.Node+100) // another node: kept
	c.Node(ctx, "g")
	if f.finds.Load() != 1 || !cached(c, "g") {
		t.Fatal("invalidating another node must keep the cached coordinator")
	}
	c.Invalidate("g", b.Node)
	if cached(c, "g") {
		t.Fatal("Invalidate must forget the coordinator")
	}
	c.Node(ctx, "g")
	if f.finds.Load() != 2 {
		t.Fatal("after Invalidate the coordinator must be looked up again")
	}
}

// A look-up is one FindCoordinator request, whatever goes wrong: kgo must not retry it on its own
// schedule (issue 9 item 1.11). Each failed look-up goes to the next broker.
func TestLookupIsOneAttemptRotatingBrokers(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail int32
		is   func(error) bool
	}{
		{"error code", int32(kerr.CoordinatorNotAvailable.Code), func(err error) bool {
			le, ok := errors.AsType[*neterr.LookupError](err)
			return ok && le.Retriable() && errors.Is(err, kerr.CoordinatorNotAvailable)
		}},
		{"connection closed", -1, func(err error) bool { _, ok := errors.AsType[*neterr.LookupError](err); return !ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.fail.Store(tc.fail)
			c := NewCache(f.cl)
			for i := 1; i <= 3; i++ {
				_, err := c.Lookup(context.Background(), "g")
				if err == nil || !tc.is(err) || !neterr.IsRetriableTransport(err) || !strings.Contains(err.Error(), `"g"`) {
					t.Fatalf("look-up %d: %v", i, err)
				}
				if got := f.finds.Load(); got != int64(i) {
					t.Fatalf("after %d failed look-ups %d FindCoordinator requests, want %d", i, got, i)
				}
				if cached(c, "g") {
					t.Fatal("a failed look-up must not cache anything")
				}
			}
			nodes := f.lookupNodes()
			if nodes[0] == nodes[1] || nodes[1] == nodes[2] || nodes[0] == nodes[2] {
				t.Errorf("three look-ups went to brokers %v; each must try the next", nodes)
			}
			f.fail.Store(0)
			if _, err := c.Lookup(context.Background(), "g"); err != nil || !cached(c, "g") {
				t.Fatalf("the next look-up must succeed and be cached: %v", err)
			}
		})
	}
}

func TestLookupErrorIsTypedAndRetriable(t *testing.T) {
	f := newFake(t)
	f.fail.Store(int32(kerr.CoordinatorNotAvailable.Code))
	c := NewCache(f.cl)
	_, err := c.Node(context.Background(), "g")
	var le *neterr.LookupError
	if !errors.As(err, &le) || !le.Retriable() || !errors.Is(err, kerr.CoordinatorNotAvailable) || !neterr.IsRetriableTransport(err) {
		t.Fatalf("got %v", err)
	}
	if le.Group != "g" || !strings.Contains(le.Error(), "COORDINATOR_NOT_AVAILABLE") {
		t.Fatalf("the error names the group and the code: %v", le)
	}
	f.fail.Store(int32(kerr.GroupAuthorizationFailed.Code))
	_, err = c.Node(context.Background(), "g")
	if neterr.IsRetriableTransport(err) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("an authorization failure is not retriable: %v", err)
	}
}

func TestLookupWithoutBrokers(t *testing.T) {
	// A client whose only seed is unreachable still has that seed; the look-up fails after one
	// attempt to reach it, not retried here or inside kgo (the caller paces retries).
	var dials atomic.Int32
	refuse := func(ctx context.Context, network, host string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.Dialer(refuse))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := NewCache(cl, RequestTimeout(2*time.Second))
	if _, err := c.Lookup(context.Background(), "g"); err == nil || !neterr.IsRetriableTransport(err) {
		t.Fatalf("an unreachable broker is a retriable failure: %v", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("one look-up dialled the seed %d times, want once", n)
	}
	if c.AnyBroker() == nil {
		t.Fatal("a seed broker is a broker to ask")
	}
}

func TestRequestTimeoutBoundsEachRequest(t *testing.T) {
	f := newFake(t)
	// A FindCoordinator that is never answered.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.c.ControlKey(int16(kmsg.FindCoordinator), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.c.SleepControl(func() { <-release })
		return nil, errors.New("released"), true
	})
	f.fail.Store(0)
	c := NewCache(f.cl, RequestTimeout(200*time.Millisecond))
	// The caller's ctx has no deadline, and the answer never comes until the test ends: only the
	// request timeout can end the look-up with DeadlineExceeded (without it the test would hang).
	_, err := c.Lookup(context.Background(), "g")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a look-up past the request timeout: %v", err)
	}
}

func TestSendReachesTheCoordinator(t *testing.T) {
	f := newFake(t)
	c := NewCache(f.cl)
	req := kmsg.NewPtrListGroupsRequest() // any request the fake brokers answer
	resp, node, err := c.Send(context.Background(), "g", req)
	if err != nil || resp == nil || node != f.c.CoordinatorFor("g") {
		t.Fatalf("Send = %v, %d, %v", resp, node, err)
	}
	f.fail.Store(int32(kerr.CoordinatorNotAvailable.Code))
	c.Invalidate("g", node)
	if _, node, err := c.Send(context.Background(), "g", req); err == nil || node != -1 {
		t.Fatalf("a failed look-up sends nothing: %d, %v", node, err)
	}
}

func TestSendFailureForgetsTheCoordinator(t *testing.T) {
	f := newFake(t)
	c := NewCache(f.cl)
	f.c.ControlKey(int16(kmsg.ListGroups), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errors.New("scripted connection failure"), true // once
	})
	_, node, err := c.Send(context.Background(), "g", kmsg.NewPtrListGroupsRequest())
	if err == nil || node < 0 {
		t.Fatalf("Send = %d, %v", node, err)
	}
	if cached(c, "g") {
		t.Fatal("a failed send must forget the coordinator")
	}
}

func TestClassification(t *testing.T) {
	moved := map[int16]bool{kerr.NotCoordinator.Code: true, kerr.CoordinatorNotAvailable.Code: true}
	busy := map[int16]bool{kerr.NotCoordinator.Code: true, kerr.CoordinatorNotAvailable.Code: true, kerr.CoordinatorLoadInProgress.Code: true}
	for _, code := range []int16{0, -1, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code,
		kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code, kerr.GroupIDNotFound.Code, 9999} {
		if neterr.IsCoordinatorMoved(code) != moved[code] {
			t.Errorf("IsCoordinatorMoved(%d) = %v", code, !moved[code])
		}
		if IsCoordinatorBusy(code) != busy[code] {
			t.Errorf("IsCoordinatorBusy(%d) = %v", code, !busy[code])
		}
	}
}

// --- Describe ---

// describeFake is newFake with StreamsGroupDescribe advertised and answered by script: each request
// takes the next code (the last one repeats); 0 answers the group.
func describeFake(t *testing.T, codes ...int16) (*fake, *atomic.Int64) {
	t.Helper()
	f := newFake(t)
	if err := kfakestreams.Advertise(context.Background(), f.c, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	f.c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.c.KeepControl()
		i := n.Add(1) - 1
		code := codes[min(int(i), len(codes)-1)]
		r := req.(*kmsg.StreamsGroupDescribeRequest)
		resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range r.Groups {
			msg := "scripted"
			resp.Groups = append(resp.Groups, kmsg.StreamsGroupDescribeResponseGroup{
				Group: g, ErrorCode: code, ErrorMessage: &msg, State: "Stable", Epoch: 7,
				AuthorizedOperations: map[bool]int32{true: 8, false: -2147483648}[r.IncludeAuthorizedOperations],
			})
		}
		return resp, nil, true
	})
	return f, &n
}

func TestDescribeRetriesMovesAndLoadsAndKeepsALoadingCoordinator(t *testing.T) {
	f, describes := describeFake(t, kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, 0)
	c := NewCache(f.cl)
	var attempts []int
	g, node, err := Describe(context.Background(), c, "g", true, func(n int) time.Duration {
		attempts = append(attempts, n)
		return time.Millisecond
	})
	if err != nil || g == nil || g.Group != "g" || g.Epoch != 7 || g.AuthorizedOperations != 8 || node != f.c.CoordinatorFor("g") {
		t.Fatalf("Describe = %+v, %d, %v", g, node, err)
	}
	if got := describes.Load(); got != 5 {
		t.Fatalf("%d describes, want 5", got)
	}
	if len(attempts) != 4 || attempts[0] != 0 || attempts[3] != 3 {
		t.Fatalf("delays asked for attempts %v, want [0 1 2 3]", attempts)
	}
	// First look-up, then one after each move (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE); none after
	// a load.
	if got := f.finds.Load(); got != 3 {
		t.Fatalf("%d look-ups, want 3: a loading coordinator is kept, a moved one looked up again", got)
	}
}

func TestDescribeWaitsTheDelay(t *testing.T) {
	// The broker would answer on the third describe; the delay before the first retry is an hour, so
	// a Describe that waits it sends one describe and ends with ctx. One that skipped the wait would
	// retry at once and succeed. The ctx deadline only ends the test; nothing measures time.
	f, describes := describeFake(t, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorLoadInProgress.Code, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var asked []int
	g, _, err := Describe(ctx, NewCache(f.cl), "g", false, func(n int) time.Duration { asked = append(asked, n); return time.Hour })
	if g != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "COORDINATOR_LOAD_IN_PROGRESS") {
		t.Fatalf("Describe = %v, %v; want the ctx's end while waiting the delay", g, err)
	}
	if n := describes.Load(); n != 1 || !slices.Equal(asked, []int{0}) {
		t.Fatalf("%d describes and delays asked for %v while an hour's delay ran, want 1 and [0]", n, asked)
	}
}

func TestDescribeErrors(t *testing.T) {
	f, describes := describeFake(t, kerr.GroupIDNotFound.Code)
	_, _, err := Describe(context.Background(), NewCache(f.cl), "g", false, func(int) time.Duration { return time.Millisecond })
	de, ok := errors.AsType[*DescribeError](err)
	if !ok || de.Group != "g" || de.Code != kerr.GroupIDNotFound.Code || !errors.Is(err, kerr.GroupIDNotFound) ||
		!strings.Contains(err.Error(), "scripted") || !strings.Contains(err.Error(), `"g"`) || describes.Load() != 1 {
		t.Fatalf("a group error is a *DescribeError at once: %v (%d describes)", err, describes.Load())
	}
	if s := (&DescribeError{Group: "g", Code: kerr.GroupIDNotFound.Code}).Error(); strings.HasSuffix(s, ": ") {
		t.Errorf("no message: %q", s)
	}

	// The context ends while the coordinator keeps loading: the error says both.
	f, _ = describeFake(t, kerr.CoordinatorLoadInProgress.Code)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, node, err := Describe(ctx, NewCache(f.cl), "g", false, func(int) time.Duration { return 20 * time.Millisecond })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "COORDINATOR_LOAD_IN_PROGRESS") || node != -1 {
		t.Fatalf("ctx ended: %d, %v", node, err)
	}

	// A broker that does not know StreamsGroupDescribe: not retried.
	plain := newFake(t)
	var delays atomic.Int32
	_, _, err = Describe(context.Background(), NewCache(plain.cl), "g", false, func(int) time.Duration { delays.Add(1); return time.Millisecond })
	if err == nil || !neterr.IsBrokerTooOld(err) || delays.Load() != 0 {
		t.Fatalf("an unknown API fails at once: %v after %d delays", err, delays.Load())
	}
}

func TestDescribeAnswerWithTwoGroups(t *testing.T) {
	f := newFake(t)
	if err := kfakestreams.Advertise(context.Background(), f.c, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	f.c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		resp.Groups = make([]kmsg.StreamsGroupDescribeResponseGroup, 2)
		return resp, nil, true
	})
	_, _, err := Describe(context.Background(), NewCache(f.cl), "g", false, func(int) time.Duration { return time.Millisecond })
	if err == nil || !strings.Contains(err.Error(), "2 groups") {
		t.Fatalf("got %v", err)
	}
}

// A context that ended before the first attempt: the error is the context's, with no last failure
// to name, and no node answered.
func TestDescribeWithAnEndedContext(t *testing.T) {
	f, describes := describeFake(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g, node, err := Describe(ctx, NewCache(f.cl), "g", false, func(int) time.Duration { return time.Millisecond })
	if g != nil || node != -1 || !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "last error") {
		t.Fatalf("Describe = %v, %d, %v; want no group, node -1 and the context's error alone", g, node, err)
	}
	if n := describes.Load(); n != 0 {
		t.Fatalf("%d describes sent with an ended context", n)
	}
}

// Before it discovered any broker the client has only its seeds: AnyBroker goes through them in
// order, starting with the first, and around again.
func TestAnyBrokerRotatesFromTheFirstSeed(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	cache := NewCache(cl)
	seeds := cl.SeedBrokers()
	for i := range 4 {
		got, want := cache.AnyBroker(), seeds[i%len(seeds)]
		if len(cl.DiscoveredBrokers()) == 0 && *got != *want { // a kgo.Broker is its node ID and client
			t.Fatalf("call %d: AnyBroker gave %+v, want seed %d (%+v)", i, *got, i%len(seeds), *want)
		}
	}
}

// A FindCoordinator answer below v4 carries the coordinator at the top level, with no per-key
// entries: it is read from there.
func TestLookupReadsAnAnswerBelowV4(t *testing.T) {
	f := newFake(t)
	want := f.c.CoordinatorFor("g")
	f.c.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.c.KeepControl()
		r := req.(*kmsg.FindCoordinatorRequest).ResponseKind().(*kmsg.FindCoordinatorResponse)
		r.NodeID, r.Host, r.Port = want, "127.0.0.1", 9
		return r, nil, true
	})
	// Kafka 2.8 knows FindCoordinator up to v3: kgo sends v3, and the answer's top-level fields
	// reach the cache.
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.c.ListenAddrs()...), kgo.MaxVersions(kversion.V2_8_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	b, err := NewCache(cl).Lookup(context.Background(), "g")
	if err != nil || b != (Broker{Node: want, Host: "127.0.0.1", Port: 9}) {
		t.Fatalf("Lookup = %+v, %v; want node %d from the top-level fields", b, err, want)
	}
}

// cached reports whether c holds the coordinator of group.
func cached(c *Cache, group string) bool {
	_, ok := c.Cached(group)
	return ok
}

// A deadline that passed before the first attempt: the look-up fails with it, which may pass, so
// Describe waits for the delay and finds the context ended; no node answered and there is no
// failure of the broker's to name.
func TestDescribeWithAPassedDeadline(t *testing.T) {
	f, describes := describeFake(t, 0)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	g, node, err := Describe(ctx, NewCache(f.cl), "g", false, func(int) time.Duration { return time.Hour })
	if g != nil || node != -1 || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "last error") {
		t.Fatalf("Describe = %v, %d, %v; want no group, node -1 and the deadline alone", g, node, err)
	}
	if n := describes.Load(); n != 0 {
		t.Fatalf("%d describes sent after the deadline", n)
	}
}
