package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/internal/text"
)

// resetPlan is a --from-file plan: group -> topic -> partition -> offset. A file without a group
// column is stored under "" and applies to the one --group.
type resetPlan struct {
	withGroup bool
	offsets   map[string]map[string]map[int32]int64
}

// forGroup returns the plan's offsets for group (nil when it has none).
func (p resetPlan) forGroup(group string) map[string]map[int32]int64 {
	if !p.withGroup {
		return p.offsets[""]
	}
	return p.offsets[group]
}

// checkOffsetOptions applies the rules of Kafka's StreamsGroupCommandOptions to the offset options
// (--reset-offsets, --delete-offsets and their scope, specification and execution options), refuses
// what the action would ignore, and reads their values.
func (o *options) checkOffsetOptions(action string) error {
	scenarios := []struct {
		on   bool
		name string
	}{{o.toEarliest, "--to-earliest"}, {o.toLatest, "--to-latest"}, {o.toCurrent, "--to-current"}, {o.toOffset.set, "--to-offset"},
		{o.shiftBy.set, "--shift-by"}, {o.toDatetime.set, "--to-datetime"}, {o.byDuration.set, "--by-duration"}, {o.fromFile.set, "--from-file"}}
	var given []string
	for _, s := range scenarios {
		if s.on {
			given = append(given, s.name)
		}
	}
	if len(given) > 0 && action != "--reset-offsets" {
		return usagef("%s can't be used with %s (only with --reset-offsets)", given[0], action)
	}
	scoped := len(o.inputTopics) > 0 || o.allInputTopics
	scopeName := "--input-topic"
	if len(o.inputTopics) == 0 {
		scopeName = "--all-input-topics"
	}
	switch {
	case scoped && action == "--delete":
		return usagef("%s can't be used with --delete: a streams group's offsets go with the group (for some topics only, use --delete-offsets)", scopeName)
	case scoped && action != "--reset-offsets" && action != "--delete-offsets":
		return usagef("%s can't be used with %s (only with --reset-offsets or --delete-offsets)", scopeName, action)
	case len(o.inputTopics) > 0 && o.allInputTopics:
		return usagef("--input-topic can't be used with --all-input-topics")
	}
	for _, t := range o.inputTopics {
		tp, err := parseInputTopic(t)
		if err != nil {
			return err
		}
		o.scope = append(o.scope, tp)
	}

	switch action {
	case "--delete-offsets":
		if !scoped {
			return usagef("--delete-offsets needs --input-topic or --all-input-topics")
		}
	case "--reset-offsets":
		if o.dryRun && o.execute {
			return usagef("--reset-offsets takes one of --dry-run and --execute, not both")
		}
		switch {
		case len(given) == 0:
			return usagef("--reset-offsets needs one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration, --from-file")
		case len(given) > 1:
			return usagef("%s can't be used with %s (give one reset specification)", given[0], given[1])
		}
		switch {
		case o.fromFile.set && scoped:
			return usagef("%s can't be used with --from-file (the file names the partitions)", scopeName)
		case !o.fromFile.set && !scoped:
			return usagef("--reset-offsets needs --input-topic or --all-input-topics (or --from-file)")
		}
		if o.export && o.output.value == "json" {
			return usagef("--export can't be used with --output json (--export prints CSV)")
		}
		o.dryRunSet = !o.execute
		if err := o.readSpecification(); err != nil {
			return err
		}
	}
	return nil
}

// readSpecification reads the value of the one reset specification given into o.reset.
func (o *options) readSpecification() error {
	switch {
	case o.toEarliest:
		o.reset.Kind = admin.ToEarliest
	case o.toLatest:
		o.reset.Kind = admin.ToLatest
	case o.toCurrent:
		o.reset.Kind = admin.ToCurrent
	case o.toOffset.set:
		o.reset.Kind, o.reset.Offset = admin.ToOffset, o.toOffset.n
	case o.shiftBy.set:
		o.reset.Kind, o.reset.Offset = admin.ShiftBy, o.shiftBy.n
	case o.toDatetime.set:
		t, err := parseDatetime(o.toDatetime.value)
		if err != nil {
			return usagef("--to-datetime %s: %v", text.Quote(o.toDatetime.value), err)
		}
		o.reset.Kind, o.reset.Timestamp = admin.ToTimestamp, t
	case o.byDuration.set:
		d, err := parseISODuration(o.byDuration.value)
		if err != nil {
			return usagef("--by-duration %s: %v", text.Quote(o.byDuration.value), err)
		}
		o.reset.Kind, o.duration = admin.ToTimestamp, d
	case o.fromFile.set:
		plan, err := readPlan(o.fromFile.value)
		if err != nil {
			return usagef("--from-file %s: %v", text.Quote(o.fromFile.value), err)
		}
		if !plan.withGroup && (o.allGroups || len(o.groups) > 1) {
			return usagef("--from-file %s has no group column (topic,partition,offset lines), so it goes with one --group only; "+
				"for several groups each line is group,topic,partition,offset", text.Quote(o.fromFile.value))
		}
		o.reset.Kind, o.plan = admin.FromPlan, plan
	}
	o.reset.Topics = o.scope
	return nil
}

// legalTopic is Kafka's rule for topic names.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func checkTopicName(opt, t string) error {
	if t == "." || t == ".." || !legalTopic.MatchString(t) {
		return usagef("%s %s: not a valid topic name (1 to 249 of a-z, A-Z, 0-9, '.', '_' and '-')", opt, text.Quote(t))
	}
	return nil
}

// parseInputTopic reads --input-topic: "topic" or "topic:0,1,2".
func parseInputTopic(s string) (admin.TopicPartitions, error) {
	topic, parts, hasParts := strings.Cut(s, ":")
	if err := checkTopicName("--input-topic", topic); err != nil {
		return admin.TopicPartitions{}, err
	}
	tp := admin.TopicPartitions{Topic: topic}
	if !hasParts {
		return tp, nil
	}
	seen := map[int32]bool{}
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return tp, usagef("--input-topic %s: partition %s is not a whole number from 0 to %d (the form is topic or topic:0,1,2)",
				text.Quote(s), text.Quote(p), math.MaxInt32)
		}
		if !seen[int32(n)] {
			seen[int32(n)] = true
			tp.Partitions = append(tp.Partitions, int32(n))
		}
	}
	return tp, nil
}

// parseDatetime reads --to-datetime as Kafka's tool does (ISO-8601 local date and time, the zone
// optional and UTC when left out), with or without the fraction of a second.
func parseDatetime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05Z07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.UTC); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("not a date and time of the form YYYY-MM-DDThh:mm:ss.sss, optionally followed by Z or +hh:mm")
}

// isoDuration is the form Java's Duration.parse reads, without signs: PnDTnHnMn.nS.
var isoDuration = regexp.MustCompile(`^(?i)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{0,9}))?S)?)?$`)

// parseISODuration reads --by-duration. Negative durations (a time in the future) are refused.
func parseISODuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	m := isoDuration.FindStringSubmatch(s)
	bad := errors.New("not an ISO-8601 duration of the form PnDTnHnMnS, e.g. P1D, PT1H30M or PT0.5S (negative durations are not allowed)")
	if m == nil || strings.EqualFold(s, "P") || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, bad
	}
	var total float64
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return 0, bad
		}
		total += n * float64(unit)
	}
	if m[5] != "" {
		frac, _ := strconv.ParseFloat("0."+m[5], 64)
		total += frac * float64(time.Second)
	}
	if total > float64(math.MaxInt64) {
		return 0, errors.New("too long (at most about 292 years)")
	}
	return time.Duration(total), nil
}

// csvFields splits one CSV line; a field may be quoted ("a,b" or "say ""hi"""), as Kafka's tool
// writes names.
func csvFields(line string) ([]string, error) {
	r := csv.NewReader(strings.NewReader(line))
	r.FieldsPerRecord, r.TrimLeadingSpace = -1, true
	rec, err := r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("not a CSV record: %v", err)
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	return rec, nil
}

// maxPlanLines bounds a --from-file plan, so a wrong file (a log, a dump) is refused rather than read.
const maxPlanLines = 1 << 20

// readPlan reads a --from-file CSV: lines of topic,partition,offset, or group,topic,partition,offset
// (the two forms --export writes); blank lines are skipped, every line must have the same form, and
// a partition may appear once per group.
func readPlan(path string) (resetPlan, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return resetPlan{}, err
	}
	defer f.Close()
	plan := resetPlan{offsets: map[string]map[string]map[int32]int64{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	fields, lines := 0, 0
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if lines++; lines > maxPlanLines {
			return plan, fmt.Errorf("more than %d lines", maxPlanLines)
		}
		rec, err := csvFields(line)
		if err != nil {
			return plan, fmt.Errorf("line %d: %v", n, err)
		}
		if len(rec) != 3 && len(rec) != 4 {
			return plan, fmt.Errorf("line %d: %d fields, want topic,partition,offset or group,topic,partition,offset", n, len(rec))
		}
		if fields == 0 {
			fields, plan.withGroup = len(rec), len(rec) == 4
		} else if len(rec) != fields {
			return plan, fmt.Errorf("line %d: %d fields where the lines before have %d", n, len(rec), fields)
		}
		group := ""
		if plan.withGroup {
			group, rec = rec[0], rec[1:]
			if group == "" {
				return plan, fmt.Errorf("line %d: the group is empty", n)
			}
		}
		if !legalTopic.MatchString(rec[0]) || rec[0] == "." || rec[0] == ".." {
			return plan, fmt.Errorf("line %d: %s is not a valid topic name", n, text.Quote(rec[0]))
		}
		p, err := strconv.ParseInt(rec[1], 10, 32)
		if err != nil || p < 0 {
			return plan, fmt.Errorf("line %d: partition %s is not a whole number from 0 to %d", n, text.Quote(rec[1]), math.MaxInt32)
		}
		off, err := strconv.ParseInt(rec[2], 10, 64)
		if err != nil || off < 0 {
			return plan, fmt.Errorf("line %d: offset %s is not a whole number from 0 to %d", n, text.Quote(rec[2]), int64(math.MaxInt64))
		}
		byTopic := plan.offsets[group]
		if byTopic == nil {
			byTopic = map[string]map[int32]int64{}
			plan.offsets[group] = byTopic
		}
		if byTopic[rec[0]] == nil {
			byTopic[rec[0]] = map[int32]int64{}
		}
		if _, dup := byTopic[rec[0]][int32(p)]; dup {
			return plan, fmt.Errorf("line %d: partition %s-%d appears twice", n, rec[0], p)
		}
		byTopic[rec[0]][int32(p)] = off
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return plan, errors.New("a line is longer than 64 KiB; this is not a reset plan")
		}
		return plan, err
	}
	if lines == 0 {
		return plan, errors.New("no offsets in the file")
	}
	return plan, nil
}
