package stream

import (
	"fmt"
	"strings"
	"testing"
)

// keysOf writes pending writes as key=value (key- for a delete).
func keysOf(ps []pending) string {
	var out []string
	for _, p := range ps {
		if p.del {
			out = append(out, string(p.key)+"-")
		} else {
			out = append(out, string(p.key)+"="+string(p.value))
		}
	}
	return strings.Join(out, " ")
}

// The open transaction's writes of a store: the last write of a key wins, a range is
// [lower, upper) in key order with nil bounds open, the batch is every write in key order, and
// clear drops them all.
func TestOverlay(t *testing.T) {
	o := newOverlay()
	if !o.empty() {
		t.Fatal("a new overlay holds writes")
	}
	buf := []byte("b")
	o.put(buf, []byte("1"), false)
	buf[0] = 'x' // the caller's buffer may change: the overlay keeps its own copy
	o.put([]byte("a"), []byte("0"), false)
	o.put([]byte("c"), []byte("2"), false)
	o.put([]byte("d"), nil, true)
	o.put([]byte("a"), []byte("00"), false)
	if p, ok := o.get([]byte("b")); !ok || string(p.value) != "1" || p.del {
		t.Errorf("get b: %+v %v", p, ok)
	}
	if _, ok := o.get([]byte("x")); ok {
		t.Error("the caller's buffer was kept")
	}
	for _, tc := range []struct {
		lower, upper []byte
		want         string
	}{
		{nil, nil, "a=00 b=1 c=2 d-"},
		{[]byte("b"), []byte("c"), "b=1"},
		{[]byte("b"), nil, "b=1 c=2 d-"},
		{nil, []byte("b"), "a=00"},
		{[]byte("bb"), []byte("d"), "c=2"},
		{[]byte("e"), nil, ""},
	} {
		if got := keysOf(o.within(tc.lower, tc.upper)); got != tc.want {
			t.Errorf("within(%q, %q) = %q, want %q", tc.lower, tc.upper, got, tc.want)
		}
	}
	var got []string
	for _, op := range o.batch().Ops() {
		got = append(got, fmt.Sprintf("%s:%s:%v", op.Key, op.Value, op.Delete))
	}
	if strings.Join(got, " ") != "a:00:false b:1:false c:2:false d::true" {
		t.Errorf("batch %v", got)
	}
	o.clear()
	if !o.empty() || o.within(nil, nil) != nil {
		t.Error("clear left writes")
	}
}
