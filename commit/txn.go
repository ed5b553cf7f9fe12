package commit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// Producer is the transactional producer whose open transaction the offsets join: its
// transactional.id and its current producer ID and epoch (kgo.Client.ProducerID).
type Producer struct {
	TransactionalID string
	ID              int64
	Epoch           int16
}

// TxnError is a refusal of the transaction coordinator or of the group coordinator to add offsets
// to a transaction (AddOffsetsToTxn, TxnOffsetCommit): Err is the Kafka error (kerr).
type TxnError struct {
	Request string
	Err     error
}

func (e *TxnError) Error() string { return fmt.Sprintf("commit: %s: %v", e.Request, e.Err) }

// Unwrap returns the Kafka error.
func (e *TxnError) Unwrap() error { return e.Err }

// CommitInTransaction adds offsets to the producer's open transaction (exactly-once): AddOffsetsToTxn,
// then TxnOffsetCommit with the member ID and epoch of one snapshot of the member as the generation,
// after the same ownership check as Commit. The offsets become visible when the transaction
// commits (kgo.Client.EndTransaction), and never if it aborts. Streams groups fence the
// TxnOffsetCommit by member epoch as they fence OffsetCommit, so the errors are Commit's (a
// *LostError for a member the group moved on from), plus *TxnError for the producer's own
// refusals (a fenced producer: errors.Is(err, kerr.ProducerFenced) or kerr.InvalidProducerEpoch).
func (c *Committer) CommitInTransaction(ctx context.Context, p Producer, offsets Offsets) error {
	if c == nil {
		return errNilCommitter
	}
	if err := c.check(offsets); err != nil {
		return err
	}
	if len(offsets) == 0 {
		return nil
	}
	m := c.bound()
	if m == nil {
		return ErrNotBound
	}
	// Ownership first: nothing is sent for offsets the member may not commit.
	if _, err := c.fence(m.Snapshot(), offsets); err != nil {
		return err
	}
	if err := c.addOffsetsToTxn(ctx, p); err != nil {
		return err
	}
	r := retrier{c: c}
	for {
		snap := m.Snapshot()
		f, err := c.fence(snap, offsets)
		if err != nil {
			return err
		}
		// v6+ names topics by ID, older versions by name: send both, as Commit does.
		if err := c.resolveIDs(ctx, f.topicNames()); err != nil {
			return err
		}
		ids := c.topicIDs(f.topicNames())
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.TransactionalID, c.group, p.ID, p.Epoch
		req.Generation, req.MemberID = f.epoch, f.memberID
		for _, name := range f.topicNames() {
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic, t.TopicID = name, ids[name]
			for _, op := range f.topics[name] {
				tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				tp.Partition, tp.Offset, tp.LeaderEpoch, tp.Metadata = op.Partition, op.Offset, -1, op.Metadata
				t.Partitions = append(t.Partitions, tp)
			}
			req.Topics = append(req.Topics, t)
		}
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return fmt.Errorf("commit: TxnOffsetCommit: %w", err)
		}
		var v verdict
		var producerErr error
		for _, t := range resp.Topics {
			for _, pp := range t.Partitions {
				if perr := producerError(pp.ErrorCode); perr != nil {
					producerErr = perr
					continue
				}
				v.add(tasks.TopicPartition{Topic: t.Topic, Partition: pp.Partition}, pp.ErrorCode)
			}
		}
		if producerErr != nil {
			return &TxnError{Request: "TxnOffsetCommit", Err: producerErr}
		}
		if len(v.unknownIDs) > 0 {
			c.forgetIDs(v.unknownIDs)
		}
		if again, err := r.next(ctx, m, f, v); !again {
			return err
		}
	}
}

// addOffsetsToTxn ties the group's offsets to the transaction (brokers before KIP-890's second part
// need it before TxnOffsetCommit; later ones accept it). CONCURRENT_TRANSACTIONS (the previous
// transaction still ending) and coordinator moves are retried with backoff.
func (c *Committer) addOffsetsToTxn(ctx context.Context, p Producer) error {
	for attempt := 1; ; attempt++ {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.TransactionalID, p.ID, p.Epoch, c.group
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return fmt.Errorf("commit: AddOffsetsToTxn: %w", err)
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, kerr.ConcurrentTransactions), errors.Is(err, kerr.NotCoordinator),
			errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
			if attempt >= maxAttempts {
				return &TxnError{Request: "AddOffsetsToTxn", Err: err}
			}
			if err := sleep(ctx, c.backoff.Delay(attempt-1)); err != nil {
				return fmt.Errorf("commit: AddOffsetsToTxn: %w", err)
			}
		default:
			return &TxnError{Request: "AddOffsetsToTxn", Err: err}
		}
	}
}

// producerError returns the error of a code that refuses the producer itself, not the member.
func producerError(code int16) error {
	err := kerr.ErrorForCode(code)
	switch {
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch),
		errors.Is(err, kerr.InvalidProducerIDMapping), errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.TransactionAbortable):
		return err
	}
	return nil
}

// sleep waits d or until ctx ends (a ctx that ended already wins over d = 0).
func sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
