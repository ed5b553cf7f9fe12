package stream

import (
	"reflect"
	"strings"
	"testing"
)

// The warning names every internal topic with one replica and a transaction log that accepts a
// write on one replica (its min.insync.replicas, or its replica count, 1); a cluster that keeps both
// through one broker's failure gets none, and so does one whose facts are unknown (0).
func TestReplicationRisk(t *testing.T) {
	for _, c := range []struct {
		name              string
		replicas          map[string]int
		txnMinISR, txnRep int
		want              *WeakReplicationWarning
	}{
		{"replicated", map[string]int{"app-a-changelog": 3, "app-r-repartition": 2}, 2, 3, nil},
		{"transaction log unknown", map[string]int{"app-a-changelog": 3}, 0, 0, nil},
		{"no internal topics", map[string]int{}, 2, 3, nil},
		{"one replica", map[string]int{"app-b-changelog": 1, "app-a-changelog": 1, "app-r-repartition": 3}, 2, 3,
			&WeakReplicationWarning{Group: "app", SingleReplica: []string{"app-a-changelog", "app-b-changelog"}, Brokers: 3}},
		{"transaction log min ISR", map[string]int{"app-a-changelog": 3}, 1, 3,
			&WeakReplicationWarning{Group: "app", TransactionLogMinISR: 1, Brokers: 3}},
		{"transaction log of one replica", map[string]int{"app-a-changelog": 3}, 2, 1,
			&WeakReplicationWarning{Group: "app", TransactionLogMinISR: 1, Brokers: 3}},
		{"both", map[string]int{"app-a-changelog": 1}, 1, 1,
			&WeakReplicationWarning{Group: "app", SingleReplica: []string{"app-a-changelog"}, TransactionLogMinISR: 1, Brokers: 3}},
	} {
		got := replicationRisk("app", c.replicas, c.txnMinISR, c.txnRep, 3)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	w := replicationRisk("app", map[string]int{"app-a-changelog": 1}, 1, 1, 1)
	for _, part := range []string{"group app runs exactly_once_v2", "internal topics app-a-changelog have one replica",
		"transaction log (__transaction_state) accepts writes on one replica", "(1 broker(s))", "replication.factor=3",
		"transaction.state.log.min.isr=2", "docs/runtime.md#what-exactly-once-needs-from-the-cluster"} {
		if !strings.Contains(w.Error(), part) {
			t.Errorf("the warning %q does not say %q", w.Error(), part)
		}
	}
	if w := replicationRisk("app", map[string]int{"app-a-changelog": 3}, 1, 3, 3); strings.Contains(w.Error(), "one replica") &&
		strings.Contains(w.Error(), "internal topics") {
		t.Errorf("names topics that have replicas: %q", w.Error())
	}
	if w := replicationRisk("app", map[string]int{"app-a-changelog": 1}, 2, 3, 3); strings.Contains(w.Error(), "__transaction_state") {
		t.Errorf("blames a replicated transaction log: %q", w.Error())
	}
}
