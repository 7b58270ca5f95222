package projstd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
// bucket maps a slot, uint64 BE, to the chunk's key; the chunk's value in
// "vecs" names its slot), so the file is a function of the operation
// sequence, not of commit boundaries. A re-stored chunk keeps its slot; a
// removed chunk's slot is zeroed (nothing of its vector stays) and not
// reused until Compact drops the dead slots (vectorcompact.go), which
// renumbers the live ones in order and moves them to scan.1.bin (and back
// to scan.bin at the next compaction; the meta bucket's "scanfile" names
// scan.1.bin, absent for scan.bin). The meta bucket's "slotnext" is the
// number of slots committed.
//
// A Commit writes its slots, then syncs the file, then commits the
// database: the file is never behind the database. Bytes beyond slotnext
// (a crash before the database commit) are not read and are overwritten by
// the next Commit, which allocates the same slots again; a slot zeroed or
// rewritten for a commit that did not happen is written again when the
// catch-up repeats those operations. Digest checks every slot against the
// vectors (verify reads it whole); opening checks the header and the size.
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

// openScanFile opens scan.bin (creating it with its header when no slot
// is committed) and checks its header and size against slotnext; a file
// of the other slot file name is what a compaction left behind
// (vectorcompact.go) and is removed.
func (v *VectorProjection) openScanFile() error {
	if v.scanFile == "" {
		v.scanFile = scanFileName
	}
	other := filepath.Join(v.dir, otherScanFile(v.scanFile))
	if err := os.Remove(other); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open vector scan file: %w", err)
	}
	path := filepath.Join(v.dir, v.scanFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open vector scan file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < scanHeader && v.next == 0 {
		if err = f.Truncate(0); err == nil {
			_, err = f.WriteAt(v.scanHeaderBytes(), 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			fi, err = f.Stat()
		}
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("open vector scan file: %w", err)
	}
	h := make([]byte, scanHeader)
	if _, err := f.ReadAt(h, 0); err != nil || !bytes.Equal(h, v.scanHeaderBytes()) {
		f.Close()
		return fmt.Errorf("open vector scan file: header %x: %w", h, errVectorsCorrupt)
	}
	if want := scanHeader + int64(v.next)*int64(vector.SlotLen(v.opts.Embedder.Dim())); fi.Size() < want {
		f.Close()
		return fmt.Errorf("open vector scan file: %d bytes, %d slots need %d: %w", fi.Size(), v.next, want, errVectorsCorrupt)
	}
	v.sf = f
	return nil
}

// slotWrite is a slot's new bytes (nil: zeroed), with the stored vector
// record and the chunk key they code (resident slots keep both).
type slotWrite struct {
	slot uint64
	b    []byte
	rec  []byte
	key  []byte
}

// writeSlots writes ws in order and syncs the file.
func (v *VectorProjection) writeSlots(ws []slotWrite) error {
	if len(ws) == 0 {
		return nil
	}
	sl := int64(vector.SlotLen(v.opts.Embedder.Dim()))
	zero := make([]byte, sl)
	// Runs of consecutive slots (a catch-up's new vectors) go in one
	// write.
	var run []byte
	var at int64 = -1
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		_, err := v.sf.WriteAt(run, scanHeader+at*sl)
		run = run[:0]
		return err
	}
	for _, w := range ws {
		b := w.b
		if b == nil {
			b = zero
		}
		s := int64(w.slot)
		if len(run) > 0 && s == at+int64(len(run))/sl && len(run) < 1<<20 {
			run = append(run, b...)
			continue
		}
		if err := flush(); err != nil {
			return fmt.Errorf("write vector scan file: %w", err)
		}
		at = s
		run = append(run, b...)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write vector scan file: %w", err)
	}
	if err := v.sf.Sync(); err != nil {
		return fmt.Errorf("sync vector scan file: %w", err)
	}
	return nil
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
			sb, vb := tx.Bucket(bSlots), tx.Bucket(bVecs)
			hits, err = vector.ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
				vec := make([]float32, dim)
				for _, c := range cands {
					key := sb.Get(slotKey(c.Slot))
					id, ok := projections.IDOfKey(key)
					if !ok {
						return fmt.Errorf("vector slot %d: no chunk: %w", c.Slot, errVectorsCorrupt)
					}
					val := vb.Get(key)
					if val == nil {
						return fmt.Errorf("vector slot %d: chunk %q not stored: %w", c.Slot, id, errVectorsCorrupt)
					}
					rec, _, err := splitValue(val, dim)
					if err != nil {
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
// the database (no index is loaded: at a million chunks the exact index
// would hold 1.9 GB), after checking scan.bin against them: every
// committed slot holds the code slot of its chunk's stored vector, or
// zeros if no chunk names it, and every chunk names its slot.
func (v *VectorProjection) storedDigest() ([32]byte, error) {
	dim := v.opts.Embedder.Dim()
	sl := vector.SlotLen(dim)
	var d [32]byte
	err := projections.Guard("vectors", func() error {
		return v.db.View(func(tx *bolt.Tx) error {
			sb, vb := tx.Bucket(bSlots), tx.Bucket(bVecs)
			vec := make([]float32, dim)
			want := make([]byte, sl)
			zero := make([]byte, sl)
			got := make([]byte, 256*sl)
			var ids []string
			c := sb.Cursor()
			k, key := c.First()
			for b := uint64(0); b < v.next; b += 256 {
				m := min(v.next-b, 256)
				if _, err := v.sf.ReadAt(got[:int(m)*sl], scanHeader+int64(b)*int64(sl)); err != nil {
					return fmt.Errorf("read vector scan file: %w: %w", err, errVectorsCorrupt)
				}
				for s := b; s < b+m; s++ {
					g := got[int(s-b)*sl : int(s-b+1)*sl]
					if k == nil || binary.BigEndian.Uint64(k) != s {
						if !bytes.Equal(g, zero) {
							return fmt.Errorf("vector slot %d: no chunk, not empty: %w", s, errVectorsCorrupt)
						}
						continue
					}
					id, ok := projections.IDOfKey(key)
					val := vb.Get(key)
					if !ok || val == nil {
						return fmt.Errorf("vector slot %d: chunk %x not stored: %w", s, key, errVectorsCorrupt)
					}
					rec, raw, err := splitValue(val, dim)
					if err != nil {
						return err
					}
					cm, err := decodeMeta(raw)
					if err != nil {
						return err
					}
					if cm.slot != s {
						return fmt.Errorf("chunk %q names slot %d, slot %d names it: %w", id, cm.slot, s, errVectorsCorrupt)
					}
					if err := decodeVec(rec, vec); err != nil {
						return err
					}
					if err := vector.EncodeSlot(want, vec); err != nil {
						return fmt.Errorf("vector of %q: %w: %w", id, err, errVectorsCorrupt)
					}
					if !bytes.Equal(g, want) {
						return fmt.Errorf("vector slot %d of %q differs from the stored vector: %w", s, id, errVectorsCorrupt)
					}
					ids = append(ids, id)
					k, key = c.Next()
				}
			}
			if k != nil {
				return fmt.Errorf("vector slot %d beyond the %d committed: %w", binary.BigEndian.Uint64(k), v.next, errVectorsCorrupt)
			}
			if n := vb.Stats().KeyN; n != len(ids) || n != v.live {
				return fmt.Errorf("%d chunks, %d slots, %d live recorded: %w", n, len(ids), v.live, errVectorsCorrupt)
			}
			sort.Strings(ids)
			var err error
			d, err = vector.DigestEach(dim, ids, func(id string, dst []float32) error {
				val := vb.Get(projections.IDKey(id))
				if val == nil {
					return fmt.Errorf("vector of %q: %w", id, errVectorsCorrupt)
				}
				return decodeVecRecord(val, dst)
			})
			return err
		})
	})
	if err != nil {
		return d, v.readDamage(err)
	}
	return d, nil
}
