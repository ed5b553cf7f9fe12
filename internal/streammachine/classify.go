package streammachine

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
)

// Class is what the runtime does about an error it meets on its way to the cluster (a produce
// result, a transaction step, an offset commit or fetch): one classification for all of them, so
// that one error never means two things in two places.
type Class int

const (
	// ClassRetriable: the cluster could not be reached or is not ready (a connection that broke, a
	// request that timed out, a retriable broker error): the same step is tried again after the
	// backoff; a write that failed so is redone after a rewind.
	ClassRetriable Class = iota
	// ClassAbort: the transaction coordinator asks for the open transaction to be aborted
	// (TRANSACTION_ABORTABLE); the work since the last commit is redone.
	ClassAbort
	// ClassRenewProducer: the transaction coordinator gave the producer's epoch to a newer one (it
	// aborted the transaction itself after transaction.timeout.ms, or another incarnation started):
	// kgo cannot go on with this producer, so a new one is made and the work is redone (Kafka
	// Streams replaces its thread producer after a TaskMigratedException).
	ClassRenewProducer
	// ClassLost: the group no longer counts this member as the owner of its tasks (fenced, or unknown):
	// the tasks go, and their next owner redoes the work from the last commit.
	ClassLost
	// ClassFatal: no retry can help (authorization, a record the topic can never take, a closed
	// client): the application stops with a sentence saying what to do.
	ClassFatal
)

// String names the class (for logs and tests).
func (c Class) String() string {
	switch c {
	case ClassRetriable:
		return "retriable"
	case ClassAbort:
		return "abort"
	case ClassRenewProducer:
		return "renew-producer"
	case ClassLost:
		return "lost"
	case ClassFatal:
		return "fatal"
	}
	return "unknown"
}

// ErrProducerUnusable marks the error of a transactional producer that could not begin a
// transaction (kgo refuses to after its producer ID failed for good): a new producer is the way on.
var ErrProducerUnusable = errors.New("the transactional producer cannot begin a transaction")

// fatalBrokerErrors are broker errors no retry can help, whatever kerr says of them.
var fatalBrokerErrors = []error{kerr.TransactionalIDAuthorizationFailed, kerr.ClusterAuthorizationFailed,
	kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.UnsupportedForMessageFormat,
	kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.InvalidTimestamp,
	// A produce result of UNKNOWN_TOPIC_OR_PARTITION comes after kgo's own retries
	// (kgo.UnknownTopicRetries): the topic is missing, not being created.
	kerr.UnknownTopicOrPartition}

// retriableBrokerErrors are broker errors that pass with time although kerr (as Kafka's Java
// classes) does not mark them retriable: a transaction the coordinator is still completing.
var retriableBrokerErrors = []error{kerr.ConcurrentTransactions}

// renewErrors say the producer's epoch went to a newer one, or its state at the broker is gone
// (Kafka Streams replaces its producer after each: a TaskMigratedException).
var renewErrors = []error{ErrProducerUnusable, kerr.ProducerFenced, kerr.InvalidProducerEpoch,
	kerr.InvalidProducerIDMapping, kerr.InvalidTxnState, kerr.OutOfOrderSequenceNumber, kerr.UnknownProducerID}

// Classify is the class of err (which must not be nil). An exactly-once failure the machine already
// decided (a *TxnFailure) stays fatal.
func Classify(err error) Class {
	if errors.As(err, new(*TxnFailure)) || errors.Is(err, kgo.ErrClientClosed) {
		return ClassFatal
	}
	if errors.Is(err, commit.ErrTasksLost) {
		return ClassLost
	}
	for _, r := range renewErrors {
		if errors.Is(err, r) {
			return ClassRenewProducer
		}
	}
	if errors.Is(err, kerr.TransactionAbortable) {
		return ClassAbort
	}
	for _, f := range fatalBrokerErrors {
		if errors.Is(err, f) {
			return ClassFatal
		}
	}
	for _, r := range retriableBrokerErrors {
		if errors.Is(err, r) {
			return ClassRetriable
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		return ClassFatal
	}
	// A retriable broker error, or no broker error at all: a connection that failed while a broker
	// restarted, a request or a delivery that timed out, the App's own abort failing the buffered
	// records.
	return ClassRetriable
}

// ClusterUnreachable reports whether err says no broker could be reached at all (a refused or
// broken connection, an unknown host), as opposed to a cluster that answers but cannot do what was
// asked in time (a transaction coordinator that never comes: a request that timed out).
func ClusterUnreachable(err error) bool {
	var ne net.Error
	var oe *net.OpError
	var dnse *net.DNSError
	switch {
	case errors.As(err, &oe), errors.As(err, &dnse):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &ne) && !ne.Timeout():
		return true
	}
	return false
}

// FatalWhateverTheHandler reports whether a failed write stops the application whatever
// production.exception.handler says, as Kafka Streams' RecordCollectorImpl.isFatalException:
// authorization, an invalid topic, an unknown server error, a closed client, lost tasks.
func FatalWhateverTheHandler(err error) bool {
	for _, f := range []error{kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
		kerr.GroupAuthorizationFailed, kerr.SaslAuthenticationFailed, kerr.SecurityDisabled, kerr.InvalidTopicException,
		kerr.UnknownServerError, kgo.ErrClientClosed} {
		if errors.Is(err, f) {
			return true
		}
	}
	return Classify(err) == ClassLost
}
