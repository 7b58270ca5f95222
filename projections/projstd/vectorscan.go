package projstd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
)

// scan.bin: every stored vector as a code slot (vector.EncodeSlot), the
// form exact search scans, back to back after a 16-byte header:
//
//	header = "UCLVSCAN" ‖ version uint16 LE = 1 ‖ 0 uint16 ‖ dim uint32 LE
//	slot s at 16 + s·(8 + dim)
//
// Slots are numbered in the order vectors are first stored (the "slots"
// bucket maps a slot, uint64 BE, to the chunk's key and metadata; "ids"
// maps the chunk's key to its slot; recs.bin holds the stored vector
// record at the same slot, vectorrecs.go), so the file is a function of the operation
// sequence, not of commit boundaries. A re-stored chunk keeps its slot; a
// removed chunk's slot is zeroed (nothing of its vector stays) and not
// reused until Compact drops the dead slots (vectorcompact.go), which
// renumbers the live ones in order and moves them to scan.1.bin (and back
// to scan.bin at the next compaction; the meta bucket's "scanfile" names
// scan.1.bin, absent for scan.bin). The meta bucket's "slotnext" is the
// number of slots committed.
//
// A Commit writes its slots (and records), then syncs the files, then
// commits the database: the files are never behind the database. Bytes beyond slotnext
// (a crash before the database commit) are not read and are overwritten by
// the next Commit, which allocates the same slots again; a slot zeroed or
// rewritten for a commit that did not happen is written again when the
// catch-up repeats those operations. Digest checks every slot against the
// stored records (verify reads both files whole); opening checks the
// headers and the sizes.
//
// A search reads the file in blocks (vector.ScanSlots) with pread, never
// mapped: at a million 384-d chunks the file is 392 MB, and a process that
// answers one query keeps a few blocks of it, not the file, in memory. A
// process that searches again keeps the slots in memory instead, when
// they fit (vectorresident.go). (Mapped or read, a full scan at a million
// costs about the same CPU: 387 MB go through memory either way, 50–80
// ms here, measured.)

const (
	scanFileName = "scan.bin"
	scanMagic    = "UCLVSCAN"
	scanVersion  = 1
	scanHeader   = 16
)

var (
	bSlots = []byte("slots")
	kNext  = []byte("slotnext")
)

func slotKey(s uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], s)
	return k[:]
}

func (v *VectorProjection) scanHeaderBytes() []byte {
	h := make([]byte, scanHeader)
	copy(h, scanMagic)
	binary.LittleEndian.PutUint16(h[8:], scanVersion)
	binary.LittleEndian.PutUint32(h[12:], uint32(v.opts.Embedder.Dim()))
	return h
}

// slotWrite is a slot's new bytes (nil: zeroed), with the stored vector
// record and the chunk key they code (resident slots keep both).
type slotWrite struct {
	slot uint64
	b    []byte
	rec  []byte
	key  []byte
}

// writeSlots writes ws in order to scan.bin (the codes) and recs.bin (the
// records) and syncs both.
func (v *VectorProjection) writeSlots(ws []slotWrite) error {
	if len(ws) == 0 {
		return nil
	}
	dim := v.opts.Embedder.Dim()
	if err := writeRuns(v.sf, ws, int64(vector.SlotLen(dim)), func(w slotWrite) []byte { return w.b }); err != nil {
		return fmt.Errorf("write vector scan file: %w", err)
	}
	if err := writeRuns(v.rf, ws, int64(recLen(dim)), func(w slotWrite) []byte { return w.rec }); err != nil {
		return fmt.Errorf("write vector records: %w", err)
	}
	if err := v.sf.Sync(); err != nil {
		return fmt.Errorf("sync vector scan file: %w", err)
	}
	if err := v.rf.Sync(); err != nil {
		return fmt.Errorf("sync vector records: %w", err)
	}
	return nil
}

// writeRuns writes each write's bytes of size sl (what of gives; nil:
// zeros) at its slot of f, runs of consecutive slots (a catch-up's new
// vectors) in one write.
func writeRuns(f *os.File, ws []slotWrite, sl int64, of func(slotWrite) []byte) error {
	zero := make([]byte, sl)
	var run []byte
	var at int64 = -1
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		_, err := f.WriteAt(run, scanHeader+at*sl)
		run = run[:0]
		return err
	}
	for _, w := range ws {
		b := of(w)
		if b == nil {
			b = zero
		}
		if int64(len(b)) != sl {
			return fmt.Errorf("slot %d: %d bytes, want %d", w.slot, len(b), sl)
		}
		s := int64(w.slot)
		if len(run) > 0 && s == at+int64(len(run))/sl && len(run) < 1<<20 {
			run = append(run, b...)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		at = s
		run = append(run, b...)
	}
	return flush()
}

// scanSearch is exact search over scan.bin: the candidate slots, then
// their stored vectors scored as the exact index scores them (the same
// hits as the loaded vector.Exact). A damaged file or record is damage.
func (v *VectorProjection) scanSearch(q []float32, k int) ([]vector.Hit, error) {
	dim := v.opts.Embedder.Dim()
	var hits []vector.Hit
	err := projections.Guard("vectors", func() error {
		cands, err := vector.ScanSlots(q, dim, k, v.next, v.sf, scanHeader)
		if errors.Is(err, vector.ErrSlotFile) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("search vectors: %w: %w", err, errVectorsCorrupt)
		}
		if err != nil {
			return err
		}
		if len(cands) == 0 {
			return nil
		}
		return v.db.View(func(tx *bolt.Tx) error {
			sb := tx.Bucket(bSlots)
			rec := make([]byte, recLen(dim))
			hits, err = vector.ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
				vec := make([]float32, dim)
				for _, c := range cands {
					val := sb.Get(slotKey(c.Slot))
					if val == nil {
						return fmt.Errorf("vector slot %d: no chunk: %w", c.Slot, errVectorsCorrupt)
					}
					key, _, err := splitChunk(val)
					if err != nil {
						return err
					}
					id, ok := projections.IDOfKey(key)
					if !ok {
						return fmt.Errorf("vector slot %d: chunk key %x: %w", c.Slot, key, errVectorsCorrupt)
					}
					if err := v.readRec(c.Slot, rec); err != nil {
						return err
					}
					if err := decodeVec(rec, vec); err != nil {
						return err
					}
					if err := fn(id, vec, recCodes(rec)); err != nil {
						return err
					}
				}
				return nil
			})
			return err
		})
	})
	if err != nil {
		return nil, v.readDamage(err)
	}
	return hits, nil
}

// storedDigest is the content digest of the stored vectors computed from
// the record file (no index is loaded: at a million chunks the exact index
// would hold 1.9 GB), after checking scan.bin, recs.bin and the database
// against each other: every committed slot holds the code slot of its
// record's vector, or zeros in both files if no chunk names it, and the
// chunk it names names it back in "ids".
func (v *VectorProjection) storedDigest() ([32]byte, error) {
	dim := v.opts.Embedder.Dim()
	sl, rl := vector.SlotLen(dim), recLen(dim)
	var d [32]byte
	err := projections.Guard("vectors", func() error {
		return v.db.View(func(tx *bolt.Tx) error {
			sb, ib := tx.Bucket(bSlots), tx.Bucket(bIDs)
			vec := make([]float32, dim)
			want := make([]byte, sl)
			zero := make([]byte, max(sl, rl))
			got := make([]byte, 256*sl)
			recs := v.newRecReader(256)
			type idSlot struct {
				id   string
				slot uint64
			}
			var live []idSlot
			c := sb.Cursor()
			k, val := c.First()
			for b := uint64(0); b < v.next; b += 256 {
				m := min(v.next-b, 256)
				if _, err := v.sf.ReadAt(got[:int(m)*sl], scanHeader+int64(b)*int64(sl)); err != nil {
					return fmt.Errorf("read vector scan file: %w: %w", err, errVectorsCorrupt)
				}
				for s := b; s < b+m; s++ {
					g := got[int(s-b)*sl : int(s-b+1)*sl]
					rec, err := recs.rec(s)
					if err != nil {
						return err
					}
					if k == nil || binary.BigEndian.Uint64(k) != s {
						if !bytes.Equal(g, zero[:sl]) || !bytes.Equal(rec, zero[:rl]) {
							return fmt.Errorf("vector slot %d: no chunk, not empty: %w", s, errVectorsCorrupt)
						}
						continue
					}
					key, _, err := splitChunk(val)
					if err != nil {
						return err
					}
					id, ok := projections.IDOfKey(key)
					if !ok {
						return fmt.Errorf("vector slot %d: chunk key %x: %w", s, key, errVectorsCorrupt)
					}
					ref := ib.Get(key)
					if ref == nil {
						return fmt.Errorf("vector slot %d: chunk %q not indexed: %w", s, id, errVectorsCorrupt)
					}
					named, err := decodeSlotRef(ref)
					if err != nil {
						return err
					}
					if named != s {
						return fmt.Errorf("chunk %q names slot %d, slot %d names it: %w", id, named, s, errVectorsCorrupt)
					}
					if err := decodeVec(rec, vec); err != nil {
						return err
					}
					if err := codeRec(want, rec); err != nil {
						return fmt.Errorf("vector of %q: %w: %w", id, err, errVectorsCorrupt)
					}
					if !bytes.Equal(g, want) {
						return fmt.Errorf("vector slot %d of %q differs from the stored vector: %w", s, id, errVectorsCorrupt)
					}
					live = append(live, idSlot{id, s})
					k, val = c.Next()
				}
			}
			if k != nil {
				return fmt.Errorf("vector slot %d beyond the %d committed: %w", binary.BigEndian.Uint64(k), v.next, errVectorsCorrupt)
			}
			if n := ib.Stats().KeyN; n != len(live) || n != v.live {
				return fmt.Errorf("%d chunks, %d slots, %d live recorded: %w", n, len(live), v.live, errVectorsCorrupt)
			}
			// The digest reads the vectors in id order (ContentDigest
			// sorts the ids it is given and asks for them in that order).
			sort.Slice(live, func(i, j int) bool { return live[i].id < live[j].id })
			ids := make([]string, len(live))
			for i, x := range live {
				ids[i] = x.id
			}
			one := v.newRecReader(1)
			i := 0
			var err error
			d, err = vector.DigestEach(dim, ids, func(id string, dst []float32) error {
				if i >= len(live) || live[i].id != id {
					return fmt.Errorf("digest: vector of %q asked out of order", id)
				}
				rec, err := one.rec(live[i].slot)
				i++
				if err != nil {
					return err
				}
				return decodeVec(rec, dst)
			})
			return err
		})
	})
	if err != nil {
		return d, v.readDamage(err)
	}
	return d, nil
}
