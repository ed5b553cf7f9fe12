package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// expectations is what expected.txt says of each Kafka line (major.minor): the least number of
// top-level tests that must pass, and the tests that skip there with the reason.
type expectations struct {
	min   map[string]int
	skips map[string]map[string]string // line → test → reason
}

// readExpectations parses the expected.txt format (see the file's header).
func readExpectations(r io.Reader) (*expectations, error) {
	e := &expectations{min: map[string]int{}, skips: map[string]map[string]string{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		bad := func(why string) error { return fmt.Errorf("line %d %q: %s", n, line, why) }
		if len(f) < 3 {
			return nil, bad("want `min LINE N` or `skip LINE Test reason`")
		}
		if !validLine(f[1]) {
			return nil, bad("a Kafka line is major.minor, e.g. 4.3")
		}
		switch f[0] {
		case "min":
			v, err := strconv.Atoi(f[2])
			if err != nil || v < 1 || len(f) != 3 {
				return nil, bad("want `min LINE N` with N ≥ 1")
			}
			if _, dup := e.min[f[1]]; dup {
				return nil, bad("a second min for the line")
			}
			e.min[f[1]] = v
		case "skip":
			if len(f) < 4 || !strings.HasPrefix(f[2], "Test") {
				return nil, bad("want `skip LINE TestName reason`")
			}
			if e.skips[f[1]] == nil {
				e.skips[f[1]] = map[string]string{}
			}
			if _, dup := e.skips[f[1]][f[2]]; dup {
				return nil, bad("the test is listed twice for the line")
			}
			e.skips[f[1]][f[2]] = strings.Join(f[3:], " ")
		default:
			return nil, bad("unknown directive " + f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for l := range e.skips {
		if _, ok := e.min[l]; !ok {
			return nil, fmt.Errorf("line %s has expected skips but no min", l)
		}
	}
	return e, nil
}

// loadExpectations reads the expectations file at path.
func loadExpectations(path string) (*expectations, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := readExpectations(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

func validLine(s string) bool {
	maj, mnr, ok := strings.Cut(s, ".")
	_, err1 := strconv.Atoi(maj)
	_, err2 := strconv.Atoi(mnr)
	return ok && err1 == nil && err2 == nil
}

// kafkaLine is the major.minor of a Kafka version ("4.2.2" → "4.2").
func kafkaLine(version string) string {
	f := strings.SplitN(version, ".", 3)
	if len(f) < 2 {
		return version
	}
	return f[0] + "." + f[1]
}

// check compares one version's run with the expectations of its line and returns every breach:
// an unexpected skip, an expected skip that did not happen, too few passes, or a line with no
// expectations at all. An empty answer means the run is what the table says.
func (e *expectations) check(r *result) []string {
	line := kafkaLine(r.version)
	min, ok := e.min[line]
	if !ok {
		return []string{fmt.Sprintf("Kafka line %s has no entry in the expectations file: add `min %s N` and its skips", line, line)}
	}
	var out []string
	want := e.skips[line]
	for _, test := range slices.Sorted(mapKeys(r.skippedTests)) {
		if _, ok := want[test]; !ok {
			out = append(out, fmt.Sprintf("%s skipped, which is not expected on %s: %s", test, line, r.skippedTests[test]))
		}
	}
	for _, test := range slices.Sorted(mapKeys(want)) {
		if _, ok := r.skippedTests[test]; !ok {
			out = append(out, fmt.Sprintf("%s was expected to skip on %s (%s) but did not (it ran, or no longer exists): the entry is stale", test, line, want[test]))
		}
	}
	if r.passed < min {
		out = append(out, fmt.Sprintf("%d top-level tests passed on %s, fewer than the %d expected", r.passed, r.version, min))
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
