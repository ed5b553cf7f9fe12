//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/topology"
)

// TestTotalsOnAFullDisk runs a totals member whose state.dir is a small tmpfs, and fills that file
// system while orders come in. The member stops with an error that says the disk is full and what
// to do (no panic, no hang, no clean exit); once space is freed, a restart on the same state.dir
// restores and goes on, and every total is exact under exactly_once_v2 (no order lost under
// at_least_once). Mounting a tmpfs needs root, as CI runs.
func TestTotalsOnAFullDisk(t *testing.T) {
	bin := buildTotals(t)
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) {
			group := fmt.Sprintf("totals-full-%s-%d", strings.ReplaceAll(guarantee, "_", ""), time.Now().UnixNano())
			cl := client(t)
			adm := kadm.NewClient(cl)
			freshTopics(t, adm, topology.Names{AppID: group}.ChangelogTopic("totals"))
			logs := t.TempDir()
			state := t.TempDir()
			if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=32m"); err != nil {
				t.Fatalf("mounting a 32 MiB tmpfs on %s (the test needs root, as CI has): %v", state, err)
			}
			t.Cleanup(func() {
				if err := syscall.Unmount(state, 0); err != nil {
					t.Errorf("unmounting %s: %v", state, err)
				}
			})
			keys := []string{"bootstrap.servers=" + bootstrap, "application.id=" + group, "processing.guarantee=" + guarantee,
				"commit.interval.ms=200", "state.dir=" + filepath.Join(state, "a")}
			a := start(t, bin, logs, "a", keys...)
			want, count := orders(t, cl, 0, 2000)
			eventually(t, 2*time.Minute, func() (bool, string) { return caughtUp(adm, group) })

			// Fill the file system to 4 MiB free, below a store's reserve.
			var st syscall.Statfs_t
			if err := syscall.Statfs(state, &st); err != nil {
				t.Fatal(err)
			}
			free := int64(st.Bavail) * st.Bsize
			filler := filepath.Join(state, "filler")
			if err := os.WriteFile(filler, make([]byte, free-4<<20), 0o644); err != nil {
				t.Fatalf("filling the disk: %v", err)
			}
			more, moreCount := orders(t, cl, 2000, 2000)
			var err error
			select {
			case err = <-a.done:
				a.done <- err
			case <-time.After(time.Minute):
				t.Fatalf("the member went on for a minute on a full disk (log in %s)", logs)
			}
			log, _ := os.ReadFile(filepath.Join(logs, "a.log"))
			if err == nil || !strings.Contains(string(log), "no space left on device") || !strings.Contains(string(log), "free space under state.dir") {
				t.Fatalf("the member on a full disk exited with %v; want an error that says the disk is full and what to do:\n%s", err, log)
			}
			t.Logf("the member stopped with: %s", lastLine(string(log)))
			for _, bad := range []string{"panic:", "fatal error:", "goroutine "} {
				if strings.Contains(string(log), bad) {
					t.Fatalf("the member on a full disk crashed (%q):\n%s", bad, log)
				}
			}

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			a = start(t, bin, logs, "a2", keys...)
			last, lastCount := orders(t, cl, 4000, 1000)
			eventually(t, 3*time.Minute, func() (bool, string) { return caughtUp(adm, group) })
			if err := a.stop(syscall.SIGTERM); err != nil {
				t.Fatalf("the restarted member after SIGTERM: %v (log in %s)", err, logs)
			}
			for _, m := range []map[string]int64{more, last} {
				for k, v := range m {
					want[k] += v
				}
			}
			for _, m := range []map[string]int{moreCount, lastCount} {
				for k, v := range m {
					count[k] += v
				}
			}
			got := outputTotals(t, adm)
			var wrong []string
			for c, total := range want {
				updates := got[c]
				switch {
				case len(updates) == 0:
					wrong = append(wrong, fmt.Sprintf("%s: no total", c))
				case guarantee == "exactly_once_v2" && (updates[len(updates)-1] != total || len(updates) != count[c]):
					wrong = append(wrong, fmt.Sprintf("%s: total %d after %d updates, want %d after %d", c, updates[len(updates)-1], len(updates), total, count[c]))
				case updates[len(updates)-1] < total:
					wrong = append(wrong, fmt.Sprintf("%s: total %d < %d: orders lost", c, updates[len(updates)-1], total))
				}
			}
			if len(wrong) > 0 {
				t.Fatalf("%d of %d totals wrong after the full disk (logs in %s):\n%s", len(wrong), len(want), logs, strings.Join(wrong, "\n"))
			}
		})
	}
}

// lastLine is the last line of s that is not empty.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
