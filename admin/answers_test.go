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
// DeleteGroups and ListGroups with the given functions.
func scripted(t *testing.T, describe func(asked string) kmsg.StreamsGroupDescribeResponseGroup,
	del func(asked []string) []kmsg.DeleteGroupsResponseGroup, listCode int16) *Client {
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
		resp.ErrorCode = listCode
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
