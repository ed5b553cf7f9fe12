package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Kinds of problems ReadJSON finds in a document before it is a topology. Each is wrapped by a
// *JSONError that says where.
var (
	// ErrJSONEmpty: the document is empty or only white space.
	ErrJSONEmpty = errors.New("the topology JSON is empty: it needs one object, {\"subtopologies\": [...]}")
	// ErrJSONSyntax: the document is not JSON.
	ErrJSONSyntax = errors.New("not valid JSON")
	// ErrJSONUnknownField: an object has a field the format does not have (a typo must not pass
	// unseen). JSONError.Field names it.
	ErrJSONUnknownField = errors.New("unknown field")
	// ErrJSONDuplicateField: an object has the same field twice. JSONError.Field names it.
	ErrJSONDuplicateField = errors.New("field given twice")
	// ErrJSONType: a value of the wrong type (a string where a list is expected, …).
	ErrJSONType = errors.New("wrong type")
	// ErrJSONNumber: a number that is not an integer or out of range for its field.
	ErrJSONNumber = errors.New("number not allowed here")
	// ErrJSONTrailing: more after the topology (garbage, or a second topology).
	ErrJSONTrailing = errors.New("more after the topology: a file holds exactly one topology object")
)

// JSONError is a problem at one place of a topology JSON document.
type JSONError struct {
	// Line and Column (both from 1; the column counts characters) of where the problem starts; 0
	// when it has no place (an empty document).
	Line, Column int
	// Offset is the byte offset of the same place.
	Offset int64
	// Path is where in the topology, e.g. "subtopologies[1].repartitionSourceTopics[0].partitions";
	// empty at the top level.
	Path string
	// Field is the field name for ErrJSONUnknownField and ErrJSONDuplicateField.
	Field string
	// Err is one of the ErrJSON… kinds.
	Err error
	// Detail says more, in words.
	Detail string
}

func (e *JSONError) Error() string {
	var b strings.Builder
	b.WriteString("topology JSON")
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d, column %d", e.Line, e.Column)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " (at %s)", e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Field != "" {
		fmt.Fprintf(&b, " %s", quote(e.Field))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the kind, so errors.Is(err, topology.ErrJSONUnknownField) works.
func (e *JSONError) Unwrap() error { return e.Err }

// ReadJSON reads one topology in its JSON form:
//
//	{"subtopologies": [{"id": "0", "sourceTopics": ["in"], "repartitionSinkTopics": [...],
//	  "repartitionSourceTopics": [{"name": "...", "partitions": 0, "replicationFactor": -1,
//	  "configs": {...}}], "stateChangelogTopics": [...], "copartitionGroups": [["a", "b"]]}]}
//
// It is strict: field names are matched exactly (case included), an unknown or repeated field is an
// error, and so is anything after the topology object (a second topology, garbage). null stands for
// an empty list or map. A byte order mark at the start is skipped. Problems in the document are a
// *JSONError naming line, column and path; the topology read is then validated as by New (a
// *ValidationError).
func ReadJSON(r io.Reader) (*Topology, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the topology JSON: %w", err)
	}
	subs, err := parseTopologyJSON(data)
	if err != nil {
		return nil, err
	}
	return New(subs...)
}

// jsonReader walks the tokens of one document, keeping track of where they start.
type jsonReader struct {
	data []byte
	base int64 // bytes skipped at the start (a byte order mark)
	dec  *json.Decoder
}

func parseTopologyJSON(data []byte) ([]Subtopology, error) {
	jr := &jsonReader{data: data}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		jr.base = 3
	}
	if len(bytes.TrimSpace(data[jr.base:])) == 0 {
		return nil, &JSONError{Err: ErrJSONEmpty, Detail: fmt.Sprintf("%d bytes of white space", len(data))}
	}
	jr.dec = json.NewDecoder(bytes.NewReader(data[jr.base:]))
	jr.dec.UseNumber()

	var subs []Subtopology
	err := jr.object("", map[string]func(path string) error{
		"subtopologies": func(path string) error {
			return jr.array(path, func(path string) error {
				s, err := jr.subtopology(path)
				subs = append(subs, s)
				return err
			})
		},
	}, true)
	if err != nil {
		return nil, err
	}
	prev, start := jr.dec.InputOffset(), jr.start()
	tok, err := jr.dec.Token()
	switch {
	case err == io.EOF:
		return subs, nil
	case err != nil:
		return nil, jr.errAt(start, "", ErrJSONTrailing, jr.syntaxDetail(prev, err))
	default:
		return nil, jr.errAt(start, "", ErrJSONTrailing, "found "+describeToken(tok))
	}
}

// start is the offset (in the decoder's input) where the next token begins: after white space and
// the separators the decoder consumes with it.
func (jr *jsonReader) start() int64 {
	off := jr.dec.InputOffset()
	in := jr.data[jr.base:]
	for off < int64(len(in)) {
		switch in[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

// errAt makes a *JSONError at the decoder-input offset off.
func (jr *jsonReader) errAt(off int64, path string, kind error, detail string) *JSONError {
	abs := off + jr.base
	if abs > int64(len(jr.data)) {
		abs = int64(len(jr.data))
	}
	line, col := 1, 1
	for _, r := range string(jr.data[:abs]) {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &JSONError{Line: line, Column: col, Offset: abs, Path: path, Err: kind, Detail: detail}
}

// token reads the next token; a syntax error becomes a *JSONError at its place.
func (jr *jsonReader) token(path string) (json.Token, int64, error) {
	prev, start := jr.dec.InputOffset(), jr.start()
	tok, err := jr.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, start, jr.errAt(jr.badChar(prev, se), path, ErrJSONSyntax, jr.syntaxDetail(prev, err))
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, start, jr.errAt(int64(len(jr.data)-int(jr.base)), path, ErrJSONSyntax,
				"the document ends inside a value (an object or list is not closed)")
		default:
			return nil, start, jr.errAt(start, path, ErrJSONSyntax, err.Error())
		}
	}
	return tok, start, nil
}

// badChar finds the offset of the character a syntax error names ("invalid character 'x' …"): the
// first such byte from prev, where the failing token began. (The decoder's own offsets count from
// different places depending on where it failed.) Without a named character it is the error's
// offset.
func (jr *jsonReader) badChar(prev int64, se *json.SyntaxError) int64 {
	in := jr.data[jr.base:]
	if c, ok := namedChar(se.Error()); ok {
		if i := bytes.IndexByte(in[min(prev, int64(len(in))):], c); i >= 0 {
			return prev + int64(i)
		}
	}
	return max(se.Offset-1, 0)
}

// namedChar finds the byte a decoder syntax message names after "invalid character ".
func namedChar(msg string) (byte, bool) {
	rest, ok := strings.CutPrefix(msg, "invalid character ")
	if !ok {
		return 0, false
	}
	for c := 0; c < 256; c++ {
		if strings.HasPrefix(rest, jsonQuoteChar(byte(c))+" ") {
			return byte(c), true
		}
	}
	return 0, false
}

// syntaxDetail rewrites a decoder syntax error so the character is named as a rune with its code
// point (encoding/json names the first byte of a multi-byte character as if it were Latin-1).
func (jr *jsonReader) syntaxDetail(prev int64, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return cut(err.Error())
	}
	msg := se.Error()
	in := jr.data[jr.base:]
	if c, ok := namedChar(msg); ok {
		i := jr.badChar(prev, se)
		if i < int64(len(in)) && in[i] == c {
			s := string(in[i:min(i+utf8.UTFMax, int64(len(in)))])
			r, _ := utf8.DecodeRuneInString(s)
			return fmt.Sprintf("unexpected %s %s", describeRune(s, 0, r), strings.TrimPrefix(msg, "invalid character "+jsonQuoteChar(c)+" "))
		}
	}
	return cut(msg)
}

// jsonQuoteChar is how encoding/json quotes a byte in its syntax errors.
func jsonQuoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// cut shortens text from the input (numbers, messages) for a message, as quote does, unquoted.
func cut(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := maxQuoted
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", strings.ToValidUTF8(s[:n], "\ufffd"), len(s))
}

// describeToken names a token for a message.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return "the number " + cut(string(v))
	case string:
		return "the string " + quote(v)
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "a list"
		}
		return fmt.Sprintf("%q", rune(v))
	}
	return fmt.Sprintf("%T", tok)
}

// object reads an object whose fields are read by the given functions. null stands for an empty
// object, except at the top, where the topology object itself is expected.
func (jr *jsonReader) object(path string, fields map[string]func(path string) error, top bool) error {
	tok, start, err := jr.token(path)
	if err != nil {
		return err
	}
	if tok == nil && !top {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		what := "an object"
		if top {
			what = `the topology object, {"subtopologies": [...]}`
		}
		return jr.errAt(start, path, ErrJSONType, "want "+what+", found "+describeToken(tok))
	}
	seen := make(map[string]bool)
	for jr.dec.More() {
		tok, start, err := jr.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string) // inside an object the decoder returns keys as strings
		if seen[key] {
			e := jr.errAt(start, path, ErrJSONDuplicateField, "")
			e.Field = key
			return e
		}
		seen[key] = true
		read, ok := fields[key]
		if !ok {
			e := jr.errAt(start, path, ErrJSONUnknownField, knownFields(key, fields))
			e.Field = key
			return e
		}
		if err := read(joinPath(path, key)); err != nil {
			return err
		}
	}
	_, _, err = jr.token(path) // the closing brace
	return err
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// knownFields lists the fields an object may have, with a suggestion when key is close to one.
func knownFields(key string, fields map[string]func(string) error) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	msg := "this object has " + strings.Join(names, ", ")
	for _, n := range names {
		if strings.EqualFold(n, key) || (len(key) < 64 && text.EditDistance(n, key) <= 2) {
			return fmt.Sprintf("did you mean %q? (%s)", n, msg)
		}
	}
	return msg
}

// array reads a list, calling elem for each element (null is an empty list).
func (jr *jsonReader) array(path string, elem func(path string) error) error {
	tok, start, err := jr.token(path)
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return jr.errAt(start, path, ErrJSONType, "want a list, found "+describeToken(tok))
	}
	for i := 0; jr.dec.More(); i++ {
		if err := elem(fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, _, err = jr.token(path) // the closing bracket
	return err
}

// str reads a string (null is the empty string).
func (jr *jsonReader) str(path string) (string, error) {
	tok, start, err := jr.token(path)
	if err != nil {
		return "", err
	}
	switch v := tok.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", jr.errAt(start, path, ErrJSONType, "want a string, found "+describeToken(tok))
}

func (jr *jsonReader) strings(path string, out *[]string) error {
	return jr.array(path, func(path string) error {
		s, err := jr.str(path)
		*out = append(*out, s)
		return err
	})
}

// integer reads an integer of the given bit size (null is 0).
func (jr *jsonReader) integer(path string, bits int) (int64, error) {
	tok, start, err := jr.token(path)
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case nil:
		return 0, nil
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, bits)
		if err == nil {
			return n, nil
		}
		limit := int64(1)<<(bits-1) - 1
		if errors.Is(err, strconv.ErrRange) {
			return 0, jr.errAt(start, path, ErrJSONNumber, fmt.Sprintf("%s is out of range (%d to %d)", cut(string(v)), -limit-1, limit))
		}
		return 0, jr.errAt(start, path, ErrJSONNumber, fmt.Sprintf("%s is not an integer", cut(string(v))))
	}
	return 0, jr.errAt(start, path, ErrJSONType, "want an integer, found "+describeToken(tok))
}

func (jr *jsonReader) subtopology(path string) (Subtopology, error) {
	var s Subtopology
	err := jr.object(path, map[string]func(string) error{
		"id": func(p string) (err error) {
			s.ID, err = jr.str(p)
			return err
		},
		"sourceTopics":          func(p string) error { return jr.strings(p, &s.SourceTopics) },
		"sourceTopicRegexes":    func(p string) error { return jr.strings(p, &s.SourceTopicRegexes) },
		"repartitionSinkTopics": func(p string) error { return jr.strings(p, &s.RepartitionSinkTopics) },
		"repartitionSourceTopics": func(p string) error {
			return jr.array(p, func(p string) error {
				ti, err := jr.topicInfo(p)
				s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, ti)
				return err
			})
		},
		"stateChangelogTopics": func(p string) error {
			return jr.array(p, func(p string) error {
				ti, err := jr.topicInfo(p)
				s.StateChangelogTopics = append(s.StateChangelogTopics, ti)
				return err
			})
		},
		"copartitionGroups": func(p string) error {
			return jr.array(p, func(p string) error {
				var g []string
				err := jr.strings(p, &g)
				s.CopartitionGroups = append(s.CopartitionGroups, g)
				return err
			})
		},
	}, false)
	return s, err
}

func (jr *jsonReader) topicInfo(path string) (TopicInfo, error) {
	var ti TopicInfo
	err := jr.object(path, map[string]func(string) error{
		"name": func(p string) (err error) {
			ti.Name, err = jr.str(p)
			return err
		},
		"partitions": func(p string) error {
			n, err := jr.integer(p, 32)
			ti.Partitions = int32(n)
			return err
		},
		"replicationFactor": func(p string) error {
			n, err := jr.integer(p, 16)
			ti.ReplicationFactor = int16(n)
			return err
		},
		"configs": func(p string) error { return jr.configs(p, &ti) },
	}, false)
	return ti, err
}

// configs reads an object of string values; its keys are the config names.
func (jr *jsonReader) configs(path string, ti *TopicInfo) error {
	tok, start, err := jr.token(path)
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return jr.errAt(start, path, ErrJSONType, "want an object of config names and string values, found "+describeToken(tok))
	}
	for jr.dec.More() {
		tok, start, err := jr.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if _, dup := ti.Configs[key]; dup {
			e := jr.errAt(start, path, ErrJSONDuplicateField, "")
			e.Field = key
			return e
		}
		v, err := jr.str(fmt.Sprintf("%s[%s]", path, quote(key)))
		if err != nil {
			return err
		}
		if ti.Configs == nil {
			ti.Configs = make(map[string]string)
		}
		ti.Configs[key] = v
	}
	_, _, err = jr.token(path)
	return err
}
