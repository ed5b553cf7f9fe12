package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Every exactly-once failure names its transactional.id and says what to do for its cause.
func TestTxnErrorSaysWhatToDo(t *testing.T) {
	dial := errors.New("dial tcp 127.0.0.1:9092: connect: connection refused")
	for _, c := range []struct {
		cause error
		hint  string
	}{
		{fmt.Errorf("%w (%w)", errOutcomeUnknown, dial), "restart the application: it resumes from what the broker committed"},
		{fmt.Errorf("%w: %w", errAbortFailed, dial), "could not be reached to abort the transaction"},
		{fmt.Errorf("%w: %w", errAbortFailed, kerr.ProducerFenced), "another process uses the same transactional.id"},
		{kerr.ProducerFenced, "give each process its own state.dir"},
		{kerr.InvalidProducerEpoch, "give each process its own state.dir"},
		{kerr.TransactionalIDAuthorizationFailed, "ACL on TRANSACTIONAL_ID"},
		{kerr.ClusterAuthorizationFailed, "IDEMPOTENT_WRITE"},
		{kerr.CoordinatorNotAvailable, "transaction.state.log.replication.factor"},
	} {
		err := &TxnError{TransactionalID: "app-p-1", Err: c.cause}
		msg := err.Error()
		if !strings.HasPrefix(msg, "stream: exactly-once with transactional.id app-p-1: "+c.cause.Error()+"; ") || !strings.Contains(msg, c.hint) {
			t.Errorf("%v: %q; want the transactional.id, the cause and %q", c.cause, msg, c.hint)
		}
		if !errors.Is(err, c.cause) {
			t.Errorf("%v: errors.Is does not reach the cause", c.cause)
		}
	}
}
