package stream

import (
	"errors"

	sm "github.com/streamsgroup/streamsgroup/internal/streammachine"
)

// The runtime's one error classification is the machine's (streammachine.Classify); these names
// keep the shell's uses short.
type errClass = sm.Class

const (
	classRetriable     = sm.ClassRetriable
	classAbort         = sm.ClassAbort
	classRenewProducer = sm.ClassRenewProducer
	classLost          = sm.ClassLost
	classFatal         = sm.ClassFatal
)

// classify is the class of err (not nil): a *TxnError, decided already, is fatal.
func classify(err error) errClass {
	if errors.As(err, new(*TxnError)) {
		return classFatal
	}
	return sm.Classify(err)
}
