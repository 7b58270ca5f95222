package projstd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
)

// Resident slots: what a long-lived process (ucl serve, ucl mcp, a socket
// owner) searches instead of scan.bin. A full search reads scan.bin in
// blocks through the kernel (vectorscan.go), and scores its candidates
// from the database and recs.bin: one search costs a read of the whole
// file and, a candidate, a bbolt lookup and a read of its record. That
// suits a process that searches once; in a server, at 10K chunks, it
// doubled the CPU time of a REST query (3.6 → 7–8 ms, format 6: the pread
// of scan.bin and the candidates' lookups were 38% of the query
// handler's profile).
//
// So the second full search of a process (the first is the one-shot
// CLI's only one) loads every committed slot and every slot's stored
// vector record (two reads, of scan.bin and recs.bin) and its chunk key
// (one pass over "slots") into memory, and every later
// search scans them there (vector.ScanSlotsMem), with the same hits as
// the file scan: the same slots, scored by the same functions, the
// candidates' records read from memory instead of the database. Commit
// keeps them in step (the slots it writes, the records and keys it
// stores); Reset drops them. They are held only while they fit in
// VectorOptions.ResidentBytes; past it (a load that would not fit, or a
// Commit that grows them beyond it) the process scans the file again.
type resident struct {
	dim    int
	slots  []byte   // scan.bin's committed slots, slot s at s·SlotLen(dim)
	recs   []byte   // slot s's stored vector record at s·(4+dim); zeros when empty
	keys   []byte   // the chunk keys, back to back, in slot order
	keyEnd []uint32 // slot s's key is keys[keyEnd[s-1]:keyEnd[s]] (empty: no chunk)
}

// DefaultResidentBytes is VectorOptions.ResidentBytes' default: 256 MiB
// holds about 320K vectors of 384 dimensions.
const DefaultResidentBytes = 256 << 20

// residentPerSlot is what a slot costs in memory (its code slot, its
// record, its offset and a chunk key of 17 bytes: a hex id's).
func residentPerSlot(dim int) int64 { return int64(vector.SlotLen(dim)) + 4 + int64(dim) + 4 + 17 }

// size is the bytes held.
func (r *resident) size() int64 {
	return int64(cap(r.slots) + cap(r.recs) + cap(r.keys) + 4*cap(r.keyEnd))
}

func (r *resident) n() uint64 { return uint64(len(r.keyEnd)) }

func (r *resident) key(s uint64) []byte {
	lo := uint32(0)
	if s > 0 {
		lo = r.keyEnd[s-1]
	}
	return r.keys[lo:r.keyEnd[s]]
}

// residentFits reports whether n slots may be held. Caller holds loadMu.
func (v *VectorProjection) residentFits(n uint64) bool {
	lim := v.opts.ResidentBytes
	return lim > 0 && int64(n)*residentPerSlot(v.opts.Embedder.Dim()) <= lim
}

// loadResident reads the committed slots and their records and keys. A
// record or slot that does not decode is damage.
func (v *VectorProjection) loadResident() (*resident, error) {
	dim := v.opts.Embedder.Dim()
	sl, rl := vector.SlotLen(dim), 4+dim
	n := v.next
	r := &resident{
		dim:    dim,
		slots:  make([]byte, int(n)*sl),
		recs:   make([]byte, int(n)*rl),
		keyEnd: make([]uint32, n),
	}
	err := projections.Guard("vectors", func() error {
		if _, err := v.sf.ReadAt(r.slots, scanHeader); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: %w", err, errVectorsCorrupt)
			}
			return fmt.Errorf("read vector scan file: %w", err)
		}
		if _, err := v.rf.ReadAt(r.recs, scanHeader); err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("%w: %w", err, errVectorsCorrupt)
			}
			return fmt.Errorf("read vector records: %w", err)
		}
		// The keys, from one pass over "slots" (slot order, so they are
		// laid out as they come).
		return v.db.View(func(tx *bolt.Tx) error {
			r.keys = make([]byte, 0, 17*v.live)
			next := uint64(0) // slots below next have their keyEnd
			err := tx.Bucket(bSlots).ForEach(func(k, val []byte) error {
				if len(k) != 8 {
					return fmt.Errorf("vector slot key %x: %w", k, errVectorsCorrupt)
				}
				slot := binary.BigEndian.Uint64(k)
				if slot >= n {
					return fmt.Errorf("vector slot %d beyond the %d committed: %w", slot, n, errVectorsCorrupt)
				}
				key, _, err := splitChunk(val)
				if err != nil {
					return err
				}
				for ; next < slot; next++ {
					r.keyEnd[next] = uint32(len(r.keys))
				}
				r.keys = append(r.keys, key...)
				r.keyEnd[slot] = uint32(len(r.keys))
				next = slot + 1
				return nil
			})
			for ; err == nil && next < n; next++ {
				r.keyEnd[next] = uint32(len(r.keys))
			}
			return err
		})
	})
	if err != nil {
		return nil, v.readDamage(err)
	}
	return r, nil
}

// apply brings r in step with a committed Commit's slot writes, in order:
// a write at slot n() adds a slot.
func (r *resident) apply(ws []slotWrite) error {
	sl, rl := vector.SlotLen(r.dim), 4+r.dim
	for _, w := range ws {
		switch {
		case w.slot < r.n():
			s := int(w.slot)
			if w.b == nil {
				clear(r.slots[s*sl : (s+1)*sl])
				clear(r.recs[s*rl : (s+1)*rl])
				continue // the key stays: a zero slot is never a candidate
			}
			copy(r.slots[s*sl:], w.b)
			copy(r.recs[s*rl:], w.rec)
		case w.slot == r.n() && w.b != nil && len(w.rec) == rl:
			r.slots = append(r.slots, w.b...)
			r.recs = append(r.recs, w.rec...)
			r.keys = append(r.keys, w.key...)
			r.keyEnd = append(r.keyEnd, uint32(len(r.keys)))
		default:
			return fmt.Errorf("resident vectors: write of slot %d beside %d slots", w.slot, r.n())
		}
	}
	return nil
}

// residentSearch is scanSearch over r: the same hits.
func (v *VectorProjection) residentSearch(r *resident, q []float32, k int) ([]vector.Hit, error) {
	dim := r.dim
	rl := 4 + dim
	var hits []vector.Hit
	err := projections.Guard("vectors", func() error {
		cands, err := vector.ScanSlotsMem(q, dim, k, r.slots)
		if errors.Is(err, vector.ErrSlotFile) {
			err = fmt.Errorf("search vectors: %w: %w", err, errVectorsCorrupt)
		}
		if err != nil || len(cands) == 0 {
			return err
		}
		hits, err = vector.ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
			vec := make([]float32, dim)
			for _, c := range cands {
				id, ok := projections.IDOfKey(r.key(c.Slot))
				if !ok {
					return fmt.Errorf("vector slot %d: no chunk: %w", c.Slot, errVectorsCorrupt)
				}
				rec := r.recs[int(c.Slot)*rl : int(c.Slot+1)*rl]
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
	if err != nil {
		return nil, v.readDamage(err)
	}
	return hits, nil
}
