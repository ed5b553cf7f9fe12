package stream

import (
	"context"
	"errors"
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
	lost := &commit.LostError{Tasks: tasks.NewSet(tid("0", 0)), MemberID: "m", Epoch: 3, Err: kerr.FencedMemberEpoch}
	for _, c := range []struct {
		err  error
		want errClass
	}{
		{io.EOF, classRetriable}, // a connection that broke
		{syscall.ECONNREFUSED, classRetriable},
		{context.DeadlineExceeded, classRetriable}, // a request or a delivery that timed out
		{kerr.NotCoordinator, classRetriable},
		{kerr.CoordinatorLoadInProgress, classRetriable},
		{kerr.ConcurrentTransactions, classRetriable},
		{kerr.NotLeaderForPartition, classRetriable},
		{kerr.RequestTimedOut, classRetriable},
		{fmt.Errorf("commit: gave up after 12 attempts: %w", kerr.UnstableOffsetCommit), classRetriable},
		{kerr.TransactionAbortable, classAbort},
		{kerr.ProducerFenced, classRenewProducer},
		{kerr.InvalidProducerEpoch, classRenewProducer},
		{kerr.InvalidProducerIDMapping, classRenewProducer},
		{kerr.InvalidTxnState, classRenewProducer},
		{kerr.OutOfOrderSequenceNumber, classRenewProducer}, // the producer's state at the broker is gone
		{kerr.UnknownProducerID, classRenewProducer},
		{fmt.Errorf("%w: %w", errProducerUnusable, io.EOF), classRenewProducer},
		{lost, classLost},
		{&TxnError{Err: io.EOF}, classFatal}, // decided already
		{kgo.ErrClientClosed, classFatal},
		{kerr.TransactionalIDAuthorizationFailed, classFatal},
		{kerr.ClusterAuthorizationFailed, classFatal},
		{kerr.TopicAuthorizationFailed, classFatal},
		{kerr.GroupAuthorizationFailed, classFatal},
		{kerr.MessageTooLarge, classFatal},
		{kerr.RecordListTooLarge, classFatal},
		{kerr.InvalidRecord, classFatal},
		{kerr.InvalidTimestamp, classFatal},
		{kerr.UnsupportedForMessageFormat, classFatal},
		{kerr.InvalidRequest, classFatal},          // not retriable: the same request fails again
		{kerr.UnknownTopicOrPartition, classFatal}, // after kgo's own retries: a missing topic
		{&ProduceError{Topic: "out", Err: kerr.MessageTooLarge}, classFatal},
		{&ProduceError{Topic: "out", Err: kerr.NotEnoughReplicas}, classRetriable},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	// The runtime's questions are answers of the one classification.
	a, _ := newTestApp(t, testConfig(), testProcs())
	for _, c := range []struct {
		err                  error
		abortable, dead, bad bool
	}{
		{kerr.ProducerFenced, true, true, false},
		{kerr.TransactionAbortable, true, false, false},
		{io.EOF, true, false, false},
		{kerr.MessageTooLarge, false, false, true},
		{lost, false, false, false},
	} {
		if got := a.abortable(c.err); got != c.abortable {
			t.Errorf("abortable(%v) = %v", c.err, got)
		}
		if got := producerDead(c.err); got != c.dead {
			t.Errorf("producerDead(%v) = %v", c.err, got)
		}
		var te *TxnError
		if got := a.fatalTxn(c.err); (got != nil) != c.bad || got != nil && (!errors.As(got, &te) || !errors.Is(got, c.err)) {
			t.Errorf("fatalTxn(%v) = %v", c.err, got)
		}
	}
	for c := classRetriable; c <= classFatal+1; c++ {
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
		if got := clusterUnreachable(c.err); got != c.want {
			t.Errorf("clusterUnreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
