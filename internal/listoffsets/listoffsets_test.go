package listoffsets

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

func TestStartsAndEnds(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := context.Background()
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteRecords(ctx, kadm.Offsets{"t": {1: {At: 2}}}); err != nil {
		t.Fatal(err)
	}
	l := Lister{Admin: adm}
	p0, p1 := tasks.TopicPartition{Topic: "t", Partition: 0}, tasks.TopicPartition{Topic: "t", Partition: 1}
	starts, partErr, err := l.Starts(ctx, []string{"t"})
	if err != nil || partErr != nil || len(starts) != 2 || starts[p0] != 0 || starts[p1] != 2 {
		t.Fatalf("Starts = %v, %v, %v; want t[0]=0 t[1]=2", starts, partErr, err)
	}
	ends, partErr, err := l.Ends(ctx, []string{"t"})
	if err != nil || partErr != nil || len(ends) != 2 || ends[p0] != 0 || ends[p1] != 3 {
		t.Fatalf("Ends = %v, %v, %v; want t[0]=0 t[1]=3", ends, partErr, err)
	}
}

// A partition the broker refuses is left out and named; the others are listed.
func TestAPartitionThatFailsIsNamed(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	answerListOffsets(c, func(rp kmsg.ListOffsetsRequestTopicPartition) (int64, int16) {
		if rp.Partition == 1 {
			return -1, kerr.UnknownServerError.Code
		}
		return 7, 0
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ends, partErr, err := Lister{Admin: kadm.NewClient(cl)}.Ends(context.Background(), []string{"t"})
	if err != nil || len(ends) != 1 || ends[tasks.TopicPartition{Topic: "t", Partition: 0}] != 7 {
		t.Fatalf("Ends = %v, %v; want t[0]=7 alone", ends, err)
	}
	if !errors.Is(partErr, kerr.UnknownServerError) || partErr.Error() != "t[1]: "+kerr.UnknownServerError.Error() {
		t.Fatalf("partition error %v, want t[1] named with UNKNOWN_SERVER_ERROR", partErr)
	}
}

// A listing that cannot be sent at all is the error of the whole call.
func TestAListingThatFailsIsTheError(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	offs, partErr, err := Lister{Admin: kadm.NewClient(cl)}.Starts(context.Background(), []string{"t"})
	if err == nil || offs != nil || partErr != nil {
		t.Fatalf("Starts on a closed client = %v, %v, %v; want only an error", offs, partErr, err)
	}
}

// Bounds is both listings, and a partition that failed in either is its error.
func TestBounds(t *testing.T) {
	for _, c := range []struct {
		name       string
		failStarts bool
		failEnds   bool
	}{{"both listed", false, false}, {"a start failed", true, false}, {"an end failed", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(kc.Close)
			answerListOffsets(kc, func(rp kmsg.ListOffsetsRequestTopicPartition) (int64, int16) {
				start := rp.Timestamp == -2 // earliest
				if start && c.failStarts || !start && c.failEnds {
					return -1, kerr.UnknownServerError.Code
				}
				return map[bool]int64{true: 4, false: 9}[start], 0
			})
			cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			start, end, err := Lister{Admin: kadm.NewClient(cl)}.Bounds(context.Background(), []string{"t"})
			p0 := tasks.TopicPartition{Topic: "t", Partition: 0}
			if !c.failStarts && !c.failEnds {
				if err != nil || start[p0] != 4 || end[p0] != 9 {
					t.Fatalf("Bounds = %v, %v, %v; want t[0] from 4 to 9", start, end, err)
				}
				return
			}
			if !errors.Is(err, kerr.UnknownServerError) || start != nil || end != nil {
				t.Fatalf("Bounds = %v, %v, %v; want only t[0]'s error", start, end, err)
			}
		})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if start, end, err := (Lister{Admin: kadm.NewClient(cl)}).Bounds(context.Background(), []string{"t"}); err == nil || start != nil || end != nil {
		t.Fatalf("Bounds on a closed client = %v, %v, %v", start, end, err)
	}
}

// answerListOffsets makes kc answer every ListOffsets with answer's offset and error code for each
// partition asked.
func answerListOffsets(kc *kfake.Cluster, answer func(kmsg.ListOffsetsRequestTopicPartition) (offset int64, code int16)) {
	kc.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			st := kmsg.ListOffsetsResponseTopic{Topic: rt.Topic}
			for _, rp := range rt.Partitions {
				offset, code := answer(rp)
				st.Partitions = append(st.Partitions, kmsg.ListOffsetsResponseTopicPartition{
					Partition: rp.Partition, Offset: offset, ErrorCode: code, LeaderEpoch: -1, Timestamp: -1})
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}
