package coordinator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeCluster is a kfake cluster that counts FindCoordinator requests and can be told to fail them.
func fakeCluster(t *testing.T, fail *atomic.Int32) (*kgo.Client, *atomic.Int64) {
	t.Helper()
	var finds atomic.Int64
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.FindCoordinator), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		finds.Add(1)
		if fail != nil && fail.Load() != 0 {
			r := req.(*kmsg.FindCoordinatorRequest).ResponseKind().(*kmsg.FindCoordinatorResponse)
			for _, k := range req.(*kmsg.FindCoordinatorRequest).CoordinatorKeys {
				r.Coordinators = append(r.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: k, ErrorCode: int16(fail.Load())})
			}
			r.ErrorCode = int16(fail.Load())
			return r, nil, true
		}
		return nil, nil, false // let the fake cluster answer
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, &finds
}

func TestCacheLooksUpOnceAndCollapsesConcurrentLookups(t *testing.T) {
	cl, finds := fakeCluster(t, nil)
	c := NewCache(cl)
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
	if got := finds.Load(); got != 1 {
		t.Fatalf("%d FindCoordinator requests for 16 concurrent look-ups, want 1", got)
	}
	b, err := c.Lookup(ctx, "g")
	if err != nil || b.Node != nodes[0] || b.Host == "" || b.Port == 0 {
		t.Fatalf("Lookup = %+v, %v", b, err)
	}
	c.Invalidate("g", b.Node+100) // another node: kept
	c.Node(ctx, "g")
	if finds.Load() != 1 {
		t.Fatal("invalidating another node must keep the cached coordinator")
	}
	c.Invalidate("g", b.Node)
	c.Node(ctx, "g")
	if finds.Load() != 2 {
		t.Fatal("after Invalidate the coordinator must be looked up again")
	}
}

func TestLookupErrorIsTypedAndRetriable(t *testing.T) {
	var fail atomic.Int32
	fail.Store(int32(kerr.CoordinatorNotAvailable.Code))
	cl, _ := fakeCluster(t, &fail)
	c := NewCache(cl)
	_, err := c.Node(context.Background(), "g")
	var le *LookupError
	if !errors.As(err, &le) || !le.Retriable() || !errors.Is(err, kerr.CoordinatorNotAvailable) || !IsRetriableTransport(err) {
		t.Fatalf("got %v", err)
	}
	fail.Store(int32(kerr.GroupAuthorizationFailed.Code))
	_, err = c.Node(context.Background(), "g")
	if IsRetriableTransport(err) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("an authorization failure is not retriable: %v", err)
	}
}

func TestSendReachesTheCoordinator(t *testing.T) {
	cl, _ := fakeCluster(t, nil)
	c := NewCache(cl)
	req := kmsg.NewPtrListGroupsRequest() // any request the fake brokers answer
	resp, node, err := c.Send(context.Background(), "g", req)
	if err != nil || resp == nil || node < 0 {
		t.Fatalf("Send = %v, %d, %v", resp, node, err)
	}
}

func TestClassification(t *testing.T) {
	if !IsCoordinatorMoved(int16(kerr.NotCoordinator.Code)) || !IsCoordinatorMoved(int16(kerr.CoordinatorLoadInProgress.Code)) ||
		IsCoordinatorMoved(0) || IsCoordinatorMoved(int16(kerr.FencedMemberEpoch.Code)) {
		t.Fatal("IsCoordinatorMoved")
	}
	if IsRetriableTransport(nil) || IsRetriableTransport(context.Canceled) || IsRetriableTransport(kgo.ErrClientClosed) ||
		!IsRetriableTransport(context.DeadlineExceeded) || !IsRetriableTransport(errors.New("connection reset")) ||
		IsRetriableTransport(errors.New("broker is too old; the broker has a max version of -1")) {
		t.Fatal("IsRetriableTransport")
	}
}
