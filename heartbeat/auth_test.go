package heartbeat

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestAuthFailuresAreFatal: a failed SASL login and a TLS verification failure are Fatal with a typed
// *AuthError that says what to check, as kgo returns them (wrapped, with the broker's message);
// ordinary transport failures stay retriable.
func TestAuthFailuresAreFatal(t *testing.T) {
	verify := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	for _, tc := range []struct {
		name string
		err  error
		kind string
		is   error // errors.Is target, or nil
		says string
	}{
		{"wrong password", fmt.Errorf("asking the cluster for its API versions: %w",
			fmt.Errorf("%w: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512", kerr.SaslAuthenticationFailed)),
			AuthSASL, kerr.SaslAuthenticationFailed, "sasl.jaas.config"},
		{"mechanism not enabled", kerr.UnsupportedSaslMechanism, AuthSASL, kerr.UnsupportedSaslMechanism, "sasl.enabled.mechanisms"},
		{"illegal SASL state", kerr.IllegalSaslState, AuthSASL, kerr.IllegalSaslState, "security.protocol"},
		{"unknown CA", fmt.Errorf("dial: %w", verify), AuthTLS, nil, "ssl.truststore.location"},
		{"unknown CA, bare", x509.UnknownAuthorityError{}, AuthTLS, nil, "ssl.truststore.location"},
		{"wrong host", &tls.CertificateVerificationError{Err: x509.HostnameError{Host: "h"}}, AuthTLS, nil, "ssl.endpoint.identification.algorithm"},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, AuthTLS, nil, "truststore"},
		{"client certificate refused", &net.OpError{Op: "remote error", Err: tls.AlertError(42)}, AuthTLS, nil, "ssl.keystore.location"},
		{"client certificate required", tls.AlertError(116), AuthTLS, nil, "ssl.keystore.location"},
		{"plaintext listener", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, AuthTLS, nil, "does not speak TLS"},
	} {
		te := ClassifyTransport(tc.err)
		ae, ok := errors.AsType[*AuthError](te)
		if te.Class != Fatal || !ok || ae.Kind != tc.kind {
			t.Errorf("%s: class %v, %#v", tc.name, te.Class, ae)
			continue
		}
		if tc.is != nil && !errors.Is(te, tc.is) {
			t.Errorf("%s: errors.Is(%v, %v) is false", tc.name, te, tc.is)
		}
		if !strings.Contains(te.Error(), tc.says) || !errors.Is(te, tc.err) {
			t.Errorf("%s: %v does not say %q or does not unwrap to the cause", tc.name, te, tc.says)
		}
		if AuthErrorOf(te) != ae {
			t.Errorf("%s: AuthErrorOf does not find the *AuthError it made", tc.name)
		}
	}
	for _, err := range []error{io.EOF, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, tls.AlertError(80), kerr.NotCoordinator} {
		if AuthErrorOf(err) != nil {
			t.Errorf("%v taken for an authentication failure", err)
		}
		if _, ok := errors.AsType[*AuthError](ClassifyTransport(err)); ok {
			t.Errorf("%v classified as an *AuthError", err)
		}
	}
	if AuthErrorOf(nil) != nil {
		t.Error("AuthErrorOf(nil) is not nil")
	}
}
