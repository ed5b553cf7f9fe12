package integration

import (
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/config"
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
	for _, p := range upgradetest.Procedures {
		t.Run(strings.ReplaceAll(p.Name, " ", "_"), func(t *testing.T) {
			for _, g := range []config.Guarantee{config.AtLeastOnce, config.ExactlyOnceV2} {
				t.Run(string(g), func(t *testing.T) {
					t.Parallel()
					upgradetest.Run(t, env, p, g)
				})
			}
		})
	}
}
