package commit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/streamsgroup/streamsgroup/tasks"
)

var (
	// ErrNotBound: the Committer has no member to read the member ID, epoch and ownership from
	// (see Bind).
	ErrNotBound = errors.New("commit: no member bound: call Bind with the member's *membership.Manager first")
	// ErrNotJoined: the member has no epoch yet (it is joining, or rejoining after it was fenced),
	// so the broker would refuse any commit or fetch.
	ErrNotJoined = errors.New("commit: the member has not joined the group yet (no member epoch); wait for its tasks")
	// ErrTasksLost is what every *LostError is (errors.Is(err, ErrTasksLost)).
	ErrTasksLost = errors.New("the member lost its tasks")
)

// LostError says the broker refused a commit or fetch because the member no longer owns its tasks
// under the epoch it used: it was fenced, removed after its session timed out, or its epoch moved on
// while the tasks went to another member. Another member may process them now: stop processing
// them, do not commit for them; the member learns of it from its heartbeat and rejoins on its own.
type LostError struct {
	Tasks    tasks.Set // the tasks whose offsets were refused
	MemberID string    // the member ID the request carried
	Epoch    int32     // the member epoch the request carried
	Err      error     // kerr.StaleMemberEpoch, kerr.UnknownMemberID or kerr.FencedMemberEpoch
}

// Error says which tasks were lost and what to do.
func (e *LostError) Error() string {
	return fmt.Sprintf("commit: tasks %v were lost (member %s, epoch %d): %v; another member may own them now: stop processing them and do not commit for them",
		e.Tasks, e.MemberID, e.Epoch, e.Err)
}

// Unwrap returns the broker's error.
func (e *LostError) Unwrap() error { return e.Err }

// Is reports whether target is ErrTasksLost.
func (e *LostError) Is(target error) bool { return target == ErrTasksLost }

// NotOwnedError lists offsets of partitions whose tasks the member does not own as active in the
// snapshot the commit was checked against (revoked meanwhile, never assigned, standby only, or lost).
// Nothing was sent.
type NotOwnedError struct {
	Partitions []tasks.TopicPartition // sorted
	Tasks      tasks.Set              // their tasks
	Epoch      int32                  // the member epoch of the snapshot
}

// Error names the partitions and tasks.
func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("commit: refused offsets of %s: tasks %v are not owned as active by this member at epoch %d",
		joinTPs(e.Partitions), e.Tasks, e.Epoch)
}

// InvalidOffsetsError lists offsets that cannot be committed at all: a partition that is no input
// of any task of the topology, a negative partition or a negative offset. Nothing was sent.
type InvalidOffsetsError struct {
	Problems []string // one sentence each, sorted
}

// Error lists the problems.
func (e *InvalidOffsetsError) Error() string {
	return "commit: invalid offsets: " + strings.Join(e.Problems, "; ")
}

// PartitionError is a partition the broker refused for another reason than a lost member (for
// example an authorization error), after retries of coordinator moves.
type PartitionError struct {
	Partition tasks.TopicPartition // the partition refused
	Err       error                // the broker's error (a kerr error)
}

// Error names the partition and the broker's error.
func (e *PartitionError) Error() string {
	return fmt.Sprintf("commit: %v: %v", e.Partition, e.Err)
}

// Unwrap returns the broker's error.
func (e *PartitionError) Unwrap() error { return e.Err }

func joinTPs(tps []tasks.TopicPartition) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	return strings.Join(s, " ")
}
