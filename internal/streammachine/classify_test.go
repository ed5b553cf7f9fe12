package streammachine

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// One classification for every error the runtime meets on its way to the cluster. The expected
// class of each row is what Kafka Streams does with that error: retry (a RetriableException),
// abort and redo (TRANSACTION_ABORTABLE), replace the producer (TaskMigratedException after
// PRODUCER_FENCED and its kin), lose the tasks (fenced member), or stop.
func TestClassify(t *testing.T) {
	lost := &commit.LostError{Tasks: tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 0}), MemberID: "m", Epoch: 3, Err: kerr.FencedMemberEpoch}
	for _, c := range []struct {
		err  error
		want Class
	}{
		{io.EOF, ClassRetriable}, // a connection that broke
		{syscall.ECONNREFUSED, ClassRetriable},
		{context.DeadlineExceeded, ClassRetriable}, // a request or a delivery that timed out
		{kerr.NotCoordinator, ClassRetriable},
		{kerr.CoordinatorLoadInProgress, ClassRetriable},
		{kerr.ConcurrentTransactions, ClassRetriable},
		{kerr.NotLeaderForPartition, ClassRetriable},
		{kerr.RequestTimedOut, ClassRetriable},
		{fmt.Errorf("commit: gave up after 12 attempts: %w", kerr.UnstableOffsetCommit), ClassRetriable},
		{kerr.TransactionAbortable, ClassAbort},
		{kerr.ProducerFenced, ClassRenewProducer},
		{kerr.InvalidProducerEpoch, ClassRenewProducer},
		{kerr.InvalidProducerIDMapping, ClassRenewProducer},
		{kerr.InvalidTxnState, ClassRenewProducer},
		{kerr.OutOfOrderSequenceNumber, ClassRenewProducer}, // the producer's state at the broker is gone
		{kerr.UnknownProducerID, ClassRenewProducer},
		{fmt.Errorf("%w: %w", ErrProducerUnusable, io.EOF), ClassRenewProducer},
		{lost, ClassLost},
		{&TxnFailure{Err: io.EOF}, ClassFatal}, // decided already
		{kgo.ErrClientClosed, ClassFatal},
		{kerr.TransactionalIDAuthorizationFailed, ClassFatal},
		{kerr.ClusterAuthorizationFailed, ClassFatal},
		{kerr.TopicAuthorizationFailed, ClassFatal},
		{kerr.GroupAuthorizationFailed, ClassFatal},
		{kerr.MessageTooLarge, ClassFatal},
		{kerr.RecordListTooLarge, ClassFatal},
		{kerr.InvalidRecord, ClassFatal},
		{kerr.InvalidTimestamp, ClassFatal},
		{kerr.UnsupportedForMessageFormat, ClassFatal},
		{kerr.InvalidRequest, ClassFatal},          // not retriable: the same request fails again
		{kerr.UnknownTopicOrPartition, ClassFatal}, // after kgo's own retries: a missing topic
		{fmt.Errorf("writing to out[0]: %w", kerr.MessageTooLarge), ClassFatal},
		{fmt.Errorf("writing to out[0]: %w", kerr.NotEnoughReplicas), ClassRetriable},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	for c := ClassRetriable; c <= ClassFatal+1; c++ {
		if c.String() == "" {
			t.Errorf("class %d has no name", c)
		}
	}
}

// Only a cluster that cannot be reached at all is waited for at start.
func TestClusterUnreachable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("unable to dial: %w", syscall.ECONNREFUSED), true},
		{&net.DNSError{Err: "no such host", Name: "kafka"}, true},
		{io.EOF, true},
		{context.DeadlineExceeded, false}, // the cluster answered, no coordinator came in time
		{kerr.CoordinatorNotAvailable, false},
		{kerr.TransactionalIDAuthorizationFailed, false},
	} {
		if got := ClusterUnreachable(c.err); got != c.want {
			t.Errorf("ClusterUnreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// The writes production.exception.handler cannot continue past, as Kafka Streams'
// RecordCollectorImpl.isFatalException: authorization, an invalid topic, an unknown server error, a
// closed client, lost tasks; a record too large is the handler's to decide.
func TestFatalWhateverTheHandler(t *testing.T) {
	lost := &commit.LostError{Tasks: tasks.NewSet(tasks.ID{Subtopology: "0"}), Err: kerr.FencedMemberEpoch}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{kerr.TopicAuthorizationFailed, true},
		{kerr.InvalidTopicException, true},
		{kerr.UnknownServerError, true},
		{kgo.ErrClientClosed, true},
		{lost, true},
		{kerr.MessageTooLarge, false},
		{kerr.NotEnoughReplicas, false},
		{io.EOF, false},
	} {
		if got := FatalWhateverTheHandler(c.err); got != c.want {
			t.Errorf("FatalWhateverTheHandler(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
