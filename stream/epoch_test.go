package stream

import (
	"errors"
	"strings"
	"testing"
)

func TestTxnEpochCommitsOnlyAtTheRecordsEpoch(t *testing.T) {
	type ack struct {
		gen   int64
		id    int64
		epoch int16
	}
	for _, tc := range []struct {
		name      string
		acks      []ack
		id        int64
		epoch     int16
		wantErr   bool
		wantInErr string
	}{
		{name: "every record at the producer's epoch", acks: []ack{{1, 7, 3}, {1, 7, 3}}, id: 7, epoch: 3},
		{name: "no record acknowledged", id: 7, epoch: 3, wantErr: true, wantInErr: "no record of it was acknowledged"},
		{name: "the producer re-initialized after the records", acks: []ack{{1, 7, 3}}, id: 7, epoch: 4, wantErr: true,
			wantInErr: "records at producer 7 epoch 3, the producer now at 7 epoch 4"},
		{name: "another producer ID", acks: []ack{{1, 7, 3}}, id: 8, epoch: 3, wantErr: true, wantInErr: "producer now at 8 epoch 3"},
		{name: "records at two epochs, the later one current", acks: []ack{{1, 7, 3}, {1, 7, 4}}, id: 7, epoch: 4, wantErr: true,
			wantInErr: "more than one producer epoch"},
		{name: "records at two producer IDs", acks: []ack{{1, 7, 3}, {1, 8, 3}}, id: 7, epoch: 3, wantErr: true,
			wantInErr: "more than one producer epoch"},
		{name: "a late acknowledgement of an aborted transaction is not counted", acks: []ack{{0, 7, 2}, {1, 7, 3}, {0, 9, 9}}, id: 7, epoch: 3},
		{name: "only an aborted transaction's acknowledgements", acks: []ack{{0, 7, 3}}, id: 7, epoch: 3, wantErr: true,
			wantInErr: "no record of it was acknowledged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e txnEpoch
			e.begin(1)
			for _, a := range tc.acks {
				e.ack(a.gen, a.id, a.epoch)
			}
			err := e.check(tc.id, tc.epoch)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("check(%d, %d) = %v, want nil", tc.id, tc.epoch, err)
				}
				return
			}
			if !errors.Is(err, errEpochMoved) || !strings.Contains(err.Error(), tc.wantInErr) {
				t.Fatalf("check(%d, %d) = %v, want errEpochMoved saying %q", tc.id, tc.epoch, err, tc.wantInErr)
			}
		})
	}
}

func TestTxnEpochBeginForgetsThePreviousTransaction(t *testing.T) {
	var e txnEpoch
	e.begin(1)
	e.ack(1, 7, 3)
	e.ack(1, 7, 4)
	if err := e.check(7, 4); err == nil {
		t.Fatal("a transaction with records at two epochs passed the check")
	}
	e.begin(1) // the next transaction of the same generation (the previous one committed)
	e.ack(1, 7, 5)
	if err := e.check(7, 5); err != nil {
		t.Fatalf("the next transaction, every record at epoch 5: %v", err)
	}
	if e.acks != 1 {
		t.Fatalf("acks = %d after one acknowledgement, want 1", e.acks)
	}
}
