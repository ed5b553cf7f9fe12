package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Exactly-once keeps its promise only as long as the brokers keep what they acknowledged: a
// transaction's records, its markers and the committed offsets. With one replica of an internal
// topic, or a transaction log that accepts a write on one replica, one broker's crash or lost disk
// can take committed state away, or leave a transaction whose markers never come until that broker
// is back. Kafka Streams does not check; this runtime says so once at start (a
// *WeakReplicationWarning to WithWarningListener, and the log), because the default — internal
// topics with the broker's default.replication.factor, 1 unless set — is exactly that risk.

// WeakReplicationWarning says an application runs exactly_once_v2 on a cluster that cannot keep
// its results through one broker's failure. Passed to WithWarningListener once per App, and logged.
type WeakReplicationWarning struct {
	// Group is the application.id.
	Group string
	// SingleReplica are the application's internal topics (changelogs, repartition topics) with
	// one replica.
	SingleReplica []string
	// TransactionLogMinISR is the min.insync.replicas of the transaction log (__transaction_state:
	// the broker's transaction.state.log.min.isr when it created it) when it is 1, or its replica
	// count when that is 1; 0 when both are higher or could not be read.
	TransactionLogMinISR int
	// Brokers is how many brokers the cluster has.
	Brokers int
}

// Error says what is weak, the risk, and what to run instead.
func (w *WeakReplicationWarning) Error() string {
	var why []string
	if len(w.SingleReplica) > 0 {
		why = append(why, fmt.Sprintf("its internal topics %s have one replica", strings.Join(w.SingleReplica, ", ")))
	}
	if w.TransactionLogMinISR == 1 {
		why = append(why, "the transaction log (__transaction_state) accepts writes on one replica (transaction.state.log.min.isr 1)")
	}
	return fmt.Sprintf("stream: group %s runs exactly_once_v2 but %s (%d broker(s)): one broker's crash or lost disk can then "+
		"take committed results away or hold transactions open until that broker is back; run 3 or more brokers, set "+
		"replication.factor=3 (with min.insync.replicas=2 on the topics) and transaction.state.log.min.isr=2 "+
		"(docs/runtime.md#what-exactly-once-needs-from-the-cluster)", w.Group, strings.Join(why, " and "), w.Brokers)
}

// replicationRisk decides, from the replica counts of the internal topics (every topic present),
// the transaction log's min.insync.replicas and replica count (0: unknown), the warning to give, or
// nil.
func replicationRisk(group string, replicas map[string]int, txnMinISR, txnReplicas, brokers int) *WeakReplicationWarning {
	w := &WeakReplicationWarning{Group: group, Brokers: brokers}
	for topic, n := range replicas {
		if n <= 1 {
			w.SingleReplica = append(w.SingleReplica, topic)
		}
	}
	slices.Sort(w.SingleReplica)
	if txnMinISR == 1 || txnReplicas == 1 {
		w.TransactionLogMinISR = 1
	}
	if len(w.SingleReplica) == 0 && w.TransactionLogMinISR == 0 {
		return nil
	}
	return w
}

// internalTopics are the topology's internal topics (repartition and changelog topics) that the
// broker creates; a changelog that reuses a source topic is not one of them.
func (a *App) internalTopics() []string {
	var out []string
	for _, st := range a.topo.Subtopologies() {
		for _, ti := range st.RepartitionSourceTopics {
			out = append(out, ti.Name)
		}
		for _, ti := range st.StateChangelogTopics {
			if !slices.Contains(st.SourceTopics, ti.Name) {
				out = append(out, ti.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

const transactionLog = "__transaction_state"

// replicationFacts is what checkReplication reads from the cluster.
type replicationFacts struct {
	replicas           map[string]int // internal topic → the fewest replicas of any partition
	txnMinISR, txnRepl int            // the transaction log's min.insync.replicas and replicas (0: unknown)
	brokers            int
	missing            bool  // an internal topic does not exist yet
	refused            error // the cluster refused to describe: asking again will not help
}

// checkReplication waits until the internal topics exist (the broker creates them as the group's
// members heartbeat), then gives the *WeakReplicationWarning if there is one, and logs what it
// found. It ends with ctx; a cluster that refuses to be described (no DESCRIBE or DESCRIBE_CONFIGS
// permission), or whose topics are still missing after max.poll.interval.ms, is not warned about:
// the check is advice, never a failure.
func (a *App) checkReplication(ctx context.Context) {
	topics := a.internalTopics()
	adm := kadm.NewClient(a.cl)
	give := time.Now().Add(a.cfg.MaxPollInterval)
	for ctx.Err() == nil && time.Now().Before(give) {
		f := describeReplication(ctx, adm, topics)
		if f.refused != nil {
			a.log.Info("exactly-once: the cluster's replication could not be checked", "err", f.refused)
			return
		}
		if !f.missing {
			a.log.Info("exactly-once: replication checked", "internal_topics", f.replicas, "transaction_log_replicas", f.txnRepl,
				"transaction_log_min_isr", f.txnMinISR, "brokers", f.brokers)
			if w := replicationRisk(a.cfg.ApplicationID, f.replicas, f.txnMinISR, f.txnRepl, f.brokers); w != nil {
				a.log.Warn(w.Error())
				for _, fn := range a.o.onWarning {
					fn(w)
				}
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(a.cfg.RetryBackoffMax):
		}
	}
}

// describeReplication reads the replica counts of topics and of the transaction log, the
// transaction log's min.insync.replicas and the cluster's broker count.
func describeReplication(ctx context.Context, adm *kadm.Client, topics []string) replicationFacts {
	f := replicationFacts{replicas: make(map[string]int, len(topics))}
	md, err := adm.Metadata(ctx, append([]string{transactionLog}, topics...)...)
	if err != nil {
		if isRefusal(err) {
			f.refused = err
		}
		f.missing = true
		return f
	}
	f.brokers = len(md.Brokers)
	fewest := func(td kadm.TopicDetail) int {
		n := -1
		for _, p := range td.Partitions {
			if n < 0 || len(p.Replicas) < n {
				n = len(p.Replicas)
			}
		}
		return max(n, 0)
	}
	for _, topic := range topics {
		td, found := md.Topics[topic]
		if !found || td.Err != nil || len(td.Partitions) == 0 {
			if found && isRefusal(td.Err) {
				f.refused = td.Err
			}
			f.missing = true
			return f
		}
		f.replicas[topic] = fewest(td)
	}
	if td, ok := md.Topics[transactionLog]; ok && td.Err == nil {
		f.txnRepl = fewest(td)
	}
	if rcs, err := adm.DescribeTopicConfigs(ctx, transactionLog); err == nil {
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == "min.insync.replicas" && c.Value != nil {
					f.txnMinISR, _ = strconv.Atoi(*c.Value)
				}
			}
		}
	}
	return f
}

// isRefusal says whether err is the cluster refusing this client (authorization), which asking
// again does not change.
func isRefusal(err error) bool {
	var ae *kadm.AuthError
	return errors.As(err, &ae) || errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}
