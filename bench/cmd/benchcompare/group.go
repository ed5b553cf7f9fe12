package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// pollEvery is how often the group is described while waiting for it to converge.
const pollEvery = 50 * time.Millisecond

// converged reports whether g is what a finished rebalance looks like: the group Stable with want
// members, every member at the target assignment epoch with its assignment equal to its target, and
// every one of the partitions tasks of subtopology "0" owned by exactly one member as active. A
// group epoch above minEpoch shows the broker saw the event.
func converged(g *admin.Group, want int, partitions int32, minEpoch int32) bool {
	if g == nil || g.State != "Stable" || len(g.Members) != want || g.Epoch <= minEpoch {
		return false
	}
	owners := make(map[tasks.ID]int, partitions)
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch || !m.Assignment.Equal(m.TargetAssignment) {
			return false
		}
		for id := range m.Assignment.Active.All() {
			owners[id]++
		}
	}
	if len(owners) != int(partitions) {
		return false
	}
	for id, n := range owners {
		if n != 1 || id.Subtopology != "0" || id.Partition < 0 || id.Partition >= partitions {
			return false
		}
	}
	return true
}

// Convergence is what waitConverged saw.
type Convergence struct {
	At        time.Time // midpoint of the describe that first showed the converged group
	Joined    time.Time // midpoint of the first describe with want members (zero if never)
	Epoch     int32     // the group epoch then
	Describes int
}

// describe describes group, nil when it does not exist (yet).
func (e *env) describe(ctx context.Context, group string) (*admin.Group, error) {
	g, err := e.admin.Describe(ctx, group)
	if err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return g, nil
}

// waitConverged describes group every pollEvery until converged(…) holds or timeout passes.
func (e *env) waitConverged(group string, want int, partitions int32, minEpoch int32, timeout time.Duration) (Convergence, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var c Convergence
	var last *admin.Group
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		t1 := time.Now()
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		g, err := e.describe(dctx, group)
		dcancel()
		t2 := time.Now()
		mid := t1.Add(t2.Sub(t1) / 2)
		c.Describes++
		if err == nil && g != nil {
			last = g
			if c.Joined.IsZero() && len(g.Members) == want && g.Epoch > minEpoch {
				c.Joined = mid
			}
			if converged(g, want, partitions, minEpoch) {
				c.At, c.Epoch = mid, g.Epoch
				return c, nil
			}
		}
		select {
		case <-ctx.Done():
			return c, fmt.Errorf("group %s did not converge to %d members within %v (last: %s)", group, want, timeout, summary(last))
		case <-tick.C:
		}
	}
}

func summary(g *admin.Group) string {
	if g == nil {
		return "no group"
	}
	reconciled := 0
	for _, m := range g.Members {
		if m.MemberEpoch == g.AssignmentEpoch && m.Assignment.Equal(m.TargetAssignment) {
			reconciled++
		}
	}
	return fmt.Sprintf("%s, epoch %d, target epoch %d, %d members, %d reconciled", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members), reconciled)
}

// groupEpoch is the group's epoch now (0 when there is no group).
func (e *env) groupEpoch(group string) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := e.describe(ctx, group)
	if err != nil || g == nil {
		return 0
	}
	return g.Epoch
}

// topic creates an input topic with the given partitions once, and waits until its metadata shows
// every partition.
func (e *env) topic(partitions int32) (string, error) {
	name := fmt.Sprintf("bench-in-%d", partitions)
	if e.topics[name] {
		return name, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(e.cl)
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return "", fmt.Errorf("creating %s: %w", name, err)
	}
	for {
		td, err := adm.ListTopics(ctx, name)
		if err == nil && td.Has(name) && len(td[name].Partitions) == int(partitions) {
			break
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("topic %s did not show %d partitions", name, partitions)
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Warm up: the first group on a new topic may wait for the coordinator to see the topic (a
	// missing-source-topics status, a later assignment). A throwaway member takes that wait here, so
	// that no measured group does.
	c, err := e.start(memberSpec{side: Go, app: e.app("warmup", name), input: name, members: 1, clients: "shared"})
	if err != nil {
		return "", err
	}
	_, err = c.waitTasks(120 * time.Second)
	stopAll([]*child{c}, 30*time.Second)
	if err != nil {
		return "", fmt.Errorf("warming up %s: %w", name, err)
	}
	e.topics[name] = true
	return name, nil
}
