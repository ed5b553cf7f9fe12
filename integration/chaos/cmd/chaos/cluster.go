//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/twmb/franz-go/pkg/kadm"
)

// The faults of the 3-node cluster (README.md, "Faults"): a node crashed and restarted, all nodes
// restarted one after the other, a node stopped past the brokers' session (cut off from
// everyone), the members cut off from one node, and the transaction coordinators moved. A fault
// that restarts or stops a node ends once every partition has all its replicas in sync again: an
// operator moves on only then, and the next fault must not take a second replica of a partition
// that has one replica in sync (min.insync.replicas=2 would refuse its writes until it is back).

// clusterFault runs one of the cluster's node faults and returns its detail.
func (d *driver) clusterFault(ctx context.Context, pl plan) (string, error) {
	node := d.broker.nodes[pl.node%len(d.broker.nodes)]
	if pl.typ == "broker-crash" || pl.typ == "broker-pause" || pl.typ == "broker-cut" {
		// After restarts the leaderships gather on some nodes (the preferred leaders are not
		// elected back): a drawn node that leads nothing gives way to the one that leads the most,
		// so that the fault moves leaderships.
		node = d.busiest(ctx, node)
	}
	n := strconv.Itoa(int(node))
	switch pl.typ {
	case "broker-crash":
		if err := d.broker.sh(ctx, "stop-node", n, "--kill"); err != nil {
			return "", err
		}
		sleep(ctx, pl.delay)
		if err := d.broker.sh(ctx, "start-node", n); err != nil {
			return "", err
		}
		return fmt.Sprintf("node %s SIGKILLed, started again after %v, in sync", n, pl.delay), d.waitInSync(ctx)
	case "rolling-restart":
		for _, id := range d.broker.nodes {
			m := strconv.Itoa(int(id))
			if err := d.broker.sh(ctx, "stop-node", m); err != nil {
				return "", err
			}
			if err := d.broker.sh(ctx, "start-node", m); err != nil {
				return "", err
			}
			if err := d.waitInSync(ctx); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("nodes %v stopped (SIGTERM) and started one after the other, each back in sync before the next", d.broker.nodes), nil
	case "broker-pause":
		pid, err := d.broker.nodePID(node)
		if err != nil {
			return "", err
		}
		ledAny := !d.leadsNothing(ctx, node)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return "", err
		}
		// Whether the cluster fenced it in time (a paused active controller must first be
		// replaced, then the new one waits out the node's session) is observed, not assumed.
		start, fenced := time.Now(), time.Duration(0)
		for time.Since(start) < pl.d && ctx.Err() == nil {
			if fenced == 0 && d.leadsNothing(ctx, node) {
				fenced = time.Since(start)
			}
			sleep(ctx, min(250*time.Millisecond, pl.d-time.Since(start)))
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return "", err
		}
		what := fmt.Sprintf("node %s stopped (SIGSTOP) for %v; its leaderships had moved after %v; resumed, in sync", n, pl.d, fenced.Round(time.Millisecond))
		switch {
		case !ledAny:
			what = fmt.Sprintf("node %s (leading no partition) stopped (SIGSTOP) for %v; resumed, in sync", n, pl.d)
		case fenced == 0:
			what = fmt.Sprintf("node %s stopped (SIGSTOP) for %v, still leading partitions when resumed; in sync", n, pl.d)
		}
		return what, d.waitInSync(ctx)
	case "broker-cut":
		i := slices.Index(d.broker.nodes, node)
		var pxs []*toxiproxy.Proxy
		for _, p := range d.procs {
			pxs = append(pxs, p.proxies[i])
		}
		// Healed whatever happens, also when adding a toxic failed halfway: a run that stops early
		// must not leave its members cut off while it waits for the group to settle.
		heal := func() error {
			var first error
			for _, px := range pxs {
				ts, err := px.Toxics()
				for _, tx := range ts {
					if err == nil {
						err = px.RemoveToxic(tx.Name)
					}
				}
				// The dropped bytes make the proxied connections useless (see net-cut).
				if err == nil {
					err = px.Disable()
				}
				if err == nil {
					err = px.Enable()
				}
				if first == nil {
					first = err
				}
			}
			return first
		}
		for _, px := range pxs {
			for _, stream := range []string{"upstream", "downstream"} {
				if _, err := px.AddToxic("timeout_"+stream, "timeout", stream, 1, toxiproxy.Attributes{"timeout": 0}); err != nil {
					_ = heal()
					return "", fmt.Errorf("toxic on %s: %w", px.Name, err)
				}
			}
		}
		sleep(ctx, pl.d)
		return fmt.Sprintf("every member cut off from node %s (blackhole both ways) for %v", n, pl.d), heal()
	case "txn-coord-elect":
		from, moved, err := d.moveLeaders(ctx, "__transaction_state", node)
		return fmt.Sprintf("the leadership of %d __transaction_state partitions moved away from node %d (transaction coordinators moved)", moved, from), err
	}
	return "", fmt.Errorf("not a cluster fault: %s", pl.typ)
}

// nodePID reads the PID of node id's JVM from the file broker.sh keeps (it changes on a restart).
func (b *broker) nodePID(id int32) (int, error) {
	f := b.env[fmt.Sprintf("STREAMSGROUP_NODE_%d_PID_FILE", id)]
	raw, err := os.ReadFile(f)
	if err != nil {
		return 0, fmt.Errorf("node %d's pid file: %w", id, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// moveLeaders moves the leadership of every partition of topic led by node to the next replica
// (its replicas reordered, the preferred one elected), as an operator moves coordinators. A node
// that leads none of them (leaderships gather on some nodes after restarts, as the preferred
// leaders are not elected back) gives way to the node that leads the most. It returns the node the
// leaderships moved from and how many moved.
func (d *driver) moveLeaders(ctx context.Context, topic string, node int32) (int32, int, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	md, err := d.broker.adm.Metadata(cctx, topic)
	if err != nil {
		return node, 0, err
	}
	led := map[int32]int{}
	for _, pd := range md.Topics[topic].Partitions {
		led[pd.Leader]++
	}
	if led[node] == 0 {
		for _, id := range d.broker.nodes { // in node order: a seed gives the same choice
			if led[id] > led[node] {
				node = id
			}
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	set := kadm.TopicsSet{}
	for part, pd := range md.Topics[topic].Partitions {
		if pd.Leader != node || len(pd.Replicas) < 2 {
			continue
		}
		replicas := slices.Clone(pd.Replicas)
		i := slices.Index(replicas, pd.Leader)
		next := replicas[(i+1)%len(replicas)]
		req.Assign(topic, part, append([]int32{next}, slices.DeleteFunc(replicas, func(r int32) bool { return r == next })...))
		set.Add(topic, part)
	}
	if len(set) == 0 {
		return node, 0, nil
	}
	if _, err := d.broker.adm.AlterPartitionAssignments(cctx, req); err != nil {
		return node, 0, err
	}
	moved, err := d.electPreferred(cctx, set)
	return node, moved, err
}

// busiest returns node if it leads a partition, else the node (in node order) that leads the most.
func (d *driver) busiest(ctx context.Context, node int32) int32 {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tds, err := d.broker.adm.ListTopicsWithInternal(cctx)
	if err != nil {
		return node
	}
	led := map[int32]int{}
	for _, td := range tds {
		for _, p := range td.Partitions {
			led[p.Leader]++
		}
	}
	if led[node] > 0 {
		return node
	}
	for _, id := range d.broker.nodes {
		if led[id] > led[node] {
			node = id
		}
	}
	return node
}

// leadsNothing says whether node leads no partition now (false when the metadata cannot be read).
func (d *driver) leadsNothing(ctx context.Context, node int32) bool {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	tds, err := d.broker.adm.ListTopicsWithInternal(cctx)
	if err != nil {
		return false
	}
	for _, td := range tds {
		for _, p := range td.Partitions {
			if p.Leader == node {
				return false
			}
		}
	}
	return true
}

// waitInSync waits until every partition of every topic (the internal ones too) has a leader and
// all its replicas in sync, for at most 2 minutes.
func (d *driver) waitInSync(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	var why string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		why = d.outOfSync(ctx)
		if why == "" {
			return nil
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("the cluster's partitions not in sync within 2 minutes: %s", why)
}

// outOfSync returns the first partition without a leader or with a replica out of sync ("" when
// none).
func (d *driver) outOfSync(ctx context.Context) string {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tds, err := d.broker.adm.ListTopicsWithInternal(cctx)
	if err != nil {
		return err.Error()
	}
	for _, td := range tds.Sorted() {
		if td.Err != nil {
			return fmt.Sprintf("%s: %v", td.Topic, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
				return fmt.Sprintf("%s[%d] leader %d, in sync %v of %v", td.Topic, p.Partition, p.Leader, p.ISR, p.Replicas)
			}
		}
	}
	return ""
}
