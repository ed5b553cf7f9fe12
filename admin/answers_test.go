package admin

import (
	"context"
	"errors"
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
