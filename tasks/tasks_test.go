package tasks

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/topology"
)

func ids(s ...string) []ID {
	out := make([]ID, len(s))
	for i, x := range s {
		id, err := ParseID(x)
		if err != nil {
			panic(err)
		}
		out[i] = id
	}
	return out
}

func set(s ...string) Set { return NewSet(ids(s...)...) }

func TestIDOrderAndParse(t *testing.T) {
	s := set("2_0", "10_1", "1_5", "1_0", "1_0")
	if got := s.String(); got != "[1_0 1_5 10_1 2_0]" {
		t.Fatalf("order %s: subtopology IDs compare as strings, partitions as numbers", got)
	}
	for _, bad := range []string{"", "x", "_1", "1_", "1_-1", "1_x"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
	if id, _ := ParseID("sub_topo_3"); id != (ID{Subtopology: "sub_topo", Partition: 3}) {
		t.Errorf("underscores in subtopology IDs: got %+v", id)
	}
}

func TestSetOperations(t *testing.T) {
	a := set("0_0", "0_1", "0_2", "1_0")
	b := set("0_1", "1_0", "1_1")
	check := func(name string, got Set, want ...string) {
		t.Helper()
		if !got.Equal(set(want...)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("union", a.Union(b), "0_0", "0_1", "0_2", "1_0", "1_1")
	check("difference", a.Difference(b), "0_0", "0_2")
	check("difference other way", b.Difference(a), "1_1")
	check("intersect", a.Intersect(b), "0_1", "1_0")
	check("empty union", Set{}.Union(Set{}))
	if !a.Equal(a) || !a.Equal(set("0_0", "0_1", "0_2", "1_0")) || a.Equal(set("0_0", "0_1", "0_2", "1_1")) || a.Equal(b) {
		t.Error("Equal on shared and on separate storage")
	}
	if !a.Contains(ID{"0", 2}) || a.Contains(ID{"1", 1}) {
		t.Error("Contains is wrong")
	}
	got := a.IDs()
	got[0] = ID{"9", 9}
	if a.Contains(ID{"9", 9}) {
		t.Error("IDs shares the set's storage")
	}
	n := 0
	for range a.All() {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 || a.Len() != 4 || a.IsEmpty() || !(Set{}).IsEmpty() {
		t.Error("All/Len/IsEmpty disagree")
	}
}

func TestKmsgRoundTrip(t *testing.T) {
	s := set("1_3", "0_1", "0_0", "1_2")
	k := s.Kmsg()
	want := []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 1}}, {SubtopologyID: "1", Partitions: []int32{2, 3}}}
	if !reflect.DeepEqual(k, want) {
		t.Fatalf("Kmsg = %+v", k)
	}
	if !FromKmsg(k).Equal(s) {
		t.Fatal("round trip lost tasks")
	}
	if (Set{}).Kmsg() == nil {
		t.Fatal("an empty set must encode as an empty, non-nil list")
	}
}

func TestAssignmentNormalize(t *testing.T) {
	from := Assignment{Active: set("0_0", "0_1"), Standby: set("0_2")}
	to := Assignment{Active: set("0_1", "0_2"), Warmup: set("0_3", "0_1")}
	n := to.Normalize()
	if !n.Warmup.Equal(set("0_3")) {
		t.Fatalf("a task that is active must lose its warm-up role: %v", n)
	}
	if !to.All().Equal(set("0_1", "0_2", "0_3")) || to.Equal(from) || !to.Equal(to) || (Assignment{}).IsEmpty() == false {
		t.Fatal("All/Equal/IsEmpty disagree")
	}
	if got := from.String(); got != "active=[0_0 0_1] standby=[0_2] warmup=[]" {
		t.Fatalf("String = %s", got)
	}
}

func testTopology() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"left", "right"}, RepartitionSinkTopics: []string{"rep"}},
		topology.Subtopology{ID: "1", SourceTopics: []string{"other"}, RepartitionSourceTopics: []topology.TopicInfo{{Name: "rep"}}},
	)
}

func TestInputPartitions(t *testing.T) {
	got, err := InputPartitions(testTopology(), set("0_0", "0_3", "1_1"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int32{"left": {0, 3}, "right": {0, 3}, "other": {1}, "rep": {1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	_, err = InputPartitions(testTopology(), set("0_0", "7_1"))
	var ue *UnknownSubtopologyError
	if !errors.As(err, &ue) || ue.Task != (ID{"7", 1}) {
		t.Fatalf("unknown subtopology: %v", err)
	}
	if _, err := InputPartitions(testTopology(), NewSet(ID{"", 0})); !errors.As(err, &ue) || ue.Task != (ID{"", 0}) {
		t.Fatalf("a task of the empty subtopology ID: %v", err)
	}
	if err := CheckKnown(testTopology(), set("1_0", "9_0")); !errors.As(err, &ue) {
		t.Fatalf("CheckKnown: %v", err)
	}
	if err := CheckKnown(testTopology(), set("1_0")); err != nil {
		t.Fatal(err)
	}
}

func TestSumOffsets(t *testing.T) {
	cases := []struct {
		in   []int64
		want int64
	}{
		{nil, 0},
		{[]int64{1, 2, 3}, 6},
		{[]int64{1, -1}, UnknownOffset},
		{[]int64{UnknownOffset}, UnknownOffset},
		{[]int64{UnknownOffset - 1, 1}, UnknownOffset},
		{[]int64{UnknownOffset - 2, 1}, UnknownOffset - 1},
	}
	for _, c := range cases {
		if got := SumOffsets(c.in...); got != c.want {
			t.Errorf("SumOffsets(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	o := Offsets{{"1", 0}: 5, {"0", 2}: 7}
	k := o.Kmsg()
	if k[0].SubtopologyID != "0" || k[1].Offset != 5 {
		t.Fatalf("Kmsg order %+v", k)
	}
	if !OffsetsFromKmsg(k).Equal(o) || o.Equal(Offsets{{"1", 0}: 5}) || o.Equal(Offsets{{"1", 0}: 5, {"0", 2}: 8}) {
		t.Fatal("offsets round trip or Equal is wrong")
	}
}

// bigAssignment builds n tasks over 20 subtopologies.
func bigSet(n, shift int) Set {
	out := make([]ID, n)
	for i := range n {
		out[i] = ID{Subtopology: fmt.Sprint(i % 20), Partition: int32(i/20 + shift)}
	}
	return NewSet(out...)
}

func BenchmarkInputPartitions10k(b *testing.B) {
	var subs []topology.Subtopology
	for i := range 20 {
		subs = append(subs, topology.Subtopology{ID: fmt.Sprint(i), SourceTopics: []string{fmt.Sprintf("in-%d", i), fmt.Sprintf("side-%d", i)}})
	}
	topo := topology.MustNew(subs...)
	s := bigSet(10_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := InputPartitions(topo, s); err != nil {
			b.Fatal(err)
		}
	}
}

// A task the broker names as both standby and warm-up is a standby only, as in Kafka Streams
// (StreamsMembershipManager: warm-up tasks are Warmup − Active − Standby), so the member reports it in
// one owned list, not two (issue 9, 1.6).
func TestNormalizeKeepsOneRolePerTask(t *testing.T) {
	a := Assignment{
		Active:  set("0_0", "1_0"),
		Standby: set("0_0", "0_1", "1_1"),
		Warmup:  set("0_0", "0_1", "0_2", "1_0", "1_1", "1_2"),
	}
	got := a.Normalize()
	want := Assignment{Active: set("0_0", "1_0"), Standby: set("0_1", "1_1"), Warmup: set("0_2", "1_2")}
	if !got.Equal(want) {
		t.Fatalf("Normalize(%v) = %v, want %v", a, got, want)
	}
	if !a.Warmup.Equal(set("0_0", "0_1", "0_2", "1_0", "1_1", "1_2")) {
		t.Fatal("Normalize changed its operand")
	}
}
