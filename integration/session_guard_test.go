package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/membership"
)

// TestSessionGuardNoDoubleOwnershipAcrossACut (issue 11 §5): member a is cut off from the broker
// (every connection reset, new ones too) for longer than the group's session timeout, which is set
// per group to 4 s (the broker's default here is 6 s, so a member that did not read the group's
// value would let go too late). The broker expires a and gives its tasks to c. The session guard
// makes a give them up first: no active task is ever held by both. When the network is back, a
// rejoins and the group ends split again.
func TestSessionGuardNoDoubleOwnershipAcrossACut(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)
	b.SetGroupConfig(t, group, "streams.session.timeout.ms", "4000")
	own := newOwnership()
	all := taskRange("0", 4)
	p := newResetProxy(t, b.Bootstrap)
	a := startMemberOn(t, proxiedClient(t, b, p), group, simpleTopology(topic), "a", own)
	c := startMember(t, b, group, simpleTopology(topic), "c", own)
	split := func() (bool, string) {
		x, _, _ := a.rec.snapshot()
		y, _, _ := c.rec.snapshot()
		return x.Len() == 2 && y.Len() == 2 && x.Union(y).Equal(all) && a.State() == membership.Stable && c.State() == membership.Stable,
			fmt.Sprintf("a=%v (%s) c=%v (%s)", x, a.State(), y, c.State())
	}
	Eventually(t, settle, split)
	if got := a.Snapshot().SessionTimeout; got != 4*time.Second {
		t.Fatalf("member a works with a session timeout of %v, want the group's 4s", got)
	}
	aID, _ := a.Member()

	p.SetDown(true)
	// The broker expires a after 4 s and c takes everything; a must have let go before.
	Eventually(t, settle, func() (bool, string) {
		y, _, _ := c.rec.snapshot()
		ids := groupMemberIDs(t, b, group)
		return y.Equal(all) && !ids[aID], fmt.Sprintf("c=%v, members %v", y, ids)
	})
	own.check(t) // the point: no task was held by both, though a could not hear of the expiry
	if _, ok := a.sawEvent(membership.EventSessionLost); !ok {
		t.Fatalf("a never reported EventSessionLost; events: %s", a.eventKinds())
	}
	if x, _, _ := a.rec.snapshot(); !x.IsEmpty() {
		t.Fatalf("a still holds %v while c holds everything", x)
	}

	p.SetDown(false)
	Eventually(t, settle, split)
	own.check(t)
	if a.Err() != nil || c.Err() != nil {
		t.Fatalf("a member stopped: %v / %v", a.Err(), c.Err())
	}
}
