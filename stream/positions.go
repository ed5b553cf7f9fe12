package stream

import (
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The input positions and partition times are the machine's (streammachine's positions.go): it
// decides what a commit commits, with which metadata, and where an abort goes back to. The shell
// feeds it what the group's committed offsets and their metadata hold for the tasks that start
// (memberCalls.OnTasksAssigned reads them) and hands the committer the metadata of each offset it
// commits (inputMeta).

// inputMeta is the committer's commit.Metadata: the partition times the machine commits with each
// offset.
type inputMeta App

// CommitMetadata is tp's metadata as the machine has it. The committer asks while it builds a
// commit the machine asked for (drive, with a.mu held).
func (m *inputMeta) CommitMetadata(tp tasks.TopicPartition) string {
	return (*App)(m).mach.CommitMetadata(tp)
}
