package docs_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Figures that match their sources: the parts of the documentation between a pair of markers
//
//	<!-- report:begin NAME -->
//	<!-- report:end NAME -->
//
// are generated from the committed report file NAME under docs/reports (the compat report of make
// test-compat COMPAT_REPORT=…), or, when NAME has a slash, at that path from the repository's root
// (a chaos run's report.json where the chaos suite keeps it, so that one copy exists), and
// TestDocFiguresAreTheReports fails
// when one differs from what its report renders to, or names a report that does not exist. After
// committing a new report: go test ./docs -run TestDocFiguresAreTheReports -figures.update

var updateFigures = flag.Bool("figures.update", false, "rewrite the generated parts of the docs from docs/reports")

// figureDocs are the pages that may hold generated parts.
var figureDocs = []string{"docs/compatibility.md", "docs/reliability.md"}

func TestDocFiguresAreTheReports(t *testing.T) {
	root := ".."
	found := 0
	for _, page := range figureDocs {
		path := filepath.Join(root, filepath.FromSlash(page))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		out, n, err := regenerate(text, func(name string) (string, error) {
			if strings.Contains(name, "/") {
				return renderReport(filepath.Join(root, filepath.FromSlash(name)))
			}
			return renderReport(filepath.Join(root, "docs", "reports", name))
		})
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		found += n
		if out == text {
			continue
		}
		if *updateFigures {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: generated parts rewritten from docs/reports", page)
			continue
		}
		t.Errorf("%s: a generated part differs from its report in docs/reports; run go test ./docs -run TestDocFiguresAreTheReports -figures.update", page)
	}
	if found == 0 {
		t.Error("no generated part in the docs: the markers are gone, so nothing ties their figures to a report")
	}
}

// regenerate replaces the body of every marker pair of text by render(NAME) and returns the new
// text and the number of pairs.
func regenerate(text string, render func(name string) (string, error)) (string, int, error) {
	const begin, end = "<!-- report:begin ", "<!-- report:end "
	var b strings.Builder
	n := 0
	for {
		i := strings.Index(text, begin)
		if i < 0 {
			if strings.Contains(text, end) {
				return "", n, fmt.Errorf("a %q marker without its begin", end)
			}
			b.WriteString(text)
			return b.String(), n, nil
		}
		nameEnd := strings.Index(text[i:], " -->")
		if nameEnd < 0 {
			return "", n, fmt.Errorf("an unterminated %q marker", begin)
		}
		name := text[i+len(begin) : i+nameEnd]
		closeMark := end + name + " -->"
		j := strings.Index(text, closeMark)
		if j < i {
			return "", n, fmt.Errorf("report %s: no %q marker after its begin", name, closeMark)
		}
		body, err := render(name)
		if err != nil {
			return "", n, fmt.Errorf("report %s: %w", name, err)
		}
		b.WriteString(text[:i+nameEnd+len(" -->")])
		b.WriteString("\n" + body)
		b.WriteString(closeMark)
		text = text[j+len(closeMark):]
		n++
	}
}

// renderReport is the Markdown of one report: a compat report (.md) as it is, its lists as bullets;
// a chaos report.json as its verdicts, recovery and double-processing tables and peaks.
func renderReport(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	switch filepath.Ext(path) {
	case ".md":
		// scripts/compat's report: its table as it is; its indented lists (failures, skips with
		// their reasons) as Markdown bullets.
		var out []string
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if rest, ok := strings.CutPrefix(l, "  "); ok {
				l = "- " + rest
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n") + "\n", nil
	case ".json":
		return renderChaos(b)
	}
	return "", fmt.Errorf("%s: no renderer for this kind of report", path)
}

// summary is one distribution of a chaos report (cmd/chaos's report.json).
type summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
	Max    float64 `json:"max_ms"`
}

type verdict struct {
	OK         bool `json:"ok"`
	Violations int  `json:"violations"`
}

type chaosReport struct {
	Config struct {
		Seed     int64  `json:"seed"`
		Faults   int    `json:"faults"`
		Brokers  int    `json:"brokers"`
		Session  int    `json:"session_ms"`
		Interval int    `json:"heartbeat_ms"`
		Command  string `json:"command"`
	} `json:"config"`
	Recovery      map[string]summary `json:"recovery"`
	S1Windows     map[string]summary `json:"s1_windows"`
	S1AfterResume map[string]summary `json:"s1_after_resume"`
	S1, S2, S3    *verdict
	S4            *verdict // exactly-once runs (APP=eos) only
	EOS           *struct {
		Keys       int     `json:"keys"`
		Inputs     int64   `json:"inputs"`
		Outputs    int64   `json:"output_records"`
		Lost       int64   `json:"lost"`
		Duplicated int64   `json:"duplicated"`
		Repeats    int64   `json:"visible_repeats"`
		Gaps       int64   `json:"visible_gaps"`
		SettleMs   float64 `json:"settle_ms"`
	} `json:"eos"`
	Processes []struct {
		Members    int     `json:"members"`
		Goroutines int     `json:"max_goroutines"`
		HeapMiB    float64 `json:"max_heap_mib"`
	} `json:"processes"`
	Conns   *summary `json:"broker_connections"`
	Markers []string `json:"markers"` // markers the driver wrote for transactions the broker left hanging
	// Hanging are the hanging transactions the driver's detector found; HangDetector says it ran.
	Hanging      []string `json:"hanging"`
	HangDetector bool     `json:"hang_detector"`
	Pass         bool     `json:"pass"`
	Wall         float64  `json:"wall_seconds"`
}

func renderChaos(b []byte) (string, error) {
	var r chaosReport
	if err := json.Unmarshal(b, &r); err != nil {
		return "", err
	}
	if r.S1 == nil || r.S2 == nil || r.S3 == nil || r.Recovery == nil {
		return "", fmt.Errorf("not a chaos report (no s1, s2, s3 or recovery)")
	}
	ms := func(v float64) string { return fmt.Sprintf("%.0f ms", math.Round(v)) }
	ok := func(v *verdict) string {
		if v.OK {
			return "passed"
		}
		return fmt.Sprintf("FAILED (%d violations)", v.Violations)
	}
	var w strings.Builder
	fmt.Fprintf(&w, "`%s`: %d faults, seed %d, %d broker(s), session %d ms, heartbeat %d ms, %.0f s wall time. S1 %s, S2 %s, S3 %s.\n\n",
		r.Config.Command, r.Config.Faults, r.Config.Seed, r.Config.Brokers, r.Config.Session, r.Config.Interval, r.Wall,
		ok(r.S1), ok(r.S2), ok(r.S3))
	if r.S4 != nil && r.EOS != nil {
		e := r.EOS
		fmt.Fprintf(&w, "Exactly-once (S4) %s: %d keys, %d input records, %d committed output records; %d lost, %d duplicated; "+
			"counts visible twice %d, never visible %d; settled %.1f s after the last fault.\n\n",
			ok(r.S4), e.Keys, e.Inputs, e.Outputs, e.Lost, e.Duplicated, e.Repeats, e.Gaps, e.SettleMs/1000)
		if r.HangDetector {
			fmt.Fprintf(&w, "Transactions left hanging (still open on a partition 5 s after their coordinator's decision was seen), found by "+
				"the driver's detector, which writes no marker: %d.\n\n", len(r.Hanging))
		}
		if n := len(r.Markers); n > 0 {
			fmt.Fprintf(&w, "The driver ended %d transactions the broker left hanging, with their ABORT markers "+
				"(a broker limitation, see integration/chaos/README.md).\n\n", n)
		}
	}
	w.WriteString("Recovery, from the fault's end to the group converged:\n\n| fault | n | median | p95 | max |\n|---|---:|---:|---:|---:|\n")
	for _, k := range slices.Sorted(keys(r.Recovery)) {
		s := r.Recovery[k]
		fmt.Fprintf(&w, "| %s | %d | %s | %s | %s |\n", k, s.N, ms(s.Median), ms(s.P95), ms(s.Max))
	}
	if len(r.S1Windows) > 0 {
		w.WriteString("\nThe double-processing window (S1), the longest time a task was held by the faulted member and another at once:\n\n| fault | n | median | max | of which after the member could act again (max) |\n|---|---:|---:|---:|---:|\n")
		for _, k := range slices.Sorted(keys(r.S1Windows)) {
			s, after := r.S1Windows[k], "–"
			if a, ok := r.S1AfterResume[k]; ok {
				after = ms(a.Max)
			}
			fmt.Fprintf(&w, "| %s | %d | %s | %s | %s |\n", k, s.N, ms(s.Median), ms(s.Max), after)
		}
	}
	one, many := 0, 0
	g1, h1, gN, hN := 0, 0.0, 0, 0.0
	for _, p := range r.Processes {
		if p.Members == 1 {
			g1, h1 = max(g1, p.Goroutines), max(h1, p.HeapMiB)
			one++
		} else {
			gN, hN = max(gN, p.Goroutines), max(hN, p.HeapMiB)
			many++
		}
	}
	w.WriteString("\nPeaks:")
	if one > 0 {
		fmt.Fprintf(&w, " %d goroutines and %.1f MiB of heap in use per one-member process (%d incarnations);", g1, h1, one)
	}
	if many > 0 {
		fmt.Fprintf(&w, " %d goroutines and %.1f MiB in a process of several members;", gN, hN)
	}
	if r.Conns != nil {
		fmt.Fprintf(&w, " broker connections median %.0f, max %.0f.", r.Conns.Median, r.Conns.Max)
	}
	w.WriteString("\n")
	return w.String(), nil
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestRegenerate(t *testing.T) {
	render := func(name string) (string, error) { return "body of " + name + "\n", nil }
	in := "a\n<!-- report:begin x.md -->\nold\n<!-- report:end x.md -->\nb\n<!-- report:begin y.json -->\n<!-- report:end y.json -->\n"
	out, n, err := regenerate(in, render)
	want := "a\n<!-- report:begin x.md -->\nbody of x.md\n<!-- report:end x.md -->\nb\n<!-- report:begin y.json -->\nbody of y.json\n<!-- report:end y.json -->\n"
	if err != nil || n != 2 || out != want {
		t.Fatalf("regenerate: %d, %v\n%s", n, err, out)
	}
	for _, bad := range []string{"<!-- report:begin x.md -->\n", "<!-- report:end x.md -->\n", "<!-- report:begin x.md"} {
		if _, _, err := regenerate(bad, render); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestRenderChaos(t *testing.T) {
	in := `{"config": {"seed": 7, "faults": 2, "brokers": 1, "session_ms": 6000, "heartbeat_ms": 500, "command": "SEED=7 FAULTS=2 make chaos"},
	"recovery": {"kill9": {"n": 1, "median_ms": 5813.4, "p95_ms": 5813.4, "max_ms": 5813.4}, "add": {"n": 1, "median_ms": 0, "p95_ms": 0, "max_ms": 0}},
	"s1_windows": {"pause-long": {"n": 1, "median_ms": 2973, "max_ms": 2973}}, "s1_after_resume": {"pause-long": {"n": 1, "max_ms": 1}},
	"s1": {"ok": true}, "s2": {"ok": false, "violations": 1}, "s3": {"ok": true},
	"processes": [{"members": 1, "max_goroutines": 13, "max_heap_mib": 3.5}, {"members": 1, "max_goroutines": 12, "max_heap_mib": 2.1}],
	"broker_connections": {"n": 3, "median_ms": 6, "max_ms": 13}, "pass": false, "wall_seconds": 61.2}`
	got, err := renderChaos([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "`SEED=7 FAULTS=2 make chaos`: 2 faults, seed 7, 1 broker(s), session 6000 ms, heartbeat 500 ms, 61 s wall time. S1 passed, S2 FAILED (1 violations), S3 passed.\n\n" +
		"Recovery, from the fault's end to the group converged:\n\n| fault | n | median | p95 | max |\n|---|---:|---:|---:|---:|\n" +
		"| add | 1 | 0 ms | 0 ms | 0 ms |\n| kill9 | 1 | 5813 ms | 5813 ms | 5813 ms |\n" +
		"\nThe double-processing window (S1), the longest time a task was held by the faulted member and another at once:\n\n" +
		"| fault | n | median | max | of which after the member could act again (max) |\n|---|---:|---:|---:|---:|\n" +
		"| pause-long | 1 | 2973 ms | 2973 ms | 1 ms |\n" +
		"\nPeaks: 13 goroutines and 3.5 MiB of heap in use per one-member process (2 incarnations); broker connections median 6, max 13.\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := renderChaos([]byte(`{"config": {}}`)); err == nil {
		t.Fatal("a JSON without verdicts rendered as a chaos report")
	}

	// An exactly-once run says how many hanging transactions the driver ended, and how.
	eos := `{"config": {"seed": 7, "faults": 1, "brokers": 1, "session_ms": 6000, "heartbeat_ms": 500, "command": "APP=eos make chaos"},
	"recovery": {"broker-restart": {"n": 1, "median_ms": 40, "p95_ms": 40, "max_ms": 40}},
	"s1": {"ok": true}, "s2": {"ok": true}, "s3": {"ok": true}, "s4": {"ok": true},
	"eos": {"keys": 36, "inputs": 100, "output_records": 100, "settle_ms": 1500},
	"markers": ["ended a hanging transaction: wrote the ABORT marker for t[1] producer 0 epoch 16 from offset 3",
		"ended a hanging transaction: wrote the ABORT marker for t[2] producer 1 epoch 7 from offset 9",
		"ended a hanging transaction: wrote the ABORT marker for t[3] producer 1 epoch 7 from offset 4"],
	"pass": true, "wall_seconds": 50}`
	got, err = renderChaos([]byte(eos))
	if err != nil {
		t.Fatal(err)
	}
	if want := "The driver ended 3 transactions the broker left hanging, with their ABORT markers " +
		"(a broker limitation, see integration/chaos/README.md).\n\n"; !strings.Contains(got, want) {
		t.Fatalf("got\n%s\nwant it to say\n%s", got, want)
	}
	if strings.Contains(got, "found by the driver's detector") {
		t.Fatalf("a run without the detector says what it found:\n%s", got)
	}
	// A run with the detector says how many hangs it found, none too.
	for n, hanging := range []string{`[]`, `["hanging transaction: COMMIT marker for t[1]"]`} {
		det := strings.Replace(eos, `"pass": true`, `"hang_detector": true, "hanging": `+hanging+`, "pass": true`, 1)
		got, err = renderChaos([]byte(det))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Transactions left hanging (still open on a partition 5 s after their coordinator's decision was seen), found by "+
			"the driver's detector, which writes no marker: %d.\n\n", n)
		if !strings.Contains(got, want) {
			t.Fatalf("got\n%s\nwant it to say\n%s", got, want)
		}
	}
}
