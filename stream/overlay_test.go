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
// clear drops them all. The overlay keeps what it is given (the store gives it the bytes of its
// changelog record, which nobody changes) and hands the puts to the engine as owned.
func TestOverlay(t *testing.T) {
	o := newOverlay()
	if !o.empty() {
		t.Fatal("a new overlay holds writes")
	}
	o.put([]byte("b"), []byte("1"), false)
	o.put([]byte("a"), []byte("0"), false)
	o.put([]byte("c"), []byte("2"), false)
	o.put([]byte("d"), nil, true)
	o.put([]byte("a"), []byte("00"), false)
	if p, ok := o.get([]byte("b")); !ok || string(p.value) != "1" || p.del {
		t.Errorf("get b: %+v %v", p, ok)
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
		got = append(got, fmt.Sprintf("%s:%s:%v:%v", op.Key, op.Value, op.Delete, op.Owned))
	}
	if strings.Join(got, " ") != "a:00:false:true b:1:false:true c:2:false:true d::true:false" {
		t.Errorf("batch %v", got)
	}
	o.clear()
	if !o.empty() || o.within(nil, nil) != nil {
		t.Error("clear left writes")
	}
}
