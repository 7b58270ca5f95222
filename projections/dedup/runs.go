package dedup

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// The writes of a bulk build that began on an empty projection
// (projections.BulkBuilder), spilled in sorted runs to a scratch file and
// merged into dedup.db once, in key order, when the build ends.
//
// Why: the keys are hashes and random ids, so each flush of pending
// (pending.go) inserts into nearly every leaf of its buckets and rewrites
// the file, whose size grows with the store: a 2M-event first build
// flushed ~40 times, 10.6 s of its 26 s of CPU, and the file it left was
// half empty (2.3 s more to compact it). A run is appended: its keys
// follow the previous run's. The merge reads each run in key order and
// writes each bucket from its first key to its last, its pages full: the
// file is written once and needs no compaction.
//
// Scratch file dedup-bulk.db (bbolt), present only while a build defers:
//
//	runs   run(4, BE) bucket(1) key → 1 value (a put) | 0 (a delete)
//	meta   "runs" → uint32 (BE): how many runs are complete;
//	       "checkpoint" → JSON checkpoint of the state dedup.db's buckets
//	       and the runs hold together
//
// bucket is 0 items, 1 keys, 2 docs; a run holds, for each key, the last
// write pending held (pending.go), so the newest run that has a key
// holds its last write. dedup.db's meta holds "bulk" → "1" from before
// the first run is written until the merge's last transaction, which
// writes the checkpoint. Reads meanwhile see pending, then the runs,
// newest first, then the file (overlay). A whole-state read (Count,
// Each, Digest) or a tombstone merges the runs first and ends the
// deferral.
//
// A process that stops in between leaves dedup.db marked and the runs
// (each complete or not counted), and the next Open merges them (a
// merge done again puts and deletes the same keys: it ends the same).
// Deferring only begins on an empty projection, so a marked file whose
// scratch file cannot be read is dropped and rebuilt from the log,
// losing nothing. A scratch file
// without the mark (the merge's last transaction committed, the removal
// did not happen) is removed. Nothing here changes what dedup.db holds
// once merged: the format, its version and the digest stay.

// runsFile is the scratch file, beside dedup.db.
const runsFile = "dedup-bulk.db"

var (
	bucketRuns = []byte("runs")
	keyRuns    = []byte("runs")
	keyBulk    = []byte("bulk")
)

// errRunsUnusable is returned when a marked file's scratch file is
// missing or cannot be read.
var errRunsUnusable = errors.New("dedup: bulk runs unusable")

// runs is a deferring bulk build's scratch file.
type runs struct {
	db   *bolt.DB // nil until the first spill
	n    uint32   // runs complete
	size int64    // the file's size after the last run
	// items[r] holds the item keys run r writes (puts and deletes): a
	// lookup of an item (nearly all absent, or only in the filter of
	// stored keys by chance) reads only the runs whose filter has it.
	items []*projections.AbsentKeys
}

func (x *Index) runsPath() string { return filepath.Join(x.dir, runsFile) }

// runKey is run r's key of k in bucket b, appended to dst.
func runKey(dst []byte, r uint32, b int, k []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, r)
	dst = append(dst, byte(b))
	return append(dst, k...)
}

const runKeyLen = 5 // run(4) bucket(1)

// spill writes pending and x.cp to the scratch file as a new run (x.mu
// held, x.bulk set), in transactions of at most runChunk keys; the last
// counts the run, so a run is whole or not read. What a failed spill
// wrote of run n is deleted by the next.
func (x *Index) spill() error {
	if x.pend.n == 0 && x.cp == x.diskCP {
		return nil
	}
	cpb, err := checkpointJSON(x.cp)
	if err != nil {
		return err
	}
	if x.bulk.db == nil {
		if err := x.startRuns(); err != nil {
			return fmt.Errorf("write dedup runs: %w", err)
		}
	}
	ops := x.pend.sorted()
	r := x.bulk.n
	nItems := 0
	for _, o := range ops {
		if o.b == bItems {
			nItems++
		}
	}
	items := projections.NewAbsentKeysSized(nItems)
	for _, o := range ops {
		if o.b == bItems {
			items.Add([]byte(o.k))
		}
	}
	var arena []byte // reused: bbolt keeps what Put is given until the commit
	err = projections.Guard(Name, func() error {
		for i := 0; i == 0 || i < len(ops); i += runChunk {
			part := ops[i:min(i+runChunk, len(ops))]
			last := i+runChunk >= len(ops)
			if err := x.bulk.db.Update(func(tx *bolt.Tx) error {
				rb := tx.Bucket(bucketRuns)
				if i == 0 {
					if err := dropRunsFrom(rb, r); err != nil {
						return err
					}
				}
				rb.FillPercent = 1 // every key follows the last
				size := 0
				for _, o := range part {
					size += runKeyLen + len(o.k) + 1 + len(o.w.v)
				}
				if cap(arena) < size {
					arena = make([]byte, 0, size)
				}
				arena = arena[:0]
				for _, o := range part {
					at := len(arena)
					arena = runKey(arena, r, o.b, []byte(o.k))
					k := arena[at:len(arena):len(arena)]
					at = len(arena)
					arena = appendRunWrite(arena, o.w)
					if err := rb.Put(k, arena[at:len(arena):len(arena)]); err != nil {
						return err
					}
				}
				if !last {
					return nil
				}
				meta := tx.Bucket(bucketMeta)
				if err := meta.Put(keyRuns, binary.BigEndian.AppendUint32(nil, r+1)); err != nil {
					return err
				}
				return meta.Put(keyCP, cpb)
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write dedup runs: %w", err)
	}
	x.bulk.n++
	x.bulk.items = append(x.bulk.items[:r], items)
	if fi, err := os.Stat(x.runsPath()); err == nil {
		x.bulk.size = fi.Size()
	}
	x.pend = newPending()
	x.diskCP = x.cp
	return nil
}

// runChunk bounds the keys one transaction of a spill writes (they are
// appended: ~70 bytes each, a few pages, but a node each until commit).
var runChunk = 1 << 15

// dropRunsFrom deletes the keys of runs r and later (a spill that failed
// part way).
func dropRunsFrom(rb *bolt.Bucket, r uint32) error {
	c := rb.Cursor()
	for k, _ := c.Seek(runKey(nil, r, 0, nil)); k != nil; k, _ = c.Seek(runKey(nil, r, 0, nil)) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// startRuns marks dedup.db, then creates the scratch file afresh.
func (x *Index) startRuns() error {
	if err := projections.Guard(Name, func() error {
		return x.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyBulk, []byte("1")) })
	}); err != nil {
		return err
	}
	if err := os.Remove(x.runsPath()); err != nil && !os.IsNotExist(err) {
		return err
	}
	db, err := projections.OpenBolt(x.runsPath(), nil)
	if err != nil {
		return err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketRuns, bucketMeta} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		db.Close()
		return err
	}
	x.bulk.db = db
	return nil
}

// settle ends a deferring bulk build (x.mu held): pending goes to a last
// run, the runs into the file, and the scratch file away.
func (x *Index) settle() error {
	if x.bulk == nil {
		return nil
	}
	if err := x.spill(); err != nil {
		return err
	}
	if x.bulk.db != nil {
		cpb, err := checkpointJSON(x.cp)
		if err != nil {
			return err
		}
		err = projections.Guard(Name, func() error { return mergeRuns(x.db, x.bulk.db, x.bulk.n, cpb) })
		if err != nil {
			return fmt.Errorf("merge dedup runs: %w", err)
		}
		if err := x.closeRuns(); err != nil {
			return err
		}
	}
	x.bulk = nil
	x.compacted = x.Size() // written in key order: tight
	return nil
}

// closeRuns closes and removes the scratch file.
func (x *Index) closeRuns() error {
	if x.bulk == nil || x.bulk.db == nil {
		return nil
	}
	err := x.bulk.db.Close()
	x.bulk.db = nil
	if rerr := os.Remove(x.runsPath()); rerr != nil && !os.IsNotExist(rerr) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("remove dedup runs: %w", err)
	}
	return nil
}

// settleOnOpen merges the runs a process left (main is marked) and
// removes the scratch file. errRunsUnusable: main must be dropped.
func settleOnOpen(main *bolt.DB, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %w", errRunsUnusable, err)
	}
	db, err := projections.OpenBolt(path, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", errRunsUnusable, err)
	}
	var n uint32
	var cpb []byte
	err = projections.CheckBolt(db)
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			if meta == nil || tx.Bucket(bucketRuns) == nil {
				return errors.New("no runs")
			}
			nb, cb := meta.Get(keyRuns), meta.Get(keyCP)
			if len(nb) != 4 {
				return errors.New("no complete run")
			}
			var cp projections.Checkpoint
			if err := json.Unmarshal(cb, &cp); err != nil {
				return fmt.Errorf("decode checkpoint: %w", err)
			}
			n, cpb = binary.BigEndian.Uint32(nb), bytes.Clone(cb)
			return nil
		})
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("%w: %w", errRunsUnusable, err)
	}
	err = projections.Guard(Name, func() error { return mergeRuns(main, db, n, cpb) })
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("merge dedup runs: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove dedup runs: %w", err)
	}
	return nil
}

// mergeWindow bounds the keys one merge transaction writes: bbolt holds a
// transaction's nodes and new pages in memory until it commits.
var mergeWindow = 1 << 16

// mergeDrop is how many keys the merge reads between two drops of the
// scratch file's pages it mapped (it reads each page once).
const mergeDrop = 4096

// mergeRuns writes runs 0..n-1 of the scratch file into main's buckets,
// each key's newest write, in key order, in transactions of at most
// mergeWindow keys; the last deletes the mark and writes the checkpoint
// cpb.
func mergeRuns(main, scratch *bolt.DB, n uint32, cpb []byte) error {
	return scratch.View(func(stx *bolt.Tx) error {
		rb := stx.Bucket(bucketRuns)
		size := stx.Size()
		defer projections.DropResident(scratch, size)
		read := 0
		for b := range nBuckets {
			m := newRunMerge(rb, n, b)
			fill := projections.AppendFill()
			for done := false; !done; {
				err := main.Update(func(tx *bolt.Tx) error {
					bk := tx.Bucket(kvBuckets[b])
					fill(bk)
					for range mergeWindow {
						k, v, ok := m.next()
						if !ok {
							done = true
							break
						}
						var err error
						if v == nil {
							err = bk.Delete(k)
						} else {
							err = bk.Put(k, v)
						}
						if err != nil {
							return err
						}
						if read++; read%mergeDrop == 0 {
							projections.DropResident(scratch, size)
						}
					}
					if m.err != nil {
						return m.err
					}
					if !done || b < nBuckets-1 {
						return nil
					}
					meta := tx.Bucket(bucketMeta)
					if err := meta.Delete(keyBulk); err != nil {
						return err
					}
					return meta.Put(keyCP, cpb)
				})
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// runCursor is one run's place in a merge.
type runCursor struct {
	c    *bolt.Cursor
	r    uint32
	pre  []byte // run(4) bucket(1)
	k, v []byte // current key (without pre) and value; k nil at the end
}

func (c *runCursor) set(k, v []byte) {
	if k == nil || !bytes.HasPrefix(k, c.pre) {
		c.k, c.v = nil, nil
		return
	}
	c.k, c.v = k[len(c.pre):], v
}

// runMerge yields the keys of one bucket across runs, in key order, each
// with its newest run's write.
type runMerge struct {
	h   runHeap
	err error
}

func newRunMerge(rb *bolt.Bucket, n uint32, b int) *runMerge {
	m := &runMerge{}
	for r := range n {
		c := &runCursor{c: rb.Cursor(), r: r, pre: runKey(nil, r, b, nil)}
		c.set(c.c.Seek(c.pre))
		if c.k != nil {
			m.h = append(m.h, c)
		}
	}
	heap.Init(&m.h)
	return m
}

// next is the next key and its value (nil: deleted); ok false at the end
// or on a malformed write (m.err).
func (m *runMerge) next() (k, v []byte, ok bool) {
	if len(m.h) == 0 || m.err != nil {
		return nil, nil, false
	}
	top := m.h[0]
	k, raw := top.k, top.v
	// The older runs' writes of k are superseded.
	for len(m.h) > 0 && bytes.Equal(m.h[0].k, k) {
		c := m.h[0]
		c.set(c.c.Next())
		if c.k == nil {
			heap.Pop(&m.h)
		} else {
			heap.Fix(&m.h, 0)
		}
	}
	if v, ok := runWrite(raw); ok {
		return k, v, true
	}
	m.err = fmt.Errorf("run %d write of %x: %w", top.r, k, ErrCorrupt)
	return nil, nil, false
}

// appendRunWrite appends a run's value of a write: 1 and the value put,
// or 0 for a delete.
func appendRunWrite(dst []byte, w write) []byte {
	if w.del {
		return append(dst, 0)
	}
	return append(append(dst, 1), w.v...)
}

// runWrite decodes a run's value (appendRunWrite): the value put (never
// nil) or nil for a delete; ok false when raw is neither.
func runWrite(raw []byte) (v []byte, ok bool) {
	switch {
	case len(raw) == 1 && raw[0] == 0:
		return nil, true
	case len(raw) >= 1 && raw[0] == 1:
		return raw[1:], true
	}
	return nil, false
}

// runHeap orders cursors by key, then newest run first.
type runHeap []*runCursor

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].k, h[j].k); c != 0 {
		return c < 0
	}
	return h[i].r > h[j].r
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// runView is the runs of a deferring bulk build, read in a transaction
// of the scratch file (overlay).
type runView struct {
	b     *bolt.Bucket // nil: no run
	n     uint32
	items []*projections.AbsentKeys // runs.items
}

// get is k's newest write in bucket b (v nil: deleted, or a write that
// does not decode, which the merge refuses); found false when no run has
// it.
func (rv runView) get(b int, k []byte) (v []byte, found bool) {
	key := runKey(make([]byte, 0, runKeyLen+len(k)), 0, b, k)
	for r := rv.n; r > 0; r-- {
		if b == bItems && int(r) <= len(rv.items) && !rv.items[r-1].Has(k) {
			continue
		}
		binary.BigEndian.PutUint32(key, r-1)
		if raw := rv.b.Get(key); raw != nil {
			v, _ := runWrite(raw)
			return v, true
		}
	}
	return nil, false
}

// scan calls fn with the newest write of each key under pre in bucket b
// across the runs (v as get's), each key once, in no set order.
func (rv runView) scan(b int, pre []byte, fn func(k, v []byte)) {
	seen := map[string]bool{}
	for r := rv.n; r > 0; r-- {
		p := runKey(nil, r-1, b, pre)
		c := rv.b.Cursor()
		for k, raw := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, raw = c.Next() {
			key := k[runKeyLen:]
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			v, _ := runWrite(raw)
			fn(key, v)
		}
	}
}
