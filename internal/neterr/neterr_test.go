package neterr

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// What is worth retrying against a freshly looked-up coordinator, and what is not.
func TestIsRetriableTransport(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{kgo.ErrClientClosed, false},
		{fmt.Errorf("sending: %w", kgo.ErrClientClosed), false},
		{errors.New("broker is too old; the broker has a max version of -1"), false},
		{kerr.GroupAuthorizationFailed, false},
		{&LookupError{Group: "g", Code: kerr.GroupAuthorizationFailed}, false},
		{context.DeadlineExceeded, true},
		{errors.New("connection reset"), true},
		{kerr.RequestTimedOut, true},
		{&LookupError{Group: "g", Code: kerr.CoordinatorNotAvailable}, true},
	} {
		if got := IsRetriableTransport(c.err); got != c.want {
			t.Errorf("IsRetriableTransport(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestLookupErrorNamesTheGroupAndUnwraps(t *testing.T) {
	err := error(&LookupError{Group: "g", Code: kerr.CoordinatorNotAvailable, Message: "loading"})
	if got, want := err.Error(), `finding the coordinator of group "g": `+kerr.CoordinatorNotAvailable.Error()+": loading"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Error("a LookupError does not unwrap to its code")
	}
	if IsBrokerTooOld(err) || !IsBrokerTooOld(errors.New("broker is too old")) || IsBrokerTooOld(nil) {
		t.Error("IsBrokerTooOld")
	}
}

// Only NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE say the coordinator moved; a loading one has
// not, nor has any other code.
func TestIsCoordinatorMoved(t *testing.T) {
	for code, want := range map[int16]bool{
		kerr.NotCoordinator.Code: true, kerr.CoordinatorNotAvailable.Code: true,
		0: false, -1: false, kerr.CoordinatorLoadInProgress.Code: false, kerr.UnknownMemberID.Code: false, 9999: false,
	} {
		if got := IsCoordinatorMoved(code); got != want {
			t.Errorf("IsCoordinatorMoved(%d) = %v, want %v", code, got, want)
		}
	}
}
