// Package stableoffsets reads a group's committed offsets as they stand once every transaction that
// holds offsets of the group has ended.
//
// An exactly-once member commits its input offsets inside its transaction. The transaction
// coordinator writes the commit's markers after EndTxn has answered, so for a few milliseconds after
// a member stopped cleanly an ordinary OffsetFetch still answers the previous commit. A reader that
// decides from that answer (a --to-current reset, a saved position, a test's expected outputs) is
// then one commit behind. With require_stable (KIP-447) the broker answers UNSTABLE_OFFSET_COMMIT for
// such partitions instead; Fetch asks again until it answers the settled offsets.
package stableoffsets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Backoff is the first wait before asking again; each further wait doubles, up to MaxBackoff.
const (
	Backoff    = 10 * time.Millisecond
	MaxBackoff = 500 * time.Millisecond
)

// PendingError is Fetch's answer when ctx ended while a transaction still held offsets of the group:
// a member's transaction is still open (a member that crashed holds it until its
// transaction.timeout.ms, when the broker aborts it).
type PendingError struct {
	Group string
	// Partitions are the partitions whose offsets were still pending, as "topic-partition", sorted.
	Partitions []string
	// Err is why the wait ended (ctx's error).
	Err error
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("the committed offsets of group %q on %s are held by a transaction that has not ended (a member's transaction is still open; the broker aborts it after its transaction.timeout.ms): %v",
		e.Group, strings.Join(e.Partitions, ", "), e.Err)
}

// Unwrap gives kerr.UnstableOffsetCommit and the context's error.
func (e *PendingError) Unwrap() []error { return []error{kerr.UnstableOffsetCommit, e.Err} }

// Fetch returns group's committed offsets once no transaction holds any of them pending, asking
// again with backoff while the broker answers UNSTABLE_OFFSET_COMMIT, until ctx ends (a
// *PendingError then). Other errors are returned as they come, as kadm's FetchOffsets returns them.
func Fetch(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, error) {
	wait := Backoff
	for {
		resp, err := adm.FetchOffsets(kadm.RequireStable(ctx), group)
		var pending []string
		switch {
		case errors.Is(err, kerr.UnstableOffsetCommit):
			pending = []string{"(the whole group)"}
		case err != nil:
			return resp, err
		}
		resp.Each(func(o kadm.OffsetResponse) {
			if errors.Is(o.Err, kerr.UnstableOffsetCommit) {
				pending = append(pending, fmt.Sprintf("%s-%d", o.Topic, o.Partition))
			}
		})
		if len(pending) == 0 {
			return resp, nil
		}
		slices.Sort(pending)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &PendingError{Group: group, Partitions: pending, Err: ctx.Err()}
		case <-t.C:
		}
		wait = min(2*wait, MaxBackoff)
	}
}
