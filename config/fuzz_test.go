package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// FuzzProperties feeds arbitrary text to the properties parser and the config builder, and checks
// the results against oracles that do not use them:
//
//   - text without a backslash must read as refParse (the Java rules, written independently) reads it;
//   - any map read must survive writeProperties (an independent writer, in every style: separators,
//     line ends, \u escapes, continued lines, comments) and a second read unchanged;
//   - a parse error is a *SyntaxError, which only a \u escape or an over-long line can cause;
//   - FromMap must take each Kafka key's value as written (trimmed string, whole milliseconds,
//     int32 epoch, comma-separated servers), keep user.* values raw, name every unknown key, and
//     return only a Config that Validate accepts and that round-trips through properties.
func FuzzProperties(f *testing.F) {
	for _, seed := range []string{
		"application.id=app\nbootstrap.servers=127.0.0.1:9092\n",
		"a\\\n b\\u0041=c\\\\\n#x\n!y\n",
		"topology.epoch=99999999999\nmax.poll.interval.ms=-5\n",
		"client.tag.=\nuser.x=y\nprocess.id=\\uZZZZ",
		"retry.backoff.ms=9223372036854775807",
		"application.id app\rclient.tag.z\\ one : v\r\nuser.\\ud83d\\ude00= \\ x \nstate.dir=\n",
		"application.id:a\nretry.backoff.ms=2000\nrequest.timeout.ms 5\ngroup.instance.id=\\t\n",
		"\ufeffapplication.id=w\u00f6rter\nbootstrap.servers=localhost,[::1]:9092,h:99999\ngroup.protocol=streams\n",
		"request.timeout.ms=4294967296\nretry.backoff.max.ms=9223372036854775807\nnum.standby.replicas=1\nclient.tag.k=\n",
		"group.instance.id=..\nstate.dir=a\\u0000b\nclient.tag.a=1\nclient.tag.b=1\nclient.tag.c=1\nclient.tag.d=1\nclient.tag.e=1\nclient.tag.f=1\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("untyped parse error %T: %v", err, err)
			}
			checkMessage(t, err.Error())
			if !strings.Contains(in, `\u`) && len(in) <= MaxLineBytes {
				t.Fatalf("a parse error without a \\u escape or a long line: %v", err)
			}
			return
		}
		if !strings.Contains(in, `\`) {
			if want := refParse(in); !reflect.DeepEqual(m, want) {
				t.Fatalf("ParseProperties(%q) = %q, the Java rules give %q", in, m, want)
			}
		}
		for _, st := range styles {
			text := writeProperties(m, st)
			if again := parse(t, text); !reflect.DeepEqual(again, m) {
				t.Fatalf("%q read as %q; written in style %+v as %q and read back as %q", in, m, st, text, again)
			}
		}

		c, err := FromMap(m)
		if err != nil {
			checkConfigError(t, m, err)
			return
		}
		checkFromMap(t, m, c)
		if err := c.Validate(); err != nil {
			t.Fatalf("FromMap returned a config that Validate rejects: %v", err)
		}
		for _, st := range styles {
			props := propertiesOf(c)
			for _, k := range securityKeys { // Security keeps no raw values to write back
				if v, ok := m[k]; ok {
					props[k] = v
				}
			}
			text := writeProperties(props, st)
			back, err := FromProperties(strings.NewReader(text))
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Fatalf("config %+v written as %q reads back as %+v, %v", c, text, back, err)
			}
		}
	})
}

var knownKeys = []string{KeyApplicationID, KeyBootstrapServers, KeyTopologyEpoch, KeyReplicationFactor, KeyTaskOffsetInterval, KeyProcessID,
	KeyGroupInstanceID, KeyClientRack, KeyApplicationServer, KeyMaxPollInterval, KeyRetryBackoff, KeyRetryBackoffMax,
	KeyRequestTimeout, KeyStateDir, KeyGroupProtocol}

func known(key string) bool {
	for _, k := range knownKeys {
		if key == k {
			return true
		}
	}
	return strings.HasPrefix(key, PrefixClientTag) || strings.HasPrefix(key, PrefixUser) || IsSecurityKey(key)
}

// checkConfigError: an *Error, its keys sorted and distinct, each one given or one whose absence or
// conflict Validate reports, and every unknown key among them.
func checkConfigError(t *testing.T, m map[string]string, err error) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Keys) == 0 {
		t.Fatalf("untyped config error %T: %v", err, err)
	}
	for i, k := range ce.Keys {
		if i > 0 && ce.Keys[i-1].Key >= k.Key {
			t.Fatalf("keys not sorted or repeated: %v", err)
		}
		// A SASL protocol asks for sasl.mechanism and sasl.jaas.config when they are missing.
		if _, given := m[k.Key]; !given && k.Key != KeyApplicationID && k.Key != keyClientTags && !IsSecurityKey(k.Key) {
			t.Fatalf("problem with key %q, which the input does not have: %v", k.Key, err)
		}
		if i < MaxListedProblems && !strings.Contains(err.Error(), text.Quote(k.Key)) {
			t.Fatalf("the message leaves out %q: %v", k.Key, err)
		}
	}
	checkMessage(t, err.Error())
	if n := len(ce.Keys) - MaxListedProblems; n > 0 && !strings.HasSuffix(err.Error(), fmt.Sprintf("; and %d more", n)) {
		t.Fatalf("%d problems, the message does not count the %d it leaves out: %v", len(ce.Keys), n, err)
	}
	for key := range m {
		if !known(key) && !ce.Has(key) {
			t.Fatalf("unknown key %q not reported: %v", key, err)
		}
	}
}

// checkFromMap compares each field of an accepted Config with its key's value, read here by hand.
func checkFromMap(t *testing.T, m map[string]string, c Config) {
	t.Helper()
	def := Default("")
	strs := map[string]string{KeyApplicationID: c.ApplicationID, KeyProcessID: c.ProcessID, KeyGroupInstanceID: c.GroupInstanceID,
		KeyClientRack: c.ClientRack, KeyApplicationServer: c.ApplicationServer, KeyStateDir: c.StateDir}
	for key, got := range strs {
		if raw, ok := m[key]; ok && got != strings.TrimSpace(raw) || !ok && got != "" {
			t.Fatalf("%s: %q from %q", key, got, raw)
		}
	}
	ints := map[string]bool{KeyMaxPollInterval: true, KeyRequestTimeout: true}
	durs := map[string][2]time.Duration{
		KeyTaskOffsetInterval: {c.TaskOffsetInterval, def.TaskOffsetInterval}, KeyMaxPollInterval: {c.MaxPollInterval, def.MaxPollInterval},
		KeyRetryBackoff: {c.RetryBackoff, def.RetryBackoff}, KeyRetryBackoffMax: {c.RetryBackoffMax, def.RetryBackoffMax},
		KeyRequestTimeout: {c.RequestTimeout, def.RequestTimeout},
	}
	for key, d := range durs {
		want := d[1]
		if raw, ok := m[key]; ok {
			bits := 64
			if ints[key] {
				bits = 32 // Kafka's INT
			}
			n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, bits)
			if err != nil {
				t.Fatalf("%s=%q accepted", key, raw)
			}
			// A LONG beyond what a Duration holds counts as the most it holds.
			const most = math.MaxInt64 / int64(time.Millisecond)
			want = time.Duration(min(max(n, -most), most)) * time.Millisecond
		}
		if d[0] != want {
			t.Fatalf("%s: %v, want %v", key, d[0], want)
		}
	}
	if raw, ok := m[KeyTopologyEpoch]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32); err != nil || int32(n) != c.TopologyEpoch {
			t.Fatalf("topology.epoch %d from %q", c.TopologyEpoch, raw)
		}
	} else if c.TopologyEpoch != 0 {
		t.Fatalf("topology.epoch %d without the key", c.TopologyEpoch)
	}
	if raw, ok := m[KeyReplicationFactor]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 16); err != nil || n < -1 || int16(cmp.Or(n, -1)) != c.ReplicationFactor {
			t.Fatalf("replication.factor %d from %q", c.ReplicationFactor, raw)
		}
	} else if c.ReplicationFactor != -1 {
		t.Fatalf("replication.factor %d without the key", c.ReplicationFactor)
	}
	var servers []string
	for _, s := range strings.Split(m[KeyBootstrapServers], ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	if !reflect.DeepEqual(c.BootstrapServers, servers) {
		t.Fatalf("bootstrap.servers %q from %q", c.BootstrapServers, m[KeyBootstrapServers])
	}
	tags, user := map[string]string{}, map[string]string{}
	for key, raw := range m {
		if tag, ok := strings.CutPrefix(key, PrefixClientTag); ok {
			tags[tag] = strings.TrimSpace(raw)
			if tags[tag] == "" || strings.TrimSpace(tag) == "" {
				t.Fatalf("client tag %q=%q accepted: Kafka Streams refuses blank tag keys and values", tag, raw)
			}
		} else if strings.HasPrefix(key, PrefixUser) {
			user[key] = raw
		} else if !known(key) {
			t.Fatalf("unknown key %q accepted", key)
		}
	}
	if len(tags) > 5 {
		t.Fatalf("%d client tags accepted, Kafka Streams allows 5", len(tags))
	}
	if len(tags) != len(c.ClientTags) || len(tags) > 0 && !reflect.DeepEqual(tags, c.ClientTags) {
		t.Fatalf("client tags %q, want %q", c.ClientTags, tags)
	}
	if len(user) != len(c.User) || len(user) > 0 && !reflect.DeepEqual(user, c.User) {
		t.Fatalf("user keys %q, want %q", c.User, user)
	}
}

// checkMessage: no raw control byte (NUL included) reaches a message; input is escaped.
func checkMessage(t *testing.T, msg string) {
	t.Helper()
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 || msg[i] == 0x7f {
			t.Fatalf("raw control byte 0x%02x in the message %q", msg[i], msg)
		}
	}
}
