package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/stream"
)

// TestRuntimeWarnsOfStateWithoutOffsets: the doubling case of a topology upgrade done by deleting
// the group but keeping its changelogs. App a counts and stops; its restart warns of nothing (it has
// committed offsets); then the group is deleted (offsets gone, changelog kept) and app b, starting
// over, restores the old counts while its inputs start again from the beginning: the runtime says
// so with an *stream.OrphanedStateWarning naming the command that fixes it.
func TestRuntimeWarnsOfStateWithoutOffsets(t *testing.T) {
	s := newRTSetup(t, 2)
	produceKeyed(t, s.b, s.input, 100, 8, 0)
	var mu sync.Mutex
	var warnings []error
	listen := rtOpts{opts: []stream.Option{stream.WithWarningListener(func(err error) {
		mu.Lock()
		warnings = append(warnings, err)
		mu.Unlock()
	})}}
	a := s.start(t, "a", listen)
	a.runningWith(t, s.all)
	s.waitCaughtUp(t)
	a.stopClean(t)
	a2 := s.start(t, "a2", listen)
	a2.runningWith(t, s.all)
	a2.stopClean(t)
	mu.Lock()
	if len(warnings) != 0 {
		t.Fatalf("warnings with committed offsets: %v", warnings)
	}
	mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.b.Admin(t).DeleteGroup(ctx, s.group); err != nil {
		t.Fatalf("deleting the group: %v", err)
	}
	b := s.start(t, "b", listen)
	b.runningWith(t, s.all)
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
	b.stopClean(t)
}
