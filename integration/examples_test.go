package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runExample runs `go run ./examples/<name> args...` from the module root against the test broker
// and returns its combined output; the test fails if it exits non-zero.
func runExample(t *testing.T, b *Broker, name string, args ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", append([]string{"run", "./examples/" + name}, args...)...)
	cmd.Dir = filepath.Dir(filepath.Dir(file))
	cmd.Env = append(os.Environ(), "STREAMSGROUP_BOOTSTRAP="+b.Bootstrap)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("examples/%s: %v\n%s", name, err, out)
	}
	return string(out)
}

// TestWordCountDemoCountsEveryWord runs the demo (three wordcount processes, a producer, one member
// stopped half-way) and relies on its own check of every final count against what was produced.
func TestWordCountDemoCountsEveryWord(t *testing.T) {
	out := runExample(t, Get(t), "demo", "-lines", "800", "-every", "2ms")
	if !strings.Contains(out, "counts verified") || !strings.Contains(out, "stopping member-2") {
		t.Fatalf("the demo did not verify its counts:\n%s", out)
	}
}

// TestTopologyUpgradeExample runs the topology-upgrade walk-through end to end.
func TestTopologyUpgradeExample(t *testing.T) {
	out := runExample(t, Get(t), "topology-upgrade")
	for _, want := range []string{"refused: the group runs topology", "event stale-topology", "the group now runs topology"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
}
