package stream

import (
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The shell's classification is the machine's, with its own error values: a *TxnError is decided
// already (fatal), a *ProduceError is classified by the write's error, and the runtime's questions
// (abortable) are answers of it.
func TestClassifyShellErrors(t *testing.T) {
	for _, c := range []struct {
		err       error
		want      errClass
		abortable bool
	}{
		{&TxnError{Err: io.EOF}, classFatal, false},
		{&ProduceError{Topic: "out", Err: kerr.MessageTooLarge}, classFatal, false},
		{&ProduceError{Topic: "out", Err: kerr.NotEnoughReplicas}, classRetriable, true},
		{kerr.ProducerFenced, classRenewProducer, true},
		{kerr.TransactionAbortable, classAbort, true},
		{errors.Join(errBoom, kerr.FencedMemberEpoch), classFatal, false},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
		a, _ := newTestApp(t, testConfig(), testProcs())
		if got := a.abortable(c.err); got != c.abortable {
			t.Errorf("abortable(%v) = %v", c.err, got)
		}
	}
}
