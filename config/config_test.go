package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default("app")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TopologyEpoch != 0 || c.MaxPollInterval != 300*time.Second || c.RetryBackoff != 100*time.Millisecond ||
		c.RetryBackoffMax != time.Second || c.RequestTimeout != 30*time.Second || c.TaskOffsetInterval != 0 {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestFromMapReadsEveryKey(t *testing.T) {
	pid := uuid.NewString()
	c, err := FromMap(map[string]string{
		"application.id":          "wordcount",
		"bootstrap.servers":       "127.0.0.1:9092, localhost:9093",
		"topology.epoch":          "3",
		"task.offset.interval.ms": "20000",
		"process.id":              pid,
		"group.instance.id":       "member-a",
		"client.rack":             "rack-1",
		"application.server":      "host.example:8080",
		"client.tag.zone":         "eu-1",
		"max.poll.interval.ms":    "60000",
		"retry.backoff.ms":        "50",
		"retry.backoff.max.ms":    "500",
		"request.timeout.ms":      "10000",
		"state.dir":               "/var/lib/app",
		"user.greeting":           " hello ",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		ApplicationID:      "wordcount",
		BootstrapServers:   []string{"127.0.0.1:9092", "localhost:9093"},
		TopologyEpoch:      3,
		TaskOffsetInterval: 20 * time.Second,
		ProcessID:          pid,
		GroupInstanceID:    "member-a",
		ClientRack:         "rack-1",
		ApplicationServer:  "host.example:8080",
		ClientTags:         map[string]string{"zone": "eu-1"},
		MaxPollInterval:    time.Minute,
		RetryBackoff:       50 * time.Millisecond,
		RetryBackoffMax:    500 * time.Millisecond,
		RequestTimeout:     10 * time.Second,
		StateDir:           "/var/lib/app",
		User:               map[string]string{"user.greeting": " hello "},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", c, want)
	}
	host, port, ok := c.Endpoint()
	if !ok || host != "host.example" || port != 8080 {
		t.Fatalf("Endpoint() = %s %d %v", host, port, ok)
	}
	clone := c.Clone()
	clone.ClientTags["zone"] = "changed"
	if c.ClientTags["zone"] != "eu-1" {
		t.Fatal("Clone shares maps")
	}
}

func TestFromMapListsEveryBadKey(t *testing.T) {
	_, err := FromMap(map[string]string{
		"application.id":       "has space",
		"topology.epoch":       "-1",
		"max.poll.interval.ms": "soon",
		"retry.backoff.ms":     "900",
		"retry.backoff.max.ms": "100",
		"request.timeout.ms":   "0",
		"process.id":           "not-a-uuid",
		"application.server":   "nohost",
		"bootstrap.servers":    "a:0",
		"group.instance.id":    "",
		"client.tag.":          "x",
		"num.stream.threads":   "2",
	})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *config.Error", err, err)
	}
	for _, key := range []string{"application.id", "topology.epoch", "max.poll.interval.ms", "retry.backoff.max.ms",
		"request.timeout.ms", "process.id", "application.server", "bootstrap.servers", "group.instance.id",
		"client.tag.", "num.stream.threads"} {
		if !ce.Has(key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
	if ce.Has("retry.backoff.ms") {
		t.Errorf("retry.backoff.ms is fine on its own; the conflict belongs to retry.backoff.max.ms: %v", err)
	}
	if !strings.Contains(err.Error(), `"user."`) {
		t.Errorf("the unknown-key message must say how to pass the application's own keys: %v", err)
	}
}

func TestValidateRanges(t *testing.T) {
	cases := map[string]func(*Config){
		KeyApplicationID:      func(c *Config) { c.ApplicationID = "" },
		KeyTaskOffsetInterval: func(c *Config) { c.TaskOffsetInterval = -time.Second },
		KeyMaxPollInterval:    func(c *Config) { c.MaxPollInterval = 0 },
		KeyRetryBackoff:       func(c *Config) { c.RetryBackoff = -1 },
		KeyClientRack:         func(c *Config) { c.ClientRack = " " },
		PrefixClientTag:       func(c *Config) { c.ClientTags = map[string]string{"": "v"} },
	}
	for key, mutate := range cases {
		c := Default("app")
		mutate(&c)
		var ce *Error
		if err := c.Validate(); !errors.As(err, &ce) || !ce.Has(key) {
			t.Errorf("%s: got %v", key, err)
		}
	}
	c := Default(strings.Repeat("a", 201))
	if err := c.Validate(); err == nil {
		t.Error("an over-long application.id passed")
	}
}

func TestFromPropertiesFile(t *testing.T) {
	c, err := FromProperties(strings.NewReader(`
# a comment
! another comment
application.id = wordcount
bootstrap.servers: 127.0.0.1:9092,\
    127.0.0.1:9093
topology.epoch 2
client.tag.zone=eu\u002d1
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.ApplicationID != "wordcount" || len(c.BootstrapServers) != 2 || c.TopologyEpoch != 2 || c.ClientTags["zone"] != "eu-1" {
		t.Fatalf("got %+v", c)
	}
	if _, err := FromProperties(strings.NewReader("application.id=\\u12")); err == nil {
		t.Fatal("a malformed escape was accepted")
	} else {
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != 1 {
			t.Fatalf("got %v, want *SyntaxError on line 1", err)
		}
	}
}

func TestParsePropertiesJavaRules(t *testing.T) {
	cases := map[string]map[string]string{
		"a=b":                   {"a": "b"},
		"a:b":                   {"a": "b"},
		"a b":                   {"a": "b"},
		"a":                     {"a": ""},
		"  a  =  b c  ":         {"a": "b c  "},
		`a\=b=c`:                {"a=b": "c"},
		`a\ b=c`:                {"a b": "c"},
		"a=1\na=2":              {"a": "2"},
		"a=x\\\n  y\\\n  z":     {"a": "xyz"},
		`a=\t\n\\`:              {"a": "\t\n\\"},
		"a=b\\\\\nc=d":          {"a": `b\`, "c": "d"},
		"# c\n!c\n\n   \nk=v":   {"k": "v"},
		"a=\\":                  {"a": ""},
		"a=\\u00e9":             {"a": "é"},
		"a=\\q":                 {"a": "q"},
		"a=b\\\n# not comment":  {"a": "b# not comment"},
		"a=b\\\n\nc=d":          {"a": "b", "c": "d"},
		"a=b\\\n":               {"a": "b"},
		"\t\fkey\t=\tvalue\t":   {"key": "value\t"},
		"key=value=more:colons": {"key": "value=more:colons"},
	}
	for in, want := range cases {
		got, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestResolveProcessID(t *testing.T) {
	c := Default("app")
	a, _ := c.ResolveProcessID()
	b, _ := c.ResolveProcessID()
	if a == b {
		t.Fatal("without state.dir every start must get a new process ID")
	}
	c.StateDir = t.TempDir()
	first, err := c.ResolveProcessID()
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.ResolveProcessID()
	if err != nil || again != first {
		t.Fatalf("the persisted process ID changed: %s then %s (%v)", first, again, err)
	}
	if _, err := uuid.Parse(first); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.StateDir, "app", processIDFile)
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResolveProcessID(); err == nil || !strings.Contains(err.Error(), "remove the file") {
		t.Fatalf("a corrupt process ID file must be reported with what to do: %v", err)
	}
	c.ProcessID = first
	if got, _ := c.ResolveProcessID(); got != first {
		t.Fatal("an explicit process.id must win")
	}
	blocked := Default("app")
	blocked.StateDir = filepath.Join(path, "sub") // a file where a directory must be
	if _, err := blocked.ResolveProcessID(); err == nil {
		t.Fatal("an unusable state.dir must be an error")
	}
}

// Java's Properties ends a line at "\n", "\r\n" or a lone "\r" (LineReader), and reads a character
// outside the BMP from the two \u escapes of its UTF-16 surrogate pair, as Properties.store writes it.
func TestParsePropertiesJavaLineEndsAndSurrogates(t *testing.T) {
	cases := map[string]map[string]string{
		"a=1\rb=2":                  {"a": "1", "b": "2"},
		"a=1\r\nb=2\r\n":            {"a": "1", "b": "2"},
		"a=x\\\r\n  y":              {"a": "xy"},
		"a=x\\\ry\rb=2":             {"a": "xy", "b": "2"},
		"a=x\\\n\rb=2":              {"a": "x", "b": "2"},
		"# c\r!c\ra=1":              {"a": "1"},
		`a=\ud83d\ude00`:            {"a": "😀"},
		`\ud83d\ude00=\u00e9\u0041`: {"😀": "éA"},
		`a=\ud83d`:                  {"a": "\uFFFD"},
		`a=\ude00\ud83d`:            {"a": "\uFFFD\uFFFD"},
		`a=\ud83dx`:                 {"a": "\uFFFDx"},
	}
	for in, want := range cases {
		got, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	// A pair whose second escape is malformed is an error, not a replacement character.
	if _, err := ParseProperties(strings.NewReader(`a=\ud83d\uZZ00`)); err == nil || !strings.Contains(err.Error(), `"ZZ00"`) {
		t.Errorf("malformed low surrogate: %v", err)
	}
}
