package membership

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// Listener is told about the tasks the application owns. Callbacks run one at a time, in order, on
// a goroutine of their own (never the heartbeat loop), each with its own copy of the data. An error
// (or a panic) from OnTasksRevoked or OnTasksAssigned is reported as an EventError and the
// reconciliation is retried after backoff; the member keeps its previous assignment meanwhile.
//
// ctx is cancelled when the member is stopped by force (Close's ctx ended), and when the session
// guard gives the tasks up while the callback runs (EventSessionLost: no heartbeat answered for
// nearly the group's session timeout, so the broker may hand the tasks to others at any moment).
// A callback must watch ctx in anything that can take long (restoring a store, committing, waiting
// for a produce): once it is cancelled, stop touching the tasks, do not commit for them, and return
// (ctx.Err() is fine). Assignment already shows nothing owned by then, and OnAllTasksLost follows
// for whatever the application holds when the callback returned, an assignment it completed
// included.
type Listener interface {
	// OnTasksRevoked: stop processing these active tasks and commit their progress. Called before any
	// new assignment, and only for tasks the application holds.
	OnTasksRevoked(ctx context.Context, revoked tasks.Set) error
	// OnTasksAssigned hands over the whole assignment the application now owns (not a delta), and
	// whether the group is ready (no missing or mis-partitioned topics, no delayed assignment).
	OnTasksAssigned(ctx context.Context, assignment tasks.Assignment, groupReady bool) error
	// OnAllTasksLost: the tasks are gone without a clean hand-over (fenced, fatal error, the session
	// guard); do not commit for them.
	OnAllTasksLost(ctx context.Context, lost tasks.Assignment) error
}

// TaskOffsetsProvider gives the changelog positions of the member's tasks (Kafka 4.4+ brokers use
// them to place warm-up tasks). offsets and ends are, per task, the sums of the changelog offsets and
// end offsets (tasks.SumOffsets). It is called on a goroutine of its own, only when offsets may be
// sent; the heartbeat waits for it at most 250 ms and goes without
// offsets after that, so it should be quick (read a snapshot).
type TaskOffsetsProvider interface {
	TaskOffsets(owned tasks.Assignment) (offsets, ends tasks.Offsets)
}

// Transport is what the Manager needs from the network. The default sends through the user's
// *kgo.Client to the group coordinator; tests and applications with their own routing may supply
// another with WithTransport. Every method is called from a goroutine of its own and must return
// once ctx ends.
type Transport interface {
	// Heartbeat sends req once (a heartbeat, or the leave heartbeat) and returns the broker's answer
	// as it is (error code included), or the error that kept it from arriving. It must not retry:
	// the member decides whether and when to send again.
	Heartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)
	// Describe describes the group (StreamsGroupDescribe) at its coordinator.
	Describe(ctx context.Context) (*kmsg.StreamsGroupDescribeResponseGroup, error)
	// Capabilities asks the cluster what it supports (ApiVersions), once.
	Capabilities(ctx context.Context) (heartbeat.Capabilities, error)
	// GroupConfigs describes the group's dynamic configs named (DescribeConfigs, resource type
	// GROUP), once, and returns the answer as it is (the session guard reads
	// streams.session.timeout.ms from it).
	GroupConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error)
	// CoordinatorConfigs describes the broker configs named of the group's coordinator
	// (DescribeConfigs of resource type BROKER), once, and returns the answer as it is.
	CoordinatorConfigs(ctx context.Context, names ...string) (*kmsg.DescribeConfigsResponse, error)
}

type options struct {
	listener  Listener
	offsets   TaskOffsetsProvider
	logger    *slog.Logger
	memberID  string
	transport Transport
	hooks     []Hook
}

// Option configures a Manager.
type Option func(*options)

// WithListener sets the application's listener (default: none, tasks are only reported as events).
func WithListener(l Listener) Option { return func(o *options) { o.listener = l } }

// WithTaskOffsets sets where task offsets come from (default: none are reported).
func WithTaskOffsets(p TaskOffsetsProvider) Option { return func(o *options) { o.offsets = p } }

// WithLogger sets the logger (default slog.Default()). Lines carry group, member, epoch and state.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMemberID fixes the member ID (default: a new random UUID). It is kept across rejoins.
func WithMemberID(id string) Option { return func(o *options) { o.memberID = id } }

// WithTransport replaces the network: the member talks to t instead of the cluster behind the
// *kgo.Client (which may then be nil).
func WithTransport(t Transport) Option { return func(o *options) { o.transport = t } }
