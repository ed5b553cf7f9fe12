package hanging

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnLogRecord is a __transaction_state record of transactional ID id.
func txnLogRecord(id string, pid int64, epoch int16, state kmsg.TransactionState, topic string, parts ...int32) *kgo.Record {
	k := kmsg.TxnMetadataKey{TransactionalID: id}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.State = 1, pid, epoch, state
	if len(parts) > 0 {
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic, t.Partitions = topic, parts
		v.Topics = append(v.Topics, t)
	}
	return &kgo.Record{Topic: "__transaction_state", Key: k.AppendTo(nil), Value: v.AppendTo(nil)}
}

// The Ender finds a transaction that a partition holds open although its coordinator decided it
// (the transaction log holds its PrepareAbort), writes that marker, and the partition's
// transaction closes; a transaction the log shows undecided is left alone.
func TestEnderWritesTheDecidedMarker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out", "open", "__transaction_state"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Two transactions left open on "out" and "open" by two producers that never end them.
	openTxn := func(txnID, topic string) (int64, int16) {
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		id, epoch, err := p.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return id, epoch
	}
	abortedID, abortedEpoch := openTxn("decided", "out")
	liveID, liveEpoch := openTxn("undecided", "open")

	// The transaction log: the first one's coordinator decided an abort (the epoch bumped, KIP-890),
	// the second one is still ongoing.
	w, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.ProduceSync(ctx,
		txnLogRecord("decided", abortedID, abortedEpoch, kmsg.TransactionStateOngoing, "out", 0),
		txnLogRecord("decided", abortedID, abortedEpoch+1, kmsg.TransactionStatePrepareAbort, "out", 0),
		txnLogRecord("undecided", liveID, liveEpoch, kmsg.TransactionStateOngoing, "open", 0),
	).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var wrote []Marker
	var errs []error
	done := make(chan struct{})
	e := &Ender{Seeds: seeds, Topics: []string{"out", "open"}, Interval: 20 * time.Millisecond, Grace: 50 * time.Millisecond, Repair: true,
		Wrote: func(m Marker, err error) {
			mu.Lock()
			defer mu.Unlock()
			wrote, errs = append(wrote, m), append(errs, err)
			if len(wrote) == 2 {
				close(done)
			}
		}}
	ectx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := e.Run(ectx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// kfake's WriteTxnMarkers writes the marker but keeps the producer's state (a real broker ends
	// the transaction there), so the decided transaction still looks open and gets its marker again
	// after each grace. Two markers mean the Ender looked past two graces while the undecided
	// transaction was open all along: every marker must be the decided one's.
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("not two markers for the decided transaction")
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	want := OpenTxn{Topic: "out", Partition: 0, ProducerID: abortedID, ProducerEpoch: abortedEpoch, StartOffset: 0}
	if len(wrote) == 0 {
		t.Fatal("no marker")
	}
	for i, m := range wrote {
		if errs[i] != nil || !strings.HasPrefix(m.String(), "ABORT marker") || m.Txn.Topic != want.Topic || m.Txn.Partition != 0 || m.Txn.ProducerID != want.ProducerID ||
			m.Txn.ProducerEpoch != want.ProducerEpoch || m.Txn.StartOffset != 0 {
			t.Fatalf("marker %d: %v (error %v); want the ABORT marker for %v", i, m, errs[i], want)
		}
	}
}

// Without Repair the Ender is a detector: it reports the decided transaction a partition holds
// open, a commit-decided one too, and writes no marker (the partitions hold no control record).
func TestEnderDetectsWithoutWriting(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out", "__transaction_state"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("decided"), kgo.TransactionTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id, epoch, err := p.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.ProduceSync(ctx,
		txnLogRecord("decided", id, epoch, kmsg.TransactionStateOngoing, "out", 0),
		txnLogRecord("decided", id, epoch+1, kmsg.TransactionStatePrepareCommit, "out", 0),
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	found := make(chan Marker, 16)
	var looks atomic.Int64
	e := &Ender{Seeds: seeds, Topics: []string{"out"}, Interval: 20 * time.Millisecond, Grace: 50 * time.Millisecond,
		Found: func(m Marker) { found <- m }, Looked: func() { looks.Add(1) },
		Wrote: func(m Marker, err error) { t.Errorf("a detector wrote the %v (%v)", m, err) }}
	ectx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := e.Run(ectx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	var m Marker
	select {
	case m = <-found:
	case <-ctx.Done():
		t.Fatal("the hanging transaction was not found")
	}
	stop()
	wg.Wait()
	if looks.Load() < 2 {
		t.Fatalf("%d looks told, yet a hang was found after its grace (at least two)", looks.Load())
	}
	if !m.Commit || m.Txn.Topic != "out" || m.Txn.ProducerID != id || m.Txn.ProducerEpoch != epoch || !strings.HasPrefix(m.String(), "COMMIT marker") {
		t.Fatalf("found %v, want the COMMIT-decided transaction of producer %d epoch %d on out[0]", m, id, epoch)
	}
	r, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("out"), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	var recs []*kgo.Record
	for len(recs) < 1 && rctx.Err() == nil {
		recs = append(recs, r.PollFetches(rctx).Records()...)
	}
	for _, rec := range recs {
		if rec.Attrs.IsControl() {
			t.Fatalf("out[0] holds a control record at offset %d: a detector wrote a marker", rec.Offset)
		}
	}
	if len(recs) != 1 {
		t.Fatalf("out[0] holds %d records, want the transaction's one", len(recs))
	}
}
