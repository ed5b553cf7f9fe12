package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

const sample = `# comment
min 4.2 2
min 4.4 3
skip 4.2 TestOld needs 4.4
skip 4.2 TestX/sub is for 4.4
`

func TestReadExpectationsRefusesBadLines(t *testing.T) {
	for _, bad := range []string{
		"min 4.2",
		"min 4.2 zero",
		"min 4.2 0",
		"min 4 3",
		"min 4.2 3\nmin 4.2 4",
		"skip 4.2 TestA",
		"skip 4.2 Abc reason",
		"min 4.2 1\nskip 4.2 TestA r\nskip 4.2 TestA r",
		"skip 4.3 TestA reason", // skips without a min
		"max 4.2 3",
	} {
		if _, err := readExpectations(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: accepted, want an error", bad)
		}
	}
}

func TestTheCommittedExpectationsParse(t *testing.T) {
	e, err := loadExpectations("expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"4.2", "4.3", "4.4"} {
		if e.min[l] < 1 {
			t.Errorf("line %s has no minimum pass count", l)
		}
	}
}

// runOf feeds go test -json lines through read, as a run of version v.
func runOf(t *testing.T, v string, events string) *result {
	t.Helper()
	r := &result{version: v, skippedTests: map[string]string{}}
	stdout := os.Stdout
	devnull, _ := os.Open(os.DevNull)
	os.Stdout = devnull // read prints skips and failures as it goes
	defer func() { os.Stdout = stdout; devnull.Close() }()
	read(io.Reader(strings.NewReader(events)), r)
	return r
}

const ev = `{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestOld","Output":"    x_test.go:1: needs 4.4\n"}
{"Action":"skip","Package":"p","Test":"TestOld"}
{"Action":"skip","Package":"p","Test":"TestX/sub"}
{"Action":"pass","Package":"p","Test":"TestX"}
{"Action":"pass","Package":"p","Test":"TestY/sub"}
{"Action":"pass","Package":"p","Test":"TestY"}
`

func TestCheck(t *testing.T) {
	e, err := readExpectations(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	r := runOf(t, "4.2.2", ev)
	if r.passed != 3 || r.skipped != 1 {
		t.Fatalf("counted %d passed, %d skipped; want 3 and 1 (top-level tests only)", r.passed, r.skipped)
	}
	if b := e.check(r); len(b) != 0 {
		t.Fatalf("a run as expected: %v", b)
	}

	// On 4.4 nothing may skip, and three must pass.
	b := e.check(runOf(t, "4.4.0", ev))
	if len(b) != 2 || !strings.Contains(b[0], "TestOld skipped") || !strings.Contains(b[1], "TestX/sub skipped") {
		t.Fatalf("unexpected skips on 4.4: %q", b)
	}

	// An expected skip that ran is a stale entry.
	ran := strings.Replace(ev, `"Action":"skip","Package":"p","Test":"TestOld"`, `"Action":"pass","Package":"p","Test":"TestOld"`, 1)
	b = e.check(runOf(t, "4.2.2", ran))
	if len(b) != 1 || !strings.Contains(b[0], "TestOld was expected to skip") || !strings.Contains(b[0], "stale") {
		t.Fatalf("expected skip that ran: %q", b)
	}

	// Too few passes: nothing ran at all.
	b = e.check(runOf(t, "4.4.0", ""))
	if len(b) != 1 || !strings.Contains(b[0], "0 top-level tests passed") {
		t.Fatalf("empty run on 4.4: %q", b)
	}
	// Four top-level passes meet a minimum of 4 and miss one of 5.
	all := runOf(t, "4.4.0", strings.ReplaceAll(ev, `"skip"`, `"pass"`))
	e.min["4.4"] = 5
	if b := e.check(all); len(b) != 1 || !strings.Contains(b[0], "4 top-level tests passed on 4.4.0, fewer than the 5") {
		t.Fatalf("4 passed with min 5: %q", b)
	}
	e.min["4.4"] = 4
	if b := e.check(all); len(b) != 0 {
		t.Fatalf("4 passed with min 4: %q", b)
	}

	// A line the file does not know.
	if b := e.check(runOf(t, "4.3.1", ev)); len(b) != 1 || !strings.Contains(b[0], "no entry") {
		t.Fatalf("unknown line: %q", b)
	}
}

// A failed subtest's own lines are printed (they say why; its parent's say only that it failed),
// and only the top-level test is counted as failed.
func TestReadPrintsAFailedSubtestsLines(t *testing.T) {
	events := `{"Action":"output","Package":"p","Test":"TestF/sub","Output":"    f_test.go:9: the member lost its tasks\n"}
{"Action":"fail","Package":"p","Test":"TestF/sub","Elapsed":1.5}
{"Action":"output","Package":"p","Test":"TestF","Output":"    f_test.go:3: summary\n"}
{"Action":"fail","Package":"p","Test":"TestF","Elapsed":2}
`
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = pw
	r := &result{version: "4.4.0", skippedTests: map[string]string{}}
	read(strings.NewReader(events), r)
	os.Stdout = stdout
	pw.Close()
	printed, _ := io.ReadAll(pr)
	for _, want := range []string{"FAIL TestF/sub (1.5s)", "f_test.go:9: the member lost its tasks", "FAIL TestF (2.0s)", "f_test.go:3: summary"} {
		if !strings.Contains(string(printed), want) {
			t.Errorf("printed:\n%s\nwant a line with %q", printed, want)
		}
	}
	if r.failed != 1 || len(r.failures) != 1 || r.failures[0] != "TestF" {
		t.Fatalf("failed %d, failures %v; want 1, [TestF]", r.failed, r.failures)
	}
}

// The report lists a line's slowest top-level tests, slowest first, with the sum of all; skipped
// tests and subtests take no place in it.
func TestRenderListsTheSlowestTests(t *testing.T) {
	var events strings.Builder
	for i := 1; i <= slowest+2; i++ {
		fmt.Fprintf(&events, "{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"T%02d\",\"Elapsed\":%d}\n", i, i)
	}
	events.WriteString(`{"Action":"pass","Package":"p","Test":"T99/sub","Elapsed":500}
{"Action":"skip","Package":"p","Test":"TSkip","Elapsed":400}
{"Action":"fail","Package":"p","Test":"TFail","Elapsed":20}
`)
	out := render([]*result{runOf(t, "4.4.0", events.String())})
	i := strings.Index(out, "slowest on 4.4.0 (of 1m15s in 11 tests):")
	if i < 0 {
		t.Fatalf("no slowest list with the sum of 1..10 and 20 seconds in 11 tests:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out[i:]), "\n")[1:]
	want := []string{"20s  TFail", "10s  T10", "9s  T09", "8s  T08", "7s  T07", "6s  T06", "5s  T05", "4s  T04"}
	if len(lines) < len(want) {
		t.Fatalf("listed %q, want %q", lines, want)
	}
	for k, w := range want {
		if strings.TrimSpace(lines[k]) != w {
			t.Errorf("line %d is %q, want %q", k, lines[k], w)
		}
	}
	if len(lines) > len(want) && strings.Contains(lines[len(want)], "T0") {
		t.Errorf("more than %d tests listed: %q", slowest, lines)
	}
}
