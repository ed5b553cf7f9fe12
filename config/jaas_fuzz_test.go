package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// FuzzJAAS feeds arbitrary text to ParseJAAS: it must not panic; an error is a *JAASError whose
// position lies within the text; a value it reads must read back the same after formatJAAS (an
// independent writer that quotes everything), and String must never show the password.
func FuzzJAAS(f *testing.F) {
	for _, seed := range []string{
		ScramLoginModule + ` required username="alice" password="p w";`,
		PlainLoginModule + " REQUIRED username=bob password='x\\'y\\\\z';",
		"m optional a=\"\\101\\0619\\n\" /* c */ b=c // d\n;",
		"m required a=\"open\n;",
		"m required a/b=1;",
		"/**/ m required; n required;",
		"m \u0085 a=1;",
		"\"m\" \"required\" \"\"=\"\";",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		e, err := ParseJAAS(in)
		if err != nil {
			var je *JAASError
			if !errors.As(err, &je) || je.Pos < 0 || je.Pos > utf8.RuneCountInString(in)+1 || je.Reason == "" {
				t.Fatalf("ParseJAAS(%q): bad error %T %v", in, err, err)
			}
			return
		}
		if e.LoginModule == "" || e.ControlFlag == "" || e.Options == nil {
			t.Fatalf("ParseJAAS(%q) = %+v", in, e)
		}
		text := formatJAAS(e)
		back, err := ParseJAAS(text)
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("ParseJAAS(%q) = %q; written as %q it reads back as %q, %v", in, e, text, back, err)
		}
		if pw := e.Options["password"]; len(pw) >= 4 && !strings.Contains(e.LoginModule+e.Options["username"], pw) &&
			!strings.Contains("required requisite sufficient optional [hidden]", pw) && strings.Contains(e.String(), pw) {
			keys := ""
			for k := range e.Options {
				keys += k
			}
			if !strings.Contains(keys, pw) {
				t.Fatalf("String() shows the password: %s", e.String())
			}
		}
	})
}

// TestJAASRoundTrip: any entry formatJAAS writes, whatever its characters, ParseJAAS reads back.
func TestJAASRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := JAASEntry{
			LoginModule: rapid.StringMatching(`.+`).Draw(t, "module"),
			ControlFlag: rapid.SampledFrom([]string{"REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL"}).Draw(t, "flag"),
			Options:     rapid.MapOf(rapid.String(), rapid.String()).Draw(t, "options"),
		}
		back, err := ParseJAAS(formatJAAS(e))
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("%q reads back as %q, %v", formatJAAS(e), back, err)
		}
	})
}
