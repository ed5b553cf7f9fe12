// Package stream runs a Go stream-processing application as a member of a Kafka streams group: the
// application writes its per-record logic (a Processor per subtopology), and the runtime does the
// rest, as Kafka Streams does for a Java application.
//
//	app, err := stream.New(cfg, topo, stream.Processors{"0": split, "1": count})
//	...
//	err = app.Run(ctx) // until ctx ends or a fatal error
//
// What the runtime owns:
//   - the member (membership.Manager), a consumer kept on exactly the owned tasks' partitions
//     (consume.Consumer), epoch-fenced commits (commit.Committer), task offsets from changelog
//     positions (taskoffsets.Tracker) and a producer, wired in the one right order on one
//     *kgo.Client built from the config;
//   - the loop: poll (at most 100 ms at a time, so punctuations and commits are on time), process,
//     commit every commit.interval.ms, on revocation and on close;
//   - state stores: opened when a task is assigned, restored from their changelogs before the task
//     processes, kept current for standby tasks, checkpointed at every commit (persistent kinds),
//     closed when the task goes, and deleted state.cleanup.delay.ms after their task left this
//     process;
//   - punctuation (wall-clock and stream-time), error policies, the state.dir lock, interactive
//     queries of the local stores and of which member holds a key, and the lifecycle (State).
//
// # Invariants
//
// These hold for every run; each is pinned by tests.
//
//	R1. Offsets are committed only for records whose every effect (store write, changelog record,
//	    output record) the brokers acknowledged: a commit first waits for every record produced so
//	    far and checks each one's result; after a failed write nothing is committed again.
//	R2. No record of a task is processed after its revocation or loss; a revoked task's last offsets
//	    are committed before OnTasksRevoked returns (the consumer stops the task's partitions first).
//	R3. A store is restored to its changelog's end before its task processes a record.
//	R5. A persistent store's checkpoint never claims more than the data beside it holds: it is written
//	    atomically with the data, only for changelog records the brokers acknowledged.
//	R6. state.dir/<application.id> belongs to one process at a time (a lock file).
//
// (R4 is exactly-once's; processing.guarantee=exactly_once_v2 is refused until it exists.)
//
// # At-least-once
//
// Under at_least_once (the only guarantee so far) a crash replays the records processed since the
// last commit: their output is written again, and their store updates are applied again, so a
// stateful result (a count, a total) can count a record twice after a crash or a lost session. A
// clean stop (Run's ctx ending, a revocation) commits everything first and replays nothing.
//
// # Threads
//
// Processors, punctuators and store access from them run on Run's goroutine, one record at a time;
// they need no locks. Interactive queries (Query, Store.Query) may run on any goroutine.
package stream
