package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/streamsgroup/streamsgroup/internal/hostport"
	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Keys, named as in Kafka Streams where Kafka Streams has the setting.
const (
	KeyApplicationID    = "application.id"
	KeyBootstrapServers = "bootstrap.servers"
	KeyTopologyEpoch    = "topology.epoch"
	// KeyReplicationFactor is Kafka Streams' replication.factor: the replication factor of the
	// internal topics (repartition and changelog topics) the broker creates for the group.
	KeyReplicationFactor  = "replication.factor"
	KeyTaskOffsetInterval = "task.offset.interval.ms"
	KeyProcessID          = "process.id"
	KeyGroupInstanceID    = "group.instance.id"
	KeyClientRack         = "client.rack"
	KeyApplicationServer  = "application.server"
	KeyMaxPollInterval    = "max.poll.interval.ms"
	KeyRetryBackoff       = "retry.backoff.ms"
	KeyRetryBackoffMax    = "retry.backoff.max.ms"
	KeyRequestTimeout     = "request.timeout.ms"
	KeyStateDir           = "state.dir"
	KeyClientID           = "client.id"

	// PrefixClientTag starts the keys of client tags: client.tag.zone=eu-1 sends the tag zone=eu-1
	// (used by the broker's rack-aware assignment).
	PrefixClientTag = "client.tag."
	// PrefixUser starts keys that belong to the application: they are kept in Config.User and never
	// interpreted. Any other key this package does not know is an error, so a typo cannot pass unseen.
	PrefixUser = "user."
)

// Defaults.
const (
	DefaultMaxPollInterval = 300 * time.Second // Kafka Streams' max.poll.interval.ms
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultRetryBackoffMax = 1000 * time.Millisecond
	DefaultRequestTimeout  = 30 * time.Second
)

// Config is the configuration of one streams-group member.
type Config struct {
	// ApplicationID (application.id) names the application; it is the group ID, and the prefix of
	// internal topic names. Required.
	ApplicationID string
	// BootstrapServers (bootstrap.servers, comma separated) are host:port seeds. The Manager uses the
	// caller's *kgo.Client, so this is only read by programs that build their client from the config.
	BootstrapServers []string
	// TopologyEpoch (topology.epoch) is sent with the topology on every join. Default 0, which is what
	// Kafka Streams always sends: a Go member that shares a group with Java members must keep 0. A
	// group keeps the first topology it sees; a member with a lower epoch is told its topology is
	// stale, and one with an equal or higher epoch but another topology is refused.
	TopologyEpoch int32
	// ReplicationFactor (replication.factor) is the replication factor of every internal topic the
	// topology declares without one (Topology.WithReplicationFactor): what the member sends, and so
	// what the broker creates them with. -1 (the default; 0 in a Config literal means the same)
	// leaves it to the broker's default.replication.factor, as Kafka Streams does. Production
	// clusters, and exactly_once_v2 above all, want 3 (docs/runtime.md#what-exactly-once-needs-from-the-cluster).
	ReplicationFactor int16
	// TaskOffsetInterval (task.offset.interval.ms) is how often task offsets are reported to 4.4+
	// brokers. 0 (the default) follows the interval the broker announces; an explicit value is used,
	// but never below the broker's.
	TaskOffsetInterval time.Duration
	// ProcessID (process.id) identifies the process; members of one process share it. Default: a UUID
	// kept in StateDir when that is set (so a restart keeps its identity), else a random one.
	ProcessID string
	// GroupInstanceID (group.instance.id) makes the member static (Kafka 4.4+ brokers only).
	GroupInstanceID string
	// ClientRack (client.rack) is the member's rack, sent on join.
	ClientRack string
	// ApplicationServer (application.server) is the host:port where this process serves interactive
	// queries; the group tells every member which partitions each endpoint holds.
	ApplicationServer string
	// ClientTags (client.tag.<key>) are sent on join for rack-aware assignment.
	ClientTags map[string]string
	// MaxPollInterval (max.poll.interval.ms) is sent as the rebalance timeout: how long the member may
	// take to revoke tasks before the broker fences it. Default 300 s.
	MaxPollInterval time.Duration
	// RetryBackoff (retry.backoff.ms) and RetryBackoffMax (retry.backoff.max.ms) bound the exponential
	// backoff with jitter (heartbeat.Backoff) after a failed heartbeat, and of every other retry the
	// member and its pieces make (describes, commits: commit.New). Defaults 100 ms and 1 s.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
	// RequestTimeout (request.timeout.ms) bounds one request to the broker. Default 30 s.
	RequestTimeout time.Duration
	// StateDir (state.dir) is where the process ID is kept; empty means nothing is persisted.
	StateDir string
	// ClientID (client.id) names the clients built from this config in the brokers' logs, quotas and
	// metrics; "" lets the builder choose (the stream runtime uses the application ID).
	ClientID string
	// User holds the user.* keys, untouched.
	User map[string]string
	// Runtime is what the stream runtime (package stream) reads: commit.interval.ms,
	// processing.guarantee, state.cleanup.delay.ms, the exception handlers and auto.offset.reset.
	Runtime Runtime
	// Security (security.protocol, sasl.*, ssl.*) is how the client built by ClientOptions connects:
	// TLS, SASL, or neither (the default). See Security.
	Security Security
}

// Default returns a Config with every default filled in and the given application ID.
func Default(applicationID string) Config {
	return Config{
		ApplicationID:     applicationID,
		ReplicationFactor: -1,
		MaxPollInterval:   DefaultMaxPollInterval,
		RetryBackoff:      DefaultRetryBackoff,
		RetryBackoffMax:   DefaultRetryBackoffMax,
		RequestTimeout:    DefaultRequestTimeout,
		Runtime:           defaultRuntime(),
	}
}

// KeyError is one bad key and why. Its text quotes the key and the value (see Quote), so invisible
// characters show and a long value is cut.
type KeyError struct {
	Key    string
	Value  string
	Reason string
	// Err is the underlying error, when there is one (a state.dir that cannot be written).
	Err error
}

func (e KeyError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", text.Quote(e.Key), e.Reason)
	}
	return fmt.Sprintf("%s=%s: %s", text.Quote(e.Key), text.Quote(e.Value), e.Reason)
}

// Unwrap returns Err.
func (e KeyError) Unwrap() error { return e.Err }

// Error lists every bad key of a configuration. It is the only error Validate, FromMap and
// FromProperties return for bad values, and ResolveProcessID's for a state.dir it cannot use. Its
// text lists the first MaxListedProblems problems and counts the rest; Keys holds them all.
type Error struct {
	Keys []KeyError
}

func (e *Error) Error() string {
	n := min(len(e.Keys), MaxListedProblems)
	msgs := make([]string, n)
	for i, k := range e.Keys[:n] {
		msgs[i] = k.Error()
	}
	s := "invalid configuration: " + strings.Join(msgs, "; ")
	if more := len(e.Keys) - n; more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}

// Has reports whether key is among the bad keys.
func (e *Error) Has(key string) bool {
	return slices.ContainsFunc(e.Keys, func(k KeyError) bool { return k.Key == key })
}

// Unwrap returns the underlying errors of the problems that have one.
func (e *Error) Unwrap() []error {
	var out []error
	for _, k := range e.Keys {
		if k.Err != nil {
			out = append(out, k.Err)
		}
	}
	return out
}

type problems struct{ keys []KeyError }

func (p *problems) add(key, value, format string, args ...any) {
	p.keys = append(p.keys, KeyError{Key: key, Value: value, Reason: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if len(p.keys) == 0 {
		return nil
	}
	sort.SliceStable(p.keys, func(i, j int) bool { return p.keys[i].Key < p.keys[j].Key })
	return &Error{Keys: p.keys}
}

// Validate checks every field and returns an *Error listing each bad one, or nil. It does no I/O.
func (c *Config) Validate() error {
	var p problems
	c.validate(&p)
	return p.err()
}

// Limits taken from Kafka.
// MaxInstanceIDLength is Kafka's limit on group.instance.id (JoinGroupRequest.validateGroupInstanceId).
const MaxInstanceIDLength = 249

const (
	// maxAppIDLength keeps application.id short enough to prefix internal topic names, which Kafka
	// limits to 249 characters.
	maxAppIDLength = 200
	// Kafka Streams' limits on client tags (StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_*).
	maxClientTags         = 5
	maxClientTagKeyLength = 20
	maxClientTagValLength = 30
)

const appIDRequired = "is required: set it to the application's name (it is the streams group ID and prefixes internal topic names)"

func (c *Config) validate(p *problems) {
	if c.ApplicationID == "" {
		p.add(KeyApplicationID, "", appIDRequired)
	} else if bad := text.FirstIllegal(c.ApplicationID, topicChar); bad != "" {
		p.add(KeyApplicationID, c.ApplicationID, "%s is not one of [a-zA-Z0-9._-] (it prefixes internal topic names)", bad)
	} else if len(c.ApplicationID) > maxAppIDLength {
		p.add(KeyApplicationID, c.ApplicationID, "is %d characters long, more than %d (it prefixes internal topic names, which Kafka limits to 249)",
			len(c.ApplicationID), maxAppIDLength)
	}
	for _, s := range c.BootstrapServers {
		if _, _, err := hostport.Check(s); err != nil {
			p.add(KeyBootstrapServers, s, "%v", err)
		}
	}
	if c.TopologyEpoch < 0 {
		p.add(KeyTopologyEpoch, strconv.Itoa(int(c.TopologyEpoch)), "must be >= 0")
	}
	if c.ReplicationFactor < -1 {
		p.add(KeyReplicationFactor, strconv.Itoa(int(c.ReplicationFactor)), "%s", replicationReason)
	}
	if c.TaskOffsetInterval < 0 {
		p.add(KeyTaskOffsetInterval, ms(c.TaskOffsetInterval), "must be >= 0 (0 follows the broker)")
	}
	if c.ProcessID != "" && !canonicalUUID(c.ProcessID) {
		p.add(KeyProcessID, c.ProcessID, "must be a UUID written as 8-4-4-4-12 hex digits, e.g. 6ba7b810-9dad-11d1-80b4-00c04fd430c8 "+
			"(leave the key out to get a generated one)")
	}
	if c.GroupInstanceID != "" {
		if reason := instanceIDReason(c.GroupInstanceID); reason != "" {
			p.add(KeyGroupInstanceID, c.GroupInstanceID, "%s", reason)
		}
	}
	if c.ClientRack != "" && strings.TrimSpace(c.ClientRack) == "" {
		p.add(KeyClientRack, c.ClientRack, "must not be blank")
	}
	if c.ApplicationServer != "" {
		if _, _, err := hostport.Check(c.ApplicationServer); err != nil {
			p.add(KeyApplicationServer, c.ApplicationServer, "%v", err)
		}
	}
	c.validateTags(p)
	if c.MaxPollInterval < time.Millisecond || c.MaxPollInterval > math.MaxInt32*time.Millisecond {
		p.add(KeyMaxPollInterval, ms(c.MaxPollInterval), "must be between 1 and %d ms (an INT in Kafka)", math.MaxInt32)
	}
	// retry.backoff.ms above retry.backoff.max.ms is allowed, as in Kafka: the backoff is then
	// constant at retry.backoff.max.ms (heartbeat.Backoff caps every wait at the maximum).
	if c.RetryBackoff < 0 {
		p.add(KeyRetryBackoff, ms(c.RetryBackoff), "must be >= 0")
	}
	if c.RetryBackoffMax < 0 {
		p.add(KeyRetryBackoffMax, ms(c.RetryBackoffMax), "must be >= 0")
	}
	if c.RequestTimeout <= 0 || c.RequestTimeout > math.MaxInt32*time.Millisecond {
		p.add(KeyRequestTimeout, ms(c.RequestTimeout), "must be > 0 and at most %d ms (an INT in Kafka; 0 would fail every request)", math.MaxInt32)
	}
	if strings.IndexByte(c.StateDir, 0) >= 0 {
		p.add(KeyStateDir, c.StateDir, "holds a NUL byte, which no file system allows in a path")
	}
	c.validateRuntime(p)
	c.Security.validate(p)
}

// validateTags applies Kafka Streams' limits on client tags (StreamsConfig.validateRackAwarenessConfiguration):
// at most 5, keys and values not blank, keys at most 20 and values at most 30 characters (UTF-16
// units, as Java counts).
func (c *Config) validateTags(p *problems) {
	keys := slices.Sorted(maps.Keys(c.ClientTags))
	if len(keys) > maxClientTags {
		p.add(keyClientTags, strings.Join(keys, ","), "%d client tags; Kafka Streams allows at most %d", len(keys), maxClientTags)
	}
	for _, k := range keys {
		v := c.ClientTags[k]
		key := PrefixClientTag + k
		switch {
		case strings.TrimSpace(k) == "":
			p.add(key, v, "client tag key is empty (Kafka Streams refuses it)")
		case javaLength(k) > maxClientTagKeyLength:
			p.add(key, v, "client tag key is %d characters long; Kafka Streams allows at most %d", javaLength(k), maxClientTagKeyLength)
		case strings.TrimSpace(v) == "":
			p.add(key, v, "client tag value is empty (Kafka Streams refuses it)")
		case javaLength(v) > maxClientTagValLength:
			p.add(key, v, "client tag value is %d characters long; Kafka Streams allows at most %d", javaLength(v), maxClientTagValLength)
		}
	}
}

// instanceIDReason applies Kafka's validateGroupInstanceId (Topic.validate): not empty, not "." or
// "..", at most 249 characters of [a-zA-Z0-9._-]; it returns why id breaks it, or "".
func instanceIDReason(id string) string {
	switch {
	case id == "":
		return "is empty: leave the key out for a dynamic member, or give each static member its own ID"
	case id == "." || id == "..":
		return "'.' and '..' are not allowed (Kafka's rule for group instance IDs)"
	case javaLength(id) > MaxInstanceIDLength:
		return fmt.Sprintf("is %d characters long; Kafka allows at most %d", javaLength(id), MaxInstanceIDLength)
	}
	if bad := text.FirstIllegal(id, topicChar); bad != "" {
		return bad + " is not one of [a-zA-Z0-9._-] (Kafka's rule for group instance IDs)"
	}
	return ""
}

// canonicalUUID reports whether s is a UUID in its 36-character form, as Java's UUID.toString writes
// it (uuid.Parse also takes braces, a urn: prefix and 32 bare hex digits, which would be sent as
// written).
func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Endpoint returns the host and port of ApplicationServer; ok is false when it is not set.
func (c *Config) Endpoint() (host string, port uint16, ok bool) {
	if c.ApplicationServer == "" {
		return "", 0, false
	}
	host, port, err := hostport.Check(c.ApplicationServer)
	if err != nil {
		return "", 0, false
	}
	return host, port, true
}

// Clone returns a deep copy.
func (c Config) Clone() Config {
	c.BootstrapServers = slices.Clone(c.BootstrapServers)
	c.ClientTags = maps.Clone(c.ClientTags)
	c.User = maps.Clone(c.User)
	return c
}

// processIDFile is where a process ID is kept below state.dir/<application.id>.
const processIDFile = "streamsgroup-process-id"

// ResolveProcessID returns the process ID to use: ProcessID when set; else the UUID kept in
// <state.dir>/<application.id>/streamsgroup-process-id, created on first use; else a new random UUID.
// A state.dir it cannot use is an *Error naming state.dir, which unwraps to the file system's error.
func (c *Config) ResolveProcessID() (string, error) {
	if c.ProcessID != "" {
		return c.ProcessID, nil
	}
	if c.StateDir == "" {
		return uuid.NewString(), nil
	}
	dir := filepath.Join(c.StateDir, c.ApplicationID)
	path := filepath.Join(dir, processIDFile)
	fail := func(err error, format string, args ...any) error {
		return &Error{Keys: []KeyError{{Key: KeyStateDir, Value: c.StateDir, Reason: fmt.Sprintf(format, args...), Err: err}}}
	}
	if b, err := os.ReadFile(path); err == nil {
		id := strings.TrimSpace(string(b))
		if !canonicalUUID(id) {
			return "", fail(nil, "%s holds %s, not a process ID: remove the file to get a new process ID", text.QuotePath(path), text.Quote(id))
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fail(err, "cannot read the process ID from %s: %s (state.dir must be a directory this process can write)",
			text.QuotePath(path), fsReason(err))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fail(err, "cannot create the directory %s for the process ID: %s (state.dir must be a directory this process can write)",
			text.QuotePath(dir), fsReason(err))
	}
	id := uuid.NewString()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", fail(err, "cannot write the process ID to %s: %s (state.dir must be a directory this process can write)", text.QuotePath(tmp), fsReason(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fail(err, "cannot write the process ID to %s: %s", text.QuotePath(path), fsReason(err))
	}
	return id, nil
}

// fsReason is the reason of a file system error without its path (which the message quotes itself).
func fsReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
