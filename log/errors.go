package log

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed is returned when an event, a body or an append request is
	// not well formed; the message names the field.
	ErrMalformed = errors.New("log: malformed event")
	// ErrUnknownType is returned when an event type is not one this build
	// knows.
	ErrUnknownType = errors.New("log: unknown event type")
	// ErrUnsupportedVersion is returned when a header or body carries a
	// format version this build cannot read.
	ErrUnsupportedVersion = errors.New("log: unsupported format version")
	// ErrChainBroken is returned when an event's prev is not the hash of the
	// event before it, or seqs are not dense.
	ErrChainBroken = errors.New("log: chain broken")
	// ErrChecksum is returned when an entry's CRC-32C does not match its bytes.
	ErrChecksum = errors.New("log: checksum mismatch")
	// ErrTorn is returned (wrapped in a CorruptionError) for a torn tail that
	// Open was told not to repair.
	ErrTorn = errors.New("log: torn write at tail")
	// ErrTooLarge is returned when a store or edit event's encoded body
	// is over MaxEventSize; nothing of the request is written.
	ErrTooLarge = errors.New("log: event too large")
	// ErrDocumentTooLarge is returned (with ErrTooLarge) when the text of
	// one item ucl splits into chunks (a document, a tool call's result)
	// is over MaxDocumentSize; nothing of the request is written.
	ErrDocumentTooLarge = errors.New("log: document too large")
	// ErrIDConflict is returned when an event id is re-appended with content
	// different from the original event's.
	ErrIDConflict = errors.New("log: event id already used with different content")
	// ErrLocked is returned when another process owns the store.
	ErrLocked = errors.New("log: store is in use by another process")
	// ErrNotReplicated is returned by appends when Options.Replicate
	// failed: the events are in the local WAL but were not acknowledged,
	// and the log takes no more appends until it is reopened.
	ErrNotReplicated = errors.New("log: events not replicated")
	// ErrClosed is returned by calls on a closed log.
	ErrClosed = errors.New("log: closed")
	// ErrNotFound is returned when a seq is outside the log.
	ErrNotFound = errors.New("log: no such event")
	// ErrNoKeys is returned when an operation needs the vault key and the log
	// was opened without it.
	ErrNoKeys = errors.New("log: vault key required")
	// ErrDamagedTail is returned (wrapped in a CorruptionError) when the end
	// of the last segment does not parse but valid entries follow the
	// damage: it is not a torn write, and cutting it would drop
	// acknowledged events. Repair does it only when asked.
	ErrDamagedTail = errors.New("log: damaged entry followed by valid entries")
	// ErrLost is returned (wrapped in a CorruptionError) when the log on
	// disk ends before, or differs at, an event it has acknowledged (its
	// head mark, or Options.MinHead): a truncated or replaced file. Open
	// refuses rather than continue on a shorter log.
	ErrLost = errors.New("log: acknowledged events are missing")
	// ErrNotWritten is returned by an append whose events were sealed
	// after a batch whose write then failed (a commit builds its batch
	// while the one before is written): nothing of it was written, and
	// appending it again is safe.
	ErrNotWritten = errors.New("log: append not written")
	// ErrFailed is returned after a write or fsync failed: the log's state on
	// disk is unknown, so it refuses further appends until reopened.
	ErrFailed = errors.New("log: an earlier write failed; reopen the store")
)

// CorruptionError locates damage in the log. Seq is the first event that
// cannot be trusted (0 if unknown), Segment the file name, Offset the byte
// offset of the entry in that file (-1 if unknown).
type CorruptionError struct {
	Seq     uint64
	Segment string
	Offset  int64
	Err     error
}

func (e *CorruptionError) Error() string {
	loc := ""
	if e.Segment != "" {
		loc = fmt.Sprintf(" (segment %s", e.Segment)
		if e.Offset >= 0 {
			loc += fmt.Sprintf(", offset %d", e.Offset)
		}
		loc += ")"
	}
	return fmt.Sprintf("log corrupt at seq %d%s: %v", e.Seq, loc, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }
