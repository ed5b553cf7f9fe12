package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/internal/hostport"
	"github.com/streamsgroup/streamsgroup/internal/text"
)

const usageHead = `streams-groups: list, describe, delete and reset Kafka streams groups (KIP-1071).

  streams-groups --bootstrap-server HOST:PORT --list [--state [STATE,...]]
  streams-groups --bootstrap-server HOST:PORT --describe (--group G | --all-groups) [--members|--state|--offsets|--topology] [--verbose]
  streams-groups --bootstrap-server HOST:PORT --delete (--group G [--group G2 ...] | --all-groups) [--delete-all-internal-topics] [--dry-run]
  streams-groups --bootstrap-server HOST:PORT --reset-offsets (--group G ... | --all-groups)
      (--input-topic T[:P,...] ... | --all-input-topics)
      (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N | --to-datetime T | --by-duration D | --from-file CSV)
      [--dry-run | --execute] [--export] [--delete-all-internal-topics]
  streams-groups --bootstrap-server HOST:PORT --delete-offsets --group G (--input-topic T[:P,...] ... | --all-input-topics)
  streams-groups --bootstrap-server HOST:PORT --topology --group G
  streams-groups --bootstrap-server HOST:PORT --next-epoch --group G
  streams-groups --topology-id FILE|- [--bootstrap-server HOST:PORT --group G [--topology-epoch N]]
  streams-groups --version

--reset-offsets, --delete-offsets and --delete-all-internal-topics need an empty group (stop every member
first). --reset-offsets only shows the new offsets unless --execute is given.

Exit codes: 0 done, 1 the cluster could not be reached or a request failed, 2 bad options,
3 no such group, 4 not a streams group, 5 refused because the group has members, 6 invalid topology file.

Options:
`

// streamsStates are the states of a streams group, spelled as the broker and Kafka's GroupState spell
// them; --list --state matches them case-insensitively, as Kafka's tool does.
var streamsStates = []string{"Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"}

// kafkaOnly are options of Kafka's kafka-streams-groups.sh that this tool does not have, and why.
var kafkaOnly = map[string]string{
	"delete-internal-topic": "Kafka's tool deletes any topic named with it; use --delete-all-internal-topics, " +
		"which deletes only the group's own repartition and changelog topics",
}

type options struct {
	bootstrap     once
	servers       []string // bootstrap, split and checked
	list          bool
	describe      bool
	del           bool
	groups        multi
	state         optional
	states        []string // --list --state values, in the broker's spelling
	members       bool
	offsets       bool
	verbose       bool
	commandConfig once
	timeout       millis
	topology      bool
	topologyID    once
	topologyEpoch epoch
	nextEpoch     bool
	output        once

	version           bool
	allGroups         bool
	resetOffsets      bool
	deleteOffsets     bool
	inputTopics       multi
	allInputTopics    bool
	toEarliest        bool
	toLatest          bool
	toCurrent         bool
	toOffset          int64Opt
	shiftBy           int64Opt
	toDatetime        once
	byDuration        once
	fromFile          once
	dryRun            bool
	execute           bool
	export            bool
	deleteAllInternal bool

	// Derived by parseArgs.
	scope     []admin.TopicPartitions // --input-topic, parsed; nil with --all-input-topics
	reset     admin.Reset             // the reset specification (Plan and by-duration's time are set per run)
	duration  time.Duration           // --by-duration
	plan      resetPlan               // --from-file
	dryRunSet bool                    // --dry-run given or implied for --reset-offsets (no --execute)
}

// usageError is a command line that cannot run; run prints it and exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// errHelp: -h or --help; run prints the usage to stdout and exits 0.
var errHelp = errors.New("help requested")

// errVersion: --version; run prints the version to stdout and exits 0.
var errVersion = errors.New("version requested")

// once is a string option that may be given once: joptsimple (Kafka's tool) refuses a second value of
// a single-valued option, and a silent "last one wins" hides typos in scripts.
type once struct {
	set   bool
	value string
}

func (o *once) String() string { return o.value }
func (o *once) Set(s string) error {
	if o.set {
		return errors.New("given more than once")
	}
	o.set, o.value = true, s
	return nil
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// optional is a flag that may stand alone (--state) or carry a value (--state Stable,Empty).
type optional struct {
	set      bool
	hasValue bool
	value    string
}

func (o *optional) String() string { return o.value }
func (o *optional) Set(s string) error {
	if o.set {
		return errors.New("given more than once")
	}
	o.set = true
	if s != "true" {
		o.hasValue, o.value = true, s
	}
	return nil
}
func (o *optional) IsBoolFlag() bool { return true }

// millis is --timeout: milliseconds, 1 to 2147483647.
type millis struct {
	once
	ms int64
}

func (m *millis) Set(s string) error {
	if err := m.once.Set(s); err != nil {
		return err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return fmt.Errorf("must be a whole number of milliseconds from 1 to %d", math.MaxInt32)
	}
	m.ms = n
	return nil
}

// epoch is --topology-epoch: a topology epoch is an int32 >= 0 on the wire.
type epoch struct {
	once
	n int32
}

func (e *epoch) Set(s string) error {
	if err := e.once.Set(s); err != nil {
		return err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("must be a whole number from 0 to %d (a topology epoch is an INT32 >= 0)", math.MaxInt32)
	}
	e.n = int32(n)
	return nil
}

// int64Opt is a whole-number option given once (--to-offset, --shift-by), from min up.
type int64Opt struct {
	once
	n   int64
	min int64
}

func (v *int64Opt) Set(s string) error {
	if err := v.once.Set(s); err != nil {
		return err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < v.min {
		if v.min == 0 {
			return fmt.Errorf("must be a whole number from 0 to %d", int64(math.MaxInt64))
		}
		return fmt.Errorf("must be a whole number from %d to %d", int64(math.MinInt64), int64(math.MaxInt64))
	}
	v.n = n
	return nil
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("streams-groups", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the errors, and the usage for -h
	fs.Var(&o.bootstrap, "bootstrap-server", "the Kafka broker(s) to connect to, host:port[,host:port]")
	fs.BoolVar(&o.list, "list", false, "list all streams groups")
	fs.BoolVar(&o.describe, "describe", false, "describe a streams group")
	fs.BoolVar(&o.del, "delete", false, "delete empty streams groups")
	fs.Var(&o.groups, "group", "the streams group (repeatable for --delete)")
	fs.Var(&o.state, "state", "with --describe: the group's state; with --list: show states, optionally only these (comma separated: "+
		strings.Join(streamsStates, ", ")+")")
	fs.BoolVar(&o.members, "members", false, "with --describe: the members and their assignments")
	fs.BoolVar(&o.offsets, "offsets", false, "with --describe: committed offsets and lag of the input topics (the default)")
	fs.BoolVar(&o.verbose, "verbose", false, "with --describe: more columns")
	fs.Var(&o.commandConfig, "command-config", "properties file with client settings: client.id, request.timeout.ms, and Kafka's security keys (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*)")
	fs.Var(&o.timeout, "timeout", "milliseconds to wait for the cluster (default 5000)")
	fs.BoolVar(&o.topology, "topology", false, "print the group's topology, topology epoch and topology ID (alone, or as a view of --describe)")
	fs.Var(&o.topologyID, "topology-id", "compute the topology ID of a topology JSON file (- for stdin); with --group, compare with the group's")
	fs.Var(&o.topologyEpoch, "topology-epoch", "with --topology-id and --group: the local topology.epoch to compare (default 0)")
	fs.BoolVar(&o.nextEpoch, "next-epoch", false, "print the topology.epoch a rolling upgrade of the group should use")
	fs.Var(&o.output, "output", "table or json (default table)")
	fs.BoolVar(&o.version, "version", false, "print the version of streams-groups and exit")
	fs.BoolVar(&o.allGroups, "all-groups", false, "with --describe, --delete or --reset-offsets: every streams group of the cluster")
	fs.BoolVar(&o.resetOffsets, "reset-offsets", false, "reset the committed offsets of empty groups on their input topics (a plan unless --execute)")
	fs.BoolVar(&o.deleteOffsets, "delete-offsets", false, "delete the committed offsets of an empty group on some or all of its input topics")
	fs.Var(&o.inputTopics, "input-topic", "with --reset-offsets or --delete-offsets: a topic, or topic:0,1,2 for some partitions (repeatable)")
	fs.BoolVar(&o.allInputTopics, "all-input-topics", false, "with --reset-offsets or --delete-offsets: every source topic of the group's topology")
	fs.BoolVar(&o.toEarliest, "to-earliest", false, "reset to the log start offset")
	fs.BoolVar(&o.toLatest, "to-latest", false, "reset to the log end offset")
	fs.BoolVar(&o.toCurrent, "to-current", false, "reset to the committed offset (none where none is committed; Kafka's tool takes the log end there)")
	o.shiftBy.min = math.MinInt64
	fs.Var(&o.toOffset, "to-offset", "reset to this offset (kept inside the log's start and end)")
	fs.Var(&o.shiftBy, "shift-by", "reset to the committed offset plus N (negative moves back; kept inside the log)")
	fs.Var(&o.toDatetime, "to-datetime", "reset to the first offset at or after YYYY-MM-DDThh:mm:ss[.sss][Z|+hh:mm] (UTC without a zone)")
	fs.Var(&o.byDuration, "by-duration", "reset to the first offset at or after now minus an ISO-8601 duration PnDTnHnMnS (e.g. PT1H30M)")
	fs.Var(&o.fromFile, "from-file", "reset to the offsets of a CSV file of topic,partition,offset (or group,topic,partition,offset) lines")
	fs.BoolVar(&o.dryRun, "dry-run", false, "with --reset-offsets (the default) or --delete: show what would be done, change nothing")
	fs.BoolVar(&o.execute, "execute", false, "with --reset-offsets: commit the new offsets")
	fs.BoolVar(&o.export, "export", false, "with --reset-offsets: print the new offsets as CSV, the format --from-file reads")
	fs.BoolVar(&o.deleteAllInternal, "delete-all-internal-topics", false, "with --delete or --reset-offsets: also delete the groups' repartition and changelog topics (<group>-…-repartition|-changelog of their topologies)")
	return fs
}

// usageText is the text -h prints.
func usageText() string {
	var b bytes.Buffer
	fs := newFlagSet(&options{})
	fs.SetOutput(&b)
	fs.PrintDefaults()
	// The flag package writes -name; Kafka's tool, and this one's documentation, --name.
	return usageHead + regexp.MustCompile(`(?m)^  -`).ReplaceAllString(b.String(), "  --")
}

// parseArgs reads and checks a command line, applying the rules of Kafka's StreamsGroupCommandOptions
// where the options are the same, and refusing options that the chosen action would ignore. Every
// error is a *usageError, or errHelp.
func parseArgs(args []string) (*options, error) {
	o := &options{}
	fs := newFlagSet(o)
	if err := fs.Parse(normalize(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, flagError(err)
	}
	if o.version {
		return nil, errVersion // as -h: whatever else the command line says
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %s (every value belongs to an option, e.g. --group G)", text.Quote(fs.Arg(0)))
	}
	// A value that is an option name: the value was forgotten ("--group --members").
	values := map[string][]string{"--bootstrap-server": {o.bootstrap.value}, "--command-config": {o.commandConfig.value},
		"--topology-id": {o.topologyID.value}, "--output": {o.output.value}, "--group": o.groups,
		"--input-topic": o.inputTopics, "--to-datetime": {o.toDatetime.value}, "--by-duration": {o.byDuration.value},
		"--from-file": {o.fromFile.value}}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		for _, v := range values[name] {
			if strings.HasPrefix(v, "-") && isOption(v) {
				return nil, usagef("%s needs a value, got the option %s", name, text.Quote(v))
			}
		}
	}
	if o.timeout.ms == 0 {
		o.timeout.ms = 5000
	}
	if !o.output.set {
		o.output.value = "table"
	}
	if o.output.value != "table" && o.output.value != "json" {
		return nil, usagef("--output must be table or json, not %s", text.Quote(o.output.value))
	}

	// Exactly one action. --topology with --describe is a view of it (Kafka's --describe --topology).
	standaloneTopology := o.topology && !o.describe
	var actions []string
	for _, a := range []struct {
		on   bool
		name string
	}{{o.list, "--list"}, {o.describe, "--describe"}, {o.del, "--delete"}, {o.resetOffsets, "--reset-offsets"},
		{o.deleteOffsets, "--delete-offsets"}, {standaloneTopology, "--topology"},
		{o.nextEpoch, "--next-epoch"}, {o.topologyID.set, "--topology-id"}} {
		if a.on {
			actions = append(actions, a.name)
		}
	}
	const allActions = "--list, --describe, --delete, --reset-offsets, --delete-offsets, --topology, --next-epoch, --topology-id"
	switch {
	case len(actions) == 0 && o.deleteAllInternal:
		return nil, usagef("--delete-all-internal-topics goes with --delete or --reset-offsets, as in Kafka's tool " +
			"(to keep the group's positions: --reset-offsets --all-input-topics --to-current --execute --delete-all-internal-topics)")
	case len(actions) == 0:
		return nil, usagef("give one of " + allActions)
	case len(actions) > 1:
		return nil, usagef("give exactly one of %s, not %s", allActions, strings.Join(actions, " and "))
	}
	action := actions[0]

	// Options that only some actions take.
	only := func(on bool, name string, allowed ...string) error {
		if on && !contains(allowed, action) {
			return usagef("%s can't be used with %s (only with %s)", name, action, strings.Join(allowed, " or "))
		}
		return nil
	}
	for _, err := range []error{
		only(o.members, "--members", "--describe"),
		only(o.offsets, "--offsets", "--describe"),
		only(o.verbose, "--verbose", "--describe"),
		only(o.state.set, "--state", "--describe", "--list"),
		only(len(o.groups) > 0, "--group", "--describe", "--delete", "--reset-offsets", "--delete-offsets", "--topology", "--next-epoch", "--topology-id"),
		only(o.topologyEpoch.set, "--topology-epoch", "--topology-id"),
		only(o.allGroups, "--all-groups", "--describe", "--delete", "--reset-offsets"),
		only(o.deleteAllInternal, "--delete-all-internal-topics", "--delete", "--reset-offsets"),
		only(o.dryRun, "--dry-run", "--reset-offsets", "--delete"),
		only(o.execute, "--execute", "--reset-offsets"),
		only(o.export, "--export", "--reset-offsets"),
	} {
		if err != nil {
			return nil, err
		}
	}
	if o.describe {
		var views []string
		for _, v := range []struct {
			on   bool
			name string
		}{{o.members, "--members"}, {o.offsets, "--offsets"}, {o.state.set, "--state"}, {o.topology, "--topology"}} {
			if v.on {
				views = append(views, v.name)
			}
		}
		if len(views) > 1 {
			return nil, usagef("--describe takes at most one of --members, --offsets, --state, --topology, not %s", strings.Join(views, " and "))
		}
		if o.state.hasValue {
			return nil, usagef("--describe does not take a value for --state (got %s); a state filter goes with --list", text.Quote(o.state.value))
		}
		if o.topology && o.verbose {
			return nil, usagef("--verbose can't be used with --describe --topology")
		}
	}
	if o.list && o.state.hasValue {
		states, err := parseStates(o.state.value)
		if err != nil {
			return nil, err
		}
		o.states = states
	}

	// Groups.
	for _, g := range o.groups {
		if g == "" {
			return nil, usagef("--group must not be empty")
		}
	}
	if o.allGroups && len(o.groups) > 0 {
		return nil, usagef("--group can't be used with --all-groups")
	}
	needsGroup := action == "--describe" || action == "--delete" || action == "--reset-offsets" || action == "--delete-offsets" ||
		action == "--topology" || action == "--next-epoch"
	if needsGroup && len(o.groups) == 0 && !o.allGroups {
		if action == "--delete-offsets" || action == "--topology" || action == "--next-epoch" {
			return nil, usagef("%s needs --group", action)
		}
		return nil, usagef("%s needs --group or --all-groups", action)
	}
	if len(o.groups) > 1 && action != "--delete" && action != "--reset-offsets" {
		return nil, usagef("only --delete and --reset-offsets take several --group options")
	}
	o.groups = dedupe(o.groups)
	if err := o.checkOffsetOptions(action); err != nil {
		return nil, err
	}
	if o.topologyEpoch.set && len(o.groups) == 0 {
		return nil, usagef("--topology-epoch needs --group: it is the local epoch to compare with the group's")
	}
	if action == "--topology-id" && o.topologyID.value == "" {
		return nil, usagef("--topology-id needs a file name, or - for stdin")
	}

	// The cluster.
	connects := action != "--topology-id" || len(o.groups) > 0
	if connects && !o.bootstrap.set {
		return nil, usagef("--bootstrap-server is required")
	}
	if o.bootstrap.set {
		servers, err := checkServers(o.bootstrap.value)
		if err != nil {
			return nil, err
		}
		o.servers = servers
	}
	return o, nil
}

// checkServers splits --bootstrap-server and checks each host:port as config does for bootstrap.servers.
func checkServers(s string) ([]string, error) {
	servers := hostport.Split(s)
	if len(servers) == 0 {
		return nil, usagef("--bootstrap-server needs host:port, got %s", text.Quote(s))
	}
	for _, srv := range servers {
		if _, _, err := hostport.Check(srv); err != nil {
			return nil, usagef("--bootstrap-server %s: %v", text.Quote(srv), err)
		}
	}
	return servers, nil
}

// parseStates reads a --list --state filter, as Kafka's tool does (GroupState.parse: case-insensitive,
// and only the states a streams group has). Empty entries are skipped.
func parseStates(s string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := indexFold(streamsStates, e)
		if i < 0 {
			return nil, usagef("invalid state %s in --state: the states of a streams group are %s", text.Quote(e), strings.Join(streamsStates, ", "))
		}
		out = append(out, streamsStates[i])
	}
	return out, nil
}

var (
	invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): (.*)$`)
	needsArg     = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError rewords the flag package's errors with --names and values quoted and cut as config.Quote
// does; options of Kafka's tool that this one lacks say so.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimPrefix(name, "-")
		if why, ok := kafkaOnly[name]; ok {
			return usagef("--%s (an option of Kafka's kafka-streams-groups.sh) is not supported: %s", name, why)
		}
		return usagef("unknown option %s", text.Quote("--"+name))
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		if v, err := strconv.Unquote(m[1]); err == nil {
			return usagef("--%s %s: %s", m[2], text.Quote(v), m[3])
		}
	}
	if m := needsArg.FindStringSubmatch(msg); m != nil {
		return usagef("--%s needs a value", m[1])
	}
	return usagef("%s", text.Quote(msg))
}

// normalize lets "--state Stable" (a value after an optional flag) work like "--state=Stable".
func normalize(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--state" || a == "-state") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// isOption reports whether s (starting with "-") names an option of this tool, or -h/--help.
func isOption(s string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(s, "-"), "=")
	return name == "h" || name == "help" || newFlagSet(&options{}).Lookup(name) != nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func indexFold(list []string, s string) int {
	for i, e := range list {
		if strings.EqualFold(e, s) {
			return i
		}
	}
	return -1
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
