// Command compat runs the integration suite once per Kafka version, each against a broker of that
// version started for the run (scripts/with-broker.sh with KAFKA_VERSION), and ends with a table:
// version × tests passed, skipped and failed, with the wall time of each run. It reads `go test
// -json`, so it prints as it goes only what a person needs: each failed test's output, and each
// skipped test with the reason it gave (a 4.4-only test on a 4.2 broker says so).
//
//	go run ./scripts/compat [-versions 4.2.2,4.3.1,4.4.0] [-report FILE] [-- go test flags and packages]
//
// Without packages it runs `go test -race -count=1 -timeout 30m ./integration/...`. The counts are of
// top-level tests (a test's subtests are not counted; a skipped subtest is listed as TestX/sub). It
// exits 1, after running every version, if any version had a failed test, a run that did not finish
// (the broker did not start, the build failed), or a run that breaks its line's entries in
// expected.txt (-expect): a skip not listed there, a listed skip that did not happen, or fewer passed
// top-level tests than the line's minimum. -expect "" turns that check off (for a -run subset).
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// result is what one version's run came to.
type result struct {
	version                 string
	passed, skipped, failed int               // top-level tests
	skips                   []string          // "TestX: reason", top-level tests and subtests
	skippedTests            map[string]string // test (or TestX/sub) → reason
	breaches                []string          // what the run did that the expectations file does not allow
	failures                []string          // failed tests, and packages that failed outside any test
	wall                    time.Duration
	times                   []testTime // top-level tests that passed or failed, with their wall times
	runErr                  error      // the run did not finish normally (beyond failed tests)
}

// testTime is one top-level test's wall time, as go test reported it.
type testTime struct {
	test    string
	elapsed time.Duration
}

// slowest is how many of a line's slowest tests the table lists: where the suite's time goes, so a
// run that grows is explained by its report.
const slowest = 8

func main() {
	versions := flag.String("versions", "4.2.2,4.3.1,4.4.0", "comma-separated Apache Kafka versions")
	report := flag.String("report", "", "also write the final table to this file (the same Markdown table and lists)")
	expectFile := flag.String("expect", filepath.Join(repoRoot(), "scripts", "compat", "expected.txt"),
		"expected skips and minimum passes per Kafka line; empty: no such check")
	flag.Parse()
	var exp *expectations
	if *expectFile != "" {
		var err error
		if exp, err = loadExpectations(*expectFile); err != nil {
			fmt.Fprintln(os.Stderr, "compat:", err)
			os.Exit(2)
		}
	}
	args := flag.Args()
	if len(args) == 0 {
		args = []string{"-race", "-count=1", "-timeout", "30m", "./integration/..."}
	}
	root := repoRoot()
	var results []*result
	for _, v := range strings.Split(*versions, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		fmt.Printf("\n=== Kafka %s: go test -json %s\n", v, strings.Join(args, " "))
		r := run(root, v, args)
		results = append(results, r)
		fmt.Printf("=== Kafka %s: %d passed, %d skipped, %d failed (top-level tests) in %s\n", v, r.passed, r.skipped, r.failed, r.wall.Round(time.Second))
		if exp != nil {
			r.breaches = exp.check(r)
			for _, b := range r.breaches {
				fmt.Printf("    NOT AS EXPECTED: %s\n", b)
			}
		}
	}
	table := render(results)
	fmt.Print("\n" + table)
	if *report != "" {
		if err := os.WriteFile(*report, []byte(table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "compat:", err)
			os.Exit(1)
		}
	}
	for _, r := range results {
		if r.failed > 0 || r.runErr != nil || len(r.breaches) > 0 {
			os.Exit(1)
		}
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// run starts a broker of version v for one `go test -json` run and reads its events as they come.
func run(root, v string, args []string) *result {
	r := &result{version: v, skippedTests: map[string]string{}}
	cmd := exec.Command(filepath.Join(root, "scripts", "with-broker.sh"), append([]string{"go", "test", "-json"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KAFKA_VERSION="+v) // with-broker.sh sets STREAMSGROUP_BOOTSTRAP to its broker
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.runErr = err
		return r
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.runErr = err
		return r
	}
	read(out, r)
	err = cmd.Wait()
	r.wall = time.Since(start)
	if err != nil && r.failed == 0 {
		r.runErr = fmt.Errorf("the run ended with %v and no failed test: see the output above", err)
		r.failures = append(r.failures, "(run) "+err.Error())
	}
	return r
}

// read consumes the events of one run: it counts top-level tests and prints failures and skips.
func read(out io.Reader, r *result) {
	output := map[string][]string{} // test → its output lines so far
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Printf("%s\n", line) // not an event (build errors of older toolchains)
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output", "build-output":
			if e.Test == "" {
				// Package-level output: the TestMain's and go test's own lines; keep the ones that
				// explain a failure to start.
				if strings.Contains(e.Output, "integration:") || strings.HasPrefix(e.Output, "FAIL") || e.Action == "build-output" {
					fmt.Print(e.Output)
				}
				continue
			}
			output[key] = append(output[key], e.Output)
		case "pass", "skip", "fail":
			lines := output[key]
			delete(output, key)
			if e.Test == "" {
				if e.Action == "fail" && r.failed == 0 {
					r.failures = append(r.failures, e.Package+" (package)")
					r.runErr = fmt.Errorf("package %s failed outside its tests", e.Package)
				}
				continue
			}
			top := !strings.Contains(e.Test, "/")
			if top && e.Action != "skip" {
				r.times = append(r.times, testTime{e.Test, time.Duration(e.Elapsed * float64(time.Second))})
			}
			switch e.Action {
			case "pass":
				if top {
					r.passed++
				}
			case "skip":
				reason := skipReason(lines)
				fmt.Printf("    SKIP %s: %s\n", e.Test, reason)
				r.skippedTests[e.Test] = reason
				r.skips = append(r.skips, e.Test+": "+reason)
				if top {
					r.skipped++
				}
			case "fail":
				// A failed subtest's lines say why (its parent's say only that it failed): print
				// them too; only top-level tests are counted.
				if top {
					r.failed++
					r.failures = append(r.failures, e.Test)
				}
				fmt.Printf("    FAIL %s (%.1fs)\n", e.Test, e.Elapsed)
				for _, l := range lines {
					fmt.Print("        " + l)
				}
			}
		}
	}
}

// skipReason is what a skipped test logged, without go test's own framing lines.
func skipReason(lines []string) string {
	var keep []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		keep = append(keep, t)
	}
	if len(keep) == 0 {
		return "(no reason given)"
	}
	return strings.Join(keep, " ")
}

func render(results []*result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Integration suite by Kafka version (%s, %s/%s, %d CPUs)\n\n", time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("Counts are of top-level tests (subtests are not counted).\n\n")
	b.WriteString("| Kafka | passed | skipped | failed | wall time |\n|---|---:|---:|---:|---:|\n")
	for _, r := range results {
		failed := fmt.Sprint(r.failed)
		if r.runErr != nil && r.failed == 0 {
			failed = "run failed"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", r.version, r.passed, r.skipped, failed, r.wall.Round(time.Second))
	}
	for _, r := range results {
		if len(r.failures) > 0 {
			fmt.Fprintf(&b, "\nfailed on %s: %s\n", r.version, strings.Join(r.failures, ", "))
		}
	}
	for _, r := range results {
		if len(r.breaches) > 0 {
			fmt.Fprintf(&b, "\nnot as scripts/compat/expected.txt expects on %s:\n", r.version)
			for _, s := range r.breaches {
				fmt.Fprintf(&b, "  %s\n", s)
			}
		}
	}
	for _, r := range results {
		if len(r.times) == 0 {
			continue
		}
		times := slices.Clone(r.times)
		slices.SortStableFunc(times, func(a, b testTime) int { return cmp.Compare(b.elapsed, a.elapsed) })
		var sum time.Duration
		for _, t := range r.times {
			sum += t.elapsed
		}
		fmt.Fprintf(&b, "\nslowest on %s (of %s in %d tests):\n", r.version, sum.Round(time.Second), len(r.times))
		for _, t := range times[:min(slowest, len(times))] {
			fmt.Fprintf(&b, "  %6s  %s\n", t.elapsed.Round(100*time.Millisecond), t.test)
		}
	}
	for _, r := range results {
		if len(r.skips) > 0 {
			fmt.Fprintf(&b, "\nskipped on %s:\n", r.version)
			for _, s := range r.skips {
				fmt.Fprintf(&b, "  %s\n", s)
			}
		}
	}
	return b.String()
}
