package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/stream"
)

// TestRuntimeRefusesStateWithoutOffsets: the doubling case of a topology upgrade done by deleting
// the group but keeping its changelogs. App a counts and stops; its restart finds committed offsets
// and goes on. Then the group is deleted (offsets gone, changelog kept): app b restores the old
// counts, and instead of reading its input again on top of them stops with an
// *stream.OrphanedStateError naming the group, a task, its store and changelog, and the way on —
// having processed and committed nothing. With allow.state.without.committed.offsets=true, app c
// does what was asked: it starts on the state, with an *stream.OrphanedStateWarning per task.
func TestRuntimeRefusesStateWithoutOffsets(t *testing.T) {
	s := newRTSetup(t, 2)
	produceKeyed(t, s.b, s.input, 100, 8, 0)
	var mu sync.Mutex
	var warnings []error
	listen := func(allow bool) rtOpts {
		return rtOpts{cfg: func(c *config.Config) { c.Runtime.AllowStateWithoutCommittedOffsets = allow },
			opts: []stream.Option{stream.WithWarningListener(func(err error) {
				mu.Lock()
				warnings = append(warnings, err)
				mu.Unlock()
			})}}
	}
	a := s.start(t, "a", listen(false))
	a.runningWith(t, s.all)
	s.waitCaughtUp(t)
	a.stopClean(t)
	a2 := s.start(t, "a2", listen(false))
	a2.runningWith(t, s.all)
	a2.stopClean(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.b.Admin(t).DeleteGroup(ctx, s.group); err != nil {
		t.Fatalf("deleting the group: %v", err)
	}
	b := s.start(t, "b", listen(false))
	err := b.wait(t, 2*settle)
	oe := errorAs[*stream.OrphanedStateError](t, err)
	if oe.Group != s.group || !s.all.Contains(oe.Task) || len(oe.Stores) == 0 || oe.Stores[0].Keys == 0 ||
		oe.Stores[0].Changelog.Topic != s.changelog || oe.Stores[0].Changelog.Partition != oe.Task.Partition {
		t.Fatalf("error %+v; want the group, a task, its store and changelog", oe)
	}
	for _, want := range []string{"--delete-all-internal-topics", "--from-file", "allow.state.without.committed.offsets", "docs/upgrades.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if n := b.app.Metrics().Processed; n != 0 {
		t.Errorf("b processed %d records; want none", n)
	}
	if offs := committedInputs(t, s.b, s.group, s.input); len(offs) != 0 {
		t.Errorf("committed %v after the refusal; want nothing", offs)
	}

	c := s.start(t, "c", listen(true))
	c.runningWith(t, s.all)
	Eventually(t, time.Minute, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(warnings) == s.all.Len(), "no warning for every task yet"
	})
	seen := map[string]bool{}
	mu.Lock()
	for _, err := range warnings {
		w := errorAs[*stream.OrphanedStateWarning](t, err)
		if w.Group != s.group || w.Keys == 0 || !s.all.Contains(w.Task) {
			t.Fatalf("warning %+v", w)
		}
		seen[w.Task.String()] = true
	}
	mu.Unlock()
	if len(seen) != s.all.Len() {
		t.Fatalf("warnings for %v, want one for each of %v", seen, s.all)
	}
	c.stopClean(t)
}
