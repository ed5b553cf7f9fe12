package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
)

// appCluster is a kfake cluster with topic "in" (2 partitions, 5 records each), the internal
// topics of group "app" (a repartition and a changelog topic), a changelog of another application,
// commits of app at in-0=1 and in-1=2, and StreamsGroupDescribe answering app in *state.
func appCluster(t *testing.T) (bootstrap string, adm *kadm.Client, state *atomic.Value) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kfakestreams.Advertise(ctx, c, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	state = &atomic.Value{}
	state.Store("Empty")
	c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.StreamsGroupDescribeRequest)
		resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range r.Groups {
			if g != "app" {
				resp.Groups = append(resp.Groups, kmsg.StreamsGroupDescribeResponseGroup{Group: g, ErrorCode: kerr.GroupIDNotFound.Code})
				continue
			}
			grp := kmsg.StreamsGroupDescribeResponseGroup{Group: g, State: state.Load().(string),
				Topology: &kmsg.StreamsGroupDescribeResponseGroupTopology{Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
					{SubtopologyID: "0", SourceTopics: []string{"in"}, RepartitionSinkTopics: []string{"app-rekey-repartition"}},
					{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-rekey-repartition"}},
						StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-counts-changelog"}}},
				}}}
			if grp.State != "Empty" {
				grp.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{{MemberID: "m"}}
			}
			resp.Groups = append(resp.Groups, grp)
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.ListGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.Groups = []kmsg.ListGroupsResponseGroup{{Group: "app", GroupType: "streams", GroupState: state.Load().(string)},
			{Group: "a-consumer-group", GroupType: "consumer", GroupState: "Empty"}}
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm = kadm.NewClient(cl)
	for topic, n := range map[string]int32{"in": 2, "app-rekey-repartition": 2, "app-counts-changelog": 2, "other-counts-changelog": 1} {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for p := range int32(2) {
		for range 5 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "in", Partition: 0, At: 1, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "in", Partition: 1, At: 2, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "app", offs); err != nil {
		t.Fatal(err)
	}
	return "--bootstrap-server=" + strings.Join(c.ListenAddrs(), ","), adm, state
}

func committedOf(t *testing.T, adm *kadm.Client) string {
	t.Helper()
	r, err := adm.FetchOffsets(context.Background(), "app")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, o := range r.Sorted() {
		parts = append(parts, fmt.Sprintf("%s-%d=%d", o.Topic, o.Partition, o.At))
	}
	return strings.Join(parts, " ")
}

func runCLI(args ...string) (string, string, int) {
	var out, errw bytes.Buffer
	code := run(args, &out, &errw)
	return out.String(), errw.String(), code
}

func TestResetOffsetsCommand(t *testing.T) {
	b, adm, state := appCluster(t)
	// A dry run by default: the plan, Kafka's columns, and a note on stderr; nothing committed.
	out, errOut, code := runCLI(b, "--reset-offsets", "--group", "app", "--all-input-topics", "--to-earliest")
	if code != exitOK || out != "GROUP TOPIC PARTITION NEW-OFFSET\napp   in    0         0\napp   in    1         0\n" ||
		!strings.Contains(errOut, "Dry run (the default)") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	if got := committedOf(t, adm); got != "in-0=1 in-1=2" {
		t.Fatalf("a dry run committed: %s", got)
	}
	// --export: the CSV --from-file reads back.
	out, _, _ = runCLI(b, "--reset-offsets", "--group", "app", "--input-topic", "in:1", "--shift-by", "2", "--dry-run", "--export")
	if out != "\"in\",1,4\n" {
		t.Fatalf("export: %q", out)
	}
	plan := planFile(t, out)
	out, _, code = runCLI(b, "--reset-offsets", "--group", "app", "--from-file", plan, "--execute")
	if code != exitOK || !strings.Contains(out, "app   in    1         4") {
		t.Fatalf("from file: exit %d\n%s", code, out)
	}
	if got := committedOf(t, adm); got != "in-0=1 in-1=4" {
		t.Fatalf("after --execute: %s", got)
	}
	// JSON, with the internal topics that would go.
	out, _, code = runCLI(b, "--reset-offsets", "--group", "app", "--all-input-topics", "--to-latest", "--dry-run",
		"--delete-all-internal-topics", "--output", "json")
	var doc struct {
		DryRun bool `json:"dryRun"`
		Groups []struct {
			Group      string `json:"group"`
			NewOffsets []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				NewOffset int64  `json:"newOffset"`
			} `json:"newOffsets"`
			InternalTopics struct {
				ToDelete []string `json:"toDelete"`
			} `json:"internalTopics"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || !doc.DryRun || len(doc.Groups) != 1 ||
		len(doc.Groups[0].NewOffsets) != 2 || doc.Groups[0].NewOffsets[1].NewOffset != 5 ||
		strings.Join(doc.Groups[0].InternalTopics.ToDelete, ",") != "app-counts-changelog,app-rekey-repartition" {
		t.Fatalf("json: exit %d %v\n%s", code, err, out)
	}
	checkCamel(t, out)
	// Refusals: a group with members (exit 5), a group that does not exist (exit 3), a topic that is
	// not the group's (exit 1); nothing committed.
	state.Store("Stable")
	_, errOut, code = runCLI(b, "--reset-offsets", "--group", "app", "--all-input-topics", "--to-earliest", "--execute")
	if code != exitNotEmpty || !strings.Contains(errOut, "still has members") {
		t.Fatalf("group with members: exit %d %q", code, errOut)
	}
	state.Store("Empty")
	_, errOut, code = runCLI(b, "--reset-offsets", "--group", "app", "--group", "other", "--from-file", planFile(t, "other,in,0,1\n"))
	if code != exitFailed || !strings.Contains(errOut, `group "app": the reset plan has no offsets for the group (--from-file`) {
		t.Fatalf("a plan without the group: exit %d %q", code, errOut)
	}
	_, errOut, code = runCLI(b, "--reset-offsets", "--group", "nope", "--all-input-topics", "--to-earliest", "--execute")
	if code != exitNotFound {
		t.Fatalf("no such group: exit %d %q", code, errOut)
	}
	_, errOut, code = runCLI(b, "--reset-offsets", "--group", "app", "--input-topic", "other-counts-changelog", "--to-earliest", "--execute")
	if code != exitFailed || !strings.Contains(errOut, "not an input topic of the group") {
		t.Fatalf("not an input topic: exit %d %q", code, errOut)
	}
	if got := committedOf(t, adm); got != "in-0=1 in-1=4" {
		t.Fatalf("a refused reset committed: %s", got)
	}
}

func TestDeleteOffsetsAndInternalTopicsCommands(t *testing.T) {
	b, adm, _ := appCluster(t)
	out, _, code := runCLI(b, "--delete-offsets", "--group", "app", "--input-topic", "in:0", "--input-topic", "missing")
	if code != exitFailed || !strings.Contains(out, "in      0         Successful") || !strings.Contains(out, "missing -         Error: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("delete-offsets: exit %d\n%s", code, out)
	}
	if got := committedOf(t, adm); got != "in-1=2" {
		t.Fatalf("after deleting in-0: %s", got)
	}
	out, _, code = runCLI(b, "--delete-offsets", "--group", "app", "--all-input-topics")
	if code != exitOK || !strings.HasPrefix(out, "Request succeeded for deleting offsets from group app.\n") {
		t.Fatalf("delete-offsets --all-input-topics: exit %d\n%s", code, out)
	}
	if got := committedOf(t, adm); got != "" {
		t.Fatalf("after deleting all: %s", got)
	}
	// --delete --dry-run --delete-all-internal-topics lists the group's topics and deletes nothing.
	out, errOut, code := runCLI(b, "--delete", "--group", "app", "--delete-all-internal-topics", "--dry-run")
	if code != exitOK || !strings.Contains(out, "would be deleted") ||
		!strings.Contains(out, "that would be deleted: app-counts-changelog, app-rekey-repartition.") || !strings.Contains(errOut, "nothing was deleted") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	names := func() string {
		td, err := adm.ListTopics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(td.Names(), " ")
	}
	if got := names(); got != "app-counts-changelog app-rekey-repartition in other-counts-changelog" {
		t.Fatalf("a dry run deleted topics: %s", got)
	}
}

// --all-groups acts on the streams groups only: --describe prints one JSON array of their documents,
// --reset-offsets and --delete --dry-run cover them.
func TestAllGroupsCommands(t *testing.T) {
	b, _, _ := appCluster(t)
	out, errOut, code := runCLI(b, "--describe", "--all-groups", "--state", "--output", "json")
	var docs []map[string]any
	if err := json.Unmarshal([]byte(out), &docs); err != nil || code != exitOK || len(docs) != 1 || docs[0]["group"] != "app" {
		t.Fatalf("--describe --all-groups json: exit %d %v\n%s%s", code, err, out, errOut)
	}
	out, _, code = runCLI(b, "--describe", "--all-groups", "--offsets")
	if code != exitOK || !regexp.MustCompile(`(?m)^app +in +0 +4$`).MatchString(out) {
		t.Fatalf("--describe --all-groups --offsets: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(b, "--reset-offsets", "--all-groups", "--all-input-topics", "--to-latest", "--export")
	if code != exitOK || out != "\"app\",\"in\",0,5\n\"app\",\"in\",1,5\n" {
		t.Fatalf("--reset-offsets --all-groups --export: exit %d %q", code, out)
	}
	out, errOut, code = runCLI(b, "--delete", "--all-groups", "--dry-run")
	if code != exitOK || out != "Streams group 'app' would be deleted (dry run).\n" || !strings.Contains(errOut, "nothing was deleted") {
		t.Fatalf("--delete --all-groups --dry-run: exit %d %q %q", code, out, errOut)
	}
}
