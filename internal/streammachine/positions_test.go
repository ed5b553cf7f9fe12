package streammachine

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Input positions and partition times as Kafka Streams keeps them: a task starts from its offsets'
// committed metadata (StreamTask initializes its partition times from it), a partition's time is the
// largest timestamp processed from it, the metadata committed is that time in Kafka Streams' format
// (a version byte 2 and the time, big-endian, base64) with the processor metadata read before, and a
// rewind goes back to the last commit.

var errRetriable = kerr.NotEnoughReplicas

func TestPositionsStartFromTheCommittedMetadata(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 7, tp1: 9},
		Metadata: map[tasks.TopicPartition]string{
			tp0: "AgAAAAAAAABjAAAAAQAAAAFrAAAAAAAAAAc=", // 99, then the processor metadata {"k": 7}
			tp1: "something else",                       // not Kafka Streams': the time is unknown
		}})
	if got := s.m.PartitionTime(tp0); got != 99 {
		t.Errorf("tp0's time %d; want the committed 99", got)
	}
	if got := s.m.PartitionTime(tp1); got != -1 {
		t.Errorf("tp1's time %d; want unknown", got)
	}
	if got := s.m.StreamTime(task0); got != 99 {
		t.Errorf("stream time %d; want the largest partition time, 99", got)
	}
	if !s.m.HasCommitted(task0) {
		t.Error("a task with committed offsets has none")
	}
	// The processor metadata is committed again, behind this member's time.
	s.m.Processed(tp0, 8)
	s.m.Advanced(tp0, 200)
	if got := s.m.CommitMetadata(tp0); got != "AgAAAAAAAADIAAAAAQAAAAFrAAAAAAAAAAc=" { // 200, then {"k": 7}
		t.Errorf("tp0's metadata %q", got)
	}
	// The task's processor metadata goes with each of its partitions, as Kafka Streams commits it.
	if got := s.m.CommitMetadata(tp1); got != "Av//////////AAAAAQAAAAFrAAAAAAAAAAc=" {
		t.Errorf("an unknown time is committed as %q; want Kafka Streams' -1 (Av//////////), then {\"k\": 7}", got)
	}
	if got := s.m.CommitMetadata(tasks.TopicPartition{Topic: "other"}); got != "Av//////////" {
		t.Errorf("a partition of no active task: %q", got)
	}
	s.m.Processed(tp1, 12)
	s.m.Advanced(tp1, 500)
	if got := s.m.CommitMetadata(tp1); got != "AgAAAAAAAAH0AAAAAQAAAAFrAAAAAAAAAAc=" { // 500, then {"k": 7}
		t.Errorf("tp1's metadata %q", got)
	}
	if got := s.m.StreamTime(task0); got != 500 {
		t.Errorf("stream time %d; want 500", got)
	}
	// A task without a committed offset has none, and no time.
	f := newScript(t, AtLeastOnce, true)
	f.activate(CommittedInputs{})
	if f.m.HasCommitted(task0) || f.m.StreamTime(task0) != -1 || f.m.PartitionTime(tp0) != -1 {
		t.Errorf("a fresh task: committed %v, stream time %d", f.m.HasCommitted(task0), f.m.StreamTime(task0))
	}
	if f.m.HasCommitted(task1) || f.m.StreamTime(task1) != -1 {
		t.Error("a task not held has a position")
	}
}

// Processor metadata (Kafka Streams' ProcessorMetadata): read from every input partition's committed
// metadata and merged, the larger value of a key winning; set by the task's processors; committed
// with every input's offset; taken back to the last commit's by a rewind; gone with the task.
func TestProcessorMetadata(t *testing.T) {
	s := newScript(t, ExactlyOnce, true)
	enc := func(ms int64, m map[string]int64) string {
		return commit.EncodeMetadata(ms, commit.EncodeProcessorMetadata(m))
	}
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 7, tp1: 9},
		Metadata: map[tasks.TopicPartition]string{
			tp0: enc(10, map[string]int64{"a": 5, "b": 1}),
			tp1: commit.EncodeMetadata(20, []byte{0, 0, 0, 9}), // not ProcessorMetadata: none from tp1
		}})
	if v, ok := s.m.ProcessorMetadata(task0, "a"); !ok || v != 5 {
		t.Fatalf("a = %d %v, want 5", v, ok)
	}
	if _, ok := s.m.ProcessorMetadata(task0, "c"); ok {
		t.Fatal("c is set")
	}
	if _, ok := s.m.ProcessorMetadata(task1, "a"); ok {
		t.Fatal("a task not held has metadata")
	}
	s.m.SetProcessorMetadata(task1, "a", 1) // not active here: nothing
	// Merged from two partitions: the larger value wins.
	m := newScript(t, AtLeastOnce, true)
	m.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 7, tp1: 9},
		Metadata: map[tasks.TopicPartition]string{tp0: enc(1, map[string]int64{"a": 5, "b": 9}), tp1: enc(1, map[string]int64{"a": 8, "b": 2})}})
	if a, _ := m.m.ProcessorMetadata(task0, "a"); a != 8 {
		t.Errorf("merged a = %d, want 8", a)
	}
	if b, _ := m.m.ProcessorMetadata(task0, "b"); b != 9 {
		t.Errorf("merged b = %d, want 9", b)
	}

	s.m.SetProcessorMetadata(task0, "a", 50)
	s.m.SetProcessorMetadata(task0, "c", -3)
	want := map[string]int64{"a": 50, "b": 1, "c": -3}
	for _, tp := range []tasks.TopicPartition{tp0, tp1} {
		_, processor := commit.DecodeMetadata(s.m.CommitMetadata(tp))
		if got, err := commit.DecodeProcessorMetadata(processor); err != nil || !maps.Equal(got, want) {
			t.Errorf("%s commits %v %v, want %v", tp, got, err, want)
		}
	}
	// A rewind (an abort) takes the values back to the last commit's.
	s.m.rewind()
	if a, _ := s.m.ProcessorMetadata(task0, "a"); a != 5 {
		t.Errorf("after a rewind a = %d, want the committed 5", a)
	}
	if _, ok := s.m.ProcessorMetadata(task0, "c"); ok {
		t.Error("after a rewind c is still set")
	}
	// A commit makes them the ones a rewind goes back to.
	s.m.SetProcessorMetadata(task0, "a", 60)
	s.m.Processed(tp0, 8)
	s.m.markCommitted(commit.Offsets{tp0: 8})
	s.m.SetProcessorMetadata(task0, "a", 70)
	s.m.rewind()
	if a, _ := s.m.ProcessorMetadata(task0, "a"); a != 60 {
		t.Errorf("after a commit and a rewind a = %d, want 60", a)
	}
	s.m.dropInputs(task0)
	if _, ok := s.m.ProcessorMetadata(task0, "a"); ok {
		t.Error("a task no longer held keeps its metadata")
	}
}

func TestPositionsMoveForwardOnly(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 7}})
	s.m.Processed(tp0, 12)
	s.m.Advanced(tp0, 500)
	s.m.Processed(tp0, 10)
	s.m.Advanced(tp0, 400) // an earlier run reported late: neither moves back
	s.m.Advanced(tp0, 450)
	if got := s.m.PartitionTime(tp0); got != 500 {
		t.Errorf("time %d; want 500", got)
	}
	s.m.Processed(tasks.TopicPartition{Topic: "other"}, 5)
	s.m.Advanced(tasks.TopicPartition{Topic: "other"}, 5) // not an input of an active task
	if o := s.m.collectOffsetsOf(); !maps.Equal(o, commit.Offsets{tp0: 12}) {
		t.Errorf("to commit %v; want tp0 at 12 (tp1 processed nothing)", o)
	}
}

// StartAt sets a position only where none is known: a fresh partition takes it (and a commit then
// commits it), one processed or committed keeps its own; a negative offset or a partition of no
// active task changes nothing.
func TestStartAtOnlyWhereNothingIsKnown(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp1: 9}})
	s.m.StartAt(tp0, -1)
	if o := s.m.collectOffsetsOf(); len(o) != 0 {
		t.Fatalf("to commit %v after a negative start; want nothing", o)
	}
	s.m.StartAt(tp0, 4)
	s.m.StartAt(tp0, 6) // known now: kept
	s.m.StartAt(tp1, 2) // committed at 9: kept
	s.m.StartAt(tasks.TopicPartition{Topic: "other"}, 5)
	if o := s.m.collectOffsetsOf(); !maps.Equal(o, commit.Offsets{tp0: 4}) {
		t.Fatalf("to commit %v; want tp0 at its start 4 only", o)
	}
	s.m.Processed(tp0, 10)
	s.m.StartAt(tp0, 1)
	if o := s.m.collectOffsetsOf(); !maps.Equal(o, commit.Offsets{tp0: 10}) {
		t.Fatalf("to commit %v; want tp0 at 10, where it was processed to", o)
	}
	// Offset 0 is a start (an empty or new partition), and a position at 0 is known.
	z := newScript(t, AtLeastOnce, true)
	z.activate(CommittedInputs{})
	z.m.StartAt(tp0, 0)
	z.m.StartAt(tp0, 5)
	if o := z.m.collectOffsetsOf(); !maps.Equal(o, commit.Offsets{tp0: 0}) {
		t.Fatalf("to commit %v; want tp0 at its start 0, kept", o)
	}
}

// collectOffsetsOf is what a periodic commit would commit now.
func (m *Machine) collectOffsetsOf() commit.Offsets {
	o, _ := m.collectOffsets(tasks.Set{}, false)
	return o
}

// A rewind goes back to the last commit: a partition committed to its committed offset and time, one
// never committed to where its consumption started (left out of To) with an unknown time; a
// partition a commit left out (not owned then) keeps its earlier commit.
func TestPositionsRewindToTheLastCommit(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.activate(CommittedInputs{})
	s.m.Processed(tp0, 10)
	s.m.Advanced(tp0, 500)
	s.m.Processed(tp1, 20)
	s.m.Advanced(tp1, 450)
	s.step(Commit{}, "Flush")
	s.step(Flushed{}, "Checkpoint(active)")
	s.step(Checkpointed{}, "CommitOffsets(2)")
	s.step(OffsetsCommitted{Err: &commit.NotOwnedError{Partitions: []tasks.TopicPartition{tp1}}}, "CommitOffsets(1)")
	s.step(OffsetsCommitted{}, "Done")
	s.m.Processed(tp0, 15)
	s.m.Advanced(tp0, 900)
	s.m.Processed(tp1, 25)
	s.m.Advanced(tp1, 460)
	if to := s.m.rewind(); !maps.Equal(to, commit.Offsets{tp0: 10}) {
		t.Errorf("rewinds to %v; want tp0's committed 10 alone", to)
	}
	if s.m.PartitionTime(tp0) != 500 || s.m.PartitionTime(tp1) != -1 {
		t.Errorf("times after the rewind %d, %d; want the committed 500 and unknown", s.m.PartitionTime(tp0), s.m.PartitionTime(tp1))
	}
	if o := s.m.collectOffsetsOf(); len(o) != 0 {
		t.Errorf("to commit after the rewind %v; want nothing", o)
	}
	// RETRY of a failed write rewinds as well, and says where to.
	s.m.Processed(tp0, 16)
	s.m.Advanced(tp0, 950)
	s.step(Commit{}, "Flush")
	acts := s.step(Flushed{Err: errRetriable, Write: true}, "RetryFromLastCommit", "Done(err)")
	if to := acts[0].(RetryFromLastCommit).To; !maps.Equal(to, commit.Offsets{tp0: 10}) {
		t.Errorf("retries from %v", to)
	}
	if s.m.PartitionTime(tp0) != 500 {
		t.Errorf("time after the retry %d; want 500", s.m.PartitionTime(tp0))
	}
}

// A task's positions live while it is active here: a standby, a suspended or a lost task has none;
// one active again starts from its committed offsets, as does one the consumer started again from
// them (Committed.Tasks), while one that stays active keeps its own.
func TestPositionsFollowTheTaskLifecycle(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 7}})
	s.m.Processed(tp0, 12)
	s.m.Advanced(tp0, 500)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task1), Offsets: commit.Offsets{tp0: 3}})
	if o := s.m.collectOffsetsOf(); !maps.Equal(o, commit.Offsets{tp0: 12}) {
		t.Errorf("a task that stays active: %v; want its own position", o)
	}
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 9}})
	if o := s.m.collectOffsetsOf(); len(o) != 0 || s.m.PartitionTime(tp0) != -1 || !s.m.HasCommitted(task0) {
		t.Errorf("a task started again from its commit: to commit %v, time %d; want nothing (it stands at its commit) and unknown", o, s.m.PartitionTime(tp0))
	}
	s.step(Assigned{Assignment: tasks.Assignment{Standby: tasks.NewSet(task0)}}, "Role(0_0 standby stop)", "Done")
	if s.m.HasCommitted(task0) || len(s.m.collectOffsetsOf()) != 0 {
		t.Error("a standby has positions")
	}
	s.activate(CommittedInputs{})
	if s.m.HasCommitted(task0) || s.m.PartitionTime(tp0) != -1 {
		t.Error("a task active again kept its old positions")
	}
	s.m.Processed(tp0, 4)
	s.m.Advanced(tp0, 40)
	s.step(Assigned{}, "Suspend(0_0)", "Done")
	if len(s.m.collectOffsetsOf()) != 0 || s.m.PartitionTime(tp0) != -1 {
		t.Error("a suspended task has positions")
	}
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp1: 2}})
	s.m.Processed(tp0, 4)
	s.m.Advanced(tp0, 40)
	s.step(AllLost{}, "Close(0_0)", "Done")
	if len(s.m.collectOffsetsOf()) != 0 || s.m.HasCommitted(task0) || s.m.PartitionTime(tp0) != -1 {
		t.Error("lost tasks have positions")
	}
}

// Offset 0 is an offset: a commit at 0 is a commit (a task started from it has one, a rewind goes
// back to it), and a position at 0 is committed (a partition whose first record is at 0 and was not
// processed yet commits 0 in a revocation and when it moved from nothing known).
func TestPositionsAtOffsetZero(t *testing.T) {
	s := newScript(t, AtLeastOnce, true)
	s.activate(CommittedInputs{Tasks: tasks.NewSet(task0), Offsets: commit.Offsets{tp0: 0}})
	if !s.m.HasCommitted(task0) {
		t.Fatal("a commit at offset 0 is not a commit")
	}
	s.m.Processed(tp0, 3)
	s.m.Advanced(tp0, 10)
	if to := s.m.rewind(); !maps.Equal(to, commit.Offsets{tp0: 0}) {
		t.Errorf("rewinds to %v; want tp0's commit at 0", to)
	}
	s.m.Processed(tp1, 0) // nothing known before: at 0 now
	if o := s.m.collectOffsetsOf(); !maps.Equal(o, commit.Offsets{tp1: 0}) {
		t.Errorf("to commit %v; want tp1 at 0 (tp0 stands at its commit)", o)
	}
	if o, _ := s.m.collectOffsets(tasks.NewSet(task0), true); !maps.Equal(o, commit.Offsets{tp0: 0, tp1: 0}) {
		t.Errorf("a revocation commits %v; want both at 0", o)
	}
}
