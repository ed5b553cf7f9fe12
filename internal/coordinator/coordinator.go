// Package coordinator finds and caches the group coordinator of a group, sends requests to it, and
// describes a streams group with retries (the one implementation the transport and admin share).
//
// franz-go's Client.Request cannot route streams-group requests: StreamsGroupHeartbeat is marked as a
// group-coordinator request but kgo only knows how to route the consumer and share heartbeats, and
// StreamsGroupDescribe is sent to a random broker. So the heartbeat transport and the admin package
// look the coordinator up themselves with FindCoordinator and send to that broker with
// Client.Broker(node). kgo's own coordinator cache is unexported, so we keep ours here.
//
// A look-up is one FindCoordinator request to one broker, never retried here or inside kgo (it goes
// through (*kgo.Broker).Request, not Client.Request, whose retries run on kgo's own schedule of
// 250 ms doubling to 5 s and would make retry.backoff.ms meaningless). The caller paces retries: the
// member's heartbeat backoff, or the delay given to Describe.
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/singleflight"

	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

// Cache remembers the coordinator node of each group it was asked about. Concurrent look-ups of the
// same group collapse into one FindCoordinator request. It is safe for concurrent use.
type Cache struct {
	cl      *kgo.Client
	group   singleflight.Group
	timeout time.Duration // bounds each request; 0: only the caller's context does
	next    atomic.Uint32 // rotates the broker a look-up goes to

	mu    sync.Mutex
	nodes map[string]Broker
}

// Broker is a coordinator as FindCoordinator names it.
type Broker struct {
	Node int32
	Host string
	Port int32
}

// Option configures a Cache.
type Option func(*Cache)

// RequestTimeout bounds each request the Cache sends (a look-up, a request to the coordinator) by d,
// on top of the caller's context. Zero or less: the caller's context alone.
func RequestTimeout(d time.Duration) Option { return func(c *Cache) { c.timeout = d } }

// NewCache returns a Cache that sends FindCoordinator and requests through cl.
func NewCache(cl *kgo.Client, opts ...Option) *Cache {
	c := &Cache{cl: cl, nodes: make(map[string]Broker)}
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *Cache) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return ctx, func() {}
}

// AnyBroker returns a broker to send a request that any broker answers: one of the brokers the
// client has discovered, or of its seed brokers before it discovered any, rotating from call to call
// so that a broker that stopped answering does not get every attempt. Nil when the client has none.
func (c *Cache) AnyBroker() *kgo.Broker {
	bs := c.cl.DiscoveredBrokers()
	if len(bs) == 0 {
		bs = c.cl.SeedBrokers()
	}
	if len(bs) == 0 {
		return nil
	}
	i := c.next.Add(1) - 1
	return bs[i%uint32(len(bs))]
}

// ErrNoBroker is returned when the client knows no broker at all to ask.
var ErrNoBroker = errors.New("the client knows no broker (no seed brokers and none discovered)")

// Node returns the coordinator node of group, from the cache or by asking the cluster.
func (c *Cache) Node(ctx context.Context, group string) (int32, error) {
	b, err := c.Lookup(ctx, group)
	return b.Node, err
}

// Cached returns the cached coordinator of group, without asking the cluster.
func (c *Cache) Cached(group string) (Broker, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.nodes[group]
	return b, ok
}

// Lookup returns the coordinator of group from the cache, or asks the cluster: one FindCoordinator
// request to one broker (AnyBroker), without retries. Concurrent look-ups of one group share that
// request. A failure is returned as it is (a *neterr.LookupError for an answer with an error code); the
// next call tries again, through the next broker.
func (c *Cache) Lookup(ctx context.Context, group string) (Broker, error) {
	if b, ok := c.Cached(group); ok {
		return b, nil
	}
	v, err, _ := c.group.Do(group, func() (any, error) {
		br := c.AnyBroker()
		if br == nil {
			return Broker{}, fmt.Errorf("finding the coordinator of group %q: %w", group, ErrNoBroker)
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 0 // group
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		rctx, cancel := c.bound(ctx)
		kresp, err := br.Request(rctx, req)
		cancel()
		if err != nil {
			return Broker{}, fmt.Errorf("finding the coordinator of group %q: %w", group, err)
		}
		resp := kresp.(*kmsg.FindCoordinatorResponse)
		code, msg := resp.ErrorCode, resp.ErrorMessage
		b := Broker{Node: resp.NodeID, Host: resp.Host, Port: resp.Port}
		if len(resp.Coordinators) > 0 { // v4+: one entry per key
			co := resp.Coordinators[0]
			code, msg = co.ErrorCode, co.ErrorMessage
			b = Broker{Node: co.NodeID, Host: co.Host, Port: co.Port}
		}
		if code != 0 {
			e := &neterr.LookupError{Group: group, Code: kerr.ErrorForCode(code)}
			if msg != nil {
				e.Message = *msg
			}
			return Broker{}, e
		}
		c.mu.Lock()
		c.nodes[group] = b
		c.mu.Unlock()
		return b, nil
	})
	if err != nil {
		return Broker{}, err
	}
	return v.(Broker), nil
}

// Invalidate forgets the coordinator of group if it is still node (a newer look-up is kept).
func (c *Cache) Invalidate(group string, node int32) {
	c.mu.Lock()
	if cur, ok := c.nodes[group]; ok && cur.Node == node {
		delete(c.nodes, group)
	}
	c.mu.Unlock()
}

// Send looks up the coordinator of group (at most one FindCoordinator attempt, see Lookup) and sends
// req to it once, without retries: a request that carries member state must not be blindly resent,
// so the caller decides. A transport error forgets the coordinator, so the next call looks it up
// again. It returns the node it sent to (-1 when the look-up failed). Error codes in the answer are
// the caller's to read; see neterr.IsCoordinatorMoved.
func (c *Cache) Send(ctx context.Context, group string, req kmsg.Request) (kmsg.Response, int32, error) {
	node, err := c.Node(ctx, group)
	if err != nil {
		return nil, -1, err
	}
	rctx, cancel := c.bound(ctx)
	defer cancel()
	resp, err := c.cl.Broker(int(node)).Request(rctx, req)
	if err != nil {
		c.Invalidate(group, node)
		return nil, node, err
	}
	return resp, node, nil
}

// IsCoordinatorBusy reports whether a response error code means the request can be retried against
// the coordinator of the group: it moved (neterr.IsCoordinatorMoved) or it is loading the group
// (COORDINATOR_LOAD_IN_PROGRESS).
func IsCoordinatorBusy(code int16) bool {
	return neterr.IsCoordinatorMoved(code) || code == kerr.CoordinatorLoadInProgress.Code
}
