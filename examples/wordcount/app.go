package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// app is the word counting: the topology, a store of counts per task of subtopology 1, and what a
// record does. Consuming, restoring, standbys, commits and task offsets are the library's pieces
// (see run). The listener callbacks and the batches never overlap (consume), so the stores need no
// lock.
type app struct {
	topo                           *topology.Topology
	repartition, changelog, output string
	cl                             *kgo.Client
	stores                         map[tasks.ID]map[string]int64
	produceErr                     atomic.Pointer[error] // the first failed produce: nothing is committed after it
}

func newApp(appID, input, output string) *app {
	n := topology.Names{AppID: appID}
	a := &app{repartition: n.RepartitionTopic("words"), changelog: n.ChangelogTopic("counts"), output: output,
		stores: map[tasks.ID]map[string]int64{}}
	a.topo = topology.MustNew(
		topology.Subtopology{ID: "0", SourceTopics: []string{input}, RepartitionSinkTopics: []string{a.repartition}},
		topology.Subtopology{ID: "1", RepartitionSourceTopics: []topology.TopicInfo{n.Repartition("words", 0)},
			StateChangelogTopics: []topology.TopicInfo{n.KeyValueChangelog("counts")}},
	)
	return a
}

// count processes one record: a line of subtopology 0 goes out word by word to the repartition
// topic; a word of subtopology 1 is counted, and its new count goes to the changelog and the output.
func (a *app) count(task tasks.ID, r *kgo.Record) {
	if task.Subtopology == "0" {
		for _, w := range strings.Fields(strings.ToLower(string(r.Value))) {
			a.cl.Produce(context.Background(), &kgo.Record{Topic: a.repartition, Key: []byte(w), Value: []byte("1")}, a.produced)
		}
		return
	}
	st := a.store(task)
	st[string(r.Key)]++
	val := []byte(strconv.FormatInt(st[string(r.Key)], 10))
	a.cl.Produce(context.Background(), &kgo.Record{Topic: a.changelog, Partition: task.Partition, Key: r.Key, Value: val}, a.produced)
	a.cl.Produce(context.Background(), &kgo.Record{Topic: a.output, Key: r.Key, Value: val}, a.produced)
}

func (a *app) produced(_ *kgo.Record, err error) {
	if err != nil {
		a.produceErr.CompareAndSwap(nil, &err)
	}
}

// flush makes everything produced so far durable, the condition for committing what was processed.
func (a *app) flush(ctx context.Context) error {
	if err := a.cl.Flush(ctx); err != nil {
		return err
	}
	if err := a.produceErr.Load(); err != nil {
		return *err
	}
	return nil
}

// restore applies one changelog record to a store (a restoring active task, or a standby).
func (a *app) restore(task tasks.ID, r *kgo.Record) {
	if n, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
		a.store(task)[string(r.Key)] = n
	}
}

func (a *app) store(task tasks.ID) map[string]int64 {
	if a.stores[task] == nil {
		a.stores[task] = map[string]int64{}
	}
	return a.stores[task]
}

// OnTasksAssigned, OnTasksRevoked and OnAllTasksLost drop the stores of tasks no longer held.
func (a *app) OnTasksAssigned(_ context.Context, as tasks.Assignment, _ bool) error {
	for id := range a.stores {
		if !as.All().Contains(id) {
			delete(a.stores, id)
		}
	}
	return nil
}

func (a *app) OnTasksRevoked(_ context.Context, revoked tasks.Set) error {
	for id := range revoked.All() {
		delete(a.stores, id)
	}
	return nil
}

func (a *app) OnAllTasksLost(context.Context, tasks.Assignment) error {
	clear(a.stores)
	return nil
}

// process applies and processes what the consumer hands out, and commits every second what was
// processed (after making what it produced durable).
func (a *app) process(ctx context.Context, cons *consume.Consumer) error {
	lastCommit := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		b, err := cons.Poll(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return err
		case err == nil:
			for _, r := range b.Restore {
				for _, rec := range r.Records {
					a.restore(r.Task, rec)
				}
			}
			for _, r := range b.Process {
				for _, rec := range r.Records {
					a.count(r.Task, rec)
				}
			}
			b.Done()
		}
		if time.Since(lastCommit) > time.Second {
			lastCommit = time.Now()
			if err := a.flush(ctx); err != nil {
				return err
			}
			_ = cons.CommitProcessed(ctx) // a failed commit is retried next time
		}
	}
}
