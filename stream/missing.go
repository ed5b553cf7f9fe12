package stream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamsgroup/streamsgroup/internal/listoffsets"
)

// A changelog topic of the tasks an assignment brings may not exist: after `streams-groups
// --reset-offsets … --delete-all-internal-topics` the group keeps assigning tasks while the broker
// creates its internal topics again. The assignment cannot be taken before its changelogs can be
// listed, so the member's reconciliation is retried with backoff (membership does it); meanwhile
// the application says so once (a *MissingChangelogWarning, and the Metrics gauge
// MissingChangelogs), and if the topics have not come within max.poll.interval.ms it stops with a
// *MissingChangelogError instead of waiting for ever.

// MissingChangelogWarning says the tasks assigned to this member cannot start yet because changelog
// topics of theirs do not exist: normal for a moment while the broker creates a streams group's
// internal topics (the first start, or after they were deleted); the assignment is retried until
// they exist. Passed to WithWarningListener once per wait, and logged.
type MissingChangelogWarning struct {
	Group  string
	Topics []string
	Err    error
}

func (w *MissingChangelogWarning) Error() string {
	return fmt.Sprintf("stream: group %s: the changelog topics %s of the assigned tasks do not exist (yet): the tasks start "+
		"once the broker has created them (the assignment is retried meanwhile, for up to max.poll.interval.ms): %v",
		w.Group, strings.Join(w.Topics, ", "), w.Err)
}

// Unwrap returns the listing's error.
func (w *MissingChangelogWarning) Unwrap() error { return w.Err }

// MissingChangelogError stops the application when changelog topics of its assigned tasks have not
// existed for max.poll.interval.ms: the broker did not create them.
type MissingChangelogError struct {
	Group  string
	Topics []string
	// Waited is how long the assignment waited for them.
	Waited time.Duration
	Err    error
}

func (e *MissingChangelogError) Error() string {
	return fmt.Sprintf("stream: group %s: the changelog topics %s of the assigned tasks still do not exist after %v "+
		"(max.poll.interval.ms): the broker creates a streams group's missing internal topics as its members heartbeat; "+
		"check that it can (the group's status: streams-groups --describe --group %s --state; the brokers' logs; the "+
		"CREATE permission on those topics; enough brokers for their replication factor): %v",
		e.Group, strings.Join(e.Topics, ", "), e.Waited.Round(time.Millisecond), e.Group, e.Err)
}

// Unwrap returns the last listing's error.
func (e *MissingChangelogError) Unwrap() error { return e.Err }

// missingTopics returns the topics err (a failed listing of changelog offsets) says do not exist;
// none for any other error.
func missingTopics(err error) []string {
	var topics []string
	for e := err; e != nil; {
		var pe *listoffsets.PartitionError
		if !errors.As(e, &pe) {
			break
		}
		if errors.Is(pe.Err, kerr.UnknownTopicOrPartition) || errors.Is(pe.Err, kerr.UnknownTopicID) {
			topics = append(topics, pe.Topic)
		}
		e = pe.Err
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}

// changelogWait is what the App knows of a wait for missing changelog topics (on the loop's
// goroutine, in the member's calls).
type changelogWait struct {
	since time.Time // zero: not waiting
}

// assignmentFailed takes a failed listing of the assignment's changelog offsets: for missing
// topics it starts or continues the wait (the warning, the gauge) and returns err for the member
// to retry the reconciliation, or, past max.poll.interval.ms, fails the application with a
// *MissingChangelogError; any other error is returned as it is.
func (a *App) assignmentFailed(err error) error {
	topics := missingTopics(err)
	if len(topics) == 0 {
		return err
	}
	now := a.now()
	if a.waiting.since.IsZero() {
		a.waiting.since = now
		w := &MissingChangelogWarning{Group: a.cfg.ApplicationID, Topics: topics, Err: err}
		a.log.Warn(w.Error())
		for _, fn := range a.o.onWarning {
			fn(w)
		}
	}
	a.metrics.missingChangelogs.Store(uint64(len(topics)))
	if waited := now.Sub(a.waiting.since); waited >= a.cfg.MaxPollInterval {
		fe := &MissingChangelogError{Group: a.cfg.ApplicationID, Topics: topics, Waited: waited, Err: err}
		a.fail(fe)
		return fe
	}
	return err
}

// assignmentListed ends a wait for missing changelog topics, if one was under way.
func (a *App) assignmentListed() {
	if a.waiting.since.IsZero() {
		return
	}
	a.log.Info("the changelog topics of the assigned tasks exist now; the tasks start", "waited", a.now().Sub(a.waiting.since).Round(time.Millisecond))
	a.waiting.since = time.Time{}
	a.metrics.missingChangelogs.Store(0)
}
