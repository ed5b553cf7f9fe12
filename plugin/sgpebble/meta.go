package sgpebble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/streamsgroup/streamsgroup/store"
	"github.com/streamsgroup/streamsgroup/tasks"
)

// The database has two key spaces: metadata under 0x00 and the store's data under 0x01. Keeping
// both in one database is what lets Apply write the data and the changelog position in one atomic
// pebble.Batch (R5); keeping them apart by a prefix is what lets Iterate hide the metadata by
// bounds alone.
const (
	metaPrefix = 0x00
	dataPrefix = 0x01
	// dataEnd is the exclusive upper bound of the data key space.
	dataEnd = 0x02
)

var (
	identityKey = []byte{metaPrefix, 'i', 'd'}
	positionKey = []byte{metaPrefix, 'p', 'o', 's'}
)

// formatVersion is the layout of this package's keys and metadata records. An Open of a store
// written with another version fails as foreign rather than misreading it.
const formatVersion = 1

// identityMagic starts the identity record, so that a metadata value of something else is not
// mistaken for one.
const identityMagic = "sgpebble"

// maxField bounds every string of the identity record: names of applications, subtopologies and
// stores are short, and a length above this says the record is damaged, not a long name.
const maxField = 1 << 16

// errDecode says a metadata record does not decode; it is wrapped with store.ErrCorrupt.
var errDecode = errors.New("sgpebble: metadata record does not decode")

// identity is what the identity record says the database holds.
type identity struct {
	version       uint8
	applicationID string
	task          tasks.ID
	store         string
}

func identityOf(loc store.Location) identity {
	return identity{version: formatVersion, applicationID: loc.ApplicationID, task: loc.Task, store: loc.Store}
}

func (id identity) String() string {
	return fmt.Sprintf("application %q, task %s, store %q (format %d)", id.applicationID, id.task, id.store, id.version)
}

// encodeIdentity lays out: magic, format version (1 byte), then application ID, subtopology and
// store as uvarint length + bytes, with the task's partition as a zig-zag varint between the
// subtopology and the store.
func encodeIdentity(id identity) []byte {
	b := make([]byte, 0, len(identityMagic)+1+3*binary.MaxVarintLen64+len(id.applicationID)+len(id.task.Subtopology)+len(id.store)+binary.MaxVarintLen32)
	b = append(b, identityMagic...)
	b = append(b, id.version)
	b = appendString(b, id.applicationID)
	b = appendString(b, id.task.Subtopology)
	b = binary.AppendVarint(b, int64(id.task.Partition))
	b = appendString(b, id.store)
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeIdentity parses an identity record. It never panics: every length is checked against
// what is left, and trailing bytes are an error.
func decodeIdentity(b []byte) (identity, error) {
	var id identity
	if len(b) < len(identityMagic)+1 || string(b[:len(identityMagic)]) != identityMagic {
		return id, fmt.Errorf("%w: identity record does not start with %q", errDecode, identityMagic)
	}
	b = b[len(identityMagic):]
	id.version = b[0]
	b = b[1:]
	var err error
	if id.applicationID, b, err = readString(b, "application ID"); err != nil {
		return identity{}, err
	}
	if id.task.Subtopology, b, err = readString(b, "subtopology"); err != nil {
		return identity{}, err
	}
	p, n := binary.Varint(b)
	if n <= 0 || p < math.MinInt32 || p > math.MaxInt32 {
		return identity{}, fmt.Errorf("%w: identity record's partition", errDecode)
	}
	id.task.Partition = int32(p)
	b = b[n:]
	if id.store, b, err = readString(b, "store"); err != nil {
		return identity{}, err
	}
	if len(b) != 0 {
		return identity{}, fmt.Errorf("%w: identity record has %d trailing bytes", errDecode, len(b))
	}
	return id, nil
}

func readString(b []byte, what string) (string, []byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > maxField || l > uint64(len(b)-n) {
		return "", nil, fmt.Errorf("%w: identity record's %s", errDecode, what)
	}
	b = b[n:]
	return string(b[:l]), b[l:], nil
}

// encodePosition lays out a changelog position: format version (1 byte), then the offset as 8
// bytes big-endian.
func encodePosition(pos int64) []byte {
	b := make([]byte, 9)
	b[0] = formatVersion
	binary.BigEndian.PutUint64(b[1:], uint64(pos))
	return b
}

// decodePosition parses a position record; it never panics.
func decodePosition(b []byte) (int64, error) {
	if len(b) != 9 {
		return 0, fmt.Errorf("%w: position record of %d bytes, want 9", errDecode, len(b))
	}
	if b[0] != formatVersion {
		return 0, fmt.Errorf("%w: position record of format %d, want %d", errDecode, b[0], formatVersion)
	}
	pos := int64(binary.BigEndian.Uint64(b[1:]))
	if pos < 0 {
		return 0, fmt.Errorf("%w: negative position %d", errDecode, pos)
	}
	return pos, nil
}

// dataKey returns key in the data key space, appended to dst.
func dataKey(dst, key []byte) []byte {
	dst = append(dst, dataPrefix)
	return append(dst, key...)
}
