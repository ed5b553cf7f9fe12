// Package commit commits and fetches a streams-group member's input offsets, fenced by the member's
// identity: every OffsetCommit and OffsetFetch carries the member ID and member epoch that the
// member's Manager.Snapshot gives at one moment, together with the tasks it owns, so a commit never
// pairs a new epoch with an old assignment.
//
// A Committer refuses, before any I/O, offsets for partitions of tasks the member does not own as
// active (*NotOwnedError) and offsets that are not positions of task inputs (*InvalidOffsetsError).
// The broker refuses a commit whose epoch is not the member's current one (STALE_MEMBER_EPOCH) or
// whose member it no longer knows (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH): both become a
// *LostError (errors.Is(err, ErrTasksLost)), which says that the tasks were lost and must not be
// processed further. A STALE_MEMBER_EPOCH is first retried once the member's epoch moved on and the
// tasks are still owned, because a member whose epoch was just bumped by a heartbeat answer still
// owns them. Coordinator moves are retried after the member's backoff (retry.backoff.ms doubling to
// retry.backoff.max.ms, jittered: the config.Config given to New), topic IDs (OffsetCommit v10+) are
// resolved once and cached, and topic names are sent as well so that brokers without topic IDs
// understand the request.
//
// OnRevoke wraps a membership.Listener so that the revoked tasks' offsets are committed inside
// OnTasksRevoked, which Manager.Close also runs for every owned active task: the next owner starts
// where this member stopped.
//
// # Exactly-once
//
// CommitInTransaction commits the offsets inside the producer's open transaction instead
// (AddOffsetsToTxn, then TxnOffsetCommit with the group, the member ID, the member epoch as the
// generation and the group instance ID, before the producer's EndTxn), after the same ownership
// check as Commit and from one snapshot of the member. Streams groups fence TxnOffsetCommit by member
// epoch as they fence OffsetCommit, so its errors are Commit's, plus *TxnError for the producer's own
// refusals. The stream runtime uses it under processing.guarantee=exactly_once_v2.
package commit
