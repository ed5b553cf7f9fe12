package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

// tool runs our streams-groups binary and returns stdout, stderr and the exit code.
func tool(t *testing.T, b *Broker, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(b.BuildTool(t, "./cmd/streams-groups"), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// groupWithMembers starts n Go members of a fresh group over a 4-partition topic and waits until
// the group is stable with every task assigned.
func groupWithMembers(t *testing.T, b *Broker, n int) (group, topic string, topo *topology.Topology, members []*member) {
	t.Helper()
	topic, group = Name(t, "in"), Name(t, "app")
	b.CreateTopic(t, topic, 4)
	b.DeleteGroupAtEnd(t, group)
	topo = simpleTopology(topic)
	for i := range n {
		members = append(members, startMember(t, b, group, topo, fmt.Sprintf("m%d", i), nil))
	}
	Eventually(t, settle, func() (bool, string) {
		total := 0
		for _, m := range members {
			if m.State() != membership.Stable {
				return false, "not stable"
			}
			a, _, _ := m.rec.snapshot()
			total += a.Len()
		}
		d := b.DescribeGroup(t, group)
		return total == 4 && d.State == "Stable", fmt.Sprintf("%d tasks owned, group %s", total, d.State)
	})
	return group, topic, topo, members
}

func TestCLIListAndDescribe(t *testing.T) {
	b := Get(t)
	group, topic, topo, members := groupWithMembers(t, b, 3)
	bs := "--bootstrap-server=" + b.Bootstrap

	out, _, code := tool(t, b, bs, "--list")
	if code != 0 || !strings.Contains(out, group+"\n") {
		t.Fatalf("--list (exit %d) does not show %s:\n%s", code, group, out)
	}
	out, _, _ = tool(t, b, bs, "--list", "--state", "Stable")
	if !regexp.MustCompile(regexp.QuoteMeta(group) + `\s+Stable`).MatchString(out) {
		t.Fatalf("--list --state Stable:\n%s", out)
	}

	out, _, code = tool(t, b, bs, "--describe", "--group", group, "--members", "--output", "json")
	if code != 0 {
		t.Fatalf("describe --members exit %d", code)
	}
	var desc struct {
		Members []struct {
			MemberID   string              `json:"memberId"`
			Assignment map[string][]string `json:"assignment"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if len(desc.Members) != 3 {
		t.Fatalf("%d members described, want 3", len(desc.Members))
	}
	for _, m := range members {
		id, _ := m.Member()
		act, _, _ := m.rec.snapshot()
		found := false
		for _, d := range desc.Members {
			if d.MemberID == id {
				found = true
				if strings.Join(d.Assignment["active"], ",") != activeIDs(act) {
					t.Errorf("member %s: tool says %v, the member owns %v", id, d.Assignment["active"], act)
				}
			}
		}
		if !found {
			t.Errorf("member %s missing from the description", id)
		}
	}

	out, _, _ = tool(t, b, bs, "--describe", "--group", group, "--state", "--verbose")
	if !regexp.MustCompile(`Stable\s+\d+\s+\d+\s+3\n`).MatchString(out) {
		t.Fatalf("--state --verbose:\n%s", out)
	}

	out, _, _ = tool(t, b, bs, "--topology", "--group", group)
	if !strings.Contains(out, "TOPOLOGY-ID "+topo.ID().String()) || !strings.Contains(out, topic) {
		t.Fatalf("--topology does not show the topology ID %s:\n%s", topo.ID(), out)
	}
	out, _, _ = tool(t, b, bs, "--next-epoch", "--group", group)
	if strings.TrimSpace(out) != "1" {
		t.Fatalf("--next-epoch = %q, want 1", out)
	}

	// --topology-id: the ID of a local JSON definition, and its comparison with the group.
	file := filepath.Join(t.TempDir(), "topology.json")
	js, _ := topo.MarshalJSON()
	if err := os.WriteFile(file, js, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = tool(t, b, "--topology-id", file)
	if strings.TrimSpace(out) != topo.ID().String() {
		t.Fatalf("--topology-id = %q, want %s", out, topo.ID())
	}
	out, _, _ = tool(t, b, bs, "--topology-id", file, "--group", group, "--output", "json")
	var cmp map[string]any
	if err := json.Unmarshal([]byte(out), &cmp); err != nil || cmp["verdict"] != "same" {
		t.Fatalf("comparison: %v %s", err, out)
	}
	other, _ := simpleTopology("elsewhere").MarshalJSON()
	_ = os.WriteFile(file, other, 0o644)
	out, _, _ = tool(t, b, bs, "--topology-id", file, "--group", group)
	if !strings.Contains(out, "changed-without-epoch-bump") || !strings.Contains(out, "topology.epoch 1") {
		t.Fatalf("comparison of another topology:\n%s", out)
	}
}

func TestCLIOffsetsDeleteAndErrors(t *testing.T) {
	b := Get(t)
	group, topic, _, members := groupWithMembers(t, b, 2)
	bs := "--bootstrap-server=" + b.Bootstrap

	_, errOut, code := tool(t, b, bs, "--delete", "--group", group)
	if code != 5 || !strings.Contains(errOut, "still has members") {
		t.Fatalf("delete of a non-empty group: exit %d, %q", code, errOut)
	}
	for _, m := range members {
		m.close(t)
	}
	// An empty streams group takes admin commits; then --offsets shows them and the lag.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1})
	if resp, err := b.Admin(t).CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	out, _, code := tool(t, b, bs, "--describe", "--group", group, "--offsets", "--verbose")
	if code != 0 || !regexp.MustCompile(regexp.QuoteMeta(topic)+`\s+1\s+0\s+`).MatchString(out) {
		t.Fatalf("--offsets --verbose (exit %d):\n%s", code, out)
	}

	out, _, code = tool(t, b, bs, "--delete", "--group", group)
	if code != 0 || !strings.Contains(out, "successful") {
		t.Fatalf("delete of the empty group: exit %d\n%s", code, out)
	}
	out, _, _ = tool(t, b, bs, "--list")
	if strings.Contains(out, group+"\n") {
		t.Fatal("the deleted group is still listed")
	}

	_, errOut, code = tool(t, b, bs, "--describe", "--group", "no-such-group-"+group)
	if code != 3 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("unknown group: exit %d %q", code, errOut)
	}

	// A classic consumer group passed by mistake.
	consumer := Name(t, "consumer")
	var c kadm.Offsets
	c.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := b.Admin(t).CommitOffsets(ctx, consumer, c); err != nil {
		t.Fatal(err)
	}
	b.DeleteGroupAtEnd(t, consumer)
	_, errOut, code = tool(t, b, bs, "--describe", "--group", consumer)
	if code != 4 || !strings.Contains(errOut, "not a streams group") {
		t.Fatalf("consumer group: exit %d %q", code, errOut)
	}
	_, _, code = tool(t, b, bs, "--delete", "--group", consumer)
	if code != 4 {
		t.Fatalf("deleting a consumer group through streams-groups must be refused, exit %d", code)
	}
	if _, err := admin.NewClient(b.Client(t)).Describe(ctx, consumer); !errors.Is(err, admin.ErrNotStreamsGroup) {
		t.Fatalf("admin.Describe of a consumer group: %v", err)
	}

	_, errOut, code = tool(t, b, "--bootstrap-server=127.0.0.1:1", "--list", "--timeout", "1500")
	if code != 1 || !strings.Contains(errOut, "cannot reach the cluster at 127.0.0.1:1") {
		t.Fatalf("unreachable broker: exit %d %q", code, errOut)
	}
	_, _, code = tool(t, b, "--list")
	if code != 2 {
		t.Fatalf("missing --bootstrap-server: exit %d, want 2", code)
	}
}

// kafkaMembers parses kafka-streams-groups --describe --members --verbose output (or ours) into
// member ID -> "epoch assignments".
func parseMembers(t *testing.T, out string) map[string]string {
	t.Helper()
	res := map[string]string{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 9 {
			t.Fatalf("unexpected line %q in\n%s", l, out)
		}
		// GROUP TARGET-EPOCH TOPOLOGY-EPOCH MEMBER PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS...
		res[f[3]] = f[5] + " " + strings.Join(f[8:], " ")
	}
	return res
}

// TestCLIAgreesWithKafkasTool runs Kafka's own kafka-streams-groups (StreamsGroupCommand from the
// broker's jars) and ours on the same group and compares state, members and assignments.
func TestCLIAgreesWithKafkasTool(t *testing.T) {
	b := Get(t)
	group, _, _, _ := groupWithMembers(t, b, 3)
	bs := "--bootstrap-server=" + b.Bootstrap
	const cls = "org.apache.kafka.tools.streams.StreamsGroupCommand"

	theirs, err := b.KafkaTool(t, cls, "--bootstrap-server", b.Bootstrap, "--describe", "--group", group, "--members", "--verbose")
	if err != nil {
		t.Fatal(err)
	}
	ours, _, code := tool(t, b, bs, "--describe", "--group", group, "--members", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	a, o := parseMembers(t, theirs), parseMembers(t, ours)
	if len(a) != 3 || fmt.Sprint(sortedMap(a)) != fmt.Sprint(sortedMap(o)) {
		t.Fatalf("members disagree\nkafka:\n%s\nours:\n%s", theirs, ours)
	}

	theirs, err = b.KafkaTool(t, cls, "--bootstrap-server", b.Bootstrap, "--describe", "--group", group, "--state", "--verbose")
	if err != nil {
		t.Fatal(err)
	}
	ours, _, _ = tool(t, b, bs, "--describe", "--group", group, "--state", "--verbose")
	state := func(s string) string {
		f := strings.Fields(strings.Split(strings.TrimSpace(s), "\n")[1])
		// GROUP COORDINATOR (ID) ASSIGNOR STATE GROUP-EPOCH TARGET-EPOCH #MEMBERS
		return strings.Join(append([]string{f[0]}, f[len(f)-4:]...), " ")
	}
	if state(theirs) != state(ours) {
		t.Fatalf("state disagrees\nkafka:\n%s\nours:\n%s", theirs, ours)
	}

	theirs, err = b.KafkaTool(t, cls, "--bootstrap-server", b.Bootstrap, "--list")
	if err != nil {
		t.Fatal(err)
	}
	ours, _, _ = tool(t, b, bs, "--list")
	if sortedLines(theirs) != sortedLines(ours) {
		t.Fatalf("--list disagrees\nkafka:\n%s\nours:\n%s", theirs, ours)
	}
}

func sortedMap(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func sortedLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}
