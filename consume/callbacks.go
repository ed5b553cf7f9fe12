package consume

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// OnTasksAssigned implements membership.Listener: it reads the committed offsets of the newly active
// tasks and the changelog bounds of the stores to restore, calls the application's listener, and then
// consumes what the assignment needs: inputs of new active tasks (paused while their stores restore),
// changelogs of restoring, standby and warm-up tasks; it stops consuming for tasks no longer
// assigned. A task of an unknown subtopology is a *tasks.UnknownSubtopologyError.
func (c *Consumer) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	a = a.Normalize()
	for id := range a.All().All() {
		if !c.router.Known(id) {
			return fmt.Errorf("consume: %w", &tasks.UnknownSubtopologyError{Task: id})
		}
	}
	// What changes, read without the lock: only callbacks change the set of tasks and their roles,
	// and callbacks run one at a time.
	c.mu.Lock()
	var newActive []tasks.ID
	var topics []string
	for id := range a.Active.All() {
		if t := c.tasks[id]; t == nil || t.role != Active {
			newActive = append(newActive, id)
			if c.router.Stateful(id) {
				topics = append(topics, c.changelogTopics(id)...)
			}
		}
	}
	for id := range a.Standby.Union(a.Warmup).All() {
		if c.tasks[id] == nil {
			topics = append(topics, c.changelogTopics(id)...)
		}
	}
	c.mu.Unlock()

	committed := commit.Offsets{}
	if len(newActive) > 0 {
		var err error
		if committed, err = c.commits.CommittedOffsets(ctx, tasks.NewSet(newActive...)); err != nil {
			return fmt.Errorf("consume: committed offsets of %v: %w", tasks.NewSet(newActive...), err)
		}
	}
	var start, end map[tasks.TopicPartition]int64
	if len(topics) > 0 {
		slices.Sort(topics)
		var err error
		if start, end, err = c.list.Bounds(ctx, slices.Compact(topics)); err != nil {
			return fmt.Errorf("consume: listing changelog offsets: %w", err)
		}
	}

	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	if c.o.next != nil {
		if err := c.o.next.OnTasksAssigned(ctx, a, ready); err != nil {
			return err
		}
	}
	ops := &clientOps{}
	c.mu.Lock()
	all := a.All()
	for id, t := range c.tasks {
		if !all.Contains(id) || (t.role == Active && !a.Active.Contains(id)) {
			c.dropTask(t, ops)
		}
	}
	for id := range a.Standby.All() {
		c.replica(id, Standby, start, ops)
	}
	for id := range a.Warmup.All() {
		c.replica(id, Warmup, start, ops)
	}
	for _, id := range newActive {
		c.activate(id, committed, start, end, ops)
	}
	c.mu.Unlock()
	ops.run(c.cl)
	return nil
}

func (c *Consumer) changelogTopics(id tasks.ID) []string {
	cls, _ := c.router.Changelogs(id)
	out := make([]string, len(cls))
	for i, tp := range cls {
		out[i] = tp.Topic
	}
	return out
}

// replica keeps task id as a standby or warm-up task, feeding its changelogs. Called with c.mu held.
func (c *Consumer) replica(id tasks.ID, role Role, start map[tasks.TopicPartition]int64, ops *clientOps) {
	if t := c.tasks[id]; t != nil {
		t.role = role
		return
	}
	t := &task{id: id, role: role, parts: make(map[tasks.TopicPartition]*part)}
	c.tasks[id] = t
	cls, _ := c.router.Changelogs(id)
	for _, tp := range cls {
		c.feedChangelog(t, tp, start, ops)
	}
	c.log.Debug("replica started", "task", id.String(), "role", role.String())
}

// feedChangelog starts consuming a changelog partition of t from where its store stands. Called with
// c.mu held.
func (c *Consumer) feedChangelog(t *task, tp tasks.TopicPartition, start map[tasks.TopicPartition]int64, ops *clientOps) {
	first := max(start[tp], 0)
	pos, corrupt := first, false
	if c.o.start != nil {
		if next, ok := c.o.start(t.id, tp); ok {
			pos = max(next, pos)
			if next < first {
				// The store stands before the changelog's first offset: the records in between were
				// deleted (retention, DeleteRecords), so replaying the rest over the store would keep
				// what they overwrote. It is wiped and restored from the first offset, as Kafka
				// Streams wipes a corrupted task's stores.
				c.log.Warn("a store stands before its changelog's first offset (records deleted); it is wiped and restored from there",
					"task", t.id.String(), "topic", tp.Topic, "partition", tp.Partition, "store_position", next, "first_offset", first)
				c.corrupt = append(c.corrupt, Records{Task: t.id, Role: t.role, Partition: tp})
				corrupt = true
			}
		}
	}
	p := &part{tp: tp, task: t.id, kind: tasks.Changelog, handed: pos, done: pos, committed: -1, origin: pos, end: -1}
	if corrupt {
		// Not restored, even when the changelog has nothing from its first offset on, until the
		// batch that reports it (and so the store's wipe) is done.
		p.done = -1
	}
	t.parts[tp] = p
	c.byTP[tp] = p
	ops.addAt(tp, kgo.NewOffset().At(pos))
}

// activate makes task id active: its inputs from their committed offsets, paused while its stores
// restore up to the changelogs' current end. A standby or warm-up task goes on from its replica.
// Called with c.mu held.
func (c *Consumer) activate(id tasks.ID, committed commit.Offsets, start, end map[tasks.TopicPartition]int64, ops *clientOps) {
	t := c.tasks[id]
	from := "nothing"
	if t == nil {
		t = &task{id: id, parts: make(map[tasks.TopicPartition]*part)}
		c.tasks[id] = t
	} else {
		from = t.role.String()
	}
	t.role = Active
	inputs, _ := c.router.Inputs(id)
	for _, tp := range inputs {
		p := &part{tp: tp, task: id, kind: tasks.Input, handed: -1, done: -1, committed: -1, origin: -1}
		off := c.o.reset
		if o, ok := committed[tp]; ok {
			p.handed, p.done, p.committed, p.origin = o, o, o, o
			off = kgo.NewOffset().At(o)
		}
		t.parts[tp] = p
		c.byTP[tp] = p
		ops.addAt(tp, off)
	}
	if !c.router.Stateful(id) {
		c.log.Debug("task started", "task", id.String())
		return
	}
	cls, _ := c.router.Changelogs(id)
	t.restoreTo = make(map[tasks.TopicPartition]int64, len(cls))
	for _, tp := range cls {
		if t.parts[tp] == nil {
			c.feedChangelog(t, tp, start, ops)
		}
		t.restoreTo[tp] = end[tp]
	}
	c.log.Info("task assigned", "task", id.String(), "from", from, "restore_to", fmt.Sprint(t.restoreTo))
	if t.caughtUp() {
		c.finishRestore(t, ops)
		return
	}
	t.restoring = true
	ops.pause = append(ops.pause, inputs...)
}

// caughtUp reports whether every changelog of a restoring task reached its end offset.
func (t *task) caughtUp() bool {
	for tp, end := range t.restoreTo {
		if p := t.parts[tp]; p == nil || p.done < end {
			return false
		}
	}
	return true
}

// finishRestore lets a restored task process: its inputs resume and its changelogs are no longer
// read. Called with c.mu held.
func (c *Consumer) finishRestore(t *task, ops *clientOps) {
	wasRestoring := t.restoring
	t.restoring = false
	for tp, p := range t.parts {
		switch p.kind {
		case tasks.Changelog:
			if c.byTP[tp] == p {
				delete(c.byTP, tp)
				ops.drop(tp)
			}
			delete(t.parts, tp)
		case tasks.Input:
			if wasRestoring {
				ops.resume = append(ops.resume, tp)
			}
		}
	}
	c.log.Info("task restored", "task", t.id.String(), "changelog_end", fmt.Sprint(t.restoreTo))
}

// unconsume stops consuming every partition of t. Called with c.mu held.
func (c *Consumer) unconsume(t *task, ops *clientOps) {
	for tp, p := range t.parts {
		if c.byTP[tp] != p {
			continue
		}
		delete(c.byTP, tp)
		ops.remove = append(ops.remove, tp)
		if p.kind == tasks.Input && (t.restoring || p.held) {
			ops.resume = append(ops.resume, tp) // clear the pause, or it would outlive the task
			p.held = false
		}
	}
}

// dropTask forgets t. Called with c.mu held.
func (c *Consumer) dropTask(t *task, ops *clientOps) {
	c.unconsume(t, ops)
	delete(c.tasks, t.id)
	c.log.Debug("task dropped", "task", t.id.String(), "role", t.role.String())
}

// OnTasksRevoked implements membership.Listener: once no Batch is out, it stops consuming the revoked
// active tasks' partitions, then calls the application's listener (commit.OnRevoke commits there,
// reading Processed). If that fails the tasks are consumed again from where they stopped, because the
// member keeps them and retries the revocation.
func (c *Consumer) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	ops := &clientOps{}
	var stopped []*task
	c.mu.Lock()
	for id := range revoked.All() {
		t := c.tasks[id]
		if t == nil || t.role != Active {
			continue
		}
		c.unconsume(t, ops)
		t.stopped = true
		stopped = append(stopped, t)
	}
	c.mu.Unlock()
	ops.run(c.cl)
	var err error
	if c.o.next != nil {
		err = c.o.next.OnTasksRevoked(ctx, revoked)
	}
	ops = &clientOps{}
	c.mu.Lock()
	for _, t := range stopped {
		t.stopped = false
		if err == nil {
			delete(c.tasks, t.id)
			continue
		}
		c.reconsume(t, ops)
	}
	c.mu.Unlock()
	ops.run(c.cl)
	if err == nil && len(stopped) > 0 {
		c.log.Debug("tasks revoked", "tasks", revoked.String())
	}
	return err
}

// reconsume consumes t's partitions again from where they stopped (a failed revocation). Called with
// c.mu held.
func (c *Consumer) reconsume(t *task, ops *clientOps) {
	for tp, p := range t.parts {
		off := c.o.reset
		if p.done >= 0 {
			off = kgo.NewOffset().At(p.done)
		}
		p.handed = p.done
		c.byTP[tp] = p
		if p.kind == tasks.Input && t.restoring {
			ops.pause = append(ops.pause, tp)
		}
		ops.addAt(tp, off)
	}
}

// OnAllTasksLost implements membership.Listener: once no Batch is out, it stops consuming every
// partition (nothing is committed: another member may own the tasks), then calls the application's
// listener.
func (c *Consumer) OnAllTasksLost(ctx context.Context, lost tasks.Assignment) error {
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	ops := &clientOps{}
	c.mu.Lock()
	for _, t := range c.tasks {
		c.dropTask(t, ops)
	}
	c.mu.Unlock()
	ops.run(c.cl)
	if c.o.next != nil {
		return c.o.next.OnAllTasksLost(ctx, lost)
	}
	return nil
}
