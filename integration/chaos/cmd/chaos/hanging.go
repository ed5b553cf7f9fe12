package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/integration/chaos"
)

// hangGrace is how long a decided transaction may stay open on a partition before the driver
// writes its marker: the coordinator writes them within milliseconds of its decision.
const hangGrace = 5 * time.Second

// endHanging runs beside the exactly-once app until ctx ends: it follows the transaction log, and
// every 2 s it looks at the open transactions of the app's topics and the group's offsets, writing
// the marker of each hanging one (chaos.HangWatch; a broker limitation, see the README).
func (d *driver) endHanging(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.broker.addrs...), kgo.ConsumeTopics("__transaction_state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fmt.Printf("chaos: following the transaction log: %v\n", err)
		return
	}
	defer cl.Close()
	var mu sync.Mutex
	txnLog := map[int64][]chaos.TxnRecord{}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				tr, ok, err := chaos.ParseTxnRecord(r.Key, r.Value)
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
	w := &chaos.HangWatch{Grace: hangGrace}
	topics := []string{d.cfg.Group + "-" + chaos.EOSStore + "-changelog", chaos.EOSOutput, "__consumer_offsets"}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		open, err := d.openTxns(ctx, topics)
		if err != nil {
			continue // the broker is restarting: look again
		}
		mu.Lock()
		snap := make(map[int64][]chaos.TxnRecord, len(txnLog))
		for id, recs := range txnLog {
			snap[id] = recs
		}
		mu.Unlock()
		for _, m := range w.Look(time.Now(), open, snap) {
			what := "ended a hanging transaction: wrote the " + m.String()
			if err := d.writeMarker(ctx, m); err != nil {
				what = fmt.Sprintf("could not write the %v: %v", m, err)
			}
			fmt.Printf("chaos: %s\n", what)
			d.log.write(chaos.DriverRecord{Kind: chaos.DKMarker, Detail: what})
		}
	}
}

// openTxns lists the producers with a transaction open on the partitions of topics.
func (d *driver) openTxns(ctx context.Context, topics []string) ([]chaos.OpenTxn, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := d.broker.adm.ListTopicsWithInternal(rctx, topics...)
	if err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for _, td := range md {
		if td.Err != nil {
			continue // the changelog before the members created it
		}
		for p := range td.Partitions {
			set.Add(td.Topic, p)
		}
	}
	ps, err := d.broker.adm.DescribeProducers(rctx, set)
	if err != nil {
		return nil, err
	}
	var open []chaos.OpenTxn
	for _, t := range ps {
		for _, p := range t.Partitions {
			if p.Err != nil {
				continue
			}
			for _, pr := range p.ActiveProducers {
				if pr.CurrentTxnStartOffset >= 0 {
					open = append(open, chaos.OpenTxn{Topic: pr.Topic, Partition: pr.Partition, ProducerID: pr.ProducerID,
						ProducerEpoch: pr.ProducerEpoch, CoordinatorEpoch: pr.CoordinatorEpoch, StartOffset: pr.CurrentTxnStartOffset})
				}
			}
		}
	}
	return open, nil
}

// writeMarker writes m to its partition's leader (WriteTxnMarkers, as kafka-transactions.sh abort
// does, with the decision the coordinator made).
func (d *driver) writeMarker(ctx context.Context, m chaos.Marker) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	set := kadm.TopicsSet{}
	set.Add(m.Txn.Topic, m.Txn.Partition)
	resps, err := d.broker.adm.WriteTxnMarkers(rctx, kadm.TxnMarkers{ProducerID: m.Txn.ProducerID, ProducerEpoch: m.Txn.ProducerEpoch,
		Commit: m.Commit, CoordinatorEpoch: m.Txn.CoordinatorEpoch, Topics: set})
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
