package commit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

// A member without change notifications is polled every 10 ms until the deadline: over a wait of
// 1 s with an epoch that never moves, snapshots at 0, 10, …, 1000 ms (101 reads), then false at
// exactly 1 s; an epoch that moves at 25 ms is seen at the poll of 30 ms (the 4th read).
func TestWaitEpochMovedPollsAMemberThatDoesNotNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Committer{staleWait: time.Second}
		m := member("m", 4, "0_0")
		start := time.Now()
		if c.waitEpochMoved(context.Background(), m, 4) {
			t.Fatal("an epoch that never moved: true")
		}
		if took := time.Since(start); took != time.Second || m.readCount() != 101 {
			t.Fatalf("gave up after %v and %d snapshot reads; want 1s and 101 (one every 10ms)", took, m.readCount())
		}

		m = member("m", 4, "0_0")
		go func() {
			time.Sleep(25 * time.Millisecond)
			m.set(func(s *membership.Snapshot) { s.Epoch = 5 })
		}()
		start = time.Now()
		if !c.waitEpochMoved(context.Background(), m, 4) {
			t.Fatal("an epoch that moved at 25ms: false")
		}
		if took := time.Since(start); took != 30*time.Millisecond || m.readCount() != 4 {
			t.Fatalf("saw the move after %v and %d reads; want 30ms and 4", took, m.readCount())
		}
	})
}

// An epoch that drops to 0 (the member was fenced and is rejoining) has not moved on: the commit
// keeps waiting, and the tasks are lost when the wait (1 s here) ends with the epoch still 0. Once
// the member has joined again (epoch 5 at 505 ms), the commit goes out with it (at the poll of 510 ms).
func TestCommitStaleEpochIgnoresARejoiningMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := member("m-1", 4, "0_0")
		cl := &fakeCluster{commitCode: func(n int) int16 {
			if n == 0 {
				m.set(func(s *membership.Snapshot) { s.Epoch = 0 })
				return kerr.StaleMemberEpoch.Code
			}
			return 0
		}}
		c := newCommitter(t, cl, m)
		start := time.Now()
		err := c.Commit(context.Background(), Offsets{tp("in", 0): 8})
		var lost *LostError
		if !errors.As(err, &lost) || !errors.Is(err, kerr.StaleMemberEpoch) || lost.Epoch != 4 {
			t.Fatalf("epoch 0 for the whole wait: %v, want a *LostError at epoch 4", err)
		}
		if took := time.Since(start); took != time.Second || len(cl.commits) != 1 {
			t.Fatalf("lost after %v and %d commits; want the whole wait of 1s and 1", took, len(cl.commits))
		}

		m = member("m-1", 4, "0_0")
		cl = &fakeCluster{commitCode: func(n int) int16 {
			if n == 0 {
				m.set(func(s *membership.Snapshot) { s.Epoch = 0 })
				return kerr.StaleMemberEpoch.Code
			}
			return 0
		}}
		c = newCommitter(t, cl, m)
		go func() {
			time.Sleep(505 * time.Millisecond)
			m.set(func(s *membership.Snapshot) { s.Epoch = 5 })
		}()
		start = time.Now()
		if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); err != nil {
			t.Fatalf("rejoined at epoch 5: %v", err)
		}
		if took := time.Since(start); took != 510*time.Millisecond || len(cl.commits) != 2 || cl.commits[1].Generation != 5 {
			t.Fatalf("retried after %v, %d commits; want a second commit at epoch 5 after 510ms", took, len(cl.commits))
		}
	})
}

// Without an option, a stale epoch waits 2 s for the epoch to move before the tasks are lost.
func TestCommitStaleEpochWaitsTwoSecondsByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := &fakeCluster{commitCode: func(int) int16 { return kerr.StaleMemberEpoch.Code }}
		c, err := New(cl, testConfig(), testTopology(), WithMember(member("m-1", 4, "0_0")))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := c.Commit(context.Background(), Offsets{tp("in", 0): 8}); !errors.Is(err, ErrTasksLost) {
			t.Fatalf("got %v, want ErrTasksLost", err)
		}
		if took := time.Since(start); took != 2*time.Second || len(cl.commits) != 1 {
			t.Fatalf("lost after %v and %d commits; want 2s and 1", took, len(cl.commits))
		}
	})
}
