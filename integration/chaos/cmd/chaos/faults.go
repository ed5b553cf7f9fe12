//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/integration/chaos"
)

// Fault types. README.md beside the checker says what each does.
var (
	networkFaults = []string{"net-latency", "net-reset", "net-cut-short", "net-cut-long"}
	processFaults = []string{"kill9", "pause-short", "pause-long", "term-restart", "add", "remove"}
	brokerFaults  = []string{"broker-restart"}
	// BROKERS >= 3 (a quorum of three voters; broker-restart, all nodes at once, is left out).
	clusterFaults = []string{"coord-stop", "coord-elect", "txn-coord-elect", "broker-crash", "rolling-restart", "broker-pause", "broker-cut"}
)

// plan is one fault as drawn from the seed, before it runs: everything random is drawn here, in a
// fixed order, so that a seed gives the same schedule whatever the timing of the run.
type plan struct {
	typ    string
	proc   string        // target process (process faults, network faults, remove)
	d      time.Duration // how long the fault lasts (pause, cut, latency, …)
	delay  time.Duration // kill9 / term-restart: how long the process stays down
	amount int           // net-latency: milliseconds
	node   int           // cluster faults on one node: the node is the cluster's node(node mod count)
}

// draw picks the next fault. procs are the current process names, sorted; count bounds keep the
// number of processes between lo and hi (an add at hi becomes a remove and the reverse).
func draw(rng *rand.Rand, types []string, procs []string, lo, hi int, session time.Duration) plan {
	p := plan{typ: types[rng.IntN(len(types))]}
	target := procs[rng.IntN(len(procs))]
	ms := func(a, b time.Duration) time.Duration { return a + time.Duration(rng.Int64N(int64(b-a)+1)) }
	d1 := ms(1500*time.Millisecond, 3*time.Second)
	dLong := ms(session+time.Second, session+4*time.Second)
	lat := 200 + rng.IntN(601)
	dLat := ms(3*time.Second, 8*time.Second)
	delay := ms(0, time.Second)
	switch {
	case p.typ == "add" && len(procs) >= hi:
		p.typ = "remove"
	case p.typ == "remove" && len(procs) <= lo:
		p.typ = "add"
	}
	switch p.typ {
	case "net-latency":
		p.proc, p.d, p.amount = target, dLat, lat
	case "net-reset":
		p.proc, p.d = target, d1/3
	case "net-cut-short", "pause-short":
		p.proc, p.d = target, d1
	case "net-cut-long", "pause-long":
		p.proc, p.d = target, dLong
	case "kill9", "term-restart":
		p.proc, p.delay = target, delay
	case "remove":
		p.proc = target
	case "coord-stop":
		p.d = d1
	}
	// Cluster faults draw more, after the draws every fault makes: schedules without them stay what
	// their seed always gave.
	switch p.typ {
	case "broker-crash":
		p.node, p.delay = rng.IntN(1<<16), ms(0, 5*time.Second)
	case "broker-pause":
		// Past broker.session.timeout.ms (3 s): the controller fences the node and moves its
		// leaderships while it cannot act, as it would a node cut off from everyone.
		p.node, p.d = rng.IntN(1<<16), ms(4*time.Second, 8*time.Second)
	case "broker-cut":
		p.node, p.d = rng.IntN(1<<16), ms(1500*time.Millisecond, 5*time.Second)
	case "txn-coord-elect":
		p.node = rng.IntN(1 << 16)
	}
	return p
}

// apply runs one fault to its end and returns it (Start, End filled).
func (d *driver) apply(ctx context.Context, n int, pl plan) (chaos.Fault, error) {
	f := chaos.Fault{N: n, Type: pl.typ, Proc: pl.proc}
	var p *process
	if pl.proc != "" && pl.typ != "add" {
		p = d.procs[pl.proc]
		f.Inc = p.inc
	}
	now := func() int64 { return time.Now().UnixMicro() }
	f.Start = now()
	var err error
	switch pl.typ {
	case "net-latency":
		f.Detail = fmt.Sprintf("+%d ms (jitter %d) on answers for %v", pl.amount, pl.amount/4, pl.d)
		err = d.toxic(p, "latency", "downstream", toxiproxy.Attributes{"latency": pl.amount, "jitter": pl.amount / 4})
		if err == nil {
			sleep(ctx, pl.d)
			err = d.clearToxics(p, false)
		}
	case "net-reset":
		f.Detail = fmt.Sprintf("every connection reset (RST) for %v", pl.d)
		err = d.toxic(p, "reset_peer", "upstream", toxiproxy.Attributes{"timeout": 0})
		if err == nil {
			err = d.toxic(p, "reset_peer", "downstream", toxiproxy.Attributes{"timeout": 0})
		}
		if err == nil {
			sleep(ctx, pl.d)
			err = d.clearToxics(p, true)
		}
	case "net-cut-short", "net-cut-long":
		f.Detail = fmt.Sprintf("blackhole both ways for %v (session %v)", pl.d, d.session)
		f.Expiring = pl.d > d.session
		err = d.toxic(p, "timeout", "upstream", toxiproxy.Attributes{"timeout": 0})
		if err == nil {
			err = d.toxic(p, "timeout", "downstream", toxiproxy.Attributes{"timeout": 0})
		}
		if err == nil {
			sleep(ctx, pl.d)
			// The blackhole dropped bytes, so the connections it held can never carry a response
			// again; a real TCP stack would have timed them out. Close them as the cut heals.
			err = d.clearToxics(p, true)
		}
	case "pause-short", "pause-long":
		f.Detail = fmt.Sprintf("SIGSTOP for %v (session %v)", pl.d, d.session)
		f.Expiring, f.Paused = pl.d > d.session, true
		p.paused = true
		p.signal(syscall.SIGSTOP)
		sleep(ctx, pl.d)
		p.signal(syscall.SIGCONT)
		p.paused = false
	case "kill9":
		f.Detail = fmt.Sprintf("SIGKILL, restarted after %v", pl.delay)
		p.expect.Store(true)
		p.signal(syscall.SIGKILL)
		<-p.done
		sleep(ctx, pl.delay)
		err = d.spawn(p.name, len(p.members))
	case "term-restart":
		f.Detail = fmt.Sprintf("SIGTERM (Close), restarted after %v", pl.delay)
		d.terminate(p)
		sleep(ctx, pl.delay)
		err = d.spawn(p.name, len(p.members))
	case "add":
		name := d.newName()
		f.Proc, f.Inc, f.Detail = name, 1, "a new member process"
		err = d.spawn(name, 1)
	case "remove":
		f.Detail = "SIGTERM (Close), not restarted"
		d.terminate(p)
		delete(d.procs, p.name)
	case "broker-restart":
		f.Detail = "broker.sh restart (every node), until ready"
		err = d.broker.sh(ctx, "restart")
	case "coord-stop", "coord-elect":
		f.Detail, err = d.moveCoordinator(ctx, pl)
	case "broker-crash", "rolling-restart", "broker-pause", "broker-cut", "txn-coord-elect":
		f.Detail, err = d.clusterFault(ctx, pl)
	default:
		err = fmt.Errorf("unknown fault type %q", pl.typ)
	}
	f.End = now()
	return f, err
}

// terminate sends SIGTERM (the member closes) and waits for the exit, with SIGKILL after 40 s.
func (d *driver) terminate(p *process) {
	p.expect.Store(true)
	if p.paused {
		p.signal(syscall.SIGCONT)
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

func (d *driver) toxic(p *process, typ, stream string, attrs toxiproxy.Attributes) error {
	for _, px := range p.proxies {
		if _, err := px.AddToxic(typ+"_"+stream, typ, stream, 1, attrs); err != nil {
			return fmt.Errorf("toxic %s on %s: %w", typ, px.Name, err)
		}
	}
	return nil
}

// clearToxics removes every toxic of the process's proxies and, with reset, closes their
// connections (disable, enable).
func (d *driver) clearToxics(p *process, reset bool) error {
	for _, px := range p.proxies {
		ts, err := px.Toxics()
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := px.RemoveToxic(t.Name); err != nil {
				return err
			}
		}
		if reset {
			if err := px.Disable(); err != nil {
				return err
			}
			if err := px.Enable(); err != nil {
				return err
			}
		}
	}
	return nil
}

// moveCoordinator moves the group coordinator to another broker: coord-stop stops the
// coordinator's node (a controlled shutdown moves its leaderships away) and starts it again;
// coord-elect (and coord-stop when the coordinator is the only controller, node 1, whose stop would
// halt the metadata quorum) moves the leadership of the group's __consumer_offsets partition to
// another replica by reordering its replicas and electing the preferred one.
func (d *driver) moveCoordinator(ctx context.Context, pl plan) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	co := d.broker.adm.FindGroupCoordinators(cctx, d.cfg.Group)
	c, ok := co[d.cfg.Group]
	if !ok || c.Err != nil {
		return "", fmt.Errorf("FindCoordinator: %v", c.Err)
	}
	ctrl := int32(1)
	if pl.typ == "coord-stop" && (c.NodeID != ctrl || d.cfg.Voters > 1) {
		node := fmt.Sprint(c.NodeID)
		if err := d.broker.sh(ctx, "stop-node", node); err != nil {
			return "", err
		}
		sleep(ctx, pl.d)
		err := d.broker.sh(ctx, "start-node", node)
		if err == nil && d.cfg.Voters > 1 {
			err = d.waitInSync(ctx)
		}
		return fmt.Sprintf("coordinator node %s stopped for %v, started again", node, pl.d), err
	}
	md, err := d.broker.adm.Metadata(cctx, "__consumer_offsets")
	if err != nil {
		return "", err
	}
	td := md.Topics["__consumer_offsets"]
	part := groupPartition(d.cfg.Group, len(td.Partitions))
	pd, ok := td.Partitions[part]
	if !ok || len(pd.Replicas) < 2 {
		return "", fmt.Errorf("__consumer_offsets-%d has no second replica", part)
	}
	replicas := slices.Clone(pd.Replicas)
	i := slices.Index(replicas, pd.Leader)
	next := replicas[(i+1)%len(replicas)]
	replicas = append([]int32{next}, slices.DeleteFunc(replicas, func(r int32) bool { return r == next })...)
	if _, err := d.broker.adm.AlterPartitionAssignments(cctx, kadm.AlterPartitionAssignmentsReq{"__consumer_offsets": {part: replicas}}); err != nil {
		return "", err
	}
	set := kadm.TopicsSet{}
	set.Add("__consumer_offsets", part)
	moved, err := d.electPreferred(cctx, set)
	if err == nil && moved == 0 {
		return fmt.Sprintf("__consumer_offsets-%d: node %d already led it (the metadata read was behind), nothing moved", part, next), nil
	}
	return fmt.Sprintf("__consumer_offsets-%d leadership moved from node %d to node %d", part, pd.Leader, next), err
}

// electPreferred elects the preferred replica of the partitions of set, after their replicas were
// reordered, and returns how many leaderships moved. ELECTION_NOT_NEEDED (the reordering not applied
// yet, or the preferred replica leading already, which a metadata read that was behind can hide) is
// asked again a few times, then counted as no move.
func (d *driver) electPreferred(ctx context.Context, set kadm.TopicsSet) (int, error) {
	moved := 0
	for try := 0; ; try++ {
		res, err := d.broker.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err != nil {
			return moved, err
		}
		again := kadm.TopicsSet{}
		for _, ps := range res {
			for _, r := range ps {
				switch {
				case r.Err == nil:
					moved++
				case errors.Is(r.Err, kerr.ElectionNotNeeded):
					again.Add(r.Topic, r.Partition)
				default:
					return moved, fmt.Errorf("electing %s[%d]: %w", r.Topic, r.Partition, r.Err)
				}
			}
		}
		if len(again) == 0 || try == 10 {
			return moved, nil
		}
		set = again
		sleep(ctx, 300*time.Millisecond)
	}
}

// groupPartition is the __consumer_offsets partition of a group, as the broker computes it (the
// Java String hash code of the group ID, made non-negative, modulo the partition count).
func groupPartition(group string, partitions int) int32 {
	var h int32
	for _, r := range group {
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
