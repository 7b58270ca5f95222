// Package dedup is the near-duplicate projection: for every live chunk, a
// hash of its normalized content (Hash), indexed by (session, role, kind,
// hash), so that a store can find, in one bbolt seek, a live item of the
// same session, role and kind whose content is the same after
// normalization.
//
// Normalization (Normalize; the rule is frozen: FormatVersion changes with
// it):
//
//  1. the zero-width characters U+200B, U+200C, U+200D, U+2060 and U+FEFF
//     are dropped;
//  2. every maximal run of Unicode white space (unicode.IsSpace) becomes
//     one ASCII space, and leading and trailing white space is dropped;
//  3. every letter is lowered with unicode.ToLower (simple, one-to-one
//     case mapping: "Straße" and "STRASSE" stay different).
//
// Nothing else is touched: punctuation, digits, accents and Unicode
// compatibility forms (no NFKC) stay as they are, so two texts that differ
// in anything a reader could see other than case and spacing never
// normalize equal.
//
// A chunked document is a duplicate of another when both have the same
// number of chunks and each chunk normalizes equal to the other's chunk at
// the same index (see Store.Remember in package ucl): the projection keeps
// every chunk's document (chunk_parent) and index for that.
//
// Invariants:
//   - The state is a pure function of the live chunks (a tombstone removes
//     what log.Tombstone.Matches targets), so incremental updates and a
//     rebuild give the same digest.
//   - Apply only buffers; Commit applies the buffered events in order.
//     Reads see the last Commit. The file gets commits in bulk (pending.go):
//     what it holds is always the state at its checkpoint; a process that
//     ends without Close loses only commits the log still has. A first
//     bulk build writes its commits to a scratch file in sorted runs and
//     merges them into the file at its end (runs.go): the two files
//     together hold the state at the scratch file's checkpoint.
//   - No content is stored, only hashes; still, a Commit that removed
//     chunks compacts the file so that the hashes of tombstoned content
//     (which would confirm a guess of a short text) leave the disk.
//   - Nothing the log has is copied (format 2): the id and hash of the
//     event that stored a chunk are read back from the log by its seq when
//     a duplicate is reported; session and role are stored once per item,
//     and the lookup key is a hash of them with the kind and content hash.
//
// The content hash is SHA-256 of the normalized text cut to 16 bytes
// (format 1 kept 32). Two different texts of the same session, role and
// kind would have to collide for one to be taken for the other: by
// chance that is about n²/2¹²⁹ for n items (below 10⁻²⁰ at a billion),
// and on purpose it takes about 2⁶⁴ SHA-256 evaluations by someone who
// writes both texts to the store, who could as well not store the
// second: dedup is no security boundary, a false match only costs a
// write its own text.
//
// Storage (bbolt file dedup.db; frozen by testdata/format.golden). Strings
// are uvarint-length-prefixed (str), uvarints canonical (shortest):
//
//	items  id(chunk id) → kind(1) uvarint(seq) content-hash(16)
//	                  varint(time-ms) uvarint(chunk-index)
//	                  str(session) str(role) str(chunk-parent)
//	keys   lookup(16) id(chunk id) → ∅, lookup = SHA-256(str(session)
//	       str(role) kind(1) content-hash(16)) cut to 16 bytes; Find
//	       checks the item's session, role, kind and hash, so a lookup
//	       collision is no match
//	docs   str(chunk-parent) chunk-index(4, BE) → id(chunk id)
//	meta   "version" → "v2", "checkpoint" → JSON checkpoint, "flushing"
//	       → "1" while a bulk write of several transactions is under way
//	       (a file opened with it is dropped and rebuilt), "bulk" → "1"
//	       while the runs of dedup-bulk.db are not merged (runs.go: a
//	       file opened with it merges them)
//
// id(x) is 0 ‖ the 16 bytes of x when x is 32 lowercase hex digits (the
// log's event ids, which most chunk ids are), else 1 ‖ x.
//
// The digest is SHA-256 over the version and the items, keys and docs
// buckets in key order (each key and value as str).
package dedup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Name is the projection name.
const Name = "dedup"

// FormatVersion is the stored format and normalization version.
const FormatVersion = 2

var (
	// ErrClosed is returned when a method is called after Close.
	ErrClosed = errors.New("dedup: closed")
	// ErrCorrupt is returned (wrapped) when a stored record does not decode.
	ErrCorrupt = errors.New("dedup: corrupt record")
)

var (
	bucketItems = []byte("items")
	bucketKeys  = []byte("keys")
	bucketDocs  = []byte("docs")
	bucketMeta  = []byte("meta")
	allBuckets  = [][]byte{bucketItems, bucketKeys, bucketDocs, bucketMeta}
	keyCP       = []byte("checkpoint")
	keyVersion  = []byte("version")
)

// Normalize applies the normalization rule of the package doc.
func Normalize(s string) string {
	return string(appendNormalized(make([]byte, 0, len(s)), s))
}

// appendNormalized appends Normalize(s) to dst. ASCII bytes take a byte
// path (white space and upper case by range); other runes the rule's
// unicode tests. It was a rune-by-rune strings.Builder, a fifth of a dedup
// build's CPU and of every append's duplicate check.
func appendNormalized(dst []byte, s string) []byte {
	n0 := len(dst)
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c == ' ' || c >= '\t' && c <= '\r' {
				space = len(dst) > n0
				continue
			}
			if space {
				dst = append(dst, ' ')
				space = false
			}
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff':
			continue
		}
		if unicode.IsSpace(r) {
			space = len(dst) > n0
			continue
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// HashLen is the length of a content hash.
const HashLen = 16

// Hash is the SHA-256 of Normalize(s), cut to HashLen bytes (see the
// package doc for why 16 bytes are enough).
func Hash(s string) [HashLen]byte {
	var buf [1024]byte
	sum := sha256.Sum256(appendNormalized(buf[:0], s))
	return [HashLen]byte(sum[:HashLen])
}

// Item is one live chunk as the projection knows it. The id and hash of
// the event at Seq are in the log (log.(*Log).EventAt).
type Item struct {
	ChunkID     string        `json:"chunk_id"`
	Kind        log.Kind      `json:"kind"`
	Seq         uint64        `json:"seq"`
	Content     [HashLen]byte `json:"-"`
	Time        int64         `json:"time_ms"`
	ChunkIndex  int           `json:"chunk_index,omitempty"`
	Session     string        `json:"session,omitempty"`
	Role        string        `json:"role,omitempty"`
	ChunkParent string        `json:"chunk_parent,omitempty"`
}

// Index is the dedup projection.
type Index struct {
	mu     sync.RWMutex
	dir    string
	db     *bolt.DB
	cp     projections.Checkpoint
	ops    []applied
	closed bool
	// pend is what was committed and not yet written to the file, whose
	// checkpoint is diskCP (see pending.go).
	pend   *pending
	diskCP projections.Checkpoint
	// compacted is the file's size after it was last compacted (or
	// opened): Compact rewrites it only once it has grown well past that.
	compacted int64
	// reads counts lookups and applied events, for mapped (projections.DropResident).
	reads atomic.Int64
	// stored holds the item keys put since a BeginBulk that found no
	// item, in the file or pending (nil otherwise): a chunk it does not
	// have has no item to remove (see storedKV).
	stored *projections.AbsentKeys
	// bulk is set while a bulk build that began on an empty projection
	// spills its writes in runs rather than into the file (runs.go).
	bulk *runs
}

var _ projections.BulkBuilder = (*Index)(nil)

// BeginBulk implements projections.BulkBuilder. When there is no item (a
// first build), the writes of the bulk build remember the item keys they
// put (stored) until EndBulk, and look up an item only for those; and
// they go to the file in sorted runs, merged in EndBulk (runs.go).
func (x *Index) BeginBulk() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stored = nil
	// A build whose runs were not merged (its EndBulk failed) goes on
	// deferring, with no filter: the runs hold items the file lacks.
	if x.closed || x.bulk != nil || len(x.pend.m[bItems]) > 0 {
		return
	}
	x.stored = projections.AbsentKeysFor(Name, x.db, bucketItems)
	if x.stored != nil {
		x.bulk = &runs{}
	}
}

// EndBulk implements projections.BulkBuilder: the filter goes, and the
// runs are merged into the file.
func (x *Index) EndBulk() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stored = nil
	if x.closed {
		return nil
	}
	return x.settle()
}

// storedKV is w seen through the filter of the item keys put since a bulk
// build began on no item: an item key the filter never saw has no item,
// without a lookup (a stored chunk's lookup of its previous item, nearly
// always absent, was a tenth of a 1M dedup build). Every item put goes
// through it, into the filter.
type storedKV struct {
	kv
	stored *projections.AbsentKeys
}

func (w storedKV) get(b int, k []byte) []byte {
	if b == bItems && !w.stored.Has(k) {
		return nil
	}
	return w.kv.get(b, k)
}

func (w storedKV) put(b int, k, v []byte) error {
	if b == bItems {
		w.stored.Add(k)
	}
	return w.kv.put(b, k, v)
}

// writer is w, through the filter of a bulk build when there is one.
func (x *Index) writer(w kv) kv {
	if x.stored == nil {
		return w
	}
	return storedKV{w, x.stored}
}

// mapped is called inside a transaction after n lookups or applied
// events: every residentEvery of them, the pages of the file they mapped
// are dropped (one batch's random lookups would map the whole file), and
// those of a bulk build's runs (runs.go), which its lookups read at
// random too.
func (x *Index) mapped(n int) {
	if x.reads.Add(int64(n))%residentEvery >= int64(n) {
		return
	}
	if size := x.Size(); size >= residentFrom {
		projections.DropResident(x.db, size)
	}
	if x.bulk != nil && x.bulk.size >= residentFrom {
		projections.DropResident(x.bulk.db, x.bulk.size)
	}
}

// residentEvery is how many lookups map at most residentEvery×3 pages
// (the file's depth) before mapped drops them.
const residentEvery = 4096

// Open opens (or creates) the projection in dir. State of another format
// version is discarded (checkpoint zero).
func Open(dir string) (*Index, error) {
	x := &Index{dir: dir}
	if err := x.open(); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *Index) path() string { return filepath.Join(x.dir, "dedup.db") }

func versionTag() []byte { return []byte(fmt.Sprintf("v%d", FormatVersion)) }

func (x *Index) open() error {
	if err := os.MkdirAll(x.dir, 0o700); err != nil {
		return fmt.Errorf("create dedup dir: %w", err)
	}
	db, err := projections.OpenBolt(x.path(), nil)
	if err != nil {
		return fmt.Errorf("open dedup db: %w", err)
	}
	if err := projections.CheckBolt(db); err != nil {
		db.Close()
		return fmt.Errorf("open dedup db: %w", err)
	}
	stale, marked := false, false
	if err := db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		// A flush that did not finish left part of its writes (pending.go).
		stale = meta != nil && (!bytes.Equal(meta.Get(keyVersion), versionTag()) || meta.Get(keyFlushing) != nil)
		marked = meta != nil && meta.Get(keyBulk) != nil
		return nil
	}); err != nil {
		db.Close()
		return fmt.Errorf("open dedup db: %w", err)
	}
	if marked && !stale {
		// A bulk build's runs, not merged (runs.go).
		if err := settleOnOpen(db, x.runsPath()); errors.Is(err, errRunsUnusable) {
			stale = true
		} else if err != nil {
			db.Close()
			return fmt.Errorf("open dedup db: %w", err)
		}
	}
	// Runs of a build whose merge committed, or of a dropped file.
	if err := os.Remove(x.runsPath()); err != nil && !os.IsNotExist(err) {
		db.Close()
		return fmt.Errorf("open dedup db: %w", err)
	}
	if stale {
		// A new file, not dropped buckets (their pages would keep the old state).
		db.Close()
		if err := os.Remove(x.path()); err != nil {
			return fmt.Errorf("open dedup db: %w", err)
		}
		if db, err = projections.OpenBolt(x.path(), nil); err != nil {
			return fmt.Errorf("open dedup db: %w", err)
		}
	}
	x.cp = projections.Checkpoint{}
	// Checked in a read transaction, written only when new: a process
	// that only reads writes nothing (a no-op bbolt commit still writes
	// and syncs two pages).
	fresh := false
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta != nil {
			for _, name := range allBuckets {
				if tx.Bucket(name) == nil {
					return fmt.Errorf("bucket %s missing: %w", name, ErrCorrupt)
				}
			}
			if b := meta.Get(keyCP); b != nil {
				if err := json.Unmarshal(b, &x.cp); err != nil {
					return fmt.Errorf("decode checkpoint: %w", err)
				}
			}
			return nil
		}
		fresh = true
		return nil
	})
	if err == nil && fresh {
		err = db.Update(x.initBuckets)
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("init dedup db: %w", err)
	}
	x.db = db
	x.ops = nil
	x.pend = newPending()
	x.diskCP = x.cp
	x.compacted = x.Size()
	return nil
}

// initBuckets creates a new database's buckets, checkpoint and version.
func (x *Index) initBuckets(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	cpb, err := json.Marshal(x.cp)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketMeta).Put(keyCP, cpb); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyVersion, versionTag())
}

// Name returns "dedup".
func (x *Index) Name() string { return Name }

// Version returns FormatVersion.
func (x *Index) Version() int { return FormatVersion }

// Checkpoint returns the last committed checkpoint.
func (x *Index) Checkpoint() (projections.Checkpoint, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return projections.Checkpoint{}, ErrClosed
	}
	return x.cp, nil
}

// applied is an event Apply buffered, with what its store's writes take
// from it alone: the content hash and the lookup key, computed in Apply,
// outside the lock and outside a bulk build's Commit, which holds a
// commit turn the other projections wait for.
type applied struct {
	ev     *log.Event
	hash   [HashLen]byte
	lookup []byte
}

func (a *applied) hashes(st *log.Store) {
	a.hash = Hash(st.Content)
	a.lookup = keyPrefix(st.Session, st.Role, st.Kind, a.hash)
}

// Apply buffers store, edit and tombstone events until Commit.
func (x *Index) Apply(ev *log.Event) error {
	a := applied{ev: ev}
	switch b := ev.Body.(type) {
	case *log.Store:
		a.hashes(b)
	case *log.Edit:
		a.hashes(&b.Store)
	case *log.Tombstone:
	default:
		a.ev = nil // not buffered
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if a.ev != nil {
		x.ops = append(x.ops, a)
	}
	return nil
}

func lenPrefix(s string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(s)))
	return append(b, s...)
}

// lookupLen is the length of a keys-bucket lookup prefix.
const lookupLen = 16

// keyPrefix is the keys-bucket prefix of (session, role, kind, hash): a
// hash of them, so that session and role are stored once, in the item.
func keyPrefix(session, role string, kind log.Kind, h [HashLen]byte) []byte {
	b := lenPrefix(session)
	b = append(b, lenPrefix(role)...)
	b = append(b, byte(kind))
	b = append(b, h[:]...)
	sum := sha256.Sum256(b)
	return sum[:lookupLen]
}

func docKey(parent string, index int) []byte {
	return binary.BigEndian.AppendUint32(lenPrefix(parent), uint32(index))
}

func encodeItem(it *Item) []byte {
	b := make([]byte, 0, 40+len(it.Session)+len(it.Role)+len(it.ChunkParent))
	b = append(b, byte(it.Kind))
	b = binary.AppendUvarint(b, it.Seq)
	b = append(b, it.Content[:]...)
	b = binary.AppendVarint(b, it.Time)
	b = binary.AppendUvarint(b, uint64(it.ChunkIndex))
	b = append(b, lenPrefix(it.Session)...)
	b = append(b, lenPrefix(it.Role)...)
	return append(b, lenPrefix(it.ChunkParent)...)
}

// decodeItemAt decodes the item stored under key k.
func decodeItemAt(k, v []byte) (*Item, error) {
	id, ok := projections.IDOfKey(k)
	if !ok {
		return nil, fmt.Errorf("item key %x: %w", k, ErrCorrupt)
	}
	return decodeItem(id, v)
}

func decodeItem(id string, b []byte) (*Item, error) {
	bad := fmt.Errorf("item %q: %w", id, ErrCorrupt)
	if len(b) < 1 {
		return nil, bad
	}
	it := &Item{ChunkID: id, Kind: log.Kind(b[0])}
	rest := b[1:]
	// Only shortest varints: a record decodes to one item and back.
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(rest)
		if k <= 0 || k != len(binary.AppendUvarint(nil, v)) {
			return 0, false
		}
		rest = rest[k:]
		return v, true
	}
	str := func() (string, bool) {
		n, ok := uv()
		if !ok || uint64(len(rest)) < n {
			return "", false
		}
		s := string(rest[:n])
		rest = rest[n:]
		return s, true
	}
	var ok bool
	if it.Seq, ok = uv(); !ok || len(rest) < HashLen {
		return nil, bad
	}
	copy(it.Content[:], rest)
	rest = rest[HashLen:]
	t, k := binary.Varint(rest)
	if k <= 0 || k != len(binary.AppendVarint(nil, t)) {
		return nil, bad
	}
	it.Time, rest = t, rest[k:]
	idx, ok := uv()
	if !ok || idx > 1<<31 {
		return nil, bad
	}
	it.ChunkIndex = int(idx)
	var ok1, ok2, ok3 bool
	it.Session, ok1 = str()
	it.Role, ok2 = str()
	it.ChunkParent, ok3 = str()
	if !ok1 || !ok2 || !ok3 || len(rest) != 0 {
		return nil, bad
	}
	return it, nil
}

// remove deletes a chunk and its index entries; it reports whether it was there.
func remove(w kv, id string) (bool, error) {
	raw := w.get(bItems, projections.IDKey(id))
	if raw == nil {
		return false, nil
	}
	it, err := decodeItem(id, raw)
	if err != nil {
		return false, err
	}
	if err := w.del(bKeys, append(keyPrefix(it.Session, it.Role, it.Kind, it.Content), projections.IDKey(id)...)); err != nil {
		return false, err
	}
	if it.ChunkParent != "" {
		dk := docKey(it.ChunkParent, it.ChunkIndex)
		if bytes.Equal(w.get(bDocs, dk), projections.IDKey(id)) {
			if err := w.del(bDocs, dk); err != nil {
				return false, err
			}
		}
	}
	return true, w.del(bItems, projections.IDKey(id))
}

// removeOlder removes chunk id if it was stored before seq: an edit's
// removes name the previous version's chunks, never a later one.
func removeOlder(w kv, id string, seq uint64) error {
	raw := w.get(bItems, projections.IDKey(id))
	if raw == nil {
		return nil
	}
	it, err := decodeItem(id, raw)
	if err != nil {
		return err
	}
	if it.Seq >= seq {
		return nil
	}
	_, err = remove(w, id)
	return err
}

// put stores st, of event a (a.hash is Hash(st.Content), a.lookup its
// keyPrefix).
func put(w kv, a applied, st *log.Store) error {
	if _, err := remove(w, st.ChunkID); err != nil {
		return err
	}
	it := &Item{ChunkID: st.ChunkID, Kind: st.Kind, Seq: a.ev.Seq, Content: a.hash,
		Time: st.Time, ChunkIndex: st.ChunkIndex, Session: st.Session, Role: st.Role, ChunkParent: st.ChunkParent}
	if err := w.put(bItems, projections.IDKey(it.ChunkID), encodeItem(it)); err != nil {
		return err
	}
	if err := w.put(bKeys, append(a.lookup[:lookupLen:lookupLen], projections.IDKey(it.ChunkID)...), nil); err != nil {
		return err
	}
	if it.ChunkParent != "" {
		return w.put(bDocs, docKey(it.ChunkParent, it.ChunkIndex), projections.IDKey(it.ChunkID))
	}
	return nil
}

// tombstone removes the chunks t targets; it reports whether any was there.
func tombstone(tx *bolt.Tx, t *log.Tombstone) (bool, error) {
	w := boltKV{tx}
	var ids []string
	ids = append(ids, t.Chunks...)
	if t.Session != "" || t.From != 0 || t.To != 0 {
		err := tx.Bucket(bucketItems).ForEach(func(k, v []byte) error {
			it, err := decodeItemAt(k, v)
			if err != nil {
				return err
			}
			if projections.TombstoneMatches(t, it.ChunkID, it.Session, it.Time) {
				ids = append(ids, it.ChunkID)
			}
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	any := false
	for _, id := range ids {
		ok, err := remove(w, id)
		if err != nil {
			return false, err
		}
		any = any || ok
	}
	return any, nil
}

// Commit applies the buffered events; reads see them at once, the file
// gets them in bulk (pending.go). A Commit with a tombstone writes
// everything to the file first, then its events and cp in one
// transaction, and compacts the file if the tombstone removed a chunk.
func (x *Index) Commit(cp projections.Checkpoint) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	tomb := false
	for _, a := range x.ops {
		_, t := a.ev.Body.(*log.Tombstone)
		tomb = tomb || t
	}
	if !tomb {
		err := projections.Guard(Name, func() error {
			return x.read(func(o overlay) error {
				for i := 0; i < len(x.ops); i += residentEvery {
					part := x.ops[i:min(i+residentEvery, len(x.ops))]
					if err := applyOps(x.writer(o), part); err != nil {
						return err
					}
					x.mapped(len(part))
				}
				return nil
			})
		})
		if err != nil {
			// pending may hold part of the batch: drop it all, back to the file.
			x.pend = newPending()
			x.cp = x.diskCP
			x.ops = nil
			return fmt.Errorf("commit dedup: %w", err)
		}
		x.ops = nil
		x.cp = cp
		if x.pend.n >= FlushEntries {
			if err := x.flush(); err != nil {
				return err
			}
		}
		return nil
	}
	// A tombstone scans the file's items: a bulk build's runs go in first.
	if err := x.settle(); err != nil {
		return err
	}
	if err := x.flush(); err != nil {
		return err
	}
	cpb, err := checkpointJSON(cp)
	if err != nil {
		return err
	}
	scrub := false
	err = projections.Guard(Name, func() error {
		return x.db.Update(func(tx *bolt.Tx) error {
			for i, a := range x.ops {
				if t, ok := a.ev.Body.(*log.Tombstone); ok {
					hit, err := tombstone(tx, t)
					if err != nil {
						return err
					}
					scrub = scrub || hit
					continue
				}
				if err := applyOps(x.writer(boltKV{tx}), x.ops[i:i+1]); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(keyCP, cpb)
		})
	})
	if err != nil {
		return fmt.Errorf("commit dedup: %w", err)
	}
	x.ops = nil
	x.cp = cp
	x.diskCP = cp
	if scrub {
		return x.compact()
	}
	return nil
}

// ReleaseMemory implements projections.MemoryReleaser.
func (x *Index) ReleaseMemory() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.closed {
		projections.ReleaseBolt(x.db)
	}
}

// residentFrom is the file size from which mapped drops the pages of
// the file that reads mapped (projections.DropResident): lookups of random hashes
// read pages everywhere in the file.
var residentFrom int64 = 32 << 20

func checkpointJSON(cp projections.Checkpoint) ([]byte, error) {
	b, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	return b, nil
}

// applyOps applies store and edit events in order.
func applyOps(w kv, ops []applied) error {
	for _, a := range ops {
		switch b := a.ev.Body.(type) {
		case *log.Store:
			if err := put(w, a, b); err != nil {
				return err
			}
		case *log.Edit:
			// The new version replaces the old one's hash: a later
			// store is compared with what the item says now.
			for _, id := range b.Removes {
				if err := removeOlder(w, id, a.ev.Seq); err != nil {
					return err
				}
			}
			if err := put(w, a, &b.Store); err != nil {
				return err
			}
		}
	}
	return nil
}

// Compact implements projections.Compacter: the file is rewritten tight
// after a bulk load (its hashes are random keys: pages split half full),
// once it has grown to compactGrowth times its size after the last
// compaction (or open). A catch-up of every append batch asks for it;
// rewriting the whole file each time cost a pass over it per batch. The
// pending writes (up to 150,000 keys) go to the file first, so the size
// compared is what the file holds once they are in.
func (x *Index) Compact() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if err := x.flush(); err != nil {
		return err
	}
	if float64(x.Size()) < compactGrowth*float64(x.compacted) {
		return nil
	}
	return x.compact()
}

// compactGrowth is how much the file grows between compactions.
// Its keys being random, every bulk write after a compaction splits the
// pages it fills again: rewriting it at each 1.5× cost a pass over three
// times the final file during a long append, at each 2× two.
const compactGrowth = 2

func (x *Index) compact() error {
	if err := x.db.Close(); err != nil {
		x.closed = true
		return fmt.Errorf("close dedup db for compaction: %w", err)
	}
	err := projections.CompactBolt(x.path(), &bolt.Options{})
	db, oerr := projections.OpenBolt(x.path(), nil)
	if oerr != nil {
		x.closed = true
		return errors.Join(err, fmt.Errorf("reopen dedup db: %w", oerr))
	}
	x.db = db
	x.compacted = x.Size()
	return err
}

// flushedView is a read of the file after pending (and a bulk build's
// runs) are written to it: for reads of the whole state.
func (x *Index) flushedView(fn func(tx *bolt.Tx) error) error {
	for {
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			return ErrClosed
		}
		err := x.settle()
		if err == nil {
			err = x.flush()
		}
		x.mu.Unlock()
		if err != nil {
			return err
		}
		x.mu.RLock()
		if x.pend.n > 0 || x.cp != x.diskCP || x.bulk != nil {
			x.mu.RUnlock() // a Commit came in between
			continue
		}
		defer x.mu.RUnlock()
		return projections.Guard(Name, func() error { return x.db.View(fn) })
	}
}

// view is a read of the last Commit: pending over the file (read).
func (x *Index) view(fn func(o overlay) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return ErrClosed
	}
	return projections.Guard(Name, func() error { return x.read(fn) })
}

// read calls fn with pending over the runs of a deferring bulk build
// over a read transaction of the file. The caller holds x.mu.
func (x *Index) read(fn func(o overlay) error) error {
	return x.db.View(func(tx *bolt.Tx) error {
		o := overlay{tx: tx, p: x.pend}
		if x.bulk == nil || x.bulk.n == 0 {
			return fn(o)
		}
		return x.bulk.db.View(func(stx *bolt.Tx) error {
			o.runs = runView{stx.Bucket(bucketRuns), x.bulk.n, x.bulk.items}
			return fn(o)
		})
	})
}

// Find returns the live chunks of session, role and kind whose content
// hash is h, in chunk-id order (as of the last Commit).
func (x *Index) Find(session, role string, kind log.Kind, h [HashLen]byte) ([]Item, error) {
	var out []Item
	err := x.view(func(o overlay) error {
		defer x.mapped(1)
		p := keyPrefix(session, role, kind, h)
		return o.scan(bKeys, p, func(k, _ []byte) error {
			it, err := decodeItemAt(k[len(p):], o.get(bItems, k[len(p):]))
			if err != nil {
				return err
			}
			if it.Session != session || it.Role != role || it.Kind != kind || it.Content != h {
				return nil // another key with the same lookup hash
			}
			out = append(out, *it)
			return nil
		})
	})
	return out, err
}

// Document returns the live chunks of the document parent in index order.
func (x *Index) Document(parent string) ([]Item, error) {
	var out []Item
	err := x.view(func(o overlay) error {
		p := lenPrefix(parent)
		return o.scan(bDocs, p, func(k, v []byte) error {
			if len(k) != len(p)+4 {
				return nil // a longer parent sharing the prefix bytes cannot: the length is in p
			}
			it, err := decodeItemAt(v, o.get(bItems, v))
			if err != nil {
				return err
			}
			out = append(out, *it)
			return nil
		})
	})
	return out, err
}

// Each calls fn with every live chunk in chunk-id order.
func (x *Index) Each(fn func(Item) error) error {
	return x.flushedView(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketItems).ForEach(func(k, v []byte) error {
			it, err := decodeItemAt(k, v)
			if err != nil {
				return err
			}
			return fn(*it)
		})
	})
}

// Digest is SHA-256 over the version and the items, keys and docs buckets
// in key order.
func (x *Index) Digest() ([32]byte, error) {
	h := sha256.New()
	h.Write(append(versionTag(), '\n'))
	err := x.flushedView(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketItems, bucketKeys, bucketDocs} {
			h.Write(lenPrefix(string(name)))
			if err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				h.Write(lenPrefix(string(k)))
				h.Write(lenPrefix(string(v)))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return [32]byte{}, err
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// Reset drops all state.
func (x *Index) Reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if err := x.closeRuns(); err != nil {
		return err
	}
	x.bulk, x.stored = nil, nil
	if err := x.db.Close(); err != nil {
		return fmt.Errorf("close dedup db for reset: %w", err)
	}
	if err := os.Remove(x.path()); err != nil && !os.IsNotExist(err) {
		x.closed = true
		return fmt.Errorf("remove dedup db: %w", err)
	}
	if err := x.open(); err != nil {
		x.closed = true
		return err
	}
	return nil
}

// Size is the file size in bytes.
func (x *Index) Size() int64 {
	fi, err := os.Stat(x.path())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Close writes what was committed to the file, drops uncommitted
// changes and closes the file.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	// A bulk build's runs stay, with the mark: the next Open merges them.
	ferr := x.flush()
	if x.bulk != nil && x.bulk.db != nil {
		if err := x.bulk.db.Close(); err != nil {
			ferr = errors.Join(ferr, fmt.Errorf("close dedup runs: %w", err))
		}
	}
	if err := x.db.Close(); err != nil {
		return errors.Join(ferr, fmt.Errorf("close dedup db: %w", err))
	}
	return ferr
}

// Contains reports whether chunk id is live here.
func (x *Index) Contains(id string) (bool, error) {
	found := false
	err := x.view(func(o overlay) error {
		found = o.get(bItems, projections.IDKey(id)) != nil
		return nil
	})
	return found, err
}

// Count is the number of live chunks.
func (x *Index) Count() (int, error) {
	n := 0
	err := x.flushedView(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketItems).Stats().KeyN
		return nil
	})
	return n, err
}

// Items returns the live chunks with the given ids, in the order given;
// ids not live here are left out.
func (x *Index) Items(ids []string) ([]Item, error) {
	out := make([]Item, 0, len(ids))
	err := x.view(func(o overlay) error {
		for _, id := range ids {
			v := o.get(bItems, projections.IDKey(id))
			if v == nil {
				continue
			}
			it, err := decodeItem(id, v)
			if err != nil {
				return err
			}
			out = append(out, *it)
		}
		return nil
	})
	return out, err
}
