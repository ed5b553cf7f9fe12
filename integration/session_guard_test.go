package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/machine"
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
	// A per-group session timeout below the broker's 6 s, so that a member that did not read the
	// group's value would let go too late. Kafka 4.2 refuses it (it checks a group's value against
	// the built-in bounds, 45-60 s): there the broker's own 6 s applies, which that line reports as
	// the built-in 45 s, so the member must read the coordinator's config instead; also a test.
	session := 4 * time.Second
	if err := trySetGroupConfig(t, b, group, "streams.session.timeout.ms", "4000"); errors.Is(err, kerr.InvalidConfig) {
		t.Logf("this broker refuses streams.session.timeout.ms=4000 (%v): the broker's default applies", err)
		session = brokerSessionTimeout(t, b)
	} else if err != nil {
		t.Fatal(err)
	} else {
		b.SetGroupConfig(t, group, "streams.session.timeout.ms", "4000") // and wait until a describe shows it
	}
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
	Eventually(t, settle, func() (bool, string) {
		got := a.Snapshot().SessionTimeout
		return got == session, fmt.Sprintf("member a works with a session timeout of %v, want the group's %v", got, session)
	})
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

// TestSessionGuardReadsTheBrokersDefault: in a group without its own streams.session.timeout.ms, the
// guard works with the broker's group.streams.session.timeout.ms (6 s here), on every supported
// line. Kafka 4.2 reports the built-in 45 s as the group's value then; the member checks that
// against the coordinator's broker config.
func TestSessionGuardReadsTheBrokersDefault(t *testing.T) {
	b := Get(t)
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	want := brokerSessionTimeout(t, b)
	m := startMember(t, b, group, simpleTopology(topic), "a", nil)
	Eventually(t, settle, func() (bool, string) {
		got := m.Snapshot().SessionTimeout
		return got == want, fmt.Sprintf("the member's session timeout is %v, the broker's %v", got, want)
	})
}

// brokerSessionTimeout is the broker's group.streams.session.timeout.ms (its static config).
func brokerSessionTimeout(t *testing.T, b *Broker) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := b.Admin(t)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) == 0 {
		t.Fatalf("broker metadata: %v", err)
	}
	rc, err := adm.DescribeBrokerConfigs(ctx, md.Brokers[0].NodeID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rc {
		for _, c := range r.Configs {
			if c.Key == machine.KeyBrokerSessionTimeout && c.Value != nil {
				ms, err := strconv.Atoi(*c.Value)
				if err != nil {
					t.Fatal(err)
				}
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	t.Fatalf("the broker did not report %s", machine.KeyBrokerSessionTimeout)
	return 0
}

// trySetGroupConfig sets a group config and returns the broker's refusal instead of failing.
func trySetGroupConfig(t *testing.T, b *Broker, group, key, value string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = key, &value
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err != nil {
		return err
	}
	if len(resp.Resources) == 0 {
		return fmt.Errorf("no answer for group %s", group)
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}
