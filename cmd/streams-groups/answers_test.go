package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/internal/kfakestreams"
)

// fakeCluster answers StreamsGroupDescribe with answer(asked group) and returns --bootstrap-server.
func fakeCluster(t *testing.T, answer func(string) kmsg.StreamsGroupDescribeResponseGroup) string {
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
			resp.Groups = append(resp.Groups, answer(g))
		}
		return resp, nil, true
	})
	return "--bootstrap-server=" + strings.Join(c.ListenAddrs(), ",")
}

// The tool prints nothing of an answer about another group, and an unknown error code keeps its number.
func TestCLIRefusesWrongAnswers(t *testing.T) {
	wrong := fakeCluster(t, func(string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{Group: "other", State: "Stable", Epoch: 4}
	})
	for _, view := range []string{"--members", "--state", "--offsets", "--topology"} {
		var out, errw bytes.Buffer
		code := run([]string{wrong, "--describe", "--group", "mine", view, "--timeout", "5000"}, &out, &errw)
		if code != exitFailed || out.Len() != 0 || !strings.Contains(errw.String(), `the broker answered about group "other" instead`) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", view, code, out.String(), errw.String())
		}
	}
	unknown := fakeCluster(t, func(g string) kmsg.StreamsGroupDescribeResponseGroup {
		return kmsg.StreamsGroupDescribeResponseGroup{Group: g, ErrorCode: 9999}
	})
	var out, errw bytes.Buffer
	code := run([]string{unknown, "--describe", "--group", "g", "--state"}, &out, &errw)
	if code != exitFailed || !strings.Contains(errw.String(), "unknown error code 9999") || strings.Contains(errw.String(), "UNKNOWN_SERVER_ERROR") {
		t.Errorf("code 9999: exit %d, stderr %q", code, errw.String())
	}
}
