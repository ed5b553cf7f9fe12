// Package neterr classifies the errors of reaching a broker: a failed coordinator look-up, a broken
// connection, a broker too old for a request. It is a leaf (kerr and kgo only) so that heartbeat,
// which reads such errors, and internal/coordinator, which produces them, both depend on it and
// neither on the other.
package neterr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

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

// Unwrap returns the Kafka error.
func (e *LookupError) Unwrap() error { return e.Code }

// Retriable reports whether the look-up may succeed later (for example while __consumer_offsets is
// still being created the broker answers COORDINATOR_NOT_AVAILABLE).
func (e *LookupError) Retriable() bool { return kerr.IsRetriable(e.Code) }

// IsRetriableTransport reports whether err, returned by a request sent to a group coordinator, is worth retrying against a freshly
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

// IsCoordinatorMoved reports whether a response error code means the request reached a broker that
// is not the group's coordinator (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE), so the cached
// coordinator must be forgotten and looked up again. COORDINATOR_LOAD_IN_PROGRESS is not a move:
// the broker is the coordinator and is still loading the group, so the coordinator is kept and the
// request retried after a backoff, as the Java client does
// (StreamsGroupHeartbeatRequestManager.onErrorResponse). The coordinator cache forgets on exactly
// these codes, and the member's state machine reads them as "no coordinator known" for the leave.
func IsCoordinatorMoved(code int16) bool {
	switch kerr.ErrorForCode(code) {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable:
		return true
	}
	return false
}
