package commit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/tasks"
)

// txnCluster answers AddOffsetsToTxn and TxnOffsetCommit with scripted codes.
type txnCluster struct {
	mu      sync.Mutex
	adds    []*kmsg.AddOffsetsToTxnRequest
	commits []*kmsg.TxnOffsetCommitRequest
	lookups int // Metadata requests
	addCode func(n int) int16
	code    func(n int) int16
}

func (f *txnCluster) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.AddOffsetsToTxnRequest:
		n := len(f.adds)
		f.adds = append(f.adds, r)
		resp := kmsg.NewPtrAddOffsetsToTxnResponse()
		if f.addCode != nil {
			resp.ErrorCode = f.addCode(n)
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		f.lookups++
		resp := kmsg.NewPtrMetadataResponse()
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, topicIDs[*t.Topic]
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.TxnOffsetCommitRequest:
		n := len(f.commits)
		f.commits = append(f.commits, r)
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				if f.code != nil {
					rp.ErrorCode = f.code(n)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected request %T", req)
}

var producer = Producer{TransactionalID: "app-pid-1", ID: 42, Epoch: 3}

func TestCommitInTransactionCarriesProducerAndMember(t *testing.T) {
	cl := &txnCluster{}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10}); err != nil {
		t.Fatal(err)
	}
	if len(cl.adds) != 1 || cl.adds[0].TransactionalID != "app-pid-1" || cl.adds[0].ProducerID != 42 || cl.adds[0].ProducerEpoch != 3 || cl.adds[0].Group != "app" {
		t.Fatalf("AddOffsetsToTxn %+v", cl.adds)
	}
	if len(cl.commits) != 1 {
		t.Fatalf("%d TxnOffsetCommits", len(cl.commits))
	}
	r := cl.commits[0]
	if r.TransactionalID != "app-pid-1" || r.ProducerID != 42 || r.ProducerEpoch != 3 || r.Group != "app" || r.Generation != 7 || r.MemberID != "m1" {
		t.Fatalf("TxnOffsetCommit identity %+v", r)
	}
	if len(r.Topics) != 1 || r.Topics[0].Topic != "in" || r.Topics[0].TopicID != topicIDs["in"] || len(r.Topics[0].Partitions) != 1 ||
		r.Topics[0].Partitions[0].Partition != 1 || r.Topics[0].Partitions[0].Offset != 10 {
		t.Fatalf("TxnOffsetCommit topics %+v", r.Topics)
	}
}

func TestCommitInTransactionChecksOwnershipFirst(t *testing.T) {
	cl := &txnCluster{}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	var no *NotOwnedError
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 2): 10}); !errors.As(err, &no) {
		t.Fatalf("offsets of a task not owned: %v", err)
	}
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{}); err != nil || len(cl.adds)+len(cl.commits) != 0 {
		t.Fatalf("empty offsets: %v, %d requests", err, len(cl.adds)+len(cl.commits))
	}
}

func TestCommitInTransactionFencedMemberIsLost(t *testing.T) {
	cl := &txnCluster{code: func(int) int16 { return kerr.FencedMemberEpoch.Code }}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10})
	if !errors.Is(err, ErrTasksLost) {
		t.Fatalf("a fenced member's transactional commit: %v, want ErrTasksLost", err)
	}
}

func TestCommitInTransactionFencedProducerIsATxnError(t *testing.T) {
	cl := &txnCluster{code: func(int) int16 { return kerr.ProducerFenced.Code }}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10})
	var te *TxnError
	if !errors.As(err, &te) || te.Request != "TxnOffsetCommit" || !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("a fenced producer: %v", err)
	}
}

func TestAddOffsetsToTxnRetriesConcurrentTransactions(t *testing.T) {
	cl := &txnCluster{addCode: func(n int) int16 {
		if n < 2 {
			return kerr.ConcurrentTransactions.Code
		}
		return 0
	}}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10}); err != nil {
		t.Fatal(err)
	}
	if len(cl.adds) != 3 || len(cl.commits) != 1 {
		t.Fatalf("%d AddOffsetsToTxn, %d TxnOffsetCommit; want 3 and 1", len(cl.adds), len(cl.commits))
	}
	cl = &txnCluster{addCode: func(int) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }}
	c = newCommitter(t, cl, member("m1", 7, "0_1"))
	err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10})
	var te *TxnError
	if !errors.As(err, &te) || te.Request != "AddOffsetsToTxn" || !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || len(cl.commits) != 0 {
		t.Fatalf("an unauthorized transactional ID: %v (%d commits)", err, len(cl.commits))
	}
	cl = &txnCluster{addCode: func(int) int16 { return kerr.ConcurrentTransactions.Code }}
	c = newCommitter(t, cl, member("m1", 7, "0_1"))
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10}); !errors.As(err, &te) || len(cl.adds) != maxAttempts {
		t.Fatalf("endless CONCURRENT_TRANSACTIONS: %v after %d attempts", err, len(cl.adds))
	}
}

func TestCommittedOffsetsRequireStable(t *testing.T) {
	cl := &fakeCluster{}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	if _, err := c.CommittedOffsets(context.Background(), set("0_1")); err != nil {
		t.Fatal(err)
	}
	if len(cl.fetches) != 1 || !cl.fetches[0].RequireStable {
		t.Fatalf("OffsetFetch without RequireStable: an exactly-once task could start before its last transaction's offsets")
	}
}

// Offsets a transaction holds pending past every retry give an error that says so and names the
// tool that finds a hanging transaction, not a coordinator that kept moving.
func TestCommittedOffsetsPendingPastTheRetriesSaySo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := &fakeCluster{fetch: func(int) (int16, map[tasks.TopicPartition]int64) { return kerr.UnstableOffsetCommit.Code, nil }}
		c := newCommitter(t, cl, member("m1", 7, "0_1"))
		_, err := c.CommittedOffsets(context.Background(), set("0_1"))
		if !errors.Is(err, kerr.UnstableOffsetCommit) || !strings.Contains(err.Error(), "a transaction still holds these offsets pending") ||
			!strings.Contains(err.Error(), "kafka-transactions.sh find-hanging") || strings.Contains(err.Error(), "kept moving") {
			t.Fatalf("CommittedOffsets = %v; want UNSTABLE_OFFSET_COMMIT saying a transaction holds the offsets and how to find it", err)
		}
		if len(cl.fetches) != maxAttempts {
			t.Fatalf("%d OffsetFetches, want %d", len(cl.fetches), maxAttempts)
		}
	})
}

// TxnOffsetCommit sends no leader epoch (-1: the member does not track the epochs of the records it
// consumed), as the broker decodes the request at every version that has the field (v2+).
func TestCommitInTransactionSendsNoLeaderEpoch(t *testing.T) {
	cl := &txnCluster{}
	c := newCommitter(t, cl, member("m1", 7, "0_0", "0_1", "1_0"))
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 0): 0, tp("in", 1): 10, tp("app-rep-repartition", 0): 3}); err != nil {
		t.Fatal(err)
	}
	if len(cl.commits) != 1 {
		t.Fatalf("%d TxnOffsetCommits, want 1", len(cl.commits))
	}
	sent := *cl.commits[0]
	for v := int16(2); v <= sent.MaxVersion(); v++ {
		sent.SetVersion(v)
		got := kmsg.NewPtrTxnOffsetCommitRequest()
		got.SetVersion(v)
		if err := got.ReadFrom(sent.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		n := 0
		for _, rt := range got.Topics {
			for _, p := range rt.Partitions {
				n++
				if p.LeaderEpoch != -1 {
					t.Fatalf("v%d: the broker reads leader epoch %d for %s/%d, want -1", v, p.LeaderEpoch, rt.Topic, p.Partition)
				}
			}
		}
		if n != 3 {
			t.Fatalf("v%d: the broker reads %d partitions, want 3", v, n)
		}
	}
}

// UNKNOWN_TOPIC_ID (a topic deleted and created again under the same name) makes the transactional
// commit look the topic's ID up again before it retries, as Commit does.
func TestCommitInTransactionRefreshesAnUnknownTopicID(t *testing.T) {
	cl := &txnCluster{code: func(n int) int16 {
		if n == 0 {
			return kerr.UnknownTopicID.Code
		}
		return 0
	}}
	c := newCommitter(t, cl, member("m1", 7, "0_1"))
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 10}); err != nil {
		t.Fatal(err)
	}
	if cl.lookups != 2 || len(cl.commits) != 2 {
		t.Fatalf("%d topic lookups, %d TxnOffsetCommits; want 2 and 2 (the unknown ID looked up again)", cl.lookups, len(cl.commits))
	}
	// A success forgets nothing: the next commit uses the cached ID.
	if err := c.CommitInTransaction(context.Background(), producer, Offsets{tp("in", 1): 11}); err != nil || cl.lookups != 2 {
		t.Fatalf("a later commit: %v, %d topic lookups; want the cached ID (2)", err, cl.lookups)
	}
}
