package hanging

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func rec(epoch int16, state kmsg.TransactionState, parts ...int32) TxnRecord {
	r := TxnRecord{ProducerID: 7, Epoch: epoch, State: state, Partitions: map[string]map[int32]bool{}}
	for _, p := range parts {
		if r.Partitions["log"] == nil {
			r.Partitions["log"] = map[int32]bool{}
		}
		r.Partitions["log"][p] = true
	}
	return r
}

func TestDecisionReadsTheCoordinatorsPrepareRecord(t *testing.T) {
	open := OpenTxn{Topic: "log", Partition: 1, ProducerID: 7, ProducerEpoch: 16}
	for _, tc := range []struct {
		name            string
		recs            []TxnRecord
		commit, decided bool
	}{
		{"committed, the epoch bumped at the end (KIP-890)", []TxnRecord{
			rec(15, kmsg.TransactionStateCompleteCommit), rec(16, kmsg.TransactionStateOngoing, 1),
			rec(17, kmsg.TransactionStatePrepareCommit, 1), rec(17, kmsg.TransactionStateCompleteCommit)}, true, true},
		{"committed at the same epoch (before KIP-890)", []TxnRecord{
			rec(16, kmsg.TransactionStateOngoing, 1), rec(16, kmsg.TransactionStatePrepareCommit, 1)}, true, true},
		{"aborted by its timeout", []TxnRecord{
			rec(16, kmsg.TransactionStateOngoing, 1), rec(17, kmsg.TransactionStatePrepareAbort, 1), rec(17, kmsg.TransactionStateCompleteAbort)}, false, true},
		{"fenced", []TxnRecord{rec(16, kmsg.TransactionStateOngoing, 1), rec(17, kmsg.TransactionStatePrepareEpochFence, 1)}, false, true},
		{"still ongoing", []TxnRecord{rec(16, kmsg.TransactionStateOngoing, 2), rec(16, kmsg.TransactionStateOngoing, 1, 2)}, false, false},
		{"the partition was never in a transaction of that epoch", []TxnRecord{
			rec(16, kmsg.TransactionStateOngoing, 2), rec(17, kmsg.TransactionStatePrepareCommit, 2)}, false, false},
		{"a later transaction's decision is not this one's", []TxnRecord{
			rec(16, kmsg.TransactionStateOngoing, 1), rec(18, kmsg.TransactionStatePrepareCommit, 3)}, false, false},
		{"no record", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit, decided := Decision(tc.recs, open)
			if commit != tc.commit || decided != tc.decided {
				t.Fatalf("Decision = (commit %v, decided %v), want (%v, %v)", commit, decided, tc.commit, tc.decided)
			}
		})
	}
}

func TestWatchWritesTheDecidedAbortAfterTheGrace(t *testing.T) {
	w := &Watch{Grace: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	aborted := OpenTxn{Topic: "log", Partition: 1, ProducerID: 7, ProducerEpoch: 16, StartOffset: 46}
	committed := OpenTxn{Topic: "log", Partition: 3, ProducerID: 8, ProducerEpoch: 4, StartOffset: 5}
	undecided := OpenTxn{Topic: "log", Partition: 2, ProducerID: 7, ProducerEpoch: 16, StartOffset: 9}
	log := map[int64][]TxnRecord{
		7: {rec(16, kmsg.TransactionStateOngoing, 1), rec(17, kmsg.TransactionStatePrepareAbort, 1), rec(17, kmsg.TransactionStateOngoing, 2)},
		8: {{ProducerID: 8, Epoch: 4, State: kmsg.TransactionStateOngoing, Partitions: map[string]map[int32]bool{"log": {3: true}}},
			{ProducerID: 8, Epoch: 5, State: kmsg.TransactionStatePrepareCommit, Partitions: map[string]map[int32]bool{"log": {3: true}}}},
	}
	open := []OpenTxn{aborted, committed, undecided}
	if m := w.Look(t0, open, log); len(m) != 0 {
		t.Fatalf("first sight: %v, want nothing before the grace", m)
	}
	if m := w.Look(t0.Add(4*time.Second), open, log); len(m) != 0 {
		t.Fatalf("after 4 s: %v, want nothing before the grace of 5 s", m)
	}
	m := w.Look(t0.Add(5*time.Second), open, log)
	if len(m) != 1 || m[0].Txn != aborted || !strings.HasPrefix(m[0].String(), "ABORT marker") {
		t.Fatalf("after 5 s: %v, want one ABORT marker for %v (a commit-decided or undecided one is left alone)", m, aborted)
	}
	if m := w.Look(t0.Add(11*time.Second), []OpenTxn{committed, undecided}, log); len(m) != 0 {
		t.Fatalf("a commit-decided or undecided transaction got %v", m)
	}
}

func TestWatchForgetsATransactionWhoseMarkerArrived(t *testing.T) {
	w := &Watch{Grace: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	o := OpenTxn{Topic: "log", Partition: 1, ProducerID: 7, ProducerEpoch: 16}
	log := map[int64][]TxnRecord{7: {rec(16, kmsg.TransactionStateOngoing, 1), rec(17, kmsg.TransactionStatePrepareAbort, 1)}}
	w.Look(t0, []OpenTxn{o}, log)
	w.Look(t0.Add(time.Second), nil, log) // the coordinator's marker arrived
	if m := w.Look(t0.Add(6*time.Second), []OpenTxn{o}, log); len(m) != 0 {
		t.Fatalf("a transaction seen again after its marker arrived got %v at once; its grace starts again", m)
	}
	m := w.Look(t0.Add(11*time.Second), []OpenTxn{o}, log)
	if len(m) != 1 || !strings.HasPrefix(m[0].String(), "ABORT marker") {
		t.Fatalf("after a new grace: %v, want one ABORT marker", m)
	}
}

func TestParseTxnRecord(t *testing.T) {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "app-1"}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.State = 1, 7, 16, kmsg.TransactionStateOngoing
	tt := kmsg.NewTxnMetadataValueTopic()
	tt.Topic, tt.Partitions = "log", []int32{1, 3}
	v.Topics = append(v.Topics, tt)
	r, ok, err := ParseTxnRecord(k.AppendTo(nil), v.AppendTo(nil))
	if err != nil || !ok || r.ProducerID != 7 || r.Epoch != 16 || r.State != kmsg.TransactionStateOngoing ||
		!r.Partitions["log"][1] || !r.Partitions["log"][3] || len(r.Partitions["log"]) != 2 {
		t.Fatalf("ParseTxnRecord = %+v, %v, %v", r, ok, err)
	}
	if _, ok, err := ParseTxnRecord(k.AppendTo(nil), nil); ok || err != nil {
		t.Fatalf("a tombstone: ok %v, err %v; want false, nil", ok, err)
	}
	if _, _, err := ParseTxnRecord([]byte{0}, v.AppendTo(nil)); err == nil {
		t.Fatal("a truncated key: no error")
	}
	if _, _, err := ParseTxnRecord(k.AppendTo(nil), []byte{0, 1, 2}); err == nil {
		t.Fatal("a truncated value: no error")
	}
}

// A detector's Watch (Commits) also returns a commit-decided hang, marked Commit; an undecided one
// never.
func TestWatchWithCommitsReturnsEveryDecidedHang(t *testing.T) {
	w := &Watch{Grace: 5 * time.Second, Commits: true}
	t0 := time.Unix(1000, 0)
	aborted := OpenTxn{Topic: "log", Partition: 1, ProducerID: 7, ProducerEpoch: 16, StartOffset: 46}
	committed := OpenTxn{Topic: "log", Partition: 3, ProducerID: 8, ProducerEpoch: 4, StartOffset: 5}
	undecided := OpenTxn{Topic: "log", Partition: 2, ProducerID: 7, ProducerEpoch: 16, StartOffset: 9}
	log := map[int64][]TxnRecord{
		7: {rec(16, kmsg.TransactionStateOngoing, 1), rec(17, kmsg.TransactionStatePrepareAbort, 1), rec(17, kmsg.TransactionStateOngoing, 2)},
		8: {{ProducerID: 8, Epoch: 4, State: kmsg.TransactionStateOngoing, Partitions: map[string]map[int32]bool{"log": {3: true}}},
			{ProducerID: 8, Epoch: 5, State: kmsg.TransactionStatePrepareCommit, Partitions: map[string]map[int32]bool{"log": {3: true}}}},
	}
	open := []OpenTxn{aborted, committed, undecided}
	w.Look(t0, open, log)
	m := w.Look(t0.Add(5*time.Second), open, log)
	if len(m) != 2 || m[0] != (Marker{Txn: aborted}) || m[1] != (Marker{Txn: committed, Commit: true}) {
		t.Fatalf("after the grace: %v, want the ABORT of %v and the COMMIT of %v", m, aborted, committed)
	}
}

// A detector's Watch (Once) returns each hang once however long it stays open, and again only if
// it closed and a new one opened; without Once an abort-decided hang is returned after each Grace
// (its repair is tried again) and a commit-decided one still once.
func TestWatchReturnsAHangOnce(t *testing.T) {
	aborted := OpenTxn{Topic: "log", Partition: 1, ProducerID: 7, ProducerEpoch: 16, StartOffset: 46}
	committed := OpenTxn{Topic: "log", Partition: 3, ProducerID: 8, ProducerEpoch: 4, StartOffset: 5}
	log := map[int64][]TxnRecord{
		7: {rec(16, kmsg.TransactionStateOngoing, 1), rec(17, kmsg.TransactionStatePrepareAbort, 1)},
		8: {{ProducerID: 8, Epoch: 4, State: kmsg.TransactionStateOngoing, Partitions: map[string]map[int32]bool{"log": {3: true}}},
			{ProducerID: 8, Epoch: 5, State: kmsg.TransactionStatePrepareCommit, Partitions: map[string]map[int32]bool{"log": {3: true}}}},
	}
	open := []OpenTxn{aborted, committed}
	t0 := time.Unix(1000, 0)
	for _, once := range []bool{true, false} {
		w := &Watch{Grace: 5 * time.Second, Commits: true, Once: once}
		var got []Marker
		for s := 0; s <= 30; s++ {
			got = append(got, w.Look(t0.Add(time.Duration(s)*time.Second), open, log)...)
		}
		abortN, commitN := 0, 0
		for _, m := range got {
			if m.Commit {
				commitN++
			} else {
				abortN++
			}
		}
		wantAborts := 1
		if !once {
			wantAborts = 5 // at 5, 11, 16, 21 and 26 s: each grace starts at the look after a return
		}
		if abortN != wantAborts || commitN != 1 {
			t.Fatalf("Once %v: %d ABORT and %d COMMIT returns over 30 s of one hang each, want %d and 1", once, abortN, commitN, wantAborts)
		}
	}
	w := &Watch{Grace: 5 * time.Second, Commits: true, Once: true}
	w.Look(t0, open, log)
	w.Look(t0.Add(5*time.Second), open, log)
	w.Look(t0.Add(6*time.Second), nil, log) // both ended
	if m := w.Look(t0.Add(7*time.Second), open, log); len(m) != 0 {
		t.Fatalf("a hang seen again gets a new grace, got %v at once", m)
	}
	if m := w.Look(t0.Add(12*time.Second), open, log); len(m) != 2 {
		t.Fatalf("after its new grace: %v, want both again", m)
	}
}
