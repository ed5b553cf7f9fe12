package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/hostport"
	"github.com/streamsgroup/streamsgroup/internal/text"
)

// problem runs FromMap on m (application.id=app unless m sets it) and returns the *Error, failing
// the test when there is none.
func problem(t *testing.T, m map[string]string) *Error {
	t.Helper()
	if _, ok := m[KeyApplicationID]; !ok {
		m[KeyApplicationID] = "app"
	}
	_, err := FromMap(m)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("FromMap(%q) = %v, want a *config.Error", m, err)
	}
	return ce
}

// accepted runs FromMap on m (application.id=app unless m sets it) and fails the test on an error.
func accepted(t *testing.T, m map[string]string) Config {
	t.Helper()
	if _, ok := m[KeyApplicationID]; !ok {
		m[KeyApplicationID] = "app"
	}
	c, err := FromMap(m)
	if err != nil {
		t.Fatalf("FromMap(%q): %v", m, err)
	}
	return c
}

// Kafka's JoinGroupRequest.validateGroupInstanceId: Topic.validate's rules.
func TestGroupInstanceIDKafkaRules(t *testing.T) {
	for _, c := range []struct {
		id   string
		ok   bool
		want string
	}{
		{"member-a", true, ""},
		{"a.b_c-D9", true, ""},
		{strings.Repeat("x", 249), true, ""},
		{"...", true, ""},
		{strings.Repeat("x", 250), false, "250 characters long; Kafka allows at most 249"},
		{".", false, "'.' and '..' are not allowed"},
		{"..", false, "'.' and '..' are not allowed"},
		{"has space", false, "' ' (U+0020) is not one of [a-zA-Z0-9._-]"},
		{"wörter", false, "'ö' (U+00F6)"},
		{"a/b", false, "'/' (U+002F)"},
		{"a:b", false, "':' (U+003A)"},
		{"nul\x00", false, `'\x00' (U+0000)`},
	} {
		cfg := Default("app")
		cfg.GroupInstanceID = c.id
		err := cfg.Validate()
		var ce *Error
		if c.ok != (err == nil) || !c.ok && (!errors.As(err, &ce) || !ce.Has(KeyGroupInstanceID) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("group.instance.id %s: %v; want ok=%v and %q", text.Quote(c.id), err, c.ok, c.want)
		}
	}
	// Empty in a file: Kafka refuses it too; the message says what to do, not "leave it out" alone.
	ce := problem(t, map[string]string{KeyGroupInstanceID: " "})
	if !ce.Has(KeyGroupInstanceID) || !strings.Contains(ce.Error(), "dynamic member") {
		t.Errorf("empty group.instance.id: %v", ce)
	}
}

// bootstrap.servers and application.server: Kafka's host:port rules; a host without a port is refused,
// not given :9092.
func TestHostPortRules(t *testing.T) {
	for _, c := range []struct {
		addr string
		want string // "" = accepted
	}{
		{"localhost:9092", ""},
		{"127.0.0.1:1", ""},
		{"h:65535", ""},
		{"my_host.example-1:09092", ""},
		{"[::1]:9092", ""},
		{"[fe80::1%eth0]:9092", ""},
		{"localhost", "has no port: write host:port"},
		{"[::1]", "has no port: write [host]:port"},
		{"h:", "port is empty"},
		{"h:0", "port 0 is not allowed"},
		{"h:65536", `port "65536" is out of range`},
		{"127.0.0.1:99999", `port "99999" is out of range`},
		{"h:99999999999999999999999", "out of range"},
		{"h:-1", `port "-1" is not a number`},
		{"h:+1", `port "+1" is not a number`},
		{"h:80x", `port "80x" is not a number (character 'x' (U+0078))`},
		{":9092", "host is empty"},
		{"[]:9092", "host is empty"},
		{"ho\vst:9092", `'\v' (U+000B) is not allowed in a host`},
		{"hö:9092", "'ö' (U+00F6) is not allowed in a host"},
		{"h\x00:9092", `'\x00' (U+0000) is not allowed`},
		{"h/x:9092", "'/' (U+002F)"},
		{"::1:9092", "an IPv6 address in brackets: [::1]:9092"},
		{"h:9092:9093", "has more than one ':'"},
		{"a:1;b:2", "holds ';' (U+003B): separate servers with commas"},
		{"a:1 b:2", "holds ' ' (U+0020): separate servers with commas"},
		{"[::1:9092", "has '[' without ']'"},
		{"[::1]x:9092", `has "x:9092" after ']'`},
		{"PLAINTEXT://h:9092", `has a scheme prefix "PLAINTEXT://"`},
	} {
		_, _, err := hostport.Check(c.addr)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("hostport.Check(%q) = %v, want %q", c.addr, err, c.want)
		}
		cfg := Default("app")
		cfg.BootstrapServers = []string{c.addr}
		cfg.ApplicationServer = c.addr
		err = cfg.Validate()
		var ce *Error
		if c.want == "" && err != nil || c.want != "" && (!errors.As(err, &ce) || !ce.Has(KeyBootstrapServers) || !ce.Has(KeyApplicationServer)) {
			t.Errorf("Validate with %q: %v", c.addr, err)
		}
		if err != nil {
			checkMessage(t, err.Error())
		}
	}
	// IPv6: the brackets are not part of the host.
	cfg := Default("app")
	cfg.ApplicationServer = "[::1]:8080"
	if host, port, ok := cfg.Endpoint(); !ok || host != "::1" || port != 8080 {
		t.Errorf("Endpoint of [::1]:8080: %q %d %v", host, port, ok)
	}
	c := accepted(t, map[string]string{KeyBootstrapServers: " [::1]:9092 , localhost:9093,,"})
	if strings.Join(c.BootstrapServers, " ") != "[::1]:9092 localhost:9093" {
		t.Errorf("servers %q", c.BootstrapServers)
	}
	// Several bad servers: one problem for the key, each server named, the list capped.
	var bad []string
	for i := range 25 {
		bad = append(bad, fmt.Sprintf("host%d", i))
	}
	ce := problem(t, map[string]string{KeyBootstrapServers: strings.Join(bad, ",")})
	if len(ce.Keys) != 1 || !strings.Contains(ce.Error(), `"host0": has no port`) || !strings.Contains(ce.Error(), `"host9": has no port`) ||
		strings.Contains(ce.Error(), `"host10"`) || !strings.HasSuffix(ce.Error(), "; and 15 more") {
		t.Errorf("25 bad servers: %v", ce)
	}
}

// INT keys are Kafka's INT: at most 2^31-1; LONG keys go to Long.MAX_VALUE.
func TestIntKeysKafkaRange(t *testing.T) {
	for _, key := range []string{KeyRequestTimeout, KeyMaxPollInterval} {
		c := accepted(t, map[string]string{key: "2147483647"})
		if c.RequestTimeout != math.MaxInt32*time.Millisecond && c.MaxPollInterval != math.MaxInt32*time.Millisecond {
			t.Errorf("%s=2147483647 not read: %+v", key, c)
		}
		for _, raw := range []string{"2147483648", "4294967296", "9999999999999"} {
			ce := problem(t, map[string]string{key: raw})
			if !ce.Has(key) || !strings.Contains(ce.Error(), "Kafka reads it as an INT, from -2147483648 to 2147483647") {
				t.Errorf("%s=%s: %v", key, raw, ce)
			}
		}
	}
	c := accepted(t, map[string]string{KeyRetryBackoffMax: "9223372036854775807"})
	if c.RetryBackoffMax != time.Duration(math.MaxInt64/int64(time.Millisecond))*time.Millisecond {
		t.Errorf("retry.backoff.max.ms=Long.MAX_VALUE: %v", c.RetryBackoffMax)
	}
	if ce := problem(t, map[string]string{KeyRetryBackoffMax: "9223372036854775808"}); !strings.Contains(ce.Error(), "a LONG") {
		t.Errorf("above Long.MAX_VALUE: %v", ce)
	}
	if ce := problem(t, map[string]string{KeyTopologyEpoch: "2147483648"}); !strings.Contains(ce.Error(), "between 0 and 2147483647") {
		t.Errorf("topology.epoch above int32: %v", ce)
	}
	// replication.factor: Kafka Streams' INT, -1 (and 0) the broker's default; below -1 names no
	// factor, and a topic's factor is a 16-bit number on the wire.
	for raw, want := range map[string]int16{"-1": -1, "0": -1, "1": 1, " 3 ": 3, "32767": 32767} {
		if c := accepted(t, map[string]string{KeyReplicationFactor: raw}); c.ReplicationFactor != want {
			t.Errorf("replication.factor=%q: %d, want %d", raw, c.ReplicationFactor, want)
		}
	}
	for _, raw := range []string{"-2", "32768", "three", ""} {
		if ce := problem(t, map[string]string{KeyReplicationFactor: raw}); !ce.Has(KeyReplicationFactor) ||
			!strings.Contains(ce.Error(), "-1 or 0 (the broker's default.replication.factor) or a whole number from 1 to 32767") {
			t.Errorf("replication.factor=%q: %v", raw, ce)
		}
	}
}

// Kafka Streams' limits on client tags (StreamsConfig, 4.4: 5 tags, keys ≤ 20, values ≤ 30 UTF-16 units,
// neither blank).
func TestClientTagLimits(t *testing.T) {
	five := map[string]string{}
	for i := range 5 {
		five[fmt.Sprintf("client.tag.k%d", i)] = "v"
	}
	if c := accepted(t, five); len(c.ClientTags) != 5 {
		t.Fatalf("five tags: %v", c.ClientTags)
	}
	five["client.tag.k5"] = "v"
	if ce := problem(t, five); !ce.Has("client.tag.*") || !strings.Contains(ce.Error(), "6 client tags; Kafka Streams allows at most 5") {
		t.Errorf("six tags: %v", ce)
	}
	for _, c := range []struct {
		key, val string
		want     string
	}{
		{strings.Repeat("k", 20), strings.Repeat("v", 30), ""},
		{strings.Repeat("k", 21), "v", "key is 21 characters long; Kafka Streams allows at most 20"},
		{"k", strings.Repeat("v", 31), "value is 31 characters long; Kafka Streams allows at most 30"},
		{"k", strings.Repeat("😀", 15), ""},                            // 30 UTF-16 units
		{"k", strings.Repeat("😀", 16), "value is 32 characters long"}, // as Java counts
		{strings.Repeat("é", 20), "v", ""},                            // one unit each
		{"k", " ", "value is empty"},
		{"k", "", "value is empty"},
		{" ", "v", "key is empty"},
		{"", "v", "key is empty"},
	} {
		key := PrefixClientTag + c.key
		_, err := FromMap(map[string]string{KeyApplicationID: "app", key: c.val})
		var ce *Error
		if c.want == "" && err != nil || c.want != "" && (!errors.As(err, &ce) || !ce.Has(key) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s=%q: %v, want %q", text.Quote(key), c.val, err, c.want)
		}
	}
}

// retry.backoff.ms above retry.backoff.max.ms is accepted, as Kafka accepts it (and then backs off by
// retry.backoff.max.ms, constantly: ExponentialBackoff takes min(initial, max)).
func TestRetryBackoffAboveMaxAccepted(t *testing.T) {
	c := accepted(t, map[string]string{KeyRetryBackoff: "2000"})
	if c.RetryBackoff != 2*time.Second || c.RetryBackoffMax != DefaultRetryBackoffMax {
		t.Errorf("retry.backoff.ms=2000 alone: %v / %v", c.RetryBackoff, c.RetryBackoffMax)
	}
	c = accepted(t, map[string]string{KeyRetryBackoff: "5000", KeyRetryBackoffMax: "10"})
	if c.RetryBackoff != 5*time.Second || c.RetryBackoffMax != 10*time.Millisecond {
		t.Errorf("both: %v / %v", c.RetryBackoff, c.RetryBackoffMax)
	}
	for _, raw := range []string{"-1", "soon"} {
		if ce := problem(t, map[string]string{KeyRetryBackoffMax: raw}); !ce.Has(KeyRetryBackoffMax) {
			t.Errorf("retry.backoff.max.ms=%s: %v", raw, ce)
		}
	}
}

// Messages: keys and values quoted and escaped, long ones cut, lists capped, runes named.
func TestMessagesAPersonCanRead(t *testing.T) {
	// A 1 MiB value is cut to 64 bytes and counted.
	big := strings.Repeat("x", 1<<20)
	ce := problem(t, map[string]string{KeyApplicationID: big + " "})
	if msg := ce.Error(); len(msg) > 400 || !strings.Contains(msg, `"`+strings.Repeat("x", 64)+`"… (1048577 bytes)`) {
		t.Errorf("a 1 MiB value: %d bytes of message: %.300s", len(msg), msg)
	}
	// A cut never splits a character.
	if q := text.Quote(strings.Repeat("a", 63) + "ö" + strings.Repeat("b", 10)); q != `"`+strings.Repeat("a", 63)+`"… (75 bytes)` {
		t.Errorf("cut inside a character: %s", q)
	}
	// Ten thousand unknown keys: ten listed, the rest counted.
	m := map[string]string{}
	for i := range 10000 {
		m[fmt.Sprintf("unknown.key.%05d", i)] = "1"
	}
	ce = problem(t, m)
	if msg := ce.Error(); len(ce.Keys) != 10000 || len(msg) > 3000 || !strings.HasSuffix(msg, "; and 9990 more") {
		t.Errorf("10000 unknown keys: %d problems, %d bytes: %.200s", len(ce.Keys), len(msg), msg)
	}
	// Non-ASCII: the rune, not a byte.
	ce = problem(t, map[string]string{KeyApplicationID: "wörter"})
	if msg := ce.Error(); !strings.Contains(msg, `character 'ö' (U+00F6) is not one of [a-zA-Z0-9._-]`) || strings.Contains(msg, "Ã") {
		t.Errorf("non-ASCII: %v", msg)
	}
	// Invalid UTF-8 is named as a byte.
	ce = problem(t, map[string]string{KeyApplicationID: "a\xffb"})
	if !strings.Contains(ce.Error(), "byte 0xFF (not UTF-8)") {
		t.Errorf("invalid UTF-8: %v", ce)
	}
	// Keys are quoted, so a trailing space, a BOM or a zero-width space shows, and the likely key is named.
	for key, want := range map[string]string{
		"\ufeffapplication.id": `"\ufeffapplication.id"="x": unknown key; did you mean "application.id"? the key holds invisible characters (U+FEFF)`,
		"application.id ":      `"application.id "="x": unknown key; did you mean "application.id"?`,
		"client\u200b.rack":    `"client\u200b.rack"="x": unknown key; did you mean "client.rack"?`,
		"Application.ID":       `did you mean "application.id"? keys are case-sensitive`,
		"aplication.id":        `did you mean "application.id"?`,
		"bootstrap.server":     `did you mean "bootstrap.servers"?`,
	} {
		ce := problem(t, map[string]string{key: "x"})
		if !ce.Has(key) || !strings.Contains(ce.Error(), want) {
			t.Errorf("key %q: %v\nwant %s", key, ce, want)
		}
	}
	// NUL and control bytes never reach a message raw.
	ce = problem(t, map[string]string{"user.ok": "\x00", "bad\x00key\x1b[31m": "v\x00\r\n\x07", KeyStateDir: "a\x00b"})
	checkMessage(t, ce.Error())
	if !strings.Contains(ce.Error(), `"bad\x00key\x1b[31m"="v\x00\r\n\a"`) || !ce.Has(KeyStateDir) {
		t.Errorf("control bytes: %v", ce)
	}
}

// An empty application.id says what to do, and nothing contradictory.
func TestEmptyApplicationID(t *testing.T) {
	for _, m := range []map[string]string{{KeyApplicationID: ""}, {KeyApplicationID: "  "}, {}} {
		_, err := FromMap(m)
		var ce *Error
		if !errors.As(err, &ce) || !ce.Has(KeyApplicationID) || !strings.Contains(err.Error(), "is required: set it to the application's name") ||
			strings.Contains(err.Error(), "leave the key out") {
			t.Errorf("%q: %v", m, err)
		}
	}
	// Empty values that mean "not set" in Kafka are accepted.
	c := accepted(t, map[string]string{KeyClientRack: "", KeyApplicationServer: " ", KeyStateDir: ""})
	if c.ClientRack != "" || c.ApplicationServer != "" || c.StateDir != "" {
		t.Errorf("empty optional strings: %+v", c)
	}
	if ce := problem(t, map[string]string{KeyProcessID: ""}); !strings.Contains(ce.Error(), "leave the key out to get a generated process ID") {
		t.Errorf("empty process.id: %v", ce)
	}
	if ce := problem(t, map[string]string{KeyProcessID: "{6ba7b810-9dad-11d1-80b4-00c04fd430c8}"}); !ce.Has(KeyProcessID) {
		t.Errorf("a braced UUID would be sent as written: %v", ce)
	}
}

// Keys that streams groups moved to the broker say so and say how to set them.
func TestBrokerSideKeys(t *testing.T) {
	for key, group := range map[string]string{
		"num.standby.replicas":       "num.standby.replicas",
		"heartbeat.interval.ms":      "heartbeat.interval.ms",
		"acceptable.recovery.lag":    "acceptable.recovery.lag",
		"max.warmup.replicas":        "num.warmup.replicas",
		"rack.aware.assignment.tags": "rack.aware.assignment.tags",
	} {
		ce := problem(t, map[string]string{key: "1"})
		msg := ce.Error()
		if !ce.Has(key) || !strings.Contains(msg, "is a broker-side group config in streams groups") ||
			!strings.Contains(msg, "group.streams."+group+" on the broker") || !strings.Contains(msg, "streams."+group+" per group") ||
			!strings.Contains(msg, "kafka-configs.sh --alter --entity-type groups") || strings.Contains(msg, "unknown key") {
			t.Errorf("%s: %v", key, msg)
		}
	}
	for key, want := range map[string]string{
		"streams.num.standby.replicas":        "is a group config set on the broker",
		"group.streams.session.timeout.ms":    "is a group config set on the broker",
		"streams.session.timeout.ms":          "is a group config set on the broker",
		"default.key.serde":                   "Kafka Streams runtime setting",
		"ssl.cipher.suites":                   "configure it on the *kgo.Client",
		"sasl.login.class":                    "configure it on the *kgo.Client",
		"security.protocol":                   "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
		"sasl.mechanism":                      "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
		"consumer.max.poll.records":           "the clients are yours",
		"group.id":                            "application.id",
		"completely.different.thing.entirely": `unknown key (keys for the application's own use start with "user.")`,
	} {
		if ce := problem(t, map[string]string{key: "1"}); !ce.Has(key) || !strings.Contains(ce.Error(), want) {
			t.Errorf("%s: %v, want %q", key, ce, want)
		}
	}
	// group.protocol=streams, which Kafka Streams 4.4 needs, is accepted; another protocol is not.
	accepted(t, map[string]string{KeyGroupProtocol: "STREAMS"})
	if ce := problem(t, map[string]string{KeyGroupProtocol: "classic"}); !ce.Has(KeyGroupProtocol) {
		t.Errorf("group.protocol=classic: %v", ce)
	}
}

// state.dir problems are *Error naming state.dir, and unwrap to the file system's error.
func TestStateDirProblemsTyped(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Default("app")
	c.StateDir = filepath.Join(file, "sub") // a file where a directory must be
	_, err := c.ResolveProcessID()
	var ce *Error
	if !errors.As(err, &ce) || !ce.Has(KeyStateDir) || !errors.Is(err, syscall.ENOTDIR) ||
		!strings.Contains(err.Error(), `"state.dir"=`) || !strings.Contains(err.Error(), "state.dir must be a directory this process can write") {
		t.Errorf("unusable state.dir: %v", err)
	}
	if os.Getuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		c.StateDir = ro
		if _, err := c.ResolveProcessID(); !errors.As(err, &ce) || !ce.Has(KeyStateDir) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("read-only state.dir: %v", err)
		}
	}
	c.StateDir = dir
	path := filepath.Join(dir, "app", processIDFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("\x00garbage"+strings.Repeat("z", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.ResolveProcessID()
	if !errors.As(err, &ce) || !ce.Has(KeyStateDir) || !strings.Contains(err.Error(), "remove the file") || len(err.Error()) > 500 {
		t.Errorf("corrupt process ID file: %v", err)
	}
	checkMessage(t, err.Error())
	if err := os.WriteFile(path, []byte("6BA7B810-9DAD-11D1-80B4-00C04FD430C8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if id, err := c.ResolveProcessID(); err != nil || id != "6BA7B810-9DAD-11D1-80B4-00C04FD430C8" {
		t.Errorf("a kept UUID: %q %v", id, err)
	}
}

// A 2 MB line parses (Java's Properties has no line limit); a line past MaxLineBytes is a
// *SyntaxError naming its line, not bufio's "token too long".
func TestLongPropertiesLines(t *testing.T) {
	value := strings.Repeat("v", 2<<20)
	c, err := FromProperties(strings.NewReader("application.id=app\nuser.blob=" + value + "\n"))
	if err != nil || c.User["user.blob"] != value {
		t.Fatalf("a 2 MB user value: %v", err)
	}
	_, err = FromProperties(strings.NewReader("application.id=" + value + "\n"))
	var ce *Error
	if !errors.As(err, &ce) || len(err.Error()) > 400 || !strings.Contains(err.Error(), "… (2097152 bytes)") {
		t.Errorf("a 2 MB application.id: %.300v", err)
	}
	_, err = ParseProperties(strings.NewReader("a=1\n\n\nb=" + strings.Repeat("x", MaxLineBytes+1)))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 4 || strings.Contains(err.Error(), "token too long") ||
		err.Error() != "properties line 4: longer than 16 MiB, the most one line may be (is this a properties file?)" {
		t.Errorf("a line over the limit: %v", err)
	}
	// A reader failing is a *SyntaxError that unwraps to the reader's error.
	boom := errors.New("disk on fire")
	_, err = ParseProperties(&failingReader{data: "a=1\nb=2\n", err: boom})
	if !errors.As(err, &se) || !errors.Is(err, boom) || se.Line != 3 {
		t.Errorf("reader error: %v", err)
	}
	// A key with escapes is quoted in a syntax error.
	_, err = ParseProperties(strings.NewReader("k\\u0000ey=\\uZZZZ"))
	if err == nil || !strings.Contains(err.Error(), `value of "k\x00ey"`) {
		t.Errorf("syntax error key: %v", err)
	}
}

type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// session.timeout.ms is refused: in streams groups the session timeout is the group's
// (streams.session.timeout.ms), Kafka's consumer refuses the key under the new protocols, and a
// member-side value would make the session guard disagree with the broker. The problem says where to
// set it instead.
func TestSessionTimeoutKeyRefused(t *testing.T) {
	for _, v := range []string{"10000", "6000", ""} {
		ce := problem(t, map[string]string{"session.timeout.ms": v})
		if !ce.Has("session.timeout.ms") {
			t.Fatalf("session.timeout.ms=%q accepted: %v", v, ce)
		}
		if msg := ce.Error(); !strings.Contains(msg, "streams.session.timeout.ms") || !strings.Contains(msg, "group.streams.session.timeout.ms") {
			t.Errorf("the problem does not point at streams.session.timeout.ms: %s", msg)
		}
	}
}
