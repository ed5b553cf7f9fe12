package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

func TestErrorText(t *testing.T) {
	msg := "the broker says so"
	cases := []struct {
		e    *Error
		want string
	}{
		{&Error{Kafka: kerr.NotCoordinator}, "streams group heartbeat: " + kerr.NotCoordinator.Error()},
		{&Error{Kafka: kerr.NotCoordinator, BrokerMessage: msg}, "streams group heartbeat: " + kerr.NotCoordinator.Error() + ` (broker: "the broker says so")`},
		{&Error{Kafka: kerr.NotCoordinator, Action: "do this"}, "streams group heartbeat: " + kerr.NotCoordinator.Error() + ": do this"},
		{&Error{Kafka: kerr.NotCoordinator, BrokerMessage: msg, Action: "do this"},
			"streams group heartbeat: " + kerr.NotCoordinator.Error() + ` (broker: "the broker says so"): do this`},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	e := ErrorFor(kerr.GroupAuthorizationFailed.Code, &msg)
	if e.Code != kerr.GroupAuthorizationFailed.Code || e.BrokerMessage != msg || e.Kafka != kerr.GroupAuthorizationFailed ||
		e.Error() != fmt.Sprintf("streams group heartbeat: %v (broker: %q): %s", kerr.GroupAuthorizationFailed, msg, e.Action) {
		t.Errorf("ErrorFor: %+v %q", e, e.Error())
	}
	if e := ErrorFor(kerr.NotCoordinator.Code, nil); e.BrokerMessage != "" || e.Action != "" {
		t.Errorf("no broker message, no action: %+v", e)
	}
}

func TestErrorUnwrap(t *testing.T) {
	plain := ErrorFor(kerr.GroupAuthorizationFailed.Code, nil)
	if u := plain.Unwrap(); len(u) != 1 || u[0] != kerr.GroupAuthorizationFailed {
		t.Errorf("a plain error unwraps to its Kafka error only: %v", u)
	}
	if errors.Is(plain, ErrNotSupported) || errors.Is(plain, ErrTopologyMismatch) {
		t.Error("no kind")
	}
	unsupported := ErrorFor(kerr.UnsupportedVersion.Code, nil)
	if u := unsupported.Unwrap(); len(u) != 2 || u[0] != kerr.UnsupportedVersion || u[1] != ErrNotSupported {
		t.Errorf("unwraps to the Kafka error and the kind: %v", u)
	}
	topo := "Topology updates are not supported yet."
	mismatch := ErrorFor(kerr.InvalidRequest.Code, &topo)
	if !errors.Is(mismatch, ErrTopologyMismatch) || errors.Is(mismatch, ErrNotSupported) || !errors.Is(mismatch, kerr.InvalidRequest) {
		t.Errorf("a refused topology: %v", mismatch.Unwrap())
	}
}

func TestErrorForEveryCode(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		code   int16
		msg    *string
		class  Class
		kind   error
		action string // a part of the action; "" means no action
	}{
		{kerr.CoordinatorLoadInProgress.Code, nil, Retry, nil, ""},
		{kerr.CoordinatorNotAvailable.Code, nil, Rediscover, nil, ""},
		{kerr.NotCoordinator.Code, nil, Rediscover, nil, ""},
		{kerr.FencedMemberEpoch.Code, nil, Fenced, nil, "rejoins with the same member ID"},
		{kerr.UnknownMemberID.Code, nil, Fenced, nil, "rejoins with the same member ID"},
		{kerr.TopicAuthorizationFailed.Code, nil, KeepState, nil, "grant DESCRIBE"},
		{kerr.UnknownServerError.Code, nil, KeepState, nil, "failed internally"},
		{12345, nil, Fatal, nil, "unexpected error code 12345"},
		{kerr.UnsupportedVersion.Code, nil, Fatal, ErrNotSupported, "streams.version >= 1"},
		{kerr.InvalidRequest.Code, str("Topology updates are not supported yet."), Fatal, ErrTopologyMismatch, "topology.epoch"},
		{kerr.InvalidRequest.Code, str("Static membership is not yet supported."), Fatal, ErrNotSupported, "Kafka 4.4+"},
		{kerr.InvalidRequest.Code, str("TaskOffsets are not supported yet."), Fatal, ErrNotSupported, "Kafka 4.4+"},
		{kerr.InvalidRequest.Code, str("ActiveTasks must be empty when (re-)joining."), Fatal, nil, "bug in streamsgroup"},
		{kerr.InvalidRequest.Code, nil, Fatal, nil, "bug in streamsgroup"},
		{kerr.GroupAuthorizationFailed.Code, nil, Fatal, nil, "grant READ"},
		{kerr.ClusterAuthorizationFailed.Code, nil, Fatal, nil, "cluster permission"},
		{kerr.GroupMaxSizeReached.Code, nil, Fatal, nil, "group.streams.max.size"},
		{kerr.FencedInstanceID.Code, nil, Fatal, nil, "group.instance.id"},
		{kerr.UnreleasedInstanceID.Code, nil, Fatal, nil, "still held"},
		{kerr.GroupIDNotFound.Code, nil, Fatal, nil, "not a streams group"},
		{kerr.InvalidGroupID.Code, nil, Fatal, nil, "not a valid group ID"},
		{kerr.StreamsInvalidTopology.Code, nil, Fatal, nil, "rejected the topology"},
		{kerr.StreamsInvalidTopologyEpoch.Code, nil, Fatal, nil, "topology epoch"},
		{kerr.StreamsTopologyFenced.Code, nil, Fatal, nil, "topology epoch"},
		{kerr.RebalanceInProgress.Code, nil, Fatal, nil, "unexpected error from the group coordinator"},
	}
	for _, c := range cases {
		e := ErrorFor(c.code, c.msg)
		if e == nil || e.Code != c.code || e.Class != c.class || e.kind != c.kind {
			t.Errorf("code %d: %+v, want class %s kind %v", c.code, e, c.class, c.kind)
			continue
		}
		if c.action == "" && e.Action != "" || !strings.Contains(e.Action, c.action) {
			t.Errorf("code %d: action %q, want it to say %q", c.code, e.Action, c.action)
		}
	}
	if ErrorFor(0, nil) != nil || ErrorFor(0, str("x")) != nil {
		t.Error("code 0 is no error")
	}
}

func TestClassNames(t *testing.T) {
	for c, want := range map[Class]string{Retry: "retry", Rediscover: "rediscover", Fenced: "fenced", KeepState: "keep-state", Fatal: "fatal", 0: "Class(0)", 9: "Class(9)"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", int(c), c.String(), want)
		}
	}
}

func TestTransportErrors(t *testing.T) {
	tooOld := errors.New("broker is too old; the broker has a max version of -1 for StreamsGroupHeartbeat")
	cases := []struct {
		err       error
		class     Class
		supported bool
		text      string
	}{
		{errors.New("read tcp: connection reset by peer"), Rediscover, true, "streams group heartbeat: read tcp: connection reset by peer"},
		{context.DeadlineExceeded, Rediscover, true, "streams group heartbeat: context deadline exceeded"},
		{&neterr.LookupError{Group: "g", Code: kerr.CoordinatorNotAvailable}, Rediscover, true, "finding the coordinator"},
		{&neterr.LookupError{Group: "g", Code: kerr.GroupAuthorizationFailed}, Fatal, true, "GROUP_AUTHORIZATION_FAILED"},
		{kgo.ErrClientClosed, Fatal, true, "streams group heartbeat: " + kgo.ErrClientClosed.Error()},
		{context.Canceled, Fatal, true, "context canceled"},
		{tooOld, Fatal, false, "streams group heartbeat: " + tooOld.Error() + ": this cluster does not support streams groups: it needs Kafka 4.2+"},
	}
	// A refused look-up unwraps to its code, as TransportError's documentation promises.
	if te := ClassifyTransport(&neterr.LookupError{Group: "g", Code: kerr.GroupAuthorizationFailed}); !errors.Is(te, kerr.GroupAuthorizationFailed) {
		t.Errorf("%v does not unwrap to GROUP_AUTHORIZATION_FAILED", te)
	}
	for _, c := range cases {
		te := ClassifyTransport(c.err)
		if te.Class != c.class || te.Err != c.err {
			t.Errorf("%v: class %s, want %s", c.err, te.Class, c.class)
		}
		if errors.Is(te, ErrNotSupported) == c.supported || !errors.Is(te, c.err) {
			t.Errorf("%v: errors.Is(ErrNotSupported) = %v", c.err, !c.supported)
		}
		if got := te.Error(); c.text != "" && !strings.Contains(got, c.text) || !strings.HasPrefix(got, "streams group heartbeat: ") {
			t.Errorf("%v: text %q, want it to contain %q", c.err, got, c.text)
		}
		if u := te.Unwrap(); len(u) != map[bool]int{true: 1, false: 2}[c.supported] || u[0] != c.err {
			t.Errorf("%v: Unwrap = %v", c.err, u)
		}
	}
	// A broker too old for the API, but the class says retry (a custom transport): no advice appended.
	te := &TransportError{Err: tooOld, Class: Rediscover}
	if strings.Contains(te.Error(), "needs Kafka 4.2+") {
		t.Errorf("only a fatal too-old error gives the advice: %q", te.Error())
	}
}
