package integration

import (
	"testing"

	"github.com/streamsgroup/streamsgroup/internal/upgradetest"
)

// TestUpgradeProcedures carries out every procedure of docs/upgrades.md, and the wrong turn of
// deleting the group alone, on a running-total application of two members with in-memory stores,
// orders flowing throughout, under at-least-once and exactly-once: every customer's last total is
// the one the procedure promises (internal/upgradetest). plugin/sgpebble runs the same with Pebble
// stores.
func TestUpgradeProcedures(t *testing.T) {
	b := Get(t)
	env := upgradetest.Env{Bootstrap: b.Bootstrap, Tool: b.BuildTool(t, "./cmd/streams-groups")}
	upgradetest.RunAll(t, env)
}
