package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/tasks"
)

const bs = "--bootstrap-server=127.0.0.1:9092"

// Command lines that must not run: exit 2 and a message, before any connection (a wrong option must
// never be blamed on the cluster).
func TestBadCommandLines(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		// Kafka's StreamsGroupCommandOptions rules.
		{[]string{bs, "--list", "--members"}, "--members can't be used with --list"},
		{[]string{bs, "--list", "--offsets"}, "--offsets can't be used with --list"},
		{[]string{bs, "--list", "--group", "g"}, "--group can't be used with --list"},
		{[]string{bs, "--describe", "--group", "g", "--members", "--state"}, "--describe takes at most one of"},
		{[]string{bs, "--describe", "--group", "g", "--members", "--offsets"}, "not --members and --offsets"},
		{[]string{bs, "--describe", "--group", "g", "--state", "--topology"}, "--describe takes at most one of"},
		{[]string{bs, "--describe", "--group", "g", "--state", "Stable"}, `--describe does not take a value for --state (got "Stable")`},
		{[]string{bs, "--describe", "--group", "g", "--state=Stable"}, "does not take a value for --state"},
		{[]string{bs, "--describe"}, "--describe needs --group"},
		{[]string{bs, "--delete"}, "--delete needs --group"},
		{[]string{bs, "--list", "--describe"}, "give exactly one of"},
		{[]string{bs, "--list", "--topology-id", "F"}, "not --list and --topology-id"},
		{[]string{bs, "--describe", "--group", "g", "--topology-id", "F"}, "not --describe and --topology-id"},
		{[]string{bs, "--next-epoch", "--topology", "--group", "g"}, "give exactly one of"},
		{[]string{bs}, "give one of --list"},
		{[]string{}, "give one of --list"},
		{[]string{"--list"}, "--bootstrap-server is required"},
		{[]string{"--topology-id", "F", "--group", "g"}, "--bootstrap-server is required"},
		{[]string{bs, "--list", "--state", "Bogus"}, `invalid state "Bogus" in --state`},
		{[]string{bs, "--list", "--state", "Stable,PreparingRebalance"}, `invalid state "PreparingRebalance"`},
		{[]string{bs, "--reset-offsets", "--group", "g", "--delete-internal-topic", "t", "--execute"}, "--delete-internal-topic (an option of Kafka's kafka-streams-groups.sh) is not supported"},
		// Options the chosen action would ignore.
		{[]string{bs, "--list", "--verbose"}, "--verbose can't be used with --list"},
		{[]string{bs, "--delete", "--group", "g", "--members"}, "--members can't be used with --delete"},
		{[]string{bs, "--topology", "--group", "g", "--state"}, "--state can't be used with --topology"},
		{[]string{bs, "--next-epoch", "--group", "g", "--topology-epoch", "3"}, "--topology-epoch can't be used with --next-epoch"},
		{[]string{"--topology-id", "F", "--topology-epoch", "3"}, "--topology-epoch needs --group"},
		{[]string{bs, "--describe", "--group", "a", "--group", "b"}, "only --delete and --reset-offsets take several --group"},
		{[]string{bs, "--describe", "--group", ""}, "--group must not be empty"},
		{[]string{bs, "--describe", "--group", "--members"}, `--group needs a value, got the option "--members"`},
		{[]string{"--topology-id", "--list"}, `--topology-id needs a value, got the option "--list"`},
		{[]string{bs, "--describe", "--group"}, "--group needs a value"},
		{[]string{bs, "--describe", "--topology", "--verbose", "--group", "g"}, "--verbose can't be used with --describe --topology"},
		// Bad values: usage errors, not cluster errors.
		{[]string{bs, "--topology-id", "F", "--group", "g", "--topology-epoch", "4294967299"}, `--topology-epoch "4294967299": must be a whole number from 0 to 2147483647`},
		{[]string{bs, "--topology-id", "F", "--group", "g", "--topology-epoch", "-1"}, `--topology-epoch "-1"`},
		{[]string{bs, "--topology-id", "F", "--group", "g", "--topology-epoch", "1.5"}, `--topology-epoch "1.5"`},
		{[]string{bs, "--list", "--timeout", "-5"}, `--timeout "-5": must be a whole number of milliseconds from 1`},
		{[]string{bs, "--list", "--timeout", "0"}, `--timeout "0"`},
		{[]string{bs, "--list", "--timeout", "99999999999"}, `--timeout "99999999999"`},
		{[]string{bs, "--list", "--timeout", "soon"}, `--timeout "soon"`},
		{[]string{"--bootstrap-server", "127.0.0.1:99999", "--list"}, `--bootstrap-server "127.0.0.1:99999": port "99999" is out of range`},
		{[]string{"--bootstrap-server", "localhost", "--list"}, `--bootstrap-server "localhost": has no port`},
		{[]string{"--bootstrap-server", "h:0", "--list"}, "port 0 is not allowed"},
		{[]string{"--bootstrap-server", "a:1,b", "--list"}, `"b": has no port`},
		{[]string{"--bootstrap-server", ",", "--list"}, "--bootstrap-server needs host:port"},
		{[]string{"--bootstrap-server", "PLAINTEXT://h:9092", "--list"}, "scheme prefix"},
		{[]string{"--bootstrap-server", "--list"}, "--bootstrap-server needs a value"},
		{[]string{bs, bs, "--list"}, "given more than once"},
		{[]string{bs, "--list", "--output", "yaml"}, `--output must be table or json, not "yaml"`},
		{[]string{bs, "--list", "--output", "json", "--output", "table"}, "given more than once"},
		{[]string{bs, "--list", "extra"}, `unexpected argument "extra"`},
		{[]string{"--nonsense"}, `unknown option "--nonsense"`},
		{[]string{bs, "--list=maybe"}, `--list "maybe"`},
	}
	for _, c := range cases {
		var out, errw bytes.Buffer
		code := run(c.args, &out, &errw)
		if code != exitUsage || !strings.Contains(errw.String(), c.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", c.args, code, errw.String(), c.want)
		}
		if strings.Contains(errw.String(), "cannot reach the cluster") {
			t.Errorf("%q: a bad option blamed on the cluster: %s", c.args, errw.String())
		}
	}
}

// Command lines Kafka's tool accepts (or that only this tool has) parse, to the right action.
func TestGoodCommandLines(t *testing.T) {
	cases := []struct {
		args  []string
		check func(*options) bool
	}{
		{[]string{bs, "--list"}, func(o *options) bool { return o.list && !o.state.set }},
		{[]string{bs, "--list", "--state"}, func(o *options) bool { return o.list && o.state.set && len(o.states) == 0 }},
		{[]string{bs, "--list", "--state", "stable,notready, EMPTY"}, func(o *options) bool {
			return strings.Join(o.states, ",") == "Stable,NotReady,Empty"
		}},
		{[]string{bs, "--describe", "--group", "g"}, func(o *options) bool { return o.describe && o.groups[0] == "g" }},
		{[]string{bs, "--describe", "--group", "g", "--state", "--verbose"}, func(o *options) bool { return o.state.set && o.verbose }},
		{[]string{bs, "--describe", "--group", "g", "--topology"}, func(o *options) bool { return o.describe && o.topology }},
		{[]string{bs, "--delete", "--group", "a", "--group", "b", "--group", "a"}, func(o *options) bool {
			return strings.Join(o.groups, ",") == "a,b"
		}},
		{[]string{"--topology-id", "F"}, func(o *options) bool { return o.topologyID.value == "F" && o.servers == nil }},
		{[]string{bs, "--topology-id", "-", "--group", "g", "--topology-epoch", "2147483647"}, func(o *options) bool {
			return o.topologyEpoch.n == 2147483647
		}},
		{[]string{"--bootstrap-server", "[::1]:9092, localhost:9093", "--list", "--timeout", "1"}, func(o *options) bool {
			return strings.Join(o.servers, " ") == "[::1]:9092 localhost:9093" && o.timeout.ms == 1
		}},
		{[]string{"-bootstrap-server", "h:1", "-next-epoch", "-group", "g"}, func(o *options) bool { return o.nextEpoch }},
		{[]string{bs, "--list"}, func(o *options) bool { return o.timeout.ms == 5000 && o.output.value == "table" }},
	}
	for _, c := range cases {
		o, err := parseArgs(c.args)
		if err != nil || !c.check(o) {
			t.Errorf("%q: %+v, %v", c.args, o, err)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {bs, "--list", "--help"}} {
		var out, errw bytes.Buffer
		if code := run(args, &out, &errw); code != exitOK || !strings.Contains(out.String(), "  --bootstrap-server") ||
			!strings.Contains(out.String(), "Exit codes:") || errw.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %.80q, stderr %q", args, code, out.String(), errw.String())
		}
	}
}

// No input reaches stderr raw: control bytes are escaped, long values cut.
func TestUsageMessagesEscapeInput(t *testing.T) {
	for _, args := range [][]string{
		{bs, "--list", "--output", "a\x00\x1b[31mred"},
		{"--bootstrap-server", "h\x07:1", "--list"},
		{bs, "--list", "--timeout", "\x00"},
		{bs, "--describe", "--group", "g", "--state", strings.Repeat("S", 100000)},
		{bs, "--list", strings.Repeat("x", 100000)},
		{"--\x1b[2J"},
	} {
		var out, errw bytes.Buffer
		if code := run(args, &out, &errw); code != exitUsage {
			t.Errorf("%.60q: exit %d", args, code)
		}
		checkNoControl(t, errw.String())
		if errw.Len() > 1000 {
			t.Errorf("%.60q: %d bytes of message", args, errw.Len())
		}
	}
}

func checkNoControl(t interface {
	Helper()
	Fatalf(string, ...any)
}, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c == 0x7f {
			t.Fatalf("raw control byte 0x%02x in %q", c, s)
		}
	}
}

// FuzzParseArgs: any command line parses or is refused with a *usageError (or help); no panic, no raw
// control byte in a message, and an accepted one has exactly one action and what it needs.
func FuzzParseArgs(f *testing.F) {
	for _, seed := range []string{
		"--bootstrap-server\x00h:1\x00--list",
		"--bootstrap-server=h:1\x00--describe\x00--group\x00g\x00--state\x00Stable",
		"--topology-id\x00F\x00--group\x00g\x00--topology-epoch\x004294967299",
		"--list\x00--members",
		"-h",
		"--state\x00--state",
		"--bootstrap-server\x00[::1]:9092\x00--delete\x00--group\x00a\x00--group\x00b",
		"--bootstrap-server\x00h:1\x00--reset-offsets\x00--group\x00g\x00--all-input-topics\x00--to-offset\x005\x00--execute",
		"--bootstrap-server\x00h:1\x00--reset-offsets\x00--all-groups\x00--input-topic\x00t:0,1\x00--by-duration\x00PT1H",
		"--bootstrap-server\x00h:1\x00--reset-offsets\x00--group\x00g\x00--input-topic\x00t\x00--to-datetime\x002024-01-01T00:00:00.000",
		"--bootstrap-server\x00h:1\x00--delete-offsets\x00--group\x00g\x00--input-topic\x00t",
		"--bootstrap-server\x00h:1\x00--delete\x00--all-groups\x00--delete-all-internal-topics\x00--dry-run",
		"--version",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		o, err := parseArgs(args)
		if errors.Is(err, errHelp) || errors.Is(err, errVersion) {
			return
		}
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: untyped error %T %v", args, err, err)
			}
			checkNoControl(t, err.Error())
			return
		}
		actions := 0
		for _, b := range []bool{o.list, o.describe, o.del, o.resetOffsets, o.deleteOffsets, o.topology && !o.describe, o.nextEpoch, o.topologyID.set} {
			if b {
				actions++
			}
		}
		if actions != 1 {
			t.Fatalf("%q: %d actions accepted", args, actions)
		}
		if (o.describe || o.del || o.resetOffsets) && len(o.groups) == 0 && !o.allGroups ||
			(o.deleteOffsets || o.nextEpoch || o.topology && !o.describe) && len(o.groups) != 1 {
			t.Fatalf("%q: no group", args)
		}
		if o.allGroups && len(o.groups) > 0 {
			t.Fatalf("%q: --group and --all-groups", args)
		}
		if o.resetOffsets {
			specs := 0
			for _, b := range []bool{o.toEarliest, o.toLatest, o.toCurrent, o.toOffset.set, o.shiftBy.set, o.toDatetime.set, o.byDuration.set, o.fromFile.set} {
				if b {
					specs++
				}
			}
			if specs != 1 || o.dryRun && o.execute || o.dryRunSet == o.execute ||
				!o.fromFile.set && len(o.scope) == 0 && !o.allInputTopics {
				t.Fatalf("%q: a reset Kafka refuses was accepted: %+v", args, o)
			}
		}
		if (o.dryRun || o.deleteAllInternal) && !o.resetOffsets && !o.del || o.execute && !o.resetOffsets {
			t.Fatalf("%q: --dry-run, --execute or --delete-all-internal-topics without their action", args)
		}
		if (!o.topologyID.set || len(o.groups) > 0) && len(o.servers) == 0 {
			t.Fatalf("%q: no servers", args)
		}
		if o.topologyEpoch.n < 0 || o.timeout.ms < 1 || o.output.value != "table" && o.output.value != "json" {
			t.Fatalf("%q: out of range: %+v", args, o)
		}
		if o.list && (o.members || o.offsets || o.verbose || len(o.groups) > 0) || o.describe && o.state.hasValue {
			t.Fatalf("%q: a combination Kafka refuses was accepted", args)
		}
		if len(o.groups) > 1 && !o.del && !o.resetOffsets {
			t.Fatalf("%q: several groups", args)
		}
	})
}

// Every JSON key the tool prints is camelCase, including the assignments of --members; map keys that
// are data (client tags, topic configs) aside.
func TestJSONKeysAreCamelCase(t *testing.T) {
	g := &admin.Group{ID: "g", State: "Stable", Epoch: 3, AssignmentEpoch: 3, Members: []admin.Member{{
		MemberID: "m", MemberEpoch: 3, ClientTags: map[string]string{"Zone_1": "eu"},
		Assignment:       tasks.Assignment{Active: tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 1})},
		TargetAssignment: tasks.Assignment{Standby: tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 2})},
	}}}
	var out bytes.Buffer
	c := &command{o: &options{output: once{set: true, value: "json"}}, out: &out, errw: &out}
	if code := c.describeMembers(g); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	members := out.String()
	checkCamel(t, members)
	var doc struct {
		Members []struct {
			Assignment       map[string][]string `json:"assignment"`
			TargetAssignment map[string][]string `json:"targetAssignment"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(members), &doc); err != nil || len(doc.Members) != 1 ||
		strings.Join(doc.Members[0].Assignment["active"], ",") != "0_1" || strings.Join(doc.Members[0].TargetAssignment["standby"], ",") != "0_2" {
		t.Fatalf("members JSON: %v\n%s", err, members)
	}
	if !strings.Contains(members, `"assignment"`) || !strings.Contains(members, `"targetAssignment"`) || strings.Contains(members, `"Assignment"`) {
		t.Fatalf("assignment keys:\n%s", members)
	}
	out.Reset()
	c.describeState(g)
	checkCamel(t, out.String())

	dir := t.TempDir()
	file := filepath.Join(dir, "t.json")
	if err := os.WriteFile(file, []byte(`{"subtopologies":[{"id":"0","sourceTopics":["in"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"--topology-id", file, "--output", "json"}, &out, &out); code != exitOK {
		t.Fatalf("topology-id: exit %d %s", code, out.String())
	}
	checkCamel(t, out.String())
}

var camel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// checkCamel walks a JSON document and checks every object key, except inside clientTags and configs.
func checkCamel(t *testing.T, doc string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !camel.MatchString(k) {
					t.Errorf("key %q is not camelCase in\n%s", k, doc)
				}
				if k != "clientTags" && k != "configs" {
					walk(e)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
}
