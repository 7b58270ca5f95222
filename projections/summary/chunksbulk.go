package summary

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// The chunk records deferred during a bulk build (projections.BulkBuilder).
//
// "chunks" is keyed by chunk id, and chunk ids are random: a commit of
// ten thousand new chunks inserts into most of the bucket's leaves, so
// each commit of a bulk build rewrote most of "chunks" and its cost grew
// with the store. Between BeginBulk and EndBulk, a commit puts the
// record of a chunk it stores new into "chunks_bulk" instead, keyed by
// its seq (the event that put it; one event puts one chunk), so the
// records are appended: seq(8, BE) → uvarint len ‖ IDKey(id) ‖ record.
// pend maps their ids to their seqs for the lookups of the build's own
// commits (the old version of a chunk stored again or removed, the
// chunks of a block rebuilt), ~25 bytes a chunk. EndBulk moves them
// into "chunks" in key order, in transactions of bounded size, and
// deletes "chunks_bulk" in the last (writeChunks); reads of "chunks"
// meanwhile (Count, Contains, a tombstone by time range) look at both.
// Everything else a commit does to "chunks" (a chunk stored before the
// bulk build removed or stored again) is written as before, so a chunk's
// record is in one bucket, never both, but while EndBulk moves them.
//
// "chunks_bulk" holds everything settling needs, so a process that
// stopped between (killed, or an error before EndBulk) leaves it, and
// the next Open moves it. What "chunks" holds once settled never depends
// on whether it was deferred, so the format, its version and the digest
// are unchanged. A binary from before it, opening a store left with it,
// finds chunks missing from "chunks" when it rebuilds their block and
// fails the commit as corrupt; the projection is then rebuilt.
var bucketChunksBulk = []byte("chunks_bulk")

// stagedChunk is a commit's change to a deferred record, applied to
// pend only once its transaction commits (a failed commit is retried
// with the same ops, and must find pend as it was).
type stagedChunk struct {
	seq uint64
	del bool
}

// bulkRecord is a record a commit defers, put in seq order.
type bulkRecord struct {
	seq uint64
	v   []byte
}

// chunkRecords reads and writes the chunk records of one commit, with
// the deferred ones of a bulk build (x.pend, x.staged).
type chunkRecords struct {
	x      *Index
	chunks *bolt.Bucket
	defer_ *bolt.Bucket // chunks_bulk; nil outside a bulk build
	puts   []bulkRecord
}

func (x *Index) records(tx *bolt.Tx) (*chunkRecords, error) {
	r := &chunkRecords{x: x, chunks: tx.Bucket(bucketChunks)}
	if x.pend != nil {
		b, err := tx.CreateBucketIfNotExists(bucketChunksBulk)
		if err != nil {
			return nil, err
		}
		r.defer_ = b
	}
	return r, nil
}

// pendingSeq is the seq of a deferred record (ok false when key has
// none; del when this commit removed it).
func (r *chunkRecords) pendingSeq(key []byte) (seq uint64, del, ok bool) {
	if r.defer_ == nil {
		return 0, false, false
	}
	if s, ok := r.x.staged[string(key)]; ok {
		return s.seq, s.del, true
	}
	s, ok := r.x.pend.Get(key)
	return s, false, ok
}

// get returns the record of chunk key as of the commit under way (nil if
// absent) and whether it is deferred.
func (r *chunkRecords) get(key []byte) (rec []byte, deferred bool, err error) {
	if seq, del, ok := r.pendingSeq(key); ok {
		if del {
			return nil, true, nil
		}
		v := r.defer_.Get(seqKey(seq))
		k, rec, err := splitBulkRecord(v)
		if err != nil {
			return nil, true, fmt.Errorf("deferred chunk record at seq %d: %w", seq, err)
		}
		if !bytes.Equal(k, key) {
			return nil, true, fmt.Errorf("deferred chunk record at seq %d: %w: key %x, want %x", seq, ErrCorrupt, k, key)
		}
		return rec, true, nil
	}
	return r.chunks.Get(key), false, nil
}

// del removes the record of chunk key (deferred says where it is).
func (r *chunkRecords) del(key []byte, deferred bool) error {
	if !deferred {
		return r.chunks.Delete(key)
	}
	seq, _, _ := r.pendingSeq(key)
	r.x.staged[string(key)] = stagedChunk{del: true}
	return r.defer_.Delete(seqKey(seq))
}

// put stores rec as chunk key's record at seq: deferred during a bulk
// build unless the chunk's old record is in "chunks" (stored says so).
func (r *chunkRecords) put(key []byte, seq uint64, rec []byte, stored bool) error {
	if r.defer_ == nil || stored {
		return r.chunks.Put(key, rec)
	}
	v := binary.AppendUvarint(make([]byte, 0, 1+len(key)+len(rec)), uint64(len(key)))
	v = append(append(v, key...), rec...)
	r.puts = append(r.puts, bulkRecord{seq, v})
	r.x.staged[string(key)] = stagedChunk{seq: seq}
	return nil
}

// flush appends the deferred records in seq order: pages filled, not
// split in half.
func (r *chunkRecords) flush() error {
	if len(r.puts) == 0 {
		return nil
	}
	slices.SortFunc(r.puts, func(a, b bulkRecord) int { return cmp.Compare(a.seq, b.seq) })
	r.defer_.FillPercent = 1
	for _, p := range r.puts {
		if err := r.defer_.Put(seqKey(p.seq), p.v); err != nil {
			return err
		}
	}
	return nil
}

// applyStaged moves a committed transaction's changes into pend.
func (x *Index) applyStaged() {
	if x.pend != nil {
		for k, s := range x.staged {
			if s.del {
				x.pend.Delete([]byte(k))
			} else {
				x.pend.Set([]byte(k), s.seq)
			}
		}
	}
	clear(x.staged)
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// splitBulkRecord splits a chunks_bulk value into the chunk's key and
// its record.
func splitBulkRecord(v []byte) (key, rec []byte, err error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n == 0 || n > uint64(len(v)-w) {
		return nil, nil, fmt.Errorf("%w: deferred record of %d bytes", ErrCorrupt, len(v))
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}

// settleDeferred moves the records a bulk build stopped before its end
// (a crash) left in "chunks_bulk" into "chunks" (Open): their keys and
// seqs are read into a PendingKeys, as the build had them, and written
// as EndBulk writes them. A window that committed before the crash is
// written again, with the same records.
func settleDeferred(db *bolt.DB) error {
	p := projections.NewPendingKeys()
	err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketChunksBulk).ForEach(func(k, v []byte) error {
			key, _, err := splitBulkRecord(v)
			if err == nil && len(k) != 8 {
				err = fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			if err != nil {
				return fmt.Errorf("deferred chunk record %x: %w", k, err)
			}
			if _, ok := p.Get(key); ok {
				return fmt.Errorf("deferred chunk %x: %w: two records", key, ErrCorrupt)
			}
			p.Set(key, binary.BigEndian.Uint64(k))
			return nil
		})
	})
	if err != nil {
		return err
	}
	return writeChunks(db, p)
}

// writeChunks moves the deferred records p names (chunk key → seq) from
// "chunks_bulk" into "chunks" in key order, in transactions of bounded
// size (PendingKeys.Write), and deletes "chunks_bulk" in the last one. A
// record is in "chunks_bulk" until then: a window that commits puts a
// copy into "chunks" and drops its keys from p, so that p and "chunks"
// together hold each live chunk once (Count, Contains) if a later window
// fails; the next settle, which comes before any other commit, moves
// the rest, and Open after a crash moves all of them again.
//
// A window's records are found by one scan of "chunks_bulk" in seq
// order, not looked up one by one: the keys are random, so lookups in
// key order read most of the bucket's pages in each window through the
// file's mapping, and the kernel maps the pages around each one it
// reads: a 2M-chunk build's EndBulk left ~280 MB of the file resident,
// its peak RSS, and still ~150 MB when the lookups dropped the pages
// they read every 4,096 records. A scan
// drops the pages it read as it goes (the mapping stays in place: a
// write transaction does not remap before it commits, and the file does
// not change before then either, so a page dropped reads back the same).
// Each record taken is copied, so that the commit, which writes the
// records into their new pages, does not read them back in.
func writeChunks(db *bolt.DB, p *projections.PendingKeys) error {
	fill := projections.AppendFill()
	type entry struct {
		key, rec []byte // cut from arena once the scan is done
		klen, n  int    // the key's length, the key's and record's
		seq      uint64
	}
	var es []entry
	var arena []byte // reused: a window's puts are written by its commit
	return p.Write(db.Update, func(tx *bolt.Tx, kvs []projections.KeyValue) error {
		chunks, bb := tx.Bucket(bucketChunks), tx.Bucket(bucketChunksBulk)
		if bb == nil {
			return fmt.Errorf("%w: %d deferred chunks, no deferred records", ErrCorrupt, len(kvs))
		}
		fill(chunks)
		lo, hi := kvs[0].Key, kvs[len(kvs)-1].Key
		es, arena = es[:0], arena[:0]
		read := 0
		err := bb.ForEach(func(k, v []byte) error {
			if read++; read%settleDropEvery == 0 {
				projections.DropResident(db, tx.Size())
			}
			key, rec, err := splitBulkRecord(v)
			if err == nil && len(k) != 8 {
				err = fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			if err != nil {
				return fmt.Errorf("deferred chunk record %x: %w", k, err)
			}
			if bytes.Compare(key, lo) >= 0 && bytes.Compare(key, hi) <= 0 {
				arena = append(append(arena, key...), rec...)
				es = append(es, entry{klen: len(key), n: len(key) + len(rec), seq: binary.BigEndian.Uint64(k)})
			}
			return nil
		})
		projections.DropResident(db, tx.Size())
		if err != nil {
			return err
		}
		off := 0
		for i := range es {
			e := &es[i]
			e.key = arena[off : off+e.klen : off+e.klen]
			e.rec = arena[off+e.klen : off+e.n : off+e.n]
			off += e.n
		}
		projections.SortByKey(es, func(e *entry) []byte { return e.key })
		// p names every record in the window's range (those a window
		// that committed before a failure moved are below it), once.
		if len(es) != len(kvs) {
			return fmt.Errorf("%w: %d deferred records for %d deferred chunks", ErrCorrupt, len(es), len(kvs))
		}
		for i, kv := range kvs {
			if !bytes.Equal(es[i].key, kv.Key) || es[i].seq != kv.Value {
				return fmt.Errorf("deferred chunk %x at seq %d: %w: record of %x at seq %d in its place", kv.Key, kv.Value, ErrCorrupt, es[i].key, es[i].seq)
			}
			if err := chunks.Put(kv.Key, es[i].rec); err != nil {
				return err
			}
		}
		return nil
	}, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketChunksBulk) == nil {
			return nil
		}
		err := tx.DeleteBucket(bucketChunksBulk)
		// Deleting reads every page of the bucket.
		projections.DropResident(db, tx.Size())
		return err
	})
}

// settleDropEvery is how many records writeChunks reads between two
// drops of the file's resident pages.
const settleDropEvery = 4096

// settle moves the records a bulk build deferred into "chunks" (EndBulk).
// The caller holds x.mu.
func (x *Index) settle() error {
	if x.pend == nil {
		return nil
	}
	if err := writeChunks(x.db, x.pend); err != nil {
		return fmt.Errorf("write deferred summary chunks: %w", err)
	}
	return nil
}
