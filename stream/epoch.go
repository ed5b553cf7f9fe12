package stream

import (
	"errors"
	"fmt"
	"sync"
)

// txnEpoch checks that one transaction's records, its offsets and its EndTxn all carry one
// producer epoch. kgo replaces a failed producer ID on its own: after a write it cannot account
// for (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, a batch it gave up on) the next produce,
// or the next ProducerID call, runs InitProducerId, and the new epoch makes the transaction
// coordinator abort the open transaction. kgo then goes on at the new epoch: records retried after
// the reload land in a new transaction, and AddOffsetsToTxn, TxnOffsetCommit and EndTxn at that
// epoch would commit the offsets with only the records written since, while those acknowledged
// before the reload were aborted. Commit compares the epoch the brokers acknowledged every record
// with against the producer's current one and aborts when they differ.
type txnEpoch struct {
	mu    sync.Mutex
	gen   int64 // the transaction generation the acknowledgements below are of
	id    int64
	epoch int16
	acks  int
	mixed bool // records of the transaction were acknowledged at more than one producer epoch
}

// errEpochMoved is the cause of an abort after the producer's epoch moved within a transaction.
var errEpochMoved = errors.New("stream: the transactional producer was re-initialized during the transaction " +
	"(after a write it could not account for), which aborted the records written before; the records since the last commit are processed again")

// begin starts the count for the transaction of generation gen.
func (e *txnEpoch) begin(gen int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen, e.acks, e.mixed = gen, 0, false
}

// ack records a record of generation gen that the brokers acknowledged with producer ID id and
// epoch epoch (kgo.Record.ProducerID, ProducerEpoch). Acknowledgements of another generation (a
// late one of an aborted transaction) are not this transaction's.
func (e *txnEpoch) ack(gen, id int64, epoch int16) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case gen != e.gen:
	case e.acks == 0:
		e.id, e.epoch, e.acks = id, epoch, 1
	default:
		e.acks++
		if id != e.id || epoch != e.epoch {
			e.mixed = true
		}
	}
}

// check says whether the transaction may commit with the producer at id and epoch: every record
// was acknowledged at exactly that producer ID and epoch. A transaction with records but no
// acknowledgement cannot tell, and does not commit either.
func (e *txnEpoch) check(id int64, epoch int16) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.acks == 0:
		return fmt.Errorf("%w (no record of it was acknowledged)", errEpochMoved)
	case e.mixed:
		return fmt.Errorf("%w (its records were acknowledged at more than one producer epoch)", errEpochMoved)
	case id != e.id || epoch != e.epoch:
		return fmt.Errorf("%w (records at producer %d epoch %d, the producer now at %d epoch %d)", errEpochMoved, e.id, e.epoch, id, epoch)
	}
	return nil
}
