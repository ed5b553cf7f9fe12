package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// FromMap builds a Config from Kafka-style keys, starting from Default. Every key is checked; the
// returned *Error lists each unknown key, each value of the wrong type and each value out of range.
func FromMap(m map[string]string) (Config, error) {
	c := Default("")
	var p problems
	durations := map[string]*time.Duration{
		KeyTaskOffsetInterval: &c.TaskOffsetInterval,
		KeyMaxPollInterval:    &c.MaxPollInterval,
		KeyRetryBackoff:       &c.RetryBackoff,
		KeyRetryBackoffMax:    &c.RetryBackoffMax,
		KeyRequestTimeout:     &c.RequestTimeout,
	}
	strs := map[string]*string{
		KeyApplicationID:     &c.ApplicationID,
		KeyProcessID:         &c.ProcessID,
		KeyGroupInstanceID:   &c.GroupInstanceID,
		KeyClientRack:        &c.ClientRack,
		KeyApplicationServer: &c.ApplicationServer,
		KeyStateDir:          &c.StateDir,
	}
	for key, raw := range m {
		val := strings.TrimSpace(raw)
		switch {
		case durations[key] != nil:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				p.add(key, raw, "not a whole number of milliseconds")
				continue
			}
			if n > math.MaxInt64/int64(time.Millisecond) || n < math.MinInt64/int64(time.Millisecond) {
				p.add(key, raw, "out of range")
				continue
			}
			*durations[key] = time.Duration(n) * time.Millisecond
		case strs[key] != nil:
			if val == "" && key != KeyStateDir {
				p.add(key, raw, "must not be empty (leave the key out instead)")
				continue
			}
			*strs[key] = val
		case key == KeyTopologyEpoch:
			n, err := strconv.ParseInt(val, 10, 32)
			if err != nil {
				p.add(key, raw, "not a 32-bit whole number")
				continue
			}
			c.TopologyEpoch = int32(n)
		case key == KeyBootstrapServers:
			for _, s := range strings.Split(val, ",") {
				if s = strings.TrimSpace(s); s != "" {
					c.BootstrapServers = append(c.BootstrapServers, s)
				}
			}
			if len(c.BootstrapServers) == 0 {
				p.add(key, raw, "no host:port given")
			}
		case strings.HasPrefix(key, PrefixClientTag):
			tag := strings.TrimPrefix(key, PrefixClientTag)
			if tag == "" {
				p.add(key, raw, "client tag key is empty")
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
			p.add(key, raw, "unknown key (keys for the application's own use start with %q)", PrefixUser)
		}
	}
	c.validate(&p)
	return c, dedupe(&p).err()
}

// dedupe drops a range complaint about a key that already failed to parse.
func dedupe(p *problems) *problems {
	seen := make(map[string]bool)
	var out problems
	for _, k := range p.keys {
		if seen[k.Key] {
			continue
		}
		seen[k.Key] = true
		out.keys = append(out.keys, k)
	}
	return &out
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

// SyntaxError is a properties file that cannot be read.
type SyntaxError struct {
	Line   int
	Reason string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("properties line %d: %s", e.Line, e.Reason) }

// ParseProperties reads the java.util.Properties text format: lines end at "\n", "\r\n" or "\r";
// one key and value per logical line, separated by '=', ':' or white space; '#' or '!' start a
// comment line; a line ending in an odd number of backslashes continues on the next; \t \n \r \f
// \uXXXX and \<char> escapes in keys and values, a character outside the BMP being the \u escapes
// of its UTF-16 surrogate pair (a lone surrogate, which a Go string cannot hold, reads as U+FFFD). A
// later duplicate key wins, as in Java. The text is read as UTF-8 (Java's load(InputStream) reads
// ISO 8859-1; load(Reader) matches this). Invalid escapes are a *SyntaxError.
func ParseProperties(r io.Reader) (map[string]string, error) {
	out := make(map[string]string)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
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
		return nil, &SyntaxError{Line: lineNo + 1, Reason: err.Error()}
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
		return &SyntaxError{Line: lineNo, Reason: fmt.Sprintf("value of %q: %v", key, err)}
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
