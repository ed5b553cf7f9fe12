package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
	"pgregory.net/rapid"
)

// The oracles here do not use the parser they check: writeProperties is an independent writer of the
// java.util.Properties format, refParse a reference reader for text without backslashes, and
// propertiesOf the keys of a Config written out by hand.

// style is how writeProperties lays a file out; every style means the same map.
type style struct {
	sep       string // between key and value: "=", ":", " ", " = ", "\t:\t"
	eol       string // "\n", "\r\n" or "\r"
	asciiOnly bool   // non-ASCII characters as \uXXXX escapes (surrogate pairs outside the BMP), as Properties.store does
	fold      int    // > 0: continue the logical line on a new, indented line after every fold characters
	comments  bool   // a comment and a blank line before every entry
}

var styles = []style{
	{sep: "=", eol: "\n"},
	{sep: ":", eol: "\r\n", asciiOnly: true},
	{sep: " ", eol: "\r", fold: 1},
	{sep: " = ", eol: "\n", fold: 3, comments: true},
	{sep: "\t:\t", eol: "\r\n", asciiOnly: true, fold: 2, comments: true},
}

func drawStyle(t *rapid.T) style {
	return style{
		sep:       rapid.SampledFrom([]string{"=", ":", " ", " = ", "\t:\t", "\f"}).Draw(t, "sep"),
		eol:       rapid.SampledFrom([]string{"\n", "\r\n", "\r"}).Draw(t, "eol"),
		asciiOnly: rapid.Bool().Draw(t, "ascii only"),
		fold:      rapid.IntRange(0, 4).Draw(t, "fold"),
		comments:  rapid.Bool().Draw(t, "comments"),
	}
}

// escape returns s as a list of written tokens, one per character (byte for invalid UTF-8), each a
// literal character or an escape, so that a line may be folded between any two of them.
func escape(s string, st style) []string {
	var out []string
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!' || r == ' ':
			out = append(out, `\`+string(r))
		case r == '\t':
			out = append(out, `\t`)
		case r == '\n':
			out = append(out, `\n`)
		case r == '\r':
			out = append(out, `\r`)
		case r == '\f':
			out = append(out, `\f`)
		case r == utf8.RuneError && n == 1:
			out = append(out, s[i:i+1]) // a byte of invalid UTF-8, kept as it is
		case r >= 0x80 && st.asciiOnly:
			tok := ""
			for _, u := range utf16.Encode([]rune{r}) {
				tok += fmt.Sprintf(`\u%04X`, u)
			}
			out = append(out, tok)
		default:
			out = append(out, s[i:i+n])
		}
		i += n
	}
	return out
}

// writeProperties writes m in the given style, keys in sorted order.
func writeProperties(m map[string]string, st style) string {
	var b strings.Builder
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		if st.comments {
			b.WriteString("# " + strings.NewReplacer("\n", " ", "\r", " ").Replace(k) + st.eol + st.eol)
		}
		toks := escape(k, st)
		sep := len(toks)
		if k == "" && strings.Trim(st.sep, " \t\f") == "" {
			toks = append(toks, "=") // a line of white space only would be blank
		} else {
			toks = append(toks, st.sep)
		}
		toks = append(toks, escape(m[k], st)...)
		for i, tok := range toks {
			// Not before the separator: the indentation of a continued line is dropped, and a white
			// space separator with it.
			if st.fold > 0 && i > 0 && i%st.fold == 0 && i != sep {
				b.WriteString(`\` + st.eol + " \t ")
			}
			b.WriteString(tok)
		}
		b.WriteString(st.eol)
	}
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// refParse reads properties text that has no backslash (so no escapes and no continued lines) by
// the Java rules, written independently of ParseProperties.
func refParse(in string) map[string]string {
	out := map[string]string{}
	in = strings.ReplaceAll(strings.ReplaceAll(in, "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(in, "\n") {
		line = strings.TrimLeft(line, " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		end := strings.IndexAny(line, "=: \t\f")
		if end < 0 {
			out[line] = ""
			continue
		}
		key, rest := line[:end], strings.TrimLeft(line[end:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		out[key] = rest
	}
	return out
}

func parse(t interface{ Fatalf(string, ...any) }, text string) map[string]string {
	m, err := ParseProperties(strings.NewReader(text))
	if err != nil {
		t.Fatalf("ParseProperties(%q): %v", text, err)
	}
	return m
}

func TestPropertiesRoundTripAnyMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOfN(rapid.StringN(1, 8, -1), rapid.String(), 0, 5).Draw(t, "map")
		st := drawStyle(t)
		text := writeProperties(m, st)
		if got := parse(t, text); !reflect.DeepEqual(got, m) {
			t.Fatalf("written as\n%q\nread back as %q, want %q", text, got, m)
		}
	})
}

func TestParsePropertiesAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Lines of keys, separators, values, comments and white space, without a backslash.
		piece := rapid.SampledFrom([]string{"a", "b", "key.x", "=", ":", " ", "\t", "\f", "#", "!", "é", "v 1", "\r", "\n", "\r\n", "x=y", "=="})
		text := strings.Join(rapid.SliceOfN(piece, 0, 20).Draw(t, "pieces"), "")
		if got, want := parse(t, text), refParse(text); !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseProperties(%q) = %q, the Java rules give %q", text, got, want)
		}
	})
}

// propertiesOf writes a Config as the keys FromMap reads, leaving out what is unset.
func propertiesOf(c Config) map[string]string {
	m := map[string]string{}
	put := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	msStr := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Millisecond), 10) }
	put(KeyApplicationID, c.ApplicationID)
	put(KeyBootstrapServers, strings.Join(c.BootstrapServers, ","))
	put(KeyTopologyEpoch, strconv.FormatInt(int64(c.TopologyEpoch), 10))
	put(KeyReplicationFactor, strconv.FormatInt(int64(c.ReplicationFactor), 10))
	put(KeyTaskOffsetInterval, msStr(c.TaskOffsetInterval))
	put(KeyProcessID, c.ProcessID)
	put(KeyGroupInstanceID, c.GroupInstanceID)
	put(KeyClientRack, c.ClientRack)
	put(KeyApplicationServer, c.ApplicationServer)
	for k, v := range c.ClientTags {
		m[PrefixClientTag+k] = v
	}
	put(KeyMaxPollInterval, msStr(c.MaxPollInterval))
	put(KeyRetryBackoff, msStr(c.RetryBackoff))
	put(KeyRetryBackoffMax, msStr(c.RetryBackoffMax))
	put(KeyRequestTimeout, msStr(c.RequestTimeout))
	put(KeyStateDir, c.StateDir)
	put(KeyClientID, c.ClientID)
	put(KeyProcessingGuarantee, string(c.Runtime.Guarantee))
	put(KeyCommitInterval, msStr(c.Runtime.CommitInterval))
	put(KeyStateCleanupDelay, msStr(c.Runtime.StateCleanupDelay))
	handler := map[ErrorPolicy]string{LogAndFail: "org.apache.kafka.streams.errors.LogAndFail", LogAndContinue: "LogAndContinue"}
	put(KeyProcessingExceptionHandler, handler[c.Runtime.OnProcessingError]+"ProcessingExceptionHandler")
	put(KeyDeserializationExceptionHandler, handler[c.Runtime.OnDeserializationError]+"ExceptionHandler")
	put(KeyAutoOffsetReset, map[bool]string{false: "earliest", true: "latest"}[c.Runtime.ResetLatest])
	put(KeyTransactionTimeout, msStr(c.Runtime.TransactionTimeout))
	put(KeyPollInterval, msStr(c.Runtime.PollInterval))
	put(KeyTimestampExtractor, c.Runtime.Timestamps.String())
	put(KeyDeadLetterQueueTopic, c.Runtime.DeadLetterQueueTopic)
	put(KeyProductionExceptionHandler, map[ErrorPolicy]string{RetryOrFail: "DefaultProductionExceptionHandler",
		LogAndContinue: "org.apache.kafka.streams.errors.LogAndContinueProductionExceptionHandler"}[c.Runtime.OnProductionError])
	put(KeyDeliveryTimeout, msStr(c.Runtime.DeliveryTimeout))
	if c.Runtime.Compression != "" {
		put(KeyCompressionType, string(c.Runtime.Compression))
	}
	put(KeyMaxTaskIdle, msStr(c.Runtime.MaxTaskIdle))
	if c.Runtime.BufferedRecordsPerPartition != 0 {
		put(KeyBufferedRecordsPerPartition, strconv.Itoa(c.Runtime.BufferedRecordsPerPartition))
	}
	if c.Runtime.NumStreamThreads != 0 {
		put(KeyNumStreamThreads, strconv.Itoa(c.Runtime.NumStreamThreads))
	}
	if c.Runtime.GlobalProcessingErrors {
		put(KeyGlobalProcessingExceptionHandler, "true")
	}
	if c.Runtime.AllowStateWithoutCommittedOffsets {
		put(KeyAllowStateWithoutCommittedOffsets, "TRUE")
	}
	if f := c.Runtime.DSLStoreFormat; f != "" {
		put(KeyDSLStoreFormat, string(f))
	}
	if n := c.Runtime.StateStoreCacheMaxBytes; n != 0 {
		put(KeyStateStoreCacheMaxBytes, strconv.FormatInt(max(n, 0), 10)) // -1 is written as 0, the cache off
	}
	for k, v := range c.User {
		m[k] = v
	}
	return m
}

// trimmed draws strings that FromMap keeps as they are: values of Kafka keys are trimmed, as Kafka's
// ConfigDef trims string values.
func trimmed(min int) *rapid.Generator[string] {
	return rapid.StringN(min, 10, -1).Filter(func(s string) bool { return strings.TrimSpace(s) == s })
}

// nonBlank draws strings that are not all white space, trimmed, of 1 to n characters: client tag
// keys and values as Kafka Streams accepts them.
func nonBlank(n int) *rapid.Generator[string] {
	return rapid.StringN(1, n, -1).Filter(func(s string) bool { return s != "" && strings.TrimSpace(s) == s })
}

func genConfig(t *rapid.T) Config {
	ms := func(label string, lo, hi int64) time.Duration {
		return time.Duration(rapid.Int64Range(lo, hi).Draw(t, label)) * time.Millisecond
	}
	hostPort := rapid.Custom(func(t *rapid.T) string {
		host := rapid.OneOf(rapid.StringMatching(`[a-z0-9][a-z0-9.-]{0,9}`), rapid.Just("[::1]")).Draw(t, "host")
		return host + ":" + strconv.Itoa(rapid.IntRange(1, 65535).Draw(t, "port"))
	})
	c := Config{
		ApplicationID:      rapid.StringMatching(`[a-zA-Z0-9._-]{1,20}`).Draw(t, "application.id"),
		BootstrapServers:   rapid.SliceOfN(hostPort, 0, 3).Draw(t, "bootstrap.servers"),
		TopologyEpoch:      rapid.Int32Min(0).Draw(t, "topology.epoch"),
		ReplicationFactor:  rapid.SampledFrom([]int16{-1, 1, 3, math.MaxInt16}).Draw(t, "replication.factor"),
		TaskOffsetInterval: ms("task.offset.interval.ms", 0, 1<<40),
		GroupInstanceID:    rapid.OneOf(rapid.Just(""), rapid.StringMatching(`[a-zA-Z0-9_-][a-zA-Z0-9._-]{0,19}`)).Draw(t, "group.instance.id"),
		ClientRack:         rapid.OneOf(rapid.Just(""), trimmed(1)).Draw(t, "client.rack"),
		ApplicationServer:  rapid.OneOf(rapid.Just(""), hostPort).Draw(t, "application.server"),
		ClientTags:         rapid.MapOfN(nonBlank(6), nonBlank(10), 0, 5).Draw(t, "client tags"),
		MaxPollInterval:    ms("max.poll.interval.ms", 1, math.MaxInt32),
		RetryBackoff:       ms("retry.backoff.ms", 0, 1<<30),
		RequestTimeout:     ms("request.timeout.ms", 1, math.MaxInt32),
		ClientID:           rapid.OneOf(rapid.Just(""), rapid.StringMatching(`[a-zA-Z0-9._-]{1,20}`)).Draw(t, "client.id"),
		StateDir:           rapid.OneOf(rapid.Just(""), trimmed(1).Filter(func(s string) bool { return !strings.Contains(s, "\x00") })).Draw(t, "state.dir"),
		User:               rapid.MapOfN(rapid.Map(rapid.StringN(0, 6, -1), func(s string) string { return PrefixUser + s }), rapid.String(), 0, 3).Draw(t, "user"),
	}
	c.Runtime = Runtime{
		Guarantee:              AtLeastOnce,
		CommitInterval:         ms("commit.interval.ms", 0, 1<<40),
		StateCleanupDelay:      ms("state.cleanup.delay.ms", 0, 1<<40),
		OnProcessingError:      rapid.SampledFrom([]ErrorPolicy{LogAndFail, LogAndContinue}).Draw(t, "processing.exception.handler"),
		OnDeserializationError: rapid.SampledFrom([]ErrorPolicy{LogAndFail, LogAndContinue}).Draw(t, "deserialization.exception.handler"),
		ResetLatest:            rapid.Bool().Draw(t, "auto.offset.reset=latest"),
		TransactionTimeout:     ms("transaction.timeout.ms", 1, math.MaxInt32),
		PollInterval:           ms("poll.ms", 0, 1<<40),
		OnProductionError:      rapid.SampledFrom([]ErrorPolicy{RetryOrFail, LogAndContinue}).Draw(t, "production.exception.handler"),
		DeliveryTimeout:        ms("delivery.timeout.ms", 1, math.MaxInt32),
		Compression: rapid.SampledFrom([]Compression{"", CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4,
			CompressionZstd}).Draw(t, "compression.type"),
		DeadLetterQueueTopic:              rapid.OneOf(rapid.Just(""), rapid.StringMatching(`[a-z][a-z0-9._-]{0,20}`)).Draw(t, "errors.dead.letter.queue.topic.name"),
		MaxTaskIdle:                       ms("max.task.idle.ms", -1, 1<<40),
		BufferedRecordsPerPartition:       rapid.IntRange(0, math.MaxInt32).Draw(t, "buffered.records.per.partition"),
		NumStreamThreads:                  rapid.IntRange(0, 64).Draw(t, "num.stream.threads"),
		StateStoreCacheMaxBytes:           rapid.Int64Range(-1, 1<<40).Draw(t, "statestore.cache.max.bytes"),
		DSLStoreFormat:                    rapid.SampledFrom([]DSLStoreFormat{"", DSLStoreFormatDefault, DSLStoreFormatHeaders}).Draw(t, "dsl.store.format"),
		AllowStateWithoutCommittedOffsets: rapid.Bool().Draw(t, "allow.state.without.committed.offsets"),
		GlobalProcessingErrors:            rapid.Bool().Draw(t, "processing.exception.handler.global.enabled"),
		Timestamps:                        rapid.SampledFrom([]TimestampPolicy{FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp, WallclockTimestamp}).Draw(t, "default.timestamp.extractor"),
	}
	c.RetryBackoffMax = c.RetryBackoff + ms("retry.backoff.max.ms above retry.backoff.ms", 0, 1<<30)
	if rapid.Bool().Draw(t, "with process.id") {
		c.ProcessID = uuid.UUID(rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "uuid")).String()
	}
	// FromMap leaves unset lists and maps nil.
	if len(c.BootstrapServers) == 0 {
		c.BootstrapServers = nil
	}
	if len(c.ClientTags) == 0 {
		c.ClientTags = nil
	}
	if len(c.User) == 0 {
		c.User = nil
	}
	return c
}

// TestConfigRoundTripsThroughProperties: Config → properties text → FromProperties gives the same
// Config, whatever the layout of the file, and keys left out take their defaults.
func TestConfigRoundTripsThroughProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genConfig(t)
		if err := c.Validate(); err != nil {
			t.Fatalf("the generator drew an invalid config: %v", err)
		}
		m := propertiesOf(c)
		// A key at its default may be left out.
		def := Default("")
		for k, v := range propertiesOf(def) {
			if m[k] == v && rapid.Bool().Draw(t, "leave out "+k) {
				delete(m, k)
			}
		}
		text := writeProperties(m, drawStyle(t))
		got, err := FromProperties(strings.NewReader(text))
		if err != nil {
			t.Fatalf("FromProperties(%q): %v", text, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("written as\n%q\nread back as\n%+v\nwant\n%+v", text, got, c)
		}
	})
}

func TestWriterStylesAgree(t *testing.T) {
	m := map[string]string{"a b": " lead", "k=v:w": "trail \t", "#c": "!x", "é😀": "\\\n\r\f", "e": ""}
	for _, st := range styles {
		text := writeProperties(m, st)
		if got := parse(t, text); !reflect.DeepEqual(got, m) {
			t.Errorf("style %+v:\n%q\nread back as %q", st, text, got)
		}
	}
}
