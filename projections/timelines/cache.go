package timelines

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// A read cache for a long-running process (ucl serve, the daemon): a query
// looks up a few hundred chunk records and the turns around thirty of
// them, and in a server most of them were looked up by an earlier query.
// Each lookup is a bbolt seek and a record decode (about a third of a
// warm query's CPU at 100K chunks).
//
// The cache holds decoded bare records (ChunkBare) and neighbour lists
// (AroundBare) valid for ONE state of the file, named by gen. Every change
// of the file moves gen under t.mu, before anyone can read the new state,
// and drops what the change may have made wrong: a flush or Commit drops
// the records of the chunk ids it put or deleted (only flushTx writes
// chunk records, and only those of t.puts and t.dels) and every
// neighbour list (a list depends on its session's order index and its
// turns' records; rebuilding one is a cursor walk over records that stay
// cached); Reset, a compaction's reopen, a failed write and Close drop
// everything. A reader takes gen and the bbolt txid of that state
// together under t.mu (snapshot); it uses the cache only if the cache is
// at its gen, and inside a transaction (a neighbour walk) reads or fills
// it only if the transaction's ID is that txid, that is, if it reads
// exactly that state (a commit may land between the snapshot and the
// transaction's start, and bbolt commits before the cache moves: entries
// of the older gen must not mix into a walk of the newer state). So an
// entry is never older or newer than the state its reader sees, and an
// append to one session leaves the rest of the cache warm.
//
// It also holds chunk content read back from the log (content.go), by
// chunk id with the seq it was read at: the event at a seq never changes
// while the timelines are open (a key rotation that shreds events closes
// them), and the commit that removes or edits a chunk drops its content
// here. Content is kept only beside its chunk's cached record at that seq
// (putContent), since the reader may have looked the chunk up before such
// a commit; so removed text does not outlive its removal.
//
// It is filled lazily, by the lookups themselves: a one-shot process pays
// a map insert per lookup (about 0.3 µs on a 2 µs miss) and no warm-up.
// It is bounded by entry count: cacheChunks records, cacheAroundChunks
// chunks over all lists (mostly the same records) and cacheContentBytes
// of content; when full, an arbitrary entry leaves. Full, it holds 43 MB
// of records and lists (BenchmarkReadCacheFull: 128K records of 32-hex
// ids, 512K chunks in lists), plus the content. The bounds hold a 100K-
// chunk store's records whole: a server whose queries never repeat
// (REST benchmark, queries=distinct, 16 clients at 100K) spent 2.3 ms of
// CPU a query with 32K records and lists, 1.9 ms with these.
//
// Entries are shared: a returned Chunk's Meta, Tool and Supersedes are
// the cache's, and callers must not modify them (the query engine reads
// them only).

const (
	cacheChunks       = 1 << 17
	cacheAroundChunks = 1 << 19
	cacheContentBytes = 8 << 20
)

// snap is the state a reader reads: the file, its gen and its bbolt txid
// (-1: unknown, the cache is not filled).
type snap struct {
	db   *bolt.DB
	gen  uint64
	txid int
}

// at reports whether tx reads exactly the state of s.
func (s snap) at(tx *bolt.Tx) bool { return s.txid >= 0 && tx.ID() == s.txid }

type aroundKey struct {
	id            string
	before, after int
}

type readCache struct {
	off     bool // tests: read every time, as without the cache
	mu      sync.RWMutex
	gen     uint64
	chunks  map[string]*Chunk // nil: no such chunk
	around  map[aroundKey][]*Chunk
	nAround int // chunks over all of around's lists
	// content by chunk id (with the seq it was read at)
	content  map[string]cachedContent
	nContent int // bytes over all of content
}

type cachedContent struct {
	seq uint64
	s   string
}

// reset empties the cache for the state gen.
func (rc *readCache) reset(gen uint64) {
	rc.mu.Lock()
	rc.gen = gen
	rc.chunks = nil
	rc.around = nil
	rc.nAround = 0
	rc.content = nil
	rc.nContent = 0
	rc.mu.Unlock()
}

// advance moves the cache to the state gen that a flush of the chunk ids
// changed made (see above).
func (rc *readCache) advance(gen uint64, changed []string) {
	rc.mu.Lock()
	rc.gen = gen
	for _, id := range changed {
		delete(rc.chunks, id)
		if cc, ok := rc.content[id]; ok {
			rc.nContent -= len(cc.s)
			delete(rc.content, id)
		}
	}
	rc.around = nil
	rc.nAround = 0
	rc.mu.Unlock()
}

// current returns the gen the cache is at.
func (rc *readCache) current() uint64 {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.gen
}

func (rc *readCache) contentOf(gen, seq uint64, id string) (string, bool) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if rc.off || rc.gen != gen {
		return "", false
	}
	cc, ok := rc.content[id]
	return cc.s, ok && cc.seq == seq
}

// putContent keeps the content of the chunk id at seq, read while the
// cache was at gen (not after a reset: the chunk may be gone), if the
// cache holds id's record at that seq. The caller may have looked the
// chunk up in an older state (content is read after the lookup, outside
// its transaction): without the record check, the text of a chunk a
// commit removed in between would be cached under the state without it,
// where the commit's drop no longer reaches it. A cached record at the
// cache's gen is live in that state (a commit drops the records of the
// ids it changes together with their content, under mu).
func (rc *readCache) putContent(gen, seq uint64, id, s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.off || rc.gen != gen || len(s) > cacheContentBytes {
		return
	}
	if c := rc.chunks[id]; c == nil || c.Seq != seq {
		return
	}
	if rc.content == nil {
		rc.content = make(map[string]cachedContent, 256)
	}
	if old, ok := rc.content[id]; ok {
		rc.nContent -= len(old.s)
		delete(rc.content, id)
	}
	for rc.nContent+len(s) > cacheContentBytes {
		for k, v := range rc.content {
			rc.nContent -= len(v.s)
			delete(rc.content, k)
			break
		}
	}
	rc.content[id] = cachedContent{seq: seq, s: s}
	rc.nContent += len(s)
}

func (rc *readCache) chunk(gen uint64, id string) (*Chunk, bool) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if rc.off || rc.gen != gen {
		return nil, false
	}
	c, ok := rc.chunks[id]
	return c, ok
}

func (rc *readCache) putChunk(gen uint64, id string, c *Chunk) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.off || rc.gen != gen {
		return
	}
	if rc.chunks == nil {
		rc.chunks = make(map[string]*Chunk, 1024)
	}
	if _, ok := rc.chunks[id]; !ok && len(rc.chunks) >= cacheChunks {
		for k := range rc.chunks {
			delete(rc.chunks, k)
			break
		}
	}
	rc.chunks[id] = c
}

func (rc *readCache) aroundList(gen uint64, k aroundKey) ([]*Chunk, bool) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if rc.off || rc.gen != gen {
		return nil, false
	}
	l, ok := rc.around[k]
	return l, ok
}

func (rc *readCache) putAround(gen uint64, k aroundKey, l []*Chunk) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.off || rc.gen != gen || len(l) > cacheAroundChunks {
		return
	}
	if rc.around == nil {
		rc.around = make(map[aroundKey][]*Chunk, 256)
	}
	if old, ok := rc.around[k]; ok {
		rc.nAround -= len(old)
		delete(rc.around, k)
	}
	for rc.nAround+len(l) > cacheAroundChunks || len(rc.around) >= cacheAroundChunks {
		for ek, el := range rc.around {
			rc.nAround -= len(el)
			delete(rc.around, ek)
			break
		}
	}
	rc.around[k] = l
	rc.nAround += len(l)
}

// setState records that the file is now at bbolt txid (-1: unknown) and
// empties the cache. The caller holds t.mu.
func (t *Timelines) setState(txid int) {
	t.gen++
	t.txid = txid
	t.cache.reset(t.gen)
}

// update runs fn, a write of the pending changes (flushTx), in a write
// transaction and moves the state. The caller holds t.mu.
func (t *Timelines) update(fn func(tx *bolt.Tx) error) error {
	changed := make([]string, 0, len(t.puts)+len(t.dels))
	for id := range t.puts {
		changed = append(changed, id)
	}
	for id := range t.dels {
		changed = append(changed, id)
	}
	txid := -1
	err := t.db.Update(func(tx *bolt.Tx) error {
		txid = tx.ID()
		return fn(tx)
	})
	if err != nil {
		// Rolled back, but a failed commit may have written part of its
		// pages: trust no txid until the next change, and nothing cached.
		t.setState(-1)
		clear(t.staged)
		return err
	}
	t.applyStaged()
	if t.afterWrite != nil {
		t.afterWrite()
	}
	t.gen++
	t.txid = txid
	t.cache.advance(t.gen, changed)
	return nil
}

// snapshot flushes pending writes and returns the state readers then see.
func (t *Timelines) snapshot() (snap, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.flush(); err != nil {
		return snap{}, err
	}
	// Readers read "ids" directly: the ids a bulk build keeps in memory
	// go into it first.
	if err := t.settleIDs(); err != nil {
		return snap{}, err
	}
	return snap{db: t.db, gen: t.gen, txid: t.txid}, nil
}

// cachedChunk is getChunk through the cache, in a transaction of s. A
// transaction that does not read s's state (a commit landed between the
// snapshot and its start) bypasses the cache both ways: entries of s's
// gen may still be there (the cache moves after bbolt's commit), and
// mixing them into a walk of the newer state's indexes gives chunks the
// index no longer names, or "missing" ones it now names (ErrCorrupt).
func (t *Timelines) cachedChunk(tx *bolt.Tx, s snap, id string) (*Chunk, error) {
	at := s.at(tx)
	if at {
		if c, ok := t.cache.chunk(s.gen, id); ok {
			return c, nil
		}
	}
	c, err := getChunk(tx, id)
	if err == nil && at {
		t.cache.putChunk(s.gen, id, c)
	}
	return c, err
}
