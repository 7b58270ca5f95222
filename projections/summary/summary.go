// Package summary is the L0 summary projection: for every session and every
// document, a deterministic extractive summary (its key sentences in
// original order, under a token bound), its key terms, its content-time span
// and its chunk count. Summaries are searchable so that queries on large
// stores can pre-filter sessions before searching chunks.
//
// Groups. A chunk belongs to the session summary of its session (chunks
// without a session have none) and to at most one document summary: the
// document id is its chunk_parent when set, else its own chunk id when its
// kind is document; other chunks belong to no document. Chunks are read in
// order (content time, chunk index, chunk id) for a session and (chunk
// index, content time, chunk id) for a document, chunk ids compared as
// their stored keys (projections.IDKey: ids of 32 lowercase hex digits
// first, in order, then the others in order).
//
// Extraction (see summarize): each chunk's text, bounded to its first
// MaxAnalysedBytes (64 KiB), is split with textutil.Sentences and
// textutil.ContentWords; a term weighs count·√(N/df) (df over sentences);
// a sentence scores the sum of its distinct terms' weights over
// max(#distinct terms, 8), ×1.15 for the first sentence; the best
// sentences (ties: earlier first; exact duplicates, case-folded, skipped)
// are taken greedily while textutil.EstimateTokens of their join stays
// within Options.MaxTokens, then printed in original order (when none fits,
// the best one is cut at a word boundary and ends with "…"). Key terms are
// the Options.KeyTerms heaviest terms, ties by word. Only +, ×, ÷ and √
// with explicit rounding are used, so summaries are identical across
// platforms.
//
// Blocks (since format 2). A group's chunks, in reading order, are cut into
// blocks: a block starts at the group's first chunk and at every chunk
// whose id hashes (FNV-1a 32) to 0 modulo 16, so a block holds 16 chunks
// on average and its extent depends only on the chunks themselves, not on
// the order they arrived in. A block keeps the candidates of its own
// extraction (its summary's sentences, or its best sentence when none
// fits) and its own key terms with their count and df in the block. The
// group's summary is the extraction over all blocks' candidates, in
// reading order, as one text (weights over the candidates; the
// first-sentence bonus only for the group's first sentence). Its key terms
// are the blocks' key terms, each weighing count·√(N/df) with count and df
// summed over the blocks that list it and N the group's sentences. A group
// of one block gets exactly the extraction of all its sentences.
//
// Invariants:
//   - A summary is a pure function of the live chunks of its group, never of
//     the update history: incremental updates and a full rebuild store the
//     same records (chunks, indexes, blocks, summaries) byte for byte and
//     give the same digest.
//   - Apply only buffers chunk changes in memory. Commit writes them, and
//     for each touched group rebuilds the blocks the changed keys can
//     reach (from the last block start before the first changed key to the
//     first block start after the last one: one block for an appended
//     turn), merges the group's blocks into its summary and writes the
//     checkpoint, in one bbolt transaction. An appended turn costs its
//     block plus a pass over the group's block records (1/16 of its
//     chunks), not a re-extraction of the group.
//   - Chunk text is not stored (format 3): a chunk record names the seq of
//     the event that put the chunk in place (a store or an edit). A Commit
//     analyses the chunks applied since the last one from their events, and
//     reads the other chunks of the blocks it rebuilds from the
//     projections.EventReader given to Open (the log), all touched groups
//     together, in seq order. An event at that seq that does not hold the
//     chunk is ErrCorrupt; no reader is ErrNoEvents.
//   - Reads (Session, Document, All, Search, Digest) see the last Commit.
//   - Removed content leaves the file: a Commit that removed chunks
//     rewrites summary.db with projections.CompactBolt (bbolt keeps freed
//     pages, with their text, otherwise); Reset and a stale version start a
//     new file. Open checks the file is not truncated.
//
// Storage (bbolt file summary.db):
//   - chunks: IDKey(id) → kind ‖ uvarint index ‖ time(8, BE) ‖ str session
//     ‖ str chunk_parent ‖ uvarint seq, str = uvarint length ‖ bytes
//     (encodeChunk; format 2 ended with the content instead of the seq);
//   - by_session, by_doc: uvarint len ‖ group id ‖ sort key (12 bytes:
//     time(8, BE, sign bit flipped) ‖ index(4, BE) for sessions, index ‖
//     time for documents) ‖ IDKey(chunk id) → empty (format 5; before, the
//     id as is: 17 bytes instead of 33 for a hex id, in both the chunk
//     records and the index, a tenth of the file), so a cursor walks a group in
//     reading order (a tombstone by time range alone scans the chunk
//     records' times);
//   - blocks: kind byte (1 session, 2 document) ‖ the by_session/by_doc key
//     of the block's first chunk → encodeBlock;
//   - summaries: 1‖session id or 2‖document id → JSON Summary;
//   - search_docs, search_terms (format 4): the session search index, a
//     function of the session summaries, updated in the same transaction
//     for the sessions whose summary changed (only the terms whose
//     frequency changed are rewritten); see search.go. During a bulk
//     build (BeginBulk … EndBulk: a catch-up of projections.CompactAfter
//     events or more) commits leave it as it was and set search_stale;
//     EndBulk builds it once from the summaries (rewriting whole postings
//     lists at every commit made a bulk build quadratic), and so does
//     Open or the next Commit when it finds the mark (a build cut short).
//     Search during a bulk build sees the index as of its start;
//   - chunks_bulk: during a bulk build, seq(8, BE) → the records of the
//     chunks it stored new, moved into chunks in key order at its end
//     (chunksbulk.go); absent otherwise;
//   - meta: version tag, checkpoint, search_stats, search_stale (present
//     only while the search index is behind the summaries).
//
// Search reads the postings of its words, the lengths of their sessions
// and the stats, never the summaries: a process's first search costs what
// its words cost, not a pass over every summary. Files of earlier formats
// (search index in memory, rebuilt by each process) are discarded and
// rebuilt.
package summary

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Name is the projection name.
const Name = "summary"

// FormatVersion is the stored format and extraction version.
const FormatVersion = 6 // 6: chunk text analysed up to MaxAnalysedBytes

// Defaults for Options.
const (
	DefaultMaxTokens = 120
	DefaultKeyTerms  = 8
)

// Summary kinds.
const (
	KindSession  = "session"
	KindDocument = "document"
)

var (
	// ErrClosed is returned when a method is called after Close.
	ErrClosed = errors.New("summary: closed")

	// ErrCorrupt is returned (wrapped) when a stored record does not decode.
	ErrCorrupt = errors.New("summary: corrupt record")

	// ErrInvalidQuery is returned by Search for k <= 0.
	ErrInvalidQuery = errors.New("summary: invalid query")

	// ErrNoEvents is returned (wrapped) by Commit when a block must be
	// rebuilt from committed chunks and the index was opened without an
	// event reader to read their content from.
	ErrNoEvents = errors.New("summary: no event reader for chunk content")
)

var (
	bucketChunks    = []byte("chunks")
	bucketBySession = []byte("by_session")
	bucketByDoc     = []byte("by_doc")
	bucketSummaries = []byte("summaries")
	bucketBlocks    = []byte("blocks")
	bucketMeta      = []byte("meta")
	allBuckets      = [][]byte{bucketChunks, bucketBySession, bucketByDoc, bucketSummaries, bucketBlocks, bucketSearchDocs, bucketSearchTerms, bucketMeta}
	keyCP           = []byte("checkpoint")
	keyVersion      = []byte("version")
)

const (
	prefixSession  byte = 1
	prefixDocument byte = 2
)

// Options shape the summaries; they enter the digest.
type Options struct {
	MaxTokens int // token bound of a summary's text (default DefaultMaxTokens)
	KeyTerms  int // number of key terms (default DefaultKeyTerms)
}

// Summary is the L0 summary of a session or a document.
type Summary struct {
	Kind     string   `json:"kind"`              // KindSession or KindDocument
	ID       string   `json:"id"`                // session id or document id
	Session  string   `json:"session,omitempty"` // documents: the session of the first chunk
	Text     string   `json:"text"`              // key sentences in original order
	KeyTerms []string `json:"key_terms"`         // heaviest content words
	First    int64    `json:"first_ms"`          // earliest content time (unix ms)
	Last     int64    `json:"last_ms"`           // latest content time (unix ms)
	Chunks   int      `json:"chunks"`            // live chunks in the group
	Tokens   int      `json:"tokens"`            // textutil.EstimateTokens(Text)
}

// SessionHit is one Search result.
type SessionHit struct {
	Session string
	Score   float64
}

// chunk is what the projection keeps of a stored chunk.
type chunk struct {
	id          string
	kind        log.Kind
	index       int
	time        int64
	session     string
	chunkParent string
	seq         uint64     // the event that put the chunk in place (store or edit)
	sents       []sentence // analysis of the content (pos relative to the chunk); nil until read
}

// newChunk builds a chunk from a store body at seq, with its analysis.
func newChunk(b *log.Store, seq uint64) *chunk {
	return &chunk{id: b.ChunkID, kind: b.Kind, index: b.ChunkIndex, time: b.Time, session: b.Session,
		chunkParent: b.ChunkParent, seq: seq, sents: split([]string{b.Content})}
}

// docID is the document group of c, "" for none.
func (c *chunk) docID() string {
	if c.chunkParent != "" {
		return c.chunkParent
	}
	if c.kind == log.KindDocument {
		return c.id
	}
	return ""
}

type groupKey struct {
	prefix byte
	id     string
}

// Index is the summary projection. It is safe for concurrent use.
type Index struct {
	dir    string
	opts   Options
	events projections.EventReader // where committed chunks' content is read back (by seq)

	mu     sync.RWMutex
	db     *bolt.DB
	cp     projections.Checkpoint
	closed bool

	ops    map[string]*chunk // chunk changes since Commit; nil = deleted
	reread int               // chunks read back to rebuild blocks (tests)

	bulk bool // between BeginBulk and EndBulk: commits leave the search index behind
	// stored holds the keys put into "chunks" since a BeginBulk that
	// found it empty (nil otherwise): a chunk it does not have was not
	// stored before, and its Commit skips looking for an old record.
	stored      *projections.AbsentKeys
	searchStale bool
	// pend maps, between BeginBulk and EndBulk, the keys of the chunks
	// whose records are deferred in "chunks_bulk" to their seqs; staged
	// is the commit under way's changes to it (chunksbulk.go).
	pend   *projections.PendingKeys
	staged map[string]stagedChunk // the committed search index is behind the summaries (meta search_stale)
}

var (
	_ projections.Projection  = (*Index)(nil)
	_ projections.BulkBuilder = (*Index)(nil)
)

// Open opens (or creates) the projection in dir with default options.
// events is where a Commit reads back the content of committed chunks
// whose block it rebuilds (the store's log); without it such a Commit
// fails with ErrNoEvents.
func Open(dir string, events projections.EventReader) (*Index, error) {
	return OpenOptions(dir, events, Options{})
}

// OpenOptions opens (or creates) the projection in dir. State stored with
// another format version or other options is discarded (checkpoint zero).
func OpenOptions(dir string, events projections.EventReader, opts Options) (*Index, error) {
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.KeyTerms <= 0 {
		opts.KeyTerms = DefaultKeyTerms
	}
	x := &Index{dir: dir, opts: opts, events: events, staged: map[string]stagedChunk{}}
	if err := x.open(); err != nil {
		return nil, err
	}
	return x, nil
}

// staleFile reports whether db holds state of another version or other
// options (a new, empty file is not stale).
func (x *Index) staleFile(db *bolt.DB) (bool, error) {
	if err := projections.CheckBolt(db); err != nil {
		return false, err
	}
	stale := false
	err := db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		stale = meta != nil && !bytes.Equal(meta.Get(keyVersion), x.versionTag())
		return nil
	})
	return stale, err
}

func (x *Index) path() string { return filepath.Join(x.dir, "summary.db") }

func (x *Index) versionTag() []byte {
	return []byte(fmt.Sprintf("v%d/tokens=%d/terms=%d", FormatVersion, x.opts.MaxTokens, x.opts.KeyTerms))
}

func (x *Index) open() error {
	if err := os.MkdirAll(x.dir, 0o700); err != nil {
		return fmt.Errorf("create summary dir: %w", err)
	}
	db, err := projections.OpenBolt(x.path(), nil)
	if err != nil {
		return fmt.Errorf("open summary db: %w", err)
	}
	if stale, err := x.staleFile(db); err != nil || stale {
		// Another version or other options: a new file, not dropped
		// buckets (their pages would keep the old content).
		db.Close()
		if err != nil {
			return fmt.Errorf("open summary db: %w", err)
		}
		if err := os.Remove(x.path()); err != nil {
			return fmt.Errorf("open summary db: %w", err)
		}
		if db, err = projections.OpenBolt(x.path(), nil); err != nil {
			return fmt.Errorf("open summary db: %w", err)
		}
	}
	x.db = db
	x.cp = projections.Checkpoint{}
	if err := projections.CheckBolt(db); err != nil {
		db.Close()
		x.db = nil
		return fmt.Errorf("open summary db: %w", err)
	}
	// Checked in a read transaction, written only when new or stale: a
	// process that only reads writes nothing (a no-op bbolt commit still
	// writes and syncs two pages).
	current := false
	deferred := false
	x.searchStale = false
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta != nil && bytes.Equal(meta.Get(keyVersion), x.versionTag()) {
			current = true
			x.searchStale = meta.Get(keySearchStale) != nil
			deferred = tx.Bucket(bucketChunksBulk) != nil
			if b := meta.Get(keyCP); b != nil {
				if err := json.Unmarshal(b, &x.cp); err != nil {
					return fmt.Errorf("decode checkpoint: %w", err)
				}
			}
		}
		return nil
	})
	if err == nil && !current {
		err = db.Update(x.initDB)
	}
	if err == nil && deferred {
		// A bulk build stopped before its end (a crash) left chunk
		// records deferred.
		err = settleDeferred(db)
	}
	if err == nil && x.searchStale {
		// A bulk build stopped before its end (a crash): its commits
		// left the search index behind the summaries.
		if err = db.Update(rebuildSearch); err == nil {
			x.searchStale = false
		}
	}
	if err != nil {
		db.Close()
		x.db = nil
		return fmt.Errorf("init summary db: %w", err)
	}
	x.ops = map[string]*chunk{}
	return nil
}

// initDB starts the database over: a new one, or one of another version.
func (x *Index) initDB(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	cpb, _ := json.Marshal(x.cp)
	if err := tx.Bucket(bucketMeta).Put(keyCP, cpb); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyVersion, x.versionTag())
}

// Name returns "summary".
func (x *Index) Name() string { return Name }

// Version returns FormatVersion.
func (x *Index) Version() int { return FormatVersion }

// Checkpoint returns the last committed checkpoint.
func (x *Index) Checkpoint() (projections.Checkpoint, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return projections.Checkpoint{}, ErrClosed
	}
	return x.cp, nil
}

// Apply buffers ev: a store adds or replaces a chunk, a tombstone removes
// its targets. Other types are ignored.
func (x *Index) Apply(ev *log.Event) error {
	if ev == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	switch b := ev.Body.(type) {
	case *log.Store:
		if b.ChunkID == "" {
			return nil
		}
		c := newChunk(b, ev.Seq)
		x.ops[c.id] = c
	case *log.Tombstone:
		return x.applyTombstone(b)
	case *log.Edit:
		if len(b.Removes) > 0 {
			if err := x.applyTombstone(&log.Tombstone{Chunks: b.Removes}); err != nil {
				return err
			}
		}
		c := newChunk(&b.Store, ev.Seq)
		x.ops[c.id] = c
	}
	return nil
}

func (x *Index) applyTombstone(t *log.Tombstone) error {
	targets := map[string]struct{}{}
	for _, id := range t.Chunks {
		if id != "" {
			targets[id] = struct{}{}
		}
	}
	hasRange := t.From != 0 || t.To != 0
	if t.Session != "" || hasRange {
		// Committed chunks unchanged since Commit (session and range
		// together select their intersection).
		err := x.view(func(tx *bolt.Tx) error {
			if t.Session != "" {
				prefix := lenPrefix(t.Session)
				c := tx.Bucket(bucketBySession).Cursor()
				for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
					id, err := idOfKey(prefix, k)
					if err != nil {
						return err
					}
					if _, changed := x.ops[id]; changed {
						continue
					}
					if hasRange {
						tm := int64(binary.BigEndian.Uint64(k[len(prefix):]) ^ (1 << 63))
						if tm < t.From || tm >= t.To {
							continue
						}
					}
					targets[id] = struct{}{}
				}
				return nil
			}
			// A range alone is rare: a scan of the chunk records'
			// times costs less than a time index kept for it. Those a
			// bulk build deferred are scanned too.
			scan := func(k, v []byte) error {
				id, ok := projections.IDOfKey(k)
				if !ok {
					return fmt.Errorf("chunk key %x: %w", k, ErrCorrupt)
				}
				tm, err := chunkTime(id, v)
				if err != nil {
					return err
				}
				if _, changed := x.ops[id]; !changed && tm >= t.From && tm < t.To {
					targets[id] = struct{}{}
				}
				return nil
			}
			if err := tx.Bucket(bucketChunks).ForEach(scan); err != nil {
				return err
			}
			if bb := tx.Bucket(bucketChunksBulk); bb != nil {
				return bb.ForEach(func(k, v []byte) error {
					key, rec, err := splitBulkRecord(v)
					if err != nil {
						return fmt.Errorf("deferred chunk record %x: %w", k, err)
					}
					return scan(key, rec)
				})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("resolve tombstone: %w", err)
		}
		for id, c := range x.ops {
			if c != nil && projections.TombstoneMatches(t, id, c.session, c.time) {
				targets[id] = struct{}{}
			}
		}
	}
	for id := range targets {
		x.ops[id] = nil
	}
	return nil
}

// Commit writes buffered chunk changes, recomputes every dirty summary and
// records cp, all in one bbolt transaction.
func (x *Index) Commit(cp projections.Checkpoint) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	cpb, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if !x.bulk && x.pend != nil { // an EndBulk failed to settle
		if err := x.settle(); err != nil {
			return fmt.Errorf("commit summaries: %w", err)
		}
		x.pend = nil
	}
	ids := make([]string, 0, len(x.ops))
	for id := range x.ops {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	changed := map[string]*searchChange{} // session id -> old and new summary
	scrub := false                        // a chunk was removed: compact after the commit
	err = x.db.Update(func(tx *bolt.Tx) error {
		recs, err := x.records(tx)
		if err != nil {
			return err
		}
		// The chunks go in id order, their index entries in key order
		// (projections.SortedWrites): those keys follow time, not ids.
		bySess := projections.NewSortedWrites(tx.Bucket(bucketBySession)).FillAppends()
		byDoc := projections.NewSortedWrites(tx.Bucket(bucketByDoc))
		touched := map[groupKey]*groupChange{}
		touch := func(c *chunk) {
			for _, g := range groupsOf(c) {
				gc := touched[g]
				if gc == nil {
					gc = &groupChange{}
					touched[g] = gc
				}
				gc.span(orderKey(g, c))
			}
		}
		for _, id := range ids {
			key := projections.IDKey(id)
			var old []byte
			var deferred bool
			if x.stored == nil || x.stored.Has(key) {
				var err error
				if old, deferred, err = recs.get(key); err != nil {
					return err
				}
			}
			if old != nil {
				oc, err := decodeChunk(id, old)
				if err != nil {
					return err
				}
				touch(oc)
				if err := deleteIndexes(bySess, byDoc, oc); err != nil {
					return err
				}
				if err := recs.del(key, deferred); err != nil {
					return err
				}
			}
			c := x.ops[id]
			if c == nil {
				scrub = true
				continue
			}
			if x.stored != nil {
				x.stored.Add(key)
			}
			if err := recs.put(key, c.seq, encodeChunk(c), old != nil && !deferred); err != nil {
				return err
			}
			if err := putIndexes(bySess, byDoc, c); err != nil {
				return err
			}
			touch(c)
		}
		if err := recs.flush(); err != nil {
			return err
		}
		if err := bySess.Flush(); err != nil {
			return err
		}
		if err := byDoc.Flush(); err != nil {
			return err
		}
		groups := make([]groupKey, 0, len(touched))
		for g := range touched {
			groups = append(groups, g)
		}
		sort.Slice(groups, func(i, j int) bool {
			if groups[i].prefix != groups[j].prefix {
				return groups[i].prefix < groups[j].prefix
			}
			return groups[i].id < groups[j].id
		})
		// Every touched group's reach first, then the content of all
		// their chunks in one pass over the log in seq order, then the
		// blocks and summaries.
		plans := make([]*blockPlan, len(groups))
		var need []*chunk
		for i, g := range groups {
			gc := touched[g]
			p, err := planBlocks(tx, g, gc.lo, gc.hi, x.ops, recs)
			if err != nil {
				return fmt.Errorf("group %q: %w", g.id, err)
			}
			plans[i] = p
			for _, cs := range p.chunks {
				for _, c := range cs {
					if x.ops[c.id] == nil { // else applied since the last Commit: analysed already
						need = append(need, c)
					}
				}
			}
		}
		n, err := x.readContent(need)
		x.reread += n
		if err != nil {
			return err
		}
		sums := tx.Bucket(bucketSummaries)
		// A bulk build leaves the search index to EndBulk (the old
		// summaries are not needed then).
		search := !x.bulk && !x.searchStale
		for i, g := range groups {
			if err := plans[i].put(tx, g, x.opts); err != nil {
				return fmt.Errorf("group %q: %w", g.id, err)
			}
			s, err := merge(tx, g, x.opts)
			if err != nil {
				return err
			}
			key := append([]byte{g.prefix}, g.id...)
			if g.prefix == prefixSession && search {
				sc := &searchChange{new: s}
				if raw := sums.Get(key); raw != nil {
					sc.old = &Summary{}
					if err := decodeSummary(raw, sc.old); err != nil {
						return fmt.Errorf("summary %q: %w", g.id, err)
					}
				}
				changed[g.id] = sc
			}
			if s == nil {
				if err := sums.Delete(key); err != nil {
					return err
				}
			} else {
				b, err := json.Marshal(s)
				if err != nil {
					return err
				}
				if err := sums.Put(key, b); err != nil {
					return err
				}
			}
		}
		switch {
		case search:
			if err := updateSearch(tx, changed); err != nil {
				return fmt.Errorf("session search index: %w", err)
			}
		case x.bulk:
			if err := tx.Bucket(bucketMeta).Put(keySearchStale, []byte{1}); err != nil {
				return err
			}
		default: // left behind by a bulk build that did not end
			if err := rebuildSearch(tx); err != nil {
				return fmt.Errorf("session search index: %w", err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keyCP, cpb)
	})
	if err != nil {
		clear(x.staged)
		return fmt.Errorf("commit summaries: %w", err)
	}
	x.applyStaged()
	x.searchStale = x.bulk
	clear(x.ops)
	x.cp = cp
	if scrub {
		return x.compact()
	}
	return nil
}

// BeginBulk implements projections.BulkBuilder: until EndBulk, commits
// leave the session search index behind the summaries (marked so in
// meta), and EndBulk builds it once from them.
//
// Commits also defer the records of the chunks they store new to
// "chunks_bulk" (chunksbulk.go). When "chunks" is empty (a first build),
// Commit also remembers the keys it puts (stored), and looks up an old
// record only for those.
func (x *Index) BeginBulk() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.bulk = true
	x.stored = nil
	if x.closed {
		return
	}
	if x.pend == nil {
		x.pend = projections.NewPendingKeys()
	}
	x.stored = projections.AbsentKeysFor(Name, x.db, bucketChunks)
}

// EndBulk implements projections.BulkBuilder: it moves the deferred
// chunk records into "chunks" and brings the search index the bulk
// build's commits left behind up to the summaries.
func (x *Index) EndBulk() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.bulk = false
	x.stored = nil
	if x.closed {
		x.pend = nil
		return nil
	}
	if err := x.settle(); err != nil {
		// pend stays: the next Commit settles first.
		return fmt.Errorf("end summary bulk build: %w", err)
	}
	x.pend = nil
	if !x.searchStale {
		return nil
	}
	if err := x.db.Update(rebuildSearch); err != nil {
		return fmt.Errorf("rebuild session search index: %w", err)
	}
	x.searchStale = false
	return nil
}

// ReleaseMemory implements projections.MemoryReleaser.
func (x *Index) ReleaseMemory() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.closed {
		projections.ReleaseBolt(x.db)
	}
}

// Compact implements projections.Compacter: the file is rewritten tight
// after a bulk load, unless the load left it nearly tight
// (projections.BoltLoose). Removals do not wait for it: their commit
// compacts (scrub).
func (x *Index) Compact() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if loose, err := projections.BoltLoose(x.db); err != nil || !loose {
		return err
	}
	return x.compact()
}

// compact rewrites summary.db without its free pages, so the content of
// removed chunks (and the summaries that quoted it) leaves the disk.
func (x *Index) compact() error {
	if err := x.db.Close(); err != nil {
		x.closed = true
		return fmt.Errorf("close summary db for compaction: %w", err)
	}
	err := projections.CompactBolt(x.path(), &bolt.Options{})
	db, oerr := projections.OpenBolt(x.path(), nil)
	if oerr != nil {
		x.closed = true
		return errors.Join(err, fmt.Errorf("reopen summary db: %w", oerr))
	}
	x.db = db
	return err
}

// groupChange is what one Commit changes in a group: the range of index
// keys touched (old and new positions).
type groupChange struct{ lo, hi []byte }

func (gc *groupChange) span(k []byte) {
	if gc.lo == nil || bytes.Compare(k, gc.lo) < 0 {
		gc.lo = k
	}
	if gc.hi == nil || bytes.Compare(k, gc.hi) > 0 {
		gc.hi = k
	}
}

func deleteIndexes(bySess, byDoc *projections.SortedWrites, c *chunk) error {
	if c.session != "" {
		if err := bySess.Delete(orderKey(groupKey{prefixSession, c.session}, c)); err != nil {
			return err
		}
	}
	if d := c.docID(); d != "" {
		if err := byDoc.Delete(orderKey(groupKey{prefixDocument, d}, c)); err != nil {
			return err
		}
	}
	return nil
}

func putIndexes(bySess, byDoc *projections.SortedWrites, c *chunk) error {
	if c.session != "" {
		if err := bySess.Put(orderKey(groupKey{prefixSession, c.session}, c), nil); err != nil {
			return err
		}
	}
	if d := c.docID(); d != "" {
		if err := byDoc.Put(orderKey(groupKey{prefixDocument, d}, c), nil); err != nil {
			return err
		}
	}
	return nil
}

// lenPrefix is uvarint(len(s)) ‖ s, the prefix of secondary-index keys.
func lenPrefix(s string) []byte {
	b := binary.AppendUvarint(make([]byte, 0, len(s)+2), uint64(len(s)))
	return append(b, s...)
}

// timeKey orders signed times as big-endian unsigned keys.
func timeKey(t int64) [8]byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(t)^(1<<63))
	return k
}

// encodeChunk: kind ‖ uvarint index ‖ time(8, BE) ‖ str session ‖ str
// chunk_parent ‖ uvarint seq. Neither the content nor its analysis is
// stored (format 3): the log keeps the text once, and a Commit reads back
// by seq only the chunks of the blocks it rebuilds (readContent).
func encodeChunk(c *chunk) []byte {
	b := make([]byte, 0, 32+len(c.session)+len(c.chunkParent))
	b = append(b, byte(c.kind))
	b = binary.AppendUvarint(b, uint64(c.index))
	b = binary.BigEndian.AppendUint64(b, uint64(c.time))
	b = appendStr(b, c.session)
	b = appendStr(b, c.chunkParent)
	return binary.AppendUvarint(b, c.seq)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// chunkTime reads the content time of a stored chunk record.
func chunkTime(id string, raw []byte) (int64, error) {
	if len(raw) < 1 {
		return 0, fmt.Errorf("decode chunk %q: %w: empty record", id, ErrCorrupt)
	}
	v, n := binary.Uvarint(raw[1:])
	if n <= 0 || v > 1<<31 || len(raw) < 1+n+8 {
		return 0, fmt.Errorf("decode chunk %q: %w: time", id, ErrCorrupt)
	}
	return int64(binary.BigEndian.Uint64(raw[1+n:])), nil
}

// decodeChunk parses a stored chunk record (without its content: see
// readContent).
func decodeChunk(id string, raw []byte) (*chunk, error) {
	bad := func(what string) (*chunk, error) {
		return nil, fmt.Errorf("decode chunk %q: %w: %s", id, ErrCorrupt, what)
	}
	if len(raw) < 1 {
		return bad("empty record")
	}
	c := &chunk{id: id, kind: log.Kind(raw[0])}
	r := newFieldReader(raw, 1)
	v, ok := r.uvarint()
	if !ok || v > 1<<31 {
		return bad("chunk index")
	}
	c.index = int(v)
	if r.left() < 8 {
		return bad("time")
	}
	c.time = int64(binary.BigEndian.Uint64(raw[r.p:]))
	r.p += 8
	if c.session, ok = r.str(); !ok {
		return bad("session")
	}
	if c.chunkParent, ok = r.str(); !ok {
		return bad("chunk parent")
	}
	if c.seq, ok = r.uvarint(); !ok {
		return bad("seq")
	}
	if r.left() != 0 {
		return bad("trailing bytes")
	}
	return c, nil
}

// Session returns the committed summary of a session.
func (x *Index) Session(id string) (Summary, bool, error) {
	return x.get(prefixSession, id)
}

// Document returns the committed summary of a document (its chunk_parent,
// or the chunk id of a standalone document chunk).
func (x *Index) Document(id string) (Summary, bool, error) {
	return x.get(prefixDocument, id)
}

func (x *Index) get(prefix byte, id string) (Summary, bool, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return Summary{}, false, ErrClosed
	}
	var s Summary
	var found bool
	err := x.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSummaries).Get(append([]byte{prefix}, id...))
		if b == nil {
			return nil
		}
		found = true
		return decodeSummary(b, &s)
	})
	if err != nil {
		return Summary{}, false, fmt.Errorf("read summary %q: %w", id, err)
	}
	return s, found, nil
}

func decodeSummary(b []byte, s *Summary) error {
	if err := json.Unmarshal(b, s); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// All returns every committed summary: sessions by id, then documents by id.
func (x *Index) All() ([]Summary, error) {
	var out []Summary
	err := x.each(func(s *Summary) error {
		out = append(out, *s)
		return nil
	})
	return out, err
}

func (x *Index) each(fn func(*Summary) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return ErrClosed
	}
	err := x.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSummaries).ForEach(func(k, v []byte) error {
			var s Summary
			if err := decodeSummary(v, &s); err != nil {
				return fmt.Errorf("summary %q: %w", k, err)
			}
			return fn(&s)
		})
	})
	if err != nil {
		return fmt.Errorf("read summaries: %w", err)
	}
	return nil
}

// Count returns the number of live chunks, uncommitted changes included
// (projtest.Counter).
func (x *Index) Count() (int, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return 0, ErrClosed
	}
	var n int
	err := x.view(func(tx *bolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		n = chunks.Stats().KeyN
		if x.pend != nil {
			n += x.pend.Len()
		}
		for id, c := range x.ops {
			was := x.has(chunks, projections.IDKey(id))
			switch {
			case was && c == nil:
				n--
			case !was && c != nil:
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count chunks: %w", err)
	}
	return n, nil
}

// Contains reports whether chunk id is live, uncommitted changes included
// (projtest.Container).
func (x *Index) Contains(id string) (bool, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return false, ErrClosed
	}
	if c, ok := x.ops[id]; ok {
		return c != nil, nil
	}
	var found bool
	err := x.view(func(tx *bolt.Tx) error {
		found = x.has(tx.Bucket(bucketChunks), projections.IDKey(id))
		return nil
	})
	return found, err
}

// has reports whether chunk key is committed, its record deferred
// (x.pend) or in chunks.
func (x *Index) has(chunks *bolt.Bucket, key []byte) bool {
	if x.pend != nil {
		if _, ok := x.pend.Get(key); ok {
			return true
		}
	}
	return chunks.Get(key) != nil
}

// Digest is SHA-256 over "ucl-summary/<version tag>" and every committed
// summary in (kind, id) order, each field length-prefixed.
func (x *Index) Digest() ([32]byte, error) {
	h := sha256.New()
	h.Write(append(x.versionTag(), '\n'))
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	err := x.each(func(s *Summary) error {
		b = b[:0]
		str(s.Kind)
		str(s.ID)
		str(s.Session)
		str(s.Text)
		b = binary.AppendUvarint(b, uint64(len(s.KeyTerms)))
		for _, t := range s.KeyTerms {
			str(t)
		}
		b = binary.BigEndian.AppendUint64(b, uint64(s.First))
		b = binary.BigEndian.AppendUint64(b, uint64(s.Last))
		b = binary.AppendUvarint(b, uint64(s.Chunks))
		b = binary.AppendUvarint(b, uint64(s.Tokens))
		h.Write(b)
		return nil
	})
	if err != nil {
		return [32]byte{}, err
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// Search scores sessions for text by BM25 over each committed session
// summary's text plus its key terms (see search.go) and returns the best
// k, ties by session id. Text without content words gives no hits. It
// reads the stored postings of the text's words, not the summaries.
func (x *Index) Search(ctx context.Context, text string, k int) ([]SessionHit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search summaries: k %d: %w", k, ErrInvalidQuery)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("search summaries: %w", err)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, ErrClosed
	}
	words := textutil.ContentWords(text)
	var hits []SessionHit
	err := x.view(func(tx *bolt.Tx) error {
		var err error
		hits, err = searchStored(tx, words, k)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search summaries: %w", err)
	}
	return hits, nil
}

// Reset drops all state and sets the checkpoint to zero.
func (x *Index) Reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if err := x.db.Close(); err != nil {
		return fmt.Errorf("close summary db for reset: %w", err)
	}
	if x.pend != nil {
		x.pend.Clear() // their records were in the old file
	}
	if err := os.Remove(x.path()); err != nil && !os.IsNotExist(err) {
		x.closed = true
		return fmt.Errorf("remove summary db: %w", err)
	}
	if err := x.open(); err != nil {
		x.closed = true
		return err
	}
	return nil
}

// Size returns the bytes on disk (projections.Sizer).
func (x *Index) Size() int64 {
	fi, err := os.Stat(x.path())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Close drops uncommitted changes and closes the store.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	if err := x.db.Close(); err != nil {
		return fmt.Errorf("close summary db: %w", err)
	}
	return nil
}

// view runs fn in a read transaction; a panic of a damaged file becomes a
// *projections.DamagedError.
func (x *Index) view(fn func(tx *bolt.Tx) error) error {
	return projections.Guard(Name, func() error { return x.db.View(fn) })
}

// fieldReader reads the varint and length-prefixed fields of a stored
// record (decodeChunk, decodeBlock). It copies the record once, so every
// string field it returns is a substring of that copy, not an allocation.
type fieldReader struct {
	raw []byte
	rec string
	p   int
}

func newFieldReader(raw []byte, p int) *fieldReader {
	return &fieldReader{raw: raw, rec: string(raw), p: p}
}

// left is the number of bytes not read yet.
func (r *fieldReader) left() int { return len(r.rec) - r.p }

func (r *fieldReader) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(r.raw[r.p:])
	if n <= 0 {
		return 0, false
	}
	r.p += n
	return v, true
}

func (r *fieldReader) str() (string, bool) {
	l, ok := r.uvarint()
	if !ok || l > uint64(r.left()) {
		return "", false
	}
	s := r.rec[r.p : r.p+int(l)]
	r.p += int(l)
	return s, true
}
