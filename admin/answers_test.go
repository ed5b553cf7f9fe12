package admin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
)

// scripted is a kfake cluster that advertises the streams APIs and answers StreamsGroupDescribe,
// DeleteGroups and ListGroups with the given functions (ListGroups lists nothing, with listCode).
func scripted(t *testing.T, describe func(asked string) kmsg.StreamsGroupDescribeResponseGroup,
	del func(asked []string) []kmsg.DeleteGroupsResponseGroup, listCode int16) *Client {
	return scriptedList(t, describe, del, listCode, nil)
}

// scriptedList is scripted with ListGroups listing listed.
func scriptedList(t *testing.T, describe func(asked string) kmsg.StreamsGroupDescribeResponseGroup,
	del func(asked []string) []kmsg.DeleteGroupsResponseGroup, listCode int16, listed []kmsg.ListGroupsResponseGroup) *Client {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kfakestreams.Advertise(ctx, c, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.StreamsGroupDescribeRequest)
		resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range r.Groups {
			resp.Groups = append(resp.Groups, describe(g))
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.DeleteGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.DeleteGroupsRequest)
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		resp.Groups = del(r.Groups)
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.ListGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode, resp.Groups = listCode, listed
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return NewClient(cl)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// An answer about another group than the one asked for is refused, typed, and its content unused.
func TestDescribeRefusesAnAnswerAboutAnotherGroup(t *testing.T) {
	adm := scripted(t, func(string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{Group: "other", State: "Stable", Epoch: 9}
	}, nil, 0)
	g, err := adm.Describe(ctx(t), "mine")
	var ge *GroupError
	if g != nil || !errors.As(err, &ge) || !errors.Is(err, ErrWrongGroup) || ge.Group != "mine" || ge.Answered != "other" ||
		!strings.Contains(err.Error(), `group "mine": the broker answered about group "other" instead`) {
		t.Fatalf("Describe(mine) answered about other: %+v, %v", g, err)
	}
	if errors.Is(err, ErrGroupNotFound) || errors.Is(err, ErrNotStreamsGroup) {
		t.Fatalf("a wrong answer is not a missing group: %v", err)
	}
}

// An unknown error code keeps its number in admin errors, for Describe and for ListGroups.
func TestUnknownErrorCodeKeepsItsNumber(t *testing.T) {
	adm := scripted(t, func(asked string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{Group: asked, ErrorCode: 9999}
	}, nil, 9999)
	_, err := adm.Describe(ctx(t), "g")
	var u *heartbeat.UnknownCodeError
	if !errors.As(err, &u) || u.Code != 9999 || !strings.Contains(err.Error(), "unknown error code 9999") ||
		strings.Contains(err.Error(), "UNKNOWN_SERVER_ERROR") {
		t.Fatalf("describe with code 9999: %v", err)
	}
	_, err = adm.List(ctx(t))
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "unknown error code 9999") {
		t.Fatalf("list with code 9999: %v", err)
	}
}

// DeleteGroups answers are matched to the groups asked for: one about another group is not reported as
// a deletion, and an asked group left out is an error, not a success.
func TestDeleteMatchesAnswersToGroups(t *testing.T) {
	adm := scripted(t, func(asked string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{Group: asked, State: "Empty"}
	}, func(asked []string) []kmsg.DeleteGroupsResponseGroup {
		var out []kmsg.DeleteGroupsResponseGroup
		for _, g := range asked {
			switch g {
			case "a":
				out = append(out, kmsg.DeleteGroupsResponseGroup{Group: "a"})
			case "b":
				out = append(out, kmsg.DeleteGroupsResponseGroup{Group: "someone-else"})
			case "c":
				out = append(out, kmsg.DeleteGroupsResponseGroup{Group: "c", ErrorCode: kerr.GroupAuthorizationFailed.Code})
			}
		}
		return out
	}, 0)
	res, err := adm.Delete(ctx(t), "a", "b", "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res["a"] != nil || !errors.Is(res["c"], kerr.GroupAuthorizationFailed) {
		t.Fatalf("results: %v", res)
	}
	if _, ok := res["someone-else"]; ok {
		t.Fatalf("an answer about a group not asked for is reported: %v", res)
	}
	var ge *GroupError
	if !errors.As(res["b"], &ge) || !errors.Is(res["b"], ErrWrongGroup) || ge.Answered != "someone-else" ||
		!strings.Contains(res["b"].Error(), `answered about group "someone-else" instead`) {
		t.Fatalf("b: %v", res["b"])
	}
}

// With streams groups turned off (streams.version 0) the broker answers the describe that Delete
// checks a group with UNSUPPORTED_VERSION; Delete then finds the group in ListGroups, as Kafka's tool
// does: an empty streams group is deleted, a busy one is refused, a group of another type or none
// is reported as such, and nothing but the empty streams group is asked to be deleted.
func TestDeleteWithStreamsGroupsTurnedOffChecksTheListing(t *testing.T) {
	var deleted []string
	adm := scriptedList(t, func(asked string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{Group: asked, ErrorCode: kerr.UnsupportedVersion.Code}
	}, func(asked []string) []kmsg.DeleteGroupsResponseGroup {
		deleted = append(deleted, asked...)
		var out []kmsg.DeleteGroupsResponseGroup
		for _, g := range asked {
			out = append(out, kmsg.DeleteGroupsResponseGroup{Group: g})
		}
		return out
	}, 0, []kmsg.ListGroupsResponseGroup{
		{Group: "idle", GroupType: "streams", GroupState: "Empty"},
		{Group: "busy", GroupType: "streams", GroupState: "Stable"},
		{Group: "orders", GroupType: "consumer", GroupState: "Empty"},
		{Group: "old", GroupType: "", GroupState: "Empty"},
	})
	res, err := adm.Delete(ctx(t), "idle", "busy", "orders", "old", "none")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 || res["idle"] != nil {
		t.Fatalf("results: %v", res)
	}
	if !errors.Is(res["busy"], ErrGroupNotEmpty) {
		t.Errorf("busy: %v", res["busy"])
	}
	var ge *GroupError
	if !errors.As(res["orders"], &ge) || !errors.Is(ge, ErrNotStreamsGroup) || ge.Type != "consumer" {
		t.Errorf("orders: %v", res["orders"])
	}
	if !errors.As(res["old"], &ge) || !errors.Is(ge, ErrNotStreamsGroup) || ge.Type != "classic" {
		t.Errorf("old: %v", res["old"])
	}
	if !errors.Is(res["none"], ErrGroupNotFound) {
		t.Errorf("none: %v", res["none"])
	}
	if len(deleted) != 1 || deleted[0] != "idle" {
		t.Fatalf("asked to delete %v; want only idle", deleted)
	}
}

// Another describe failure is not read as "streams groups are off": the group is not deleted, and
// a listing that fails after UNSUPPORTED_VERSION keeps both errors.
func TestDeleteFallsBackOnlyOnUnsupportedVersion(t *testing.T) {
	adm := scriptedList(t, func(asked string) kmsg.StreamsGroupDescribeResponseGroup {
		code := kerr.GroupAuthorizationFailed.Code
		if asked == "off" {
			code = kerr.UnsupportedVersion.Code
		}
		return kmsg.StreamsGroupDescribeResponseGroup{Group: asked, ErrorCode: code}
	}, func(asked []string) []kmsg.DeleteGroupsResponseGroup {
		t.Errorf("DeleteGroups sent for %v", asked)
		return nil
	}, kerr.ClusterAuthorizationFailed.Code, []kmsg.ListGroupsResponseGroup{{Group: "denied", GroupType: "streams", GroupState: "Empty"}})
	res, err := adm.Delete(ctx(t), "denied", "off")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res["denied"], kerr.GroupAuthorizationFailed) {
		t.Errorf("denied: %v", res["denied"])
	}
	if !errors.Is(res["off"], kerr.UnsupportedVersion) || !errors.Is(res["off"], kerr.ClusterAuthorizationFailed) {
		t.Errorf("off: %v; want both the describe's and the listing's error", res["off"])
	}
}

// Describe copies the answer into a Group: members sorted by ID, an endpoint only when its host is
// set, client tags only when there are some (nil, not an empty map, otherwise), and the
// coordinator's address from the coordinator it asked.
func TestDescribeConvertsTheAnswer(t *testing.T) {
	str := func(s string) *string { return &s }
	adm := scripted(t, func(asked string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{
			Group: asked, State: "Stable", Epoch: 7, AssignmentEpoch: 6, AuthorizedOperations: 5, AssignorName: str("sticky"),
			Members: []kmsg.StreamsGroupDescribeResponseGroupMember{
				{MemberID: "m2", MemberEpoch: 3, ClientID: "c2"},
				{
					MemberID: "m1", InstanceID: str("i1"), RackID: str("r1"),
					UserEndpoint: &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: "h1", Port: 9},
					ClientTags:   []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{{Key: "zone", Value: "a"}},
				},
				{MemberID: "m3", UserEndpoint: &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Port: 9}},
			},
		}
	}, nil, 0)
	g, err := adm.Describe(ctx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != "g" || g.State != "Stable" || g.Epoch != 7 || g.AssignmentEpoch != 6 || g.AuthorizedOperations != 5 ||
		g.AssignorName != "sticky" || g.Topology != nil {
		t.Fatalf("group: %+v", g)
	}
	seed := adm.cl.OptValue(kgo.SeedBrokers).([]string)[0]
	if got := fmt.Sprintf("%s:%d", g.CoordinatorHost, g.CoordinatorPort); g.Coordinator != 0 || got != seed {
		t.Errorf("coordinator %d at %s; want 0 at %s, the one broker", g.Coordinator, got, seed)
	}
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	if fmt.Sprint(ids) != "[m1 m2 m3]" {
		t.Fatalf("members %v; want them sorted by ID", ids)
	}
	m1, m2, m3 := g.Members[0], g.Members[1], g.Members[2]
	if m1.Endpoint != "h1:9" || m1.InstanceID != "i1" || m1.RackID != "r1" || !reflect.DeepEqual(m1.ClientTags, map[string]string{"zone": "a"}) {
		t.Errorf("m1: %+v", m1)
	}
	if m2.Endpoint != "" || m2.ClientTags != nil || m2.MemberEpoch != 3 || m2.ClientID != "c2" || m2.InstanceID != "" {
		t.Errorf("m2 (no endpoint, no tags): %+v", m2)
	}
	if m3.Endpoint != "" {
		t.Errorf("m3 has an endpoint without a host: %q; want none", m3.Endpoint)
	}
}

// GROUP_ID_NOT_FOUND is told apart with ListGroups: a group listed with another type is
// ErrNotStreamsGroup with that type (classic when the listing gives none), one listed as a streams
// group or not listed is ErrGroupNotFound. The broker's message is kept in the Kafka error, and an
// empty message adds nothing to it.
func TestGroupNotFoundIsToldApartByTheListing(t *testing.T) {
	str := func(s string) *string { return &s }
	adm := scriptedList(t, func(asked string) kmsg.StreamsGroupDescribeResponseGroup {
		msg := str("no streams group " + asked)
		if asked == "quiet" {
			msg = str("")
		}
		return kmsg.StreamsGroupDescribeResponseGroup{Group: asked, ErrorCode: kerr.GroupIDNotFound.Code, ErrorMessage: msg}
	}, nil, 0, []kmsg.ListGroupsResponseGroup{
		{Group: "orders", GroupType: "consumer", GroupState: "Stable"},
		{Group: "old", GroupState: "Empty"},
		{Group: "ghost", GroupType: "streams", GroupState: "Dead"},
	})
	for _, tc := range []struct {
		group, typ string
		kind       error
	}{
		{"orders", "consumer", ErrNotStreamsGroup},
		{"old", "classic", ErrNotStreamsGroup},
		{"ghost", "", ErrGroupNotFound},
		{"none", "", ErrGroupNotFound},
	} {
		_, err := adm.Describe(ctx(t), tc.group)
		var ge *GroupError
		if !errors.As(err, &ge) || ge.Kind != tc.kind || ge.Type != tc.typ || !errors.Is(err, kerr.GroupIDNotFound) {
			t.Errorf("%s: %#v; want kind %v, type %q", tc.group, err, tc.kind, tc.typ)
			continue
		}
		if want := kerr.GroupIDNotFound.Error() + ": no streams group " + tc.group; ge.Kafka.Error() != want {
			t.Errorf("%s: Kafka error %q; want %q", tc.group, ge.Kafka, want)
		}
	}
	_, err := adm.Describe(ctx(t), "quiet")
	var ge *GroupError
	if !errors.As(err, &ge) || ge.Kafka.Error() != kerr.GroupIDNotFound.Error() {
		t.Errorf("an empty message: %v; want the bare Kafka error", err)
	}
}

// List keeps only streams groups, sorted by ID, and filters by state case-insensitively.
func TestListFiltersStreamsGroupsByState(t *testing.T) {
	adm := scriptedList(t, nil, nil, 0, []kmsg.ListGroupsResponseGroup{
		{Group: "b", GroupType: "streams", GroupState: "Stable"},
		{Group: "d", GroupType: "streams", GroupState: "Empty"},
		{Group: "a", GroupType: "streams", GroupState: "Assigning"},
		{Group: "c", GroupType: "consumer", GroupState: "Stable"},
		{Group: "e", GroupState: "Stable"},
	})
	for _, tc := range []struct {
		states []string
		want   string
	}{
		{nil, "[{a Assigning} {b Stable} {d Empty}]"},
		{[]string{"stable"}, "[{b Stable}]"},
		{[]string{"assigning", "EMPTY"}, "[{a Assigning} {d Empty}]"},
		{[]string{"dead"}, "[]"},
	} {
		got, err := adm.List(ctx(t), tc.states...)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("List(%q) = %v; want %s", tc.states, got, tc.want)
		}
	}
}

// normState lowers ASCII capitals, the first and last included, and leaves the bytes around them.
func TestNormState(t *testing.T) {
	if got := normState("AZ@[`{az"); got != "az@[`{az" {
		t.Fatalf("normState = %q", got)
	}
}
