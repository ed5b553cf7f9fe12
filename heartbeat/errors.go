package heartbeat

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/internal/neterr"
)

// Class says what a member does about a failed heartbeat (as Kafka's
// StreamsGroupHeartbeatRequestManager.onErrorResponse decides).
type Class int

const (
	// Retry: send again after backoff to the same coordinator, which the transport keeps: it is the
	// right broker, only still loading the group (COORDINATOR_LOAD_IN_PROGRESS).
	Retry Class = iota + 1
	// Rediscover: the transport has forgotten the coordinator (NOT_COORDINATOR,
	// COORDINATOR_NOT_AVAILABLE, a failure to reach the broker, a look-up that failed and may succeed
	// later). The next heartbeat looks it up again, one FindCoordinator attempt, and goes to it as soon
	// as it is found, as the Java client does; only look-ups that keep failing are paced by the
	// backoff (retry.backoff.ms).
	Rediscover
	// Fenced: the broker no longer knows this member at this epoch. Lose every task and rejoin at
	// epoch 0 with the same member ID, without backoff (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).
	Fenced
	// KeepState: report the error, keep the assignment and keep heartbeating
	// (TOPIC_AUTHORIZATION_FAILED).
	KeepState
	// Fatal: the member cannot go on; it stops and reports a typed error.
	Fatal
)

func (c Class) String() string {
	switch c {
	case Retry:
		return "retry"
	case Rediscover:
		return "rediscover"
	case Fenced:
		return "fenced"
	case KeepState:
		return "keep-state"
	case Fatal:
		return "fatal"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// ErrNotSupported is wrapped by every error that means the cluster cannot run streams groups (or not
// the feature asked for), so callers can test for it with errors.Is.
var ErrNotSupported = errors.New("not supported by this cluster")

// ErrTopologyMismatch is wrapped by the error a member gets when the group already runs another
// topology at an equal or higher epoch ("Topology updates are not supported yet.").
var ErrTopologyMismatch = errors.New("the group runs a different topology")

// UnknownCodeError is an error code that neither this library nor franz-go's kerr knows, from a
// broker newer than both. kerr maps such a code to UNKNOWN_SERVER_ERROR (code -1); this keeps the
// number, so a message says "unknown error code 9999".
type UnknownCodeError struct {
	Code int16
}

func (e *UnknownCodeError) Error() string { return fmt.Sprintf("unknown error code %d", e.Code) }

// KafkaError returns the *kerr.Error of code, an *UnknownCodeError for a code kerr does not know, or
// nil for 0.
func KafkaError(code int16) error {
	err := kerr.ErrorForCode(code)
	if err == kerr.UnknownServerError && code != kerr.UnknownServerError.Code {
		return &UnknownCodeError{Code: code}
	}
	return err
}

// Error is a heartbeat answered with an error code. It unwraps to the *kerr.Error of the code, so
// errors.Is(err, kerr.FencedMemberEpoch) works, and to ErrNotSupported or ErrTopologyMismatch where
// they apply. Action is a sentence saying what to do.
type Error struct {
	Code          int16
	Kafka         error  // the kerr error of Code: a *kerr.Error, or an *UnknownCodeError for new codes
	BrokerMessage string // ErrorMessage from the broker, if any
	Class         Class
	Action        string
	kind          error // ErrNotSupported, ErrTopologyMismatch or nil
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "streams group heartbeat: %v", e.Kafka)
	if e.BrokerMessage != "" {
		fmt.Fprintf(&b, " (broker: %q)", e.BrokerMessage)
	}
	if e.Action != "" {
		b.WriteString(": ")
		b.WriteString(e.Action)
	}
	return b.String()
}

// Unwrap returns the Kafka error and the kind.
func (e *Error) Unwrap() []error {
	if e.kind != nil {
		return []error{e.Kafka, e.kind}
	}
	return []error{e.Kafka}
}

// topologyUpdateMessage is the broker's INVALID_REQUEST text when a topology differs from the group's.
const topologyUpdateMessage = "Topology updates are not supported yet"

// ErrorFor classifies a heartbeat error code; code 0 returns nil.
func ErrorFor(code int16, brokerMessage *string) *Error {
	if code == 0 {
		return nil
	}
	e := &Error{Code: code, Kafka: KafkaError(code), Class: Fatal}
	if brokerMessage != nil {
		e.BrokerMessage = *brokerMessage
	}
	switch e.Kafka {
	case kerr.CoordinatorLoadInProgress:
		e.Class = Retry
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable:
		e.Class = Rediscover
	case kerr.FencedMemberEpoch, kerr.UnknownMemberID:
		e.Class = Fenced
		e.Action = "the member lost its tasks and rejoins with the same member ID"
	case kerr.TopicAuthorizationFailed:
		e.Class = KeepState
		e.Action = "grant DESCRIBE on every topic of the topology to this client; the member keeps its tasks and retries"
	case kerr.UnknownServerError:
		// The coordinator threw an exception it did not map to an error code. That is a broker
		// fault, not a verdict on this member: Kafka 4.4.0 does it for a join with an
		// application.server endpoint while the group's topology is not configured yet (its
		// source topics are not known), and recovers by itself once they are. So report and
		// retry, keeping state, rather than stopping the member for good.
		e.Class = KeepState
		e.Action = "the group coordinator failed internally (see the broker log); the member keeps its tasks and retries"
	case kerr.UnsupportedVersion:
		e.kind = ErrNotSupported
		e.Action = "this cluster does not support streams groups: it needs Kafka 4.2+ with the feature streams.version >= 1 " +
			"(kafka-features.sh upgrade --feature streams.version=1) and \"streams\" in group.coordinator.rebalance.protocols"
	case kerr.InvalidRequest:
		switch {
		case strings.Contains(e.BrokerMessage, topologyUpdateMessage):
			e.kind = ErrTopologyMismatch
			e.Action = "the group already runs another topology at the same or a higher topology.epoch; " +
				"roll this topology out with a higher topology.epoch once the broker supports topology updates, " +
				"or use a new application.id, or create the group again as docs/upgrades.md says (saving the input " +
				"positions first when the group has state: deleting the group alone would process its input again onto that state)"
		case strings.Contains(e.BrokerMessage, "Static membership"):
			e.kind = ErrNotSupported
			e.Action = "group.instance.id needs a Kafka 4.4+ group coordinator, and this group's coordinator is older; " +
				"during a rolling upgrade start static members once the coordinator runs 4.4, or remove group.instance.id"
		case strings.Contains(e.BrokerMessage, "not supported") || strings.Contains(e.BrokerMessage, "not yet supported"):
			e.kind = ErrNotSupported
			e.Action = "this broker does not support a feature the member uses (static membership, warm-up tasks and " +
				"task offsets need Kafka 4.4+; source topic regexes are not supported by any broker)"
		default:
			e.Action = "the broker refused the request as invalid; this is a bug in streamsgroup, please report it with the broker message"
		}
	default:
		if _, ok := e.Kafka.(*UnknownCodeError); ok {
			// A code newer than this library is treated as fatal, as the Java client does.
			e.Action = fmt.Sprintf("unexpected error code %d from the group coordinator (newer than this library)", code)
			break
		}
		if action, ok := fatalActions[e.Kafka]; ok {
			e.Action = action
		} else {
			e.Action = "unexpected error from the group coordinator"
		}
	}
	return e
}

// fatalActions says what to do about the fatal errors that need nothing but a sentence.
var fatalActions = map[error]string{
	kerr.GroupAuthorizationFailed:    "grant READ on the group (application.id) to this client",
	kerr.ClusterAuthorizationFailed:  "grant the needed cluster permission to this client",
	kerr.GroupMaxSizeReached:         "the group is full (group.streams.max.size); stop a member or raise the limit",
	kerr.FencedInstanceID:            "another member uses the same group.instance.id; give each member its own",
	kerr.UnreleasedInstanceID:        "the group.instance.id is still held by a live member; stop it, or wait for its session to time out",
	kerr.GroupIDNotFound:             "the group does not exist or is not a streams group (a consumer or share group may use this application.id)",
	kerr.InvalidGroupID:              "application.id is not a valid group ID",
	kerr.StreamsInvalidTopology:      "the broker rejected the topology; fix the topology as the broker message says",
	kerr.StreamsInvalidTopologyEpoch: "the broker refused the topology epoch; describe the group and use its topology and epoch",
	kerr.StreamsTopologyFenced:       "the broker refused the topology epoch; describe the group and use its topology and epoch",
}

// TransportError is a heartbeat that did not get an answer: the broker could not be reached, the
// connection broke, or the coordinator could not be found. When FindCoordinator answered with an
// error code, Err names the group and unwraps to that code, so errors.Is(err,
// kerr.CoordinatorNotAvailable) or kerr.GroupAuthorizationFailed tells why.
type TransportError struct {
	Err   error
	Class Class // Rediscover, or Fatal when retrying cannot help
}

func (e *TransportError) Error() string {
	if e.Class == Fatal && neterr.IsBrokerTooOld(e.Err) {
		return fmt.Sprintf("streams group heartbeat: %v: this cluster does not support streams groups: it needs Kafka 4.2+", e.Err)
	}
	return fmt.Sprintf("streams group heartbeat: %v", e.Err)
}

// Unwrap returns the underlying error (and ErrNotSupported for a broker too old).
func (e *TransportError) Unwrap() []error {
	if neterr.IsBrokerTooOld(e.Err) {
		return []error{e.Err, ErrNotSupported}
	}
	return []error{e.Err}
}

// ClassifyTransport wraps a failure to get any answer: Rediscover when a later attempt against a
// freshly looked-up coordinator may succeed, Fatal when it cannot (a closed client, a cancelled
// context, a broker without the API, a look-up refused for good).
//
// An authentication or TLS verification failure (AuthErrorOf) is Fatal, and Err is then the
// *AuthError, so errors.As finds it and the message says which setting to check.
func ClassifyTransport(err error) *TransportError {
	if ae := AuthErrorOf(err); ae != nil {
		return &TransportError{Err: ae, Class: Fatal}
	}
	c := Fatal
	if neterr.IsRetriableTransport(err) {
		c = Rediscover
	}
	return &TransportError{Err: err, Class: c}
}

// Kinds of AuthError.
const (
	AuthSASL = "sasl" // the cluster refused the SASL login
	AuthTLS  = "tls"  // the TLS handshake failed: the broker's certificate is not trusted, or ours is refused
)

// AuthError is a failure to log in to the cluster or to trust it: a wrong SASL user name or password,
// a mechanism the listener does not enable, a broker certificate that the truststore does not trust
// or that names another host, a client certificate the broker refuses. Retrying cannot fix any of
// these, so it is Fatal; Action says which setting to check. It unwraps to the error it classifies
// (kerr.SaslAuthenticationFailed, x509.UnknownAuthorityError, …).
type AuthError struct {
	Kind   string // AuthSASL or AuthTLS
	Err    error
	Action string
}

func (e *AuthError) Error() string {
	what := "authentication to the cluster failed"
	if e.Kind == AuthTLS {
		what = "the TLS handshake with the cluster failed"
	}
	return fmt.Sprintf("%s: %v: %s", what, e.Err, e.Action)
}

// Unwrap returns the classified error.
func (e *AuthError) Unwrap() error { return e.Err }

// AuthErrorOf returns err as an *AuthError when err is, wraps, or is classified as an authentication
// or TLS verification failure, and nil otherwise. kgo returns such failures from any request on a
// new connection: as the kerr error of the SASL exchange, or as the error of the TLS handshake.
func AuthErrorOf(err error) *AuthError {
	if err == nil {
		return nil
	}
	if ae, ok := errors.AsType[*AuthError](err); ok {
		return ae
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return &AuthError{Kind: AuthSASL, Err: err, Action: "check the user name and password in sasl.jaas.config, " +
			"and that the user exists for this sasl.mechanism on the cluster (kafka-configs.sh --describe --entity-type users)"}
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return &AuthError{Kind: AuthSASL, Err: err, Action: "the listener does not enable this sasl.mechanism: " +
			"set the mechanism the broker lists in sasl.enabled.mechanisms"}
	case errors.Is(err, kerr.IllegalSaslState):
		return &AuthError{Kind: AuthSASL, Err: err, Action: "the SASL exchange broke off: check security.protocol " +
			"(SASL_SSL or SASL_PLAINTEXT, as the listener is) and sasl.mechanism"}
	}
	if tlsVerification(err) {
		return &AuthError{Kind: AuthTLS, Err: err, Action: "the broker's certificate is not trusted: check " +
			"ssl.truststore.location (it must hold the CA that signed the broker's certificate) and that the " +
			"certificate names the host in bootstrap.servers (or set ssl.endpoint.identification.algorithm= to skip that check)"}
	}
	if ae, ok := tlsAlert(err); ok {
		switch {
		case certificateAlert(ae):
			return &AuthError{Kind: AuthTLS, Err: err, Action: "the broker refused this client's certificate: check " +
				"ssl.keystore.location (the broker must trust its CA, and ssl.client.auth=required needs one)"}
		case ae == alertHandshakeFailure:
			// Some TLS stacks send this generic alert for a missing client certificate too.
			return &AuthError{Kind: AuthTLS, Err: err, Action: "the broker ended the TLS handshake: check " +
				"ssl.keystore.location (a listener with ssl.client.auth=required needs a client certificate signed by a CA " +
				"it trusts), and that the broker accepts TLS 1.2 or 1.3"}
		}
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return &AuthError{Kind: AuthTLS, Err: err, Action: "the listener does not speak TLS: check security.protocol " +
			"(PLAINTEXT or SASL_PLAINTEXT for this listener) and the port in bootstrap.servers"}
	}
	return nil
}

// tlsVerification reports whether err is the client's refusal of the broker's certificate.
func tlsVerification(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	return false
}

// tlsAlert returns the TLS alert err carries: a tls.AlertError, or the alert the peer sent. On a TCP
// connection crypto/tls reports an alert from the broker as a *net.OpError with Op "remote error"
// around a value of its unexported alert type (a uint8), never as a tls.AlertError (that one wraps
// only the errors of the QUIC API and of alerts this side sent), so the number is read from it.
func tlsAlert(err error) (tls.AlertError, bool) {
	if ae, ok := errors.AsType[tls.AlertError](err); ok {
		return ae, true
	}
	return remoteAlert(err)
}

// remoteAlert walks err's tree for the *net.OpError of an alert the peer sent.
func remoteAlert(err error) (tls.AlertError, bool) {
	if oe, ok := err.(*net.OpError); ok && oe.Op == "remote error" && oe.Err != nil {
		if v := reflect.ValueOf(oe.Err); v.Kind() == reflect.Uint8 && v.Type().PkgPath() == "crypto/tls" {
			return tls.AlertError(v.Uint()), true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			return remoteAlert(next)
		}
	case interface{ Unwrap() []error }:
		for _, next := range u.Unwrap() {
			if a, ok := remoteAlert(next); ok {
				return a, true
			}
		}
	}
	return 0, false
}

// alertHandshakeFailure is TLS's handshake_failure alert (40): the peers could not agree on the
// handshake, which a retry with the same settings cannot change either.
const alertHandshakeFailure tls.AlertError = 40

// certificateAlert reports whether a TLS alert from the broker is about this client's certificate
// (bad_certificate 42 to unknown_ca 48, certificate_required 116), which a retry cannot change.
func certificateAlert(a tls.AlertError) bool {
	return a >= 42 && a <= 48 || a == 116
}
