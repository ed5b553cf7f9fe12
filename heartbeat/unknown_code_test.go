package heartbeat

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// An error code kerr does not know keeps its number in every message; it is not UNKNOWN_SERVER_ERROR.
func TestUnknownErrorCodeKeepsItsNumber(t *testing.T) {
	for _, code := range []int16{9999, 12345, -2, 32767} {
		e := ErrorFor(code, nil)
		var u *UnknownCodeError
		if !errors.As(e, &u) || u.Code != code || e.Class != Fatal {
			t.Errorf("code %d: %#v", code, e)
			continue
		}
		want := "unknown error code " + strconv.Itoa(int(code))
		if msg := e.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "UNKNOWN_SERVER_ERROR") {
			t.Errorf("code %d: %q, want it to say %q", code, msg, want)
		}
		if errors.Is(e, kerr.UnknownServerError) {
			t.Errorf("code %d is not UNKNOWN_SERVER_ERROR (-1)", code)
		}
	}
	// -1 itself stays UNKNOWN_SERVER_ERROR, and known codes stay their kerr errors.
	if err := KafkaError(-1); err != kerr.UnknownServerError {
		t.Errorf("KafkaError(-1) = %v", err)
	}
	if err := KafkaError(kerr.FencedMemberEpoch.Code); err != kerr.FencedMemberEpoch {
		t.Errorf("KafkaError(110) = %v", err)
	}
	if KafkaError(0) != nil {
		t.Error("KafkaError(0) must be nil")
	}
}
