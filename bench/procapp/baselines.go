package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/commit"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/consume"
	"github.com/streamsgroup/streamsgroup/membership"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The two baselines the runtime's cost is judged against (issue 26): the count app written by hand
// on the runtime's own pieces, and a bare kgo pipe. Both commit every commitInterval, as the
// runtime does under at-least-once in the bench.

const commitInterval = time.Second

// produced remembers the first write the brokers refused (Flush does not report it).
type produced struct {
	mu  sync.Mutex
	err error
}

func (p *produced) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = fmt.Errorf("writing to %s[%d]: %w", r.Topic, r.Partition, err)
	}
}

// durable waits for every write so far and returns the first failure.
func (p *produced) durable(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// handwritten is the count app (a count per key, every new count to its changelog and to output)
// written by hand on the pieces (membership, consume, commit), with a plain map per task as its
// store: what the work costs without the runtime's loop, stores and machine.
func handwritten(ctx context.Context, bootstrap, appID, input, output string) error {
	cfg, err := config.FromMap(map[string]string{"application.id": appID, "bootstrap.servers": bootstrap})
	if err != nil {
		return err
	}
	names := topology.Names{AppID: appID}
	changelog := names.ChangelogTopic("counts")
	topo := topology.MustNew(topology.Subtopology{ID: "0", SourceTopics: []string{input},
		StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog("counts")}})
	opts, err := cfg.ClientOptions()
	if err != nil {
		return err
	}
	router, err := tasks.NewRouter(topo)
	if err != nil {
		return err
	}
	// Uncompressed writes, as the runtime's and Kafka Streams' (Kafka's compression.type default).
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(router.Partitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.FetchMaxBytes(256<<10), kgo.FetchMaxPartitionBytes(128<<10))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	commits, err := commit.New(cl, cfg, topo)
	if err != nil {
		return err
	}
	var out produced
	var cons *consume.Consumer
	revoked := func(ctx context.Context, s tasks.Set) (commit.Offsets, error) {
		if err := out.durable(ctx, cl); err != nil {
			return nil, err
		}
		return cons.Processed(s), nil
	}
	cons, err = consume.New(cl, topo, commits, consume.WithListener(commit.OnRevoke(commits, revoked, nil)))
	if err != nil {
		return err
	}
	m, err := membership.New(cl, cfg, topo, membership.WithListener(cons))
	if err != nil {
		return err
	}
	commits.Bind(m)
	if err := m.Start(ctx); err != nil {
		return err
	}
	counts := map[int32]map[string]int64{}
	first := map[int32]bool{}
	last := time.Now()
	var loopErr error
	for ctx.Err() == nil && loopErr == nil {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		b, err := cons.Poll(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			if b != nil {
				b.Done()
			}
		case errors.Is(err, context.DeadlineExceeded):
		case err != nil:
			loopErr = err
		default:
			for _, rs := range b.Process {
				p := rs.Task.Partition
				if !first[p] {
					first[p] = true
					emit("FIRST %d %d", micros(), p)
				}
				c := counts[p]
				if c == nil {
					c = map[string]int64{}
					counts[p] = c
				}
				for _, r := range rs.Records {
					n := c[string(r.Key)] + 1
					c[string(r.Key)] = n
					v := binary.BigEndian.AppendUint64(nil, uint64(n))
					cl.Produce(ctx, &kgo.Record{Topic: changelog, Partition: p, Key: r.Key, Value: v}, out.promise)
					cl.Produce(ctx, &kgo.Record{Topic: output, Key: r.Key, Value: v}, out.promise)
				}
			}
			b.Done()
		}
		if time.Since(last) < commitInterval || ctx.Err() != nil {
			continue
		}
		if err := out.durable(ctx, cl); err != nil {
			loopErr = err
			break
		}
		if err := cons.CommitProcessed(ctx); err != nil && ctx.Err() == nil {
			loopErr = err
		}
		last = time.Now()
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(loopErr, m.Close(closeCtx))
}

// pipe is a bare kgo consume→produce pipe in a classic consumer group: every input record written
// to output unchanged, offsets committed every commitInterval once what was produced is
// acknowledged. No stores, no changelog, no streams group.
func pipe(ctx context.Context, bootstrap, group, input, output string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumerGroup(group), kgo.ConsumeTopics(input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.DefaultProduceTopic(output),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // as the runtime writes (Kafka's compression.type default)
		kgo.FetchMaxBytes(256<<10), kgo.FetchMaxPartitionBytes(128<<10))
	if err != nil {
		return err
	}
	defer cl.Close()
	var out produced
	first := map[int32]bool{}
	last := time.Now()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.IsClientClosed() {
			return nil
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !first[r.Partition] {
				first[r.Partition] = true
				emit("FIRST %d %d", micros(), r.Partition)
			}
			cl.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, out.promise)
		})
		if time.Since(last) < commitInterval {
			continue
		}
		if err := out.durable(ctx, cl); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		last = time.Now()
	}
	return nil
}
