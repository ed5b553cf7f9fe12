package store_test

import (
	"bytes"
	"testing"

	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// PrefixEnd is the exclusive upper bound of a prefix scan: the prefix with its last byte below 0xff
// incremented and what follows dropped; none for a prefix of 0xff bytes only, or an empty one.
func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ prefix, want []byte }{
		{[]byte("ab"), []byte("ac")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xfe\xff\xff"), []byte("a\xff")},
		{[]byte{0}, []byte{1}},
		{[]byte("\xff\xff"), nil},
		{[]byte{}, nil},
		{nil, nil},
	} {
		in := bytes.Clone(tc.prefix)
		got := store.PrefixEnd(in)
		if !bytes.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
		if !bytes.Equal(in, tc.prefix) {
			t.Errorf("PrefixEnd(%q) changed its argument to %q", tc.prefix, in)
		}
	}
}

// A location names the store and its task, and its directory when it has one.
func TestLocationString(t *testing.T) {
	loc := store.Location{ApplicationID: "app", Task: tasks.ID{Subtopology: "1", Partition: 3}, Store: "counts"}
	if got := loc.String(); got != `store "counts" of task 1_3` {
		t.Errorf("in memory: %s", got)
	}
	loc.Dir = "/var/lib/app/1_3/counts"
	if got := loc.String(); got != `store "counts" of task 1_3 (/var/lib/app/1_3/counts)` {
		t.Errorf("on disk: %s", got)
	}
}
