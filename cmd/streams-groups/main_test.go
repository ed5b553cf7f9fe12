package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"--list"},
		{"--list", "--describe", "--bootstrap-server", "x:1"},
		{"--describe", "--bootstrap-server", "x:1"},
		{"--list", "--bootstrap-server", "x:1", "--output", "yaml"},
		{"--list", "--bootstrap-server", "x:1", "extra"},
		{"--nonsense"},
	}
	for _, args := range cases {
		var out, errw bytes.Buffer
		if code := run(args, &out, &errw); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errw.String())
		}
	}
}

func TestTopologyIDOfAFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "t.json")
	os.WriteFile(good, []byte(`{"subtopologies":[{"id":"0","sourceTopics":["in"]}]}`), 0o644)
	var out, errw bytes.Buffer
	if code := run([]string{"--topology-id", good}, &out, &errw); code != 0 || len(strings.TrimSpace(out.String())) != 16 {
		t.Fatalf("exit %d, out %q, err %q", code, out.String(), errw.String())
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"subtopologies":[{"id":""}]}`), 0o644)
	if code := run([]string{"--topology-id", bad}, &out, &errw); code != exitInvalidFile {
		t.Fatalf("invalid topology: exit %d", code)
	}
	if code := run([]string{"--topology-id", filepath.Join(dir, "missing")}, &out, &errw); code != exitInvalidFile {
		t.Fatalf("missing file: exit %d", code)
	}
}

func TestNormalizeAndFormatting(t *testing.T) {
	got := normalize([]string{"--list", "--state", "Stable,Empty", "--state"})
	if strings.Join(got, " ") != "--list --state=Stable,Empty --state" {
		t.Fatalf("normalize: %v", got)
	}
	a := tasks.Assignment{Active: tasks.NewSet(tasks.ID{Subtopology: "0", Partition: 2}, tasks.ID{Subtopology: "0", Partition: 0},
		tasks.ID{Subtopology: "1", Partition: 1}), Standby: tasks.NewSet(tasks.ID{Subtopology: "1", Partition: 0})}
	if s := assignmentString(a, "TARGET-"); s != "TARGET-ACTIVE: 0:[0,2] 1:[1]; TARGET-STANDBY: 1:[0]; " {
		t.Fatalf("assignment string %q", s)
	}
	var b bytes.Buffer
	printTable(&b, [][]string{{"A", "BB"}, {"ccc", "d"}})
	if b.String() != "A   BB\nccc d\n" {
		t.Fatalf("table %q", b.String())
	}
}

func TestCommandConfig(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.properties")
	os.WriteFile(f, []byte("client.id=ops\nsecurity.protocol=SSL\n"), 0o644)
	if _, err := clientOptions(&options{servers: []string{"x:1"}, commandConfig: once{set: true, value: f}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, []byte("ssl.cipher.suites=x\n"), 0o644)
	if _, err := clientOptions(&options{servers: []string{"x:1"}, commandConfig: once{set: true, value: f}}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("an unsupported key must be refused clearly: %v", err)
	}
	// Kafka's SASL keys are read by the config package; a mistake names the key and hides the password.
	os.WriteFile(f, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" password=\"pw-9f3\";\n"), 0o644)
	if _, err := clientOptions(&options{servers: []string{"x:1"}, commandConfig: once{set: true, value: f}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, []byte("sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password=\"pw-9f3\";\n"), 0o644)
	_, err := clientOptions(&options{servers: []string{"x:1"}, commandConfig: once{set: true, value: f}})
	if err == nil || !strings.Contains(err.Error(), "sasl.mechanism") || strings.Contains(err.Error(), "pw-9f3") {
		t.Fatalf("SASL keys without a SASL protocol: %v", err)
	}
}
