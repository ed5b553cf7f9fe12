package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestSummarize(t *testing.T) {
	s := summarize([]float64{3, 1, 2, 4})
	if s.N != 4 || s.Median != 2.5 || s.Min != 1 || s.Max != 4 {
		t.Fatalf("summarize = %+v", s)
	}
	if summarize(nil) != nil {
		t.Fatal("a summary of nothing")
	}
}

func ids(ps ...int32) tasks.Set {
	var out []tasks.ID
	for _, p := range ps {
		out = append(out, tasks.ID{Subtopology: "0", Partition: p})
	}
	return tasks.NewSet(out...)
}

func TestConverged(t *testing.T) {
	member := func(epoch int32, owned, target tasks.Set) admin.Member {
		return admin.Member{MemberEpoch: epoch, Assignment: tasks.Assignment{Active: owned}, TargetAssignment: tasks.Assignment{Active: target}}
	}
	good := &admin.Group{State: "Stable", Epoch: 5, AssignmentEpoch: 5, Members: []admin.Member{
		member(5, ids(0, 1), ids(0, 1)), member(5, ids(2, 3), ids(2, 3))}}
	if !converged(good, 2, 4, 4) {
		t.Fatal("a converged group is not seen as converged")
	}
	for name, g := range map[string]*admin.Group{
		"not stable": {State: "Reconciling", Epoch: 5, AssignmentEpoch: 5, Members: good.Members},
		"old epoch":  {State: "Stable", Epoch: 4, AssignmentEpoch: 4, Members: good.Members},
		"behind":     {State: "Stable", Epoch: 5, AssignmentEpoch: 5, Members: []admin.Member{member(4, ids(0, 1), ids(0, 1)), good.Members[1]}},
		"unreconciled": {State: "Stable", Epoch: 5, AssignmentEpoch: 5, Members: []admin.Member{
			member(5, ids(0), ids(0, 1)), good.Members[1]}},
		"a task twice": {State: "Stable", Epoch: 5, AssignmentEpoch: 5, Members: []admin.Member{
			member(5, ids(0, 1, 2), ids(0, 1, 2)), good.Members[1]}},
		"a task unowned": {State: "Stable", Epoch: 5, AssignmentEpoch: 5, Members: []admin.Member{
			member(5, ids(0), ids(0)), good.Members[1]}},
	} {
		if converged(g, 2, 4, 4) {
			t.Errorf("%s: seen as converged", name)
		}
	}
	if converged(good, 3, 4, 4) {
		t.Error("converged with a member missing")
	}
}

// The charts and the table render from a results file, and each chart is well-formed XML.
func TestRender(t *testing.T) {
	s := func(vs ...float64) *Summary { return summarize(vs) }
	res := &Results{Broker: map[string]string{"kafka.version": "4.4.0", "group.streams.heartbeat.interval.ms": "500"},
		Plan: fullPlan(), RTT: RTTs{Join: 10, Steady: 3}}
	res.Figures = []*Figure{
		{ID: "p1.scale_out_join", Phase: "P1", Name: "scale-out", Unit: "s", Go: s(0.5, 0.6), Java: s(1, 2), Limit: &Limit{Value: 0.513, Derivation: "x"}},
		{ID: "p1.scale_in", Phase: "P1", Name: "scale-in", Unit: "s", Go: s(0.4), Java: nil, Limit: &Limit{Value: 0.506, Derivation: "y"}},
		{ID: "p1.crash", Phase: "P1", Name: "crash", Unit: "s", Go: s(6.1, 6.3), Java: s(6, 6.2), Limit: &Limit{Value: 6.503, Derivation: "z"}},
	}
	for _, f := range res.Figures {
		f.finish()
	}
	res.Members = []*MembersPoint{
		{Variant: "go-shared", Members: 10, CPU: s(4), RSSPerMember: s(1.2)},
		{Variant: "go-shared", Members: 1000, CPU: s(1), RSSPerMember: s(0.05), LateP99: s(3), LateMax: s(9), LateOver: s(0)},
		{Variant: "java-threads", Members: 10, CPU: s(70), RSSPerMember: s(13)},
	}
	res.Groups = []*GroupPoint{{Base: 3, Step: "+1", Members: 3, Add: 1, Tasks: 1000, Go: s(0.55), Limit: &Limit{Value: 0.52}},
		{Base: 3, Step: "+10%", Members: 4, Add: 1, Tasks: 1000, Go: s(0.56), Java: s(2), Limit: &Limit{Value: 0.52}}}
	for name, svg := range map[string]string{"convergence": convergenceChart(res), "members": membersChart(res), "groups": groupsChart(res)} {
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s.svg is not well-formed: %v", name, err)
			}
		}
	}
	md := markdown(res, "bench/results/")
	for _, want := range []string{"| P1 | scale-out | 0.550 s (0.500–0.600) | 1.500 s (1.000–2.000) | 0.37 | 0.513 s | 1.07 |", "bench/results/convergence.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}
