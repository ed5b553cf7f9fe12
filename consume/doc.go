// Package consume keeps a user's kgo client, built for direct consumption, on exactly the
// partitions the member's tasks need, and hands their records out by task.
//
// A Consumer is the member's membership.Listener (it calls the application's listener, given with
// WithListener, inside each callback). For every task it owns it consumes:
//
//   - an active task that is processing: its input partitions (source and repartition source
//     topics, copartitioned ones together), from the committed offsets (read with the member's ID
//     and epoch) or, without one, from the reset offset (auto.offset.reset);
//   - an active task of a stateful subtopology that is restoring: its changelog partitions, from
//     where its stores are, with its inputs paused until every changelog reached the end offset it
//     had when the task was assigned; then the inputs are resumed and the changelogs dropped (the
//     task writes them itself from then on);
//   - a standby or warm-up task: its changelog partitions. When it becomes active, its changelogs
//     go on from where they are, so only the rest is restored.
//
// Poll returns a Batch: changelog records to apply (Restore) and input records to process
// (Process), each with its task and role. Call Batch.Done once the records are applied and
// processed: that is what moves the positions the Consumer reports (Processed, and the changelog
// positions a taskoffsets.Tracker reads through ChangelogPosition and Processing) and what ends a restoration. While a Batch is out, listener callbacks wait
// for it, and while a callback runs, Poll waits for it (a Poll blocked on the network is woken up):
// records and callbacks never overlap. So once OnTasksRevoked returns, no record of a revoked task
// is handed out again, its partitions are no longer fetched, and the positions Processed reports for
// it are final, which is what commit.OnRevoke commits.
//
// Callbacks run on the member's callback goroutine, never on its heartbeat loop, so waiting for a
// Batch or for the network here does not delay heartbeats (within max.poll.interval.ms, the rebalance
// timeout).
package consume
