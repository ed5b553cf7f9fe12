package dsl_test

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/dsl"
	"github.com/streamsgroup/streamsgroup/internal/dslprograms"
	"github.com/streamsgroup/streamsgroup/topology"
)

// programs are the Go forms of integration/javapeer DslPrograms.java, operation for operation: t
// is the program's topic prefix.
// encodeJoin is topo as a broker receives it in a joining heartbeat.
func encodeJoin(topo *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "app", "member", 0
	req.Topology = topo
	return req.AppendTo(nil)
}

// Every program's topology is, to the byte of the joining heartbeat, the one Kafka Streams 4.4
// sends for the same program written in Java (testdata, captured from the real applications).
func TestProgramsMatchKafkaStreams(t *testing.T) {
	f, err := os.Open("testdata/kafkastreams-4.4.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		app, js, _ := strings.Cut(line, " ")
		program := strings.TrimPrefix(app, "app-")
		seen[program] = true
		t.Run(program, func(t *testing.T) {
			build := dslprograms.Programs[program]
			if build == nil {
				t.Fatalf("no Go form of %s", program)
			}
			want, err := topology.ReadJSON(strings.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			b := dsl.NewBuilder()
			build(b, "t-"+program)
			cfg := config.Default(app)
			dslprograms.Configure(program, &cfg)
			got, procs, err := b.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := encodeJoin(got.Request(0)), encodeJoin(want.Request(0)); !bytes.Equal(g, w) {
				gj, _ := got.MarshalJSON()
				t.Fatalf("topology differs from Kafka Streams'\n  go: %s\njava: %s", gj, js)
			}
			for _, s := range got.Subtopologies() {
				if procs[s.ID] == nil {
					t.Errorf("no processor for subtopology %s", s.ID)
				}
			}
			for _, g := range got.GlobalStores() {
				if procs[g.Subtopology] == nil {
					t.Errorf("no processor for global subtopology %s", g.Subtopology)
				}
			}
			if n := len(got.Subtopologies()) + len(got.GlobalStores()); len(procs) != n {
				t.Errorf("%d processors for %d subtopologies (global ones too)", len(procs), n)
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for p := range dslprograms.Programs {
		if !seen[p] {
			t.Errorf("program %s has no capture from Kafka Streams", p)
		}
	}
}
