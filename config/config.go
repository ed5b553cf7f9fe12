package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Keys, named as in Kafka Streams where Kafka Streams has the setting.
const (
	KeyApplicationID      = "application.id"
	KeyBootstrapServers   = "bootstrap.servers"
	KeyTopologyEpoch      = "topology.epoch"
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
	// backoff with jitter after a failed heartbeat. Defaults 100 ms and 1 s.
	RetryBackoff    time.Duration
	RetryBackoffMax time.Duration
	// RequestTimeout (request.timeout.ms) bounds one request to the broker. Default 30 s.
	RequestTimeout time.Duration
	// StateDir (state.dir) is where the process ID is kept; empty means nothing is persisted.
	StateDir string
	// User holds the user.* keys, untouched.
	User map[string]string
}

// Default returns a Config with every default filled in and the given application ID.
func Default(applicationID string) Config {
	return Config{
		ApplicationID:   applicationID,
		MaxPollInterval: DefaultMaxPollInterval,
		RetryBackoff:    DefaultRetryBackoff,
		RetryBackoffMax: DefaultRetryBackoffMax,
		RequestTimeout:  DefaultRequestTimeout,
	}
}

// KeyError is one bad key and why.
type KeyError struct {
	Key    string
	Value  string
	Reason string
}

func (e KeyError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("%s=%q: %s", e.Key, e.Value, e.Reason)
}

// Error lists every bad key of a configuration. It is the only error Validate, FromMap and
// FromProperties return for bad values.
type Error struct {
	Keys []KeyError
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		msgs[i] = k.Error()
	}
	return "invalid configuration: " + strings.Join(msgs, "; ")
}

// Has reports whether key is among the bad keys.
func (e *Error) Has(key string) bool {
	return slices.ContainsFunc(e.Keys, func(k KeyError) bool { return k.Key == key })
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

// Validate checks every field and returns an *Error listing each bad one, or nil.
func (c *Config) Validate() error {
	var p problems
	c.validate(&p)
	return p.err()
}

func (c *Config) validate(p *problems) {
	if c.ApplicationID == "" {
		p.add(KeyApplicationID, "", "required")
	} else if reason := legalName(c.ApplicationID); reason != "" {
		p.add(KeyApplicationID, c.ApplicationID, "%s (it prefixes internal topic names)", reason)
	}
	for _, s := range c.BootstrapServers {
		if _, err := hostPort(s); err != nil {
			p.add(KeyBootstrapServers, s, "%v", err)
		}
	}
	if c.TopologyEpoch < 0 {
		p.add(KeyTopologyEpoch, strconv.Itoa(int(c.TopologyEpoch)), "must be >= 0")
	}
	if c.TaskOffsetInterval < 0 {
		p.add(KeyTaskOffsetInterval, c.TaskOffsetInterval.String(), "must be >= 0 (0 follows the broker)")
	}
	if c.ProcessID != "" {
		if _, err := uuid.Parse(c.ProcessID); err != nil {
			p.add(KeyProcessID, c.ProcessID, "must be a UUID")
		}
	}
	for key, val := range map[string]*string{KeyGroupInstanceID: &c.GroupInstanceID, KeyClientRack: &c.ClientRack} {
		if *val != "" && strings.TrimSpace(*val) == "" {
			p.add(key, *val, "must not be blank")
		}
	}
	if c.ApplicationServer != "" {
		if _, err := hostPort(c.ApplicationServer); err != nil {
			p.add(KeyApplicationServer, c.ApplicationServer, "%v", err)
		}
	}
	for k := range c.ClientTags {
		if k == "" {
			p.add(PrefixClientTag, "", "client tag key is empty")
		}
	}
	if c.MaxPollInterval < time.Millisecond || c.MaxPollInterval > math.MaxInt32*time.Millisecond {
		p.add(KeyMaxPollInterval, ms(c.MaxPollInterval), "must be between 1 and %d ms", math.MaxInt32)
	}
	if c.RetryBackoff < 0 {
		p.add(KeyRetryBackoff, ms(c.RetryBackoff), "must be >= 0")
	}
	if c.RetryBackoffMax < 0 {
		p.add(KeyRetryBackoffMax, ms(c.RetryBackoffMax), "must be >= 0")
	} else if c.RetryBackoffMax < c.RetryBackoff {
		p.add(KeyRetryBackoffMax, ms(c.RetryBackoffMax), "must be >= %s (%s)", KeyRetryBackoff, ms(c.RetryBackoff))
	}
	if c.RequestTimeout <= 0 {
		p.add(KeyRequestTimeout, ms(c.RequestTimeout), "must be > 0")
	}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// legalName returns why s cannot prefix Kafka topic names, or "".
func legalName(s string) string {
	if len(s) > 200 {
		return "longer than 200 characters"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("character %q is not one of [a-zA-Z0-9._-]", c)
		}
	}
	return ""
}

// hostPort checks a host:port address and returns its port.
func hostPort(s string) (uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return 0, errors.New("must be host:port")
	}
	if host == "" {
		return 0, errors.New("host is empty")
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, errors.New("port must be between 1 and 65535")
	}
	return uint16(n), nil
}

// Endpoint returns the host and port of ApplicationServer; ok is false when it is not set.
func (c *Config) Endpoint() (host string, port uint16, ok bool) {
	if c.ApplicationServer == "" {
		return "", 0, false
	}
	port, err := hostPort(c.ApplicationServer)
	if err != nil {
		return "", 0, false
	}
	host, _, _ = net.SplitHostPort(c.ApplicationServer)
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
func (c *Config) ResolveProcessID() (string, error) {
	if c.ProcessID != "" {
		return c.ProcessID, nil
	}
	if c.StateDir == "" {
		return uuid.NewString(), nil
	}
	dir := filepath.Join(c.StateDir, c.ApplicationID)
	path := filepath.Join(dir, processIDFile)
	if b, err := os.ReadFile(path); err == nil {
		id := strings.TrimSpace(string(b))
		if _, err := uuid.Parse(id); err != nil {
			return "", fmt.Errorf("%s holds %q, not a UUID: remove the file to get a new process ID", path, id)
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading the process ID: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s for the process ID: %w", dir, err)
	}
	id := uuid.NewString()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing the process ID: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("writing the process ID: %w", err)
	}
	return id, nil
}
