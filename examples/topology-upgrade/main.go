// Command topology-upgrade walks through the topology epoch and topology ID flow of streams groups
// against a broker:
//
//  1. members of topology A join with topology.epoch 0;
//
//  2. a member of a changed topology B with the same epoch is refused, and the error names both
//     topology IDs;
//
//  3. the same member with epoch 1 is refused too: brokers up to Kafka 4.4 keep a group's first
//     topology and do not update it, whatever the epoch;
//
//  4. a member of A with an older epoch joining a group at epoch 1 is told STALE_TOPOLOGY;
//
//  5. the upgrade that works today: describe the group, take the next epoch, stop the old members,
//     delete the emptied group, start the new topology. These topologies keep no state; a stateful
//     one must also save its input positions before the deletion and put them back after it (or
//     delete its internal topics too), as docs/upgrades.md says: deleting the group alone would
//     make its next start process the input again onto the old state.
//
//     go run ./examples/topology-upgrade      (with STREAMSGROUP_BOOTSTRAP set)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/topology"
)

func main() {
	bootstrap := os.Getenv("STREAMSGROUP_BOOTSTRAP")
	if bootstrap == "" {
		fmt.Fprintln(os.Stderr, "topology-upgrade: set STREAMSGROUP_BOOTSTRAP")
		os.Exit(2)
	}
	if err := run(context.Background(), bootstrap); err != nil {
		fmt.Fprintln(os.Stderr, "topology-upgrade:", err)
		os.Exit(1)
	}
}

type env struct {
	bootstrap string
	adm       *admin.Client
	quiet     *slog.Logger
}

// member is a running member and the events it saw.
type member struct {
	mgr    *membership.Manager
	cl     *kgo.Client
	events chan membership.Event
}

func (e *env) join(ctx context.Context, app string, topo *topology.Topology, epoch int32) (*member, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap))
	if err != nil {
		return nil, err
	}
	cfg := config.Default(app)
	cfg.TopologyEpoch = epoch
	mgr, err := membership.New(cl, cfg, topo, membership.WithLogger(e.quiet))
	if err != nil {
		cl.Close()
		return nil, err
	}
	m := &member{mgr: mgr, cl: cl, events: make(chan membership.Event, 1024)}
	evs := mgr.Events()
	go func() {
		for ev := range evs {
			select {
			case m.events <- ev:
			default:
			}
		}
		close(m.events)
	}()
	return m, mgr.Start(ctx)
}

func (m *member) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = m.mgr.Close(ctx)
	m.cl.Close()
}

// waitFor returns the first event of one of the kinds, or an error after a timeout.
func (m *member) waitFor(kinds ...membership.EventKind) (membership.Event, error) {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-m.events:
			if !ok {
				return membership.Event{}, errors.New("the member stopped")
			}
			for _, k := range kinds {
				if ev.Kind == k {
					return ev, nil
				}
			}
		case <-timeout:
			return membership.Event{}, fmt.Errorf("no %v event within 30 s", kinds)
		}
	}
}

func step(n int, format string, args ...any) {
	fmt.Printf("\n%d. %s\n", n, fmt.Sprintf(format, args...))
}

func run(ctx context.Context, bootstrap string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	e := &env{bootstrap: bootstrap, adm: admin.NewClient(cl), quiet: slog.New(slog.NewTextHandler(io.Discard, nil))}
	app := fmt.Sprintf("upgrade-demo-%d", time.Now().Unix())
	orders, payments := app+"-orders", app+"-payments"
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, orders, payments); err != nil {
		return err
	}
	topoA := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{orders}})
	topoB := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{orders, payments}})
	fmt.Printf("group %s\n  topology A (reads %s):          ID %s\n  topology B (reads %s too): ID %s\n",
		app, orders, topoA.ID(), payments, topoB.ID())

	step(1, "a member of topology A joins with topology.epoch 0")
	a, err := e.join(ctx, app, topoA, 0)
	if err != nil {
		return err
	}
	defer func() { a.close() }()
	if _, err := a.waitFor(membership.EventAssigned); err != nil {
		return err
	}
	g, err := e.adm.Describe(ctx, app)
	if err != nil {
		return err
	}
	fmt.Printf("   the group runs topology %s at epoch %d\n", g.Topology.ID, g.Topology.Epoch)

	step(2, "a member of topology B with the same epoch 0 joins")
	if err := expectRefused(ctx, e, app, topoB, 0); err != nil {
		return err
	}

	step(3, "the member of topology B bumps topology.epoch to %d (what `streams-groups --next-epoch` prints)", admin.NextEpoch(g, 0))
	if err := expectRefused(ctx, e, app, topoB, admin.NextEpoch(g, 0)); err != nil {
		return err
	}
	fmt.Println("   brokers up to Kafka 4.4 keep a group's first topology: a higher epoch does not replace it")

	step(4, "an older member joins a group that runs a newer epoch")
	app2 := app + "-v1"
	newer, err := e.join(ctx, app2, topoA, 1)
	if err != nil {
		return err
	}
	defer func() { newer.close() }()
	if _, err := newer.waitFor(membership.EventAssigned); err != nil {
		return err
	}
	older, err := e.join(ctx, app2, topoA, 0)
	if err != nil {
		return err
	}
	ev, err := older.waitFor(membership.EventStaleTopology)
	if err != nil {
		return err
	}
	fmt.Printf("   event %s: %s\n", ev.Kind, ev.GroupTopology)
	older.close()

	step(5, "the upgrade that works today: describe, next epoch, stop A, delete the group, start B")
	g, err = e.adm.Describe(ctx, app)
	if err != nil {
		return err
	}
	next := admin.NextEpoch(g, 0)
	cmp := admin.CompareTopology(g, topoB, next)
	fmt.Printf("   compare: %s (%s)\n", cmp.Verdict, cmp.Action)
	a.close()
	res, err := e.adm.Delete(ctx, app)
	if err != nil || res[app] != nil {
		return fmt.Errorf("deleting the emptied group: %v %v", err, res[app])
	}
	fmt.Printf("   stopped the members of A and deleted the group\n")
	b, err := e.join(ctx, app, topoB, next)
	if err != nil {
		return err
	}
	defer b.close()
	if _, err := b.waitFor(membership.EventAssigned); err != nil {
		return err
	}
	g, err = e.adm.Describe(ctx, app)
	if err != nil {
		return err
	}
	fmt.Printf("   the group now runs topology %s at epoch %d (B: %s)\n", g.Topology.ID, g.Topology.Epoch, topoB.ID())
	if g.Topology.ID != topoB.ID() {
		return errors.New("the group does not run topology B")
	}
	return nil
}

func expectRefused(ctx context.Context, e *env, app string, topo *topology.Topology, epoch int32) error {
	m, err := e.join(ctx, app, topo, epoch)
	if err != nil {
		return err
	}
	defer m.close()
	select {
	case <-m.mgr.Done():
	case <-time.After(30 * time.Second):
		return errors.New("the member was not refused")
	}
	var te *membership.TopologyError
	if !errors.As(m.mgr.Err(), &te) {
		return fmt.Errorf("unexpected error: %v", m.mgr.Err())
	}
	fmt.Printf("   refused: %v\n", te)
	return nil
}
