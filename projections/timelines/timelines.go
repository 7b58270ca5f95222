// Package timelines is the projection that answers "what happened, in which
// session, in what order": sessions with their first/last content time,
// counts and title; the ordered turns, tool calls and documents of each
// session; chunk lookup by id; documents grouped by chunk_parent; and the
// list of tombstones applied (for the audit trail).
//
// # Storage
//
// One bbolt file, timelines.db, in the projection's directory. Buckets:
//
//	meta      "version" → uint32 LE (Version), "cp" → seq uint64 LE ‖ hash [32]
//	ids       projections.IDKey(chunk id) → seq u64 BE (Chunk.Seq of its live version; version 7)
//	chunks    seq u64 BE (Chunk.Seq) → binary Chunk record without the content (record.go; one
//	          encoding per chunk; its sum is Chunk.ContentSum, content included, so
//	          readers can tell a damaged record, and the content read back from the log)
//	order     uvarint(len(session)) ‖ session ‖ ordKey(time, seq) → indexValue(kind, role,
//	          chunk_parent, id)   (one flat bucket since version 4, see order.go)
//	time      ordKey(time, seq) → projections.IDKey(chunk id)         (every chunk)
//	parts     uvarint(len(parent)) ‖ parent ‖ index u64 BE ‖ seq u64 BE → projections.IDKey(chunk id)
//	sessions  "s"+session → title chunk id ‖ JSON SessionInfo (record.go; id != "")
//	tombs     seq u64 BE → JSON TombstoneRecord (Removed stored as 0)
//	removed   tombstone seq u64 BE ‖ chunk id → chunk seq u64 BE  (what each tombstone removed)
//	links     linkKey(kind, target, source) → ""   (see links.go: replies by parent,
//	          successors by superseded id; version 3)
//
// idKey (ids.go, version 5) stores a chunk id of 32 lowercase hex digits as
// 0 ‖ its 16 bytes, any other id as 1 ‖ id: half the bytes for the ids
// the log assigns, wherever the chunks, time, parts and order buckets
// hold a chunk id, and for both ids of a link key.
//
// An edited chunk keeps its place: its ordKey uses Chunk.OrderSeq.
//
// Chunk records are keyed by the seq of the event that put them in place
// (one event puts at most one chunk), behind a small ids index (version
// 7): a bulk build appends the records at the end of their bucket, and
// only the 8-byte ids entries take random inserts, which a bulk build
// defers to its end and writes in key order (idsbulk.go). Keyed by id (version
// 6), every commit of a bulk build inserted all over the records, so
// each commit mapped most of the file (176 MB at 1M events, 253 MB at
// 2M, of the build's peak RSS).
//
// Content is not stored (version 4): a chunk's content is the content of
// the event at Chunk.Seq (the store, or the edit that put this version in
// place), and reads that return chunks read it back through the
// projections.EventReader given to Open, in seq order (content.go). The
// session title is kept in the session record.
//
// ordKey(time, seq) = uint64(time) XOR 1<<63, big-endian ‖ seq big-endian, so
// byte order is content-time order (negative times included), then seq.
//
// # Invariants
//
//   - Apply keeps writes in memory; Commit writes them and the checkpoint in
//     ONE bbolt transaction, so on disk the data and the checkpoint always
//     agree (or the data is ahead, see below). Close without Commit drops
//     them.
//   - Read methods (Sessions, Session, Chunk, Digest, ...) first flush the
//     pending writes in a transaction that does not move the checkpoint, so
//     they always see everything applied. Data ahead of the checkpoint is
//     allowed by the Projection contract: re-applying the events after the
//     checkpoint converges to the same state (Apply is idempotent).
//   - Tombstones follow projections.TombstoneMatches and remove only chunks
//     stored at a lower seq. What a tombstone removed is kept as a set of
//     (tombstone seq, chunk id) marks, never as a counter: re-delivering a
//     tombstone whose removals are already durable adds nothing, so the
//     audit data (and the digest) is the same as in one pass.
//   - Removed content leaves the file: bbolt is copy-on-write, so a deleted
//     chunk's JSON stays in free pages. A Commit (or Close) after a flush
//     that deleted chunks rewrites the file with projections.CompactBolt;
//     Reset creates a new file instead of dropping buckets. Tombstoned text
//     is therefore in no projection file, and in no later snapshot.
//   - ChunkBare, AroundBare and content reads go through a bounded read
//     cache of decoded records, neighbour lists and content (cache.go),
//     valid for one state of the file: each flush or Commit drops what it
//     may have changed, Reset and reopening drop everything. Its entries
//     are shared, read-only.
//   - Open checks the file is not truncated (projections.CheckBolt) and that
//     every bucket exists; a failure is an error (projstd resets and
//     rebuilds). Reads recover from panics of a damaged file as errors.
//   - The digest is SHA-256 over digestTag, then every session (key,
//     record) in key order, every chunk (id, record) in id order, every
//     tombstone record in seq order, every removal mark, then the indexes
//     reads use (time, parts, links, order, by key), each item
//     length-prefixed, each section tagged and followed by its count; the
//     checkpoint is not part of it. Same events ⇒ same digest, and an index
//     entry lost or changed on disk changes it (`project verify` covers
//     what queries read). Version 2 added the indexes; version 4 made the
//     chunk record binary without the content, and the order index one
//     flat bucket; version 5 stores chunk ids as idKey; version 6 keeps 16
//     bytes of the chunk sum, not 32; version 7 keys the records by seq
//     behind the ids index, and its digest is version 6's (the chunk
//     section still hashes (idKey, record) in id order) (a store of an
//     older version is rebuilt: the projector resets it, and a snapshot of
//     it is refused and rebuilt).
package timelines

import (
	"bytes"
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Name is the projection's name.
const Name = "timelines"

// Version is the on-disk format version. Bump it when the stored form or
// the digest changes; a store of another version is rebuilt.
const Version = 7

// FileName is the bbolt file inside the projection's directory.
const FileName = "timelines.db"

// TitleMax is the longest title in runes (before the ellipsis).
const TitleMax = 80

// digestTag starts the digest. Version 7 changed the keys, not the
// logical content the digest covers, so its digest is version 6's.
const digestTag = "ucl/timelines/v6\x00"

var (
	// ErrNotFound is returned when a session or document does not exist.
	ErrNotFound = errors.New("timelines: not found")
	// ErrCorrupt is returned when a stored record cannot be decoded.
	ErrCorrupt = errors.New("timelines: corrupt record")
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("timelines: closed")
	// ErrNoEvents is returned when a read needs chunk content and the
	// timelines were opened without an event reader to take it from.
	ErrNoEvents = errors.New("timelines: no event reader for chunk content")
)

var (
	bMeta     = []byte("meta")
	bChunks   = []byte("chunks")
	bIDs      = []byte("ids")
	bOrder    = []byte("order")
	bTime     = []byte("time")
	bParts    = []byte("parts")
	bSessions = []byte("sessions")
	bTombs    = []byte("tombs")
	bRemoved  = []byte("removed")
	bLinks    = []byte("links")
	allBkts   = [][]byte{bMeta, bIDs, bChunks, bOrder, bTime, bParts, bSessions, bTombs, bRemoved, bLinks}
	kVersion  = []byte("version")
	kCP       = []byte("cp")
)

// Chunk is a stored chunk as the timelines hold it.
type Chunk struct {
	ID          string            `json:"id"`
	Seq         uint64            `json:"seq"`
	EventID     string            `json:"event_id"`
	AppendTime  int64             `json:"append_ms"`
	Time        int64             `json:"time_ms"` // content time, unix ms
	Kind        log.Kind          `json:"kind"`
	Session     string            `json:"session,omitempty"`
	Role        string            `json:"role,omitempty"`
	Content     string            `json:"content"`
	Meta        map[string]string `json:"meta,omitempty"`
	Parent      string            `json:"parent,omitempty"`
	ChunkParent string            `json:"chunk_parent,omitempty"`
	ChunkIndex  int               `json:"chunk_index,omitempty"`
	Tool        *log.ToolCall     `json:"tool,omitempty"`
	Supersedes  []string          `json:"supersedes,omitempty"`
	// EditedBy is set on a chunk put in place by an edit (then Seq,
	// EventID and AppendTime are the edit's).
	EditedBy string `json:"edited_by,omitempty"`
	Edited   bool   `json:"edited,omitempty"`
	// Order is the seq the chunk sorts by among chunks of the same content
	// time when it is not Seq: an edit keeps the place of the version it
	// replaces.
	Order uint64 `json:"order,omitempty"`
	// Sum is ContentSum as computed when the chunk was applied: a reader
	// recomputes it to tell an intact record from a damaged one.
	Sum string `json:"sum"`
}

// sumSize is how many bytes of SHA-256 a chunk's sum keeps (version 6;
// 32 before). The sum tells a damaged or hand-edited record from an
// intact one, not a forger who recomputes it (see query/verify.go), so
// 128 bits are plenty; 16 bytes less a chunk was a twentieth of the file.
const sumSize = 16

// ContentSum is the hex of the first sumSize bytes of SHA-256 over every
// field of c but Sum, in a fixed length-prefixed encoding (meta by sorted
// key).
func (c *Chunk) ContentSum() string {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, "ucl/timelines/chunk/v1\x00"...)
	b = binary.BigEndian.AppendUint64(b, c.Seq)
	str(c.EventID)
	str(c.ID)
	b = binary.BigEndian.AppendUint64(b, uint64(c.AppendTime))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time))
	b = append(b, byte(c.Kind))
	str(c.Session)
	str(c.Role)
	str(c.Content)
	keys := make([]string, 0, len(c.Meta))
	for k := range c.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		str(c.Meta[k])
	}
	str(c.Parent)
	str(c.ChunkParent)
	b = binary.BigEndian.AppendUint64(b, uint64(int64(c.ChunkIndex)))
	b = c.appendConvSum(b)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:sumSize])
}

// SessionInfo summarises one session (live chunks only).
type SessionInfo struct {
	ID        string         `json:"id"`
	First     int64          `json:"first_ms"` // earliest content time
	Last      int64          `json:"last_ms"`  // latest content time
	Chunks    int            `json:"chunks"`
	Kinds     map[string]int `json:"kinds"`           // kind name → chunks
	Roles     map[string]int `json:"roles,omitempty"` // role → chunks (chunks with a role)
	Documents int            `json:"documents"`       // distinct documents (by chunk_parent)
	// Title is the first sentence of the first user turn (content-time
	// order), else of the first chunk, at most TitleMax runes.
	Title string `json:"title"`
}

// TombstoneRecord is one applied tombstone, for the audit trail.
type TombstoneRecord struct {
	Seq     uint64   `json:"seq"`
	Time    int64    `json:"time_ms"` // append time
	EventID string   `json:"event_id"`
	Chunks  []string `json:"chunks,omitempty"`
	Session string   `json:"session,omitempty"`
	From    int64    `json:"from_ms,omitempty"`
	To      int64    `json:"to_ms,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Removed int      `json:"removed"` // chunks it removed when applied (see Removed)
}

// Timelines is the timelines projection. It is safe for concurrent use.
type Timelines struct {
	mu     sync.Mutex
	db     *bolt.DB
	path   string
	events projections.EventReader // where content is read back (by seq)
	puts   map[string]*Chunk       // pending stores, by chunk id
	dels   map[string]struct{}     // pending removals of committed chunks
	tombs  []*TombstoneRecord      // pending tombstone records
	marks  [][]byte                // pending removal marks (keys of bRemoved) and values
	markV  [][]byte
	closed bool
	// scrub is set when a flush deleted chunks: their content is in the
	// file's free pages until the next compaction (at Commit or Close).
	scrub bool
	// stored holds the keys put into "ids" since a BeginBulk that found
	// it empty (nil otherwise): a chunk it does not have was not stored
	// before, and a flush skips looking for its old version.
	stored *projections.AbsentKeys
	// bulk holds, between BeginBulk and EndBulk, the ids of the chunks
	// stored new, and their seqs, that "ids" does not have yet; staged
	// is the flush under way's changes to them; idsStale is set while
	// "ids" lacks chunks (meta ids_stale). See idsbulk.go.
	bulk     *projections.PendingKeys
	staged   map[string]stagedID
	idsStale bool
	// gen names the state of the file, txid its bbolt txid (-1: unknown);
	// both change with it, under mu (see cache.go).
	gen   uint64
	txid  int
	cache readCache
	// afterWrite (tests) runs between a write's bbolt commit and the
	// cache's move to the new state: the window a reader's transaction
	// may start in.
	afterWrite func()
}

var (
	_ projections.Projection  = (*Timelines)(nil)
	_ projections.BulkBuilder = (*Timelines)(nil)
)

// BeginBulk implements projections.BulkBuilder: until EndBulk, flushes
// keep the ids of the chunks they store new in memory (idsbulk.go). When
// "ids" is empty (a first build), they also remember the keys they put
// (stored), and look up an old version only of those.
func (t *Timelines) BeginBulk() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stored = nil
	if t.closed {
		return
	}
	if t.bulk == nil {
		t.bulk = projections.NewPendingKeys()
	}
	t.stored = projections.AbsentKeysFor(Name, t.db, bIDs)
}

// EndBulk implements projections.BulkBuilder: the ids kept in memory go
// into "ids" in key order, and the filter goes.
func (t *Timelines) EndBulk() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stored = nil
	if t.closed {
		t.bulk = nil
		return nil
	}
	err := t.settleIDs()
	// On failure the mark stays and, with no pending ids, the next flush
	// or read rebuilds "ids" (settleIDs).
	t.bulk = nil
	return err
}

// Open opens (creating if needed) the timelines stored in dir. A second
// Open of the same dir (also from another process) fails after a second.
// Chunk content is not stored: reads take it from events, the event
// stream the timelines are applied from, by seq (nil: reads that return
// content fail with ErrNoEvents; applying, counts, sessions and digests
// work without it).
func Open(dir string, events projections.EventReader) (*Timelines, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create timelines dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	t := &Timelines{path: path, events: events, staged: map[string]stagedID{}}
	t.clearPending()
	if err := t.openDB(); err != nil {
		return nil, err
	}
	if t.idsStale {
		// A bulk build stopped before its end (a crash): "ids" lacks
		// the chunks it kept in memory.
		t.mu.Lock()
		err := t.settleIDs()
		t.mu.Unlock()
		if err != nil {
			t.db.Close()
			return nil, fmt.Errorf("open timelines: %w", err)
		}
	}
	return t, nil
}

// The freelist is synced: with NoFreelistSync, bbolt rebuilds it at every
// open by walking every page of the file, which made each command's open
// cost (CPU and resident memory) grow with the store.
var boltOptions = &bolt.Options{
	Timeout:      time.Second,
	FreelistType: bolt.FreelistMapType,
}

// openDB opens (creating if needed) and checks the bbolt file.
func (t *Timelines) openDB() error {
	path := t.path
	db, err := projections.OpenBolt(path, boltOptions)
	if err != nil {
		return fmt.Errorf("open timelines %s: %w", path, err)
	}
	if err := projections.CheckBolt(db); err != nil {
		db.Close()
		return fmt.Errorf("open timelines: %w", err)
	}
	// Checked in a read transaction, written only when new: a process
	// that only reads writes nothing (a no-op bbolt commit still writes
	// and syncs two pages).
	fresh := false
	txid := -1
	err = db.View(func(tx *bolt.Tx) error {
		txid = tx.ID()
		if tx.Bucket(bMeta) != nil {
			if v := tx.Bucket(bMeta).Get(kVersion); len(v) == 4 && binary.LittleEndian.Uint32(v) != Version {
				return nil // another format: the projector resets it
			}
			for _, b := range allBkts {
				if tx.Bucket(b) == nil {
					return fmt.Errorf("bucket %s: %w: missing", b, ErrCorrupt)
				}
			}
			t.idsStale = tx.Bucket(bMeta).Get(kIDsStale) != nil
			return nil
		}
		fresh = true
		return nil
	})
	if err == nil && fresh {
		err = db.Update(func(tx *bolt.Tx) error {
			txid = tx.ID()
			return initBuckets(tx)
		})
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("init timelines %s: %w", path, err)
	}
	t.db = db
	t.setState(txid)
	return nil
}

// Compact implements projections.Compacter: the file is rewritten tight
// after a bulk load, unless the load left it nearly tight
// (projections.BoltLoose): a first build whose keys came in order fills
// its pages (ids and chunks at EndBulk, time and order by FillAppends).
// Removals do not wait for it: their commit compacts (scrub).
func (t *Timelines) Compact() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if loose, err := projections.BoltLoose(t.db); err != nil || !loose {
		return err
	}
	return t.compact()
}

// compact rewrites the file without its free pages, so the content of
// removed chunks leaves the disk (see the package doc).
func (t *Timelines) compact() error {
	t.setState(-1) // also when the file fails to reopen
	if err := t.db.Close(); err != nil {
		t.closed = true
		return fmt.Errorf("close timelines for compaction: %w", err)
	}
	err := projections.CompactBolt(t.path, boltOptions)
	if oerr := t.openDB(); oerr != nil {
		t.closed = true
		return errors.Join(err, oerr)
	}
	if err != nil {
		return err
	}
	t.scrub = false
	return nil
}

func initBuckets(tx *bolt.Tx) error {
	for _, b := range allBkts {
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	var v [4]byte
	binary.LittleEndian.PutUint32(v[:], Version)
	return tx.Bucket(bMeta).Put(kVersion, v[:])
}

func (t *Timelines) clearPending() {
	t.puts = make(map[string]*Chunk)
	t.dels = make(map[string]struct{})
	t.tombs = nil
	t.marks, t.markV = nil, nil
}

// Name returns "timelines".
func (t *Timelines) Name() string { return Name }

// Version returns the format version this build writes.
func (t *Timelines) Version() int { return Version }

// StoredVersion returns the format version of the state on disk.
func (t *Timelines) StoredVersion() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, ErrClosed
	}
	var v int
	err := t.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta).Get(kVersion)
		if len(b) != 4 {
			return fmt.Errorf("read version: %w", ErrCorrupt)
		}
		v = int(binary.LittleEndian.Uint32(b))
		return nil
	})
	return v, err
}

// Checkpoint returns the last committed checkpoint.
func (t *Timelines) Checkpoint() (projections.Checkpoint, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cp projections.Checkpoint
	if t.closed {
		return cp, ErrClosed
	}
	err := t.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta).Get(kCP)
		if b == nil {
			return nil
		}
		if len(b) != 8+log.HashSize {
			return fmt.Errorf("read checkpoint: %w: %d bytes", ErrCorrupt, len(b))
		}
		cp.Seq = binary.LittleEndian.Uint64(b)
		copy(cp.Hash[:], b[8:])
		return nil
	})
	return cp, err
}

// Apply applies one event (stores and tombstones; other types are ignored).
// The change is kept in memory until Commit.
func (t *Timelines) Apply(ev *log.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	switch b := ev.Body.(type) {
	case *log.Store:
		return t.applyStore(ev, b)
	case *log.Tombstone:
		return t.applyTombstone(ev, b)
	case *log.Edit:
		return t.applyEdit(ev, b)
	}
	return nil
}

func (t *Timelines) applyStore(ev *log.Event, s *log.Store) error {
	if s.ChunkID == "" || len(s.ChunkID) > bolt.MaxKeySize-1 {
		return fmt.Errorf("apply store: chunk id of %d bytes", len(s.ChunkID))
	}
	if len(s.ChunkParent)+binary.MaxVarintLen64+16 > bolt.MaxKeySize || len(s.Session)+1 > bolt.MaxKeySize {
		return fmt.Errorf("apply store: session or chunk_parent too long")
	}
	c := &Chunk{
		ID: s.ChunkID, Seq: ev.Seq, EventID: ev.ID.String(), AppendTime: ev.Time,
		Time: s.Time, Kind: s.Kind, Session: s.Session, Role: s.Role,
		Content: s.Content, Meta: s.Meta, Parent: s.Parent,
		ChunkParent: s.ChunkParent, ChunkIndex: s.ChunkIndex, Tool: s.Tool, Supersedes: s.Supersedes,
	}
	if ed, ok := ev.Body.(*log.Edit); ok {
		c.Edited, c.EditedBy = true, ed.By
		if err := t.keepPlace(c); err != nil {
			return err
		}
	}
	c.Sum = c.ContentSum()
	delete(t.dels, c.ID)
	t.puts[c.ID] = c
	return nil
}

func (t *Timelines) applyTombstone(ev *log.Event, ts *log.Tombstone) error {
	rec := &TombstoneRecord{
		Seq: ev.Seq, Time: ev.Time, EventID: ev.ID.String(), Chunks: ts.Chunks,
		Session: ts.Session, From: ts.From, To: ts.To, Reason: ts.Reason,
	}
	err := t.db.View(func(tx *bolt.Tx) error {
		cands := make(map[string]struct{})
		for _, id := range ts.Chunks {
			cands[id] = struct{}{}
		}
		hasRange := ts.From != 0 || ts.To != 0
		if ts.Session != "" || hasRange {
			if err := committedCandidates(tx, ts, hasRange, cands); err != nil {
				return err
			}
			for id, c := range t.puts {
				if projections.TombstoneMatches(ts, id, c.Session, c.Time) {
					cands[id] = struct{}{}
				}
			}
		}
		ids := make([]string, 0, len(cands))
		for id := range cands {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			c, err := t.current(tx, id)
			if err != nil {
				return err
			}
			if c == nil || c.Seq >= ev.Seq || !projections.TombstoneMatches(ts, id, c.Session, c.Time) {
				continue
			}
			delete(t.puts, id)
			t.dels[id] = struct{}{}
			t.marks = append(t.marks, markKey(ev.Seq, id))
			t.markV = append(t.markV, be64(c.Seq))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply tombstone: %w", err)
	}
	t.tombs = append(t.tombs, rec)
	return nil
}

// Matches returns, sorted, the ids of the committed live chunks ts would
// remove if it were appended now: a caller refuses a tombstone that hits
// nothing before writing it.
func (t *Timelines) Matches(ts *log.Tombstone) ([]string, error) {
	var out []string
	err := t.read(func(tx *bolt.Tx) error {
		cands := make(map[string]struct{})
		for _, id := range ts.Chunks {
			cands[id] = struct{}{}
		}
		if hasRange := ts.From != 0 || ts.To != 0; ts.Session != "" || hasRange {
			if err := committedCandidates(tx, ts, hasRange, cands); err != nil {
				return err
			}
		}
		for id := range cands {
			c, err := getChunk(tx, id)
			if err != nil {
				return err
			}
			if c != nil && projections.TombstoneMatches(ts, id, c.Session, c.Time) {
				out = append(out, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("match tombstone: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

// committedCandidates adds the ids of committed chunks the session and/or
// range of ts may hit (checked exactly later).
func committedCandidates(tx *bolt.Tx, ts *log.Tombstone, hasRange bool, cands map[string]struct{}) error {
	var c interface {
		First() ([]byte, []byte)
		Next() ([]byte, []byte)
		Seek([]byte) ([]byte, []byte)
	}
	if ts.Session != "" {
		c = sessionCursor(tx, ts.Session)
	} else {
		c = tx.Bucket(bTime).Cursor()
	}
	var k, v []byte
	if hasRange {
		k, v = c.Seek(ordKey(ts.From, 0))
	} else {
		k, v = c.First()
	}
	for ; k != nil; k, v = c.Next() {
		if hasRange && keyTime(k) >= ts.To {
			break
		}
		id, ok := projections.IDOfKey(v)
		if ts.Session != "" {
			iv, err := decodeIndexValue(v)
			if err != nil {
				return err
			}
			id, ok = iv.id, true
		}
		if !ok {
			return fmt.Errorf("time index value %x: %w", v, ErrCorrupt)
		}
		cands[id] = struct{}{}
	}
	return nil
}

// current returns the chunk id as of everything applied (nil if absent).
func (t *Timelines) current(tx *bolt.Tx, id string) (*Chunk, error) {
	if _, gone := t.dels[id]; gone {
		return nil, nil
	}
	if c, ok := t.puts[id]; ok {
		return c, nil
	}
	return t.chunkByID(tx, id)
}

// getChunk reads chunk id through "ids" (nil if absent). During a bulk
// build, flushes read through chunkByID instead.
func getChunk(tx *bolt.Tx, id string) (*Chunk, error) {
	if id == "" {
		return nil, nil
	}
	sk := tx.Bucket(bIDs).Get(projections.IDKey(id))
	if sk == nil {
		return nil, nil
	}
	return chunkAt(tx, id, sk)
}

// chunkAt reads the record of chunk id at seq key sk.
func chunkAt(tx *bolt.Tx, id string, sk []byte) (*Chunk, error) {
	if len(sk) != 8 {
		return nil, fmt.Errorf("chunk %q: %w: seq of %d bytes", id, ErrCorrupt, len(sk))
	}
	v := tx.Bucket(bChunks).Get(sk)
	if v == nil {
		return nil, fmt.Errorf("chunk %q: %w: no record at seq %d", id, ErrCorrupt, binary.BigEndian.Uint64(sk))
	}
	c, err := decodeChunk(id, v)
	if err != nil {
		return nil, err
	}
	if c.Seq != binary.BigEndian.Uint64(sk) {
		return nil, fmt.Errorf("chunk %q: %w: record of seq %d at seq %d", id, ErrCorrupt, c.Seq, binary.BigEndian.Uint64(sk))
	}
	return c, nil
}

// ReleaseMemory implements projections.MemoryReleaser.
func (t *Timelines) ReleaseMemory() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		projections.ReleaseBolt(t.db)
	}
}

// Commit writes everything applied and cp in one transaction.
func (t *Timelines) Commit(cp projections.Checkpoint) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.bulk == nil {
		if err := t.settleIDs(); err != nil {
			return fmt.Errorf("commit timelines at %d: %w", cp.Seq, err)
		}
	}
	err := t.update(func(tx *bolt.Tx) error {
		if err := t.flushTx(tx); err != nil {
			return err
		}
		var b [8 + log.HashSize]byte
		binary.LittleEndian.PutUint64(b[:], cp.Seq)
		copy(b[8:], cp.Hash[:])
		return tx.Bucket(bMeta).Put(kCP, b[:])
	})
	if err != nil {
		// The pending writes stay; a retry may succeed.
		return fmt.Errorf("commit timelines at %d: %w", cp.Seq, err)
	}
	t.clearPending()
	if t.scrub {
		return t.compact()
	}
	return nil
}

// flush writes the pending changes without moving the checkpoint.
func (t *Timelines) flush() error {
	if t.closed {
		return ErrClosed
	}
	if t.bulk == nil {
		if err := t.settleIDs(); err != nil {
			return fmt.Errorf("flush timelines: %w", err)
		}
	}
	if len(t.puts) == 0 && len(t.dels) == 0 && len(t.tombs) == 0 && len(t.marks) == 0 {
		return nil
	}
	if err := t.update(t.flushTx); err != nil {
		return fmt.Errorf("flush timelines: %w", err)
	}
	t.clearPending()
	return nil
}

func (t *Timelines) flushTx(tx *bolt.Tx) error {
	ids := make([]string, 0, len(t.puts)+len(t.dels))
	for id := range t.puts {
		ids = append(ids, id)
	}
	for id := range t.dels {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Records are put in seq order after the loop, which in a bulk build
	// appends them: pages filled, not split in half. A record's seq is
	// the seq of the one event that put that chunk, so no two puts share
	// a seq, and no record read or deleted in the loop is at a seq put
	// here (other than the chunk's own version, which is not deleted).
	chunks := tx.Bucket(bChunks)
	chunks.FillPercent = 1
	type record struct {
		seq uint64
		v   []byte
	}
	records := make([]record, 0, len(t.puts))
	dirty := make(map[string]struct{})
	// The chunks go in id order, their index entries in key order (see
	// projections.SortedWrites): index keys follow time, not ids.
	ix := newIndexWrites(tx)
	for _, id := range ids {
		key := projections.IDKey(id)
		var old *Chunk
		if t.stored == nil || t.stored.Has(key) {
			var err error
			if old, err = t.chunkByID(tx, id); err != nil {
				return err
			}
		}
		if old != nil {
			if err := unindex(ix, old); err != nil {
				return err
			}
			dirty[old.Session] = struct{}{}
		}
		c, put := t.puts[id]
		if old != nil && (!put || old.Seq != c.Seq) {
			if err := chunks.Delete(be64(old.Seq)); err != nil {
				return fmt.Errorf("delete chunk %q: %w", id, err)
			}
		}
		if !put {
			if old != nil {
				if err := t.deleteID(tx, key); err != nil {
					return fmt.Errorf("delete chunk %q: %w", id, err)
				}
				t.scrub = true
			}
			continue
		}
		v, err := encodeChunk(c)
		if err != nil {
			return err
		}
		records = append(records, record{c.Seq, v})
		if t.stored != nil {
			t.stored.Add(key)
		}
		if err := t.putID(tx, key, c.Seq, old != nil); err != nil {
			return fmt.Errorf("put chunk %q: %w", id, err)
		}
		if err := index(ix, c); err != nil {
			return err
		}
		if old != nil && old.Seq != c.Seq {
			t.scrub = true // an edit: the old version (and a title from it) leaves the file
		}
		dirty[c.Session] = struct{}{}
	}
	if err := t.markIDsStale(tx); err != nil {
		return err
	}
	slices.SortFunc(records, func(a, b record) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range records {
		if err := chunks.Put(be64(r.seq), r.v); err != nil {
			return fmt.Errorf("put chunk record at %d: %w", r.seq, err)
		}
	}
	if err := ix.flush(); err != nil {
		return err
	}
	tb := tx.Bucket(bTombs)
	for _, r := range t.tombs {
		v, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode tombstone %d: %w", r.Seq, err)
		}
		if err := tb.Put(be64(r.Seq), v); err != nil {
			return fmt.Errorf("put tombstone %d: %w", r.Seq, err)
		}
	}
	rb := tx.Bucket(bRemoved)
	for i, k := range t.marks {
		if err := rb.Put(k, t.markV[i]); err != nil {
			return fmt.Errorf("put removal mark: %w", err)
		}
	}
	sessions := make([]string, 0, len(dirty))
	for s := range dirty {
		if s != "" {
			sessions = append(sessions, s)
		}
	}
	sort.Strings(sessions)
	for _, s := range sessions {
		if err := t.recomputeSession(tx, s); err != nil {
			return err
		}
	}
	return nil
}

// indexWrites buffers a commit's writes to the index buckets, applied
// in key order by flush (projections.SortedWrites); nothing reads those
// buckets until then.
type indexWrites struct {
	time, order, parts, links *projections.SortedWrites
}

func newIndexWrites(tx *bolt.Tx) *indexWrites {
	return &indexWrites{
		time:  projections.NewSortedWrites(tx.Bucket(bTime)).FillAppends(),
		order: projections.NewSortedWrites(tx.Bucket(bOrder)).FillAppends(),
		parts: projections.NewSortedWrites(tx.Bucket(bParts)),
		links: projections.NewSortedWrites(tx.Bucket(bLinks)),
	}
}

func (ix *indexWrites) flush() error {
	for _, w := range []*projections.SortedWrites{ix.time, ix.order, ix.parts, ix.links} {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("write indexes: %w", err)
		}
	}
	return nil
}

func index(ix *indexWrites, c *Chunk) error {
	ok := ordKey(c.Time, c.OrderSeq())
	if err := ix.time.Put(ok, projections.IDKey(c.ID)); err != nil {
		return fmt.Errorf("index chunk %q by time: %w", c.ID, err)
	}
	if c.Session != "" {
		iv := indexValue{kind: c.Kind, role: c.Role, chunkParent: c.ChunkParent, id: c.ID}
		if err := ix.order.Put(orderKey(c.Session, ok), iv.encode()); err != nil {
			return fmt.Errorf("index chunk %q in session: %w", c.ID, err)
		}
	}
	if c.ChunkParent != "" {
		if err := ix.parts.Put(partKey(c.ChunkParent, c.ChunkIndex, c.Seq), projections.IDKey(c.ID)); err != nil {
			return fmt.Errorf("index chunk %q in document: %w", c.ID, err)
		}
	}
	return putLinks(ix.links, c)
}

func unindex(ix *indexWrites, c *Chunk) error {
	ok := ordKey(c.Time, c.OrderSeq())
	if err := ix.time.Delete(ok); err != nil {
		return fmt.Errorf("unindex chunk %q by time: %w", c.ID, err)
	}
	if c.Session != "" {
		if err := ix.order.Delete(orderKey(c.Session, ok)); err != nil {
			return fmt.Errorf("unindex chunk %q in session: %w", c.ID, err)
		}
	}
	if c.ChunkParent != "" {
		if err := ix.parts.Delete(partKey(c.ChunkParent, c.ChunkIndex, c.Seq)); err != nil {
			return fmt.Errorf("unindex chunk %q in document: %w", c.ID, err)
		}
	}
	return deleteLinks(ix.links, c)
}

// recomputeSession rebuilds a session's summary from its order index (and
// the one chunk its title comes from); an empty session is dropped.
func (t *Timelines) recomputeSession(tx *bolt.Tx, id string) error {
	key := sessKey(id)
	info := SessionInfo{ID: id, Kinds: map[string]int{}, Roles: map[string]int{}}
	var firstID, userID string
	docs := map[string]struct{}{}
	{
		c := sessionCursor(tx, id)
		for k, v := c.First(); k != nil; k, v = c.Next() {
			iv, err := decodeIndexValue(v)
			if err != nil {
				return fmt.Errorf("session %q: %w", id, err)
			}
			tm := keyTime(k)
			if info.Chunks == 0 {
				info.First, firstID = tm, iv.id
			}
			info.Last = tm
			info.Chunks++
			info.Kinds[iv.kind.String()]++
			if iv.role != "" {
				info.Roles[iv.role]++
			}
			if userID == "" && iv.kind == log.KindConversation && iv.role == "user" {
				userID = iv.id
			}
			if iv.kind == log.KindDocument {
				if iv.chunkParent != "" {
					docs[iv.chunkParent] = struct{}{}
				} else {
					docs["\x00"+iv.id] = struct{}{}
				}
			}
		}
	}
	if info.Chunks == 0 {
		if err := tx.Bucket(bSessions).Delete(key); err != nil {
			return fmt.Errorf("drop session %q: %w", id, err)
		}
		return nil
	}
	info.Documents = len(docs)
	if len(info.Roles) == 0 {
		info.Roles = nil
	}
	titleID := userID
	if titleID == "" {
		titleID = firstID
	}
	// The title's chunk is pending (its content is at hand), or the one
	// the stored record's title came from, or read back from its event.
	if pc, ok := t.puts[titleID]; ok {
		info.Title = Title(pc.Content)
	} else if prevID, prev, err := decodeSession(tx.Bucket(bSessions).Get(key)); err == nil && prevID == titleID {
		info.Title = prev.Title
	} else {
		tc, err := t.chunkByID(tx, titleID)
		if err != nil {
			return err
		}
		if tc != nil {
			content, err := t.content(tc)
			if err != nil {
				return fmt.Errorf("title of session %q: %w", id, err)
			}
			info.Title = Title(content)
		}
	}
	v, err := encodeSession(titleID, &info)
	if err != nil {
		return fmt.Errorf("encode session %q: %w", id, err)
	}
	if err := tx.Bucket(bSessions).Put(key, v); err != nil {
		return fmt.Errorf("put session %q: %w", id, err)
	}
	return nil
}

// Title returns the first sentence of content with white space collapsed,
// cut at a word boundary to at most TitleMax runes plus "…".
func Title(content string) string {
	ss := textutil.Sentences(content)
	if len(ss) == 0 {
		return ""
	}
	s := strings.Join(strings.Fields(ss[0]), " ")
	rs := []rune(s)
	if len(rs) <= TitleMax {
		return s
	}
	cut := TitleMax
	for i := TitleMax; i > TitleMax/2; i-- {
		if rs[i] == ' ' {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(rs[:cut]), " ,;:") + "…"
}

// Reset drops all state (committed and pending) and the checkpoint.
func (t *Timelines) Reset() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.clearPending()
	t.idsStale = false // a new file; ids pending for the old one are dropped
	if t.bulk != nil {
		t.bulk.Clear()
	}
	t.setState(-1) // also when the new file fails to open
	// A new file, not dropped buckets: dropped pages would keep every
	// chunk's content (tombstoned ones included) in the free pages.
	if err := t.db.Close(); err != nil {
		t.closed = true
		return fmt.Errorf("reset timelines: %w", err)
	}
	if err := os.Remove(t.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.closed = true
		return fmt.Errorf("reset timelines: %w", err)
	}
	if err := t.openDB(); err != nil {
		t.closed = true
		return fmt.Errorf("reset timelines: %w", err)
	}
	t.scrub = false
	return nil
}

// Close drops pending (uncommitted) changes and closes the file.
func (t *Timelines) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.clearPending()
	t.setState(-1) // no text stays in memory
	if t.scrub {
		// Removals flushed by a read but never committed: their content
		// must not stay in the free pages.
		if err := t.compact(); err != nil {
			if !t.closed {
				t.db.Close()
			}
			t.closed = true
			return fmt.Errorf("close timelines: %w", err)
		}
	}
	t.closed = true
	if err := t.db.Close(); err != nil {
		return fmt.Errorf("close timelines: %w", err)
	}
	return nil
}

// Size returns the size of the bbolt file in bytes (-1 if unknown).
func (t *Timelines) Size() int64 {
	fi, err := os.Stat(t.path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// Digest returns SHA-256 over the logical content (see the package doc).
func (t *Timelines) Digest() ([32]byte, error) {
	var out [32]byte
	err := t.read(func(tx *bolt.Tx) error {
		h := sha256.New()
		h.Write([]byte(digestTag))
		var lb [binary.MaxVarintLen64]byte
		put := func(b []byte) {
			h.Write(lb[:binary.PutUvarint(lb[:], uint64(len(b)))])
			h.Write(b)
		}
		chunks := tx.Bucket(bChunks)
		for i, name := range [][]byte{bSessions, bIDs, bTombs, bRemoved, bTime, bParts, bLinks} {
			h.Write([]byte{byte(i + 1)})
			n := 0
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				put(k)
				if bytes.Equal(name, bIDs) { // chunks: (idKey, record), as version 6 stored them
					rec := chunks.Get(v)
					if rec == nil {
						return fmt.Errorf("chunk %x: %w: no record at its seq", k, ErrCorrupt)
					}
					v = rec
				}
				put(v)
				n++
				return nil
			})
			if err != nil {
				return err
			}
			h.Write(be64(uint64(n)))
		}
		// The session order index (what session listings, recent turns
		// and context assembly read).
		h.Write([]byte{8})
		n := 0
		err := tx.Bucket(bOrder).ForEach(func(k, v []byte) error {
			put(k)
			put(v)
			n++
			return nil
		})
		if err != nil {
			return err
		}
		h.Write(be64(uint64(n)))
		copy(out[:], h.Sum(nil))
		return nil
	})
	return out, err
}

// read flushes pending writes and runs fn in a read transaction. The
// mutex covers only the flush: readers then run their transactions side
// by side (bbolt's read transactions are concurrent, and Close and Reset
// wait for them before they touch the file).
func (t *Timelines) read(fn func(tx *bolt.Tx) error) error {
	return projections.Guard(Name, func() error {
		// A compaction may close the snapshot's file between the snapshot
		// and View (it holds t.mu only while it swaps the file): View then
		// refuses before fn runs, and the next snapshot waits for the
		// reopened file. A Close stays an error after the retries.
		for try := 0; ; try++ {
			s, err := t.snapshot()
			if err != nil {
				return err
			}
			err = s.db.View(fn)
			if !errors.Is(err, bolt.ErrDatabaseNotOpen) || try == 2 {
				return err
			}
		}
	})
}

// Sessions returns every session, most recent (last content time) first,
// ties by id.
func (t *Timelines) Sessions() ([]SessionInfo, error) { return t.SessionsTop(0) }

// SessionsTop is Sessions for the first n sessions in that order (n <= 0:
// all). While it reads the sessions bucket it keeps at most n records,
// each placed by its id and last time alone, and decodes only those: a
// 50K-session store held ~50 MB of decoded records only to sort them and
// keep 50, and decoding each record whole was most of the listing's CPU.
// It lets go of the file's pages every sessionsDropEvery records, so what
// it maps does not grow with the store's sessions either (a reader beside
// it in the same process maps again what it reads next).
func (t *Timelines) SessionsTop(n int) ([]SessionInfo, error) {
	var out []SessionInfo
	err := t.read(func(tx *bolt.Tx) error {
		var kept sessionHeap
		read := 0
		err := tx.Bucket(bSessions).ForEach(func(k, v []byte) error {
			// The bucket is read once, end to end: its pages are let go
			// as it goes, or the listing would map all of them (24.5 MB
			// of a 2M-event store's 100K sessions). The kept records are
			// mapped again when decoded; the transaction keeps the
			// mapping in place (projections.DropResident).
			if read++; sessionsDropEvery > 0 && read%sessionsDropEvery == 0 {
				projections.DropResident(tx.DB(), tx.Size())
			}
			id, last, err := sessionOrderKey(sessionJSON(v))
			if err != nil {
				return fmt.Errorf("session %q: decode session record: %w: %v", k, ErrCorrupt, err)
			}
			// v stays valid until the transaction ends: the kept records
			// are decoded before it does.
			e := sessionEntry{id: id, last: last, rec: v}
			switch {
			case n <= 0:
				kept = append(kept, e) // all of them: sorted below
			case len(kept) < n:
				heap.Push(&kept, e)
			case sessionBefore(last, id, kept[0].last, kept[0].id):
				kept[0] = e
				heap.Fix(&kept, 0)
			}
			return nil
		})
		if err != nil {
			return err
		}
		out = make([]SessionInfo, 0, len(kept))
		for _, e := range kept {
			_, si, err := decodeSession(e.rec)
			if err != nil {
				return fmt.Errorf("session %q: %w", e.id, err)
			}
			out = append(out, si)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return sessionBefore(out[i].Last, out[i].ID, out[j].Last, out[j].ID) })
	return out, nil
}

// sessionsDropEvery is how many session records SessionsTop reads
// between two lettings-go of the file's pages (0: never; a variable for
// the tests).
var sessionsDropEvery = 4096

// sessionBefore is Sessions' order: later last content time first, ties
// by id.
func sessionBefore(lastA int64, idA string, lastB int64, idB string) bool {
	if lastA != lastB {
		return lastA > lastB
	}
	return idA < idB
}

// sessionOrderKey reads a session record's JSON only as far as its id
// and last content time, which encodeSession's json.Marshal writes ahead
// of the kinds, roles and title (SessionInfo's field order): decoding
// every record whole was most of a 50K-session listing's CPU. A record
// whose first members are not id, first_ms and last_ms is decoded whole.
func sessionOrderKey(js []byte) (string, int64, error) {
	rest, ok := bytes.CutPrefix(js, []byte(`{"id":"`))
	if !ok {
		return sessionOrderKeyWhole(js)
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return sessionOrderKeyWhole(js) // escapes: let encoding/json read them
	}
	id := string(rest[:end])
	if rest, ok = bytes.CutPrefix(rest[end+1:], []byte(`,"first_ms":`)); !ok {
		return sessionOrderKeyWhole(js)
	}
	if rest, ok = skipInt(rest); !ok {
		return sessionOrderKeyWhole(js)
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"last_ms":`)); !ok {
		return sessionOrderKeyWhole(js)
	}
	num := rest
	if rest, ok = skipInt(rest); !ok || len(rest) == 0 || (rest[0] != ',' && rest[0] != '}') {
		return sessionOrderKeyWhole(js)
	}
	last, err := strconv.ParseInt(string(num[:len(num)-len(rest)]), 10, 64)
	if err != nil {
		return sessionOrderKeyWhole(js)
	}
	return id, last, nil
}

// skipInt returns b past the JSON integer it starts with.
func skipInt(b []byte) ([]byte, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return b[i:], i > start
}

// sessionOrderKeyWhole is sessionOrderKey decoding the whole record.
func sessionOrderKeyWhole(js []byte) (string, int64, error) {
	var key struct {
		ID   string `json:"id"`
		Last int64  `json:"last_ms"`
	}
	err := json.Unmarshal(js, &key)
	return key.ID, key.Last, err
}

// sessionEntry is a session record SessionsTop keeps, with the fields
// that place it.
type sessionEntry struct {
	id   string
	last int64
	rec  []byte
}

// sessionHeap holds SessionsTop's kept records with the one that comes
// last in Sessions' order on top, the first to give way to a session that
// comes before it.
type sessionHeap []sessionEntry

func (h sessionHeap) Len() int { return len(h) }
func (h sessionHeap) Less(i, j int) bool {
	return sessionBefore(h[j].last, h[j].id, h[i].last, h[i].id)
}
func (h sessionHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sessionHeap) Push(x any)   { *h = append(*h, x.(sessionEntry)) }
func (h *sessionHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Session returns a session's summary and its live chunks in content-time
// order (ties by seq). ErrNotFound if it has none.
func (t *Timelines) Session(id string) (SessionInfo, []Chunk, error) {
	info, chunks, _, err := t.SessionPage(id, 0, 0)
	return info, chunks, err
}

// SessionPage is Session for one page: the live chunks from offset (at
// most limit of them when limit > 0; a negative offset counts from the
// end), in content-time order, and the session's live chunk count. Only
// the page's chunks are read, so the last turns of a long session cost
// what they weigh.
func (t *Timelines) SessionPage(id string, offset, limit int) (SessionInfo, []Chunk, int, error) {
	info, chunks, total, err := t.sessionPage(id, offset, limit)
	if err == nil {
		err = t.fill(chunks)
	}
	if err != nil {
		return SessionInfo{}, nil, 0, fmt.Errorf("read session: %w", err)
	}
	return info, chunks, total, nil
}

// sessionPage is SessionPage without the chunks' content.
func (t *Timelines) sessionPage(id string, offset, limit int) (SessionInfo, []Chunk, int, error) {
	var info SessionInfo
	var chunks []Chunk
	total := 0
	err := t.read(func(tx *bolt.Tx) error {
		v := tx.Bucket(bSessions).Get(sessKey(id))
		if v == nil || id == "" {
			return fmt.Errorf("session %q: %w", id, ErrNotFound)
		}
		var err error
		if _, info, err = decodeSession(v); err != nil {
			return fmt.Errorf("session %q: %w", id, err)
		}
		cur := sessionCursor(tx, id)
		if offset < 0 {
			n := 0
			for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
				n++
			}
			offset = max(0, n+offset)
		}
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			if total >= offset && (limit <= 0 || len(chunks) < limit) {
				c, err := chunkFromIndex(tx, v)
				if err != nil {
					return err
				}
				chunks = append(chunks, *c)
			}
			total++
		}
		return nil
	})
	return info, chunks, total, err
}

func chunkFromIndex(tx *bolt.Tx, v []byte) (*Chunk, error) {
	iv, err := decodeIndexValue(v)
	if err != nil {
		return nil, err
	}
	c, err := getChunk(tx, iv.id)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("index names missing chunk %q: %w", iv.id, ErrCorrupt)
	}
	return c, nil
}

// RecentTurns returns the last n conversation turns of a session (oldest
// first, content-time order). Tool calls and documents are not turns. A
// session without turns gives an empty slice and no error.
func (t *Timelines) RecentTurns(session string, n int) ([]Chunk, error) {
	var out []Chunk
	if n <= 0 || session == "" {
		return nil, nil
	}
	err := t.read(func(tx *bolt.Tx) error {
		c := sessionCursor(tx, session)
		for k, v := c.Last(); k != nil && len(out) < n; k, v = c.Prev() {
			iv, err := decodeIndexValue(v)
			if err != nil {
				return err
			}
			if iv.kind != log.KindConversation {
				continue
			}
			ch, err := chunkFromIndex(tx, v)
			if err != nil {
				return err
			}
			out = append(out, *ch)
		}
		return nil
	})
	if err == nil {
		err = t.fill(out)
	}
	if err != nil {
		return nil, fmt.Errorf("recent turns of %q: %w", session, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Chunk returns a live chunk by id.
func (t *Timelines) Chunk(id string) (Chunk, bool, error) {
	var c *Chunk
	err := t.read(func(tx *bolt.Tx) error {
		var err error
		c, err = getChunk(tx, id)
		return err
	})
	if err == nil && c != nil {
		c.Content, err = t.content(c)
	}
	if err != nil {
		return Chunk{}, false, fmt.Errorf("read chunk: %w", err)
	}
	if c == nil {
		return Chunk{}, false, nil
	}
	return *c, true, nil
}

// Contains reports whether a live chunk has this id.
func (t *Timelines) Contains(id string) (bool, error) {
	ok := false
	err := t.read(func(tx *bolt.Tx) error {
		c, err := getChunk(tx, id)
		ok = c != nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read chunk: %w", err)
	}
	return ok, nil
}

// Count returns the number of live chunks.
func (t *Timelines) Count() (int, error) {
	var n int
	err := t.read(func(tx *bolt.Tx) error {
		n = tx.Bucket(bIDs).Stats().KeyN
		return nil
	})
	return n, err
}

// Document returns the live parts of a document (chunks whose chunk_parent
// is parent) ordered by chunk index, then seq. ErrNotFound if none.
func (t *Timelines) Document(parent string) ([]Chunk, error) {
	var out []Chunk
	err := t.read(func(tx *bolt.Tx) error {
		if parent == "" {
			return nil
		}
		prefix := partPrefix(parent)
		c := tx.Bucket(bParts).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			id, ok := projections.IDOfKey(v)
			if !ok {
				return fmt.Errorf("document index value %x: %w", v, ErrCorrupt)
			}
			ch, err := getChunk(tx, id)
			if err != nil {
				return err
			}
			if ch == nil {
				return fmt.Errorf("document index names missing chunk %q: %w", id, ErrCorrupt)
			}
			out = append(out, *ch)
		}
		return nil
	})
	if err == nil {
		err = t.fill(out)
	}
	if err != nil {
		return nil, fmt.Errorf("read document %q: %w", parent, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read document %q: %w", parent, ErrNotFound)
	}
	return out, nil
}

// DocumentInfo is one document of a session: its parts grouped by
// chunk_parent (a document chunk without chunk_parent is its own group,
// keyed by its chunk id).
type DocumentInfo struct {
	Parent string   `json:"parent"`
	Name   string   `json:"name,omitempty"` // meta "name" of the first part
	Time   int64    `json:"time_ms"`        // content time of the first part
	Parts  []string `json:"parts"`          // chunk ids by chunk index, then seq
}

// Documents returns the documents of a session in content-time order of
// their first part (ties by parent). ErrNotFound if the session is unknown.
func (t *Timelines) Documents(session string) ([]DocumentInfo, error) {
	_, chunks, _, err := t.sessionPage(session, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	byParent := map[string]*DocumentInfo{}
	var out []*DocumentInfo
	var parts []Chunk
	for _, c := range chunks {
		if c.Kind == log.KindDocument {
			parts = append(parts, c)
		}
	}
	sort.SliceStable(parts, func(i, j int) bool {
		if parts[i].ChunkIndex != parts[j].ChunkIndex {
			return parts[i].ChunkIndex < parts[j].ChunkIndex
		}
		return parts[i].Seq < parts[j].Seq
	})
	for _, c := range parts {
		key := c.ChunkParent
		if key == "" {
			key = c.ID
		}
		d, ok := byParent[key]
		if !ok {
			d = &DocumentInfo{Parent: key, Name: c.Meta["name"], Time: c.Time}
			byParent[key] = d
			out = append(out, d)
		}
		d.Time = min(d.Time, c.Time)
		d.Parts = append(d.Parts, c.ID)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Time != out[j].Time {
			return out[i].Time < out[j].Time
		}
		return out[i].Parent < out[j].Parent
	})
	res := make([]DocumentInfo, len(out))
	for i, d := range out {
		res[i] = *d
	}
	return res, nil
}

// Tombstones returns the applied tombstones in seq order.
func (t *Timelines) Tombstones() ([]TombstoneRecord, error) {
	var out []TombstoneRecord
	err := t.read(func(tx *bolt.Tx) error {
		return tx.Bucket(bTombs).ForEach(func(k, v []byte) error {
			var r TombstoneRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode tombstone record: %w: %v", ErrCorrupt, err)
			}
			prefix := be64(r.Seq)
			c := tx.Bucket(bRemoved).Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				r.Removed++
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list tombstones: %w", err)
	}
	return out, nil
}

// Removed returns the ids of the chunks the tombstone at seq removed,
// sorted (empty if it removed nothing or is not a tombstone).
func (t *Timelines) Removed(seq uint64) ([]string, error) {
	var out []string
	err := t.read(func(tx *bolt.Tx) error {
		prefix := be64(seq)
		c := tx.Bucket(bRemoved).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out = append(out, string(k[8:]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list removals of %d: %w", seq, err)
	}
	return out, nil
}

// --- keys and index values ---

func markKey(tombSeq uint64, id string) []byte {
	return append(be64(tombSeq), id...)
}

func sessKey(s string) []byte { return append([]byte{'s'}, s...) }

func be64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func ordKey(tm int64, seq uint64) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], uint64(tm)^(1<<63))
	binary.BigEndian.PutUint64(b[8:], seq)
	return b[:]
}

// keyTime is the content time of an ordKey (keys are always 16 bytes: they
// are written only by ordKey).
func keyTime(k []byte) int64 {
	if len(k) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
}

func partPrefix(parent string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(parent)))
	return append(b, parent...)
}

func partKey(parent string, index int, seq uint64) []byte {
	b := partPrefix(parent)
	b = binary.BigEndian.AppendUint64(b, uint64(index))
	return binary.BigEndian.AppendUint64(b, seq)
}

// indexValue is the value of a session order entry: enough to summarise a
// session without loading its chunks.
//
//	kind u8 ‖ role ‖ uvarint len ‖ chunk_parent ‖ projections.IDKey(id) (rest)
//
// role is one byte 1+i for indexRoles[i] (version 5: the role was most of
// the value after the id), else 0 ‖ uvarint len ‖ role.
type indexValue struct {
	kind        log.Kind
	role        string
	chunkParent string
	id          string
}

func (iv indexValue) encode() []byte {
	b := make([]byte, 0, 4+len(iv.role)+len(iv.chunkParent)+len(iv.id))
	b = append(b, byte(iv.kind))
	if r := roleCode(iv.role); r != 0 {
		b = append(b, r)
	} else {
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(iv.role)))
		b = append(b, iv.role...)
	}
	b = binary.AppendUvarint(b, uint64(len(iv.chunkParent)))
	b = append(b, iv.chunkParent...)
	return append(b, projections.IDKey(iv.id)...)
}

// indexRoles are the roles an order index value names by one byte; append
// only (the byte is 1 + the index).
var indexRoles = []string{"user", "assistant", "system", "tool"}

func roleCode(role string) byte {
	for i, r := range indexRoles {
		if r == role {
			return byte(i + 1)
		}
	}
	return 0
}

func decodeIndexValue(b []byte) (indexValue, error) {
	var iv indexValue
	if len(b) < 1 {
		return iv, fmt.Errorf("decode index value: %w: empty", ErrCorrupt)
	}
	iv.kind = log.Kind(b[0])
	b = b[1:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	var ok1, ok2 bool
	switch {
	case len(b) == 0:
	case b[0] == 0:
		b = b[1:]
		iv.role, ok1 = str()
		ok1 = ok1 && roleCode(iv.role) == 0 // one encoding per value
	case int(b[0]) <= len(indexRoles):
		iv.role, ok1 = indexRoles[b[0]-1], true
		b = b[1:]
	}
	if ok1 {
		iv.chunkParent, ok2 = str()
	}
	var ok3 bool
	if ok1 && ok2 {
		iv.id, ok3 = projections.IDOfKey(b)
	}
	if !ok3 {
		return indexValue{}, fmt.Errorf("decode index value: %w", ErrCorrupt)
	}
	return iv, nil
}
