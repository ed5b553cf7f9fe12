package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

const streamsGroupCommand = "org.apache.kafka.tools.streams.StreamsGroupCommand"

// statefulApp is an empty streams group with a topology of two subtopologies (a repartition topic
// and a changelog, which the broker created while its member ran), over an input topic of 4
// partitions with 10 records each (record i at base + i seconds), and committed offsets of 5 on every
// input partition.
type statefulApp struct {
	group, input         string
	repartition, changel string
	base                 time.Time // two hours ago, whole seconds: recent enough for any retention
}

// at formats the time of record i as --to-datetime reads it, in UTC or in the given zone.
func (a statefulApp) at(i int, zone *time.Location) string {
	t := a.base.Add(time.Duration(i) * time.Second)
	if zone == nil {
		return t.UTC().Format("2006-01-02T15:04:05.000")
	}
	return t.In(zone).Format("2006-01-02T15:04:05.000-07:00")
}

func newStatefulApp(t *testing.T, b *Broker) statefulApp {
	t.Helper()
	app := statefulApp{group: Name(t, "app"), input: Name(t, "in"), base: time.Now().Add(-2 * time.Hour).Truncate(time.Second)}
	n := topology.Names{AppID: app.group}
	app.repartition, app.changel = n.RepartitionTopic("rekey"), n.ChangelogTopic("counts")
	b.CreateTopic(t, app.input, 4)
	b.DeleteGroupAtEnd(t, app.group)
	adm := b.Admin(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, app.repartition, app.changel)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(4) {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: app.input, Partition: p, Value: []byte("v"), Timestamp: app.base.Add(time.Duration(i) * time.Second)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topo := topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{app.input}, RepartitionSinkTopics: []string{app.repartition}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{n.Repartition("rekey", 0)},
			StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog("counts")}})
	m := startMember(t, b, app.group, topo, "m0", nil)
	Eventually(t, settle, func() (bool, string) {
		a, _, _ := m.rec.snapshot()
		return m.State() == membership.Stable && a.Len() == 8, fmt.Sprintf("%s, %d tasks", m.State(), a.Len())
	})
	m.close(t)
	Eventually(t, settle, func() (bool, string) {
		d := b.DescribeGroup(t, app.group)
		return d.State == "Empty", d.State
	})
	var offs kadm.Offsets
	for p := range int32(4) {
		offs.Add(kadm.Offset{Topic: app.input, Partition: p, At: 5, LeaderEpoch: -1})
	}
	if resp, err := adm.CommitOffsets(ctx, app.group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	return app
}

// committed returns the group's committed offsets as sorted "topic-partition=offset" words.
func committed(t *testing.T, b *Broker, group string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := b.Admin(t).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range r.Sorted() {
		out = append(out, fmt.Sprintf("%s-%d=%d", o.Topic, o.Partition, o.At))
	}
	return strings.Join(out, " ")
}

// topicsExist reports which of names exist, asking a fresh client (no cached metadata).
func topicsExist(t *testing.T, b *Broker, names ...string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := b.Admin(t).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = td.Has(n)
	}
	return out
}

// resetRows reads the rows of a --reset-offsets table (Kafka's or ours) about the given groups, as
// sorted "group topic partition offset" lines; warnings and blank lines are skipped.
func resetRows(out string, groups ...string) string {
	want := map[string]bool{}
	for _, g := range groups {
		want[g] = true
	}
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && want[f[0]] {
			rows = append(rows, strings.Join(f, " "))
		}
	}
	sort.Strings(rows)
	return strings.Join(rows, "\n")
}

// TestCLIResetOffsetsAgreesWithKafkasTool plans every reset specification with Kafka's
// StreamsGroupCommand and ours on the same empty group and compares the new offsets, row by row;
// then each tool executes one, and the committed offsets are compared.
func TestCLIResetOffsetsAgreesWithKafkasTool(t *testing.T) {
	b := Get(t)
	newestLineOnly(t, "Kafka's tool of the newest line is the reference, and the offsets both tools read and commit do not depend on the broker's line")
	app := newStatefulApp(t, b)
	bs := "--bootstrap-server=" + b.Bootstrap
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.csv")
	if err := os.WriteFile(plan, []byte(fmt.Sprintf("%s,0,2\n%s,3,7\n", app.input, app.input)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spec := range [][]string{
		{"--all-input-topics", "--to-earliest"},
		{"--all-input-topics", "--to-latest"},
		{"--all-input-topics", "--to-offset", "3"},
		{"--all-input-topics", "--to-offset", "99"},
		{"--all-input-topics", "--shift-by", "-2"},
		{"--all-input-topics", "--shift-by", "20"},
		{"--all-input-topics", "--to-current"},
		{"--all-input-topics", "--to-datetime", app.at(3, nil)},
		{"--all-input-topics", "--to-datetime", app.at(4, time.FixedZone("", 2*3600))},
		{"--all-input-topics", "--by-duration", "PT1H"},
		{"--all-input-topics", "--by-duration", "PT3H"},
		{"--input-topic", app.input + ":1,2", "--to-earliest"},
		{"--input-topic", app.input, "--to-offset", "4"},
		{"--from-file", plan},
	} {
		args := append([]string{"--reset-offsets", "--group", app.group, "--dry-run"}, spec...)
		exportToo := spec[1] == "--to-offset" || spec[0] == "--from-file" // every Kafka tool run costs a JVM start
		theirs, err := b.KafkaTool(t, streamsGroupCommand, append([]string{"--bootstrap-server", b.Bootstrap}, args...)...)
		if err != nil {
			t.Fatalf("Kafka's tool %v: %v", spec, err)
		}
		ours, errOut, code := tool(t, b, append([]string{bs}, args...)...)
		if code != 0 {
			t.Fatalf("ours %v: exit %d %s", spec, code, errOut)
		}
		k, o := resetRows(theirs, app.group), resetRows(ours, app.group)
		if k == "" || k != o {
			t.Errorf("%v: the plans differ\nkafka:\n%s\nours:\n%s", spec, theirs, ours)
		}
		if !strings.HasPrefix(ours, "GROUP ") || !strings.Contains(theirs, "NEW-OFFSET") || !strings.Contains(ours, "NEW-OFFSET") {
			t.Errorf("%v: columns\nkafka:\n%s\nours:\n%s", spec, theirs, ours)
		}
		if !exportToo {
			continue
		}
		// --export: the same CSV lines.
		theirs, err = b.KafkaTool(t, streamsGroupCommand, append([]string{"--bootstrap-server", b.Bootstrap, "--export"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		ours, _, _ = tool(t, b, append([]string{bs, "--export"}, args...)...)
		if sortedLines(csvLines(theirs)) != sortedLines(ours) {
			t.Errorf("%v: --export differs\nkafka:\n%s\nours:\n%s", spec, theirs, ours)
		}
	}
	if got := committed(t, b, app.group); got != fmt.Sprintf("%[1]s-0=5 %[1]s-1=5 %[1]s-2=5 %[1]s-3=5", app.input) {
		t.Fatalf("dry runs changed the offsets: %s", got)
	}

	// Execute: ours to 3 on partitions 0 and 1, Kafka's to 7 on 2 and 3.
	if _, errOut, code := tool(t, b, bs, "--reset-offsets", "--group", app.group, "--input-topic", app.input+":0,1", "--to-offset", "3", "--execute"); code != 0 {
		t.Fatalf("ours --execute: exit %d %s", code, errOut)
	}
	if _, err := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--reset-offsets", "--group", app.group,
		"--input-topic", app.input+":2,3", "--to-offset", "7", "--execute"); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, b, app.group); got != fmt.Sprintf("%[1]s-0=3 %[1]s-1=3 %[1]s-2=7 %[1]s-3=7", app.input) {
		t.Fatalf("after both executions: %s", got)
	}
	// What one tool wrote the other reads: ours --to-current agrees with the commits of both.
	ours, _, _ := tool(t, b, bs, "--reset-offsets", "--group", app.group, "--all-input-topics", "--to-current", "--export", "--dry-run")
	if sortedLines(ours) != sortedLines(fmt.Sprintf("%[1]q,0,3\n%[1]q,1,3\n%[1]q,2,7\n%[1]q,3,7", app.input)) {
		t.Fatalf("--to-current after the executions:\n%s", ours)
	}
}

// csvLines keeps the lines of Kafka's --export output that are CSV records.
func csvLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Count(l, ",") >= 2 && !strings.HasPrefix(l, "Warn") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCLIResetOffsetsRefusals: a group with members is refused by ours with exit 5 (Kafka's tool
// prints an error and exits 0) and neither tool changes its offsets; a topic that is not the
// group's is refused.
func TestCLIResetOffsetsRefusals(t *testing.T) {
	b := Get(t)
	group, topic, _, _ := groupWithMembers(t, b, 1)
	bs := "--bootstrap-server=" + b.Bootstrap
	before := committed(t, b, group)
	_, errOut, code := tool(t, b, bs, "--reset-offsets", "--group", group, "--all-input-topics", "--to-latest", "--execute")
	if code != 5 || !strings.Contains(errOut, "still has members") {
		t.Fatalf("reset of a group with members: exit %d %q", code, errOut)
	}
	_, errOut, code = tool(t, b, bs, "--delete-offsets", "--group", group, "--all-input-topics")
	if code != 5 {
		t.Fatalf("delete-offsets of a group with members: exit %d %q", code, errOut)
	}
	_, errOut, code = tool(t, b, bs, "--reset-offsets", "--group", group, "--input-topic", topic, "--to-latest", "--delete-all-internal-topics", "--execute")
	if code != 5 {
		t.Fatalf("reset with internal topics of a group with members: exit %d %q", code, errOut)
	}
	theirs, _ := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--reset-offsets", "--group", group,
		"--input-topic", topic, "--to-latest", "--execute")
	if !strings.Contains(theirs, "inactive") {
		t.Errorf("Kafka's tool on a group with members:\n%s", theirs)
	}
	if after := committed(t, b, group); after != before {
		t.Fatalf("a refused reset changed the offsets: %q -> %q", before, after)
	}
	_, errOut, code = tool(t, b, bs, "--reset-offsets", "--group", "no-such-"+group, "--all-input-topics", "--to-latest", "--execute")
	if code != 3 {
		t.Fatalf("no such group: exit %d %q", code, errOut)
	}
}

// TestCLIDeleteOffsetsAgreesWithKafkasTool deletes one partition's offset with each tool, then all
// input offsets with ours, and compares what is left.
func TestCLIDeleteOffsetsAgreesWithKafkasTool(t *testing.T) {
	b := Get(t)
	app := newStatefulApp(t, b)
	bs := "--bootstrap-server=" + b.Bootstrap
	out, errOut, code := tool(t, b, bs, "--delete-offsets", "--group", app.group, "--input-topic", app.input+":0")
	if code != 0 || !strings.Contains(out, "Request succeeded for deleting offsets from group "+app.group+".") || !strings.Contains(out, "Successful") {
		t.Fatalf("ours: exit %d\n%s%s", code, out, errOut)
	}
	theirs, err := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--delete-offsets", "--group", app.group, "--input-topic", app.input+":1")
	if err != nil || !strings.Contains(theirs, "Request succeeded for deleting offsets from group "+app.group+".") {
		t.Fatalf("Kafka's: %v\n%s", err, theirs)
	}
	// The same columns and rows (for their partitions).
	row := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == app.input {
				return f[2]
			}
		}
		return ""
	}
	if row(out) != "Successful" || row(theirs) != "Successful" || !strings.Contains(theirs, "TOPIC") || !strings.Contains(out, "TOPIC") {
		t.Fatalf("rows\nkafka:\n%s\nours:\n%s", theirs, out)
	}
	if got := committed(t, b, app.group); got != fmt.Sprintf("%[1]s-2=5 %[1]s-3=5", app.input) {
		t.Fatalf("after deleting 0 and 1: %s", got)
	}
	if _, errOut, code := tool(t, b, bs, "--delete-offsets", "--group", app.group, "--all-input-topics"); code != 0 {
		t.Fatalf("--all-input-topics: exit %d %s", code, errOut)
	}
	if got := committed(t, b, app.group); got != "" {
		t.Fatalf("after deleting all: %s", got)
	}
}

// TestCLIDeleteAllInternalTopics: --dry-run lists the group's repartition and changelog topics and
// deletes nothing; --reset-offsets --to-current --execute --delete-all-internal-topics deletes them and
// keeps the offsets; --delete --delete-all-internal-topics deletes the group and its topics, as
// Kafka's tool does for another group; a topic named like the group's but not in its topology, and
// the input topic, are never deleted.
func TestCLIDeleteAllInternalTopics(t *testing.T) {
	b := Get(t)
	bs := "--bootstrap-server=" + b.Bootstrap
	app := newStatefulApp(t, b)
	stranger := app.group + "-stranger-changelog" // named like app's, but not in its topology
	b.CreateTopic(t, stranger, 1)
	all := []string{app.input, app.repartition, app.changel, stranger}
	if got := topicsExist(t, b, all...); !got[app.repartition] || !got[app.changel] {
		t.Fatalf("the broker did not create the internal topics: %v", got)
	}

	out, errOut, code := tool(t, b, bs, "--delete", "--group", app.group, "--delete-all-internal-topics", "--dry-run")
	want := fmt.Sprintf("Internal topics of streams group '%s' that would be deleted: %s, %s.", app.group, app.changel, app.repartition)
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(errOut, "nothing was deleted") {
		t.Fatalf("--delete --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = tool(t, b, bs, "--reset-offsets", "--group", app.group, "--all-input-topics", "--to-current", "--dry-run", "--delete-all-internal-topics")
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("--reset-offsets --dry-run: exit %d\n%s", code, out)
	}
	if got := topicsExist(t, b, all...); fmt.Sprint(got) != fmt.Sprint(map[string]bool{app.input: true, app.repartition: true, app.changel: true, stranger: true}) {
		t.Fatalf("a dry run deleted topics: %v", got)
	}

	// Keep the positions, drop the state: reset to the current offsets and delete the internal topics.
	before := committed(t, b, app.group)
	out, errOut, code = tool(t, b, bs, "--reset-offsets", "--group", app.group, "--all-input-topics", "--to-current", "--execute", "--delete-all-internal-topics")
	if code != 0 || !strings.Contains(out, "Deletion of the internal topics of streams group '"+app.group+"' was successful") {
		t.Fatalf("reset --execute --delete-all-internal-topics: exit %d\n%s%s", code, out, errOut)
	}
	Eventually(t, settle, func() (bool, string) {
		got := topicsExist(t, b, all...)
		return !got[app.repartition] && !got[app.changel], fmt.Sprint(got)
	})
	if got := topicsExist(t, b, all...); !got[app.input] || !got[stranger] {
		t.Fatalf("a topic that is not the group's was deleted: %v", got)
	}
	if after := committed(t, b, app.group); after != before {
		t.Fatalf("the offsets changed: %q -> %q", before, after)
	}

	// --delete --delete-all-internal-topics, ours and Kafka's, on two fresh groups.
	for _, kafka := range []bool{false, true} {
		app := newStatefulApp(t, b)
		stranger := app.group + "-stranger-changelog"
		b.CreateTopic(t, stranger, 1)
		all := []string{app.input, app.repartition, app.changel, stranger}
		if kafka {
			if out, err := b.KafkaTool(t, streamsGroupCommand, "--bootstrap-server", b.Bootstrap, "--delete", "--group", app.group, "--delete-all-internal-topics"); err != nil {
				t.Fatalf("Kafka's tool: %v\n%s", err, out)
			}
		} else {
			out, errOut, code := tool(t, b, bs, "--delete", "--group", app.group, "--delete-all-internal-topics")
			if code != 0 || !strings.Contains(out, "Deletion of requested streams group ('"+app.group+"') was successful.") {
				t.Fatalf("ours: exit %d\n%s%s", code, out, errOut)
			}
		}
		Eventually(t, settle, func() (bool, string) {
			got := topicsExist(t, b, all...)
			return !got[app.repartition] && !got[app.changel], fmt.Sprint(got)
		})
		if got := topicsExist(t, b, all...); !got[app.input] || !got[stranger] {
			t.Fatalf("kafka=%v: a topic that is not the group's was deleted: %v", kafka, got)
		}
		if out, _, code := tool(t, b, bs, "--describe", "--group", app.group, "--state"); code != 3 {
			t.Fatalf("kafka=%v: the group still exists:\n%s", kafka, out)
		}
	}
}

// TestCLIAllGroups: --describe, --reset-offsets --dry-run and --delete --dry-run with --all-groups
// cover every streams group, and agree with Kafka's tool on the groups of this test.
func TestCLIAllGroups(t *testing.T) {
	b := Get(t)
	bs := "--bootstrap-server=" + b.Bootstrap
	a, c := newStatefulApp(t, b), newStatefulApp(t, b)
	out, _, code := tool(t, b, bs, "--describe", "--all-groups", "--state")
	if code != 0 || !strings.Contains(out, a.group+" ") || !strings.Contains(out, c.group+" ") {
		t.Fatalf("--describe --all-groups: exit %d\n%s", code, out)
	}
	args := []string{"--reset-offsets", "--all-groups", "--all-input-topics", "--to-earliest", "--dry-run"}
	theirs, err := b.KafkaTool(t, streamsGroupCommand, append([]string{"--bootstrap-server", b.Bootstrap}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	ours, _, _ := tool(t, b, append([]string{bs}, args...)...)
	if k, o := resetRows(theirs, a.group, c.group), resetRows(ours, a.group, c.group); strings.Count(o, "\n") != 7 || k != o {
		t.Fatalf("--reset-offsets --all-groups\nkafka:\n%s\nours:\n%s", theirs, ours)
	}
	// The export of several groups has the group column, and reads back with --from-file.
	exported, _, _ := tool(t, b, append([]string{bs, "--export"}, args...)...)
	if !strings.Contains(exported, fmt.Sprintf("%q,%q,0,0\n", a.group, a.input)) {
		t.Fatalf("--export --all-groups:\n%s", exported)
	}
	file := filepath.Join(t.TempDir(), "plan.csv")
	if err := os.WriteFile(file, []byte(exported), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := tool(t, b, bs, "--reset-offsets", "--group", a.group, "--group", c.group, "--from-file", file, "--execute"); code != 0 {
		t.Fatalf("--from-file of the export: exit %d %s", code, errOut)
	}
	if got := committed(t, b, c.group); got != fmt.Sprintf("%[1]s-0=0 %[1]s-1=0 %[1]s-2=0 %[1]s-3=0", c.input) {
		t.Fatalf("after the plan: %s", got)
	}
	out, _, code = tool(t, b, bs, "--delete", "--all-groups", "--dry-run")
	if !strings.Contains(out, "Streams group '"+a.group+"' would be deleted (dry run).") || !strings.Contains(out, c.group) {
		t.Fatalf("--delete --all-groups --dry-run: exit %d\n%s", code, out)
	}
	if _, _, code := tool(t, b, bs, "--describe", "--group", a.group, "--state"); code != 0 {
		t.Fatal("a dry run deleted the group")
	}
	if out, _, code := tool(t, b, "--version"); code != 0 || !strings.HasPrefix(out, "streams-groups ") {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

// TestCLIValidationOfTheOffsetOptions: combinations of the offset options that Kafka 4.4's
// StreamsGroupCommand refuses are refused by ours too, with exit 2 naming the option, before any
// request; and those only ours refuses (an option the action would ignore) likewise.
func TestCLIValidationOfTheOffsetOptions(t *testing.T) {
	b := Get(t)
	for _, c := range []struct {
		args   []string
		kafka  string // what Kafka's tool says; "" when it accepts the command line
		ours   string
		noJava bool
	}{
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--to-earliest", "--to-latest", "--dry-run"}, "can't be used with", "--to-earliest can't be used with --to-latest", false},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--to-earliest", "--dry-run", "--execute"}, "only accepts one of", "not both", false},
		{[]string{"--reset-offsets", "--all-input-topics", "--to-earliest", "--dry-run"}, "takes one of these options", "--reset-offsets needs --group or --all-groups", false},
		{[]string{"--reset-offsets", "--all-groups", "--group", "g", "--all-input-topics", "--to-earliest", "--dry-run"}, "can't be used with", "--group can't be used with --all-groups", false},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--to-offset", "x", "--dry-run"}, "to-offset", `--to-offset "x"`, false},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--shift-by", "1.5", "--dry-run"}, "shift-by", `--shift-by "1.5"`, false},
		{[]string{"--delete-all-internal-topics", "--group", "g"}, "takes one of these options", "--delete-all-internal-topics goes with --delete or --reset-offsets", false},
		{[]string{"--delete-offsets", "--all-groups", "--all-input-topics"}, "takes the [group] and one of these options", "--all-groups can't be used with --delete-offsets", false},
		{[]string{"--delete-offsets", "--group", "a", "--group", "b", "--all-input-topics"}, "supports only one", "only --delete and --reset-offsets take several --group", false},
		{[]string{"--delete-offsets", "--group", "g"}, "takes the [group] and one of these options", "--delete-offsets needs --input-topic or --all-input-topics", false},
		{[]string{"--delete", "--group", "g", "--input-topic", "t"}, "does not support topic-specific offset deletion", "--input-topic can't be used with --delete", false},
		{[]string{"--describe", "--group", "g", "--dry-run"}, "accepts", "--dry-run can't be used with --describe", false},
		{[]string{"--delete", "--group", "g", "--execute"}, "accepts", "--execute can't be used with --delete", false},
		{[]string{"--reset-offsets", "--delete-offsets", "--group", "g", "--all-input-topics", "--to-earliest", "--dry-run"}, "exactly one action", "give exactly one of", false},
		{[]string{"--list", "--all-groups"}, "", "--all-groups can't be used with --list", true},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--input-topic", "t", "--to-earliest", "--dry-run"}, "", "--input-topic can't be used with --all-input-topics", true},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--to-datetime", "yesterday", "--dry-run"}, "", `--to-datetime "yesterday"`, true},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--by-duration", "1h", "--dry-run"}, "", `--by-duration "1h"`, true},
		{[]string{"--reset-offsets", "--group", "g", "--input-topic", "t:x", "--to-earliest", "--dry-run"}, "", `--input-topic "t:x"`, true},
	} {
		args := append([]string{"--bootstrap-server", b.Bootstrap}, c.args...)
		if !c.noJava {
			out, err := b.KafkaTool(t, streamsGroupCommand, args...)
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
