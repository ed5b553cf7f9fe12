package stream

import (
	"context"

	"github.com/streamsgroup/streamsgroup/commit"
	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The input positions and partition times are the machine's (streammachine's positions.go): it
// decides what a commit commits, with which metadata, and where an abort goes back to. The shell
// feeds it what the group's committed offsets hold for the tasks the consumer starts, which the
// consumer reads on the member's callback goroutine before the App's OnTasksAssigned runs: read
// through committedReader, with their metadata through inputMeta, and kept in a.starting until
// OnTasksAssigned hands them to the machine.

// committedReader is the consumer's consume.OffsetCommitter: the App's committer, keeping what it
// read of the committed offsets of the tasks the consumer starts. (Its Commit, the committer's, is
// for the consumer's CommitProcessed, which the runtime does not call: its commits are the
// machine's.)
type committedReader struct {
	*commit.Committer
	a *App
}

// CommittedOffsets reads the committed offsets of s's inputs, and keeps them for the machine.
func (r committedReader) CommittedOffsets(ctx context.Context, s tasks.Set) (commit.Offsets, error) {
	a := r.a
	a.startMu.Lock()
	a.starting = sm.CommittedInputs{Metadata: map[tasks.TopicPartition]string{}}
	a.startMu.Unlock()
	offs, err := a.commits.CommittedOffsets(ctx, s)
	if err != nil {
		return nil, err
	}
	a.startMu.Lock()
	a.starting.Tasks, a.starting.Offsets = s, offs
	a.startMu.Unlock()
	return offs, nil
}

// takeStarting returns what was read of the committed offsets of the tasks the consumer starts, and
// forgets it: the next assignment reads its own.
func (a *App) takeStarting() sm.CommittedInputs {
	a.startMu.Lock()
	defer a.startMu.Unlock()
	c := a.starting
	a.starting = sm.CommittedInputs{}
	return c
}

// inputMeta is the committer's commit.Metadata: the partition times the machine commits with each
// offset, and the metadata fetched with the committed offsets of the tasks the consumer starts.
type inputMeta App

// CommitMetadata is tp's metadata as the machine has it. The committer asks while it builds a
// commit the machine asked for (drive, with a.mu held).
func (m *inputMeta) CommitMetadata(tp tasks.TopicPartition) string {
	return (*App)(m).mach.CommitMetadata(tp)
}

// Fetched keeps the metadata committed with tp's offset, for the machine.
func (m *inputMeta) Fetched(tp tasks.TopicPartition, metadata string) {
	a := (*App)(m)
	a.startMu.Lock()
	defer a.startMu.Unlock()
	if a.starting.Metadata == nil {
		a.starting.Metadata = map[tasks.TopicPartition]string{}
	}
	a.starting.Metadata[tp] = metadata
}
