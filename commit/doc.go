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
// # Exactly-once, later
//
// Exactly-once processing commits the offsets inside the producer's transaction instead
// (AddOffsetsToTxn, then TxnOffsetCommit with the same group, member ID, member epoch as generation
// and group instance ID, before EndTxn). The Committer is built for that: checking the offsets,
// reading the member's identity and ownership from one snapshot and resolving topics (fence) is
// separate from sending (send), and the answers are classified the same way for both requests. An
// exactly-once variant adds a method that takes the transactional *kgo.Client, builds a
// TxnOffsetCommit from the same fenced batch and sends it through that client between
// BeginTransaction and EndTransaction; OnRevoke would then end the transaction instead of
// committing. Streams groups validate TxnOffsetCommit with the member ID and epoch exactly as they
// validate OffsetCommit, so the errors stay the same.
package commit
