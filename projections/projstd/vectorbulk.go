package projstd

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// The id index deferred during a bulk build (projections.BulkBuilder).
//
// Every new chunk puts its key into "ids", and chunk ids are random: a
// commit of ten thousand new chunks inserts into most of the bucket's
// leaves, so each commit of a bulk build rewrote most of "ids" and its
// cost grew with the store (deferring them took a 1M-chunk rebuild of
// the projection from 62 to 52 s of CPU, one pair). Between BeginBulk
// and EndBulk, Commit keeps the keys of the chunks it stores new in
// memory instead (projections.PendingKeys: about 25 bytes a chunk,
// pointer-free for the common hex ids), and the first commit that does
// so sets "ids_stale" in meta in the same transaction as its checkpoint.
// EndBulk writes them in key order, in transactions of bounded size, the
// last of which also deletes the mark. Everything else a commit does to
// "ids" (a chunk stored before the bulk build removed or stored again)
// is written as before.
//
// "ids" is exactly "slots" inverted (every live chunk's key → its slot),
// so a process that stopped between (killed, or an error before EndBulk)
// leaves the mark, and the next open rebuilds "ids" from "slots" before
// anything reads it (rebuildIDs). What "ids" holds once current never
// depends on whether it was deferred, so the format and its version are
// unchanged (as for summary's search_stale). A binary from before the
// mark, opening a store left with it, would find chunks missing from
// "ids": its digest check reports that as damage, and the projection is
// rebuilt.

// kIDsStale, in meta, says "ids" lacks chunks that "slots" holds.
var kIDsStale = []byte("ids_stale")

// BeginBulk implements projections.BulkBuilder: until EndBulk, Commit
// keeps the id index's new keys in memory (see above).
func (v *VectorProjection) BeginBulk() {
	if v.bulk == nil {
		v.bulk = projections.NewPendingKeys()
	}
}

// EndBulk implements projections.BulkBuilder: the keys the bulk build's
// commits kept in memory go into "ids", in key order, and the mark goes.
func (v *VectorProjection) EndBulk() error {
	b := v.bulk
	v.bulk = nil
	if !v.idsStale {
		return nil
	}
	if b == nil { // not in a bulk build: an earlier EndBulk failed
		return v.rebuildIDs()
	}
	if err := v.writeIDs(b); err != nil {
		// The mark stays, and v.bulk is gone: the next settle rebuilds
		// "ids" from "slots".
		return fmt.Errorf("end vectors bulk build: %w", err)
	}
	return nil
}

// writeIDs puts the keys b holds into "ids", in key order and in
// transactions of bounded size (PendingKeys.Write), and deletes the mark
// in the last. On a failure, b holds the keys "ids" still lacks.
func (v *VectorProjection) writeIDs(b *projections.PendingKeys) error {
	err := b.WriteIndex(v.db.Update, bIDs, slotRef, func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Delete(kIDsStale) })
	if err != nil {
		return err
	}
	v.idsStale = false
	return nil
}

// settleIDs brings "ids" current before a read of it outside Commit
// (compaction, the stored digest, scoring by id): a bulk build's keys,
// or a rebuild from "slots" when the process that deferred them is gone.
// A bulk build goes on deferring after a read settled it.
func (v *VectorProjection) settleIDs() error {
	if !v.idsStale {
		return nil
	}
	if v.bulk != nil {
		if err := v.writeIDs(v.bulk); err != nil {
			return fmt.Errorf("write vectors id index: %w", err)
		}
		return nil
	}
	return v.rebuildIDs()
}

// rebuildIDs rewrites "ids" from "slots" and deletes the mark, in one
// transaction (open, after a bulk build that did not end).
func (v *VectorProjection) rebuildIDs() error {
	err := v.db.Update(func(tx *bolt.Tx) error {
		// The keys are copied into one arena: the bucket they are read
		// from is the database's mapping, which the puts below may grow.
		var es []projections.KeyValue
		var arena []byte
		err := tx.Bucket(bSlots).ForEach(func(k, val []byte) error {
			s, _, _, err := decodeSlotEntry(k, val)
			if err != nil {
				return err
			}
			key, _, err := splitChunk(val)
			if err != nil {
				return err
			}
			es = append(es, projections.KeyValue{Key: key, Value: s})
			arena = append(arena, key...)
			return nil
		})
		if err != nil {
			return err
		}
		err = projections.RewriteBucket(tx, bIDs, es, arena, slotRef, func(a, b uint64) error {
			return fmt.Errorf("vector slots %d and %d hold one chunk: %w", a, b, errVectorsCorrupt)
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(kIDsStale)
	})
	if err != nil {
		return v.readDamage(fmt.Errorf("rebuild vector id index: %w", err))
	}
	v.idsStale = false
	return nil
}

// lookupSlot returns the slot of the chunk key as of the commit under
// way: its changes so far (staged, during a bulk build), the keys kept in
// memory, then "ids" (through ib, which holds the commit's other writes).
func (v *VectorProjection) lookupSlot(ib *projections.SortedWrites, staged map[string]int64, key []byte) (uint64, bool, error) {
	if v.bulk != nil {
		if s, ok := staged[string(key)]; ok {
			return uint64(s), s >= 0, nil
		}
		if s, ok := v.bulk.Get(key); ok {
			return s, true, nil
		}
	}
	old := ib.Get(key)
	if old == nil {
		return 0, false, nil
	}
	s, err := decodeSlotRef(old)
	return s, err == nil, err
}
