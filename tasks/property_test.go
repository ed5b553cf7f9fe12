package tasks

import (
	"errors"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/streamsgroup/streamsgroup/topology"
)

// The properties here hold every operation of the package against a model written without the
// package: a task set is a map, order is a sort by (subtopology as a string, partition), sums are
// big.Int. Inputs mix subtopology IDs that sort differently as strings and as numbers ("10" < "2"),
// IDs with underscores, and the empty ID.

func genID() *rapid.Generator[ID] {
	return rapid.Custom(func(t *rapid.T) ID {
		return ID{
			Subtopology: rapid.SampledFrom([]string{"0", "1", "2", "10", "a_b", ""}).Draw(t, "sub"),
			Partition:   rapid.Int32Range(0, 5).Draw(t, "p"),
		}
	})
}

func genIDs(t *rapid.T, label string) []ID { return rapid.SliceOfN(genID(), 0, 12).Draw(t, label) }

type model map[ID]bool

func modelOf(ids []ID) model {
	m := model{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func modelLess(a, b ID) bool {
	if a.Subtopology != b.Subtopology {
		return a.Subtopology < b.Subtopology
	}
	return a.Partition < b.Partition
}

// sorted lists the model's tasks in Kafka Streams' order.
func (m model) sorted() []ID {
	out := make([]ID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return modelLess(out[i], out[j]) })
	return out
}

func (m model) union(o model) model {
	out := maps.Clone(m)
	maps.Copy(out, o)
	return out
}

func (m model) minus(o model) model {
	out := model{}
	for id := range m {
		if !o[id] {
			out[id] = true
		}
	}
	return out
}

func (m model) and(o model) model {
	out := model{}
	for id := range m {
		if o[id] {
			out[id] = true
		}
	}
	return out
}

// expect fails unless s holds exactly the model's tasks, in order, through every read accessor.
func expect(t *rapid.T, what string, s Set, m model) {
	t.Helper()
	want := m.sorted()
	if got := s.IDs(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s: IDs() = %v, want %v", what, got, want)
	}
	if s.Len() != len(want) || s.IsEmpty() != (len(want) == 0) {
		t.Fatalf("%s: Len %d IsEmpty %v, want %d tasks", what, s.Len(), s.IsEmpty(), len(want))
	}
	var all []ID
	for id := range s.All() {
		all = append(all, id)
	}
	if !slices.Equal(all, want) && !(len(all) == 0 && len(want) == 0) {
		t.Fatalf("%s: All() = %v, want %v", what, all, want)
	}
	strs := make([]string, len(want))
	for i, id := range want {
		strs[i] = id.Subtopology + "_" + strconv.Itoa(int(id.Partition))
	}
	if got := s.String(); got != "["+join(strs)+"]" {
		t.Fatalf("%s: String() = %s, want [%s]", what, got, join(strs))
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestSetAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genIDs(t, "a"), genIDs(t, "b")
		ma, mb := modelOf(a), modelOf(b)
		sa, sb := NewSet(a...), NewSet(b...)
		expect(t, "NewSet(a)", sa, ma)
		expect(t, "NewSet(b)", sb, mb)
		expect(t, "a ∪ b", sa.Union(sb), ma.union(mb))
		expect(t, "b ∪ a", sb.Union(sa), ma.union(mb))
		expect(t, "a − b", sa.Difference(sb), ma.minus(mb))
		expect(t, "b − a", sb.Difference(sa), mb.minus(ma))
		expect(t, "a ∩ b", sa.Intersect(sb), ma.and(mb))
		expect(t, "b ∩ a", sb.Intersect(sa), ma.and(mb))
		if got, want := sa.Equal(sb), maps.Equal(ma, mb); got != want {
			t.Fatalf("%v.Equal(%v) = %v, want %v", sa, sb, got, want)
		}
		if !sa.Equal(NewSet(a...)) || !sa.Equal(sa) {
			t.Fatal("a set is not Equal to itself or to a copy")
		}
		probe := genID().Draw(t, "probe")
		if sa.Contains(probe) != ma[probe] {
			t.Fatalf("%v.Contains(%v) = %v", sa, probe, sa.Contains(probe))
		}
		for id := range ma {
			if !sa.Contains(id) {
				t.Fatalf("%v does not contain its member %v", sa, id)
			}
		}
		// Operands are never changed.
		expect(t, "a after the operations", sa, ma)
		expect(t, "b after the operations", sb, mb)
	})
}

func TestKmsgAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := genIDs(t, "ids")
		m := modelOf(ids)
		k := NewSet(ids...).Kmsg()
		if k == nil {
			t.Fatal("Kmsg returned nil")
		}
		// One entry per subtopology, in string order, partitions ascending.
		var want []kmsg.TaskIDs
		for _, id := range m.sorted() {
			if len(want) == 0 || want[len(want)-1].SubtopologyID != id.Subtopology {
				want = append(want, kmsg.TaskIDs{SubtopologyID: id.Subtopology})
			}
			want[len(want)-1].Partitions = append(want[len(want)-1].Partitions, id.Partition)
		}
		if len(want) == 0 {
			want = []kmsg.TaskIDs{}
		}
		if !reflect.DeepEqual(k, want) {
			t.Fatalf("Kmsg = %+v, want %+v", k, want)
		}
		// FromKmsg reads any list, duplicates and disorder included.
		var raw []kmsg.TaskIDs
		for _, id := range ids {
			raw = append(raw, kmsg.TaskIDs{SubtopologyID: id.Subtopology, Partitions: []int32{id.Partition, id.Partition}})
		}
		expect(t, "FromKmsg", FromKmsg(raw), m)
	})
}

func TestIDStringParseAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := ID{
			Subtopology: rapid.StringMatching(`[a-z0-9_]{1,6}`).Draw(t, "sub"),
			Partition:   rapid.Int32Min(0).Draw(t, "p"),
		}
		s := id.Subtopology + "_" + strconv.FormatInt(int64(id.Partition), 10)
		if id.String() != s {
			t.Fatalf("String() = %q, want %q", id.String(), s)
		}
		got, err := ParseID(s)
		if err != nil || got != id {
			t.Fatalf("ParseID(%q) = %+v, %v", s, got, err)
		}
		o := genID().Draw(t, "other")
		want := 0
		if modelLess(id, o) {
			want = -1
		} else if modelLess(o, id) {
			want = 1
		}
		if c := id.Compare(o); c != want {
			t.Fatalf("%v.Compare(%v) = %d, want %d", id, o, c, want)
		}
	})
}

func TestAssignmentAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		act, sby, wup := genIDs(t, "active"), genIDs(t, "standby"), genIDs(t, "warmup")
		ma, ms, mw := modelOf(act), modelOf(sby), modelOf(wup)
		a := Assignment{Active: NewSet(act...), Standby: NewSet(sby...), Warmup: NewSet(wup...)}

		// Normalize: one role per task, active before standby before warm-up.
		n := a.Normalize()
		expect(t, "normalized active", n.Active, ma)
		expect(t, "normalized standby", n.Standby, ms.minus(ma))
		expect(t, "normalized warm-up", n.Warmup, mw.minus(ma).minus(ms))
		expect(t, "All", a.All(), ma.union(ms).union(mw))
		if a.IsEmpty() != (len(ma)+len(ms)+len(mw) == 0) {
			t.Fatalf("IsEmpty of %v = %v", a, a.IsEmpty())
		}

		// Equal compares every role.
		b := Assignment{Active: a.Active, Standby: a.Standby, Warmup: a.Warmup}
		if !a.Equal(b) {
			t.Fatal("an assignment is not Equal to a copy")
		}
		extra := genID().Draw(t, "extra")
		for role, change := range map[string]func(*Assignment){
			"active":  func(x *Assignment) { x.Active = x.Active.Union(NewSet(extra)) },
			"standby": func(x *Assignment) { x.Standby = x.Standby.Union(NewSet(extra)) },
			"warmup":  func(x *Assignment) { x.Warmup = x.Warmup.Union(NewSet(extra)) },
		} {
			c := b
			change(&c)
			grew := map[string]model{"active": ma, "standby": ms, "warmup": mw}[role][extra]
			if a.Equal(c) != grew {
				t.Fatalf("adding %v to %s: Equal = %v, want %v", extra, role, a.Equal(c), grew)
			}
		}

	})
}

func TestSumOffsetsAgainstBigInt(t *testing.T) {
	limit := big.NewInt(math.MaxInt64)
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.OneOf(
			rapid.Int64Range(-2, 3),
			rapid.Int64Range(math.MaxInt64-3, math.MaxInt64),
			rapid.Int64Range(math.MaxInt64/2-2, math.MaxInt64/2+2),
			rapid.Int64(),
		), 0, 4).Draw(t, "parts")
		sum := new(big.Int)
		want := int64(-1)
		for _, p := range parts {
			if p < 0 {
				want = math.MaxInt64
				break
			}
			sum.Add(sum, big.NewInt(p))
		}
		if want < 0 {
			want = math.MaxInt64 // unknown or overflowed; a sum of exactly MaxInt64 is the same value
			if sum.Cmp(limit) < 0 {
				want = sum.Int64()
			}
		}
		if got := SumOffsets(parts...); got != want {
			t.Fatalf("SumOffsets(%v) = %d, want %d", parts, got, want)
		}
	})
}

func TestOffsetsAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := rapid.MapOfN(genID(), rapid.Int64(), 0, 8).Draw(t, "offsets")
		p := rapid.MapOfN(genID(), rapid.Int64Range(0, 2), 0, 3).Draw(t, "other")
		if got := Offsets(o).Equal(Offsets(p)); got != maps.Equal(o, p) {
			t.Fatalf("Equal(%v, %v) = %v", o, p, got)
		}
		if !Offsets(o).Equal(Offsets(maps.Clone(o))) {
			t.Fatal("offsets are not Equal to a copy")
		}
		k := Offsets(o).Kmsg()
		if k == nil {
			t.Fatal("Kmsg returned nil")
		}
		want := make([]kmsg.TaskOffset, 0, len(o))
		for _, id := range modelOf(slices.Collect(maps.Keys(o))).sorted() {
			want = append(want, kmsg.TaskOffset{SubtopologyID: id.Subtopology, Partition: id.Partition, Offset: o[id]})
		}
		if !reflect.DeepEqual(k, want) {
			t.Fatalf("Kmsg = %+v, want %+v", k, want)
		}
		if back := OffsetsFromKmsg(k); !maps.Equal(back, o) {
			t.Fatalf("OffsetsFromKmsg(Kmsg(%v)) = %v", o, back)
		}
	})
}

// inputTopics is the model of the test topology below: the input topics of each subtopology.
var inputTopics = map[string][]string{
	"0":  {"a", "shared"},
	"1":  {"b", "rep"},
	"10": {"c"},
}

func modelTopology() *topology.Topology {
	return topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{"shared", "a"}, RepartitionSinkTopics: []string{"rep"}},
		topology.Subtopology{ID: "1", SourceTopics: []string{"b"}, RepartitionSourceTopics: []topology.TopicInfo{{Name: "rep"}}},
		topology.Subtopology{ID: "10", SourceTopics: []string{"c"}},
	)
}

func TestInputPartitionsAgainstModel(t *testing.T) {
	topo := modelTopology()
	rapid.Check(t, func(t *rapid.T) {
		ids := genIDs(t, "ids")
		got, err := InputPartitions(topo, NewSet(ids...))
		var unknown []ID
		want := map[string][]int32{}
		for _, id := range modelOf(ids).sorted() {
			topics, ok := inputTopics[id.Subtopology]
			if !ok {
				unknown = append(unknown, id)
				continue
			}
			for _, topic := range topics {
				if !slices.Contains(want[topic], id.Partition) {
					want[topic] = append(want[topic], id.Partition)
				}
			}
		}
		var ue *UnknownSubtopologyError
		errKnown := CheckKnown(topo, NewSet(ids...))
		if len(unknown) > 0 {
			if !errors.As(err, &ue) || ue.Task != unknown[0] {
				t.Fatalf("InputPartitions(%v) = %v, %v; want the unknown task %v", ids, got, err, unknown[0])
			}
			if !errors.As(errKnown, &ue) || ue.Task != unknown[0] {
				t.Fatalf("CheckKnown(%v) = %v; want the unknown task %v", ids, errKnown, unknown[0])
			}
			return
		}
		if err != nil || errKnown != nil {
			t.Fatalf("InputPartitions(%v): %v; CheckKnown: %v", ids, err, errKnown)
		}
		for _, ps := range want {
			slices.Sort(ps)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("InputPartitions(%v) = %v, want %v", ids, got, want)
		}
	})
}
