package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/internal/stableoffsets"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// These tests run Go members built from the processing pieces (commit, consume, taskoffsets; see
// pieces_helpers_test.go) against the real broker.

// piecesSetup is an input topic, an output topic and a group running the Java peer's topology.
type piecesSetup struct {
	b                    *Broker
	group, input, output string
	changelog            string
	topo                 *topology.Topology
	all                  tasks.Set
	seq                  atomic.Int64
}

func newPiecesSetup(t *testing.T, partitions int32) *piecesSetup {
	t.Helper()
	b := Get(t)
	s := &piecesSetup{b: b, group: Name(t, "app"), input: Name(t, "in"), output: Name(t, "out"),
		all: taskRange("0", int(partitions))}
	s.topo = javaCompatibleTopology(s.group, s.input, "counts")
	s.changelog = topology.Names{AppID: s.group}.ChangelogTopic("counts")
	b.CreateTopic(t, s.input, partitions)
	b.CreateTopic(t, s.output, 2)
	b.DeleteGroupAtEnd(t, s.group)
	deleteTopicsAtEnd(t, b, s.changelog)
	return s
}

func (s *piecesSetup) start(t *testing.T, name string, o counterOpts) *counter {
	t.Helper()
	return startCounter(t, s.b, s.group, name, s.topo, s.output, &s.seq, o)
}

func (s *piecesSetup) waitCaughtUp(t *testing.T) {
	t.Helper()
	adm := s.b.Admin(t)
	Eventually(t, settle, func() (bool, string) { return caughtUp(t, adm, s.group, s.input) })
}

func (s *piecesSetup) inputTP(id tasks.ID) tasks.TopicPartition {
	return tasks.TopicPartition{Topic: s.input, Partition: id.Partition}
}

func (s *piecesSetup) changelogTP(id tasks.ID) tasks.TopicPartition {
	return tasks.TopicPartition{Topic: s.changelog, Partition: id.Partition}
}

// TestPiecesRevokedTaskNotFetchedAfterRevoke: a member owns every task while records keep coming;
// a second member joins and takes half. After OnTasksRevoked returned on the first member, none of
// its records of a revoked task were handed out and none of their partitions were fetched (kgo's
// fetch hook); the second member goes on exactly where the first stopped, and every record is
// counted once.
func TestPiecesRevokedTaskNotFetchedAfterRevoke(t *testing.T) {
	s := newPiecesSetup(t, 4)
	want := produceKeyed(t, s.b, s.input, 200, 16, 0)
	a := s.start(t, "a", counterOpts{})
	Eventually(t, settle, func() (bool, string) { return a.active().Equal(s.all), a.String() })
	s.waitCaughtUp(t)

	// Records keep arriving on every partition while the tasks move.
	stop := make(chan struct{})
	produced := make(chan map[string]int64)
	go func() {
		counts := map[string]int64{}
		for i := 200; ; i += 20 {
			select {
			case <-stop:
				produced <- counts
				return
			case <-time.After(20 * time.Millisecond):
			}
			addCounts(counts, produceKeyed(t, s.b, s.input, 20, 16, i))
		}
	}()
	c := s.start(t, "c", counterOpts{})
	Eventually(t, settle, func() (bool, string) {
		x, y := a.active(), c.active()
		return x.Len() == 2 && y.Len() == 2 && x.Union(y).Equal(s.all), fmt.Sprintf("%v %v", a, c)
	})
	revoked := s.all.Difference(a.active())
	// Wait until the new owner processed records of each revoked task that arrived after the
	// revocation, so they were there to be fetched by the old one.
	Eventually(t, settle, func() (bool, string) {
		a.mu.Lock()
		at := a.revokedAt
		a.mu.Unlock()
		var missing []string
		for id := range revoked.All() {
			n := 0
			for _, h := range c.log() {
				if h.task == id && !h.restore && h.seq > at[id] {
					n++
				}
			}
			if at[id] == 0 || n < 20 {
				missing = append(missing, fmt.Sprintf("%s (revoked at %d, %d records after)", id, at[id], n))
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	close(stop)
	addCounts(want, <-produced)
	s.waitCaughtUp(t)

	a.mu.Lock()
	revokedAt, fetched := a.revokedAt, slices.Clone(a.fetched)
	a.mu.Unlock()
	for id := range revoked.All() {
		at := revokedAt[id]
		var aLast, cFirst int64 = -1, -1
		for _, h := range a.log() {
			if h.task != id {
				continue
			}
			if h.seq > at {
				t.Fatalf("record %v@%d of revoked task %s handed out after OnTasksRevoked returned (seq %d > %d)", h.tp, h.offset, id, h.seq, at)
			}
			if !h.restore {
				aLast = max(aLast, h.offset)
			}
		}
		for _, f := range fetched {
			if f.tp == s.inputTP(id) && f.seq > at {
				t.Fatalf("partition %v of revoked task %s fetched after OnTasksRevoked returned (seq %d > %d)", f.tp, id, f.seq, at)
			}
		}
		for _, h := range c.log() {
			if h.task == id && !h.restore && (cFirst < 0 || h.offset < cFirst) {
				cFirst = h.offset
			}
		}
		if aLast < 0 || cFirst != aLast+1 {
			t.Fatalf("task %s: the old owner processed up to %d, the new one started at %d; want the very next offset", id, aLast, cFirst)
		}
	}
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// TestPiecesRestoreBeforeProcess: a member counts, commits and leaves; more records arrive; a new
// member restores each task's store from the whole changelog before it hands out the first input
// record of that task (its inputs are paused meanwhile), and starts processing at the committed
// offset. The counts go on from the restored ones.
func TestPiecesRestoreBeforeProcess(t *testing.T) {
	s := newPiecesSetup(t, 2)
	want := produceKeyed(t, s.b, s.input, 200, 8, 0)
	a := s.start(t, "a", counterOpts{})
	s.waitCaughtUp(t)
	a.close(t)

	adm := s.b.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	committed, err := stableoffsets.Fetch(ctx, adm, s.group)
	if err != nil {
		t.Fatal(err)
	}
	changelogEnds, err := adm.ListEndOffsets(ctx, s.changelog)
	if err != nil {
		t.Fatal(err)
	}
	addCounts(want, produceKeyed(t, s.b, s.input, 100, 8, 200))

	c := s.start(t, "c", counterOpts{})
	s.waitCaughtUp(t)
	for id := range s.all.All() {
		var restored []int64
		firstProcess, lastRestore := int64(-1), int64(-1)
		firstOffset := int64(-1)
		for _, h := range c.log() {
			if h.task != id {
				continue
			}
			if h.restore {
				if h.role.String() != "active" {
					t.Fatalf("task %s: changelog record handed out as %s", id, h.role)
				}
				restored = append(restored, h.offset)
				lastRestore = max(lastRestore, h.seq)
				continue
			}
			if firstProcess < 0 {
				firstProcess, firstOffset = h.seq, h.offset
			}
		}
		end, _ := changelogEnds.Lookup(s.changelog, id.Partition)
		if int64(len(restored)) != end.Offset || !isRange(restored, 0, end.Offset) {
			t.Fatalf("task %s restored changelog offsets %v, want each of 0…%d once", id, compact(restored), end.Offset-1)
		}
		if firstProcess < 0 || lastRestore >= firstProcess {
			t.Fatalf("task %s: last changelog record handed out at %d, first input record at %d: want restore, then process", id, lastRestore, firstProcess)
		}
		o, _ := committed.Lookup(s.input, id.Partition)
		if firstOffset != o.At {
			t.Fatalf("task %s processed from offset %d, committed was %d", id, firstOffset, o.At)
		}
	}
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// isRange reports whether offs holds exactly from, from+1, …, to-1 in that order.
func isRange(offs []int64, from, to int64) bool {
	if int64(len(offs)) != to-from {
		return false
	}
	for i, o := range offs {
		if o != from+int64(i) {
			return false
		}
	}
	return true
}

// compact prints offsets as ranges, for failure messages.
func compact(offs []int64) string {
	s := slices.Clone(offs)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		i = j + 1
	}
	return fmt.Sprintf("%d offsets [%s]", len(offs), strings.Join(parts, " "))
}

// frozenMember is a member as it was at one moment: commits bound to it carry that moment's epoch.
type frozenMember membership.Snapshot

func (f frozenMember) Snapshot() membership.Snapshot { return membership.Snapshot(f) }

func committedAt(t *testing.T, b *Broker, group, topic string, partition int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := stableoffsets.Fetch(ctx, b.Admin(t), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok {
		return -1
	}
	return o.At
}

// TestPiecesCommitWithOldEpochAfterFencingRefused: a member's heartbeats are cut off until the broker
// removes it; a commit with the member's (old) identity is refused as a *commit.LostError and nothing
// is committed. Once the member was fenced and rejoined, a commit carrying the epoch from before the
// fencing is refused the same way (STALE_MEMBER_EPOCH), while one with its current epoch goes through.
func TestPiecesCommitWithOldEpochAfterFencingRefused(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	topo := simpleTopology(topic)
	cl := b.Client(t)
	cfg := config.Default(group)
	cfg.RetryBackoff, cfg.RetryBackoffMax, cfg.RequestTimeout = 50*time.Millisecond, 500*time.Millisecond, 5*time.Second
	// The session guard would give the tasks up before the broker removes the member (issue 11
	// §5). This test is about the broker refusing the commits of a member that did not learn of its
	// removal, so it plays one whose guard is off: it may not read the group's session timeout (no
	// DESCRIBE_CONFIGS on the group; the timeout is the group's only, issue 22 §2).
	bh := &blackhole{Transport: defaultTestTransport(cl, cfg), noConfigs: true}
	rec := &recorder{name: "m"}
	mgr, err := membership.New(cl, cfg, topo, membership.WithListener(rec), membership.WithTransport(bh),
		membership.WithLogger(testLogger.With("test_member", "m")))
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = mgr.Close(ctx)
	})
	committer, err := commit.New(cl, cfg, topo, commit.WithMember(mgr))
	if err != nil {
		t.Fatal(err)
	}
	all := taskRange("0", 2)
	Eventually(t, settle, func() (bool, string) {
		a, _ := mgr.Assignment()
		return mgr.State() == membership.Stable && a.Active.Equal(all), fmt.Sprintf("%s %v", mgr.State(), a)
	})
	ctx := context.Background()
	p0 := tasks.TopicPartition{Topic: topic, Partition: 0}
	if err := committer.Commit(ctx, commit.Offsets{p0: 5, {Topic: topic, Partition: 1}: 7}); err != nil {
		t.Fatal(err)
	}
	if at := committedAt(t, b, group, topic, 0); at != 5 {
		t.Fatalf("committed %d, want 5", at)
	}
	before := mgr.Snapshot()

	bh.down.Store(true)
	Eventually(t, settle, func() (bool, string) {
		ids := groupMemberIDs(t, b, group)
		return !ids[before.MemberID], fmt.Sprintf("the broker still lists %s", before.MemberID)
	})
	if now := mgr.Snapshot(); now.Epoch != before.Epoch || !now.Owned.Active.Equal(all) {
		t.Fatalf("the member learnt of its removal already (epoch %d, %v): the commit below would not test the broker", now.Epoch, now.Owned)
	}
	err = committer.Commit(ctx, commit.Offsets{p0: 9})
	var lost *commit.LostError
	if !errors.As(err, &lost) || !errors.Is(err, commit.ErrTasksLost) || !errors.Is(err, kerr.UnknownMemberID) || lost.Epoch != before.Epoch {
		t.Fatalf("commit of a removed member: %v; want a *commit.LostError for UNKNOWN_MEMBER_ID", err)
	}
	if at := committedAt(t, b, group, topic, 0); at != 5 {
		t.Fatalf("the refused commit changed the committed offset to %d", at)
	}

	bh.down.Store(false)
	Eventually(t, settle, func() (bool, string) {
		s := mgr.Snapshot()
		rec.mu.Lock()
		lostCalls := rec.lost
		rec.mu.Unlock()
		return lostCalls > 0 && s.State == membership.Stable && s.Epoch > before.Epoch && s.Owned.Active.Equal(all),
			fmt.Sprintf("%s epoch %d (was %d) %v, OnAllTasksLost %d times", s.State, s.Epoch, before.Epoch, s.Owned, lostCalls)
	})
	// The frozen member's epoch never moves on: the commit waits for that (about 2 s, the Committer's
	// stale-epoch wait), then reports the tasks lost.
	old, err := commit.New(cl, cfg, topo, commit.WithMember(frozenMember(before)))
	if err != nil {
		t.Fatal(err)
	}
	err = old.Commit(ctx, commit.Offsets{p0: 9})
	if !errors.As(err, &lost) || !errors.Is(err, kerr.StaleMemberEpoch) || lost.Epoch != before.Epoch || lost.MemberID != before.MemberID {
		t.Fatalf("commit with the epoch from before the fencing: %v; want a *commit.LostError for STALE_MEMBER_EPOCH", err)
	}
	if at := committedAt(t, b, group, topic, 0); at != 5 {
		t.Fatalf("the refused commit changed the committed offset to %d", at)
	}
	if err := committer.Commit(ctx, commit.Offsets{p0: 9}); err != nil {
		t.Fatalf("commit with the current epoch: %v", err)
	}
	if at := committedAt(t, b, group, topic, 0); at != 9 {
		t.Fatalf("committed %d, want 9", at)
	}
}

// handoutsOf returns the offsets of task id's changelog records a counter applied in role.
func handoutsOf(c *counter, id tasks.ID, restore bool, role consume.Role) []int64 {
	var out []int64
	for _, h := range c.log() {
		if h.task == id && h.restore == restore && h.role == role {
			out = append(out, h.offset)
		}
	}
	return out
}

func endOffset(t *testing.T, b *Broker, tp tasks.TopicPartition) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := b.Admin(t).ListEndOffsets(ctx, tp.Topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(tp.Topic, tp.Partition)
	if !ok || o.Err != nil {
		t.Fatalf("no end offset for %v: %v", tp, o.Err)
	}
	return o.Offset
}

// TestPiecesStandbyPromotionRestoresOnlyTheRest: with one standby replica per task, member c keeps a
// standby of a task a processes. c stops polling while a writes more to the task's changelog; a
// leaves; c's standby becomes active and restores only the records it had not applied yet: the
// changelog offsets c applied as standby and then as a restoring active task are each offset once.
func TestPiecesStandbyPromotionRestoresOnlyTheRest(t *testing.T) {
	s := newPiecesSetup(t, 2)
	brRequireGroupConfig(t, s.b, s.group, "streams.num.standby.replicas", "1")
	want := produceKeyed(t, s.b, s.input, 100, 8, 0)
	a := s.start(t, "a", counterOpts{})
	Eventually(t, settle, func() (bool, string) { return a.active().Equal(s.all), a.String() })
	s.waitCaughtUp(t)
	c := s.start(t, "c", counterOpts{})
	var x tasks.ID // the task a processes and c keeps a standby of
	Eventually(t, settle, func() (bool, string) {
		ax, cx := a.active(), c.active()
		cs, _ := c.mgr.Assignment()
		ok := ax.Len() == 1 && cx.Len() == 1 && ax.Union(cx).Equal(s.all) && cs.Standby.Equal(ax)
		if ok {
			x = ax.IDs()[0]
		}
		return ok, fmt.Sprintf("%v %v", a, c)
	})
	addCounts(want, produceKeyed(t, s.b, s.input, 100, 8, 100))
	s.waitCaughtUp(t)
	end := endOffset(t, s.b, s.changelogTP(x))
	Eventually(t, settle, func() (bool, string) {
		got := handoutsOf(c, x, true, consume.Standby)
		return len(got) > 0 && got[len(got)-1] == end-1, fmt.Sprintf("c's standby of %s applied %s of %d", x, compact(got), end)
	})

	c.closeGate()
	c.waitAtGate(t)
	k := int64(len(handoutsOf(c, x, true, consume.Standby)))
	addCounts(want, produceKeyed(t, s.b, s.input, 100, 8, 200))
	xin := s.inputTP(x)
	Eventually(t, settle, func() (bool, string) {
		at, e := committedAt(t, s.b, s.group, xin.Topic, xin.Partition), endOffset(t, s.b, xin)
		return at == e, fmt.Sprintf("a committed %v at %d of %d", xin, at, e)
	})
	a.close(t)
	Eventually(t, settle, func() (bool, string) { return c.active().Equal(s.all), c.String() })
	end = endOffset(t, s.b, s.changelogTP(x))
	c.openGate()
	s.waitCaughtUp(t)

	standby, restored := handoutsOf(c, x, true, consume.Standby), handoutsOf(c, x, true, consume.Active)
	if !isRange(standby, 0, k) || k == 0 {
		t.Fatalf("standby of %s applied %s, want 0…%d", x, compact(standby), k-1)
	}
	if !isRange(restored, k, end) || end <= k {
		c.mu.Lock()
		for _, e := range c.events {
			t.Logf("c event: %v", e)
		}
		c.mu.Unlock()
		t.Fatalf("promoted %s restored %s, want only the rest: %d…%d", x, compact(restored), k, end-1)
	}
	t.Logf("task %s: %d changelog records applied as standby, only the other %d restored after the promotion", x, k, end-k)
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// reportedOffsets returns, per member ID, the task offsets and end offsets the broker holds for
// the group's members (StreamsGroupDescribe).
func reportedOffsets(t *testing.T, b *Broker, group string) (offs, ends map[string]tasks.Offsets) {
	t.Helper()
	offs, ends = map[string]tasks.Offsets{}, map[string]tasks.Offsets{}
	for _, m := range b.DescribeGroup(t, group).Members {
		offs[m.MemberID], ends[m.MemberID] = tasks.OffsetsFromKmsg(m.TaskOffsets), tasks.OffsetsFromKmsg(m.TaskEndOffsets)
	}
	return offs, ends
}

// TestPiecesTaskOffsetsReachTheBrokerAndTheCaughtUpStandbyBecomesActive (Kafka 4.4): members b and c
// keep standbys of the one task member a processes. The task offsets the taskoffsets.Tracker builds
// from their stores' changelog positions reach the broker (the group's description shows exactly
// them), and the broker's assignor uses them: when a leaves, the task goes to the standby that is
// caught up. A first group, where both standbys are caught up, shows which of the two the assignor
// picks on a tie; in a second group with the same member IDs that one is held back (it stops
// polling) while a writes more, and the other one becomes active, with nothing left to restore.
//
// Kafka 4.4.0 never assigns warm-up tasks (its AssignmentRefiner returns the target assignment
// unchanged, and the assignor API has no warm-up tasks), so a caught-up standby is how a 4.4.0
// broker moves an active task to caught-up state; warm-up tasks take the same path in the Consumer
// (consume's unit tests).
func TestPiecesTaskOffsetsReachTheBrokerAndTheCaughtUpStandbyBecomesActive(t *testing.T) {
	Get(t).RequireStreams44(t)
	run := uuid.NewString()[:8]
	ids := map[string]string{"a": "a-" + run, "b": "b-" + run, "c": "c-" + run}
	fast := func(c *config.Config) { c.TaskOffsetInterval = 500 * time.Millisecond }
	// start starts a, b and c in that order (each once the previous is in the group) and waits until
	// b and c have applied the whole changelog as standbys and the broker holds their offsets.
	all := taskRange("0", 1)
	start := func(s *piecesSetup) map[string]*counter {
		brRequireGroupConfig(t, s.b, s.group, "streams.num.standby.replicas", "2")
		brRequireGroupConfig(t, s.b, s.group, "streams.task.offset.interval.ms", "500")
		members := map[string]*counter{}
		for _, name := range []string{"a", "b", "c"} {
			id := ids[name]
			members[name] = s.start(t, name, counterOpts{cfg: fast, memberID: id})
			Eventually(t, settle, func() (bool, string) {
				s := members[name].mgr.Snapshot()
				return s.State == membership.Stable && s.MemberID == id && members["a"].active().Equal(all), fmt.Sprint(members)
			})
		}
		s.waitCaughtUp(t)
		x := tasks.ID{Subtopology: "0", Partition: 0}
		end := endOffset(t, s.b, s.changelogTP(x))
		Eventually(t, settle, func() (bool, string) {
			offs, ends := reportedOffsets(t, s.b, s.group)
			ok := end > 0
			for _, name := range []string{"b", "c"} {
				ok = ok && offs[ids[name]][x] == end && ends[ids[name]][x] == end
			}
			return ok, fmt.Sprintf("changelog end %d; reported offsets %v, ends %v", end, offs, ends)
		})
		return members
	}

	// The tie: both standbys caught up.
	tie := newPiecesSetup(t, 1)
	produceKeyed(t, tie.b, tie.input, 100, 8, 0)
	m := start(tie)
	m["a"].close(t)
	var preferred, other string
	Eventually(t, settle, func() (bool, string) {
		switch {
		case m["b"].active().Equal(tie.all):
			preferred, other = "b", "c"
		case m["c"].active().Equal(tie.all):
			preferred, other = "c", "b"
		}
		return preferred != "", fmt.Sprint(m["b"], m["c"])
	})
	t.Logf("on a tie the assignor picks %s's standby", preferred)

	s := newPiecesSetup(t, 1)
	want := produceKeyed(t, s.b, s.input, 100, 8, 0)
	m = start(s)
	x := tasks.ID{Subtopology: "0", Partition: 0}
	held := m[preferred]
	held.closeGate()
	held.waitAtGate(t)
	k := int64(len(handoutsOf(held, x, true, consume.Standby)))
	addCounts(want, produceKeyed(t, s.b, s.input, 100, 8, 100))
	s.waitCaughtUp(t)
	end := endOffset(t, s.b, s.changelogTP(x))
	Eventually(t, settle, func() (bool, string) {
		offs, ends := reportedOffsets(t, s.b, s.group)
		h, o := ids[preferred], ids[other]
		ok := offs[h][x] == k && ends[h][x] == end && offs[o][x] == end && ends[o][x] == end && k < end
		return ok, fmt.Sprintf("%s applied %d of %d: reported offsets %v, ends %v", preferred, k, end, offs, ends)
	})
	m["a"].close(t)
	Eventually(t, settle, func() (bool, string) { return m[other].active().Equal(s.all), fmt.Sprint(m[preferred], m[other]) })
	if held.active().Contains(x) {
		t.Fatalf("the lagging standby %s became active too", preferred)
	}
	if r := handoutsOf(m[other], x, true, consume.Active); len(r) != 0 {
		t.Fatalf("the caught-up standby %s restored %s after becoming active", other, compact(r))
	}
	held.openGate()
	addCounts(want, produceKeyed(t, s.b, s.input, 50, 8, 200))
	s.waitCaughtUp(t)
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}

// TestPiecesGoAndKafkaStreamsShareGroupOutputComplete: a Go member built from the pieces and a Kafka
// Streams 4.4 application run the same topology (count by key, state in a changelogged store) in one
// group. The Go member counts alone, the Java member joins and takes tasks over (restoring the Go
// member's changelog), then leaves gracefully and the Go member takes them back (restoring the Java
// member's changelog). Every input record is counted exactly once: for every key the output holds
// 1, 2, …, n.
func TestPiecesGoAndKafkaStreamsShareGroupOutputComplete(t *testing.T) {
	s := newPiecesSetup(t, 4)
	want := produceKeyed(t, s.b, s.input, 400, 16, 0)
	g := s.start(t, "go", counterOpts{})
	Eventually(t, settle, func() (bool, string) { return g.active().Equal(s.all), g.String() })
	s.waitCaughtUp(t)

	p := startJavaPeer(t, s.b, s.group, s.input, s.output, "counts", javaDefault)
	Eventually(t, javaStart, func() (bool, string) {
		x, j := g.active(), p.activeTasks()
		ok := !x.IsEmpty() && !j.IsEmpty() && x.Union(j).Equal(s.all) && x.Intersect(j).IsEmpty() &&
			g.mgr.State() == membership.Stable && p.currentState() == "RUNNING"
		return ok, fmt.Sprintf("%v %v", g, p)
	})
	addCounts(want, produceKeyed(t, s.b, s.input, 400, 16, 400))
	s.waitCaughtUp(t)
	javaHad := p.everActive()
	p.stop(t)
	Eventually(t, settle, func() (bool, string) { return g.active().Equal(s.all), g.String() })
	addCounts(want, produceKeyed(t, s.b, s.input, 400, 16, 800))
	s.waitCaughtUp(t)
	if errs := p.errorLines(); len(errs) > 0 {
		t.Fatalf("the Java peer failed: %v", errs)
	}
	for id := range javaHad.All() {
		if len(handoutsOf(g, id, true, consume.Active)) == 0 {
			t.Fatalf("task %s came back from the Java member without restoring its changelog", id)
		}
	}
	checkCountedOnce(t, readCounts(t, s.b, s.output), want)
}
