package dsl_test

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/internal/dslprograms"
	"github.com/streamsgroup/streamsgroup/streamtest"
)

// input is one record of testdata/program-inputs.txt.
type input struct {
	suffix     string
	key, value []byte
	ts         int64
	headers    []kgo.RecordHeader
}

// readInputs reads testdata/program-inputs.txt: the records of each program by name ("default":
// of every program no section names).
func readInputs(t *testing.T) map[string][]input {
	t.Helper()
	f, err := os.Open("testdata/program-inputs.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections := map[string][]input{}
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "["):
			names = strings.Fields(strings.Trim(line, "[]"))
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 && len(f) != 5 || names == nil {
			t.Fatalf("bad input line %q", line)
		}
		ts, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		in := input{suffix: f[0], key: nullable(f[1]), value: nullable(f[2]), ts: ts}
		if len(f) == 5 { // headers: key=value, | between them
			for _, h := range strings.Split(f[4], "|") {
				k, v, _ := strings.Cut(h, "=")
				in.headers = append(in.headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
			}
		}
		for _, n := range names {
			sections[n] = append(sections[n], in)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sections
}

func nullable(s string) []byte {
	if s == `\N` {
		return nil
	}
	return []byte(s)
}

// show prints a key or value as DslDrive does: \N, s:<printable ASCII> or x:<hex>.
func show(b []byte) string {
	if b == nil {
		return `\N`
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return "x:" + hex.EncodeToString(b)
		}
	}
	return "s:" + string(b)
}

// suppressionBuffer says whether changelog lines are a suppression buffer's: its updates carry the
// header v=3 first (then, under dsl.store.format=HEADERS, vh.prior and vh.old).
func suppressionBuffer(lines []string) bool {
	for _, l := range lines {
		if strings.HasSuffix(l, "\tv=x:03") || strings.Contains(l, "\tv=x:03|vh.") {
			return true
		}
	}
	return false
}

// perKey is changelog lines grouped by their key, in order within each key: what a restore of a
// compacted changelog depends on. A suppression buffer's changelog is compared so, because Kafka
// Streams writes the keys of one commit in the order of a Java HashSet of their bytes (its
// dirtyKeys), which depends on their hashes and on the set's history, and no reader depends on it.
func perKey(lines []string) []string {
	var keys []string
	by := map[string][]string{}
	for _, l := range lines {
		k := strings.SplitN(l, "\t", 2)[0]
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], l)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, by[k]...)
	}
	return out
}

// readCaptures reads a capture of Kafka Streams' records: program → topic → the rest of each line.
func readCaptures(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.SplitN(line, "\t", 3)
		if out[fs[0]] == nil {
			out[fs[0]] = map[string][]string{}
		}
		out[fs[0]][fs[1]] = append(out[fs[0]][fs[1]], fs[2])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every program writes, record for record (key, value, timestamp, order per topic), what Kafka
// Streams 4.4 writes for the same program and input (testdata, captured from TopologyTestDriver with
// the record cache off): Kafka Streams itself is the oracle.
func TestProgramsOutputAsKafkaStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every program on the fake cluster (about a minute)")
	}
	inputs := readInputs(t)
	want := readCaptures(t, "testdata/kafkastreams-4.4.0-outputs.txt")
	wantLogs := readCaptures(t, "testdata/kafkastreams-4.4.0-changelogs.txt")
	for program, build := range dslprograms.Programs {
		t.Run(program, func(t *testing.T) {
			t.Parallel()
			// A program Kafka Streams wrote nothing for has no lines (TestProgramsMatchKafkaStreams
			// checks each has a capture).
			recs := inputs[program]
			if recs == nil {
				recs = inputs["default"]
			}
			prefix := "t-" + program
			b := dsl.NewBuilder()
			build(b, prefix)
			cfg := config.Default("app-" + program)
			cfg.Runtime.StateStoreCacheMaxBytes = -1 // as DslDrive runs Kafka Streams (and streamtest's default), unless the program sets it
			dslprograms.Configure(program, &cfg)
			cfg.Runtime.CommitInterval = time.Millisecond // each record settles at the next commit, as TopologyTestDriver commits after each
			topo, procs, err := b.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			d, err := streamtest.New(cfg, topo, procs)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var reads []string
			for _, s := range topo.Subtopologies() {
				reads = append(reads, s.SourceTopics...)
			}
			for _, g := range topo.GlobalStores() {
				reads = append(reads, g.Topic)
			}
			started := time.Now().Truncate(time.Millisecond)
			// One record at a time, as TopologyTestDriver processes each before the next.
			for _, in := range recs {
				topic := prefix + "-" + in.suffix
				if !slices.Contains(reads, topic) {
					continue
				}
				if err := d.Pipe(topic, in.key, in.value, time.UnixMilli(in.ts), in.headers...); err != nil {
					t.Fatal(err)
				}
				if err := d.Settle(); err != nil {
					t.Fatal(err)
				}
			}
			topics := []string{prefix + "-out"}
			for topic := range want[program] {
				if !slices.Contains(topics, topic) {
					topics = append(topics, topic)
				}
			}
			for _, topic := range topics {
				raws, err := d.ReadRaw(topic)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range raws {
					line := fmt.Sprintf("%s\t%s\t%d", show(r.Key), show(r.Value), r.Timestamp.UnixMilli())
					// The headers follow when the record has any, as DslDrive prints them.
					for i, h := range r.Headers {
						line += map[bool]string{true: "\t", false: "|"}[i == 0] + h.Key + "=" + show(h.Value)
					}
					got = append(got, line)
				}
				if w := want[program][topic]; !slices.Equal(got, w) {
					t.Errorf("%s:\n go:\n  %s\n kafka streams:\n  %s", topic, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
				}
			}
			// The stores' changelogs too, record for record with their headers: what a Kafka
			// Streams member restores from a Go member's, and the other way round.
			var logs []string
			for _, s := range topo.Subtopologies() {
				for _, ti := range s.StateChangelogTopics {
					logs = append(logs, ti.Name)
				}
			}
			for topic := range wantLogs[program] {
				if !slices.Contains(logs, topic) {
					t.Errorf("Kafka Streams wrote changelog %s, which the Go topology does not declare", topic)
				}
			}
			for _, topic := range logs {
				raws, err := d.ReadRaw(topic)
				if err != nil {
					t.Fatal(err)
				}
				w := wantLogs[program][topic]
				var got []string
				for i, r := range raws {
					var hs []string
					for _, h := range r.Headers {
						hs = append(hs, h.Key+"="+show(h.Value))
					}
					// Kafka Streams sends a suppression or grace buffer's changelog records without a
					// timestamp (its producer stamps them with the wall clock; TopologyTestDriver
					// shows none): here they must carry the wall clock of the run.
					ts := strconv.FormatInt(r.Timestamp.UnixMilli(), 10)
					if i < len(w) && strings.Split(w[i], "\t")[2] == "null" && !r.Timestamp.Before(started) {
						ts = "null"
					}
					got = append(got, fmt.Sprintf("%s\t%s\t%s\t%s", show(r.Key), show(r.Value), ts, strings.Join(hs, "|")))
				}
				if !slices.Equal(got, w) && !(suppressionBuffer(w) && slices.Equal(perKey(got), perKey(w))) {
					t.Errorf("changelog %s:\n go:\n  %s\n kafka streams:\n  %s", topic, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
