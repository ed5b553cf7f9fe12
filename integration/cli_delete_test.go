package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The checks of Kafka's DeleteStreamsGroupTest and DeleteStreamsGroupOffsetTest (tools, 4.4) that
// TestCLIOffsetsDeleteAndErrors, TestCLIDeleteOffsetsAgreesWithKafkasTool, TestCLIResetOffsetsRefusals
// and TestCLIValidationOfTheOffsetOptions leave out, run with Kafka's StreamsGroupCommand (from the
// broker's jars) and ours on groups of the same shape.

// TestCLIDeleteGroupsLikeKafkasTool covers DeleteStreamsGroupTest: an unknown option is refused; of
// an empty group and a group with members named together, the empty one is deleted and the other
// is refused and kept (testDeleteMultipleGroup's mix, with --group: a real --all-groups would reach
// the groups of other tests on the broker; TestCLIAllGroups shows its selection with --dry-run);
// deleting the deleted group again says it does not exist (testDeleteSingleGroup's third step).
func TestCLIDeleteGroupsLikeKafkasTool(t *testing.T) {
	b := Get(t)
	bs := "--bootstrap-server=" + b.Bootstrap

	// testResetWithUnrecognizedOption (the same check in both tool tests).
	if out, err := b.KafkaTool(t, streamsGroupCommand, "--unrecognized-option", "--bootstrap-server", b.Bootstrap, "--delete", "--all-groups"); err == nil ||
		!strings.Contains(err.Error()+out, "unrecognized-option") {
		t.Errorf("Kafka's tool with an unknown option: %v\n%s", err, out)
	}
	if out, errOut, code := tool(t, b, "--unrecognized-option", bs, "--delete", "--all-groups"); code != 2 || out != "" ||
		!strings.Contains(errOut, `unknown option "--unrecognized-option"`) {
		t.Errorf("ours with an unknown option: exit %d, stdout %q, stderr %q; want exit 2 naming it", code, out, errOut)
	}

	live, _, _, _ := groupWithMembers(t, b, 1)
	for _, kafka := range []bool{false, true} {
		empty := newStatefulApp(t, b).group
		args := []string{"--delete", "--group", empty, "--group", live}
		var out, errOut string
		if kafka {
			// Kafka's tool reports both groups and exits 0 whatever failed.
			var err error
			if out, err = b.KafkaTool(t, streamsGroupCommand, append([]string{"--bootstrap-server", b.Bootstrap}, args...)...); err != nil {
				t.Fatalf("Kafka's tool %v: %v", args, err)
			}
			if !strings.Contains(out, "Group '"+live+"' could not be deleted due to:") || !strings.Contains(out, "is not EMPTY") ||
				!strings.Contains(out, "These streams groups were deleted successfully: '"+empty+"'.") {
				t.Fatalf("Kafka's tool on an empty group and one with members:\n%s", out)
			}
		} else {
			var code int
			out, errOut, code = tool(t, b, append([]string{bs}, args...)...)
			if code != 5 || !strings.Contains(out, "Deletion of requested streams group ('"+empty+"') was successful.") ||
				!strings.Contains(errOut, live) || !strings.Contains(errOut, "still has members") || strings.Contains(out, "('"+live+"')") {
				t.Fatalf("ours on an empty group and one with members: exit %d, want 5\n%s%s", code, out, errOut)
			}
		}
		if _, _, code := tool(t, b, bs, "--describe", "--group", empty, "--state"); code != 3 {
			t.Fatalf("kafka=%v: the empty group was not deleted (describe exit %d)", kafka, code)
		}
		if d := b.DescribeGroup(t, live); d.State != "Stable" || len(d.Members) != 1 {
			t.Fatalf("kafka=%v: the group with members is %s with %d members, want it kept, Stable with 1", kafka, d.State, len(d.Members))
		}

		// The deleted group again: gone, for both tools.
		if kafka {
			again, err := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--delete", "--group", empty)
			if err != nil || !strings.Contains(again, "Group '"+empty+"' could not be deleted due to:") || !strings.Contains(again, "does not exist") {
				t.Fatalf("Kafka's tool deleting the deleted group: %v\n%s", err, again)
			}
		} else if out, errOut, code := tool(t, b, bs, "--delete", "--group", empty); code != 3 || !strings.Contains(errOut, "does not exist") {
			t.Fatalf("ours deleting the deleted group: exit %d, want 3\n%s%s", code, out, errOut)
		}
	}
}

// TestCLIDeleteOffsetsLikeKafkasTool covers DeleteStreamsGroupOffsetTest's cases on an empty group
// that TestCLIDeleteOffsetsAgreesWithKafkasTool leaves out, with each tool on a group of its own: a
// topic without partitions (all of them), a topic together with one that does not exist (the
// existing topic's offsets go, the other is one failed row), a partition of a topic that does not
// exist; and a group that does not exist. On a group with members both refuse
// (TestCLIResetOffsetsRefusals), and several groups are refused before any request
// (TestCLIValidationOfTheOffsetOptions).
func TestCLIDeleteOffsetsLikeKafkasTool(t *testing.T) {
	b := Get(t)
	newestLineOnly(t, "Kafka's tool of the newest line is the reference, and the offsets both tools read and commit do not depend on the broker's line")
	bs := "--bootstrap-server=" + b.Bootstrap
	unknown := Name(t, "unknown-topic")
	run := func(kafka bool, args ...string) (string, int) {
		t.Helper()
		if kafka {
			out, err := b.KafkaTool(t, streamsGroupCommand, append([]string{"--bootstrap-server", b.Bootstrap}, args...)...)
			code := 0
			if err != nil {
				code = 1
				out += err.Error()
			}
			return out, code
		}
		out, errOut, code := tool(t, b, append([]string{bs}, args...)...)
		return out + errOut, code
	}
	// status returns the STATUS column of the rows about topic, as "partition status" words.
	status := func(out, topic string) []string {
		var rows []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == topic {
				rows = append(rows, f[1]+" "+strings.Join(f[2:], " "))
			}
		}
		return rows
	}
	for _, kafka := range []bool{false, true} {
		// A topic without partitions: every partition's offset goes.
		app := newStatefulApp(t, b)
		out, code := run(kafka, "--delete-offsets", "--group", app.group, "--input-topic", app.input)
		rows := status(out, app.input)
		if code != 0 || len(rows) != 4 || strings.Count(strings.Join(rows, "\n"), "Successful") != 4 {
			t.Fatalf("kafka=%v, a topic without partitions: exit %d, rows %q\n%s", kafka, code, rows, out)
		}
		if got := committed(t, b, app.group); got != "" {
			t.Fatalf("kafka=%v: offsets left after deleting the whole topic: %s", kafka, got)
		}

		// A topic and a topic that does not exist.
		app = newStatefulApp(t, b)
		out, code = run(kafka, "--delete-offsets", "--group", app.group, "--input-topic", app.input, "--input-topic", unknown)
		rows, bad := status(out, app.input), status(out, unknown)
		if len(rows) != 4 || strings.Count(strings.Join(rows, "\n"), "Successful") != 4 || len(bad) != 1 ||
			!strings.Contains(bad[0], "Error") || !strings.Contains(strings.ToLower(bad[0]), "does not host this topic-partition") {
			t.Fatalf("kafka=%v, a topic and one that does not exist: exit %d, rows %q and %q\n%s", kafka, code, rows, bad, out)
		}
		if !kafka && code != 1 {
			t.Fatalf("ours, a topic that does not exist among others: exit %d, want 1 (a partition failed)", code)
		}
		if got := committed(t, b, app.group); got != "" {
			t.Fatalf("kafka=%v: the existing topic's offsets were kept beside an unknown topic: %s", kafka, got)
		}

		// A partition of a topic that does not exist: nothing is deleted.
		app = newStatefulApp(t, b)
		before := committed(t, b, app.group)
		out, code = run(kafka, "--delete-offsets", "--group", app.group, "--input-topic", unknown+":0")
		if bad := status(out, unknown); len(bad) != 1 || !strings.Contains(bad[0], "Error") {
			t.Fatalf("kafka=%v, a partition of a topic that does not exist: exit %d, rows %q\n%s", kafka, code, bad, out)
		}
		if !kafka && code != 1 {
			t.Fatalf("ours, a partition of a topic that does not exist: exit %d, want 1", code)
		}
		if after := committed(t, b, app.group); after != before {
			t.Fatalf("kafka=%v: offsets changed: %q -> %q", kafka, before, after)
		}

		// A group that does not exist.
		out, code = run(kafka, "--delete-offsets", "--group", "no-such-"+app.group, "--input-topic", app.input+":1")
		if kafka && !strings.Contains(out, "GROUP_ID_NOT_FOUND") && !strings.Contains(out, "does not exist") {
			t.Fatalf("Kafka's tool on a group that does not exist:\n%s", out)
		}
		if !kafka && (code != 3 || !strings.Contains(out, "does not exist")) {
			t.Fatalf("ours on a group that does not exist: exit %d, want 3\n%s", code, out)
		}
		t.Logf("kafka=%v: a group that does not exist: exit %d: %s", kafka, code, strings.TrimSpace(fmt.Sprint(out)))
	}
}

// TestCLIResetOffsetsLikeKafkasTool covers ResetStreamsGroupOffsetTest's cases that
// TestCLIResetOffsetsAgreesWithKafkasTool (every specification on one input topic, --export and
// --from-file), TestCLIAllGroups (an export read back) and TestCLIDeleteAllInternalTopics (internal
// topics deleted on --execute only) leave out: a group reading two topics, reset on one whole topic
// and one partition of the other, and on both topics, planned alike by both tools and executed; a
// reset with neither --dry-run nor --execute commits nothing; and --to-offset below the log start,
// which Kafka's tool plans as the log start and ours refuses (docs/cli.md: Values).
func TestCLIResetOffsetsLikeKafkasTool(t *testing.T) {
	b := Get(t)
	bs := "--bootstrap-server=" + b.Bootstrap
	group, t1, t2 := Name(t, "app"), Name(t, "in1"), Name(t, "in2")
	b.CreateTopic(t, t1, 2)
	b.CreateTopic(t, t2, 2)
	b.DeleteGroupAtEnd(t, group)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for _, topic := range []string{t1, t2} {
		for p := range int32(2) {
			for range 20 {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")})
			}
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m := startMember(t, b, group, topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{t1, t2}}), "m0", nil)
	Eventually(t, settle, func() (bool, string) {
		a, _, _ := m.rec.snapshot()
		return m.State() == membership.Stable && a.Len() == 2, fmt.Sprintf("%s, %d tasks", m.State(), a.Len())
	})
	m.close(t)
	Eventually(t, settle, func() (bool, string) {
		d := b.DescribeGroup(t, group)
		return d.State == "Empty", d.State
	})
	commitAll := func(at int64) {
		t.Helper()
		var offs kadm.Offsets
		for _, topic := range []string{t1, t2} {
			for p := range int32(2) {
				offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
			}
		}
		if resp, err := b.Admin(t).CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
			t.Fatalf("commit: %v %v", err, resp.Error())
		}
	}
	want := func(o10, o11, o20, o21 int) string {
		return fmt.Sprintf("%s-0=%d %s-1=%d %s-0=%d %s-1=%d", t1, o10, t1, o11, t2, o20, t2, o21)
	}
	if t2 < t1 { // committed() sorts by topic
		want = func(o10, o11, o20, o21 int) string {
			return fmt.Sprintf("%s-0=%d %s-1=%d %s-0=%d %s-1=%d", t2, o20, t2, o21, t1, o10, t1, o11)
		}
	}
	for _, c := range []struct {
		spec  []string
		after string // committed after --execute, from 10 everywhere
	}{
		{[]string{"--input-topic", t1, "--input-topic", t2 + ":1", "--to-offset", "5"}, want(5, 5, 10, 5)},
		{[]string{"--input-topic", t1, "--input-topic", t2, "--to-offset", "5"}, want(5, 5, 5, 5)},
		{[]string{"--input-topic", t1 + ":0", "--input-topic", t2 + ":1", "--shift-by", "-3"}, want(7, 10, 10, 7)},
		{[]string{"--all-input-topics", "--to-latest"}, want(20, 20, 20, 20)},
	} {
		commitAll(10)
		args := append([]string{"--reset-offsets", "--group", group, "--dry-run"}, c.spec...)
		theirs, err := b.KafkaTool(t, streamsGroupCommand, append([]string{"--bootstrap-server", b.Bootstrap}, args...)...)
		if err != nil {
			t.Fatalf("Kafka's tool %v: %v", c.spec, err)
		}
		ours, errOut, code := tool(t, b, append([]string{bs}, args...)...)
		if k, o := resetRows(theirs, group), resetRows(ours, group); code != 0 || k == "" || k != o {
			t.Fatalf("%v: the plans differ (ours exit %d)\nkafka:\n%s\nours:\n%s%s", c.spec, code, theirs, ours, errOut)
		}
		if got := committed(t, b, group); got != want(10, 10, 10, 10) {
			t.Fatalf("%v: a dry run committed: %s", c.spec, got)
		}
		// Neither --dry-run nor --execute: ours plans and commits nothing, saying so.
		if _, errOut, code := tool(t, b, append([]string{bs, "--reset-offsets", "--group", group}, c.spec...)...); code != 0 ||
			!strings.Contains(errOut, "nothing was changed") || committed(t, b, group) != want(10, 10, 10, 10) {
			t.Fatalf("%v without --dry-run or --execute: exit %d, %q, committed %s", c.spec, code, errOut, committed(t, b, group))
		}
		if _, errOut, code := tool(t, b, append([]string{bs, "--reset-offsets", "--group", group, "--execute"}, c.spec...)...); code != 0 {
			t.Fatalf("%v --execute: exit %d %s", c.spec, code, errOut)
		}
		if got := committed(t, b, group); got != c.after {
			t.Fatalf("%v --execute: committed %s, want %s", c.spec, got, c.after)
		}
	}

	// Below the log start: Kafka's tool plans the log start, ours refuses the value.
	commitAll(10)
	theirs, err := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--reset-offsets", "--group", group,
		"--input-topic", t1, "--to-offset", "-30", "--dry-run")
	if err != nil || resetRows(theirs, group) != fmt.Sprintf("%[1]s %[2]s 0 0\n%[1]s %[2]s 1 0", group, t1) {
		t.Fatalf("Kafka's tool --to-offset -30: %v\n%s", err, theirs)
	}
	if out, errOut, code := tool(t, b, bs, "--reset-offsets", "--group", group, "--input-topic", t1, "--to-offset", "-30", "--dry-run"); code != 2 ||
		out != "" || !strings.Contains(errOut, `--to-offset "-30"`) {
		t.Fatalf("ours --to-offset -30: exit %d, stdout %q, stderr %q; want exit 2 naming the value", code, out, errOut)
	}
}

// TestCLIDeleteWithStreamsGroupsTurnedOff covers what Kafka's tool does after the cluster's
// streams.version was downgraded to 0: the broker answers the describe with UNSUPPORTED_VERSION, and
// the tool finds the group in ListGroups instead and deletes it. Both tools delete an empty streams
// group then; once the feature is back, the group is gone. The feature is restored when the test
// ends, whatever happens.
func TestCLIDeleteWithStreamsGroupsTurnedOff(t *testing.T) {
	b := Get(t)
	bs := "--bootstrap-server=" + b.Bootstrap
	ours, kafkas := newStatefulApp(t, b).group, newStatefulApp(t, b).group

	b.SetStreamsFeature(t, 0)
	restored := false
	restore := func() {
		if !restored {
			restored = true
			b.SetStreamsFeature(t, 1)
		}
	}
	t.Cleanup(restore)
	Eventually(t, settle, func() (bool, string) {
		_, errOut, code := tool(t, b, bs, "--describe", "--group", ours, "--state")
		return code != 0 && strings.Contains(errOut, "UNSUPPORTED_VERSION"), "describe with streams.version=0: " + errOut
	})

	if out, errOut, code := tool(t, b, bs, "--delete", "--group", ours); code != 0 ||
		!strings.Contains(out, "Deletion of requested streams group ('"+ours+"') was successful.") {
		t.Errorf("ours with streams.version=0: exit %d\n%s%s", code, out, errOut)
	}
	out, err := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--delete", "--group", kafkas)
	if err != nil || !strings.Contains(out, "Deletion of requested streams groups ('"+kafkas+"') was successful.") {
		t.Errorf("Kafka's tool with streams.version=0: %v\n%s", err, out)
	}

	restore()
	for _, g := range []string{ours, kafkas} {
		Eventually(t, settle, func() (bool, string) {
			out, errOut, code := tool(t, b, bs, "--describe", "--group", g, "--state")
			return code == 3, fmt.Sprintf("describe %s after streams.version=1: exit %d, want 3 (deleted)\n%s%s", g, code, out, errOut)
		})
	}
}
