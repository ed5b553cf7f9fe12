package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
)

// Option combinations Kafka's own kafka-streams-groups (StreamsGroupCommand 4.x, run from the
// broker's jars) refuses are refused by ours too, with exit 2 and a message, against a live broker.
func TestCLIValidationRefusesWhatKafkasToolRefuses(t *testing.T) {
	b := Get(t)
	const cls = "org.apache.kafka.tools.streams.StreamsGroupCommand"
	for _, c := range []struct {
		args   []string
		kafka  string // what Kafka's tool says
		ours   string
		noJava bool // Kafka's tool accepts it or has no such option: compare only ours
	}{
		{[]string{"--list", "--members"}, "are unavailable given other options", "--members can't be used with --list", false},
		{[]string{"--list", "--group", "g"}, "can't be used with", "--group can't be used with --list", false},
		{[]string{"--describe", "--group", "g", "--members", "--state"}, "takes at most one of these options", "--describe takes at most one of", false},
		{[]string{"--describe", "--group", "g", "--state", "Stable"}, "does not take a value for", "--describe does not take a value for --state", false},
		{[]string{"--describe"}, "takes one of these options", "--describe needs --group", false},
		{[]string{"--list", "--describe"}, "takes one of these options", "give exactly one of", false},
		{[]string{"--list", "--topology-id", "F"}, "", "not --list and --topology-id", true},
	} {
		args := append([]string{"--bootstrap-server", b.Bootstrap}, c.args...)
		if !c.noJava {
			out, err := b.KafkaTool(t, cls, args...)
			if err == nil || !strings.Contains(err.Error()+out, c.kafka) {
				t.Errorf("Kafka's tool %v: %v\n%s; want a refusal saying %q", c.args, err, out, c.kafka)
			}
		}
		out, errOut, code := tool(t, b, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.ours) {
			t.Errorf("ours %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.ours)
		}
	}
}

// Bad option values are usage errors (exit 2) of the built binary, never blamed on the cluster; -h
// exits 0.
func TestCLIValidationExitCodes(t *testing.T) {
	b := Get(t)
	bs := "--bootstrap-server=" + b.Bootstrap
	out, errOut, code := tool(t, b, "-h")
	if code != 0 || !strings.Contains(out, "--bootstrap-server") || errOut != "" {
		t.Fatalf("-h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out2, _, code := tool(t, b, "--help"); code != 0 || out2 != out {
		t.Fatalf("--help: exit %d", code)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{bs, "--topology-id", "-", "--group", "g", "--topology-epoch", "4294967299"}, "--topology-epoch"},
		{[]string{bs, "--topology-id", "-", "--group", "g", "--topology-epoch", "-1"}, "--topology-epoch"},
		{[]string{bs, "--list", "--timeout", "-5"}, "--timeout"},
		{[]string{"--bootstrap-server", "127.0.0.1:99999", "--list"}, "out of range"},
		{[]string{"--bootstrap-server", "localhost", "--list"}, "has no port"},
		{[]string{bs, "--list", "--state", "Bogus"}, "invalid state"},
	} {
		out, errOut, code := tool(t, b, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "cannot reach") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// On a live group: the members JSON is camelCase throughout (assignment, targetAssignment), --list
// --state matches states case-insensitively as Kafka's tool does, and --describe --topology (Kafka
// 4.4's spelling) shows the topology.
func TestCLIValidationOnALiveGroup(t *testing.T) {
	b := Get(t)
	group, _, topo, members := groupWithMembers(t, b, 2)
	bs := "--bootstrap-server=" + b.Bootstrap

	out, errOut, code := tool(t, b, bs, "--describe", "--group", group, "--members", "--output", "json")
	if code != 0 {
		t.Fatalf("--members json: exit %d %s", code, errOut)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !camel.MatchString(k) {
					t.Errorf("key %q is not camelCase:\n%s", k, out)
				}
				if k != "clientTags" {
					walk(e)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(raw)
	var desc struct {
		Members []struct {
			MemberID         string              `json:"memberId"`
			Assignment       map[string][]string `json:"assignment"`
			TargetAssignment map[string][]string `json:"targetAssignment"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil || len(desc.Members) != 2 || !strings.Contains(out, `"targetAssignment"`) {
		t.Fatalf("members JSON: %v\n%s", err, out)
	}
	for _, m := range members {
		id, _ := m.Member()
		act, _, _ := m.rec.snapshot()
		for _, d := range desc.Members {
			if d.MemberID == id && strings.Join(d.Assignment["active"], ",") != activeIDs(act) {
				t.Errorf("member %s: JSON says %v, the member owns %v", id, d.Assignment["active"], act)
			}
		}
	}

	out, _, code = tool(t, b, bs, "--list", "--state", "sTaBlE")
	if code != 0 || !regexp.MustCompile(regexp.QuoteMeta(group)+`\s+Stable`).MatchString(out) {
		t.Errorf("--list --state sTaBlE: exit %d\n%s", code, out)
	}
	out, _, code = tool(t, b, bs, "--describe", "--group", group, "--topology")
	if code != 0 || !strings.Contains(out, "TOPOLOGY-ID "+topo.ID().String()) {
		t.Errorf("--describe --topology: exit %d\n%s", code, out)
	}

	// A changed topology: the comparison names what differs from the group's.
	file := filepath.Join(t.TempDir(), "other.json")
	other, _ := simpleTopology("elsewhere").MarshalJSON()
	if err := os.WriteFile(file, other, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = tool(t, b, bs, "--topology-id", file, "--group", group)
	if code != 0 || !strings.Contains(out, "changed-without-epoch-bump") || !strings.Contains(out, "DIFFERENCES") ||
		!strings.Contains(out, `source topic "elsewhere" is only in this topology`) {
		t.Errorf("--topology-id of another topology: exit %d\n%s", code, out)
	}
}

// What config accepts at its limits, the broker accepts: a 249-character group.instance.id and five
// client tags with 20-character keys and 30-character values (Kafka Streams' limits) reach the group.
func TestConfigLimitsAcceptedByTheBroker(t *testing.T) {
	b := Get(t)
	b.RequireStreams44(t) // static membership
	topic, group := Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 2)
	b.DeleteGroupAtEnd(t, group)
	instance := strings.Repeat("i", 249)
	m := map[string]string{config.KeyApplicationID: group, config.KeyGroupInstanceID: instance}
	for i := range 5 {
		m[fmt.Sprintf("client.tag.%s%d", strings.Repeat("k", 19), i)] = strings.Repeat("v", 30)
	}
	cfg, err := config.FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	member := startMember(t, b, group, simpleTopology(topic), "limits", nil, func(c *config.Config) {
		c.GroupInstanceID, c.ClientTags = cfg.GroupInstanceID, cfg.ClientTags
	})
	Eventually(t, settle, func() (bool, string) { return member.State() == membership.Stable, member.State().String() })
	d := b.DescribeGroup(t, group)
	if len(d.Members) != 1 || d.Members[0].InstanceID == nil || *d.Members[0].InstanceID != instance || len(d.Members[0].ClientTags) != 5 {
		t.Fatalf("described: %+v", d.Members)
	}
}
