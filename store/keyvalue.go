package store

import "github.com/streamsgroup/streamsgroup/tasks"

// ReadOnly is what a query may do with a store: read it.
type ReadOnly interface {
	// Get returns the value of key, or ok false when it is absent.
	Get(key []byte) (value []byte, ok bool, err error)
	// Range iterates over [lower, upper) in key order; nil bounds are open.
	Range(lower, upper []byte) (Iterator, error)
	// Prefix iterates over the keys that start with prefix, in key order.
	Prefix(prefix []byte) (Iterator, error)
	// ApproximateCount is about how many keys the store holds.
	ApproximateCount() (int64, error)
}

// KeyValue is a task's key-value store as a processor uses it: every Put and Delete is applied to
// the store and written to the task's changelog partition, in order.
type KeyValue interface {
	ReadOnly
	// Put sets key to value. A nil value is stored as an empty value (use Delete to remove a key).
	Put(key, value []byte) error
	// Delete removes key (a tombstone in the changelog).
	Delete(key []byte) error
}

// PrefixEnd returns the smallest key greater than every key that starts with prefix, the exclusive
// upper bound of a prefix scan; nil when there is none (a prefix of only 0xff bytes, or empty).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// TaskDir is the directory name of a task under state.dir/<application.id>, as Kafka Streams names
// it ("1_3").
func TaskDir(id tasks.ID) string { return id.String() }
