// Package hanging finds the transactions a broker leaves hanging, for the tests and the chaos
// driver that run exactly-once applications through broker faults: a hang fails them.
//
// On one node a broker can leave one. When a transaction ends while its partitions have no leader
// (on a single node: in the moment a controlled shutdown gave the leaderships up, or after a crash,
// when the controller fences the node's previous incarnation before it unfences the new one), the
// transaction coordinator takes the partitions for deleted and completes the transaction without
// writing its markers ("Couldn't find leader endpoint for partitions …, these partitions are likely
// deleted" in the broker's log). Its records and offsets then stay open on the partitions:
// read_committed readers stop at them and OffsetFetch answers UNSTABLE_OFFSET_COMMIT until the same
// producer's next transaction there ends it with its own marker. Watch finds such a transaction;
// Ender follows a cluster and reports each one (Found), and, for a run about that broker limitation
// only (Repair), writes the ABORT marker of one its coordinator decided to abort, as an operator
// would with kafka-transactions.sh abort.
package hanging

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OpenTxn is a partition's producer with a transaction open there (DescribeProducers).
type OpenTxn struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	StartOffset      int64
}

func (o OpenTxn) String() string {
	return fmt.Sprintf("%s[%d] producer %d epoch %d from offset %d", o.Topic, o.Partition, o.ProducerID, o.ProducerEpoch, o.StartOffset)
}

// TxnRecord is one record of the transaction log (__transaction_state): a transactional ID's state
// after a change.
type TxnRecord struct {
	ProducerID int64
	Epoch      int16
	State      kmsg.TransactionState
	Partitions map[string]map[int32]bool
}

// ParseTxnRecord decodes a __transaction_state record; ok is false for a tombstone (a transactional
// ID expired).
func ParseTxnRecord(key, value []byte) (r TxnRecord, ok bool, err error) {
	if value == nil {
		return TxnRecord{}, false, nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return TxnRecord{}, false, fmt.Errorf("transaction log key: %w", err)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return TxnRecord{}, false, fmt.Errorf("transaction log value of %s: %w", k.TransactionalID, err)
	}
	r = TxnRecord{ProducerID: v.ProducerID, Epoch: v.ProducerEpoch, State: v.State, Partitions: map[string]map[int32]bool{}}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			if r.Partitions[t.Topic] == nil {
				r.Partitions[t.Topic] = map[int32]bool{}
			}
			r.Partitions[t.Topic][p] = true
		}
	}
	return r, true, nil
}

// Marker is the marker a hanging transaction needs: ABORT, or COMMIT when its coordinator decided
// to commit it (found only by a Watch with Commits; nothing here writes one).
type Marker struct {
	Txn    OpenTxn
	Commit bool
}

// String names the marker and the transaction it ends.
func (m Marker) String() string {
	if m.Commit {
		return fmt.Sprintf("COMMIT marker for %v", m.Txn)
	}
	return fmt.Sprintf("ABORT marker for %v", m.Txn)
}

// Watch finds hanging transactions and the marker each needs. A partition's open transaction
// (producer, epoch) is decided when the transaction log holds, after the Ongoing record of that
// epoch that lists the partition, a PrepareCommit or PrepareAbort (at that epoch or the next one:
// KIP-890 bumps the epoch when a transaction ends). It hangs when it is still open Grace after it
// was first seen decided: the coordinator writes markers within milliseconds of its decision, and a
// marker written for a transaction that was only slow is the same one, harmless. An
// undecided transaction is the coordinator's (it commits, aborts or times it out) and never touched;
// neither, for now, is one decided to commit (see Look), unless Commits asks for those too.
type Watch struct {
	Grace time.Duration
	// Commits also returns the transactions decided to commit that hang: for a detector, which
	// reports every hang and writes nothing.
	Commits bool
	// Once returns every hang once, as a detector reports it; without it an abort-decided one is
	// returned again after each Grace until its marker arrives (a repair that failed is tried
	// again). A commit-decided one is returned once either way: nothing here writes its marker.
	Once bool
	seen map[OpenTxn]time.Time
	// reported are the hangs returned already that are not returned again.
	reported map[OpenTxn]bool
}

// Look takes one look: the partitions' open transactions and every producer's transaction log
// records, in log order. It returns the markers due, each hanging transaction once per partition.
func (w *Watch) Look(now time.Time, open []OpenTxn, log map[int64][]TxnRecord) []Marker {
	if w.seen == nil {
		w.seen, w.reported = map[OpenTxn]time.Time{}, map[OpenTxn]bool{}
	}
	current := make(map[OpenTxn]bool, len(open))
	var due []Marker
	for _, o := range open {
		// Only aborts are ended. A commit decision read this way once named a transaction whose
		// coordinator had aborted it (TestEOSBrokerRestart on 4.3.1): its COMMIT marker committed
		// offsets of records that were aborted. Until that is understood, a commit-decided hang is
		// left to an operator.
		commit, decided := Decision(log[o.ProducerID], o)
		if !decided || commit && !w.Commits || w.reported[o] {
			current[o] = current[o] || w.reported[o]
			continue
		}
		current[o] = true
		first, ok := w.seen[o]
		if !ok {
			w.seen[o] = now
			first = now
		}
		if now.Sub(first) >= w.Grace {
			due = append(due, Marker{Txn: o, Commit: commit})
			delete(w.seen, o)
			if commit || w.Once {
				w.reported[o] = true
			}
		}
	}
	for o := range w.seen {
		if !current[o] {
			delete(w.seen, o) // its marker arrived
		}
	}
	for o := range w.reported {
		if !current[o] {
			delete(w.reported, o) // ended at last (the producer's next transaction)
		}
	}
	return due
}

// Decision returns the coordinator's decision on o's transaction from the producer's transaction
// log records (in log order), and whether there is one yet.
func Decision(recs []TxnRecord, o OpenTxn) (commit, decided bool) {
	ongoing := -1
	for i, r := range recs {
		if r.State == kmsg.TransactionStateOngoing && r.Epoch == o.ProducerEpoch && r.Partitions[o.Topic][o.Partition] {
			ongoing = i
		}
	}
	if ongoing < 0 {
		return false, false
	}
	for _, r := range recs[ongoing+1:] {
		if r.Epoch != o.ProducerEpoch && r.Epoch != o.ProducerEpoch+1 {
			continue
		}
		switch r.State {
		case kmsg.TransactionStatePrepareCommit:
			return true, true
		case kmsg.TransactionStatePrepareAbort, kmsg.TransactionStatePrepareEpochFence:
			return false, true
		}
	}
	return false, false
}
