package projstd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
)

// Dropping dead slots. A removed chunk's slot is zeroed and never reused
// (vectorscan.go), so a store that deletes keeps scanning, and keeping,
// slots of nothing. Compact (after a bulk catch-up, Compacter) drops them:
// the live slots keep their order and are numbered from 0, which is the
// order their chunks were first stored in among the live ones. The result
// is a function of the live set and that order, so two stores with the
// same events have the same scan file after Compact, whenever they were
// compacted before (TestCompactDropsDeadSlots).
//
// The slots move to the other slot file name (scan.bin ↔ scan.1.bin),
// their records to the other record file (recs.bin ↔ recs.1.bin,
// vectorrecs.go), and a copy of vectors.db is written with the new
// numbering ("slots" keys, "ids" values) and the
// meta key "scanfile" naming that file (absent: scan.bin); the copy then
// replaces vectors.db with one rename, the switch. A crash before it
// leaves the old database naming the old file; after it, the new one
// naming the new files; opening removes the files of the other names.

var kScanFile = []byte("scanfile")

const scanFileAlt = "scan.1.bin"

// otherScanFile is the slot file name a compaction writes to.
func otherScanFile(name string) string {
	if name == scanFileAlt {
		return scanFileName
	}
	return scanFileAlt
}

// compactSlots drops the dead slots (see above). It returns false, and
// does nothing, when there are none or operations are pending; on true
// vectors.db was rewritten tight and reopened.
func (v *VectorProjection) compactSlots() (bool, error) {
	if v.next == uint64(v.live) || len(v.ops) > 0 {
		return false, nil
	}
	dim := v.opts.Embedder.Dim()
	sl := int64(vector.SlotLen(dim))
	// The live slots, ascending: slot olds[i] becomes slot i.
	olds := make([]uint64, 0, v.live)
	err := v.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bSlots).ForEach(func(k, _ []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("vector slot key %x: %w", k, errVectorsCorrupt)
			}
			olds = append(olds, binary.BigEndian.Uint64(k))
			return nil
		})
	})
	if err == nil && (len(olds) != v.live || (len(olds) > 0 && olds[len(olds)-1] >= v.next)) {
		err = fmt.Errorf("%d slots named, %d live, %d committed: %w", len(olds), v.live, v.next, errVectorsCorrupt)
	}
	if err != nil {
		return false, v.readDamage(fmt.Errorf("compact vector slots: %w", err))
	}
	newName := otherScanFile(v.scanFile)
	newPath := filepath.Join(v.dir, newName)
	newRecs := filepath.Join(v.dir, recsFileFor(newName))
	rm := func() {
		os.Remove(newPath)
		os.Remove(newRecs)
	}
	err = v.writeLiveSlots(newPath, v.sf, v.scanHeaderBytes(), olds, sl)
	if err == nil {
		err = v.writeLiveSlots(newRecs, v.rf, v.recsHeaderBytes(), olds, int64(recLen(dim)))
	}
	if err == nil {
		err = fsutil.SyncDir(v.dir)
	}
	if err != nil {
		rm()
		return false, err
	}
	dbPath := filepath.Join(v.dir, "vectors.db")
	tmp := dbPath + ".compact"
	if err := v.copyRenumbered(tmp, olds, newName); err != nil {
		os.Remove(tmp)
		rm()
		return false, err
	}
	// The switch.
	if err := v.db.Close(); err != nil {
		os.Remove(tmp)
		rm()
		return false, fmt.Errorf("close vectors db: %w", err)
	}
	err = os.Rename(tmp, dbPath)
	if err == nil {
		err = fsutil.SyncDir(v.dir)
	}
	db, oerr := projections.OpenBolt(dbPath, vectorBoltOptions)
	if oerr != nil {
		return false, errors.Join(err, fmt.Errorf("reopen vectors db: %w", oerr))
	}
	v.db = db
	if err != nil { // not switched: the old database and files stay
		os.Remove(tmp)
		rm()
		return false, fmt.Errorf("compact vector slots: %w", err)
	}
	oldFiles := []string{filepath.Join(v.dir, v.scanFile), filepath.Join(v.dir, recsFileFor(v.scanFile))}
	cerr := v.closeSlotFiles()
	v.scanFile, v.next = newName, uint64(v.live)
	v.res = nil // numbered the old way; the next search loads again
	for _, f := range oldFiles {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			cerr = errors.Join(cerr, err)
		}
	}
	if cerr != nil {
		return true, fmt.Errorf("compact vector slots: %w", cerr)
	}
	if err := v.openSlotFiles(); err != nil {
		return true, err
	}
	return true, nil
}

// writeLiveSlots writes a file at path holding header and then the slots
// olds (of sl bytes each) of the file src, in order, and syncs it.
func (v *VectorProjection) writeLiveSlots(path string, src *os.File, header []byte, olds []uint64, sl int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("compact vector slots: %w", err)
	}
	defer f.Close()
	out := append(make([]byte, 0, 1<<20+sl), header...)
	var at int64
	flush := func() error {
		_, err := f.WriteAt(out, at)
		at += int64(len(out))
		out = out[:0]
		return err
	}
	// The old file is read in blocks of consecutive slots.
	const block = 1024
	buf := make([]byte, block*sl)
	lo, hi := uint64(0), uint64(0) // slots [lo, hi) are in buf
	for _, s := range olds {
		if s >= hi {
			lo, hi = s, min(s+block, v.next)
			if _, err := src.ReadAt(buf[:int64(hi-lo)*sl], scanHeader+int64(lo)*sl); err != nil {
				return fmt.Errorf("compact vector slots: read slots %d..%d: %w", lo, hi, err)
			}
		}
		out = append(out, buf[int64(s-lo)*sl:int64(s-lo+1)*sl]...)
		if len(out) >= 1<<20 {
			if err := flush(); err != nil {
				return fmt.Errorf("compact vector slots: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("compact vector slots: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("compact vector slots: %w", err)
	}
	return nil
}

// copyRenumbered writes a tight copy of vectors.db at path (as
// projections.CompactBolt writes one) in which slot olds[i] is slot i:
// the "slots" keys, the "ids" values, "slotnext", and "scanfile" naming
// file.
func (v *VectorProjection) copyRenumbered(path string, olds []uint64, file string) error {
	os.Remove(path)
	var mapSize int
	if fi, err := os.Stat(filepath.Join(v.dir, "vectors.db")); err == nil {
		mapSize = int(fi.Size())
	}
	dst, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoGrowSync: true, InitialMmapSize: mapSize, PageSize: v.db.Info().PageSize})
	if err != nil {
		return fmt.Errorf("compact vector slots: %w", err)
	}
	renum := func(old uint64) (uint64, bool) {
		i := sort.Search(len(olds), func(i int) bool { return olds[i] >= old })
		return uint64(i), i < len(olds) && olds[i] == old
	}
	err = v.db.View(func(src *bolt.Tx) error {
		// Transactions of about 8 MB, as CompactBolt's.
		tx, err := dst.Begin(true)
		if err != nil {
			return err
		}
		defer func() {
			if tx != nil {
				tx.Rollback()
			}
		}()
		var size int
		put := func(bucket []byte, k, val []byte) error {
			if size > 8<<20 {
				if err := tx.Commit(); err != nil {
					return err
				}
				if tx, err = dst.Begin(true); err != nil {
					return err
				}
				size = 0
			}
			b, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			b.FillPercent = 1 // keys come in order
			size += len(k) + len(val)
			return b.Put(k, val)
		}
		for _, name := range buckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
			sb := src.Bucket(name)
			if sb == nil {
				return fmt.Errorf("vectors db: no bucket %q: %w", name, errVectorsCorrupt)
			}
			err := sb.ForEach(func(k, val []byte) error {
				switch {
				case bytes2(name, bMeta) && bytes2(k, kNext):
					var nx [8]byte
					binary.BigEndian.PutUint64(nx[:], uint64(len(olds)))
					val = nx[:]
				case bytes2(name, bMeta) && bytes2(k, kScanFile):
					return nil // written below
				case bytes2(name, bSlots):
					n, ok := renum(binary.BigEndian.Uint64(k))
					if !ok {
						return fmt.Errorf("vector slot %x not live: %w", k, errVectorsCorrupt)
					}
					k = slotKey(n)
				case bytes2(name, bIDs):
					s, err := decodeSlotRef(val)
					if err != nil {
						return err
					}
					n, ok := renum(s)
					if !ok {
						return fmt.Errorf("chunk %x names slot %d, not live: %w", k, s, errVectorsCorrupt)
					}
					val = slotRef(n)
				}
				return put(name, k, val)
			})
			if err != nil {
				return err
			}
		}
		if file != scanFileName {
			if err := put(bMeta, kScanFile, []byte(file)); err != nil {
				return err
			}
		}
		err = tx.Commit()
		tx = nil
		return err
	})
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return v.readDamage(fmt.Errorf("compact vector slots: %w", err))
	}
	return nil
}

func bytes2(a, b []byte) bool { return string(a) == string(b) }
