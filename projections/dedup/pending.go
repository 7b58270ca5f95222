package dedup

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// Commits are written to the file in bulk. A Commit of stores and edits
// applies its events to pending, an in-memory layer of writes over the
// file that every read looks through, and the file is written when
// pending holds FlushEntries keys, by Close, before a whole-state read
// (Each, Count, Digest) and before a Commit with a tombstone (while a
// first bulk build defers, to a run of a scratch file: runs.go). Why: the
// keys are hashes and random ids, so a bbolt commit of k new chunks
// rewrites about min(k, pages) pages of each bucket; a commit per batch
// of 10,000 events (ucl append's) rewrote most of the file each time.
// A flush writes the keys of each bucket in order, in transactions of at
// most flushChunk keys, so one pass over the file takes all of them and
// each transaction holds a bounded number of dirty pages.
//
// What pending holds is, for each bucket and key, the last write a
// sequential application would have made (put or delete); each write is
// computed from the merged view, so the file after a flush has the bytes
// a commit per batch would have left. A process that dies before a flush
// leaves the file at its last flushed checkpoint: the projector replays
// the rest from the log. A flush of several transactions marks the file
// (meta "flushing") in its first and clears the mark in its last, with
// the checkpoint; a file found marked is dropped on open and rebuilt.

// FlushEntries is how many pending keys (three or so per stored chunk)
// make a Commit write them to the file; about 200 bytes of memory each.
// 150,000 rather than 300,000: a 1M-event dedup rebuild peaked ~110 MB
// lower (the pending maps, and a flush's sorted copy of them), its CPU
// the same within ±3% in two same-time pairs.
var FlushEntries = 150_000

// flushChunk bounds the keys written in one flush transaction: each may
// dirty a page, and bbolt holds a transaction's dirty pages in memory.
var flushChunk = 8192

var keyFlushing = []byte("flushing")

// Buckets written through kv.
const (
	bItems = iota
	bKeys
	bDocs
	nBuckets
)

var kvBuckets = [nBuckets][]byte{bucketItems, bucketKeys, bucketDocs}

// kv is what the write path (put, remove) reads and writes: a bbolt
// transaction, or pending over a read transaction.
type kv interface {
	get(b int, k []byte) []byte
	put(b int, k, v []byte) error
	del(b int, k []byte) error
}

type boltKV struct{ tx *bolt.Tx }

func (w boltKV) get(b int, k []byte) []byte   { return w.tx.Bucket(kvBuckets[b]).Get(k) }
func (w boltKV) put(b int, k, v []byte) error { return w.tx.Bucket(kvBuckets[b]).Put(k, v) }
func (w boltKV) del(b int, k []byte) error    { return w.tx.Bucket(kvBuckets[b]).Delete(k) }

// write is a pending put (v, possibly empty) or delete.
type write struct {
	v   []byte
	del bool
}

// pending is the writes Commit made and the file does not have yet.
type pending struct {
	m [nBuckets]map[string]write
	// prefix lists, per bucket, the pending keys under each scan prefix
	// (keys: the 16-byte lookup; docs: str(chunk-parent)), for Find and
	// Document; each key once, whatever its last write.
	prefix [nBuckets]map[string][]string
	n      int
}

func newPending() *pending {
	p := &pending{}
	for b := range p.m {
		p.m[b] = map[string]write{}
		p.prefix[b] = map[string][]string{}
	}
	return p
}

// scanPrefix is the prefix a read scans key k of bucket b by ("" for
// items, which are read by key).
func scanPrefix(b int, k string) string {
	switch b {
	case bKeys:
		return k[:lookupLen]
	case bDocs:
		return k[:len(k)-4]
	}
	return ""
}

func (p *pending) set(b int, k []byte, w write) {
	ks := string(k)
	if _, ok := p.m[b][ks]; !ok {
		p.n++
		if b != bItems {
			pre := scanPrefix(b, ks)
			p.prefix[b][pre] = append(p.prefix[b][pre], ks)
		}
	}
	p.m[b][ks] = w
}

// overlay is pending over the runs of a deferring bulk build (runs.go),
// if any, over a read transaction of the file.
type overlay struct {
	tx   *bolt.Tx
	p    *pending
	runs runView
}

func (o overlay) get(b int, k []byte) []byte {
	if w, ok := o.p.m[b][string(k)]; ok {
		if w.del {
			return nil
		}
		return w.v
	}
	if o.runs.b != nil {
		if v, ok := o.runs.get(b, k); ok {
			return v
		}
	}
	return o.tx.Bucket(kvBuckets[b]).Get(k)
}

func (o overlay) put(b int, k, v []byte) error {
	o.p.set(b, k, write{v: bytes.Clone(v)})
	return nil
}

func (o overlay) del(b int, k []byte) error {
	o.p.set(b, k, write{del: true})
	return nil
}

// scan calls fn with each key (and value) under prefix pre in bucket b,
// pending writes over the file's, in key order. Values are valid during
// the transaction only.
func (o overlay) scan(b int, pre []byte, fn func(k, v []byte) error) error {
	type kvp struct{ k, v []byte }
	var out []kvp
	var inRuns map[string]bool
	if o.runs.b != nil {
		inRuns = map[string]bool{}
		o.runs.scan(b, pre, func(k, v []byte) {
			inRuns[string(k)] = true
			if _, ok := o.p.m[b][string(k)]; !ok && v != nil {
				out = append(out, kvp{k, v})
			}
		})
	}
	c := o.tx.Bucket(kvBuckets[b]).Cursor()
	for k, v := c.Seek(pre); k != nil && bytes.HasPrefix(k, pre); k, v = c.Next() {
		if _, ok := o.p.m[b][string(k)]; ok || inRuns[string(k)] {
			continue // pending or a run has its last write
		}
		out = append(out, kvp{k, v})
	}
	for _, ks := range o.p.prefix[b][string(pre)] {
		if w := o.p.m[b][ks]; !w.del {
			out = append(out, kvp{[]byte(ks), w.v})
		}
	}
	slices.SortFunc(out, func(a, b kvp) int { return bytes.Compare(a.k, b.k) })
	for _, e := range out {
		if err := fn(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// op is one pending write.
type op struct {
	b int
	k string
	w write
}

// sorted is every pending write, by bucket, then key.
func (p *pending) sorted() []op {
	ops := make([]op, 0, p.n)
	for b := range p.m {
		start := len(ops)
		for k, w := range p.m[b] {
			ops = append(ops, op{b, k, w})
		}
		projections.SortByKey(ops[start:], func(o *op) string { return o.k })
	}
	return ops
}

// flush writes pending and the checkpoint x.cp to the file, or to a run
// of the scratch file while a bulk build defers (runs.go). The caller
// holds x.mu.
func (x *Index) flush() error {
	if x.bulk != nil {
		return x.spill()
	}
	if x.pend.n == 0 && x.cp == x.diskCP {
		return nil
	}
	cpb, err := checkpointJSON(x.cp)
	if err != nil {
		return err
	}
	ops := x.pend.sorted()
	multi := len(ops) > flushChunk
	err = projections.Guard(Name, func() error {
		for i := 0; i == 0 || i < len(ops); i += flushChunk {
			part := ops[i:min(i+flushChunk, len(ops))]
			last := i+flushChunk >= len(ops)
			if err := x.db.Update(func(tx *bolt.Tx) error {
				meta := tx.Bucket(bucketMeta)
				if multi && i == 0 {
					if err := meta.Put(keyFlushing, []byte("1")); err != nil {
						return err
					}
				}
				w := boltKV{tx}
				for _, o := range part {
					var err error
					if o.w.del {
						err = w.del(o.b, []byte(o.k))
					} else {
						err = w.put(o.b, []byte(o.k), o.w.v)
					}
					if err != nil {
						return err
					}
				}
				if !last {
					return nil
				}
				if multi {
					if err := meta.Delete(keyFlushing); err != nil {
						return err
					}
				}
				return meta.Put(keyCP, cpb)
			}); err != nil {
				return err
			}
			// A bulk write reads nearly every page of the file; x.mu is
			// held, so no other transaction remaps it.
			if size := x.Size(); size >= residentFrom {
				projections.DropResident(x.db, size)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write dedup: %w", err)
	}
	x.pend = newPending()
	x.diskCP = x.cp
	return nil
}
