package config

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
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
		"application.id":                            "wordcount",
		"bootstrap.servers":                         "127.0.0.1:9092, localhost:9093",
		"topology.epoch":                            "3",
		"replication.factor":                        "3",
		"task.offset.interval.ms":                   "20000",
		"process.id":                                pid,
		"group.instance.id":                         "member-a",
		"client.rack":                               "rack-1",
		"application.server":                        "host.example:8080",
		"client.tag.zone":                           "eu-1",
		"max.poll.interval.ms":                      "60000",
		"retry.backoff.ms":                          "50",
		"retry.backoff.max.ms":                      "500",
		"request.timeout.ms":                        "10000",
		"state.dir":                                 "/var/lib/app",
		"user.greeting":                             " hello ",
		"processing.guarantee":                      "at_least_once",
		"commit.interval.ms":                        "1000",
		"state.cleanup.delay.ms":                    "60000",
		"processing.exception.handler":              "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler",
		"default.deserialization.exception.handler": "LogAndContinueExceptionHandler",
		"auto.offset.reset":                         "latest",
		"transaction.timeout.ms":                    "20000",
		"poll.ms":                                   "50",
		"client.id":                                 "wordcount-eu",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		ApplicationID:      "wordcount",
		BootstrapServers:   []string{"127.0.0.1:9092", "localhost:9093"},
		TopologyEpoch:      3,
		ReplicationFactor:  3,
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
		Runtime: Runtime{Guarantee: AtLeastOnce, CommitInterval: time.Second, StateCleanupDelay: time.Minute,
			OnProcessingError: LogAndContinue, OnDeserializationError: LogAndContinue, ResetLatest: true,
			TransactionTimeout: 20 * time.Second, PollInterval: 50 * time.Millisecond},
		ClientID: "wordcount-eu",
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
		"replication.factor":   "-2",
		"max.poll.interval.ms": "soon",
		"retry.backoff.ms":     "900",
		"retry.backoff.max.ms": "-1",
		"request.timeout.ms":   "0",
		"process.id":           "not-a-uuid",
		"application.server":   "nohost",
		"bootstrap.servers":    "a:0",
		"group.instance.id":    "",
		"client.tag.":          "x",
		"num.stream.threads":   "0",
		"default.key.serde":    "x",
	})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *config.Error", err, err)
	}
	for _, key := range []string{"application.id", "topology.epoch", "replication.factor", "max.poll.interval.ms", "retry.backoff.max.ms",
		"request.timeout.ms", "process.id", "application.server", "bootstrap.servers", "group.instance.id",
		"client.tag.", "num.stream.threads", "default.key.serde"} {
		if !ce.Has(key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
	if ce.Has("retry.backoff.ms") {
		t.Errorf("retry.backoff.ms=900 is fine, also above retry.backoff.max.ms (Kafka then backs off by the maximum): %v", err)
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

// Every limit of Validate, on both sides.
func TestValidateBoundaries(t *testing.T) {
	cases := []struct {
		key    string
		change func(*Config)
		ok     bool
	}{
		{KeyMaxPollInterval, func(c *Config) { c.MaxPollInterval = time.Millisecond }, true},
		{KeyMaxPollInterval, func(c *Config) { c.MaxPollInterval = time.Millisecond - 1 }, false},
		{KeyMaxPollInterval, func(c *Config) { c.MaxPollInterval = math.MaxInt32 * time.Millisecond }, true},
		{KeyMaxPollInterval, func(c *Config) { c.MaxPollInterval = math.MaxInt32*time.Millisecond + 1 }, false},
		{KeyRetryBackoff, func(c *Config) { c.RetryBackoff = 0 }, true},
		{KeyRetryBackoff, func(c *Config) { c.RetryBackoff = -1 }, false},
		{KeyRetryBackoffMax, func(c *Config) { c.RetryBackoff, c.RetryBackoffMax = 0, 0 }, true},
		{KeyRetryBackoffMax, func(c *Config) { c.RetryBackoff, c.RetryBackoffMax = 0, -1 }, false},
		{KeyRetryBackoffMax, func(c *Config) { c.RetryBackoff, c.RetryBackoffMax = 5, 5 }, true},
		{KeyRetryBackoffMax, func(c *Config) { c.RetryBackoff, c.RetryBackoffMax = 5, 4 }, true}, // Kafka: a constant backoff of the maximum
		{KeyRequestTimeout, func(c *Config) { c.RequestTimeout = math.MaxInt32 * time.Millisecond }, true},
		{KeyRequestTimeout, func(c *Config) { c.RequestTimeout = math.MaxInt32*time.Millisecond + 1 }, false},
		{KeyRequestTimeout, func(c *Config) { c.RequestTimeout = 1 }, true},
		{KeyRequestTimeout, func(c *Config) { c.RequestTimeout = 0 }, false},
		{KeyRequestTimeout, func(c *Config) { c.RequestTimeout = math.MaxInt32 * time.Millisecond }, true},
		{KeyRequestTimeout, func(c *Config) { c.RequestTimeout = math.MaxInt32*time.Millisecond + 1 }, false},
		{KeyTaskOffsetInterval, func(c *Config) { c.TaskOffsetInterval = 0 }, true},
		{KeyTaskOffsetInterval, func(c *Config) { c.TaskOffsetInterval = -1 }, false},
		{KeyTopologyEpoch, func(c *Config) { c.TopologyEpoch = 0 }, true},
		{KeyTopologyEpoch, func(c *Config) { c.TopologyEpoch = -1 }, false},
		{KeyReplicationFactor, func(c *Config) { c.ReplicationFactor = -1 }, true},
		{KeyReplicationFactor, func(c *Config) { c.ReplicationFactor = 0 }, true}, // a Config literal's default
		{KeyReplicationFactor, func(c *Config) { c.ReplicationFactor = -2 }, false},
		{KeyApplicationID, func(c *Config) { c.ApplicationID = strings.Repeat("a", 200) }, true},
		{KeyApplicationID, func(c *Config) { c.ApplicationID = strings.Repeat("a", 201) }, false},
		{KeyGroupInstanceID, func(c *Config) { c.GroupInstanceID = "\t" }, false},
		{KeyGroupInstanceID, func(c *Config) { c.GroupInstanceID = " a " }, false}, // Kafka's [a-zA-Z0-9._-]
		{KeyGroupInstanceID, func(c *Config) { c.GroupInstanceID = strings.Repeat("a", 249) }, true},
		{KeyGroupInstanceID, func(c *Config) { c.GroupInstanceID = strings.Repeat("a", 250) }, false},
		{KeyBootstrapServers, func(c *Config) { c.BootstrapServers = []string{"h:65535", "h:1"} }, true},
		{KeyBootstrapServers, func(c *Config) { c.BootstrapServers = []string{"h:65536"} }, false},
		{KeyBootstrapServers, func(c *Config) { c.BootstrapServers = []string{":9092"} }, false},
		{KeyApplicationServer, func(c *Config) { c.ApplicationServer = "h:0" }, false},
		{KeyProcessID, func(c *Config) { c.ProcessID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8" }, true},
	}
	for _, c := range cases {
		cfg := Default("app")
		c.change(&cfg)
		err := cfg.Validate()
		var ce *Error
		if c.ok && err != nil || !c.ok && (!errors.As(err, &ce) || !ce.Has(c.key) || len(ce.Keys) != 1) {
			t.Errorf("%s: %+v: Validate() = %v, want ok=%v", c.key, cfg, err, c.ok)
		}
	}
}

// application.id prefixes topic names: exactly the characters of a topic name are allowed.
func TestApplicationIDEveryByte(t *testing.T) {
	const legal = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	for c := 0; c < 256; c++ {
		cfg := Default("a" + string([]byte{byte(c)}) + "b")
		err := cfg.Validate()
		if ok := strings.IndexByte(legal, byte(c)) >= 0; ok != (err == nil) {
			t.Errorf("application.id %q: %v; legal: %v", cfg.ApplicationID, err, ok)
		}
	}
}

// Problems are sorted by key, and the problems of one key stay in the order of their values.
func TestErrorOrder(t *testing.T) {
	cfg := Default("app")
	cfg.BootstrapServers = []string{"z:0", "a:0", "m:0"}
	cfg.RequestTimeout = 0
	cfg.ApplicationID = ""
	var ce *Error
	if !errors.As(cfg.Validate(), &ce) {
		t.Fatal("no *Error")
	}
	var got []string
	for _, k := range ce.Keys {
		got = append(got, k.Key+"="+k.Value)
	}
	want := []string{"application.id=", "bootstrap.servers=z:0", "bootstrap.servers=a:0", "bootstrap.servers=m:0", "request.timeout.ms=0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems %q, want %q", got, want)
	}
	if got := (KeyError{Key: "k", Reason: "r"}).Error(); got != `"k": r` {
		t.Errorf("KeyError without a value: %q", got)
	}
}

// Millisecond values of LONG keys are whole numbers up to Long.MAX_VALUE, as Kafka reads them; what a
// Duration cannot hold counts as the most it holds.
func TestDurationRange(t *testing.T) {
	const most = math.MaxInt64 / int64(time.Millisecond) // 9223372036854
	for raw, want := range map[string]string{
		strconv.FormatInt(most, 10):          "",
		strconv.FormatInt(most+1, 10):        "",
		strconv.FormatInt(math.MaxInt64, 10): "",
		strconv.FormatInt(-most, 10):         "must be >= 0",
		strconv.FormatInt(-most-1, 10):       "must be >= 0",
		"1.5":                                "not a whole number",
		"99999999999999999999999999999999":   "out of range",
	} {
		c, err := FromMap(map[string]string{KeyApplicationID: "app", KeyTaskOffsetInterval: raw})
		if want == "" {
			if err != nil || c.TaskOffsetInterval != time.Duration(most)*time.Millisecond {
				t.Errorf("%s: %v, %v", raw, c.TaskOffsetInterval, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

func TestParsePropertiesEdges(t *testing.T) {
	// A line of backslashes only: odd continues, even does not.
	for in, want := range map[string]map[string]string{
		"a=b\\\n\\\nc=d":   {"a": "bc=d"},
		"a=b\\\n\\\\\nc=d": {"a": `b\`, "c": "d"},
		"\\\n#x":           {},
	} {
		if got := parse(t, in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	// A lone trailing backslash cannot reach unescape through ParseProperties (it continues the
	// line); unescape drops it, as Java's loadConvert does.
	if got, err := unescape(`ab\`); err != nil || got != "ab" {
		t.Errorf(`unescape("ab\\") = %q, %v`, got, err)
	}
	// A malformed escape names its digits and its line; a line over 1 MiB names its line.
	_, err := ParseProperties(strings.NewReader("a=1\n\nb=\\u12G4"))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(err.Error(), `"12G4"`) {
		t.Errorf("malformed escape: %v", err)
	}
	_, err = ParseProperties(strings.NewReader("a=1\nb=" + strings.Repeat("x", MaxLineBytes)))
	if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(err.Error(), "longer than 16 MiB") {
		t.Errorf("over-long line: %v", err)
	}
	if m, err := ParseProperties(strings.NewReader("a=" + strings.Repeat("x", 1<<19))); err != nil || len(m["a"]) != 1<<19 {
		t.Errorf("a long line below the limit: %v", err)
	}
}

// Line ends split across reads: a '\r' at the end of what was read so far may be the first half of
// "\r\n", which is one line end.
func TestLineEndsAcrossReads(t *testing.T) {
	in := "a=x\\\r\n  y\rb=2\r\n\r\nc=3\r"
	want := map[string]string{"a": "xy", "b": "2", "c": "3"}
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		got, err := ParseProperties(r)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, c := range []struct {
		data    string
		atEOF   bool
		advance int
		token   string
	}{
		{"", true, 0, ""}, {"", false, 0, ""}, {"ab", false, 0, ""}, {"ab", true, 2, "ab"},
		{"a\nb", false, 2, "a"}, {"a\r", false, 0, ""}, {"a\r", true, 2, "a"}, {"a\r\n", false, 3, "a"},
		{"a\rb", false, 2, "a"}, {"\r\r", false, 1, ""}, {"\n", true, 1, ""},
	} {
		advance, token, err := scanJavaLines([]byte(c.data), c.atEOF)
		if advance != c.advance || string(token) != c.token || err != nil {
			t.Errorf("scanJavaLines(%q, %v) = %d, %q, %v; want %d, %q", c.data, c.atEOF, advance, token, err, c.advance, c.token)
		}
	}
}
