package commit

import (
	"context"
	"fmt"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// OffsetsFunc returns the offsets to commit for revoked tasks. It runs inside OnTasksRevoked, after
// the records of the revoked tasks stopped coming (when the consumer adapter sits in front), so the
// positions are final. For at-least-once processing, make what the tasks produced durable first
// (flush the producer) and return the positions of the records processed.
type OffsetsFunc func(ctx context.Context, revoked tasks.Set) (Offsets, error)

// OnRevoke returns a membership.Listener that commits the revoked tasks' offsets (what offsets
// returns) in OnTasksRevoked before it calls next, so the next owner starts where this member
// stopped. Manager.Close runs OnTasksRevoked for every owned active task, so Close commits too. A
// failed commit fails the revocation without calling next: the member keeps the tasks and retries
// it (on Close it leaves anyway). OnTasksAssigned and OnAllTasksLost go to next unchanged (nothing
// is committed for lost tasks). next may be nil.
func OnRevoke(c *Committer, offsets OffsetsFunc, next membership.Listener) membership.Listener {
	return &revokeCommitter{c: c, offsets: offsets, next: next}
}

type revokeCommitter struct {
	c       *Committer
	offsets OffsetsFunc
	next    membership.Listener
}

func (r *revokeCommitter) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	if r.c == nil || r.offsets == nil {
		return fmt.Errorf("commit: OnRevoke needs a Committer and an OffsetsFunc")
	}
	offs, err := r.offsets(ctx, revoked)
	if err != nil {
		return fmt.Errorf("commit: offsets of revoked tasks %v: %w", revoked, err)
	}
	if err := r.c.Commit(ctx, offs); err != nil {
		return fmt.Errorf("committing the offsets of revoked tasks %v: %w", revoked, err)
	}
	if r.next == nil {
		return nil
	}
	return r.next.OnTasksRevoked(ctx, revoked)
}

func (r *revokeCommitter) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	if r.next == nil {
		return nil
	}
	return r.next.OnTasksAssigned(ctx, a, ready)
}

func (r *revokeCommitter) OnAllTasksLost(ctx context.Context, lost tasks.Assignment) error {
	if r.next == nil {
		return nil
	}
	return r.next.OnAllTasksLost(ctx, lost)
}
