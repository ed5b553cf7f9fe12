// Package chaos is the oracle of the chaos suite (make chaos, make soak): the log records that the
// member processes (cmd/chaosmember) and the driver (cmd/chaos) write as JSON lines, and the checker
// that reads them back and says whether the run kept the safety and liveness properties S1, S2 and
// S3 (see README.md beside this file). The checker knows nothing of the network and is tested on
// synthetic logs: it is what decides whether a run passed, so it must be right on its own.
package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kinds of member records (Record.Kind).
const (
	// KindStart: a member was created (MemberID is the ID it will use for its whole life).
	KindStart = "start"
	// KindOwned: the active tasks the application holds changed; Active is the whole new set. Written
	// at the start of OnTasksRevoked / OnAllTasksLost (the tasks are let go before anything else) and
	// just before OnTasksAssigned returns (the tasks are held from then on).
	KindOwned = "own"
	// KindEvent: an event from Manager.Events (Event, Err).
	KindEvent = "event"
	// KindHeartbeat: a heartbeat result. Answered says the broker answered (a response, with or
	// without an error code), as opposed to a transport failure.
	KindHeartbeat = "hb"
	// KindSample: the process's goroutine count and heap in use (once a second).
	KindSample = "sample"
	// KindClosed: Close returned for this member.
	KindClosed = "closed"
	// KindStore (exactly-once mode): the committed contents of the member's store when SIGTERM
	// arrived, before it stopped: Counts holds every key of its active tasks (Active) with its count.
	KindStore = "store"
)

// The exactly-once mode's names (APP=eos): the counting application's store and output topic.
const (
	EOSStore  = "counts"
	EOSOutput = "chaos-output"
	// EOSWindowStore and EOSWindowOutput are the windowed count's: a window store of each key's
	// records per tumbling window of EOSWindowMs (by the record's timestamp), kept EOSWindowRetention,
	// and the topic each window's new count goes to, keyed by WindowKey.
	EOSWindowStore     = "window-counts"
	EOSWindowOutput    = "chaos-windows"
	EOSWindowMs        = 10_000
	EOSWindowRetention = 2 * time.Hour
	// EOSRoundHeader is the output record header that carries the input record's value: the
	// driver's round number, 1, 2, … per key.
	EOSRoundHeader = "round"
)

// WindowKey names key's window of EOSWindowMs that starts at start (Unix ms): "<key>@<start>".
func WindowKey(key string, start int64) string { return key + "@" + strconv.FormatInt(start, 10) }

// WindowOf is the start of the window of EOSWindowMs that holds ms.
func WindowOf(ms int64) int64 { return ms - ((ms%EOSWindowMs)+EOSWindowMs)%EOSWindowMs }

// Record is one line of a member process's log. Every record names its process, the process's
// incarnation (a restarted process is a new incarnation, with new member IDs) and, except samples,
// the member (a process may hold several).
type Record struct {
	T          int64    `json:"t"` // wall clock, Unix microseconds
	Proc       string   `json:"p"`
	Inc        int      `json:"inc"`
	Member     string   `json:"m,omitempty"`
	Kind       string   `json:"k"`
	MemberID   string   `json:"mid,omitempty"`
	Epoch      int32    `json:"epoch,omitempty"`
	Active     []string `json:"active,omitempty"` // KindOwned: the whole set after the change
	Why        string   `json:"why,omitempty"`    // KindOwned: revoked, lost, assigned
	Event      string   `json:"ev,omitempty"`
	Err        string   `json:"err,omitempty"`
	Answered   bool     `json:"ans,omitempty"`
	Goroutines int      `json:"gor,omitempty"`
	HeapInuse  uint64   `json:"heap,omitempty"`
	PID        int      `json:"pid,omitempty"`
	// Counts: KindStore's key → count.
	Counts map[string]int64 `json:"counts,omitempty"`
}

// Kinds of driver records (DriverRecord.Kind).
const (
	// DKConfig: the run's configuration (first record).
	DKConfig = "config"
	// DKSpawn: a member process was started (Proc, Inc, PID, Members).
	DKSpawn = "spawn"
	// DKDied: a member process ended. Expected says the driver ended it (kill -9, SIGTERM); an exit
	// the driver did not cause is a violation of S3.
	DKDied = "died"
	// DKFault: one fault, written when it has ended (Fault).
	DKFault = "fault"
	// DKSnapshot: the broker's view of the group, written when it differs from the previous one.
	DKSnapshot = "snapshot"
	// DKConns: established TCP connections to the broker port(s) (soak).
	DKConns = "conns"
	// DKMarker: a transaction marker the driver wrote for a hanging transaction (Detail; see
	// package integration/hanging).
	DKMarker = "marker"
	// DKHang: a transaction the broker left hanging (open on a partition after its coordinator
	// decided it), found by the driver's detector (Detail); it fails S4.
	DKHang = "hang"
	// DKHangLooks: how many looks the detector took (Looks), written when it stops; a detector
	// that never looked fails S4.
	DKHangLooks = "hang-looks"
	// DKEnd: the schedule ended; processes still alive count as alive until here.
	DKEnd = "end"
)

// DriverRecord is one line of the driver's log.
type DriverRecord struct {
	T        int64     `json:"t"`
	Kind     string    `json:"k"`
	Proc     string    `json:"p,omitempty"`
	Inc      int       `json:"inc,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Members  []string  `json:"members,omitempty"` // DKSpawn: the member names of the process
	Code     int       `json:"code,omitempty"`
	Signal   string    `json:"sig,omitempty"`
	Expected bool      `json:"expected,omitempty"`
	Fault    *Fault    `json:"fault,omitempty"`
	Snap     *Snapshot `json:"snap,omitempty"`
	Conns    int       `json:"conns,omitempty"`
	Config   *Config   `json:"config,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Looks    int       `json:"looks,omitempty"` // DKHangLooks
}

// Fault is one fault of the schedule.
type Fault struct {
	N      int    `json:"n"`      // 1-based position in the schedule
	Type   string `json:"type"`   // see README.md
	Proc   string `json:"proc"`   // target process ("" for broker faults)
	Inc    int    `json:"inc"`    // the target's incarnation when the fault began
	Start  int64  `json:"start"`  // Unix micros
	End    int64  `json:"end"`    // the fault is over: network healed, process resumed or restarted, broker ready
	Detail string `json:"detail"` // parameters, for the humans
	// Expiring: the member was paused or cut off for longer than the session timeout, so the broker
	// may have given its tasks to others while it still held them (S1's exception).
	Expiring bool `json:"expiring,omitempty"`
	// Paused: the member's process was stopped (SIGSTOP) between Start and End: it could not act.
	Paused bool `json:"paused,omitempty"`
}

// Snapshot is the broker's view of the group (StreamsGroupDescribe), or State "unavailable" when
// the describe failed.
type Snapshot struct {
	State   string       `json:"state"`
	Epoch   int32        `json:"epoch"`
	Members []SnapMember `json:"members,omitempty"`
	Err     string       `json:"err,omitempty"`
}

// SnapMember is one member in a Snapshot: its current and target active tasks.
type SnapMember struct {
	ID     string   `json:"id"`
	Epoch  int32    `json:"epoch"`
	Active []string `json:"active,omitempty"`
	Target []string `json:"target,omitempty"`
}

// Equal says whether two snapshots describe the same state.
func (s *Snapshot) Equal(o *Snapshot) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.State == o.State && s.Epoch == o.Epoch && s.Err == o.Err &&
		slices.EqualFunc(s.Members, o.Members, func(a, b SnapMember) bool {
			return a.ID == b.ID && a.Epoch == b.Epoch && slices.Equal(a.Active, b.Active) && slices.Equal(a.Target, b.Target)
		})
}

// Config is what the checker needs to know of the run.
type Config struct {
	Seed        uint64 `json:"seed"`
	Faults      int    `json:"faults"`
	FaultTypes  string `json:"fault_types"`
	Partitions  int    `json:"partitions"`
	Brokers     int    `json:"brokers"`
	Group       string `json:"group"`
	SessionMs   int64  `json:"session_ms"`
	HeartbeatMs int64  `json:"heartbeat_ms"`
	// GraceMs: how long after the first answered heartbeat that ends an S1 exception the member may
	// take to let its tasks go (the answer is read, then OnAllTasksLost starts on the callback
	// goroutine).
	GraceMs int64 `json:"grace_ms"`
	// Bounds of S3, per process: goroutines ≤ GoroutinesBase + GoroutinesPerMember × members, heap
	// in use ≤ HeapBaseMiB + HeapPerMemberMiB × members.
	GoroutinesBase      int     `json:"goroutines_base"`
	GoroutinesPerMember int     `json:"goroutines_per_member"`
	HeapBaseMiB         float64 `json:"heap_base_mib"`
	HeapPerMemberMiB    float64 `json:"heap_per_member_mib"`
	// ConnsPerClient bounds the broker connections (soak): at most ConnsPerClient × clients ×
	// brokers + ConnsBase.
	ConnsPerClient int    `json:"conns_per_client"`
	ConnsBase      int    `json:"conns_base"`
	Command        string `json:"command"` // how to run this schedule again
	Soak           string `json:"soak,omitempty"`
	// App is "eos" for the stateful exactly-once mode (S4 applies), "" for plain members.
	App string `json:"app,omitempty"`
	// ExtraDeadlineMs is added to S2's deadline (session + 2 heartbeats): the exactly-once mode's
	// allowance for a process's start (see README.md).
	ExtraDeadlineMs int64 `json:"extra_deadline_ms,omitempty"`
	// Keys is the exactly-once mode's number of input keys.
	Keys int `json:"keys,omitempty"`
	// Voters is how many of the cluster's nodes are controllers (3 on the 3-node cluster: any one
	// node, the active controller included, may fail).
	Voters int `json:"voters,omitempty"`
	// RepairHangs (HANGS=abort, one node only) is a run about the single-node broker limitation:
	// the driver writes the ABORT marker of a transaction the broker left hanging and the markers
	// do not fail S4. Otherwise the driver only detects hangs, and each one fails S4.
	RepairHangs bool `json:"repair_hangs,omitempty"`
}

// EOSData is what the driver of an exactly-once run read from the brokers after the schedule
// (eos.json in the run directory): what was produced and what the application made of it.
type EOSData struct {
	// Acked counts, per key, the input records the driver's producer saw acknowledged.
	Acked map[string]int64 `json:"acked"`
	// Input counts, per key, the records of the input topic read back after the schedule: the
	// ground truth of what the application had to count.
	Input map[string]int64 `json:"input"`
	// InputRounds lists, per key, the rounds (record values) the input topic holds, in offset
	// order: a round whose write failed at the driver may be missing, and is then not expected in
	// the output. Empty in reports of older runs (every round 1..n is expected then).
	InputRounds map[string][]int64 `json:"input_rounds,omitempty"`
	// ProduceFailed counts the input records whose write the driver saw fail; each may or may not
	// be in the input topic, which is what the checker goes by.
	ProduceFailed int `json:"produce_failed,omitempty"`
	// Output is the output topic read with read_committed from its start to its end, per partition
	// in offset order.
	Output []OutputRecord `json:"output"`
	// InputWindows counts, per window (WindowKey), the input records the window holds by their
	// timestamps; WindowOutput is the windowed count's topic read like Output. Both empty in
	// reports of runs before the windowed count (S4 then checks no windows).
	InputWindows map[string]int64 `json:"input_windows,omitempty"`
	WindowOutput []OutputRecord   `json:"window_output,omitempty"`
	// Settled says every input record was processed and committed (the group's committed offsets
	// reached the input's end) before the members were stopped; SettleMs is how long that took
	// after the last fault.
	Settled  bool    `json:"settled"`
	SettleMs float64 `json:"settle_ms"`
	// Err is what went wrong reading the topics, if anything.
	Err string `json:"err,omitempty"`
}

// OutputRecord is one committed output record: the key and the count it carried.
type OutputRecord struct {
	Partition int32  `json:"p"`
	Offset    int64  `json:"o"`
	Key       string `json:"k"`
	Count     int64  `json:"n"`
	Round     int64  `json:"r,omitempty"` // the input record's round (EOSRoundHeader), 0 if absent
	Time      int64  `json:"t,omitempty"` // the record's timestamp, Unix ms
}

// DefaultConfig fills the checker's bounds and grace; the driver overrides the rest.
func DefaultConfig() Config {
	return Config{SessionMs: 6000, HeartbeatMs: 500, GraceMs: 1000,
		// Calibrated on the first runs: one member process peaked at 13 goroutines and 2.7 MiB
		// in use, the 20-member process at 164 goroutines and 4.7 MiB; the bounds leave about
		// twice that, so that a leak of a goroutine per rejoin or fault shows within a run.
		GoroutinesBase: 30, GoroutinesPerMember: 15, HeapBaseMiB: 32, HeapPerMemberMiB: 2,
		ConnsPerClient: 4, ConnsBase: 16}
}

// Task names a task of subtopology "0" as the logs do: "0_<partition>".
func Task(partition int) string { return "0_" + strconv.Itoa(partition) }

// ReadJSONL reads a file of JSON lines into values of T. A last line cut short (the process was
// killed while writing it) is ignored; any other bad line is an error.
func ReadJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeJSONL[T](f, path)
}

// DecodeJSONL is ReadJSONL over a reader; name is used in errors.
func DecodeJSONL[T any](r io.Reader, name string) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return nil, pendingErr
		}
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			pendingErr = fmt.Errorf("%s:%d: %w", name, line, err)
			continue
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// Tail reads a growing JSON-lines file incrementally: each Next returns the complete lines added
// since the last call (the driver follows the members' logs with it while they run).
type Tail[T any] struct {
	Path string
	off  int64
	part []byte
}

// Next returns the records appended since the last call.
func (t *Tail[T]) Next() ([]T, error) {
	f, err := os.Open(t.Path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	t.off += int64(len(b))
	b = append(t.part, b...)
	last := strings.LastIndexByte(string(b), '\n')
	if last < 0 {
		t.part = b
		return nil, nil
	}
	t.part = slices.Clone(b[last+1:])
	var out []T
	for l := range strings.SplitSeq(string(b[:last]), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			return out, fmt.Errorf("%s: %w", t.Path, err)
		}
		out = append(out, v)
	}
	return out, nil
}
