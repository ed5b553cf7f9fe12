// Command streams-groups lists, describes and deletes Kafka streams groups, and prints and compares
// topology IDs and epochs. Its options follow Kafka's kafka-streams-groups.sh where they apply.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/config"
	"github.com/streamsgroup/streamsgroup/heartbeat"
	"github.com/streamsgroup/streamsgroup/topology"

	"github.com/streamsgroup/streamsgroup/internal/text"
)

// Exit codes scripts can rely on.
const (
	exitOK          = 0
	exitFailed      = 1 // the cluster could not be reached or a request failed
	exitUsage       = 2 // bad options
	exitNotFound    = 3 // the group does not exist
	exitWrongType   = 4 // the group is a consumer, classic or share group
	exitNotEmpty    = 5 // delete, reset or delete of offsets or internal topics refused: the group has members
	exitInvalidFile = 6 // the topology file is invalid
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// version is what --version prints: the module version the binary was built from ("(devel)" for a
// build from a work tree) and the Go version.
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("streams-groups %s (%s; the options of Kafka 4.4's kafka-streams-groups.sh)", v, runtime.Version())
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usageText())
		return exitOK
	}
	if errors.Is(err, errVersion) {
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	if err != nil {
		return usageFail(stderr, err)
	}
	if o.topologyID.set {
		return topologyIDCommand(o, stdout, stderr)
	}
	c, ctx, done, code := connect(o, stdout, stderr)
	if c == nil {
		return code
	}
	defer done()
	switch {
	case o.list:
		return c.list(ctx)
	case o.describe:
		return c.describe(ctx)
	case o.del && (o.deleteAllInternal || o.dryRun):
		return c.deleteWithTopics(ctx)
	case o.del:
		return c.delete(ctx)
	case o.resetOffsets:
		return c.resetOffsets(ctx)
	case o.deleteOffsets:
		return c.deleteOffsets(ctx)
	case o.topology:
		return c.topology(ctx, o.groups[0])
	default:
		return c.nextEpoch(ctx)
	}
}

// usageFail prints a bad command line and returns exitUsage.
func usageFail(w io.Writer, err error) int {
	fmt.Fprintf(w, "Error: %v\n(run with -h for the options)\n", err)
	return exitUsage
}

// clientOptions builds the franz-go client from --bootstrap-server and --command-config.
func clientOptions(o *options) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(o.servers...), kgo.ClientID("streams-groups")}
	if !o.commandConfig.set {
		return opts, nil
	}
	file := text.Quote(o.commandConfig.value)
	f, err := os.Open(o.commandConfig.value)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("--command-config %s: %v", file, err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", file, err)
	}
	// The security keys (security.protocol, sasl.*, ssl.*) are read by the config package, as a
	// member reads them, so both accept the same files and give the same messages.
	sec, err := config.SecurityFromMap(props)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", file, err)
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := strings.TrimSpace(props[k])
		switch {
		case config.IsSecurityKey(k):
		case k == "client.id":
			opts = append(opts, kgo.ClientID(v))
		case k == "request.timeout.ms":
			ms, err := strconv.ParseInt(v, 10, 32)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("--command-config %s: request.timeout.ms=%s must be a whole number of milliseconds from 1 to %d",
					file, text.Quote(v), math.MaxInt32)
			}
			opts = append(opts, kgo.RequestTimeoutOverhead(time.Duration(ms)*time.Millisecond))
		default:
			return nil, fmt.Errorf("--command-config %s: %s is not supported by streams-groups (supported: client.id, "+
				"request.timeout.ms, security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*, "+
				"ssl.key.password, ssl.endpoint.identification.algorithm)", file, text.Quote(k))
		}
	}
	secOpts, err := sec.Options()
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", file, err)
	}
	opts = append(opts, secOpts...)
	return opts, nil
}

// connect builds the client and a context bounded by --timeout. On failure it prints why and returns
// a nil command and the exit code; done releases both.
func connect(o *options, stdout, stderr io.Writer) (*command, context.Context, func(), int) {
	opts, err := clientOptions(o)
	if err != nil {
		return nil, nil, nil, usageFail(stderr, err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, nil, usageFail(stderr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.timeout.ms)*time.Millisecond)
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
	if ae := heartbeat.AuthErrorOf(err); ae != nil {
		// A refused login or certificate: say so first, whatever else the error carries.
		fmt.Fprintf(c.errw, "Error: cannot connect to the cluster at %s: %v\n", c.o.bootstrap.value, ae)
		return exitFailed
	}
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
			c.o.bootstrap.value, c.o.timeout.ms, err)
		return exitFailed
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		fmt.Fprintf(c.errw, "Error: cannot reach the cluster at %s: is it running and reachable? (%v)\n", c.o.bootstrap.value, err)
		return exitFailed
	}
	fmt.Fprintf(c.errw, "Error: %v\n", err)
	return exitFailed
}

func topologyIDCommand(o *options, stdout, stderr io.Writer) int {
	var r io.Reader = os.Stdin
	if o.topologyID.value != "-" {
		f, err := os.Open(o.topologyID.value)
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
		if o.output.value == "json" {
			return printJSON(stdout, map[string]any{"topologyId": topo.ID().Hex(), "short": topo.ID().String()})
		}
		fmt.Fprintln(stdout, topo.ID())
		return exitOK
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
	cmp := admin.CompareTopology(g, topo, o.topologyEpoch.n)
	// How the topologies differ, when they do: what the group runs against the file.
	var diff []string
	if cmp.Verdict != topology.Same && g != nil && g.Topology != nil {
		diff = topology.Diff(g.Topology, topo)
	}
	if o.output.value == "json" {
		return printJSON(stdout, map[string]any{
			"verdict": cmp.Verdict.String(), "localTopologyId": cmp.LocalID.Hex(), "localEpoch": cmp.LocalEpoch,
			"groupTopologyId": hexOrEmpty(cmp.GroupID), "groupEpoch": cmp.GroupEpoch, "action": cmp.Action,
			"differences": append([]string{}, diff...),
		})
	}
	rows := [][]string{{"GROUP", "GROUP-TOPOLOGY-ID", "GROUP-EPOCH", "LOCAL-TOPOLOGY-ID", "LOCAL-EPOCH", "VERDICT"},
		{o.groups[0], shortOrDash(cmp.GroupID), strconv.Itoa(int(cmp.GroupEpoch)), cmp.LocalID.String(), strconv.Itoa(int(cmp.LocalEpoch)), cmp.Verdict.String()}}
	printTable(stdout, rows)
	fmt.Fprintln(stdout, cmp.Action)
	if len(diff) > 0 {
		fmt.Fprintln(stdout, "\nDIFFERENCES (this file against the group's topology):")
		for i, line := range diff {
			if i == maxDiffLines {
				fmt.Fprintf(stdout, "  … and %d more (--output json lists them all)\n", len(diff)-maxDiffLines)
				break
			}
			fmt.Fprintln(stdout, "  "+printable(line))
		}
	}
	return exitOK
}

// maxDiffLines is how many differences the table output lists.
const maxDiffLines = 50

// printable escapes control bytes, so no input reaches the terminal raw.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
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
