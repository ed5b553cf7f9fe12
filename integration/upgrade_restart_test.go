package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
)

// TestInternalTopicsDeletedTenRestarts: the state dropped and the input position kept ten times in
// a row (docs/upgrades.md's second procedure: `--reset-offsets --to-current --execute
// --delete-all-internal-topics`, the group kept), each time followed by a start of two members
// while the broker re-creates the changelog: every start processes what came in meanwhile, from an
// empty store, and catches up, without a stall. Under exactly-once, so the output is read as
// committed.
func TestInternalTopicsDeletedTenRestarts(t *testing.T) {
	s := newRTSetup(t, 2)
	b := s.b
	bs := "--bootstrap-server=" + b.Bootstrap
	member := func() rtOpts {
		dir := t.TempDir() // each member its own state.dir, kept across the rounds
		return rtOpts{cfg: func(c *config.Config) { c.Runtime.Guarantee, c.StateDir = config.ExactlyOnceV2, dir }}
	}
	oa, ob := member(), member()
	const rounds, perRound, keys = 10, 40, 8
	for i := range rounds {
		produceKeyed(t, b, s.input, perRound, keys, perRound*i)
		start := time.Now()
		m1 := s.start(t, "a", oa)
		m2 := s.start(t, "b", ob)
		s.waitCaughtUp(t)
		t.Logf("start %d caught up in %v", i, time.Since(start).Round(time.Millisecond))
		m1.stopClean(t)
		m2.stopClean(t)
		if out, errOut, code := tool(t, b, bs, "--reset-offsets", "--group", s.group, "--all-input-topics", "--to-current",
			"--execute", "--delete-all-internal-topics"); code != 0 {
			t.Fatalf("reset: exit %d\n%s%s", code, out, errOut)
		}
		if i%2 == 0 {
			// Half the starts come while the broker still deletes the changelog, half after.
			Eventually(t, settle, func() (bool, string) {
				return !topicsExist(t, b, s.changelog)[s.changelog], s.changelog + " still exists"
			})
		}
	}
	// Each round counted its 5 records per key from an empty store: 1…5, ten times.
	var once []int64
	for n := range int64(perRound / keys) {
		once = append(once, n+1)
	}
	var want []int64
	for range rounds {
		want = append(want, once...)
	}
	var wrong []string
	for k, seq := range readCommittedCounts(t, clientsOf(t, b), s.output) {
		if !slices.Equal(seq, want) {
			wrong = append(wrong, fmt.Sprintf("%s: %v", k, seq))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("counts per key not 1…5 per round:\n%s", strings.Join(wrong, "\n"))
	}
}
