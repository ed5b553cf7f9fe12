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
		if len(f) != 4 || names == nil {
			t.Fatalf("bad input line %q", line)
		}
		ts, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		in := input{suffix: f[0], key: nullable(f[1]), value: nullable(f[2]), ts: ts}
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

// Every program writes, record for record (key, value, timestamp, order per topic), what Kafka
// Streams 4.4 writes for the same program and input (testdata, captured from TopologyTestDriver with
// the record cache off): Kafka Streams itself is the oracle.
func TestProgramsOutputAsKafkaStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every program on the fake cluster (about a minute)")
	}
	inputs := readInputs(t)
	want := map[string]map[string][]string{} // program → topic → lines
	f, err := os.Open("testdata/kafkastreams-4.4.0-outputs.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.SplitN(line, "\t", 3)
		if want[fs[0]] == nil {
			want[fs[0]] = map[string][]string{}
		}
		want[fs[0]][fs[1]] = append(want[fs[0]][fs[1]], fs[2])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
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
			cfg.Runtime.StateStoreCacheMaxBytes = -1      // as DslDrive runs Kafka Streams (and streamtest's default)
			cfg.Runtime.CommitInterval = time.Millisecond // each record settles at the next commit
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
			// One record at a time, as TopologyTestDriver processes each before the next.
			for _, in := range recs {
				topic := prefix + "-" + in.suffix
				if !slices.Contains(reads, topic) {
					continue
				}
				if err := d.Pipe(topic, in.key, in.value, time.UnixMilli(in.ts)); err != nil {
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
					got = append(got, fmt.Sprintf("%s\t%s\t%d", show(r.Key), show(r.Value), r.Timestamp.UnixMilli()))
				}
				if w := want[program][topic]; !slices.Equal(got, w) {
					t.Errorf("%s:\n go:\n  %s\n kafka streams:\n  %s", topic, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
