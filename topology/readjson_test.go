package topology

import (
	"errors"
	"strings"
	"testing"
)

// ReadJSON's refusals (issue 10 §1 and §3): the kind, the place (line, column, path), the field,
// and words the message must carry. Lines and columns were counted by hand in the inputs.
func TestReadJSONRefusals(t *testing.T) {
	const ok = `{"subtopologies": [{"id": "0", "sourceTopics": ["in"]}]}`
	cases := []struct {
		name         string
		in           string
		kind         error
		line, column int
		path, field  string
		text         string
	}{
		{"empty", "", ErrJSONEmpty, 0, 0, "", "", "is empty"},
		{"white space only", " \n\t\n", ErrJSONEmpty, 0, 0, "", "", "4 bytes of white space"},
		{"trailing garbage", ok + " xyz", ErrJSONTrailing, 1, 58, "", "", "unexpected character 'x' (U+0078)"},
		{"a second topology", ok + "\n" + ok, ErrJSONTrailing, 2, 1, "", "", "found an object"},
		{"a second value", ok + " 7", ErrJSONTrailing, 1, 58, "", "", "found the number 7"},
		{"unknown field", `{"subtopologies": [{"id": "0", "sourceTopic": ["x"]}]}`, ErrJSONUnknownField, 1, 32,
			"subtopologies[0]", "sourceTopic", `unknown field "sourceTopic": did you mean "sourceTopics"?`},
		{"field in the wrong case", `{"subtopologies": [{"ID": "0"}]}`, ErrJSONUnknownField, 1, 21,
			"subtopologies[0]", "ID", `did you mean "id"?`},
		{"unknown top-level field", `{"subtopologies": [], "epoch": 3}`, ErrJSONUnknownField, 1, 23, "", "epoch", "this object has subtopologies"},
		{"field given twice", `{"subtopologies": [{"id": "0", "id": "1"}]}`, ErrJSONDuplicateField, 1, 32, "subtopologies[0]", "id", `field given twice "id"`},
		{"config given twice", `{"subtopologies": [{"id": "0", "stateChangelogTopics": [{"name": "c", "configs": {"a": "1", "a": "2"}}]}]}`,
			ErrJSONDuplicateField, 1, 93, "subtopologies[0].stateChangelogTopics[0].configs", "a", ""},
		{"syntax error on line 2", "{\"subtopologies\": [\n  {\"id\": \"0\" \"sourceTopics\": []}]}", ErrJSONSyntax, 2, 14,
			"subtopologies[0]", "", "after object key:value pair"},
		{"not closed", `{"subtopologies": [{"id": "0"}`, ErrJSONSyntax, 1, 31, "subtopologies", "", "not closed"},
		{"a list where a string goes", `{"subtopologies": [{"id": ["0"]}]}`, ErrJSONType, 1, 27, "subtopologies[0].id", "", "want a string, found a list"},
		{"a string where a list goes", `{"subtopologies": [{"id": "0", "sourceTopics": "in"}]}`, ErrJSONType, 1, 48,
			"subtopologies[0].sourceTopics", "", `want a list, found the string "in"`},
		{"not an object", `[1, 2]`, ErrJSONType, 1, 1, "", "", "want the topology object"},
		{"partitions out of int32", `{"subtopologies": [{"id": "1", "repartitionSourceTopics": [{"name": "r", "partitions": 4294967299}]}]}`,
			ErrJSONNumber, 1, 88, "subtopologies[0].repartitionSourceTopics[0].partitions", "", "4294967299 is out of range (-2147483648 to 2147483647)"},
		{"replication factor out of int16", `{"subtopologies": [{"id": "1", "stateChangelogTopics": [{"name": "c", "replicationFactor": 40000}]}]}`,
			ErrJSONNumber, 1, 92, "subtopologies[0].stateChangelogTopics[0].replicationFactor", "", "(-32768 to 32767)"},
		{"a fraction", `{"subtopologies": [{"id": "1", "repartitionSourceTopics": [{"name": "r", "partitions": 2.5}]}]}`,
			ErrJSONNumber, 1, 88, "subtopologies[0].repartitionSourceTopics[0].partitions", "", "2.5 is not an integer"},
		{"non-ASCII outside a string", "{\"subtopologies\": [ö]}", ErrJSONSyntax, 1, 20, "subtopologies[0]", "", "unexpected character 'ö' (U+00F6)"},
		{"a raw NUL byte", "{\"subtopologies\": [\x00]}", ErrJSONSyntax, 1, 20, "subtopologies[0]", "", `'\x00' (U+0000)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(c.in))
			var je *JSONError
			if !errors.As(err, &je) || !errors.Is(err, c.kind) {
				t.Fatalf("ReadJSON = %v (%T), want a *JSONError of kind %v", err, err, c.kind)
			}
			if je.Line != c.line || je.Column != c.column || je.Path != c.path || je.Field != c.field {
				t.Errorf("at line %d column %d path %q field %q, want line %d column %d path %q field %q (%v)",
					je.Line, je.Column, je.Path, je.Field, c.line, c.column, c.path, c.field, err)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("message %q does not say %q", err, c.text)
			}
			if strings.ContainsRune(err.Error(), 0) {
				t.Errorf("message carries a raw NUL byte: %q", err)
			}
		})
	}
}

// Values from the input are cut in messages: a 1 MiB field name, number or trailing value does not
// make a 1 MiB message.
func TestReadJSONMessagesAreShort(t *testing.T) {
	huge := strings.Repeat("k", 1<<20)
	for name, in := range map[string]string{
		"field name": `{"subtopologies": [{"` + huge + `": 1}]}`,
		"number":     `{"subtopologies": [{"id": "1", "repartitionSourceTopics": [{"name": "r", "partitions": 1` + strings.Repeat("0", 1<<20) + `}]}]}`,
		"value":      `{"subtopologies": [{"id": "1", "sourceTopics": [{"` + huge + `": 1}]}]}`,
		"topic":      `{"subtopologies": [{"id": "1", "sourceTopics": ["` + huge + `"]}]}`,
		"config key": `{"subtopologies": [{"id": "1", "stateChangelogTopics": [{"name": "c", "configs": {"` + huge + `": 5}}]}]}`,
	} {
		_, err := ReadJSON(strings.NewReader(in))
		if err == nil || len(err.Error()) > 2000 {
			t.Errorf("%s: %d-byte message: %.200q", name, len(err.Error()), err)
		}
	}
}

// What ReadJSON accepts besides the plain form: null for empty lists and maps, a byte order mark,
// white space around the object.
func TestReadJSONAccepts(t *testing.T) {
	for name, in := range map[string]string{
		"nulls":           `{"subtopologies": [{"id": "0", "sourceTopics": ["in"], "repartitionSinkTopics": null, "copartitionGroups": null, "stateChangelogTopics": [{"name": "c", "configs": null}]}]}`,
		"byte order mark": "\ufeff" + `{"subtopologies": [{"id": "0", "sourceTopics": ["in"]}]}`,
		"white space":     "\n\n  " + `{"subtopologies": [{"id": "0", "sourceTopics": ["in"]}]}` + "\n\n",
	} {
		topo, err := ReadJSON(strings.NewReader(in))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s, _ := topo.Subtopology("0"); len(s.SourceTopics) != 1 || s.SourceTopics[0] != "in" {
			t.Errorf("%s: read %+v", name, s)
		}
	}
	// A BOM moves no column: the error after it is counted from the first character after it.
	_, err := ReadJSON(strings.NewReader("\ufeff{\"x\": 1}"))
	var je *JSONError
	if !errors.As(err, &je) || je.Line != 1 || je.Column != 3 {
		t.Errorf("after a BOM: %v", err)
	}
}

// FuzzReadJSON: any input gives a topology, a *JSONError or a *ValidationError (never a panic or an
// untyped error), every message is short and without raw NUL bytes, and a topology read back from
// its own JSON is the same.
func FuzzReadJSON(f *testing.F) {
	f.Add(`{"subtopologies": [{"id": "0", "sourceTopics": ["in"]}]}`)
	f.Add(`{"subtopologies": [{"id": "1", "repartitionSourceTopics": [{"name": "r", "partitions": 3, "configs": {"a": "b"}}], "copartitionGroups": [["r", "x"]], "sourceTopics": ["x"]}]}`)
	f.Add("{\"subtopologies\": [\x00]} {}")
	f.Add(`{"subtopologies": null}`)
	f.Fuzz(func(t *testing.T, in string) {
		topo, err := ReadJSON(strings.NewReader(in))
		if err != nil {
			var je *JSONError
			var ve *ValidationError
			if !errors.As(err, &je) && !errors.As(err, &ve) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if msg := err.Error(); strings.ContainsRune(msg, 0) || len(msg) > 64*1024 {
				t.Fatalf("message of %d bytes or with a NUL: %.200q", len(msg), msg)
			}
			return
		}
		b, err := topo.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(strings.NewReader(string(b)))
		if err != nil || !back.Equal(topo) {
			t.Fatalf("round trip of %s: %v", b, err)
		}
	})
}
