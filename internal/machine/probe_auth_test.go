package machine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/heartbeat"
)

// TestProbeAuthFailureIsFatal: the member's first exchange, the capabilities probe, failing on a
// refused SASL login or an untrusted broker certificate stops the member at once with a typed
// *heartbeat.AuthError (EventFatal, Stopped), and no further probe follows however long time runs;
// the old machine retried after backoff for ever.
func TestProbeAuthFailureIsFatal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind string
		is   error
	}{
		{"wrong password", fmt.Errorf("asking the cluster for its API versions: %w", kerr.SaslAuthenticationFailed), heartbeat.AuthSASL, kerr.SaslAuthenticationFailed},
		{"unknown CA", fmt.Errorf("asking the cluster for its API versions: %w",
			&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), heartbeat.AuthTLS, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.capsErr = tc.err
			h.start()
			for range 10 {
				h.advance(time.Second) // ten times the backoff's maximum
				h.step(Tick{})
			}
			h.expectState(Fatal)
			if h.probes != 1 || len(h.sent) != 0 {
				t.Fatalf("%d probes and %d heartbeats after an authentication failure, want 1 and 0", h.probes, len(h.sent))
			}
			if len(h.stopped) != 1 || !h.hasEvent(EventFatal) {
				t.Fatalf("stopped %+v, fatal event %v", h.stopped, h.hasEvent(EventFatal))
			}
			err := h.lastEvent(EventFatal).Err
			ae, ok := errors.AsType[*heartbeat.AuthError](err)
			if !ok || ae.Kind != tc.kind || !errors.Is(h.stopped[0].Err, tc.err) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("fatal error %v (%T), want an *heartbeat.AuthError of kind %s wrapping %v", err, err, tc.kind, tc.err)
			}
		})
	}
}

// TestProbeTransportFailureStillRetries: a failure to reach the cluster is not an authentication
// failure; the probe retries after backoff as before.
func TestProbeTransportFailureStillRetries(t *testing.T) {
	h := newHarness(t)
	h.capsErr = errors.New("dial tcp 127.0.0.1:9093: connect: connection refused")
	h.start()
	for range 3 {
		h.advance(time.Second)
		h.step(Tick{})
	}
	if h.probes != 4 || h.hasEvent(EventFatal) {
		t.Fatalf("%d probes, fatal %v", h.probes, h.hasEvent(EventFatal))
	}
}

// TestHeartbeatAuthFailureIsFatal: a heartbeat whose connection fails its TLS verification (a
// certificate changed under a running member) stops the member with the typed error, not a
// rediscovery loop.
func TestHeartbeatAuthFailureIsFatal(t *testing.T) {
	h := newHarness(t)
	h.stableWith(active("0_0"))
	h.advance(interval)
	h.mustSend()
	n := len(h.sent)
	h.cut(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}})
	h.expectState(Fatal)
	h.complete(nil) // OnAllTasksLost
	for range 10 {
		h.advance(time.Second)
		h.step(Tick{})
	}
	if len(h.sent) != n || len(h.stopped) != 1 {
		t.Fatalf("%d heartbeats after the failure, stopped %d times", len(h.sent)-n, len(h.stopped))
	}
	if _, ok := errors.AsType[*heartbeat.AuthError](h.stopped[0].Err); !ok {
		t.Fatalf("stopped with %v, want an *heartbeat.AuthError", h.stopped[0].Err)
	}
}
