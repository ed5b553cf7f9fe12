package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

// DescribeError is a StreamsGroupDescribe answer whose group carries an error code that retrying
// cannot fix (GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED, …). It unwraps to the Kafka error.
type DescribeError struct {
	Group   string
	Code    int16
	Message *string // the broker's ErrorMessage, if any
}

func (e *DescribeError) Error() string {
	msg := fmt.Sprintf("describing streams group %q: %v", e.Group, kerr.ErrorForCode(e.Code))
	if e.Message != nil && *e.Message != "" {
		msg += ": " + *e.Message
	}
	return msg
}

// Unwrap returns the Kafka error of the code.
func (e *DescribeError) Unwrap() error { return kerr.ErrorForCode(e.Code) }

// Describe describes group at its coordinator (StreamsGroupDescribe) and returns the group's entry
// and the node that answered. It is the one describe-with-retry of the module: the member's transport
// and the admin client both use it.
//
// It retries, until ctx ends, whatever a later attempt can fix: a coordinator that moved (forgotten
// and looked up again, one look-up per attempt), one that is loading the group (kept), a failed
// look-up with a retriable code, and any failure to reach the broker (neterr.IsRetriableTransport).
// Before retry number n (0 for the first) it waits delay(n); delay must stay bounded and positive for
// large n (heartbeat.Backoff.Delay does), or Describe would spin against the broker. Other error codes of
// the group are a *DescribeError; an answer naming other than one group is an error; a transport
// error that cannot be retried is returned as it is. When ctx ends the error wraps ctx.Err() and
// names the last failure.
func Describe(ctx context.Context, c *Cache, group string, includeOps bool,
	delay func(attempt int) time.Duration) (*kmsg.StreamsGroupDescribeResponseGroup, int32, error) {
	var last error // the last failure before ctx ended
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{group}
		req.IncludeAuthorizedOperations = includeOps
		resp, node, err := c.Send(ctx, group, req)
		if err == nil {
			groups := resp.(*kmsg.StreamsGroupDescribeResponse).Groups
			if len(groups) != 1 {
				return nil, node, fmt.Errorf("describing streams group %q: the coordinator answered %d groups for one", group, len(groups))
			}
			g := groups[0]
			switch {
			case g.ErrorCode == 0:
				return &g, node, nil
			case neterr.IsCoordinatorMoved(g.ErrorCode):
				c.Invalidate(group, node)
				err = kerr.ErrorForCode(g.ErrorCode)
			case IsCoordinatorBusy(g.ErrorCode): // loading: same coordinator, later
				err = kerr.ErrorForCode(g.ErrorCode)
			default:
				return nil, node, &DescribeError{Group: group, Code: g.ErrorCode, Message: g.ErrorMessage}
			}
		} else if !neterr.IsRetriableTransport(err) {
			return nil, node, err
		}
		if ctx.Err() == nil {
			last = err
		}
		t := time.NewTimer(delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			if last == nil {
				return nil, -1, fmt.Errorf("describing streams group %q: %w", group, ctx.Err())
			}
			return nil, -1, fmt.Errorf("describing streams group %q: %w (last error: %v)", group, ctx.Err(), last)
		case <-t.C:
		}
	}
}
