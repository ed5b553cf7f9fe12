package sgpebble

import (
	"testing"

	"github.com/streamsgroup/streamsgroup/store/storetest"
)

// TestContract runs the store contract every Kind passes (one suite, two implementations: the
// in-memory store runs it in the core module).
func TestContract(t *testing.T) {
	storetest.Run(t, New(), newLoc)
}
