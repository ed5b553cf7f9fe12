package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/admin"
)

// planFile writes a --from-file plan and returns its path.
func planFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.csv")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The offset operations' refused combinations and bad values: exit 2 naming the option, before any
// connection. The rules are those of Kafka 4.4's StreamsGroupCommandOptions, checked against its
// tool in integration/cli_reset_test.go.
func TestBadOffsetCommandLines(t *testing.T) {
	good := planFile(t, "in,0,5\n")
	reset := []string{bs, "--reset-offsets", "--group", "g"}
	r := func(extra ...string) []string { return append(append([]string{}, reset...), extra...) }
	cases := []struct {
		args []string
		want string
	}{
		// --reset-offsets.
		{r("--all-input-topics"), "--reset-offsets needs one of --to-earliest"},
		{r("--all-input-topics", "--to-earliest", "--to-latest"), "--to-earliest can't be used with --to-latest"},
		{r("--all-input-topics", "--to-offset", "1", "--shift-by", "1"), "--to-offset can't be used with --shift-by"},
		{r("--all-input-topics", "--to-current", "--from-file", good), "--to-current can't be used with --from-file"},
		{r("--to-earliest"), "--reset-offsets needs --input-topic or --all-input-topics"},
		{r("--to-earliest", "--input-topic", "in", "--all-input-topics"), "--input-topic can't be used with --all-input-topics"},
		{r("--from-file", good, "--all-input-topics"), "--all-input-topics can't be used with --from-file"},
		{r("--from-file", good, "--input-topic", "in"), "--input-topic can't be used with --from-file"},
		{r("--all-input-topics", "--to-earliest", "--dry-run", "--execute"), "takes one of --dry-run and --execute, not both"},
		{r("--all-input-topics", "--to-earliest", "--export", "--output", "json"), "--export can't be used with --output json"},
		{[]string{bs, "--reset-offsets", "--all-input-topics", "--to-earliest"}, "--reset-offsets needs --group or --all-groups"},
		{[]string{bs, "--reset-offsets", "--all-groups", "--group", "g", "--all-input-topics", "--to-earliest"}, "--group can't be used with --all-groups"},
		{[]string{bs, "--reset-offsets", "--group", "a", "--group", "b", "--from-file", good}, "has no group column"},
		{[]string{bs, "--reset-offsets", "--all-groups", "--from-file", good}, "has no group column"},
		// Bad values.
		{r("--all-input-topics", "--to-offset", "-1"), `--to-offset "-1": must be a whole number from 0`},
		{r("--all-input-topics", "--to-offset", "x"), `--to-offset "x"`},
		{r("--all-input-topics", "--to-offset", "9223372036854775808"), `--to-offset "9223372036854775808"`},
		{r("--all-input-topics", "--to-offset"), "--to-offset needs a value"},
		{r("--all-input-topics", "--shift-by", "1.5"), `--shift-by "1.5": must be a whole number`},
		{r("--all-input-topics", "--shift-by", ""), `--shift-by ""`},
		{r("--all-input-topics", "--to-datetime", "yesterday"), `--to-datetime "yesterday": not a date and time`},
		{r("--all-input-topics", "--to-datetime", "2024-13-01T00:00:00.000"), `--to-datetime "2024-13-01T00:00:00.000"`},
		{r("--all-input-topics", "--to-datetime", "2024-01-01"), `--to-datetime "2024-01-01"`},
		{r("--all-input-topics", "--by-duration", "1h"), `--by-duration "1h": not an ISO-8601 duration`},
		{r("--all-input-topics", "--by-duration", "P"), `--by-duration "P"`},
		{r("--all-input-topics", "--by-duration", "PT"), `--by-duration "PT"`},
		{r("--all-input-topics", "--by-duration", "-PT1H"), `--by-duration "-PT1H"`},
		{r("--all-input-topics", "--by-duration", "PT-1H"), `--by-duration "PT-1H"`},
		{r("--all-input-topics", "--by-duration", "P1M"), `--by-duration "P1M"`},
		{r("--all-input-topics", "--by-duration", "P999999999D"), `--by-duration "P999999999D": too long`},
		{r("--all-input-topics", "--by-duration", "--execute"), `--by-duration needs a value, got the option "--execute"`},
		{r("--to-earliest", "--input-topic", ""), `--input-topic "": not a valid topic name`},
		{r("--to-earliest", "--input-topic", "a b"), `--input-topic "a b": not a valid topic name`},
		{r("--to-earliest", "--input-topic", "in:"), `--input-topic "in:": partition ""`},
		{r("--to-earliest", "--input-topic", "in:0,x"), `partition "x" is not a whole number`},
		{r("--to-earliest", "--input-topic", "in:-1"), `partition "-1"`},
		{r("--to-earliest", "--input-topic", "in:0:1"), `partition "0:1"`},
		{r("--to-earliest", "--input-topic", ":0"), `--input-topic "": not a valid topic name`},
		{r("--from-file", filepath.Join(t.TempDir(), "missing.csv")), "--from-file"},
		{r("--from-file", planFile(t, "")), "no offsets in the file"},
		{r("--from-file", planFile(t, "in,0\n")), "line 1: 2 fields"},
		{r("--from-file", planFile(t, "in,0,5\ng,in,1,5\n")), "line 2: 4 fields where the lines before have 3"},
		{r("--from-file", planFile(t, "in,x,5\n")), `line 1: partition "x"`},
		{r("--from-file", planFile(t, "in,0,-5\n")), `line 1: offset "-5"`},
		{r("--from-file", planFile(t, "in,0,5\n\nin,0,6\n")), "line 3: partition in-0 appears twice"},
		{r("--from-file", planFile(t, "a b,0,5\n")), `line 1: "a b" is not a valid topic name`},
		{r("--from-file", planFile(t, ",in,0,5\n")), "line 1: the group is empty"},
		{r("--from-file", planFile(t, "\"in,0,5\n")), "line 1: not a CSV record"},
		{r("--from-file", planFile(t, strings.Repeat("x", 70000))), "longer than 64 KiB"},
		// --delete-offsets.
		{[]string{bs, "--delete-offsets", "--group", "g"}, "--delete-offsets needs --input-topic or --all-input-topics"},
		{[]string{bs, "--delete-offsets", "--all-input-topics"}, "--delete-offsets needs --group"},
		{[]string{bs, "--delete-offsets", "--all-groups", "--all-input-topics"}, "--all-groups can't be used with --delete-offsets"},
		{[]string{bs, "--delete-offsets", "--group", "a", "--group", "b", "--all-input-topics"}, "only --delete and --reset-offsets take several --group"},
		{[]string{bs, "--delete-offsets", "--group", "g", "--all-input-topics", "--input-topic", "in"}, "--input-topic can't be used with --all-input-topics"},
		{[]string{bs, "--delete-offsets", "--group", "g", "--all-input-topics", "--to-earliest"}, "--to-earliest can't be used with --delete-offsets (only with --reset-offsets)"},
		{[]string{bs, "--delete-offsets", "--group", "g", "--all-input-topics", "--dry-run"}, "--dry-run can't be used with --delete-offsets"},
		{[]string{bs, "--delete-offsets", "--group", "g", "--all-input-topics", "--delete-all-internal-topics"}, "--delete-all-internal-topics can't be used with --delete-offsets"},
		// --delete, --describe, --list with the new options.
		{[]string{bs, "--delete", "--group", "g", "--input-topic", "in"}, "--input-topic can't be used with --delete: a streams group's offsets go with the group"},
		{[]string{bs, "--delete", "--group", "g", "--all-input-topics"}, "--all-input-topics can't be used with --delete"},
		{[]string{bs, "--delete", "--group", "g", "--execute"}, "--execute can't be used with --delete (only with --reset-offsets)"},
		{[]string{bs, "--delete", "--group", "g", "--export"}, "--export can't be used with --delete"},
		{[]string{bs, "--delete", "--all-groups", "--group", "g"}, "--group can't be used with --all-groups"},
		{[]string{bs, "--describe", "--group", "g", "--dry-run"}, "--dry-run can't be used with --describe"},
		{[]string{bs, "--describe", "--group", "g", "--input-topic", "in"}, "--input-topic can't be used with --describe"},
		{[]string{bs, "--describe", "--group", "g", "--to-latest"}, "--to-latest can't be used with --describe"},
		{[]string{bs, "--list", "--all-groups"}, "--all-groups can't be used with --list"},
		{[]string{bs, "--list", "--delete-all-internal-topics"}, "--delete-all-internal-topics can't be used with --list"},
		{[]string{bs, "--next-epoch", "--all-groups"}, "--all-groups can't be used with --next-epoch"},
		{[]string{bs, "--topology", "--all-groups"}, "--all-groups can't be used with --topology"},
		{[]string{bs, "--delete-all-internal-topics", "--group", "g"}, "--delete-all-internal-topics goes with --delete or --reset-offsets"},
		{[]string{bs, "--reset-offsets", "--delete-offsets", "--group", "g"}, "not --reset-offsets and --delete-offsets"},
		{[]string{bs, "--delete", "--reset-offsets", "--group", "g"}, "not --delete and --reset-offsets"},
		{[]string{"--reset-offsets", "--group", "g", "--all-input-topics", "--to-earliest"}, "--bootstrap-server is required"},
	}
	for _, c := range cases {
		var out, errw bytes.Buffer
		code := run(c.args, &out, &errw)
		if code != exitUsage || !strings.Contains(errw.String(), c.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", c.args, code, errw.String(), c.want)
		}
		checkNoControl(t, errw.String())
	}
}

func TestGoodOffsetCommandLines(t *testing.T) {
	plan := planFile(t, "in,0,5\r\n\n in , 2 , 7 \nin2,0,0\n")
	grouped := planFile(t, "\"a\",\"in\",0,5\nb,in,1,6\n")
	cases := []struct {
		args  []string
		check func(*options) bool
	}{
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-earliest"}, func(o *options) bool {
			return o.resetOffsets && o.dryRunSet && !o.dryRun && o.reset.Kind == admin.ToEarliest && o.reset.Topics == nil
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-latest", "--execute"}, func(o *options) bool {
			return !o.dryRunSet && o.reset.Kind == admin.ToLatest
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--input-topic", "in:2,0,2", "--input-topic", "in2", "--to-offset", "0", "--dry-run"}, func(o *options) bool {
			return o.dryRunSet && o.reset.Kind == admin.ToOffset && o.reset.Offset == 0 && len(o.reset.Topics) == 2 &&
				o.reset.Topics[0].Topic == "in" && len(o.reset.Topics[0].Partitions) == 2 && o.reset.Topics[1].Partitions == nil
		}},
		{[]string{bs, "--reset-offsets", "--all-groups", "--all-input-topics", "--shift-by", "-9223372036854775808"}, func(o *options) bool {
			return o.allGroups && o.reset.Kind == admin.ShiftBy && o.reset.Offset == -9223372036854775808
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-datetime", "2024-03-01T10:00:00.123"}, func(o *options) bool {
			return o.reset.Kind == admin.ToTimestamp && o.reset.Timestamp.Equal(time.Date(2024, 3, 1, 10, 0, 0, 123e6, time.UTC))
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-datetime", "2024-03-01T10:00:00+02:00"}, func(o *options) bool {
			return o.reset.Timestamp.Equal(time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC))
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-datetime", "2024-03-01T10:00:00.5Z"}, func(o *options) bool {
			return o.reset.Timestamp.Equal(time.Date(2024, 3, 1, 10, 0, 0, 5e8, time.UTC))
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--by-duration", "P1DT2H3M4.5S"}, func(o *options) bool {
			return o.reset.Kind == admin.ToTimestamp && o.duration == 26*time.Hour+3*time.Minute+4500*time.Millisecond
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--by-duration", "pt0s"}, func(o *options) bool {
			return o.duration == 0
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--from-file", plan, "--export"}, func(o *options) bool {
			p := o.plan.forGroup("g")
			return o.export && o.reset.Kind == admin.FromPlan && len(p) == 2 && p["in"][0] == 5 && p["in"][2] == 7 && p["in2"][0] == 0
		}},
		{[]string{bs, "--reset-offsets", "--group", "a", "--group", "b", "--from-file", grouped}, func(o *options) bool {
			return o.plan.forGroup("a")["in"][0] == 5 && o.plan.forGroup("b")["in"][1] == 6 && o.plan.forGroup("c") == nil
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-current", "--execute", "--delete-all-internal-topics"}, func(o *options) bool {
			return o.deleteAllInternal && o.reset.Kind == admin.ToCurrent
		}},
		{[]string{bs, "--reset-offsets", "--group", "g", "--all-input-topics", "--to-earliest", "--dry-run", "--delete-all-internal-topics"}, func(o *options) bool {
			return o.deleteAllInternal && o.dryRunSet
		}},
		{[]string{bs, "--delete-offsets", "--group", "g", "--input-topic", "in:1"}, func(o *options) bool {
			return o.deleteOffsets && len(o.scope) == 1 && o.scope[0].Partitions[0] == 1
		}},
		{[]string{bs, "--delete-offsets", "--group", "g", "--all-input-topics"}, func(o *options) bool { return o.allInputTopics }},
		{[]string{bs, "--delete", "--all-groups", "--delete-all-internal-topics"}, func(o *options) bool { return o.del && o.allGroups && o.deleteAllInternal }},
		{[]string{bs, "--delete", "--group", "g", "--dry-run"}, func(o *options) bool { return o.del && o.dryRun }},
		{[]string{bs, "--describe", "--all-groups", "--members", "--verbose"}, func(o *options) bool { return o.describe && o.allGroups }},
		{[]string{bs, "--describe", "--all-groups", "--topology"}, func(o *options) bool { return o.describe && o.topology && o.allGroups }},
	}
	for _, c := range cases {
		o, err := parseArgs(c.args)
		if err != nil || !c.check(o) {
			t.Errorf("%q: %+v, %v", c.args, o, err)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {bs, "--list", "--version"}, {"--version", "--nonsense-after"}} {
		var out, errw bytes.Buffer
		code := run(args, &out, &errw)
		if args[len(args)-1] == "--nonsense-after" {
			// An unknown option is refused before --version is seen, as the flag package reads in order.
			if code != exitUsage {
				t.Errorf("%q: exit %d", args, code)
			}
			continue
		}
		if code != exitOK || !strings.HasPrefix(out.String(), "streams-groups ") || errw.Len() != 0 {
			t.Errorf("%q: exit %d, %q %q", args, code, out.String(), errw.String())
		}
	}
}
