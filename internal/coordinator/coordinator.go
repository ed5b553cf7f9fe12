// Package coordinator finds and caches the group coordinator of a group and sends requests to it.
//
// franz-go's Client.Request cannot route streams-group requests: StreamsGroupHeartbeat is marked as a
// group-coordinator request but kgo only knows how to route the consumer and share heartbeats, and
// StreamsGroupDescribe is sent to a random broker. So the heartbeat transport and the admin package
// look the coordinator up themselves with FindCoordinator and send to that broker with
// Client.Broker(node). kgo's own coordinator cache is unexported, so we keep ours here.
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/singleflight"
)

// Cache remembers the coordinator node of each group it was asked about. Concurrent look-ups of the
// same group collapse into one FindCoordinator request. It is safe for concurrent use.
type Cache struct {
	cl    *kgo.Client
	group singleflight.Group

	mu    sync.Mutex
	nodes map[string]Broker
}

// Broker is a coordinator as FindCoordinator names it.
type Broker struct {
	Node int32
	Host string
	Port int32
}

// NewCache returns a Cache that sends FindCoordinator through cl.
func NewCache(cl *kgo.Client) *Cache {
	return &Cache{cl: cl, nodes: make(map[string]Broker)}
}

// LookupError is a FindCoordinator answer with an error code. Code is the Kafka error (a *kerr.Error
// when the code is known); Retriable says whether trying again later can help.
type LookupError struct {
	Group   string
	Code    error
	Message string
}

func (e *LookupError) Error() string {
	msg := fmt.Sprintf("finding the coordinator of group %q: %v", e.Group, e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

func (e *LookupError) Unwrap() error { return e.Code }

// Retriable reports whether the look-up may succeed later (for example while __consumer_offsets is
// still being created the broker answers COORDINATOR_NOT_AVAILABLE).
func (e *LookupError) Retriable() bool { return kerr.IsRetriable(e.Code) }

// Node returns the coordinator node of group, from the cache or by asking the cluster.
func (c *Cache) Node(ctx context.Context, group string) (int32, error) {
	b, err := c.Lookup(ctx, group)
	return b.Node, err
}

// Lookup returns the coordinator of group, from the cache or by asking the cluster.
func (c *Cache) Lookup(ctx context.Context, group string) (Broker, error) {
	c.mu.Lock()
	b, ok := c.nodes[group]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	v, err, _ := c.group.Do(group, func() (any, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 0 // group
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return Broker{}, fmt.Errorf("finding the coordinator of group %q: %w", group, err)
		}
		code, msg := resp.ErrorCode, resp.ErrorMessage
		b := Broker{Node: resp.NodeID, Host: resp.Host, Port: resp.Port}
		if len(resp.Coordinators) > 0 { // v4+: one entry per key
			co := resp.Coordinators[0]
			code, msg = co.ErrorCode, co.ErrorMessage
			b = Broker{Node: co.NodeID, Host: co.Host, Port: co.Port}
		}
		if code != 0 {
			e := &LookupError{Group: group, Code: kerr.ErrorForCode(code)}
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

// Send looks up the coordinator of group and sends req to it once, without retries: a request that
// carries member state must not be blindly resent, so the caller decides. A transport error forgets
// the coordinator, so the next call looks it up again. It returns the node it sent to.
func (c *Cache) Send(ctx context.Context, group string, req kmsg.Request) (kmsg.Response, int32, error) {
	node, err := c.Node(ctx, group)
	if err != nil {
		return nil, -1, err
	}
	resp, err := c.cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		c.Invalidate(group, node)
		return nil, node, err
	}
	return resp, node, nil
}

// IsCoordinatorMoved reports whether a response error code means the request reached a broker that
// is not (or not yet) the group's coordinator, so the coordinator must be looked up again.
func IsCoordinatorMoved(code int16) bool {
	switch kerr.ErrorForCode(code) {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress:
		return true
	}
	return false
}

// IsRetriableTransport reports whether err, returned by Send, is worth retrying against a freshly
// looked-up coordinator: a retriable FindCoordinator answer, or any failure to reach the broker
// (refused or reset connections included, because a restarting broker looks exactly like that).
// A request that timed out is retriable too. Not retriable: a closed client, a cancelled context, and
// a broker too old for the request.
func IsRetriableTransport(err error) bool {
	if err == nil {
		return false
	}
	if le, ok := errors.AsType[*LookupError](err); ok {
		return le.Retriable()
	}
	if errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) {
		return false
	}
	if IsBrokerTooOld(err) {
		return false
	}
	if _, ok := errors.AsType[*kerr.Error](err); ok {
		return kerr.IsRetriable(err)
	}
	return true
}

// IsBrokerTooOld reports whether kgo refused to send because the broker does not advertise the
// request key or version (kgo reports this as an unexported error whose text we match).
func IsBrokerTooOld(err error) bool {
	return err != nil && strings.Contains(err.Error(), "broker is too old")
}
