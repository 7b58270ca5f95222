package timelines

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// The id index deferred during a bulk build (projections.BulkBuilder), as
// vectors defer theirs (projstd/vectorbulk.go).
//
// Every new chunk puts its id into "ids", and chunk ids are random: a
// flush of ten thousand new chunks inserts into most of the bucket's
// leaves, so each commit of a bulk build rewrote most of "ids" and its
// cost grew with the store. Between BeginBulk and EndBulk, a flush keeps
// the ids of the chunks it stores new in memory instead (bulk, a
// projections.PendingKeys: ~25 bytes a chunk), and the first flush that
// does so sets "ids_stale" in meta in the same transaction. EndBulk, or
// a read before it (snapshot), writes them in key order in transactions
// of bounded size (PendingKeys.Write), the last of which deletes the
// mark. Everything else a flush does to "ids" (a chunk in the bucket
// removed or stored again) is written as before, so a key is pending or
// in the bucket, never both.
//
// A process that stopped between (killed, or an error before EndBulk)
// leaves the mark, and the next Open rebuilds "ids" from the records and
// the time index (rebuildIDs): a record holds its chunk's time and order
// seq, and the time index maps those to the chunk id. What "ids" holds
// once current never depends on whether it was deferred, so the format,
// its version and the digest are unchanged. A binary from before the
// mark, opening a store left with it, would find chunks missing from
// "ids": its digest check reports that as damage, and the projection is
// rebuilt.

// kIDsStale, in meta, says "ids" lacks chunks that "chunks" holds.
var kIDsStale = []byte("ids_stale")

// stagedID is a flush's change to a pending id, applied to the pending
// set only once its transaction commits (a failed commit is retried with
// the same pending writes, and must find the set as it was).
type stagedID struct {
	seq uint64
	del bool
}

// chunkByID is getChunk as of the flush under way: during a bulk build
// the ids it staged and those pending are looked up before "ids". The
// caller holds t.mu.
func (t *Timelines) chunkByID(tx *bolt.Tx, id string) (*Chunk, error) {
	if t.bulk == nil || id == "" {
		return getChunk(tx, id)
	}
	seq, ok := t.pendingSeq(projections.IDKey(id))
	if !ok {
		return getChunk(tx, id)
	}
	if seq == nil {
		return nil, nil
	}
	return chunkAt(tx, id, seq)
}

// pendingSeq is the seq key of a pending id (nil if this flush removed
// it); ok is false when key is not pending.
func (t *Timelines) pendingSeq(key []byte) (seq []byte, ok bool) {
	if s, ok := t.staged[string(key)]; ok {
		if s.del {
			return nil, true
		}
		return be64(s.seq), true
	}
	if s, ok := t.bulk.Get(key); ok {
		return be64(s), true
	}
	return nil, false
}

// putID records that chunk key's live version is at seq: pending when it
// is pending already or new during a bulk build, else in "ids".
func (t *Timelines) putID(tx *bolt.Tx, key []byte, seq uint64, wasStored bool) error {
	if t.bulk != nil {
		if _, pending := t.pendingSeq(key); pending || !wasStored {
			t.staged[string(key)] = stagedID{seq: seq}
			return nil
		}
	}
	return tx.Bucket(bIDs).Put(key, be64(seq))
}

// markIDsStale sets the mark in the flush's transaction when it keeps
// the first ids out of "ids".
func (t *Timelines) markIDsStale(tx *bolt.Tx) error {
	if t.idsStale {
		return nil
	}
	for _, s := range t.staged {
		if !s.del {
			return tx.Bucket(bMeta).Put(kIDsStale, []byte{1})
		}
	}
	return nil
}

// deleteID removes chunk key from the pending ids or from "ids".
func (t *Timelines) deleteID(tx *bolt.Tx, key []byte) error {
	if t.bulk != nil {
		if seq, pending := t.pendingSeq(key); pending {
			if seq != nil {
				t.staged[string(key)] = stagedID{del: true}
			}
			return nil
		}
	}
	return tx.Bucket(bIDs).Delete(key)
}

// applyStaged moves a committed flush's id changes into the pending set.
func (t *Timelines) applyStaged() {
	if t.bulk == nil {
		clear(t.staged)
		return
	}
	for k, s := range t.staged {
		if s.del {
			t.bulk.Delete([]byte(k))
		} else {
			t.bulk.Set([]byte(k), s.seq)
			t.idsStale = true
		}
	}
	clear(t.staged)
}

// settleIDs brings "ids" current before a read of it outside a flush:
// the pending ids in key order, or a rebuild when the process that
// deferred them is gone or an EndBulk failed. The caller holds t.mu.
func (t *Timelines) settleIDs() error {
	if !t.idsStale {
		return nil
	}
	if t.bulk == nil {
		return t.rebuildIDs()
	}
	err := t.bulk.WriteIndex(t.update, bIDs, be64, func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Delete(kIDsStale) })
	if err != nil {
		// The mark stays, and the pending ids are those "ids" still
		// lacks: a later settle goes on.
		return fmt.Errorf("write timelines id index: %w", err)
	}
	t.idsStale = false
	return nil
}

// rebuildIDs rewrites "ids" from the chunk records and the time index,
// and deletes the mark, in one transaction (Open, after a bulk build
// that did not end).
func (t *Timelines) rebuildIDs() error {
	err := t.update(func(tx *bolt.Tx) error {
		tb := tx.Bucket(bTime)
		// The keys are copied into one arena: the bucket they are read
		// from is the database's mapping, which the puts below may grow.
		var es []projections.KeyValue
		var arena []byte
		err := tx.Bucket(bChunks).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("chunk record key %x: %w", k, ErrCorrupt)
			}
			seq := binary.BigEndian.Uint64(k)
			c, err := decodeChunk("", v)
			if err != nil {
				return fmt.Errorf("chunk record at seq %d: %w", seq, err)
			}
			if c.Seq != seq {
				return fmt.Errorf("chunk record of seq %d at seq %d: %w", c.Seq, seq, ErrCorrupt)
			}
			key := tb.Get(ordKey(c.Time, c.OrderSeq()))
			if _, ok := projections.IDOfKey(key); !ok {
				return fmt.Errorf("chunk record at seq %d: %w: not in the time index", seq, ErrCorrupt)
			}
			es = append(es, projections.KeyValue{Key: key, Value: seq})
			arena = append(arena, key...)
			return nil
		})
		if err != nil {
			return err
		}
		err = projections.RewriteBucket(tx, bIDs, es, arena, be64, func(a, b uint64) error {
			return fmt.Errorf("chunk records at seqs %d and %d hold one chunk: %w", a, b, ErrCorrupt)
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(kIDsStale)
	})
	if err != nil {
		return fmt.Errorf("rebuild timelines id index: %w", err)
	}
	t.idsStale = false
	return nil
}
