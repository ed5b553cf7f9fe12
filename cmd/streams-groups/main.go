// Command streams-groups lists, describes and deletes Kafka streams groups, and prints and compares
// topology IDs and epochs. Its options follow Kafka's kafka-streams-groups.sh where they apply.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/topology"
)

// Exit codes scripts can rely on.
const (
	exitOK          = 0
	exitFailed      = 1 // the cluster could not be reached or a request failed
	exitUsage       = 2 // bad options
	exitNotFound    = 3 // the group does not exist
	exitWrongType   = 4 // the group is a consumer, classic or share group
	exitNotEmpty    = 5 // delete refused: the group has members
	exitInvalidFile = 6 // the topology file is invalid
)

const usage = `streams-groups: list, describe and delete Kafka streams groups (KIP-1071).

  streams-groups --bootstrap-server HOST:PORT --list [--state [STATE,...]]
  streams-groups --bootstrap-server HOST:PORT --describe --group G [--members|--state|--offsets] [--verbose]
  streams-groups --bootstrap-server HOST:PORT --delete --group G [--group G2 ...]
  streams-groups --bootstrap-server HOST:PORT --topology --group G
  streams-groups --bootstrap-server HOST:PORT --next-epoch --group G
  streams-groups --topology-id FILE|- [--bootstrap-server HOST:PORT --group G [--topology-epoch N]]

Options:
`

type options struct {
	bootstrap     string
	list          bool
	describe      bool
	del           bool
	groups        multi
	state         optional
	members       bool
	offsets       bool
	verbose       bool
	commandConfig string
	timeout       int
	topology      bool
	topologyID    string
	topologyEpoch int
	nextEpoch     bool
	output        string
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

// optional is a flag that may stand alone (--state) or carry a value (--state Stable,Empty).
type optional struct {
	set   bool
	value string
}

func (o *optional) String() string { return o.value }
func (o *optional) Set(s string) error {
	o.set = true
	if s != "true" {
		o.value = s
	}
	return nil
}
func (o *optional) IsBoolFlag() bool { return true }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("streams-groups", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&o.bootstrap, "bootstrap-server", "", "the Kafka broker(s) to connect to, host:port[,host:port]")
	fs.BoolVar(&o.list, "list", false, "list all streams groups")
	fs.BoolVar(&o.describe, "describe", false, "describe a streams group")
	fs.BoolVar(&o.del, "delete", false, "delete empty streams groups")
	fs.Var(&o.groups, "group", "the streams group (repeatable for --delete)")
	fs.Var(&o.state, "state", "with --describe: the group's state; with --list: show states, optionally only these (comma separated)")
	fs.BoolVar(&o.members, "members", false, "with --describe: the members and their assignments")
	fs.BoolVar(&o.offsets, "offsets", false, "with --describe: committed offsets and lag of the input topics (the default)")
	fs.BoolVar(&o.verbose, "verbose", false, "with --describe: more columns")
	fs.StringVar(&o.commandConfig, "command-config", "", "properties file with client settings (client.id, request.timeout.ms, security.protocol=SSL)")
	fs.IntVar(&o.timeout, "timeout", 5000, "milliseconds to wait for the cluster")
	fs.BoolVar(&o.topology, "topology", false, "print the group's topology, topology epoch and topology ID")
	fs.StringVar(&o.topologyID, "topology-id", "", "compute the topology ID of a topology JSON file (- for stdin); with --group, compare with the group's")
	fs.IntVar(&o.topologyEpoch, "topology-epoch", 0, "with --topology-id and --group: the local topology.epoch to compare")
	fs.BoolVar(&o.nextEpoch, "next-epoch", false, "print the topology.epoch a rolling upgrade of the group should use")
	fs.StringVar(&o.output, "output", "table", "table or json")
	if err := fs.Parse(normalize(args)); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q", fs.Arg(0))
	}
	if o.output != "table" && o.output != "json" {
		return usageError(stderr, "--output must be table or json")
	}
	actions := 0
	for _, b := range []bool{o.list, o.describe, o.del, o.topology, o.nextEpoch} {
		if b {
			actions++
		}
	}
	if o.topologyID != "" && actions == 0 {
		return topologyIDCommand(&o, stdout, stderr)
	}
	if actions != 1 {
		return usageError(stderr, "give exactly one of --list, --describe, --delete, --topology, --next-epoch, --topology-id")
	}
	if o.bootstrap == "" {
		return usageError(stderr, "--bootstrap-server is required")
	}
	if (o.describe || o.del || o.topology || o.nextEpoch) && len(o.groups) == 0 {
		return usageError(stderr, "--group is required")
	}
	if !o.del && len(o.groups) > 1 {
		return usageError(stderr, "only --delete takes several --group options")
	}
	c, ctx, done, code := connect(&o, stdout, stderr)
	if c == nil {
		return code
	}
	defer done()
	switch {
	case o.list:
		return c.list(ctx)
	case o.describe:
		return c.describe(ctx)
	case o.del:
		return c.delete(ctx)
	case o.topology:
		return c.topology(ctx)
	default:
		return c.nextEpoch(ctx)
	}
}

// normalize lets "--state Stable" (a value after an optional flag) work like "--state=Stable".
func normalize(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--state" || a == "-state") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func usageError(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "Error: "+format+"\n(run with -h for the options)\n", args...)
	return exitUsage
}

// clientOptions builds the franz-go client from --bootstrap-server and --command-config.
func clientOptions(o *options) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(o.bootstrap, ",")...), kgo.ClientID("streams-groups")}
	if o.commandConfig == "" {
		return opts, nil
	}
	f, err := os.Open(o.commandConfig)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.commandConfig, err)
	}
	for k, v := range props {
		switch k {
		case "client.id":
			opts = append(opts, kgo.ClientID(v))
		case "request.timeout.ms":
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("%s: request.timeout.ms=%q is not a positive number", o.commandConfig, v)
			}
			opts = append(opts, kgo.RequestTimeoutOverhead(time.Duration(ms)*time.Millisecond))
		case "security.protocol":
			switch strings.ToUpper(v) {
			case "PLAINTEXT":
			case "SSL":
				opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
			default:
				return nil, fmt.Errorf("%s: security.protocol=%s is not supported by streams-groups (PLAINTEXT or SSL with the system's CAs)", o.commandConfig, v)
			}
		default:
			return nil, fmt.Errorf("%s: %s is not supported by streams-groups (supported: client.id, request.timeout.ms, security.protocol)", o.commandConfig, k)
		}
	}
	return opts, nil
}

// connect builds the client and a context bounded by --timeout. On failure it prints why and returns
// a nil command and the exit code; done releases both.
func connect(o *options, stdout, stderr io.Writer) (*command, context.Context, func(), int) {
	opts, err := clientOptions(o)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return nil, nil, nil, exitUsage
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return nil, nil, nil, exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.timeout)*time.Millisecond)
	done := func() { cancel(); cl.Close() }
	return &command{o: o, adm: admin.NewClient(cl), out: stdout, errw: stderr}, ctx, done, exitOK
}

type command struct {
	o    *options
	adm  *admin.Client
	out  io.Writer
	errw io.Writer
}

// fail prints err and returns the exit code for it.
func (c *command) fail(err error) int {
	var ge *admin.GroupError
	switch {
	case errors.As(err, &ge) && errors.Is(err, admin.ErrNotStreamsGroup):
		fmt.Fprintf(c.errw, "Error: %v.\n", err)
		return exitWrongType
	case errors.Is(err, admin.ErrGroupNotFound):
		fmt.Fprintf(c.errw, "Error: %v.\n", err)
		return exitNotFound
	case errors.Is(err, admin.ErrGroupNotEmpty):
		fmt.Fprintf(c.errw, "Error: %v.\n", err)
		return exitNotEmpty
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(c.errw, "Error: cannot reach the cluster at %s: no answer within %d ms; is it running and reachable? (%v)\n",
			c.o.bootstrap, c.o.timeout, err)
		return exitFailed
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		fmt.Fprintf(c.errw, "Error: cannot reach the cluster at %s: is it running and reachable? (%v)\n", c.o.bootstrap, err)
		return exitFailed
	}
	fmt.Fprintf(c.errw, "Error: %v\n", err)
	return exitFailed
}

func topologyIDCommand(o *options, stdout, stderr io.Writer) int {
	var r io.Reader = os.Stdin
	if o.topologyID != "-" {
		f, err := os.Open(o.topologyID)
		if err != nil {
			fmt.Fprintln(stderr, "Error:", err)
			return exitInvalidFile
		}
		defer f.Close()
		r = f
	}
	topo, err := topology.ReadJSON(r)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return exitInvalidFile
	}
	if len(o.groups) == 0 {
		if o.output == "json" {
			return printJSON(stdout, map[string]any{"topologyId": topo.ID().Hex(), "short": topo.ID().String()})
		}
		fmt.Fprintln(stdout, topo.ID())
		return exitOK
	}
	if o.bootstrap == "" {
		return usageError(stderr, "--bootstrap-server is required to compare with --group")
	}
	c, ctx, done, code := connect(o, stdout, stderr)
	if c == nil {
		return code
	}
	defer done()
	g, err := c.adm.Describe(ctx, o.groups[0])
	if err != nil && !errors.Is(err, admin.ErrGroupNotFound) {
		return c.fail(err)
	}
	cmp := admin.CompareTopology(g, topo, int32(o.topologyEpoch))
	if o.output == "json" {
		return printJSON(stdout, map[string]any{
			"verdict": cmp.Verdict.String(), "localTopologyId": cmp.LocalID.Hex(), "localEpoch": cmp.LocalEpoch,
			"groupTopologyId": hexOrEmpty(cmp.GroupID), "groupEpoch": cmp.GroupEpoch, "action": cmp.Action,
		})
	}
	rows := [][]string{{"GROUP", "GROUP-TOPOLOGY-ID", "GROUP-EPOCH", "LOCAL-TOPOLOGY-ID", "LOCAL-EPOCH", "VERDICT"},
		{o.groups[0], shortOrDash(cmp.GroupID), strconv.Itoa(int(cmp.GroupEpoch)), cmp.LocalID.String(), strconv.Itoa(int(cmp.LocalEpoch)), cmp.Verdict.String()}}
	printTable(stdout, rows)
	fmt.Fprintln(stdout, cmp.Action)
	return exitOK
}

func hexOrEmpty(id topology.ID) string {
	if id.IsZero() {
		return ""
	}
	return id.Hex()
}

func shortOrDash(id topology.ID) string {
	if id.IsZero() {
		return "-"
	}
	return id.String()
}
