// Package projections derives everything a user reads from the log. Each
// projection is a pure function of the event sequence: the same log gives the
// same state and the same digest, whether built in one pass, incrementally in
// many small catch-ups, on another device from Arweave, or from a snapshot
// plus a replay.
//
// # Damage
//
// Projection files are derived and replaceable, so damage to them must
// never brick the log's commands. ErrDamaged (inside a *DamagedError that
// names the projection) reports a projection whose files cannot be read,
// whose library panicked (Guard turns panics and memory faults on mapped
// files into errors; the Projector runs every projection call under it),
// or whose content disagrees with the log. MarkDamaged flags a projection
// directory; package projstd resets flagged or unopenable projections and
// rebuilds them from the log, with a notice. CheckBolt is the cheap
// open-time check of a bbolt file (not truncated); CompactBolt rewrites one
// without its free pages, which is how tombstoned content leaves the disk.
package projections

import (
	"github.com/unlimitedcontext/ucl/log"
)

// Checkpoint is the last event a projection has durably applied.
type Checkpoint struct {
	Seq  uint64   `json:"seq"`
	Hash log.Hash `json:"hash"`
}

// Projection is one derived view of the log.
//
// Contract:
//   - Events arrive in seq order, each once, starting after Checkpoint().
//     Apply must also be idempotent for an event re-delivered after a crash
//     between Apply and Commit (re-storing a chunk id overwrites it).
//   - Apply sees every event type; it ignores the types it does not use.
//     A tombstone removes its targets (chunk ids, a session, a content-time
//     range [From, To)) among the chunks the projection holds at that point.
//   - Commit makes everything applied so far durable together with cp, so
//     that after a crash Checkpoint() is at most what was really applied.
//   - Digest is SHA-256 over the projection's logical content in a canonical
//     order (never over file bytes that depend on timing or layout).
//   - Reset drops all state and sets the checkpoint to zero.
type Projection interface {
	Name() string
	// Version is the projection's format version; a stored state of another
	// version is rebuilt.
	Version() int
	Checkpoint() (Checkpoint, error)
	Apply(ev *log.Event) error
	Commit(cp Checkpoint) error
	Digest() ([32]byte, error)
	Reset() error
	Close() error
}
