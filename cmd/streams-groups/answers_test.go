package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// --topology-id FILE --group G prints how the file differs from the group's topology when the verdict
// is not "same", in the table and in JSON, and nothing when it is.
func TestTopologyIDPrintsTheDiff(t *testing.T) {
	bs := fakeCluster(t, func(g string) kmsg.StreamsGroupDescribeResponseGroup {
		topo := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}},
		}}
		return kmsg.StreamsGroupDescribeResponseGroup{Group: g, State: "Stable", Topology: topo}
	})
	dir := t.TempDir()
	same := filepath.Join(dir, "same.json")
	other := filepath.Join(dir, "other.json")
	os.WriteFile(same, []byte(`{"subtopologies":[{"id":"0","sourceTopics":["in"]}]}`), 0o644)
	os.WriteFile(other, []byte(`{"subtopologies":[{"id":"0","sourceTopics":["elsewhere"]},{"id":"1","sourceTopics":["more"]}]}`), 0o644)

	var out, errw bytes.Buffer
	if code := run([]string{bs, "--topology-id", other, "--group", "g"}, &out, &errw); code != exitOK {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	for _, want := range []string{"changed-without-epoch-bump", "DIFFERENCES", `subtopology "0": source topic "elsewhere" is only in this topology`,
		`subtopology "0": source topic "in" is only in the group's topology`, `subtopology "1" is only in this topology`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{bs, "--topology-id", other, "--group", "g", "--output", "json"}, &out, &errw); code != exitOK {
		t.Fatalf("json: exit %d", code)
	}
	var doc struct {
		Verdict     string   `json:"verdict"`
		Differences []string `json:"differences"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Verdict != "changed-without-epoch-bump" || len(doc.Differences) != 3 {
		t.Fatalf("json: %v %+v\n%s", err, doc, out.String())
	}
	out.Reset()
	if code := run([]string{bs, "--topology-id", same, "--group", "g"}, &out, &errw); code != exitOK ||
		!strings.Contains(out.String(), "same") || strings.Contains(out.String(), "DIFFERENCES") {
		t.Fatalf("same topology: exit %d\n%s", code, out.String())
	}
}
