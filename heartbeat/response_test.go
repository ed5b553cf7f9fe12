package heartbeat

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

func activeEP(topic string, ps ...int32) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition {
	return []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: topic, Partitions: ps}}
}

func standbyEP(topic string, ps ...int32) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition {
	return []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{{Topic: topic, Partitions: ps}}
}

// Every field of a successful answer lands where it belongs.
func TestParseReadsEveryField(t *testing.T) {
	r := response()
	r.MemberID = "m-1"
	r.MemberEpoch = 9
	r.HeartbeatIntervalMillis = 1500
	r.EndpointInformationEpoch = 4
	r.AcceptableRecoveryLag = 1234
	r.TaskOffsetIntervalMillis = 60000
	r.TopologyDescriptionRequired = true
	r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{2, 0}}}
	r.StandbyTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1}}}
	r.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{3}}}
	r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 1, StatusDetail: "Source topics in are missing."}, {StatusCode: 42}}
	r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
		{UserEndpoint: kmsg.Endpoint{Host: "a", Port: 1}, ActivePartitions: activeEP("in", 3, 1), StandbyPartitions: standbyEP("in", 2)},
		{UserEndpoint: kmsg.Endpoint{Host: "a", Port: 1}, ActivePartitions: activeEP("in", 1, 0), StandbyPartitions: standbyEP("in", 5, 2)},
		{UserEndpoint: kmsg.Endpoint{Host: "b", Port: 2}, ActivePartitions: activeEP("in")},
	}
	p, err := parse(r, topo)
	if err != nil {
		t.Fatal(err)
	}
	id := func(p int32) tasks.ID { return tasks.ID{Subtopology: "0", Partition: p} }
	want := &Response{
		Version: 1, MemberID: "m-1", Epoch: 9, Interval: 1500 * time.Millisecond,
		Assignment: &tasks.Assignment{
			Active: tasks.NewSet(id(0), id(2)), Standby: tasks.NewSet(id(1)), Warmup: tasks.NewSet(id(3)),
		},
		Statuses:      []Status{{MissingSourceTopics, "Source topics in are missing."}, {StatusCode(42), ""}},
		EndpointEpoch: 4,
		Endpoints: map[Endpoint]EndpointPartitions{
			{"a", 1}: {Active: map[string][]int32{"in": {0, 1, 3}}, Standby: map[string][]int32{"in": {2, 5}}},
			{"b", 2}: {Active: map[string][]int32{"in": nil}, Standby: map[string][]int32{}},
		},
		AcceptableRecoveryLag: 1234, TaskOffsetInterval: time.Minute, TopologyDescriptionRequired: true,
	}
	if !p.Assignment.Equal(*want.Assignment) {
		t.Fatalf("assignment %v, want %v", p.Assignment, want.Assignment)
	}
	p.Assignment, want.Assignment = nil, nil
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", p, want)
	}
}

func TestParseWithoutAssignmentOrEndpoints(t *testing.T) {
	r := response()
	r.Version = 0
	r.AcceptableRecoveryLag = 77 // not in a v0 answer
	p, err := parse(r, topo)
	if err != nil {
		t.Fatal(err)
	}
	if p.Assignment != nil || p.Endpoints != nil || p.Statuses != nil || p.AcceptableRecoveryLag != -1 || p.Version != 0 {
		t.Fatalf("an answer without changes: %+v", p)
	}
	// An endpoint map that is present but empty is a change to "no endpoints".
	r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if p, err := parse(r, topo); err != nil || p.Endpoints == nil || len(p.Endpoints) != 0 {
		t.Fatalf("an empty endpoint map: %+v, %v", p, err)
	}
	// Three empty task lists: a change to nothing.
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if p, err := parse(r, topo); err != nil || p.Assignment == nil || !p.Assignment.Equal(tasks.Assignment{}) {
		t.Fatalf("three empty lists: %+v, %v", p, err)
	}
}

// The rules a successful answer must keep; each broken one is a *ProtocolError whose reason names it.
func TestParseRefusesMalformedSuccess(t *testing.T) {
	three := func(r *kmsg.StreamsGroupHeartbeatResponse) {
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	cases := []struct {
		name   string
		edit   func(r *kmsg.StreamsGroupHeartbeatResponse)
		reason string
	}{
		{"member epoch -1", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.MemberEpoch = -1 }, "member epoch -1"},
		{"member epoch -2", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.MemberEpoch = -2 }, "member epoch -2"},
		{"interval 0", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.HeartbeatIntervalMillis = 0 }, "heartbeat interval 0 ms"},
		{"interval -5", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.HeartbeatIntervalMillis = -5 }, "heartbeat interval -5 ms"},
		{"task offset interval -1", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.TaskOffsetIntervalMillis = -1 }, "task offset interval -1 ms"},
		{"active only", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.ActiveTasks = []kmsg.TaskIDs{} }, "all three or none"},
		{"standby only", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.StandbyTasks = []kmsg.TaskIDs{} }, "all three or none"},
		{"warm-up only", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.WarmupTasks = []kmsg.TaskIDs{} }, "all three or none"},
		{"two of three", func(r *kmsg.StreamsGroupHeartbeatResponse) { three(r); r.WarmupTasks = nil }, "all three or none"},
		{"negative active task", func(r *kmsg.StreamsGroupHeartbeatResponse) {
			three(r)
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, -1}}}
		}, `negative partition in subtopology "0"`},
		{"negative standby task", func(r *kmsg.StreamsGroupHeartbeatResponse) {
			three(r)
			r.StandbyTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{-3}}}
		}, "negative partition"},
		{"negative warm-up task", func(r *kmsg.StreamsGroupHeartbeatResponse) {
			three(r)
			r.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{-2147483648}}}
		}, "negative partition"},
		{"negative active endpoint partition", func(r *kmsg.StreamsGroupHeartbeatResponse) {
			r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
				{UserEndpoint: kmsg.Endpoint{Host: "h", Port: 7}, ActivePartitions: activeEP("in", 0, -1)}}
		}, `negative partition of topic "in" for endpoint h:7`},
		{"negative standby endpoint partition", func(r *kmsg.StreamsGroupHeartbeatResponse) {
			r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
				{UserEndpoint: kmsg.Endpoint{Host: "h", Port: 7}, ActivePartitions: activeEP("in", 0), StandbyPartitions: standbyEP("s", -1)}}
		}, `negative partition of topic "s" for endpoint h:7`},
		{"an error code", func(r *kmsg.StreamsGroupHeartbeatResponse) { r.ErrorCode = 16 }, "error code 16 given to Parse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := response()
			c.edit(r)
			p, err := parse(r, topo)
			pe, ok := errors.AsType[*ProtocolError](err)
			if !ok || p != nil {
				t.Fatalf("want a *ProtocolError, got %v, %T %v", p, err, err)
			}
			if !strings.Contains(pe.Reason, c.reason) || !strings.HasPrefix(pe.Error(), "malformed streams group heartbeat answer: ") ||
				!strings.Contains(pe.Error(), pe.Reason) {
				t.Fatalf("reason %q (error %q), want it to say %q", pe.Reason, pe.Error(), c.reason)
			}
		})
	}
	if _, err := parse(nil, topo); err == nil {
		t.Fatal("no answer")
	} else if _, ok := errors.AsType[*ProtocolError](err); !ok {
		t.Fatalf("no answer: %T", err)
	}
}

// The boundaries just inside the rules are accepted.
func TestParseAcceptsTheBoundaries(t *testing.T) {
	r := response()
	r.MemberEpoch, r.HeartbeatIntervalMillis, r.TaskOffsetIntervalMillis = 0, 1, 0
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	r.PartitionsByUserEndpoint = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
		{UserEndpoint: kmsg.Endpoint{Host: "h", Port: 7}, ActivePartitions: activeEP("in", 0), StandbyPartitions: standbyEP("in", 0)}}
	p, err := parse(r, topo)
	if err != nil || p.Epoch != 0 || p.Interval != time.Millisecond || p.TaskOffsetInterval != 0 {
		t.Fatalf("%+v, %v", p, err)
	}
}

func TestParseRefusesUnknownSubtopologies(t *testing.T) {
	for _, edit := range []func(r *kmsg.StreamsGroupHeartbeatResponse){
		func(r *kmsg.StreamsGroupHeartbeatResponse) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "9", Partitions: []int32{0}}}
		},
		func(r *kmsg.StreamsGroupHeartbeatResponse) {
			r.StandbyTasks = []kmsg.TaskIDs{{SubtopologyID: "9", Partitions: []int32{0}}}
		},
		func(r *kmsg.StreamsGroupHeartbeatResponse) {
			r.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "9", Partitions: []int32{0}}}
		},
	} {
		r := response()
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		edit(r)
		if _, err := parse(r, topo); !errors.As(err, new(*tasks.UnknownSubtopologyError)) {
			t.Errorf("got %T %v", err, err)
		}
	}
}

func TestClassify(t *testing.T) {
	ok := response()
	p, err := classify(ok, nil, topo)
	if err != nil || p.Epoch != 3 || p.Interval != 500*time.Millisecond {
		t.Fatalf("a success is parsed: %+v, %v", p, err)
	}

	msg := "not here"
	moved := response()
	moved.ErrorCode, moved.ErrorMessage = kerr.NotCoordinator.Code, &msg
	p, err = classify(moved, nil, topo)
	he, isErr := errors.AsType[*Error](err)
	if p != nil || !isErr || he.Class != Rediscover || he.BrokerMessage != "not here" || !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("an error code is an *Error: %v, %T %v", p, err, err)
	}
	// The error code wins over what else the answer carries.
	moved.HeartbeatIntervalMillis = 0
	if _, err := classify(moved, nil, topo); !errors.As(err, new(*Error)) {
		t.Fatalf("error answers are not checked as successes: %T", err)
	}

	bad := response()
	bad.HeartbeatIntervalMillis = 0
	if _, err := classify(bad, nil, topo); !errors.As(err, new(*ProtocolError)) {
		t.Fatalf("a malformed success: %T %v", err, err)
	}

	p, err = classify(nil, nil, topo)
	if pe, ok := errors.AsType[*ProtocolError](err); !ok || p != nil || pe.Reason != "no answer and no error" {
		t.Fatalf("no answer and no error: %v, %v", p, err)
	}

	reset := &syscallErr{syscall.ECONNRESET}
	p, err = classify(nil, reset, topo)
	te, isTE := errors.AsType[*TransportError](err)
	if p != nil || !isTE || te.Class != Rediscover || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a failure to get an answer: %v, %T %v", p, err, err)
	}
	// An error with an answer: the error wins (kgo never gives both, a custom transport might).
	if p, err := classify(ok, io.EOF, topo); p != nil || !errors.As(err, new(*TransportError)) {
		t.Fatalf("an error with an answer: %v, %v", p, err)
	}
	if _, err := classify(nil, kgo.ErrClientClosed, topo); !errors.As(err, &te) || te.Class != Fatal {
		t.Fatalf("a closed client: %v", err)
	}
	// Typed errors of this package pass through unwrapped.
	for _, in := range []error{ClassifyTransport(io.EOF), ErrorFor(kerr.FencedMemberEpoch.Code, nil), &ProtocolError{Reason: "x"}} {
		if _, err := classify(nil, in, topo); err != in {
			t.Errorf("%T was wrapped again: %T %v", in, err, err)
		}
	}
}

type syscallErr struct{ errno syscall.Errno }

func (e *syscallErr) Error() string { return "read: " + e.errno.Error() }
func (e *syscallErr) Unwrap() error { return e.errno }

func TestCapabilitiesFrom(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: int16(kmsg.StreamsGroupDescribe), MaxVersion: 7},
		{ApiKey: int16(kmsg.StreamsGroupHeartbeat), MinVersion: 0, MaxVersion: 1},
		{ApiKey: int16(kmsg.Produce), MaxVersion: 12},
	}
	resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{
		{Name: "metadata.version", MaxVersionLevel: 27},
		{Name: "streams.version", MaxVersionLevel: 2, MinVersionLevel: 1},
		{Name: "group.version", MaxVersionLevel: 5},
	}
	c, err := CapabilitiesFrom(resp)
	if err != nil || c != (Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 2}) {
		t.Fatalf("got %+v, %v", c, err)
	}
	resp.ApiKeys = resp.ApiKeys[2:]
	resp.FinalizedFeatures = resp.FinalizedFeatures[:1]
	c, err = CapabilitiesFrom(resp)
	if err != nil || c != (Capabilities{HeartbeatMaxVersion: -1, StreamsVersion: 0}) {
		t.Fatalf("a cluster without streams: %+v, %v", c, err)
	}
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if c, err := CapabilitiesFrom(resp); !errors.Is(err, kerr.UnsupportedVersion) || c != (Capabilities{}) ||
		!strings.Contains(err.Error(), "API versions") {
		t.Fatalf("an error answer: %+v, %v", c, err)
	}
}

func TestCapabilitiesGates(t *testing.T) {
	cases := []struct {
		c              Capabilities
		ok             bool
		says           string
		static, offset bool
	}{
		{Capabilities{HeartbeatMaxVersion: -1, StreamsVersion: 1}, false, "do not know StreamsGroupHeartbeat", false, false},
		{Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 0}, false, "streams.version is 0", false, false},
		{Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: -1}, false, "streams.version is -1", false, false},
		{Capabilities{HeartbeatMaxVersion: 0, StreamsVersion: 1}, true, "", false, false},
		{Capabilities{HeartbeatMaxVersion: 1, StreamsVersion: 1}, true, "", true, true},
		{Capabilities{HeartbeatMaxVersion: 2, StreamsVersion: 2}, true, "", true, true},
	}
	for _, c := range cases {
		err := c.c.Check()
		if (err == nil) != c.ok || (err != nil && (!errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), c.says))) {
			t.Errorf("%+v: Check() = %v", c.c, err)
		}
		if c.c.StaticMembership() != c.static || c.c.TaskOffsets() != c.offset {
			t.Errorf("%+v: static %v offsets %v", c.c, c.c.StaticMembership(), c.c.TaskOffsets())
		}
	}
}

func TestStatusCodes(t *testing.T) {
	for c := StatusCode(-2); c <= 8; c++ {
		known := c >= 0 && c <= 6
		if c.Known() != known {
			t.Errorf("%d: Known() = %v", c, !known)
		}
		if name := c.String(); known == strings.HasPrefix(name, "UNKNOWN_STATUS_") {
			t.Errorf("%d: %q", c, name)
		}
		blocks := c == MissingSourceTopics || c == MissingInternalTopics || c == IncorrectlyPartitionedTopics || c == AssignmentDelayed
		if c.BlocksReadiness() != blocks {
			t.Errorf("%d: BlocksReadiness() = %v", c, !blocks)
		}
	}
	names := []string{"STALE_TOPOLOGY", "MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS", "MISSING_INTERNAL_TOPICS",
		"SHUTDOWN_APPLICATION", "ASSIGNMENT_DELAYED", "MISSING_CLIENT_TAGS"}
	for i, n := range names {
		if StatusCode(i).String() != n {
			t.Errorf("%d: %q, want %q", i, StatusCode(i).String(), n)
		}
	}
	if StatusCode(-3).String() != "UNKNOWN_STATUS_-3" {
		t.Error(StatusCode(-3).String())
	}
}

func TestResponseHasAndReady(t *testing.T) {
	one := &Response{Statuses: []Status{{Code: AssignmentDelayed}}}
	if !one.Has(AssignmentDelayed) || one.Has(MissingSourceTopics) || one.Ready() {
		t.Error("a response with ASSIGNMENT_DELAYED only")
	}
	stale := &Response{Statuses: []Status{{Code: StaleTopology}, {Code: StatusCode(50)}}}
	if !stale.Has(StaleTopology) || !stale.Has(50) || stale.Has(AssignmentDelayed) || !stale.Ready() {
		t.Error("STALE_TOPOLOGY and an unknown status do not block readiness")
	}
	if none := (&Response{}); none.Has(StaleTopology) || !none.Ready() {
		t.Error("no statuses")
	}
	if (Endpoint{Host: "h", Port: 80}).String() != "h:80" {
		t.Error("Endpoint.String")
	}
}

func TestStatusTopicsEdges(t *testing.T) {
	cases := []struct {
		s    Status
		want []string
	}{
		// Nothing after the colon before the semicolon: no topics, and the rest of the text is not read.
		{Status{MissingInternalTopics, "Internal topics are missing:; Unauthorized to CREATE on topics x."}, nil},
		{Status{MissingInternalTopics, "Internal topics are missing: a"}, []string{"a"}},
		// The bracket may open the text.
		{Status{IncorrectlyPartitionedTopics, "[l, r]"}, []string{"l", "r"}},
		{Status{IncorrectlyPartitionedTopics, "partitions:x[l, r]"}, []string{"l", "r"}},
		// An empty list followed by more text: the list ends at the first bracket.
		{Status{IncorrectlyPartitionedTopics, "Following topics do not have the same number of partitions: [] y]"}, nil},
		{Status{IncorrectlyPartitionedTopics, "Following topics do not have the same number of partitions: [a, b] and more"}, []string{"a", "b"}},
		// No brackets: the topics after the last colon.
		{Status{IncorrectlyPartitionedTopics, "Following topics do not have the same number of partitions: b, a"}, []string{"a", "b"}},
		{Status{IncorrectlyPartitionedTopics, ":b, a"}, []string{"a", "b"}}, // the colon may open the text
		{Status{IncorrectlyPartitionedTopics, "no topics named"}, nil},
		// An internal topic of the wrong size (a 4.4 broker's detail, as a changelog created with
		// one partition for a two-partition input got it).
		{Status{IncorrectlyPartitionedTopics, "Existing topic app-counts-changelog has different number of partitions: expected 2, found 1"},
			[]string{"app-counts-changelog"}},
		// Duplicates, invalid names and punctuation are dropped.
		{Status{MissingSourceTopics, "Source topics a, a, b/c, {d}. are missing."}, []string{"a", "d"}},
		{Status{MissingSourceTopics, "Source topics are missing."}, nil},
		{Status{ShutdownApplication, "Source topics a are missing."}, []string{"a"}},
		{Status{StaleTopology, "whatever: [a]"}, nil},
		// Past three topics the broker counts the rest: the count's words are no topic names.
		{Status{MissingInternalTopics, "Internal topics are missing: a-changelog, b-repartition, c-changelog and 2 additional topics; Unauthorized to CREATE on topics a-changelog."},
			[]string{"a-changelog", "b-repartition", "c-changelog"}},
		{Status{MissingInternalTopics, "Internal topics are missing: a, b, c and 12 additional topics"}, []string{"a", "b", "c"}},
	}
	for _, c := range cases {
		if got := c.s.Topics(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.s.Code, c.s.Detail, got, c.want)
		}
	}
}

// CreateDenied reads the topics a MISSING_INTERNAL_TOPICS detail says the broker may not create as
// the member (the detail of Kafka 4.2 to 4.4 when the principal lacks CREATE), whatever precedes
// or follows that part, and nothing from any other status or detail.
func TestStatusCreateDenied(t *testing.T) {
	cases := []struct {
		s    Status
		want []string
	}{
		{Status{MissingInternalTopics, "Internal topics are missing: app-a-repartition, app-s-changelog; Unauthorized to CREATE on topics app-s-changelog, app-a-repartition."},
			[]string{"app-a-repartition", "app-s-changelog"}},
		{Status{MissingInternalTopics, "Unauthorized to CREATE on topics x.y."}, []string{"x.y"}},
		{Status{MissingInternalTopics, "Internal topics are missing: a; Unauthorized to CREATE on topics a; Creation failed: b (TIMEOUT)."}, []string{"a"}},
		{Status{MissingInternalTopics, "Internal topics are missing: a, b"}, nil},
		{Status{MissingInternalTopics, "Internal topics are missing: a; Creation failed: a (POLICY_VIOLATION: no)."}, nil},
		{Status{MissingSourceTopics, "Unauthorized to CREATE on topics a."}, nil},
		{Status{MissingInternalTopics, ""}, nil},
	}
	for _, c := range cases {
		if got := c.s.CreateDenied(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.s.Code, c.s.Detail, got, c.want)
		}
	}
}

// The list of topics the broker may not create ends at the first ';' of the detail, even one right
// after the phrase (then no topic is named).
func TestCreateDeniedStopsAtTheFirstSemicolon(t *testing.T) {
	s := Status{Code: MissingInternalTopics, Detail: "Internal topics are missing: [app-x]; Unauthorized to CREATE on topics ; other words"}
	if got := s.CreateDenied(); len(got) != 0 {
		t.Fatalf("CreateDenied = %v, want none: the list is empty before the ';'", got)
	}
	s.Detail = "Internal topics are missing: [app-x]; Unauthorized to CREATE on topics app-x; other words"
	if got := s.CreateDenied(); len(got) != 1 || got[0] != "app-x" {
		t.Fatalf("CreateDenied = %v, want [app-x]", got)
	}
}
