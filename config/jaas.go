package config

import (
	"fmt"
	"sort"
	"strings"
)

// JAASEntry is the one login module of a sasl.jaas.config value:
//
//	<login module class> <control flag> (<option>=<value>)* ;
//
// Options holds every option as written, password included, so never print Options itself: String
// shows the option names and hides every value but the user name.
type JAASEntry struct {
	LoginModule string
	ControlFlag string // REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL, upper-cased
	Options     map[string]string
}

// The login modules this package maps to franz-go's SASL mechanisms.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// String renders the entry for a log or a message: the module, the flag, and the options with their
// values hidden, except username.
func (e JAASEntry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.LoginModule, strings.ToLower(e.ControlFlag))
	keys := make([]string, 0, len(e.Options))
	for k := range e.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := hidden
		if k == "username" {
			v = e.Options[k]
		}
		fmt.Fprintf(&b, " %s=%q", k, v)
	}
	b.WriteString(";")
	return b.String()
}

// JAASError is a sasl.jaas.config value that cannot be read. Its text says where (Pos, the 1-based
// character) and what was expected, and never repeats the value: it holds the password.
type JAASError struct {
	Pos    int
	Reason string
}

func (e *JAASError) Error() string {
	if e.Pos > 0 {
		return fmt.Sprintf("at character %d: %s", e.Pos, e.Reason)
	}
	return e.Reason
}

// ParseJAAS reads a sasl.jaas.config value as Kafka's JaasConfig does (java.io.StreamTokenizer with
// Kafka's settings), and requires exactly one login module, as a Kafka client does:
//
//   - bytes up to ' ' are white space; ';' and '=' are tokens of their own;
//   - "…" and '…' quote, with the escapes \a \b \f \n \r \t \v, octal \0 to \377, and \<c> for any
//     other c (so \" and \\); a quote also ends at a line end;
//   - '/' starts a comment: //… and /…/ to the end of the line, /* … */ across lines;
//   - every other character is part of a word, except U+0081 to U+009F, which are tokens of their
//     own (and so cannot stand where a word is needed). A word needs no quotes unless it holds
//     white space, a quote, '/', ';' or '='.
//
// Options given twice keep the last value, as in Kafka. An option with no name (Kafka lets a lone
// control character stand for one) is refused. Errors are *JAASError.
func ParseJAAS(s string) (JAASEntry, error) {
	sc := &jaasScanner{r: []rune(s)}
	var entries []JAASEntry
	for {
		t, err := sc.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if t.kind == tokEOF {
			break
		}
		e, err := parseJAASEntry(sc, t)
		if err != nil {
			return JAASEntry{}, err
		}
		entries = append(entries, e)
	}
	switch len(entries) {
	case 0:
		return JAASEntry{}, &JAASError{Reason: "no login module: write <LoginModule class> required username=\"…\" password=\"…\";"}
	case 1:
		return entries[0], nil
	}
	return JAASEntry{}, &JAASError{Reason: fmt.Sprintf("%d login modules; a Kafka client takes exactly one", len(entries))}
}

// jaasOptionNames are the option names a message may repeat: any other word where a name should be
// may be part of a password written without quotes.
var jaasOptionNames = map[string]bool{"username": true, "password": true, "tokenauth": true, "serviceName": true,
	"user": true, "user_admin": true, "unsecuredLoginStringClaim_sub": true}

func optionName(t jaasToken) string {
	if t.kind == tokWord && jaasOptionNames[t.text] {
		return "the option " + t.text
	}
	return "an option"
}

func parseJAASEntry(sc *jaasScanner, first jaasToken) (JAASEntry, error) {
	if !first.hasText() || first.text == "" {
		return JAASEntry{}, &JAASError{Pos: first.pos, Reason: "expected the login module class name (e.g. " + ScramLoginModule + ")"}
	}
	e := JAASEntry{LoginModule: first.text, Options: map[string]string{}}
	t, err := sc.next()
	if err != nil {
		return JAASEntry{}, err
	}
	if t.kind == tokEOF {
		return JAASEntry{}, &JAASError{Pos: t.pos, Reason: "the control flag is missing after the login module: write required"}
	}
	flag := ""
	if t.hasText() {
		flag = strings.ToUpper(t.text)
	}
	switch flag {
	case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		e.ControlFlag = flag
	default:
		return JAASEntry{}, &JAASError{Pos: t.pos, Reason: "expected a control flag (required, requisite, sufficient or optional) after the login module"}
	}
	for {
		key, err := sc.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if key.kind == tokEOF {
			return JAASEntry{}, &JAASError{Pos: key.pos, Reason: "the login module is not ended by ';'"}
		}
		if key.kind == tokChar && key.text == ";" {
			return e, nil
		}
		if !key.hasText() {
			return JAASEntry{}, &JAASError{Pos: key.pos, Reason: "expected an option name (name=value) or ';'"}
		}
		eq, err := sc.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if eq.kind != tokChar || eq.text != "=" {
			return JAASEntry{}, &JAASError{Pos: key.pos, Reason: optionName(key) + " is not followed by '=' and a value (quote a value that holds spaces, '/', ';' or '=')"}
		}
		val, err := sc.next()
		if err != nil {
			return JAASEntry{}, err
		}
		if !val.hasText() {
			return JAASEntry{}, &JAASError{Pos: key.pos, Reason: optionName(key) + " has no value after '='"}
		}
		e.Options[key.text] = val.text
	}
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokChar // ';', '=' or U+0081..U+009F
)

type jaasToken struct {
	kind tokKind
	text string
	pos  int // 1-based character
}

// hasText is whether StreamTokenizer would give the token an sval: words and quoted strings.
func (t jaasToken) hasText() bool { return t.kind == tokWord || t.kind == tokQuoted }

// jaasScanner is the tokenizer of Kafka's JaasConfig: java.io.StreamTokenizer after resetSyntax,
// wordChars(32, 128), wordChars(160, 255), ordinaryChar ';' and '=', whitespaceChars(0, ' '),
// commentChar('/'), quoteChar '"' and '\”, and both comment styles. Characters from 256 up are word
// characters in StreamTokenizer; Java sees UTF-16 units where this sees runes, which changes nothing
// because both halves of a surrogate pair are word characters.
type jaasScanner struct {
	r []rune
	i int
}

const (
	clsSpace = iota
	clsWord
	clsQuote
	clsComment
	clsOrdinary
)

func jaasClass(c rune) int {
	switch {
	case c <= ' ':
		return clsSpace
	case c == '"' || c == '\'':
		return clsQuote
	case c == '/':
		return clsComment
	case c == ';' || c == '=':
		return clsOrdinary
	case c <= 128 || c >= 160:
		return clsWord
	}
	return clsOrdinary
}

// read returns the next character, or -1 at the end.
func (s *jaasScanner) read() rune {
	if s.i >= len(s.r) {
		s.i++ // reading past the end still moves, so an unread() after it is balanced
		return -1
	}
	c := s.r[s.i]
	s.i++
	return c
}

func (s *jaasScanner) unread() { s.i-- }

// skipLine skips to the end of the line (leaving the line end to be read as white space).
func (s *jaasScanner) skipLine() {
	for {
		c := s.read()
		if c == '\n' || c == '\r' || c < 0 {
			s.unread()
			return
		}
	}
}

func (s *jaasScanner) next() (jaasToken, error) {
	for {
		c := s.read()
		for c >= 0 && jaasClass(c) == clsSpace {
			c = s.read()
		}
		pos := s.i
		if c < 0 {
			return jaasToken{kind: tokEOF, pos: min(pos, len(s.r)+1)}, nil
		}
		switch jaasClass(c) {
		case clsWord:
			start := s.i - 1
			for {
				c = s.read()
				if c < 0 || jaasClass(c) != clsWord {
					s.unread()
					break
				}
			}
			return jaasToken{kind: tokWord, text: string(s.r[start:s.i]), pos: pos}, nil
		case clsQuote:
			return s.quoted(c, pos)
		case clsComment:
			// StreamTokenizer reads the character after '/' first: "/*" opens a block comment, any
			// other character (even a line end) is skipped along with the rest of the line.
			d := s.read()
			if d == '*' {
				if !s.blockComment() {
					return jaasToken{kind: tokEOF, pos: len(s.r) + 1}, nil
				}
				continue
			}
			if d < 0 {
				s.unread()
				continue
			}
			s.skipLine()
			continue
		default:
			return jaasToken{kind: tokChar, text: string(c), pos: pos}, nil
		}
	}
}

// blockComment skips a /* … */ comment as StreamTokenizer does (a character right after a line end
// is never taken as the closing '/'); false when the text ends inside it.
func (s *jaasScanner) blockComment() bool {
	prev := rune(0)
	for {
		c := s.read()
		if c == '/' && prev == '*' {
			return true
		}
		switch c {
		case '\r':
			c = s.read()
			if c == '\n' {
				c = s.read()
			}
		case '\n':
			c = s.read()
		}
		if c < 0 {
			return false
		}
		prev = c
	}
}

// quoted reads a quoted string opened by q at pos (1-based).
func (s *jaasScanner) quoted(q rune, pos int) (jaasToken, error) {
	var b []rune
	for {
		d := s.read()
		switch {
		case d < 0:
			return jaasToken{}, &JAASError{Pos: pos, Reason: fmt.Sprintf("the quote %c opened here is not closed", q)}
		case d == q:
			return jaasToken{kind: tokQuoted, text: string(b), pos: pos}, nil
		case d == '\n' || d == '\r':
			// StreamTokenizer ends a quoted string at a line end, and reads the line end as white space.
			s.unread()
			return jaasToken{kind: tokQuoted, text: string(b), pos: pos}, nil
		case d == '\\':
			c := s.read()
			if c < 0 {
				return jaasToken{}, &JAASError{Pos: pos, Reason: fmt.Sprintf("the quote %c opened here is not closed", q)}
			}
			if c >= '0' && c <= '7' {
				first := c
				v := c - '0'
				if c2 := s.read(); c2 >= '0' && c2 <= '7' {
					v = v<<3 + c2 - '0'
					if c3 := s.read(); c3 >= '0' && c3 <= '7' && first <= '3' {
						v = v<<3 + c3 - '0'
					} else {
						s.unread()
					}
				} else {
					s.unread()
				}
				b = append(b, v)
				continue
			}
			switch c {
			case 'a':
				c = 7
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			}
			b = append(b, c)
		default:
			b = append(b, d)
		}
	}
}

// formatJAAS writes e in the syntax ParseJAAS reads, every value quoted; ParseJAAS(formatJAAS(e))
// gives e back. It reveals the password: it is for tests and for nothing that is shown.
func formatJAAS(e JAASEntry) string {
	var b strings.Builder
	b.WriteString(quoteJAAS(e.LoginModule))
	b.WriteString(" ")
	b.WriteString(strings.ToLower(e.ControlFlag))
	keys := make([]string, 0, len(e.Options))
	for k := range e.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", quoteJAAS(k), quoteJAAS(e.Options[k]))
	}
	b.WriteString(";")
	return b.String()
}

func quoteJAAS(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
