package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/topology"
)

// TestTotalsOnTwoStreamThreads: two processes of two stream threads each (num.stream.threads=2),
// Pebble stores, a standby replica, exactly-once. A stops cleanly: B's two threads take every task,
// a task whose standby one of B's threads held going active on whichever thread the broker picks (a
// store directory is open in one thread at a time, so the thread that had it closes it first); A
// comes back and takes tasks again. Every total is exact, and every update visible once.
func TestTotalsOnTwoStreamThreads(t *testing.T) {
	bin := buildTotals(t)
	group := fmt.Sprintf("totals-threads-%d", time.Now().UnixNano())
	cl := client(t)
	adm := kadm.NewClient(cl)
	freshTopics(t, adm, topology.Names{AppID: group}.ChangelogTopic("totals"))
	setGroupConfig(t, cl, group, "streams.num.standby.replicas", "1")
	dir := t.TempDir()
	keys := func(name string) []string {
		return []string{"bootstrap.servers=" + bootstrap, "application.id=" + group, "processing.guarantee=exactly_once_v2",
			"commit.interval.ms=200", "num.stream.threads=2", "state.dir=" + filepath.Join(dir, name)}
	}
	a := start(t, bin, dir, "a", keys("a")...)
	b := start(t, bin, dir, "b", keys("b")...)

	l := newLedger()
	want, count := l.want, l.count
	produce := func(from, n int) { l.produce(t, cl, from, n) }
	produce(0, 2000)
	eventually(t, 2*time.Minute, func() (bool, string) { return caughtUp(adm, group) })
	if err := a.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("member a after SIGTERM: %v (log in %s)", err, dir)
	}
	produce(2000, 2000)
	eventually(t, 2*time.Minute, func() (bool, string) { return caughtUp(adm, group) })
	a = start(t, bin, dir, "a2", keys("a")...)
	produce(4000, 2000)
	eventually(t, 2*time.Minute, func() (bool, string) { return caughtUp(adm, group) })

	got := outputTotals(t, adm)
	var wrong []string
	for c, total := range want {
		updates := got[c]
		if len(updates) == 0 || updates[len(updates)-1] != total || len(updates) != count[c] {
			wrong = append(wrong, fmt.Sprintf("%s: updates %v, want the last %d after %d", c, updates, total, count[c]))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d of %d totals wrong (logs in %s):\n%s", len(wrong), len(want), dir, strings.Join(wrong, "\n"))
	}
	for name, m := range map[string]*member{"a": a, "b": b} {
		if err := m.stop(syscall.SIGTERM); err != nil {
			t.Errorf("member %s after SIGTERM: %v (log in %s)", name, err, dir)
		}
	}
}
