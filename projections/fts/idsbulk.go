package fts

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// The "ids" entries deferred during a first bulk build
// (projections.BulkBuilder).
//
// Chunk ids are random, so every commit of a bulk build put its ten
// thousand ids all over the "ids" bucket and rewrote nearly all of it
// (10,000 random keys over the ~1,400 16-KB pages of 1M chunks' 22 MB
// leave about 0.1% untouched) at every commit, with ~33 MB of bbolt's
// page buffers in the heap while it committed, the largest part of the
// build's live heap. Deferred, bench/peers' 1M build peaks at 161-163 MB
// instead of 205-207 (SQLite FTS5: 41 MB) and `project rebuild --only
// fts` of a 1M-turn store at 299 MB instead of 422, in 39 s instead of 69.
//
// Between BeginBulk (on an empty "ids" bucket: a first build, when
// Index.stored is kept) and EndBulk, a commit does not put the entry of a
// chunk it stores new into "ids": its record in "docs" (keyed by seq, so
// appended) already holds the chunk's key. The first commit that defers
// one writes the seq its window starts at under meta "ids_from" and sets
// meta "version" to deferredVersion, in its transaction. Every record in
// "docs" from that seq on is a live version whose entry may be missing;
// putting the entry of each (the others have that very entry already) is
// what settling does (settleIDs): at EndBulk, when the window spans
// maxDeferredIDs events, before Digest, and at Open when a process
// stopped in between (killed, or an error before EndBulk). Settling puts
// the entries in key order, in passes over "docs" that each take a range
// of keys, so a pass dirties its share of the bucket's pages only.
//
// The lookups of the build itself (a chunk stored again or deleted by a
// tombstone, Contains, Count, time filters, Mentioned) find a deferred
// entry in memory: deferredIDs keeps 8 bytes per entry, a 32-bit hash of
// the key and the offset of its seq in the window, in sorted runs; a
// candidate is confirmed by the key its "docs" record holds.
//
// What "ids" holds once settled never depends on whether entries were
// deferred, so the format version and the digest are unchanged. A binary
// from before it, opening a side table left with a window, finds
// deferredVersion, not its own version, and rebuilds the projection.
var keyIDsFrom = []byte("ids_from")

// deferredVersion is meta "version" while entries are deferred.
var deferredVersion = fmt.Sprintf("%d+ids_from", FormatVersion)

// maxDeferredIDs bounds a window, in events (its entries, 8 bytes each
// in memory, and the records settling reads are at most that many); a
// larger build settles each time a window reaches it. A variable for the
// tests.
var maxDeferredIDs = 1 << 20

// settlePiece is about how many entries one pass of settleIDs puts (a
// power of two number of passes, at most 256, one range of key bytes
// each). A variable for the tests.
var settlePiece = 1 << 17

// settleDropEvery is how many records a settling pass reads between two
// drops of side.db's resident pages.
const settleDropEvery = 4096

// idsHash is the 32-bit hash deferredIDs files a key under (not the
// key's first bytes: time-ordered or counting ids share them). A
// variable for the tests (a constant makes every key collide).
var idsHash = func(key []byte) uint32 { return uint32(maphash.Bytes(idsSeed, key)) }

var idsSeed = maphash.MakeSeed()

// maxMergedRun bounds the runs deferredIDs.commit merges.
const maxMergedRun = 1 << 16

// deletedOff marks an entry whose chunk was stored again or deleted.
const deletedOff = 1<<32 - 1

// deferredIDs is the in-memory index of a window's deferred entries, of
// the Commit under way (staged) and of those committed (runs).
type deferredIDs struct {
	from uint64     // the window's first seq; 0 when no window is open
	runs [][]uint64 // sorted by their high 32 bits: hash << 32 | seq - from
	adds []uint64   // staged by the Commit under way
	dels []uint64   // entries of runs it deleted (marked once it commits)
}

// fits reports whether seq can be deferred in the window.
func (d *deferredIDs) fits(seq uint64) bool {
	return d.from != 0 && seq >= d.from && seq-d.from < deletedOff
}

func (d *deferredIDs) entry(key []byte, seq uint64) uint64 {
	return uint64(idsHash(key))<<32 | (seq - d.from)
}

// find returns the seq of chunk key's committed deferred entry and the
// entry (ok false when it has none), confirming each candidate by the
// key of its record in docs.
func (d *deferredIDs) find(docs *bolt.Bucket, key []byte) (seq, e uint64, ok bool, err error) {
	if d == nil || d.from == 0 {
		return 0, 0, false, nil
	}
	h := uint64(idsHash(key))
	for _, run := range d.runs {
		i := sort.Search(len(run), func(i int) bool { return run[i]>>32 >= h })
		for ; i < len(run) && run[i]>>32 == h; i++ {
			off := run[i] & deletedOff
			if off == deletedOff {
				continue
			}
			s := d.from + off
			v := docs.Get(seqKey(s))
			if v == nil && slices.Contains(d.dels, run[i]) {
				continue // deleted by the Commit under way
			}
			if v == nil {
				return 0, 0, false, fmt.Errorf("deferred chunk entry at seq %d: %w: no record", s, ErrCorrupt)
			}
			k, _, err := splitRecord(v)
			if err != nil {
				return 0, 0, false, fmt.Errorf("deferred chunk entry at seq %d: %w", s, err)
			}
			if bytes.Equal(k, key) {
				return s, run[i], true, nil
			}
		}
	}
	return 0, 0, false, nil
}

// commit applies the staged changes of a Commit whose transaction
// committed: deleted entries marked, the added ones a new run; runs of
// similar size merge (as a binary counter carries) up to maxMergedRun
// entries, so a lookup searches a run per maxMergedRun entries at most
// (16 at 1M: lookups are rare, the filter answers most) and a merge
// never holds more than 2 × maxMergedRun entries twice (merging up to
// the window's size held 16 MB at the last merge of a 1M build).
func (d *deferredIDs) commit() {
	for _, e := range d.dels {
		h := e >> 32
		for _, run := range d.runs {
			i := sort.Search(len(run), func(i int) bool { return run[i]>>32 >= h })
			for ; i < len(run) && run[i]>>32 == h; i++ {
				if run[i] == e {
					run[i] |= deletedOff
				}
			}
		}
	}
	if len(d.adds) > 0 {
		run := slices.Clone(d.adds)
		slices.Sort(run)
		d.runs = append(d.runs, run)
		for k := len(d.runs); k >= 2 && len(d.runs[k-2]) <= 2*len(d.runs[k-1]) &&
			len(d.runs[k-2])+len(d.runs[k-1]) <= maxMergedRun; k = len(d.runs) {
			d.runs = append(d.runs[:k-2], mergeRuns(d.runs[k-2], d.runs[k-1]))
		}
	}
	d.unstage()
}

// mergeRuns merges two runs by their high 32 bits.
func mergeRuns(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0]>>32 < a[0]>>32 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// unstage drops the staged changes (their transaction rolled back).
func (d *deferredIDs) unstage() { d.adds, d.dels = d.adds[:0], d.dels[:0] }

// clear closes the window (settled, or the side table reset).
func (d *deferredIDs) clear() {
	d.from, d.runs = 0, nil
	d.unstage()
}

// openWindow starts a window at seq from in tx: the mark and the version
// a binary that cannot settle rejects.
func openWindow(tx *bolt.Tx, from uint64) error {
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyIDsFrom, seqKey(from)); err != nil {
		return err
	}
	return meta.Put(keyVersion, []byte(deferredVersion))
}

// windowFrom returns the seq of the open window in tx (0: none).
func windowFrom(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil || string(meta.Get(keyVersion)) != deferredVersion {
		return 0, nil
	}
	v := meta.Get(keyIDsFrom)
	if len(v) != 8 || binary.BigEndian.Uint64(v) == 0 {
		return 0, fmt.Errorf("%w: deferred ids mark of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// settleIDs puts into "ids" the entry of every record in "docs" from seq
// from on, and closes the window, in passes: pass p of n takes the hex
// ids whose first byte falls in the p-th of n ranges (other keys in the
// last), so it dirties about 1/n of the bucket's pages. The last pass
// removes the mark. A pass that fails leaves the mark, and settling
// again is idempotent. entries bounds the records (windowEvents): the
// passes are planned on it.
func settleIDs(db *bolt.DB, from uint64, entries int) error {
	passes := 1
	for passes < 256 && passes*settlePiece < entries {
		passes *= 2
	}
	part := func(key []byte) int {
		if !grouped(key) {
			return passes - 1
		}
		return int(key[1]) * passes / 256
	}
	type entry struct {
		key []byte // cut from arena once the scan is done
		n   int    // the key's length
		seq uint64
	}
	var arena []byte
	var es []entry
	for p := 0; p < passes; p++ {
		err := db.Update(func(tx *bolt.Tx) error {
			arena, es = arena[:0], es[:0]
			c := tx.Bucket(bucketDocs).Cursor()
			read := 0
			for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
				// The pages read so far leave the resident set as the
				// scan goes (a 1M-chunk window's records are ~90 MB);
				// the mapping stays, and nothing here is written yet.
				if read++; read%settleDropEvery == 0 {
					projections.DropResident(db, tx.Size())
				}
				key, _, err := splitRecord(v)
				if err != nil {
					return fmt.Errorf("record at seq %x: %w", k, err)
				}
				if len(k) != 8 {
					return fmt.Errorf("record key %x: %w", k, ErrCorrupt)
				}
				if part(key) != p {
					continue
				}
				arena = append(arena, key...)
				es = append(es, entry{n: len(key), seq: binary.BigEndian.Uint64(k)})
			}
			off := 0
			for i := range es {
				es[i].key = arena[off : off+es[i].n : off+es[i].n]
				off += es[i].n
			}
			projections.SortByKey(es, func(e *entry) []byte { return e.key })
			idx := tx.Bucket(bucketIDs)
			for i, e := range es {
				if i > 0 && bytes.Equal(es[i-1].key, e.key) {
					return fmt.Errorf("chunk key %x: %w: two live records", e.key, ErrCorrupt)
				}
				if err := idsPut(idx, e.key, e.seq); err != nil {
					return err
				}
			}
			if p < passes-1 {
				return nil
			}
			meta := tx.Bucket(bucketMeta)
			if err := meta.Delete(keyIDsFrom); err != nil {
				return err
			}
			return meta.Put(keyVersion, []byte(fmt.Sprint(FormatVersion)))
		})
		if err != nil {
			return fmt.Errorf("settle deferred chunk entries: %w", err)
		}
		projections.ReleaseBolt(db) // the pages the puts read
	}
	return nil
}

// windowEvents bounds the records from seq from on at checkpoint cpSeq:
// one event stores at most one chunk (1 when the checkpoint is unknown:
// one pass over them all).
func windowEvents(cpSeq, from uint64) int {
	if cpSeq < from {
		return 1
	}
	return int(min(cpSeq+1-from, 1<<30))
}

// settleWindow settles the open window of a bulk build, if any. The
// caller holds x.mu for writing.
func (x *Index) settleWindow() error {
	d := x.deferIDs
	if d == nil || d.from == 0 {
		return nil
	}
	x.endLookup() // a write may grow the mapping, which waits for readers
	if err := settleIDs(x.db, d.from, windowEvents(x.cp.Seq, d.from)); err != nil {
		return err
	}
	d.clear()
	return nil
}

// liveEntry returns chunk key's "ids" value as of the last Commit (nil
// when it has no live version): from "ids" or, during a bulk build, from
// the window's deferred entries. Callers hold x.mu.
func (x *Index) liveEntry(tx *bolt.Tx, key []byte) ([]byte, error) {
	v, err := idsGet(tx.Bucket(bucketIDs), key)
	if v != nil || err != nil || x.deferIDs == nil {
		return v, err
	}
	seq, _, ok, err := x.deferIDs.find(tx.Bucket(bucketDocs), key)
	if !ok || err != nil {
		return nil, err
	}
	return seqKey(seq), nil
}
