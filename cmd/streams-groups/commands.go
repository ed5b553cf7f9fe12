package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/tasks"
)

func (c *command) list(ctx context.Context) int {
	groups, err := c.adm.List(ctx, c.o.states...)
	if err != nil {
		return c.fail(err)
	}
	if c.o.output.value == "json" {
		out := []map[string]string{}
		for _, g := range groups {
			out = append(out, map[string]string{"group": g.ID, "state": g.State})
		}
		return printJSON(c.out, out)
	}
	if !c.o.state.set {
		for _, g := range groups {
			fmt.Fprintln(c.out, g.ID)
		}
		return exitOK
	}
	rows := [][]string{{"GROUP", "STATE"}}
	for _, g := range groups {
		rows = append(rows, []string{g.ID, g.State})
	}
	printTable(c.out, rows)
	return exitOK
}

func (c *command) describe(ctx context.Context) int {
	groups, rc := c.targetGroups(ctx)
	if rc >= 0 {
		return rc
	}
	if !c.o.allGroups {
		return c.describeOne(ctx, groups[0])
	}
	// --all-groups: each group's view in turn; with --output json, one array of the groups' documents.
	code := exitOK
	if c.o.output.value != "json" {
		for i, g := range groups {
			if i > 0 {
				fmt.Fprintln(c.out)
			}
			code = worst(code, c.describeOne(ctx, g))
		}
		return code
	}
	docs := []json.RawMessage{}
	out := c.out
	for _, g := range groups {
		var buf bytes.Buffer
		c.out = &buf
		rc := c.describeOne(ctx, g)
		code = worst(code, rc)
		if rc == exitOK && json.Valid(buf.Bytes()) {
			docs = append(docs, json.RawMessage(bytes.TrimSpace(buf.Bytes())))
		}
	}
	c.out = out
	return worst(code, printJSON(c.out, docs))
}

// describeOne prints the --describe view asked for of one group.
func (c *command) describeOne(ctx context.Context, group string) int {
	if c.o.topology {
		return c.topology(ctx, group)
	}
	g, err := c.adm.Describe(ctx, group)
	if err != nil {
		return c.fail(err)
	}
	switch {
	case c.o.state.set:
		return c.describeState(g)
	case c.o.members:
		return c.describeMembers(g)
	default:
		return c.describeOffsets(ctx, g)
	}
}

func (c *command) describeState(g *admin.Group) int {
	coord := fmt.Sprintf("%s:%d (%d)", g.CoordinatorHost, g.CoordinatorPort, g.Coordinator)
	assignor := g.AssignorName
	if assignor == "" {
		assignor = "-"
	}
	if c.o.output.value == "json" {
		return printJSON(c.out, map[string]any{"group": g.ID, "coordinator": coord, "assignor": assignor, "state": g.State,
			"groupEpoch": g.Epoch, "targetAssignmentEpoch": g.AssignmentEpoch, "members": len(g.Members)})
	}
	rows := [][]string{{"GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "#MEMBERS"}}
	row := []string{g.ID, coord, assignor, g.State, strconv.Itoa(len(g.Members))}
	if c.o.verbose {
		rows[0] = []string{"GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"}
		row = []string{g.ID, coord, assignor, g.State, strconv.Itoa(int(g.Epoch)), strconv.Itoa(int(g.AssignmentEpoch)), strconv.Itoa(len(g.Members))}
	}
	printTable(c.out, append(rows, row))
	return exitOK
}

// assignmentString renders an assignment the way kafka-streams-groups.sh does:
// "ACTIVE: 0:[0,2]; STANDBY: 1:[3]; " (roles without tasks left out), with a prefix for the target.
func assignmentString(a tasks.Assignment, prefix string) string {
	var b strings.Builder
	for _, role := range []struct {
		name string
		set  tasks.Set
	}{{"ACTIVE", a.Active}, {"STANDBY", a.Standby}, {"WARMUP", a.Warmup}} {
		if role.set.IsEmpty() {
			continue
		}
		fmt.Fprintf(&b, "%s%s: ", prefix, role.name)
		bySub := map[string][]string{}
		var subs []string
		for id := range role.set.All() {
			if _, ok := bySub[id.Subtopology]; !ok {
				subs = append(subs, id.Subtopology)
			}
			bySub[id.Subtopology] = append(bySub[id.Subtopology], strconv.Itoa(int(id.Partition)))
		}
		for i, s := range subs {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:[%s]", s, strings.Join(bySub[s], ","))
		}
		b.WriteString("; ")
	}
	return b.String()
}

func (c *command) describeMembers(g *admin.Group) int {
	if c.o.output.value == "json" {
		type member struct {
			MemberID         string              `json:"memberId"`
			MemberEpoch      int32               `json:"memberEpoch"`
			TopologyEpoch    int32               `json:"topologyEpoch"`
			Protocol         string              `json:"memberProtocol"`
			ProcessID        string              `json:"processId"`
			ClientID         string              `json:"clientId"`
			ClientHost       string              `json:"clientHost"`
			InstanceID       string              `json:"instanceId,omitempty"`
			RackID           string              `json:"rackId,omitempty"`
			Endpoint         string              `json:"endpoint,omitempty"`
			ClientTags       map[string]string   `json:"clientTags,omitempty"`
			Assignment       map[string][]string `json:"assignment"`
			TargetAssignment map[string][]string `json:"targetAssignment"`
			// The task offsets the member last reported (KIP-1071; Kafka 4.4's table does not show them).
			TaskOffsets    map[string]int64 `json:"taskOffsets"`
			TaskEndOffsets map[string]int64 `json:"taskEndOffsets"`
		}
		out := []member{}
		for _, m := range g.Members {
			out = append(out, member{m.MemberID, m.MemberEpoch, m.TopologyEpoch, protocol(m), m.ProcessID, m.ClientID, m.ClientHost,
				m.InstanceID, m.RackID, m.Endpoint, m.ClientTags, roles(m.Assignment), roles(m.TargetAssignment),
				offsetsByTask(m.TaskOffsets), offsetsByTask(m.TaskEndOffsets)})
		}
		return printJSON(c.out, map[string]any{"group": g.ID, "groupEpoch": g.Epoch, "targetAssignmentEpoch": g.AssignmentEpoch, "members": out})
	}
	rows := [][]string{{"GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"}}
	if c.o.verbose {
		rows[0] = []string{"GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL", "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"}
	}
	for _, m := range g.Members {
		if c.o.verbose {
			rows = append(rows, []string{g.ID, strconv.Itoa(int(g.AssignmentEpoch)), strconv.Itoa(int(m.TopologyEpoch)), m.MemberID,
				protocol(m), strconv.Itoa(int(m.MemberEpoch)), m.ProcessID, m.ClientID,
				assignmentString(m.Assignment, "") + assignmentString(m.TargetAssignment, "TARGET-")})
			continue
		}
		rows = append(rows, []string{g.ID, m.MemberID, m.ProcessID, m.ClientID, assignmentString(m.Assignment, "")})
	}
	if len(g.Members) == 0 {
		fmt.Fprintf(c.out, "Streams group '%s' has no active members.\n", g.ID)
		return exitOK
	}
	printTable(c.out, rows)
	return exitOK
}

// offsetsByTask keys task offsets by task ID ("0_1"), the form the assignments use.
func offsetsByTask(o tasks.Offsets) map[string]int64 {
	out := make(map[string]int64, len(o))
	for id, v := range o {
		out[id.String()] = v
	}
	return out
}

func protocol(m admin.Member) string {
	if m.IsClassic {
		return "classic"
	}
	return "streams"
}

func roles(a tasks.Assignment) map[string][]string {
	out := map[string][]string{}
	for name, s := range map[string]tasks.Set{"active": a.Active, "standby": a.Standby, "warmup": a.Warmup} {
		ids := []string{}
		for id := range s.All() {
			ids = append(ids, id.String())
		}
		out[name] = ids
	}
	return out
}

func (c *command) describeOffsets(ctx context.Context, g *admin.Group) int {
	offs, err := c.adm.Offsets(ctx, g)
	if err != nil {
		return c.fail(err)
	}
	if c.o.output.value == "json" {
		out := []map[string]any{}
		for _, o := range offs {
			out = append(out, map[string]any{"topic": o.Topic, "partition": o.Partition, "currentOffset": o.Committed,
				"leaderEpoch": o.LeaderEpoch, "logEndOffset": o.End, "lag": o.Lag})
		}
		return printJSON(c.out, map[string]any{"group": g.ID, "offsets": out})
	}
	if len(offs) == 0 {
		fmt.Fprintf(c.out, "Streams group '%s' has no committed offsets and no topology to read input topics from.\n", g.ID)
		return exitOK
	}
	rows := [][]string{{"GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"}}
	if c.o.verbose {
		rows[0] = []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET", "OFFSET-LAG"}
	}
	for _, o := range offs {
		if c.o.verbose {
			rows = append(rows, []string{g.ID, o.Topic, strconv.Itoa(int(o.Partition)), dash(o.Committed), dash(int64(o.LeaderEpoch)),
				strconv.FormatInt(o.End, 10), strconv.FormatInt(o.Lag, 10)})
			continue
		}
		rows = append(rows, []string{g.ID, o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.Lag, 10)})
	}
	printTable(c.out, rows)
	return exitOK
}

func dash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func (c *command) delete(ctx context.Context) int {
	groups, rc := c.targetGroups(ctx)
	if rc >= 0 {
		return rc
	}
	if len(groups) == 0 {
		fmt.Fprintln(c.out, "There are no streams groups to delete.")
		return exitOK
	}
	// The internal topics that stay behind, by group: listed before the group (and its topology)
	// goes, so that the output can say what the application's next start will do with them.
	kept := map[string][]string{}
	for _, g := range groups {
		if r, err := c.adm.DeleteInternalTopics(ctx, g, true); err == nil && len(r.Deleted) > 0 {
			kept[g] = r.Deleted
		}
	}
	results, err := c.adm.Delete(ctx, groups...)
	if err != nil {
		return c.fail(err)
	}
	code := exitOK
	names := make([]string, 0, len(results))
	for g := range results {
		names = append(names, g)
	}
	sort.Strings(names)
	if c.o.output.value == "json" {
		out := map[string]string{}
		for _, g := range names {
			if results[g] != nil {
				out[g] = results[g].Error()
			} else {
				out[g] = "deleted"
			}
		}
		printJSON(c.out, out)
	}
	defer func() {
		for _, g := range names {
			if results[g] == nil && len(kept[g]) > 0 {
				warnOrphaned(c.errw, g, kept[g])
			}
		}
	}()
	for _, g := range names {
		if err := results[g]; err != nil {
			if rc := c.fail(err); code == exitOK {
				code = rc
			}
			continue
		}
		if c.o.output.value != "json" {
			fmt.Fprintf(c.out, "Deletion of requested streams group ('%s') was successful.\n", g)
		}
	}
	return code
}

// warnOrphaned says what deleting group without its internal topics leaves behind, and what the
// application's next start will do with it.
func warnOrphaned(w io.Writer, group string, topics []string) {
	list := make([]string, len(topics))
	for i, t := range topics {
		list[i] = printable(t)
	}
	fmt.Fprintf(w, "Warning: the internal topics of streams group '%s' were kept: %s. Its committed input offsets went with "+
		"the group, so the application's next start would restore its state from those changelogs and process its input "+
		"again from auto.offset.reset onto it, doubling every count and total (the stream runtime refuses to start so, with "+
		"an OrphanedStateError). Before starting it: if you saved the input positions, put them back (streams-groups "+
		"--reset-offsets --group %s --from-file positions.csv --execute); otherwise delete those topics to start over "+
		"(kafka-topics.sh --delete --topic <name>, for each). See docs/upgrades.md.\n",
		printable(group), strings.Join(list, ", "), printable(group))
}

func (c *command) topology(ctx context.Context, group string) int {
	g, err := c.adm.Describe(ctx, group)
	if err != nil {
		return c.fail(err)
	}
	if g.Topology == nil {
		fmt.Fprintf(c.out, "Streams group '%s' has no topology.\n", g.ID)
		return exitOK
	}
	if c.o.output.value == "json" {
		return printJSON(c.out, g.Topology)
	}
	fmt.Fprintf(c.out, "GROUP %s  TOPOLOGY-EPOCH %d  TOPOLOGY-ID %s\n\n", g.ID, g.Topology.Epoch, g.Topology.ID)
	rows := [][]string{{"SUBTOPOLOGY", "SOURCE-TOPICS", "REPARTITION-SOURCES", "REPARTITION-SINKS", "CHANGELOGS"}}
	for _, s := range g.Topology.Subtopologies {
		var rep, cl []string
		for _, t := range s.RepartitionSourceTopics {
			rep = append(rep, fmt.Sprintf("%s(%d)", t.Name, t.Partitions))
		}
		for _, t := range s.StateChangelogTopics {
			cl = append(cl, fmt.Sprintf("%s(%d)", t.Name, t.Partitions))
		}
		rows = append(rows, []string{s.ID, list(s.SourceTopics), list(rep), list(s.RepartitionSinkTopics), list(cl)})
	}
	printTable(c.out, rows)
	return exitOK
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func (c *command) nextEpoch(ctx context.Context) int {
	g, err := c.adm.Describe(ctx, c.o.groups[0])
	if err != nil && !isNotFound(err) {
		return c.fail(err)
	}
	next := admin.NextEpoch(g, -1)
	if c.o.output.value == "json" {
		return printJSON(c.out, map[string]any{"group": c.o.groups[0], "nextTopologyEpoch": next})
	}
	fmt.Fprintln(c.out, next)
	return exitOK
}

func isNotFound(err error) bool {
	ge, ok := err.(*admin.GroupError)
	return ok && ge.Type == "" && ge.Kind == admin.ErrGroupNotFound
}

// printTable aligns columns, each as wide as its widest cell plus one space, like Kafka's tool.
func printTable(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, cell := range r {
			if i == len(r)-1 {
				b.WriteString(cell)
				break
			}
			fmt.Fprintf(&b, "%-*s ", widths[i], cell)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

func printJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(w, "Error:", err)
		return exitFailed
	}
	return exitOK
}
