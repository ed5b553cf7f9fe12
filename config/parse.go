package config

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/streamsgroup/streamsgroup/internal/hostport"
	"github.com/streamsgroup/streamsgroup/internal/text"
)

// FromMap builds a Config from Kafka-style keys, starting from Default. Every key is checked; the
// returned *Error lists each unknown key (saying what to do about it: a broker-side group config, a
// setting of the Kafka client, a likely typo), each value of the wrong type and each value out of
// range, one problem per key.
//
// Values are read as Kafka's ConfigDef reads them: trimmed; INT keys (max.poll.interval.ms,
// request.timeout.ms) up to 2147483647; LONG keys (retry.backoff.ms, retry.backoff.max.ms,
// task.offset.interval.ms) up to Long.MAX_VALUE, a value above 9223372036854 ms (292 years, the
// most a time.Duration holds) counting as that. An empty client.rack, application.server or
// state.dir is the same as leaving the key out, as in Kafka.
func FromMap(m map[string]string) (Config, error) {
	c := Default("")
	var p problems
	longs := map[string]*time.Duration{
		KeyTaskOffsetInterval: &c.TaskOffsetInterval,
		KeyRetryBackoff:       &c.RetryBackoff,
		KeyRetryBackoffMax:    &c.RetryBackoffMax,
	}
	ints := map[string]*time.Duration{
		KeyMaxPollInterval: &c.MaxPollInterval,
		KeyRequestTimeout:  &c.RequestTimeout,
	}
	strs := map[string]*string{
		KeyApplicationID:     &c.ApplicationID,
		KeyProcessID:         &c.ProcessID,
		KeyGroupInstanceID:   &c.GroupInstanceID,
		KeyClientRack:        &c.ClientRack,
		KeyApplicationServer: &c.ApplicationServer,
		KeyStateDir:          &c.StateDir,
		KeyClientID:          &c.ClientID,
	}
	c.Security = parseSecurity(m, &p)
	for key, raw := range m {
		val := strings.TrimSpace(raw)
		switch {
		case IsSecurityKey(key):
			// read above, by parseSecurity
		case key == KeyTransactionTimeout && m[KeyProducerTransactionTimeout] != "",
			key == KeyDeliveryTimeout && m[KeyProducerDeliveryTimeout] != "",
			key == KeyCompressionType && m[KeyProducerCompressionType] != "",
			key == KeyCacheMaxBytesBuffering && m[KeyStateStoreCacheMaxBytes] != "":
			// the producer. key (the newer name) wins, as in Kafka Streams (read in its own turn)
		case isRuntimeKey(key):
			parseRuntime(&c, key, raw, &p)
		case longs[key] != nil:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				p.add(key, raw, "%s", numberReason(err, "LONG", math.MaxInt64))
				continue
			}
			*longs[key] = time.Duration(min(max(n, -maxMillis), maxMillis)) * time.Millisecond
		case ints[key] != nil:
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				p.add(key, raw, "%s", numberReason(err, "INT", math.MaxInt32))
				continue
			}
			*ints[key] = time.Duration(n) * time.Millisecond
		case strs[key] != nil:
			if val == "" {
				switch key {
				case KeyApplicationID:
					p.add(key, raw, appIDRequired)
					continue
				case KeyProcessID:
					p.add(key, raw, "is empty: leave the key out to get a generated process ID (kept in state.dir when that is set)")
					continue
				case KeyGroupInstanceID:
					p.add(key, raw, "%s", instanceIDReason(""))
					continue
				}
			}
			*strs[key] = val
		case key == KeyTopologyEpoch:
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				p.add(key, raw, "not a whole number between 0 and %d", math.MaxInt32)
				continue
			}
			c.TopologyEpoch = int32(n)
		case key == KeyReplicationFactor:
			n, err := strconv.ParseInt(val, 10, 16)
			if err != nil || n < -1 {
				p.add(key, raw, "%s", replicationReason)
				continue
			}
			// 0 is the broker's default too (the heartbeat's field says so, and Kafka Streams sends it).
			c.ReplicationFactor = int16(cmp.Or(n, -1))
		case key == KeyBootstrapServers:
			c.BootstrapServers = hostport.Split(val)
			if len(c.BootstrapServers) == 0 {
				p.add(key, raw, "no host:port given")
			}
		case key == KeyGroupProtocol:
			if !strings.EqualFold(val, "streams") {
				p.add(key, raw, "this library speaks only the streams rebalance protocol: set group.protocol=streams or leave the key out")
			}
		case strings.HasPrefix(key, PrefixClientTag):
			tag := strings.TrimPrefix(key, PrefixClientTag)
			if tag == "" {
				p.add(key, raw, "client tag key is empty: write client.tag.<key>=<value>")
				continue
			}
			if c.ClientTags == nil {
				c.ClientTags = make(map[string]string)
			}
			c.ClientTags[tag] = val
		case strings.HasPrefix(key, PrefixUser):
			if c.User == nil {
				c.User = make(map[string]string)
			}
			c.User[key] = raw
		default:
			p.add(key, raw, "%s", unknownKeyReason(key))
		}
	}
	if _, set := m[KeyCommitInterval]; !set && c.Runtime.Guarantee == ExactlyOnceV2 {
		c.Runtime.CommitInterval = DefaultCommitIntervalEOS
	}
	var v problems
	c.validate(&v)
	p.keys = append(p.keys, onePerKey(v.keys, p.keys, m)...)
	return c, p.err()
}

// maxMillis is the most milliseconds a time.Duration holds.
const maxMillis = math.MaxInt64 / int64(time.Millisecond)

// numberReason says why val is not a number of Kafka's type typ (INT or LONG) of milliseconds.
func numberReason(err error, typ string, most int64) string {
	article := map[string]string{"INT": "an", "LONG": "a"}[typ]
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("out of range: Kafka reads it as %s %s, from %d to %d", article, typ, -most-1, most)
	}
	return fmt.Sprintf("not a whole number of milliseconds (Kafka reads it as %s %s)", article, typ)
}

// onePerKey turns Validate's problems into FromMap's: none for a key that already failed to parse,
// the raw value of the key as written, and the problems of one key (several bad bootstrap servers)
// merged into one.
func onePerKey(validated, parsed []KeyError, m map[string]string) []KeyError {
	failed := make(map[string]bool, len(parsed))
	for _, k := range parsed {
		failed[k.Key] = true
	}
	var out []KeyError
	at := map[string]int{}
	extra := map[string]int{} // problems merged into the first of their key
	for _, k := range validated {
		if failed[k.Key] {
			continue
		}
		if i, ok := at[k.Key]; ok {
			if extra[k.Key]++; extra[k.Key] < MaxListedProblems {
				out[i].Reason += "; " + text.Quote(k.Value) + ": " + k.Reason
			}
			continue
		}
		if raw, ok := m[k.Key]; ok && !secretKeys[k.Key] {
			if k.Key == KeyBootstrapServers {
				k.Reason = text.Quote(k.Value) + ": " + k.Reason
			}
			k.Value = raw
		}
		at[k.Key] = len(out)
		out = append(out, k)
	}
	for key, n := range extra {
		if n >= MaxListedProblems {
			out[at[key]].Reason += fmt.Sprintf("; and %d more", n-MaxListedProblems+1)
		}
	}
	return out
}

// FromProperties reads a Java-style properties file (see ParseProperties) and builds a Config from
// it as FromMap does.
func FromProperties(r io.Reader) (Config, error) {
	m, err := ParseProperties(r)
	if err != nil {
		return Config{}, err
	}
	return FromMap(m)
}

// SyntaxError is a properties file that cannot be read: a malformed escape, a line longer than
// MaxLineBytes, or a failure of the reader (Err).
type SyntaxError struct {
	Line   int
	Reason string
	Err    error // the reader's error, if that is the cause
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("properties line %d: %s", e.Line, e.Reason) }

// Unwrap returns the reader's error, if any.
func (e *SyntaxError) Unwrap() error { return e.Err }

// MaxLineBytes is the longest physical line ParseProperties reads (Java's Properties has no limit;
// one is kept so that a binary file given by mistake is refused rather than read whole).
const MaxLineBytes = 16 << 20

// ParseProperties reads the java.util.Properties text format: lines end at "\n", "\r\n" or "\r";
// one key and value per logical line, separated by '=', ':' or white space; '#' or '!' start a
// comment line; a line ending in an odd number of backslashes continues on the next; \t \n \r \f
// \uXXXX and \<char> escapes in keys and values, a character outside the BMP being the \u escapes
// of its UTF-16 surrogate pair (a lone surrogate, which a Go string cannot hold, reads as U+FFFD). A
// later duplicate key wins, as in Java. The text is read as UTF-8 (Java's load(InputStream) reads
// ISO 8859-1; load(Reader) matches this). Invalid escapes and lines longer than MaxLineBytes are a
// *SyntaxError naming the line.
func ParseProperties(r io.Reader) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLineBytes+2) // room for the line end
	sc.Split(scanJavaLines)
	lineNo := 0
	var logical strings.Builder
	start := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = lineNo
		}
		if trailingBackslashes(line)%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		if err := parseLogical(logical.String(), start, out); err != nil {
			return nil, err
		}
		logical.Reset()
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &SyntaxError{Line: lineNo + 1, Reason: fmt.Sprintf("longer than %d MiB, the most one line may be (is this a properties file?)", MaxLineBytes>>20)}
		}
		return nil, &SyntaxError{Line: lineNo + 1, Reason: fmt.Sprintf("reading: %v", err), Err: err}
	}
	if logical.Len() > 0 {
		if err := parseLogical(logical.String(), start, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanJavaLines is bufio.ScanLines with Java's line ends: "\n", "\r\n" and a lone "\r".
func scanJavaLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		if atEOF && len(data) > 0 {
			return len(data), data, nil // the last line has no line end
		}
		return 0, nil, nil
	}
	if data[i] == '\n' {
		return i + 1, data[:i], nil
	}
	if i+1 == len(data) && !atEOF {
		return 0, nil, nil // a '\r' at the end of the data: wait for what follows
	}
	if i+1 < len(data) && data[i+1] == '\n' {
		return i + 2, data[:i], nil
	}
	return i + 1, data[:i], nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func parseLogical(line string, lineNo int, out map[string]string) error {
	// The key ends at the first unescaped '=', ':' or white space.
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rawKey := line[:end]
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(rawKey)
	if err != nil {
		return &SyntaxError{Line: lineNo, Reason: fmt.Sprintf("key: %v", err)}
	}
	val, err := unescape(rest)
	if err != nil {
		return &SyntaxError{Line: lineNo, Reason: fmt.Sprintf("value of %s: %v", text.Quote(key), err)}
	}
	out[key] = val
	return nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, err := hex4(s[i+1:])
			if err != nil {
				return "", err
			}
			i += 4
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				if lo, err := hex4(s[i+3:]); err == nil {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						r = pair
						i += 6
					}
				}
			}
			b.WriteRune(r) // a lone surrogate is written as U+FFFD
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// hex4 reads the four hex digits of a \u escape at the start of s.
func hex4(s string) (rune, error) {
	if len(s) < 4 {
		return 0, fmt.Errorf(`incomplete \u escape`)
	}
	n, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil {
		return 0, fmt.Errorf(`malformed \u escape %q`, s[:4])
	}
	return rune(n), nil
}
