package stream

import "testing"

// Member says who the member is only once Run built it: before, it is ("", 0), as documented, and
// asking is safe (there is no member to ask).
func TestMemberBeforeRunBuiltIt(t *testing.T) {
	a, _ := newTestApp(t, testConfig(), testProcs())
	if id, epoch := a.Member(); id != "" || epoch != 0 {
		t.Fatalf("Member before Run: %q, %d; want \"\", 0", id, epoch)
	}
}
