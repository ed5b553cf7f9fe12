package hanging

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ender follows the transaction log and, every Interval, the open transactions of Topics, and
// reports each transaction the broker left hanging (Found); with Repair it writes the ABORT marker
// of those decided to abort instead, as an operator would (a commit-decided one is still reported).
type Ender struct {
	// Seeds are the cluster's bootstrap addresses.
	Seeds []string
	// Opts are more client options (a dialer, TLS).
	Opts []kgo.Opt
	// Topics are the topics whose partitions are looked at (__consumer_offsets for the group's
	// offsets).
	Topics []string
	// Interval is the time between two looks.
	Interval time.Duration
	// Grace is how long a transaction may stay open after its coordinator's decision was seen
	// before it counts as hanging (the coordinator writes markers within milliseconds).
	Grace time.Duration
	// Repair writes the ABORT markers of abort-decided hangs (for a run about the single-node broker
	// limitation only); without it the Ender is a detector: it writes nothing.
	Repair bool
	// Found is told every hanging transaction not repaired, once.
	Found func(m Marker)
	// Wrote is told every marker written (err nil) or that could not be (err set), with Repair.
	Wrote func(m Marker, err error)
	// Looked is told every look that read the open transactions of every partition of Topics: a
	// detector that never looked found nothing for want of trying, which its user must tell apart
	// from finding no hang.
	Looked func()
}

// Run ends hanging transactions until ctx ends. A look that fails (the broker restarting) is
// taken again at the next interval.
func (e *Ender) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Seeds...), kgo.ConsumeTopics("__transaction_state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, e.Opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var mu sync.Mutex
	txnLog := map[int64][]TxnRecord{}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				tr, ok, err := ParseTxnRecord(r.Key, r.Value)
				if err != nil || !ok {
					return
				}
				recs := append(txnLog[tr.ProducerID], tr)
				if len(recs) > 512 { // a hang is decided within a few records of its transaction
					recs = recs[len(recs)-512:]
				}
				txnLog[tr.ProducerID] = recs
			})
			mu.Unlock()
		}
	})
	w := &Watch{Grace: e.Grace, Commits: true, Once: !e.Repair}
	t := time.NewTicker(e.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		open, err := openTxns(ctx, adm, e.Topics)
		if err != nil {
			continue
		}
		if e.Looked != nil {
			e.Looked()
		}
		mu.Lock()
		snap := make(map[int64][]TxnRecord, len(txnLog))
		for id, recs := range txnLog {
			snap[id] = recs
		}
		mu.Unlock()
		for _, m := range w.Look(time.Now(), open, snap) {
			if !e.Repair || m.Commit {
				if e.Found != nil {
					e.Found(m)
				}
				continue
			}
			err := writeMarker(ctx, adm, m)
			if e.Wrote != nil {
				e.Wrote(m, err)
			}
		}
	}
}

// openTxns lists the producers with a transaction open on the partitions of topics.
func openTxns(ctx context.Context, adm *kadm.Client, topics []string) ([]OpenTxn, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := adm.ListTopicsWithInternal(rctx, topics...)
	if err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for _, td := range md {
		if td.Err != nil {
			continue // a topic not created yet
		}
		for p := range td.Partitions {
			set.Add(td.Topic, p)
		}
	}
	ps, err := adm.DescribeProducers(rctx, set)
	if err != nil {
		return nil, err
	}
	var open []OpenTxn
	for _, t := range ps {
		for _, p := range t.Partitions {
			if p.Err != nil {
				return nil, fmt.Errorf("describing the producers of %s[%d]: %w", p.Topic, p.Partition, p.Err)
			}
			for _, pr := range p.ActiveProducers {
				if pr.CurrentTxnStartOffset >= 0 {
					open = append(open, OpenTxn{Topic: pr.Topic, Partition: pr.Partition, ProducerID: pr.ProducerID,
						ProducerEpoch: pr.ProducerEpoch, CoordinatorEpoch: pr.CoordinatorEpoch, StartOffset: pr.CurrentTxnStartOffset})
				}
			}
		}
	}
	return open, nil
}

// writeMarker writes m to its partition's leader (WriteTxnMarkers, as kafka-transactions.sh abort
// does).
func writeMarker(ctx context.Context, adm *kadm.Client, m Marker) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	set.Add(m.Txn.Topic, m.Txn.Partition)
	resps, err := adm.WriteTxnMarkers(rctx, kadm.TxnMarkers{ProducerID: m.Txn.ProducerID, ProducerEpoch: m.Txn.ProducerEpoch,
		Commit: false, CoordinatorEpoch: m.Txn.CoordinatorEpoch, Topics: set})
	if err != nil {
		return err
	}
	var perr error
	resps.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
		if p.Err != nil {
			perr = p.Err
		}
	})
	return perr
}
