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
//   - the loop: poll (at most poll.ms, 100 ms by default, at a time, so punctuations and commits
//     are on time), process, commit every commit.interval.ms, on revocation and on close;
//   - state stores: opened when a task is assigned, restored from their changelogs before the task
//     processes, kept current for standby tasks, checkpointed at every commit (persistent kinds),
//     closed when the task goes, and deleted state.cleanup.delay.ms after their task left this
//     process;
//   - punctuation (wall-clock and stream-time), error policies, the state.dir lock, interactive
//     queries of the local stores and of which member holds a key, and the lifecycle (State);
//   - at_least_once (the default) or exactly_once_v2 (processing.guarantee): one transactional
//     producer per member, the processed offsets committed inside each transaction. Every commit
//     (periodic, on revocation, the abort of an open transaction) is decided by a deterministic
//     machine (internal/streammachine): the App only carries out its actions and feeds back their
//     results.
//
// # Invariants
//
// These hold for every run; each is pinned by tests.
//
//	R1. Offsets are committed only for records whose every effect (store write, changelog record,
//	    output record) the brokers acknowledged: a commit first waits for every record produced so
//	    far and checks each one's result; after a failed write nothing is committed again.
//	R2. No record of a task is processed after its revocation or loss; a revoked task's last offsets
//	    are committed before the member's revocation call returns (the consumer stops the task's
//	    partitions first; the call runs on the loop, between two batches).
//	R3. A store is restored to its changelog's end (read_committed under exactly-once) before its
//	    task processes a record.
//	R4. Under exactly-once, nothing of an aborted transaction is visible in the output, the
//	    changelog or the stores; a fenced or expired member never commits again.
//	R5. A persistent store's checkpoint never claims more than the data beside it holds: it is written
//	    atomically with the data, only for changelog records the brokers acknowledged.
//	R6. state.dir/<application.id> belongs to one process at a time (a lock file).
//	R7. Under exactly-once, a record whose processing failed (processor, punctuation, Init)
//	    contributes nothing: the open transaction is aborted, never committed with part of that
//	    record's effects.
//
// # At-least-once and exactly-once
//
// Under at_least_once a crash replays the records processed since the last commit: their output is
// written again, and their store updates are applied again, so a stateful result (a count, a total)
// can count a record twice after a crash or a lost session. A clean stop (Run's ctx ending, a
// revocation) commits everything first and replays nothing. Under exactly_once_v2 every record's
// effects become visible once, to read_committed readers, whatever fails (docs/runtime.md).
//
// # Threads
//
// Processors, punctuators and store access from them run on a stream thread's goroutine, one record
// at a time per thread. With one thread (num.stream.threads=1, the default) they need no locks.
// With several, each thread is a member of the group with its own tasks, and a subtopology's
// Processor is called by all of them at once, each for its own tasks (Kafka Streams makes a
// processor per task instead): keep per-task state in the task's stores, or guard what the
// processor shares. Interactive queries (Query, Store.Query) may run on any goroutine.
package stream
