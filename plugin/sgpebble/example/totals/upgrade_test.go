package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/streamsgroup/streamsgroup/internal/upgradetest"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/stream"
)

// TestUpgradeProceduresOnPebble carries out every procedure of docs/upgrades.md, and the wrong turn
// of deleting the group alone, on a running-total application of two members whose stores are on
// Pebble (each member's state.dir kept across the upgrade, as on a real machine), orders flowing
// throughout, under at-least-once and exactly-once: every customer's last total is the one the
// procedure promises (internal/upgradetest; the integration suite runs the same in memory).
func TestUpgradeProceduresOnPebble(t *testing.T) {
	tool := filepath.Join(t.TempDir(), "streams-groups")
	if out, err := exec.Command("go", "build", "-o", tool, "github.com/streamsgroup/streamsgroup/cmd/streams-groups").CombinedOutput(); err != nil {
		t.Fatalf("building streams-groups: %v\n%s", err, out)
	}
	env := upgradetest.Env{Bootstrap: bootstrap, Tool: tool, Stores: []stream.Option{stream.WithStores(sgpebble.New())}}
	upgradetest.RunAll(t, env)
}
