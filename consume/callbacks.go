package consume

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// OnTasksAssigned implements membership.Listener: it plans the assignment (Plan), reads the
// committed offsets of the tasks it starts, calls the application's listener, asks
// WithChangelogStart where the assigned tasks' stores stand, and then consumes what the assignment
// needs (Assign); the listener and the change run while no Batch is out. A task of an unknown
// subtopology is a *tasks.UnknownSubtopologyError. A failure before the application's listener
// changes nothing.
func (c *Consumer) OnTasksAssigned(ctx context.Context, a tasks.Assignment, ready bool) error {
	p, err := c.Plan(ctx, a)
	if err != nil {
		return err
	}
	from := Start{Committed: commit.Offsets{}}
	if p.Starting.Len() > 0 {
		if from.Committed, err = c.commits.CommittedOffsets(ctx, p.Starting); err != nil {
			return fmt.Errorf("consume: committed offsets of %v: %w", p.Starting, err)
		}
	}
	// The application's listener and the change run while no Batch is out, as one step.
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	if c.o.next != nil {
		if err := c.o.next.OnTasksAssigned(ctx, p.Assignment, ready); err != nil {
			return err
		}
	}
	if c.o.start != nil {
		from.Stores = map[tasks.TopicPartition]int64{}
		for id := range p.Assignment.All().All() {
			cls, _ := c.router.Changelogs(id)
			for _, tp := range cls {
				if next, ok := c.o.start(id, tp); ok {
					from.Stores[tp] = next
				}
			}
		}
	}
	c.assign(p, from)
	return nil
}

// Plan is what an assignment needs read before the Consumer starts it (Consumer.Plan).
type Plan struct {
	// Assignment is the whole assignment, normalized.
	Assignment tasks.Assignment
	// Starting holds the tasks the assignment makes active that are not active now: their inputs
	// start from their committed offsets (Start.Committed), which the caller reads.
	Starting tasks.Set

	// start and end are the first and end offsets of the changelogs of the tasks the assignment
	// starts, as listed.
	start, end map[tasks.TopicPartition]int64
}

// Plan reads what assignment a (the whole assignment, as the member hands it over) needs before it
// is consumed, changing nothing: which tasks become active, and where the changelogs their stores
// restore from begin and end. A task of an unknown subtopology is a *tasks.UnknownSubtopologyError;
// a listing that fails is returned.
func (c *Consumer) Plan(ctx context.Context, a tasks.Assignment) (*Plan, error) {
	a = a.Normalize()
	for id := range a.All().All() {
		if !c.router.Known(id) {
			return nil, fmt.Errorf("consume: %w", &tasks.UnknownSubtopologyError{Task: id})
		}
	}
	p := &Plan{Assignment: a}
	var starting []tasks.ID
	var topics []string
	c.mu.Lock()
	for id := range a.Active.All() {
		if t := c.tasks[id]; t == nil || t.role != Active {
			starting = append(starting, id)
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
	p.Starting = tasks.NewSet(starting...)
	if len(topics) > 0 {
		slices.Sort(topics)
		var err error
		if p.start, p.end, err = c.list.Bounds(ctx, slices.Compact(topics)); err != nil {
			return nil, fmt.Errorf("consume: listing changelog offsets: %w", err)
		}
	}
	return p, nil
}

// Start says where the partitions of the tasks an assignment starts are read from.
type Start struct {
	// Committed holds the committed offsets of the inputs of the tasks that become active
	// (Plan.Starting); an input without one starts at the reset offset (WithResetOffset).
	Committed commit.Offsets
	// Stores holds where the application's stores stand in their changelogs: the next offset each
	// applies. A changelog without one is read from its first offset; one whose store stands before
	// the changelog's first offset (records deleted under it) is reported in Batch.Corrupted and
	// read from its first offset.
	Stores map[tasks.TopicPartition]int64
}

// Assign consumes what the planned assignment needs, once no Batch is out: inputs of the tasks it
// starts from from.Committed (paused while their stores restore up to the changelogs' end as
// planned), changelogs of restoring, standby and warm-up tasks from from.Stores; it stops consuming
// for tasks no longer assigned. p must be the last plan, with no assignment or revocation since.
func (c *Consumer) Assign(ctx context.Context, p *Plan, from Start) error {
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	c.assign(p, from)
	return nil
}

// assign is Assign with the callback lock held.
func (c *Consumer) assign(p *Plan, from Start) {
	a := p.Assignment
	ops := &clientOps{}
	c.mu.Lock()
	all := a.All()
	for id, t := range c.tasks {
		if !all.Contains(id) || (t.role == Active && !a.Active.Contains(id)) {
			c.dropTask(t, ops)
		}
	}
	for id := range a.Standby.All() {
		c.replica(id, Standby, p.start, p.end, from.Stores, ops)
	}
	for id := range a.Warmup.All() {
		c.replica(id, Warmup, p.start, p.end, from.Stores, ops)
	}
	for id := range p.Starting.All() {
		c.activate(id, from.Committed, p.start, p.end, from.Stores, ops)
	}
	c.mu.Unlock()
	ops.run(c.cl)
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
func (c *Consumer) replica(id tasks.ID, role Role, start, end, stores map[tasks.TopicPartition]int64, ops *clientOps) {
	if t := c.tasks[id]; t != nil {
		t.role = role
		return
	}
	t := &task{id: id, role: role, parts: make(map[tasks.TopicPartition]*part)}
	c.tasks[id] = t
	cls, _ := c.router.Changelogs(id)
	for _, tp := range cls {
		c.feedChangelog(t, tp, start, end, stores, ops)
	}
	c.log.Debug("replica started", "task", id.String(), "role", role.String())
}

// feedChangelog starts consuming a changelog partition of t from where its store stands (stores),
// its first offset (start) when that is unknown; end holds where the changelogs end, as listed.
// Called with c.mu held.
func (c *Consumer) feedChangelog(t *task, tp tasks.TopicPartition, start, end, stores map[tasks.TopicPartition]int64, ops *clientOps) {
	first := max(start[tp], 0)
	pos, corrupt := first, false
	if next, ok := stores[tp]; ok {
		pos = max(next, pos)
		last, listed := end[tp]
		switch {
		case next < first:
			// The store stands before the changelog's first offset: the records in between were
			// deleted (retention, DeleteRecords), so replaying the rest over the store would keep
			// what they overwrote. It is wiped and restored from the first offset, as Kafka
			// Streams wipes a corrupted task's stores.
			c.log.Warn("a store stands before its changelog's first offset (records deleted); it is wiped and restored from there",
				"task", t.id.String(), "topic", tp.Topic, "partition", tp.Partition, "store_position", next, "first_offset", first)
			corrupt = true
		case listed && next > last:
			// The store stands past the changelog's end: the changelog was deleted and created
			// again (after --delete-all-internal-topics, say) or lost records, so what the store
			// holds is not what the changelog says. Kept, it would be taken as restored (its
			// position is past the end); it is wiped and restored from the first offset. Kafka
			// Streams notices only if its restore consumer's seek fails as out of range, and then
			// wipes under exactly-once only. A changelog created again that has already grown past
			// the store's position cannot be told apart by offsets: docs/upgrades.md asks for the
			// state directories to be cleared with the internal topics.
			c.log.Warn("a store stands past its changelog's end (the changelog was created again or lost records); it is wiped and restored from its first offset",
				"task", t.id.String(), "topic", tp.Topic, "partition", tp.Partition, "store_position", next, "end_offset", last)
			corrupt, pos = true, first
		}
		if corrupt {
			c.corrupt = append(c.corrupt, Records{Task: t.id, Role: t.role, Partition: tp})
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
func (c *Consumer) activate(id tasks.ID, committed commit.Offsets, start, end, stores map[tasks.TopicPartition]int64, ops *clientOps) {
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
			c.feedChangelog(t, tp, start, end, stores, ops)
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

// OnTasksRevoked implements membership.Listener: it stops the revoked tasks (Stop), calls the
// application's listener (commit.OnRevoke commits there, reading Processed), and ends the
// revocation (Release), all while no Batch is out: if the listener failed, the tasks are consumed
// again from where they stopped, because the member keeps them and retries the revocation.
func (c *Consumer) OnTasksRevoked(ctx context.Context, revoked tasks.Set) error {
	// The whole revocation, the application's listener included, runs while no Batch is out.
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	c.stop(revoked)
	var err error
	if c.o.next != nil {
		err = c.o.next.OnTasksRevoked(ctx, revoked)
	}
	c.Release(revoked, err == nil)
	return err
}

// Stop stops consuming the partitions of the revoked active tasks, once no Batch is out: their
// positions are final, what a revocation commits. Their records no longer come; Release ends the
// revocation.
func (c *Consumer) Stop(ctx context.Context, revoked tasks.Set) error {
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	c.stop(revoked)
	return nil
}

// stop is Stop with the callback lock held.
func (c *Consumer) stop(revoked tasks.Set) {
	ops := &clientOps{}
	c.mu.Lock()
	for id := range revoked.All() {
		t := c.tasks[id]
		if t == nil || t.role != Active || t.stopped {
			continue
		}
		c.unconsume(t, ops)
		t.stopped = true
	}
	c.mu.Unlock()
	ops.run(c.cl)
}

// Release ends the revocation of the tasks Stop stopped: committed, they are forgotten; not (the
// commit failed, and the member keeps them and retries the revocation), they are consumed again
// from where they stopped.
func (c *Consumer) Release(revoked tasks.Set, committed bool) {
	ops := &clientOps{}
	c.mu.Lock()
	n := 0
	for id := range revoked.All() {
		t := c.tasks[id]
		if t == nil || !t.stopped {
			continue
		}
		t.stopped = false
		n++
		if committed {
			delete(c.tasks, t.id)
			continue
		}
		c.reconsume(t, ops)
	}
	c.mu.Unlock()
	ops.run(c.cl)
	if committed && n > 0 {
		c.log.Debug("tasks revoked", "tasks", revoked.String())
	}
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

// OnAllTasksLost implements membership.Listener: it stops consuming every partition (DropAll),
// then calls the application's listener, both while no Batch is out.
func (c *Consumer) OnAllTasksLost(ctx context.Context, lost tasks.Assignment) error {
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	c.dropAll()
	if c.o.next != nil {
		return c.o.next.OnAllTasksLost(ctx, lost)
	}
	return nil
}

// DropAll stops consuming every partition and forgets every task, once no Batch is out: the tasks
// were lost (nothing is committed for them: another member may own them).
func (c *Consumer) DropAll(ctx context.Context) error {
	if err := c.lockCallback(ctx); err != nil {
		return err
	}
	defer c.unlockCallback()
	c.dropAll()
	return nil
}

// dropAll is DropAll with the callback lock held.
func (c *Consumer) dropAll() {
	ops := &clientOps{}
	c.mu.Lock()
	for _, t := range c.tasks {
		c.dropTask(t, ops)
	}
	c.mu.Unlock()
	ops.run(c.cl)
}
