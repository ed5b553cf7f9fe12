package commit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/streamsgroup/streamsgroup/membership"
)

// notifyingMember is a Member that says when its epoch moves, as *membership.Manager does, and
// counts how often its snapshot was read.
type notifyingMember struct {
	mu      sync.Mutex
	snap    membership.Snapshot
	changed chan struct{}
	reads   int
}

func (m *notifyingMember) Snapshot() membership.Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	return m.snap
}

func (m *notifyingMember) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}

func (m *notifyingMember) setEpoch(e int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap.Epoch = e
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}

// A commit refused with STALE_MEMBER_EPOCH waits for the member's epoch to move: on a member that
// notifies, it sleeps until told (no polling: the snapshot is read once before and once after),
// and it still gives up at the deadline.
func TestWaitEpochMovedWaitsForTheNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &notifyingMember{snap: membership.Snapshot{State: membership.Stable, MemberID: "m", Epoch: 4}}
		c := &Committer{staleWait: time.Hour}
		done := make(chan bool, 1)
		go func() { done <- c.waitEpochMoved(context.Background(), m, 4) }()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if len(done) != 0 || m.reads != 1 {
			t.Fatalf("after 10 quiet minutes: returned %v, %d snapshot reads; want still waiting after 1 (no polling)", len(done) != 0, m.reads)
		}
		m.setEpoch(5)
		if !<-done || m.reads != 2 {
			t.Fatalf("after the epoch moved: %d snapshot reads; want true after 2", m.reads)
		}

		m2 := &notifyingMember{snap: membership.Snapshot{State: membership.Stable, MemberID: "m", Epoch: 4}}
		start := time.Now()
		if (&Committer{staleWait: time.Minute}).waitEpochMoved(context.Background(), m2, 4) || time.Since(start) != time.Minute {
			t.Fatalf("an epoch that never moves: gave up after %v; want false after the wait of 1m", time.Since(start))
		}
	})
}
