package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/coordinator"
)

// Transport sends a group's streams-group requests to its coordinator over the user's *kgo.Client
// (PROTOCOL §10: kgo cannot route them itself). It caches the coordinator, forgets it on
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and connection errors (keeps it on
// COORDINATOR_LOAD_IN_PROGRESS), and never resends a state-carrying heartbeat on its own: the
// member's state machine decides. Leaves are idempotent and retried. Safe for concurrent use.
//
// Deprecated: the I/O half moved to internal/transport (one look-up attempt per heartbeat, raw
// results for the state machine to classify). This copy stays until membership switches to it; it
// cannot forward to internal/transport, which imports this package.
type Transport struct {
	cl      *kgo.Client
	coord   *coordinator.Cache
	group   string
	timeout time.Duration
}

// NewTransport returns a transport for group; each request is bounded by requestTimeout.
func NewTransport(cl *kgo.Client, group string, requestTimeout time.Duration) *Transport {
	return &Transport{cl: cl, coord: coordinator.NewCache(cl), group: group, timeout: requestTimeout}
}

func (t *Transport) send(ctx context.Context, req kmsg.Request) (kmsg.Response, int32, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.coord.Send(ctx, t.group, req)
}

// Heartbeat sends req once. A failure to get an answer is a *TransportError; an answer is returned
// as it is, error code included (the coordinator is forgotten when the code says it moved).
func (t *Transport) Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	resp, node, err := t.send(ctx, req)
	if err != nil {
		return nil, ClassifyTransport(err)
	}
	r := resp.(*kmsg.StreamsGroupHeartbeatResponse)
	if coordinator.IsCoordinatorMoved(r.ErrorCode) {
		t.coord.Invalidate(t.group, node)
	}
	return r, nil
}

// Leave sends a leave heartbeat (epoch -1 or -2) until it is answered or ctx ends, retrying transport
// and coordinator errors after backoff. UNKNOWN_MEMBER_ID and GROUP_ID_NOT_FOUND mean the member is
// already gone, which is what a leave wants.
func (t *Transport) Leave(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, backoff Backoff) error {
	for attempt := 0; ; attempt++ {
		resp, err := t.Heartbeat(ctx, req)
		retry := false
		switch {
		case err != nil:
			var te *TransportError
			retry = errors.As(err, &te) && te.Class != Fatal
		default:
			switch kerr.ErrorForCode(resp.ErrorCode) {
			case nil, kerr.UnknownMemberID, kerr.GroupIDNotFound:
				return nil
			}
			herr := ErrorFor(resp.ErrorCode, resp.ErrorMessage)
			retry = herr.Class == Retry || herr.Class == Rediscover
			err = herr
		}
		if !retry {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("leaving the group: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(backoff.Delay(attempt)):
		}
	}
}

// Describe describes the group at its coordinator (StreamsGroupDescribe), retrying coordinator moves
// until ctx ends (coordinator.Describe). A per-group error code is returned as an *Error.
func (t *Transport) Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	g, _, err := coordinator.Describe(ctx, t.coord, t.group, false, Backoff{Min: 50 * time.Millisecond, Max: time.Second}.Delay)
	if de, ok := errors.AsType[*coordinator.DescribeError](err); ok {
		return nil, ErrorFor(de.Code, de.Message)
	}
	return g, err
}

// Capabilities asks a broker for its API versions and finalized features, once. The caller retries
// (a cluster that is still starting does not answer yet).
func (t *Transport) Capabilities(ctx context.Context) (Capabilities, error) {
	rctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, t.cl)
	if err != nil {
		return Capabilities{}, fmt.Errorf("asking the cluster for its API versions: %w", err)
	}
	return CapabilitiesFrom(resp)
}
