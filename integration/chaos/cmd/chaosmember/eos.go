package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/integration/chaos"
	"github.com/streamsgroup/streamsgroup/plugin/sgpebble"
	"github.com/streamsgroup/streamsgroup/serde"
	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/stream"
	"github.com/streamsgroup/streamsgroup/tasks"
	"github.com/streamsgroup/streamsgroup/topology"
)

// The exactly-once mode (-eos, APP=eos make chaos): one member per process, a stream.App running
// the counting application under processing.guarantee=exactly_once_v2 with its store "counts" in
// Pebble (sgpebble) under -state, which the driver keeps across the process's restarts (so the
// process ID, hence the transactional.id, and the store survive). Each input record adds one to its
// key's count in the store and sends the new count to the output topic (key as a string, count as
// serde.Int64). SIGTERM first logs the store's contents (a KindStore record: every key of the
// process's active tasks with its committed count), then stops the App (commit, leave).

// eosCounts is the counting application's store; eosWindows its windowed count's (each key's
// records per tumbling window of chaos.EOSWindowMs by their timestamps).
var (
	eosCounts  = stream.KeyValue(chaos.EOSStore, serde.String, serde.Int64)
	eosWindows = stream.Window(chaos.EOSWindowStore, chaos.EOSWindowRetention, serde.String, serde.Int64)
)

// eosMember is the App with what the checker needs logged from its hooks.
type eosMember struct {
	name    string
	lw      *logw
	app     *stream.App
	started sync.Once

	mu   sync.Mutex
	held []string
}

func runEOS(ctx context.Context, lw *logw, name string, seeds []string, rewrite map[string]string, app, input, output, stateDir, replication string, logger *slog.Logger) int {
	cfg, err := config.FromMap(map[string]string{
		"replication.factor":   replication,
		"application.id":       app,
		"bootstrap.servers":    seeds[0],
		"processing.guarantee": string(config.ExactlyOnceV2),
		"state.dir":            stateDir,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		return 2
	}
	cfg.BootstrapServers = seeds
	names := topology.Names{AppID: app}
	topo, err := topology.New(topology.Subtopology{ID: "0", SourceTopics: []string{input},
		StateChangelogTopics: []topology.TopicInfo{names.KeyValueChangelog(eosCounts.Name()),
			names.WindowedChangelog(eosWindows.Name(), chaos.EOSWindowRetention.Milliseconds())}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		return 2
	}
	out := stream.Output(output, serde.String, serde.Int64)
	windowsOut := stream.Output(chaos.EOSWindowOutput, serde.String, serde.Int64)
	// The output carries the input's value (the driver's round number) in a header, so that S4 can
	// name the input record behind a count that went wrong.
	count := stream.Typed(serde.String, serde.String, func(c *stream.Context, key, round string) error {
		n, _, err := eosCounts.Get(c, key)
		if err != nil {
			return err
		}
		if err := eosCounts.Put(c, key, n+1); err != nil {
			return err
		}
		if err := out.Send(c, key, n+1, kgo.RecordHeader{Key: chaos.EOSRoundHeader, Value: []byte(round)}); err != nil {
			return err
		}
		// The windowed count: the record's window's count, and its new value to the windowed output.
		start := chaos.WindowOf(c.Timestamp().UnixMilli())
		w, _, err := eosWindows.Get(c, key, start)
		if err != nil {
			return err
		}
		if err := eosWindows.Put(c, key, start, w+1); err != nil {
			return err
		}
		return windowsOut.Send(c, chaos.WindowKey(key, start), w+1)
	})
	if !logger.Enabled(context.Background(), slog.LevelDebug) {
		// The runtime's warnings (aborted transactions, retries) go to the process's stderr file,
		// beside its JSON log, unless -debug asked for everything.
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	m := &eosMember{name: name, lw: lw}
	var d net.Dialer
	m.app, err = stream.New(cfg, topo, stream.Processors{"0": stream.Connect(count, eosCounts, eosWindows)},
		stream.WithStores(sgpebble.New()),
		stream.WithLogger(logger.With("member", name)),
		stream.WithHooks(m),
		stream.WithClientOptions(kgo.ClientID("chaos-"+name), kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			if to, ok := rewrite[host]; ok {
				host = to
			}
			return d.DialContext(ctx, network, host)
		})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosmember:", err)
		return 2
	}
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.app.Run(runCtx) }()

	var runErr error
	select {
	case <-ctx.Done():
		m.dump()
		cancel()
		runErr = <-done
	case runErr = <-done: // a fatal error: the process ends without a signal, which S3 reports
	}
	r := chaos.Record{Member: name, Kind: chaos.KindClosed}
	if runErr != nil {
		r.Err = runErr.Error()
		lw.write(chaos.Record{Member: name, Kind: chaos.KindEvent, Event: "fatal", Err: runErr.Error()})
	}
	lw.write(r)
	if runErr != nil {
		return 3
	}
	return 0
}

// dump logs the committed counts of the process's active tasks (App.Store reads committed state).
func (m *eosMember) dump() {
	m.mu.Lock()
	held := slices.Clone(m.held)
	m.mu.Unlock()
	r := chaos.Record{Member: m.name, Kind: chaos.KindStore, Active: held, Counts: map[string]int64{}}
	st, err := m.app.Store(eosCounts.Name())
	if err == nil {
		var it store.Iterator
		if it, err = st.Range(nil, nil); err == nil {
			for it.Next() {
				v, derr := serde.Int64.Decode(it.Value())
				if derr != nil {
					err = derr
					break
				}
				r.Counts[string(it.Key())] = v
			}
			err = errors.Join(err, it.Err(), it.Close())
		}
	}
	if err != nil {
		r.Err = err.Error()
	}
	m.lw.write(r)
}

// start logs the member's ID once, at the first hook (the member exists from then on).
func (m *eosMember) start() {
	m.started.Do(func() {
		id, _ := m.app.Member()
		m.lw.write(chaos.Record{Member: m.name, Kind: chaos.KindStart, MemberID: id, PID: os.Getpid()})
	})
}

// OnHeartbeatSent marks the start (the member's first heartbeat).
func (m *eosMember) OnHeartbeatSent() { m.start() }

// OnHeartbeatAnswered logs each heartbeat result, as the plain member does.
func (m *eosMember) OnHeartbeatAnswered(_ time.Duration, class heartbeat.Class, err error) {
	m.start()
	_, coded := errors.AsType[*heartbeat.Error](err)
	r := chaos.Record{Member: m.name, Kind: chaos.KindHeartbeat, Answered: err == nil || coded}
	if err != nil {
		r.Err = fmt.Sprintf("%s: %v", class, err)
	}
	r.MemberID, r.Epoch = m.app.Member()
	m.lw.write(r)
}

// OnAssignmentChanged logs the active tasks the App holds after each callback returned: under
// exactly-once a revoked task's transaction is committed inside OnTasksRevoked, so it is held
// until then.
func (m *eosMember) OnAssignmentChanged(owned tasks.Assignment) {
	m.start()
	held := names(owned.Active)
	m.mu.Lock()
	same := slices.Equal(held, m.held)
	m.held = held
	m.mu.Unlock()
	if same {
		return
	}
	id, epoch := m.app.Member()
	m.lw.write(chaos.Record{Member: m.name, Kind: chaos.KindOwned, Active: held, Why: "changed", MemberID: id, Epoch: epoch})
}
