package topology

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds the oracles that the property tests and FuzzNew share. None of them calls the
// code it checks to compute an expected value: the topology ID is recomputed from its documentation
// (refID), a topic name is checked with a regular expression, and a topology is rebuilt from the
// bytes of its own request.

// fataler is what *testing.T and *rapid.T have in common here.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// refID computes the topology ID exactly as the documentation of ID describes it, version 1,
// written from that text alone.
func refID(subs []Subtopology) ID {
	uv := func(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }
	str := func(b []byte, s string) []byte { return append(uv(b, len(s)), s...) }
	strs := func(b []byte, tag byte, list []string) []byte {
		sorted := slices.Sorted(slices.Values(list))
		b = uv(append(b, tag), len(sorted))
		for _, s := range sorted {
			b = str(b, s)
		}
		return b
	}
	topics := func(b []byte, tag byte, list []TopicInfo) []byte {
		sorted := slices.Clone(list)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		b = uv(append(b, tag), len(sorted))
		for _, ti := range sorted {
			rf := ti.ReplicationFactor
			if rf == 0 {
				rf = -1 // "0 means the same [as -1]"
			}
			b = str(b, ti.Name)
			b = append(b, byte(uint16(rf)>>8), byte(uint16(rf)))
			keys := slices.Sorted(maps.Keys(ti.Configs))
			b = uv(b, len(keys))
			for _, k := range keys {
				b = str(str(b, k), ti.Configs[k])
			}
		}
		return b
	}
	sorted := slices.Clone(subs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	b := []byte("streamsgroup/topology-id/v1")
	for _, s := range sorted {
		b = str(append(b, 'S'), s.ID)
		b = strs(b, 's', s.SourceTopics)
		b = strs(b, 'x', s.SourceTopicRegexes)
		b = strs(b, 'k', s.RepartitionSinkTopics)
		b = topics(b, 'r', s.RepartitionSourceTopics)
		b = topics(b, 'c', s.StateChangelogTopics)
	}
	return sha256.Sum256(b)
}

// legalTopic is Kafka's rule for topic names, as a regular expression.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func isLegalTopic(s string) bool { return legalTopic.MatchString(s) && s != "." && s != ".." }

// permuted returns a deep copy of subs declared in another order: subtopologies, every topic list and
// the insertion order of every config map shuffled, and replication factors 0 and -1 (which mean the
// same) swapped. Copartition groups keep their order, which is part of the topology.
func permuted(subs []Subtopology, r *rand.Rand) []Subtopology {
	out := make([]Subtopology, len(subs))
	for i, s := range subs {
		out[i] = s.clone()
	}
	shuffle := func(n int, swap func(i, j int)) { r.Shuffle(n, swap) }
	shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		s := &out[i]
		for _, l := range [][]string{s.SourceTopics, s.SourceTopicRegexes, s.RepartitionSinkTopics} {
			shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		}
		for _, l := range [][]TopicInfo{s.RepartitionSourceTopics, s.StateChangelogTopics} {
			shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
			for k := range l {
				switch l[k].ReplicationFactor {
				case 0:
					l[k].ReplicationFactor = -1
				case -1:
					l[k].ReplicationFactor = 0
				}
				if l[k].Configs != nil {
					keys := slices.Collect(maps.Keys(l[k].Configs))
					shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
					c := make(map[string]string, len(keys))
					for _, key := range keys {
						c[key] = l[k].Configs[key]
					}
					l[k].Configs = c
				}
			}
		}
	}
	return out
}

// subtopologiesFromRequest reads a topology back from a join request, turning copartition indices
// into topic names (sources first, then repartition sources).
func subtopologiesFromRequest(req *kmsg.StreamsGroupHeartbeatRequestTopology) []Subtopology {
	infos := func(in []kmsg.TopicInfo) []TopicInfo {
		var out []TopicInfo
		for _, ti := range in {
			c := map[string]string{}
			for _, kv := range ti.Configs {
				c[kv.Key] = kv.Value
			}
			out = append(out, TopicInfo{Name: ti.Topic, Partitions: ti.NumPartitions, ReplicationFactor: ti.ReplicationFactor, Configs: c})
		}
		return out
	}
	var subs []Subtopology
	for _, k := range req.Subtopologies {
		s := Subtopology{ID: k.SubtopologyID, SourceTopics: k.SourceTopics, SourceTopicRegexes: k.SourceTopicRegex,
			RepartitionSinkTopics: k.RepartitionSinkTopics, RepartitionSourceTopics: infos(k.RepartitionSourceTopics),
			StateChangelogTopics: infos(k.StateChangelogTopics)}
		for _, g := range k.CopartitionGroups {
			var names []string
			for _, i := range g.SourceTopics {
				names = append(names, k.SourceTopics[i])
			}
			for _, i := range g.RepartitionSourceTopics {
				names = append(names, k.RepartitionSourceTopics[i].Topic)
			}
			s.CopartitionGroups = append(s.CopartitionGroups, names)
		}
		subs = append(subs, s)
	}
	return subs
}

// describeFromRequest is the broker's StreamsGroupDescribe answer for a group that stored this
// request's topology: the same names, replication factors and configs, internal topics with the
// partition counts the broker resolved, no regexes and no copartition groups, every list in whatever
// order the broker likes. It goes through the wire: encoded, then decoded.
func describeFromRequest(t fataler, req *kmsg.StreamsGroupHeartbeatRequestTopology, r *rand.Rand) *kmsg.StreamsGroupDescribeResponseGroupTopology {
	t.Helper()
	shuffled := func(in []kmsg.TopicInfo) []kmsg.TopicInfo {
		out := make([]kmsg.TopicInfo, len(in))
		for i, ti := range in {
			ti.NumPartitions = r.Int32N(8)
			ti.Configs = slices.Clone(ti.Configs)
			r.Shuffle(len(ti.Configs), func(i, j int) { ti.Configs[i], ti.Configs[j] = ti.Configs[j], ti.Configs[i] })
			out[i] = ti
		}
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	list := func(in []string) []string {
		out := slices.Clone(in)
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	top := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
	top.Epoch = req.Epoch
	for _, s := range req.Subtopologies {
		d := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
		d.SubtopologyID = s.SubtopologyID
		d.SourceTopics = list(s.SourceTopics)
		d.RepartitionSinkTopics = list(s.RepartitionSinkTopics)
		d.RepartitionSourceTopics = shuffled(s.RepartitionSourceTopics)
		d.StateChangelogTopics = shuffled(s.StateChangelogTopics)
		top.Subtopologies = append(top.Subtopologies, d)
	}
	r.Shuffle(len(top.Subtopologies), func(i, j int) {
		top.Subtopologies[i], top.Subtopologies[j] = top.Subtopologies[j], top.Subtopologies[i]
	})
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	resp.Version = resp.MaxVersion()
	g := kmsg.NewStreamsGroupDescribeResponseGroup()
	g.Group, g.Topology = "g", &top
	resp.Groups = append(resp.Groups, g)
	back := kmsg.NewPtrStreamsGroupDescribeResponse()
	back.Version = resp.Version
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || len(back.Groups) != 1 {
		t.Fatalf("a describe answer does not survive the wire: %v", err)
	}
	return back.Groups[0].Topology
}

// encodeRequest wraps a topology in a full join request and encodes it.
func encodeRequest(topo *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = req.MaxVersion()
	req.Group, req.MemberID = "g", "m"
	req.Topology = topo
	return req.AppendTo(nil)
}

// groupSets is the copartition groups of each subtopology as sorted sets, sorted: what survives the
// Java HashSet order of the request.
func groupSets(subs []Subtopology) map[string][]string {
	out := map[string][]string{}
	for _, s := range subs {
		var gs []string
		for _, g := range s.CopartitionGroups {
			gs = append(gs, strings.Join(slices.Sorted(slices.Values(g)), ","))
		}
		slices.Sort(gs)
		out[s.ID] = gs
	}
	return out
}

// withoutGroups returns copies of subs without copartition groups.
func withoutGroups(subs []Subtopology) []Subtopology {
	out := make([]Subtopology, len(subs))
	for i, s := range subs {
		out[i] = s.clone()
		out[i].CopartitionGroups = nil
	}
	return out
}

// checkTopology holds every invariant of a topology that New accepted for subs:
//
//  1. it is canonical: subtopologies by ID as strings, every list sorted without duplicates, no
//     replication factor 0, and the accessors agree with each other;
//  2. every topic is a legal Kafka topic name;
//  3. its ID is the documented hash of subs (refID);
//  4. declared in another order (subs permuted) it is Equal, with the same ID and request bytes;
//  5. its request survives kmsg encode/decode byte for byte, and the topology read back from the
//     decoded request has the same ID, the same content and the same request;
//  6. FromDescribe of the broker's description of that request has the same ID (when it has no
//     regexes, which the description cannot carry), and the described subtopologies are the
//     topology's without copartition groups and with the resolved partition counts.
func checkTopology(t fataler, subs []Subtopology, topo *Topology, r *rand.Rand) {
	t.Helper()
	got := topo.Subtopologies()
	if len(got) != len(subs) {
		t.Fatalf("%d subtopologies in, %d out", len(subs), len(got))
	}
	strictly := func(what string, l []string) {
		t.Helper()
		for i := 1; i < len(l); i++ {
			if l[i-1] >= l[i] {
				t.Fatalf("%s not sorted or not distinct: %q", what, l)
			}
		}
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
		strictly("source topics of "+s.ID, s.SourceTopics)
		strictly("source topic regexes of "+s.ID, s.SourceTopicRegexes)
		strictly("repartition sink topics of "+s.ID, s.RepartitionSinkTopics)
		var inputs []string
		inputs = append(inputs, s.SourceTopics...)
		for _, l := range [][]TopicInfo{s.RepartitionSourceTopics, s.StateChangelogTopics} {
			var names []string
			for _, ti := range l {
				names = append(names, ti.Name)
				if ti.ReplicationFactor == 0 || ti.ReplicationFactor < -1 || ti.Partitions < 0 {
					t.Fatalf("subtopology %s, topic %s: replication factor %d, partitions %d", s.ID, ti.Name, ti.ReplicationFactor, ti.Partitions)
				}
			}
			strictly("internal topics of "+s.ID, names)
		}
		for _, ti := range s.RepartitionSourceTopics {
			inputs = append(inputs, ti.Name)
		}
		for _, n := range append(slices.Clone(inputs), s.RepartitionSinkTopics...) {
			if !isLegalTopic(n) {
				t.Fatalf("subtopology %s: illegal topic name %q accepted", s.ID, n)
			}
		}
		slices.Sort(inputs)
		if in := topo.InputTopics(s.ID); !slices.Equal(in, inputs) || !slices.Equal(s.InputTopics(), inputs) {
			t.Fatalf("InputTopics(%s) = %q, want %q", s.ID, in, inputs)
		}
		if one, ok := topo.Subtopology(s.ID); !ok || !topo.HasSubtopology(s.ID) || one.ID != s.ID {
			t.Fatalf("Subtopology(%s) not found", s.ID)
		}
	}
	strictly("subtopology IDs", ids)

	id := topo.ID()
	if want := refID(subs); id != want {
		t.Fatalf("ID %s, the documented encoding gives %s", id.Hex(), want.Hex())
	}
	req := topo.Request(7)
	wire := encodeRequest(req)

	perm, err := New(permuted(subs, r)...)
	if err != nil {
		t.Fatalf("the same topology in another order is refused: %v", err)
	}
	if perm.ID() != id || !perm.Equal(topo) || !topo.Equal(perm) || string(encodeRequest(perm.Request(7))) != string(wire) {
		t.Fatalf("declaration order changed the topology: ID %s vs %s", perm.ID(), id)
	}

	dec := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	dec.Version = dec.MaxVersion()
	if err := dec.ReadFrom(wire); err != nil || dec.Topology == nil {
		t.Fatalf("the join request does not decode: %v", err)
	}
	if again := encodeRequest(dec.Topology); string(again) != string(wire) || dec.Topology.Epoch != 7 {
		t.Fatalf("the join request does not survive encode/decode")
	}
	fromWire := subtopologiesFromRequest(dec.Topology)
	back, err := New(fromWire...)
	if err != nil {
		t.Fatalf("the topology read back from its own request is refused: %v", err)
	}
	if back.ID() != id || string(encodeRequest(back.Request(7))) != string(wire) ||
		!MustNew(withoutGroups(fromWire)...).Equal(MustNew(withoutGroups(subs)...)) ||
		!maps.EqualFunc(groupSets(fromWire), groupSets(subs), slices.Equal) {
		t.Fatalf("the topology read back from its request differs: ID %s vs %s", back.ID(), id)
	}

	if topo.CheckJoinable() != nil {
		return
	}
	desc := describeFromRequest(t, req, r)
	d, err := FromDescribe(desc)
	if err != nil {
		t.Fatalf("FromDescribe: %v", err)
	}
	if d.ID != id || d.Epoch != 7 {
		t.Fatalf("described ID %s epoch %d, local ID %s epoch 7", d.ID.Hex(), d.Epoch, id.Hex())
	}
	resolved := map[string]int32{} // by subtopology, list ("r" or "c") and topic
	for _, s := range desc.Subtopologies {
		for _, ti := range s.RepartitionSourceTopics {
			resolved[s.SubtopologyID+"/r/"+ti.Topic] = ti.NumPartitions
		}
		for _, ti := range s.StateChangelogTopics {
			resolved[s.SubtopologyID+"/c/"+ti.Topic] = ti.NumPartitions
		}
	}
	want := withoutGroups(got)
	for i := range want {
		for kind, l := range map[string][]TopicInfo{"r": want[i].RepartitionSourceTopics, "c": want[i].StateChangelogTopics} {
			for k := range l {
				l[k].Partitions = resolved[want[i].ID+"/"+kind+"/"+l[k].Name]
			}
		}
	}
	// fmt prints maps sorted by key, and nil and empty lists alike.
	if fmt.Sprint(d.Subtopologies) != fmt.Sprint(want) {
		t.Fatalf("described subtopologies\n%v\nwant\n%v", d.Subtopologies, want)
	}
}
