package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streamsgroup/streamsgroup/admin"
	"github.com/streamsgroup/streamsgroup/internal/text"
)

// targetGroups returns the groups the command acts on: --group's, or with --all-groups every streams
// group of the cluster. On failure it has printed why and returns the exit code (else -1).
func (c *command) targetGroups(ctx context.Context) ([]string, int) {
	if !c.o.allGroups {
		return c.o.groups, -1
	}
	listed, err := c.adm.List(ctx)
	if err != nil {
		return nil, c.fail(err)
	}
	var out []string
	for _, g := range listed {
		out = append(out, g.ID)
	}
	return out, -1
}

// worst keeps the first failure's exit code.
func worst(code, rc int) int {
	if code == exitOK {
		return rc
	}
	return code
}

type resetResult struct {
	group  string
	plan   []admin.NewOffset
	err    error
	topics *admin.TopicsResult
}

func (c *command) resetOffsets(ctx context.Context) int {
	groups, rc := c.targetGroups(ctx)
	if rc >= 0 {
		return rc
	}
	dry := c.o.dryRunSet
	var results []resetResult
	for _, g := range groups {
		r := c.o.reset
		if c.o.byDuration.set {
			r.Timestamp = time.Now().Add(-c.o.duration)
		}
		if r.Kind == admin.FromPlan {
			r.Plan = c.o.plan.forGroup(g)
		}
		res := resetResult{group: g}
		if r.Kind == admin.FromPlan && r.Plan == nil {
			res.err = fmt.Errorf("group %q: %w (--from-file %s has no line for it)", g, admin.ErrNoPlan, text.Quote(c.o.fromFile.value))
		} else if dry {
			res.plan, res.err = c.adm.PlanReset(ctx, g, r)
		} else {
			res.plan, res.err = c.adm.ResetOffsets(ctx, g, r)
		}
		if res.err == nil && c.o.deleteAllInternal {
			res.topics, res.err = c.adm.DeleteInternalTopics(ctx, g, dry)
		}
		results = append(results, res)
	}
	code := exitOK
	switch {
	case c.o.output.value == "json":
		type offset struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			NewOffset int64  `json:"newOffset"`
			// Unset: no committed offset, and none set (--to-current of a partition never committed).
			Unset bool `json:"unset,omitempty"`
		}
		type group struct {
			Group          string         `json:"group"`
			NewOffsets     []offset       `json:"newOffsets"`
			InternalTopics map[string]any `json:"internalTopics,omitempty"`
			Error          string         `json:"error,omitempty"`
		}
		out := []group{}
		for _, r := range results {
			g := group{Group: r.group, NewOffsets: []offset{}}
			for _, p := range r.plan {
				g.NewOffsets = append(g.NewOffsets, offset{p.Topic, p.Partition, p.Offset, p.Unset})
			}
			if r.err != nil {
				g.Error = r.err.Error()
			}
			if r.topics != nil {
				g.InternalTopics = topicsJSON(r.topics, dry)
			}
			out = append(out, g)
		}
		code = printJSON(c.out, map[string]any{"dryRun": dry, "groups": out})
	case c.o.export:
		// The two forms --from-file reads: without the group column for one --group, as Kafka's tool
		// writes them (names quoted).
		withGroup := len(c.o.groups) != 1
		for _, r := range results {
			for _, p := range r.plan {
				if p.Unset {
					continue // no line: --from-file leaves the partition without an offset too
				}
				if withGroup {
					fmt.Fprintf(c.out, "%s,", csvQuote(r.group))
				}
				fmt.Fprintf(c.out, "%s,%d,%d\n", csvQuote(p.Topic), p.Partition, p.Offset)
			}
		}
	default:
		rows := [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}}
		for _, r := range results {
			for _, p := range r.plan {
				next := strconv.FormatInt(p.Offset, 10)
				if p.Unset {
					next = "-"
				}
				rows = append(rows, []string{r.group, p.Topic, strconv.Itoa(int(p.Partition)), next})
			}
		}
		if len(rows) > 1 {
			printTable(c.out, rows)
		}
		for _, r := range results {
			if r.err == nil && len(r.plan) == 0 {
				fmt.Fprintf(c.out, "Streams group '%s' has no partitions to reset.\n", r.group)
			}
			if r.topics != nil {
				c.printTopics(r.group, r.topics, dry)
			}
		}
	}
	for _, r := range results {
		if r.err == nil {
			warnUnset(c.errw, r.group, r.plan)
		}
		if r.err != nil {
			code = worst(code, c.fail(r.err))
			continue
		}
		if r.topics != nil {
			c.warnKept(r.group, r.topics)
			if err := r.topics.Err(); err != nil {
				code = worst(code, c.fail(fmt.Errorf("group %q: %w", r.group, err)))
			}
		}
	}
	if dry && !c.o.dryRun && code == exitOK {
		fmt.Fprintln(c.errw, "Dry run (the default): nothing was changed; add --execute to commit these offsets.")
	}
	return code
}

// csvQuote quotes a CSV field, doubling its quotes.
func csvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func topicsJSON(r *admin.TopicsResult, dry bool) map[string]any {
	key := "deleted"
	if dry {
		key = "toDelete"
	}
	failed := map[string]string{}
	for t, err := range r.Failed {
		failed[t] = err.Error()
	}
	out := map[string]any{key: nonNil(r.Deleted), "absent": nonNil(r.Absent), "kept": nonNil(r.NotInferred), "failed": failed}
	if r.Request != nil {
		out["error"] = r.Request.Error()
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// printTopics says which internal topics of group were (or, dry, would be) deleted.
func (c *command) printTopics(group string, r *admin.TopicsResult, dry bool) {
	switch {
	case len(r.Deleted) == 0 && r.Request == nil && len(r.Failed) == 0:
		fmt.Fprintf(c.out, "Streams group '%s' has no internal topics to delete.\n", group)
	case dry:
		fmt.Fprintf(c.out, "Internal topics of streams group '%s' that would be deleted: %s.\n", group, strings.Join(r.Deleted, ", "))
	case len(r.Deleted) > 0:
		fmt.Fprintf(c.out, "Deletion of the internal topics of streams group '%s' was successful: %s.\n", group, strings.Join(r.Deleted, ", "))
	}
	if len(r.Absent) > 0 {
		fmt.Fprintf(c.out, "Internal topics of streams group '%s' that do not exist: %s.\n", group, strings.Join(r.Absent, ", "))
	}
}

// warnKept names the topology topics that were not deleted because their names are not the group's.
func (c *command) warnKept(group string, r *admin.TopicsResult) {
	for _, t := range r.NotInferred {
		fmt.Fprintf(c.errw, "Warning: topic '%s' of the topology of streams group '%s' is not named as its internal topic "+
			"(%s-…-repartition or -changelog); it was not deleted.\n", printable(t), group, group)
	}
}

func (c *command) deleteOffsets(ctx context.Context) int {
	g := c.o.groups[0]
	var scope []admin.TopicPartitions
	if !c.o.allInputTopics {
		scope = c.o.scope
	}
	res, err := c.adm.DeleteOffsets(ctx, g, scope)
	if err != nil {
		return c.fail(err)
	}
	failed := 0
	for _, r := range res {
		if r.Err != nil {
			failed++
		}
	}
	if c.o.output.value == "json" {
		out := []map[string]any{}
		for _, r := range res {
			status := "deleted"
			if r.Err != nil {
				status = r.Err.Error()
			}
			out = append(out, map[string]any{"topic": r.Topic, "partition": r.Partition, "status": status})
		}
		printJSON(c.out, map[string]any{"group": g, "partitions": out})
	} else {
		if len(res) == 0 {
			fmt.Fprintf(c.out, "Streams group '%s' has no committed offsets on its source topics; nothing was deleted.\n", g)
			return exitOK
		}
		if failed == 0 {
			fmt.Fprintf(c.out, "Request succeeded for deleting offsets from group %s.\n\n", g)
		}
		rows := [][]string{{"TOPIC", "PARTITION", "STATUS"}}
		for _, r := range res {
			p, status := strconv.Itoa(int(r.Partition)), "Successful"
			if r.Partition < 0 {
				p = "-"
			}
			if r.Err != nil {
				status = "Error: " + r.Err.Error()
			}
			rows = append(rows, []string{r.Topic, p, status})
		}
		printTable(c.out, rows)
	}
	if failed > 0 {
		fmt.Fprintf(c.errw, "Error: %d of the %d partitions of group %q could not have their offsets deleted (see STATUS).\n", failed, len(res), g)
		return exitFailed
	}
	return exitOK
}

// deleteWithTopics is --delete with --delete-all-internal-topics or --dry-run.
func (c *command) deleteWithTopics(ctx context.Context) int {
	groups, rc := c.targetGroups(ctx)
	if rc >= 0 {
		return rc
	}
	if len(groups) == 0 {
		fmt.Fprintln(c.out, "There are no streams groups to delete.")
		return exitOK
	}
	dry := c.o.dryRun
	errs, topics, err := c.adm.DeleteWithInternalTopics(ctx, dry, groups...)
	if err != nil {
		return c.fail(err)
	}
	if !c.o.deleteAllInternal {
		topics = nil // --delete --dry-run: the groups only
	}
	names := make([]string, 0, len(errs))
	for g := range errs {
		names = append(names, g)
	}
	sort.Strings(names)
	code := exitOK
	if c.o.output.value == "json" {
		out := map[string]any{}
		for _, g := range names {
			e := map[string]any{"status": "deleted"}
			if dry {
				e["status"] = "would be deleted"
			}
			if errs[g] != nil {
				e["status"] = errs[g].Error()
			}
			if t := topics[g]; t != nil {
				e["internalTopics"] = topicsJSON(t, dry)
			}
			out[g] = e
		}
		printJSON(c.out, map[string]any{"dryRun": dry, "groups": out})
	}
	for _, g := range names {
		if err := errs[g]; err != nil {
			code = worst(code, c.fail(err))
			continue
		}
		if c.o.output.value != "json" {
			if dry {
				fmt.Fprintf(c.out, "Streams group '%s' would be deleted (dry run).\n", g)
			} else {
				fmt.Fprintf(c.out, "Deletion of requested streams group ('%s') was successful.\n", g)
			}
		}
		if t := topics[g]; t != nil {
			if c.o.output.value != "json" {
				c.printTopics(g, t, dry)
			}
			c.warnKept(g, t)
			if err := t.Err(); err != nil {
				code = worst(code, c.fail(fmt.Errorf("group %q was deleted, but its internal topics were not all: %w", g, err)))
			}
		}
	}
	if dry && code == exitOK {
		fmt.Fprintln(c.errw, "Dry run: nothing was deleted.")
	}
	return code
}

// warnUnset names the partitions --to-current leaves without a committed offset, and why.
func warnUnset(w io.Writer, group string, plan []admin.NewOffset) {
	var unset []string
	for _, p := range plan {
		if p.Unset {
			unset = append(unset, fmt.Sprintf("%s-%d", printable(p.Topic), p.Partition))
		}
	}
	if len(unset) == 0 {
		return
	}
	fmt.Fprintf(w, "Note: streams group '%s' has no committed offset on %s: --to-current leaves them without one (NEW-OFFSET -; "+
		"no line with --export), so the application starts them where its auto.offset.reset says, as it would have. "+
		"Kafka's tool sets them to their log end instead, which skips every record on them the application never processed.\n",
		printable(group), strings.Join(unset, ", "))
}
