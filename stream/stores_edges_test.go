package stream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// Edges of the stores' positions (stores.go): what a committed transaction records when it wrote
// nothing, and how a wipe reports a store that fails to close.

// Under exactly-once a commit records the changelog position the member's acknowledged writes
// reached with the store's data, even when the transaction left the store nothing pending (its
// writes were all acknowledged, none waits): the store then holds exactly the changelog up to that
// position (R5). Once recorded, a commit with nothing new writes nothing.
func TestCommitPendingRecordsTheAckedPositionAlone(t *testing.T) {
	k := &fakeKind{persistent: true}
	a := eosApp(t, testProcs(), WithStores(k))
	a.stateDir = t.TempDir()
	tk := activeTask(t, a, tid("1", 0))
	s := tk.stores["counts"]
	eng := s.eng.(*countingEngine)
	mustNotErr(t, s.commitPending()) // nothing acknowledged, nothing pending
	if eng.applies != 0 {
		t.Fatalf("%d writes with nothing to record", eng.applies)
	}
	s.ackedAt(5)
	mustNotErr(t, s.commitPending())
	if fmt.Sprint(eng.positions) != "[6]" || s.checkpointed != 6 {
		t.Fatalf("positions written %v, checkpointed %d; want 6 recorded once", eng.positions, s.checkpointed)
	}
	mustNotErr(t, s.commitPending())
	if fmt.Sprint(eng.positions) != "[6]" {
		t.Fatalf("positions written %v; want nothing more when nothing moved", eng.positions)
	}
	// Pending writes are applied even before any acknowledgement is known (position -1: none).
	s2 := activeTask(t, a, tid("1", 1)).stores["counts"]
	eng2 := s2.eng.(*countingEngine)
	s2.pend.put([]byte("k"), []byte("v"), false)
	mustNotErr(t, s2.commitPending())
	if eng2.applies != 1 || s2.checkpointed != -1 {
		t.Fatalf("%d writes, checkpointed %d; want the pending write applied with no position", eng2.applies, s2.checkpointed)
	}
}

// Wiping a store whose engine fails to close warns (the wipe goes on: the store is destroyed and
// opened anew); a store that closes cleanly is wiped with only the wipe's own warning.
func TestWipeWarnsOfAFailedClose(t *testing.T) {
	for _, failing := range []bool{false, true} {
		logs, opt := recordLogs()
		ck := &closeFailingKind{fakeKind: fakeKind{persistent: true}}
		fk := &ck.fakeKind
		a, _ := newTestApp(t, testConfig(), testProcs(), WithStores(fk, "counts"), opt)
		if failing {
			a, _ = newTestApp(t, testConfig(), testProcs(), WithStores(ck, "counts"), opt)
		}
		a.stateDir = t.TempDir()
		activeTask(t, a, tid("1", 1))
		logs.take()
		mustNotErr(t, a.wipe(tid("1", 1), tasks.TopicPartition{Topic: countsLog, Partition: 1}))
		var closeWarnings int
		for _, m := range logs.warnings() {
			if strings.Contains(m, "closing a store to wipe it failed") {
				closeWarnings++
			}
		}
		want := 0
		if failing {
			want = 1
		}
		if closeWarnings != want || destroyed(fk) != 1 {
			t.Errorf("close failing %v: %d warnings of a failed close, %d stores destroyed; want %d and 1", failing, closeWarnings, destroyed(fk), want)
		}
	}
}

// destroyed is how many stores k destroyed.
func destroyed(k *fakeKind) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.destroyed)
}
