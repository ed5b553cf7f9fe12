//go:build unix

package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// On one broker a transaction can end while its partitions have no leader (a controlled
// shutdown's last moment, a crash's restart): its coordinator then completes it without writing its
// markers, and the partitions keep it open (docs/runtime.md). TestHungTransactionMergesWithTheNext
// shows what becomes of such a transaction: it does not hang for good; the same producer's next
// transaction on the partition merges with it, so its records become visible when that one
// commits, and are aborted when that one aborts.
//
// The hang is made directly rather than by racing a shutdown: on a broker with
// transaction.partition.verification.enable=false, a transactional batch is written to the
// partition with the producer's ID and epoch, in a Produce request of version 11 (from version 12 on,
// KIP-890's, the broker adds the partition to the transaction itself), so that its coordinator
// never hears of the partition — the state the broker's markerless completion leaves: a partition
// holding a transaction its coordinator does not know to be open.

// writeHungBatch appends one transactional batch of values to topic[partition] as producer
// (id, epoch), starting at sequence 0, without telling its transaction coordinator.
func writeHungBatch(t *testing.T, b *Broker, txnID, topic string, partition int32, id int64, epoch int16, values ...string) {
	t.Helper()
	v11 := kversion.Stable()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	cl := b.Client(t, kgo.MaxVersions(v11))
	now := time.Now().UnixMilli()
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		// A record's Length counts the bytes after its own varint.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	batch := kmsg.RecordBatch{Magic: 2, Attributes: 0x10, // transactional
		LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: id, ProducerEpoch: epoch, FirstSequence: 0, NumRecords: int32(len(values)), Records: recs}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))                                          // Length: what follows it
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))) // CRC-32C from the attributes on
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &txnID, -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("writing the hung batch to %s[%d]: %v", topic, partition, err)
			}
		}
	}
}

// openOn returns the transactions open on topic[partition] (DescribeProducers): producer ID →
// the offset its open transaction starts at.
func openOn(t *testing.T, adm *kadm.Client, topic string, partition int32) map[int64]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	set.Add(topic, partition)
	ps, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int64{}
	for _, tp := range ps {
		for _, p := range tp.Partitions {
			if p.Err != nil {
				t.Fatalf("describing the producers of %s[%d]: %v", topic, partition, p.Err)
			}
			for _, pr := range p.ActiveProducers {
				if pr.CurrentTxnStartOffset >= 0 {
					out[pr.ProducerID] = pr.CurrentTxnStartOffset
				}
			}
		}
	}
	return out
}

// committedValues reads topic[partition] with read_committed from its start to its end offset and
// returns the values a reader sees.
func committedValues(t *testing.T, b *Broker, topic string, partition int32, end int64) []string {
	t.Helper()
	cl := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var values []string
	next := int64(0)
	for next < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s[%d] with read_committed stopped at offset %d of %d (a transaction still open?)", topic, partition, next, end)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				values = append(values, string(r.Value))
			}
		})
	}
	return values
}

func TestHungTransactionMergesWithTheNext(t *testing.T) {
	b := brmDedicatedBroker(t, "transaction.partition.verification.enable=false")
	warmTransactions(t, b)
	topic := Name(t, "hung")
	b.CreateTopic(t, topic, 2)
	adm := b.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for partition, commit := range []bool{true, false} {
		txnID := Name(t, fmt.Sprintf("txn-%v", commit))
		first := b.Client(t, kgo.TransactionalID(txnID))
		id, epoch, err := first.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		writeHungBatch(t, b, txnID, topic, int32(partition), id, epoch, "hung-1", "hung-2")
		first.Close()
		// The hang: the partition holds producer id's transaction open from offset 0 (read_committed
		// readers stop there) while its coordinator has no transaction open.
		if open := openOn(t, adm, topic, int32(partition)); open[id] != 0 || len(open) != 1 {
			t.Fatalf("%s[%d] open transactions %v, want producer %d's from offset 0", topic, partition, open, id)
		}
		if st, err := txnState(adm, txnID); err != nil || st.State == "Ongoing" || len(st.Topics) > 0 {
			t.Fatalf("the coordinator's view of %s: %+v (%v); want no transaction open there (the hang is unknown to it)", txnID, st, err)
		}
		// The same transactional.id's next incarnation (its InitProducerId bumps the epoch, and
		// tells the partition nothing) runs its next transaction on that partition.
		next := b.Client(t, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		nid, nepoch, err := next.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if nid != id || nepoch <= epoch {
			t.Fatalf("the next incarnation is producer %d epoch %d, want producer %d above epoch %d", nid, nepoch, id, epoch)
		}
		if err := next.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := next.ProduceSync(ctx, &kgo.Record{Partition: int32(partition), Value: []byte("next-1")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := next.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		// The next transaction's marker ended the hung one with it: nothing is open on the partition,
		// and a read_committed reader sees both transactions' records (commit) or neither (abort).
		Eventually(t, settle, func() (bool, string) {
			open := openOn(t, adm, topic, int32(partition))
			return len(open) == 0, fmt.Sprintf("still open: %v", open)
		})
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		end, _ := ends.Lookup(topic, int32(partition))
		got := committedValues(t, b, topic, int32(partition), end.Offset)
		want := []string{"hung-1", "hung-2", "next-1"}
		if !commit {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Fatalf("commit %v: a read_committed reader sees %q, want %q (the hung transaction merged with the next)", commit, got, want)
		}
		t.Logf("commit %v: the hung transaction of producer %d epoch %d ended with its next one (epoch %d): visible %q", commit, id, epoch, nepoch, got)
	}
}
