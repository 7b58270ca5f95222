// Package fts is the full-text projection: a bleve v2 (scorch) index over the
// content of every live chunk, with keyword fields for the query filters.
//
// Layout under the projection directory:
//
//	index/    the bleve scorch index. Doc id = the seq of the event that
//	          stored the chunk's version, 8 bytes BE (DocID, format 8;
//	          side.db's "docs" record at that seq names the chunk; chunk
//	          ids before, whose random order made bleve's "_id"
//	          dictionaries costly to build and merge, and sent every
//	          batch's ids to every older segment). Indexed, not stored:
//	          content (English analyzer "en"), session, kind, role,
//	          chunk_parent (keyword), meta (keyword, one term "key NUL
//	          value" per pair; format 4). Time is not in the index (a numeric
//	          field is 16 prefix terms per document, a third of the indexing
//	          CPU): time filters take their ids from side.db's "by_time".
//	          Indexes built before kept a numeric "time" field; it is unused.
//	          Scoring model BM25. Internal key "ucl/checkpoint" holds the
//	          checkpoint JSON, written in the same batch as the last documents
//	          of a Commit (bleve batches are atomic and, with unsafe_batch off,
//	          durable when Batch returns).
//	side.db   bbolt, the source of truth for which chunks are live: bucket
//	          "ids" maps chunk id (projections.IDKey) -> the seq (8, BE) of
//	          the event that stored its live version (format 9: a hex id's
//	          entry in a group of the ids sharing its key's first 3 bytes,
//	          ids.go), and "docs" maps that
//	          seq (8, BE) -> uvarint len(IDKey) ‖ IDKey(chunk id) ‖ the
//	          first 16 bytes of SHA-256 of the indexed fields (meta pairs in
//	          key order included) ‖ uvarint content word count ‖ mentions ‖
//	          uvarint seq (the key's) ‖ time (8, BE) ‖
//	          session, where mentions (format 4) is uvarint n ≤
//	          timephrase.MaxMentions ‖ n × (since, until: 8 bytes BE each),
//	          the times the content talks about (timephrase.Mentions
//	          against the chunk's content time, UTC days: "yesterday" in a
//	          turn of 2023-10-04 is 2023-10-03; a pure function of the
//	          store, never of a setting); "changes" maps the seq (8, BE) of
//	          every event that changed or hid an item already stored (a
//	          tombstone, an edit, a store that supersedes items or
//	          overwrites a live chunk stored by an earlier event; a
//	          redelivered event is not an overwrite of itself) -> empty
//	          (ChangedAfter, for memory as of a seq); "by_time" maps time (8, BE, sign bit
//	          flipped) ‖ IDKey(chunk id) -> empty, for time filters and
//	          tombstones by time range; "meta" holds the format version, the
//	          checkpoint and the BM25 statistics (live docs, total content
//	          words), and while a first bulk build defers "ids" entries
//	          "ids_from", the version then "9+ids_from" (idsbulk.go).
//	          Format 3 keyed chunks by IDKey (17 bytes for a hex id, not
//	          32), cut the field hash to 16 bytes and dropped the
//	          "by_session" index: a tombstone by session scans "docs" (one
//	          pass over the records, 0.3 ms per 10K chunks in
//	          BenchmarkTombstoneSession; the vector projection already
//	          resolves every tombstone over all its chunks), which took the
//	          projection from 1.33 to 0.97 bytes per input byte at 50K turns.
//	          Format 7 keys "docs" by seq behind the "ids" index (one event
//	          stores at most one chunk): a bulk build appends the records
//	          at the end of the bucket and only the small ids entries go in
//	          at random places. Keyed by chunk id (format 6), every commit of
//	          a bulk build inserted records all over the file and mapped most
//	          of it. Format 9 groups the ids entries (ids.go): one bbolt
//	          key per chunk made each bulk commit hold a node element per
//	          chunk of the store.
//
// Invariants:
//   - Apply only queues work: stores and deletes go into a pending bleve
//     batch (executed when it reaches Options.BatchSize, without a
//     checkpoint, in the background while Apply fills the next one; one
//     batch executes at a time, in order), and side-table changes stay in
//     memory until Commit. A batch that failed fails every later change
//     and Commit: the index lacks documents the side table would name.
//   - A tombstone resolves its targets (projections.TombstoneMatches: ids,
//     or session ∩ time range) against the committed side table corrected by
//     the uncommitted changes: a chunk stored or deleted since the last
//     Commit is judged by its current state, so a store followed by a
//     tombstone in one batch ends deleted and a chunk moved to another
//     session is not hit by a tombstone of the old one. Bleve is never asked
//     which chunks are live, so an index that ran ahead of the side table
//     (a full batch executed, then a crash) converges on replay.
//   - Commit executes the batch with the checkpoint, then commits the side
//     table and the checkpoint to bbolt. After a crash between the two, Open
//     takes the lower checkpoint: replaying from it is idempotent.
//   - Digest = SHA-256 over "ucl-fts/6\n" (digestVersion) then, per live
//     chunk in the order of its stored key (IDKey, the "ids" bucket's
//     order), uvarint len(id)‖id‖fieldhash
//     (16 bytes)‖mentions (as stored), then a zero byte and,
//     per document the bleve index holds in chunk id order, uvarint len(id)‖id,
//     (documents named by the chunk id of the live version they hold,
//     format 8; a document no live version names as "\x00" ‖ its id),
//     then a one byte and the seqs of "changes" in order (8 bytes BE),
//     then (format 5) a two byte and, per field in the order content,
//     session, kind, role, chunk_parent, meta: uvarint len(field)‖field,
//     per term the index holds for a live document, in the dictionary's
//     byte order, 0x01‖uvarint len(term)‖term‖uvarint n‖n × (uvarint
//     len(id)‖id‖uvarint freq) by id, then a zero byte.
//     The index parts cover what searches read: a document missing from
//     (or left over in) the index, or re-indexed with other text under
//     its id, changes the digest, so `project verify` catches it. It
//     includes applied but uncommitted changes (Digest executes the
//     pending batch first) and never depends on segment layout. Version 2
//     added the ids of the index, version 5 its terms (the on-disk files
//     are as in format 4; the bump makes a format-4 projection, and a
//     snapshot's format-4 digest, rebuild rather than compare digests of
//     two definitions). Reading every posting makes Digest cost about one
//     pass over the index. Formats 7 to 9 moved the side table's records
//     and entries, not what the digest covers: their digest is format 6's.
//   - Deleted documents leave the disk: scorch only flags them in their
//     segment, whose term dictionary keeps their words, and keeps old
//     segment files while old snapshots name them. A Commit that deleted
//     documents force-merges the index into one segment (a throw-away
//     document makes a lone segment eligible, then is deleted), copies the
//     current snapshot alone into index.purge, swaps it in for index/ and
//     compacts side.db. Open removes index.purge / index.old left by a
//     crash.
//   - A batch executed without a checkpoint (full batch, Digest) also sets
//     the internal key "ucl/ahead"; Commit's batch clears it. Open checks,
//     when the two checkpoints agree and the index is not ahead, that the
//     index holds exactly the side table's number of live documents: a
//     damaged segment fails the open (projstd then resets and rebuilds).
//   - Search scores with BM25 using statistics from the side table (N = live
//     docs, average length = ceil(total content words / N)) instead of
//     bleve's own, which count the term dictionary of every segment and so
//     depend on how the index was built. Same live set ⇒ same scores and the
//     same ranking, ties broken by chunk id. Search sees executed batches:
//     everything up to the last Commit (plus any batch flushed because it
//     was full: a search waits for the one executing in the background).
//   - Typo tolerance (Search, unless Query.NoFuzzy): a query word no live
//     chunk holds also matches, by a fuzzy term query at half weight, the
//     terms within one edit of it (two from eight letters); a word that
//     occurs is never widened, so a query whose words all occur scores
//     exactly as without it (see fuzzyTerms).
package fts

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/textutil"
	"github.com/unlimitedcontext/ucl/internal/timephrase"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Name is the projection name.
const Name = "fts"

// FormatVersion is the on-disk format version; change it whenever the
// mapping, the analyzer, the field hash, the side table's layout or what
// timephrase.Mentions reads changes (6: durations, "for 3 years", are
// mentioned times; a format-5 projection rebuilds rather than keep, and
// digest, the old ranges; 7: side-table records keyed by seq behind the
// "ids" index; 8: bleve's document ids are the seqs of the events that
// stored the chunks, DocID; 9: "ids" entries of hex ids grouped by key
// prefix, ids.go). A store of another version is wiped and rebuilt.
const FormatVersion = 9

// digestVersion starts the digest ("ucl-fts/6\n"). Formats 7 to 9
// changed the side table's keys and bleve's document ids, not the content
// the digest covers (it names documents by chunk id), so they have format
// 6's digest. Bump it with FormatVersion when what
// the digest covers changes.
const digestVersion = 6

// DefaultBatchSize is the number of queued operations after which Apply
// executes the pending batch. Bleve analyses a batch and builds its
// segment all at once, so the batch sets the build's peak memory: the
// 100K-document bench/peers build peaked at 274-279 MB with batches of
// 20000 (one per projector commit), 173-177 MB at 5000 and 115-119 MB at
// 2500 (SQLite FTS5: 38 MB), for about 10% more CPU (scorch merges the
// 40 segments; with one batch a commit it merged none at 100K). A
// catch-up's Commit then executes only the rest of its batches.
const DefaultBatchSize = 2500

// DefaultBatchBytes bounds the text (content and keyword fields) queued in
// the pending batch: Apply executes it when it holds this much. A bound in
// operations alone lets a batch of large chunks grow to DefaultBatchSize ×
// log.MaxEventSize. At 1 MiB the 100K-document bench/peers build peaked
// at 117 MB instead of 237-241 MB, but a catch-up of one 2 MiB document
// and a 1 MiB turn (test/TestBigEventsBoundedMemory) then peaked at
// 142 MB or 1.3 GB from run to run (bleve merging the extra segments);
// at 64 MiB it peaked at 202-216 MB in 4 of 4 runs. So the bound is a
// ceiling for batches of large chunks, not a memory tuning.
const DefaultBatchBytes = 64 << 20

var (
	// ErrClosed is returned when a method is called after Close.
	ErrClosed = errors.New("fts: closed")

	// ErrInvalidQuery is returned by Search when the query has no text, a
	// non-positive K, or an empty time range.
	ErrInvalidQuery = errors.New("fts: invalid query")

	// ErrWideTimeRange is returned (wrapped) by Search when the query's
	// time range holds more chunks than its MaxInTime.
	ErrWideTimeRange = errors.New("fts: time range holds too many chunks")

	// ErrCorrupt is returned (wrapped) when the side table holds an entry
	// that does not decode.
	ErrCorrupt = errors.New("fts: corrupt side table")

	// ErrIndexMismatch is returned (wrapped) when the bleve index and the
	// side table disagree about the live documents at the same checkpoint.
	ErrIndexMismatch = errors.New("fts: index does not match side table")
)

// Field names in the bleve mapping.
const (
	fieldContent     = "content"
	fieldSession     = "session"
	fieldKind        = "kind"
	fieldRole        = "role"
	fieldChunkParent = "chunk_parent"
	fieldTime        = "time"
	// fieldMeta holds one keyword term per meta pair (metaTerm).
	fieldMeta = "meta"
)

// metaTerm is the fieldMeta term of a meta pair: key NUL value.
func metaTerm(k, v string) string { return k + "\x00" + v }

// sortedMeta returns the keys of m in order.
func sortedMeta(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var (
	// bucketIDs: IDKey(chunk id) -> seq (8, BE) of its record in
	// bucketDocs (format 7), hex ids in groups (format 9: idsGet, idsPut,
	// idsDelete, idsCursor).
	bucketIDs    = []byte("ids")
	bucketDocs   = []byte("docs")
	bucketByTime = []byte("by_time")
	// bucketChanges: seq (8, BE) -> empty for every event that changed
	// or hid an item already stored (see ChangedAfter).
	bucketChanges = []byte("changes")
	bucketMeta    = []byte("meta")
	keyCP         = []byte("checkpoint")
	keyVersion    = []byte("version")
	keyStats      = []byte("stats") // live docs, total content words
	internalCP    = []byte("ucl/checkpoint")
	// internalAhead is set by a batch executed without a checkpoint (the
	// index may hold documents the side table does not have yet) and
	// cleared by the next Commit's batch.
	internalAhead = []byte("ucl/ahead")
)

// purgeID is the throw-away document that lets a force merge rewrite a
// lone segment (bleve's planner leaves a single segment alone, deleted
// documents included). The NUL makes it unlike any chunk id a store
// event can carry in practice; it is deleted right after the merge.
const purgeID = "\x00ucl-purge"

// Options tune the index. The zero value means defaults.
type Options struct {
	// BatchSize is how many operations Apply queues before executing the
	// bleve batch (default DefaultBatchSize).
	BatchSize int
	// BatchBytes is how much text Apply queues before executing the bleve
	// batch (default DefaultBatchBytes).
	BatchBytes int
}

// Index is the full-text projection. It is safe for concurrent use; Search
// may run while Apply is called.
type Index struct {
	dir  string
	opts Options

	mu  sync.RWMutex
	idx bleve.Index
	// ro: idx was opened read-only, as every stored index is: scorch
	// opened for writing starts its persister and merger and rewrites its
	// root database at open, which a process that only searches does not
	// need. The first change reopens it for writing (writable).
	ro     bool
	db     *bolt.DB
	cp     projections.Checkpoint
	closed bool
	nDocs  uint64 // committed live docs
	nWords uint64 // committed total content words

	enAnalyzer analysis.Analyzer

	batch      *bleve.Batch
	batchBytes int // text queued in batch (Options.BatchBytes)
	// contents: the content fields queued in batch, whose analysis memory
	// is reused once it has executed (analysisBuf).
	contents []*contentField
	// kw: the keyword fields made for session, kind, role and
	// chunk_parent by value, shared by later chunks with the same value
	// (keywordField is immutable, and a chunk holds each once); each
	// map is emptied when it reaches maxSharedKeywords.
	kw [4]map[string]*keywordField
	// hashBuf is fieldHash's input, reused.
	hashBuf []byte
	sideOps map[string]*docMeta // side-table changes since the last Commit
	// stored holds the keys put into "ids" since a BeginBulk that found
	// it empty (a first build): a chunk whose key it never saw was not
	// stored before, so liveSeqLocked and Commit skip looking it up. In a
	// first build nearly every lookup misses, and each miss faulted in
	// side.db pages around it (stop 41: the whole bucket resident between
	// commits).
	stored *projections.AbsentKeys
	// deferIDs: the "ids" entries a first bulk build defers (idsbulk.go);
	// nil outside one.
	deferIDs *deferredIDs
	// purge is set when documents were deleted since the last Commit: the
	// Commit then merges the deletions out of the segments (package doc).
	purge bool
	// changes: seqs of the events since the last Commit that changed an
	// item already stored (bucketChanges), ascending.
	changes []uint64
	// running is the full batch executing in the background (nil when
	// none; see maybeFlush); batchErr is the first error a batch
	// returned, kept until the pending state is dropped (resetPending).
	running  *runningBatch
	batchErr error
	// lookup is a read transaction of side.db kept open from one Apply
	// to the next for liveSeqLocked's lookups: a transaction per store
	// was 2% of a bulk build's CPU. Nothing writes side.db between two
	// Commits, so it reads the committed state. endLookup ends it before
	// anything writes, compacts or closes side.db (bbolt's remap and
	// Close wait for open read transactions).
	lookup *bolt.Tx
}

// runningBatch is a full batch executing in the background: done is
// closed when it has executed (or failed, err).
type runningBatch struct {
	done chan struct{}
	err  error
}

// docMeta is what a tombstone needs to know about a pending document, plus
// its field hash.
type docMeta struct {
	session string
	time    int64
	tokens  int // content words (textutil.ContentWords), for BM25's average length
	hash    [hashSize]byte
	// mentions: the times the content talks about (timephrase.Mentions
	// against the chunk's time, in UTC).
	mentions []timephrase.Range
	// seq of the event that stored this version (tells an overwrite from
	// a redelivery, see Apply).
	seq uint64
}

// hashSize is how much of a store's field hash the side table keeps: the
// digest compares builds, for which 128 bits is ample.
const hashSize = 16

var (
	_ projections.Projection  = (*Index)(nil)
	_ projections.BulkBuilder = (*Index)(nil)
)

// Open opens (or creates) the projection in dir with default options.
func Open(dir string) (*Index, error) { return OpenOptions(dir, Options{}) }

// OpenOptions opens (or creates) the projection in dir. A stored state of
// another format version is discarded and rebuilt from zero.
func OpenOptions(dir string, opts Options) (*Index, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	x := &Index{dir: dir, opts: opts}
	if err := x.open(); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *Index) indexPath() string { return filepath.Join(x.dir, "index") }
func (x *Index) sidePath() string  { return filepath.Join(x.dir, "side.db") }

func (x *Index) open() error {
	if err := os.MkdirAll(x.dir, 0o700); err != nil {
		return fmt.Errorf("create fts dir: %w", err)
	}
	// Leftovers of a purge interrupted by a crash (see purgeDeleted).
	for _, d := range []string{x.indexPath() + ".purge", x.indexPath() + ".old"} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("remove fts leftovers: %w", err)
		}
	}
	db, err := projections.OpenBolt(x.sidePath(), nil)
	if err != nil {
		return fmt.Errorf("open fts side table: %w", err)
	}
	if err := projections.CheckBolt(db); err != nil {
		db.Close()
		return fmt.Errorf("open fts side table: %w", err)
	}
	var sideCP *projections.Checkpoint
	stale := false
	var window uint64
	// A read: a process that only searches writes nothing (a no-op bbolt
	// commit still writes and syncs two pages), unless a bulk build
	// stopped with "ids" entries deferred (settled below).
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta != nil {
			var err error
			if window, err = windowFrom(tx); err != nil {
				return err
			}
			if v := meta.Get(keyVersion); v == nil || string(v) != fmt.Sprint(FormatVersion) && window == 0 {
				stale = true
			} else if b := meta.Get(keyCP); b != nil {
				sideCP = new(projections.Checkpoint)
				if err := json.Unmarshal(b, sideCP); err != nil {
					return fmt.Errorf("decode checkpoint: %w", err)
				}
				if st := meta.Get(keyStats); len(st) == 16 {
					x.nDocs = binary.BigEndian.Uint64(st)
					x.nWords = binary.BigEndian.Uint64(st[8:])
				}
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return fmt.Errorf("read fts side table: %w", err)
	}
	_, statErr := os.Stat(x.indexPath())
	if stale || (statErr == nil) != (sideCP != nil) {
		// Another version, or one half missing: start over.
		db.Close()
		if err := x.wipe(); err != nil {
			return err
		}
		if db, err = projections.OpenBolt(x.sidePath(), nil); err != nil {
			return fmt.Errorf("open fts side table: %w", err)
		}
		sideCP, window = nil, 0
	}
	// Reopened during this process's bulk build (purgeDeleted), its
	// window goes on; any other window is settled.
	if d := x.deferIDs; d == nil || d.from == 0 || d.from != window {
		if d != nil {
			d.clear()
		}
		if window != 0 {
			var cpSeq uint64
			if sideCP != nil {
				cpSeq = sideCP.Seq
			}
			if err := settleIDs(db, window, windowEvents(cpSeq, window)); err != nil {
				db.Close()
				return fmt.Errorf("open fts side table: %w", err)
			}
		}
	}
	x.db = db
	if sideCP == nil {
		if err := x.create(); err != nil {
			db.Close()
			return err
		}
	} else {
		// Read-only, scorch does not load root.bolt's free list, which is
		// what made a truncated file fail to open for writing: check its
		// size as the other databases are checked.
		if err := checkRootBolt(filepath.Join(x.indexPath(), "store", "root.bolt")); err != nil {
			db.Close()
			return fmt.Errorf("open bleve index: %w", err)
		}
		idx, err := bleve.OpenUsing(x.indexPath(), map[string]interface{}{"read_only": true})
		if err != nil {
			db.Close()
			return fmt.Errorf("open bleve index: %w", err)
		}
		x.idx, x.ro = idx, true
		x.cp = *sideCP
		b, err := idx.GetInternal(internalCP)
		if err != nil {
			x.closeAll()
			return fmt.Errorf("read index checkpoint: %w", err)
		}
		var icp projections.Checkpoint
		if b != nil {
			if err := json.Unmarshal(b, &icp); err != nil {
				x.closeAll()
				return fmt.Errorf("decode index checkpoint: %w", err)
			}
		}
		if icp.Seq < x.cp.Seq {
			x.cp = icp
		}
		// A cheap consistency probe (no scan): when both halves are at the
		// same checkpoint, the index must hold exactly the live documents
		// of the side table. Damaged segments (zeroed, truncated) count
		// differently or fail here.
		n, err := idx.DocCount()
		if err != nil {
			x.closeAll()
			return fmt.Errorf("count index documents: %w", err)
		}
		ahead, err := idx.GetInternal(internalAhead)
		if err != nil {
			x.closeAll()
			return fmt.Errorf("read index state: %w", err)
		}
		if icp == *sideCP && ahead == nil && n != x.nDocs {
			x.closeAll()
			return fmt.Errorf("open fts: %w: index holds %d documents, side table %d", ErrIndexMismatch, n, x.nDocs)
		}
	}
	x.resetPending()
	return nil
}

// checkRootBolt opens scorch's root database read-only and checks that
// the file holds every page its meta page counts (projections.CheckBolt).
func checkRootBolt(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	return errors.Join(projections.CheckBolt(db), db.Close())
}

// writable reopens an index opened read-only for writing, before its
// first change: nothing is queued in x.batch yet (every path that queues
// calls this first), so a new batch of the reopened index replaces it.
func (x *Index) writable() error {
	if !x.ro {
		return nil
	}
	err := x.idx.Close()
	x.idx = nil
	if err == nil {
		x.idx, err = bleve.OpenUsing(x.indexPath(), nil)
	}
	if err != nil {
		x.closed = true
		if cerr := x.closeAll(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return fmt.Errorf("reopen bleve index for writing: %w", err)
	}
	x.ro = false
	x.batch, x.batchBytes, x.contents = x.idx.NewBatch(), 0, x.contents[:0]
	return nil
}

// create makes a fresh empty index and side table with checkpoint zero.
func (x *Index) create() error {
	idx, err := bleve.NewUsing(x.indexPath(), newMapping(), scorch.Name, scorch.Name, indexConfig())
	if err != nil {
		return fmt.Errorf("create bleve index: %w", err)
	}
	x.idx, x.ro = idx, false
	x.cp = projections.Checkpoint{}
	x.nDocs, x.nWords = 0, 0
	cpb, _ := json.Marshal(x.cp)
	err = x.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketIDs, bucketDocs, bucketByTime, bucketMeta, bucketChanges} {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(keyVersion, []byte(fmt.Sprint(FormatVersion))); err != nil {
			return err
		}
		return meta.Put(keyCP, cpb)
	})
	if err != nil {
		x.closeAll()
		return fmt.Errorf("init fts side table: %w", err)
	}
	return nil
}

// indexConfig is the scorch configuration a new index is created with;
// bleve keeps it in index_meta.json, so every later open of the index for
// writing merges by the same plan. Segments merge 20 at a time into tiers
// of up to 20 (scorch's default: 10 and 10): a bulk build's segments of
// DefaultBatchSize documents go through fewer merges on the way to 1M
// documents (2,500 -> 50K -> 1M rather than 2,500 -> 25K -> 250K), and
// merges were 13% of a 1M build's CPU. Same-time pairs at 1M random ids
// (bench/peers): CPU 126.5 -> 120.7 s (format 8) and 110.3 -> 104.7 s
// (format 9), peak RSS 432 -> 461 and 227 -> 217 MB; `project rebuild
// --only fts` of the 1M LoCoMo store 74.5 -> 72.1 s, 417 -> 443 MB. The
// 1M index keeps 40 segments instead of 23; a bm25 query process costs
// the same CPU and peak RSS (72-105 MB either way), and hits do not
// depend on the plan (scores use the side table's statistics).
//
// Segments are zap v16 files, forced: bleve v2.6 writes v17 by default,
// which a binary on bleve v2.5 cannot open. v16 keeps the on-disk format
// of every earlier index and snapshot, both ways. bleve v2.6 builds them
// with less CPU than v2.5 did (bench/peers at 100K documents: ucl ÷ FTS5
// CPU 2.47 -> 2.32, medians of 6 alternated runs), and v17 measured no
// better than v16.
func indexConfig() map[string]interface{} {
	return map[string]interface{}{
		"forceSegmentType":    "zap",
		"forceSegmentVersion": 16,
		"scorchMergePlanOptions": map[string]interface{}{
			"MaxSegmentsPerTier":   20,
			"SegmentsPerMergeTask": 20,
		},
	}
}

func (x *Index) wipe() error {
	if err := os.RemoveAll(x.indexPath()); err != nil {
		return fmt.Errorf("remove fts index: %w", err)
	}
	if err := os.Remove(x.sidePath()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove fts side table: %w", err)
	}
	return nil
}

// endLookup ends the read transaction liveSeqLocked keeps open.
func (x *Index) endLookup() {
	if x.lookup != nil {
		x.lookup.Rollback()
		x.lookup = nil
	}
}

func (x *Index) closeAll() error {
	x.endLookup()
	var errs []error
	if x.idx != nil {
		errs = append(errs, x.idx.Close())
		x.idx = nil
	}
	if x.db != nil {
		errs = append(errs, x.db.Close())
		x.db = nil
	}
	return errors.Join(errs...)
}

func (x *Index) resetPending() {
	x.running, x.batchErr = nil, nil // callers waited for it (waitBatch)
	x.enAnalyzer = x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	x.batch, x.batchBytes, x.contents = x.idx.NewBatch(), 0, x.contents[:0]
	x.sideOps = map[string]*docMeta{}
	x.changes = nil
}

func newMapping() *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	im.ScoringModel = "bm25"
	im.DefaultAnalyzer = keyword.Name
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false

	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false
	text.IncludeInAll = false
	text.IncludeTermVectors = false
	text.DocValues = false

	kw := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store = false
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		f.DocValues = false
		return f
	}
	num := bleve.NewNumericFieldMapping()
	num.Store = false
	num.IncludeInAll = false
	num.DocValues = false

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldContent, text)
	dm.AddFieldMappingsAt(fieldSession, kw())
	dm.AddFieldMappingsAt(fieldKind, kw())
	dm.AddFieldMappingsAt(fieldRole, kw())
	dm.AddFieldMappingsAt(fieldChunkParent, kw())
	dm.AddFieldMappingsAt(fieldTime, num)
	dm.AddFieldMappingsAt(fieldMeta, kw())
	im.DefaultMapping = dm
	return im
}

// Name returns "fts".
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

// fieldHash is the first hashSize bytes of SHA-256 over the indexed fields
// of a store, length-prefixed; text is s.SearchText(). The input is built
// in b, returned for reuse.
func fieldHash(b []byte, s *log.Store, text string) (h [hashSize]byte, _ []byte) {
	b = b[:0]
	for _, f := range [...]string{text, s.Session, s.Kind.String(), s.Role, s.ChunkParent} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(s.Time))
	for _, k := range sortedMeta(s.Meta) { // format 4: meta is indexed
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(s.Meta[k])))
		b = append(b, s.Meta[k]...)
	}
	sum := sha256.Sum256(b)
	copy(h[:], sum[:])
	return h, b
}

// Apply queues ev: a store is indexed, a tombstone deletes its targets,
// other event types are ignored.
func (x *Index) Apply(ev *log.Event) error {
	if ev == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if err := x.writable(); err != nil {
		return err
	}
	switch b := ev.Body.(type) {
	case *log.Store:
		if b.ChunkID == "" {
			if len(b.Supersedes) > 0 {
				x.noteChange(ev.Seq)
			}
			return nil // nothing addressable to index
		}
		// An overwrite: a version stored by an earlier event is live.
		// One stored by this event or a later one is a redelivery
		// after a crash whose applied events outran the checkpoint
		// (the change, if any, was recorded with them).
		seq, live, err := x.liveSeqLocked(b.ChunkID)
		if err != nil {
			return err
		}
		if len(b.Supersedes) > 0 || live && seq < ev.Seq {
			x.noteChange(ev.Seq)
		}
		return x.applyStore(b, ev.Seq, seq, live)
	case *log.Tombstone:
		x.noteChange(ev.Seq)
		return x.applyTombstone(b)
	case *log.Edit:
		x.noteChange(ev.Seq)
		// The old version's text leaves the index: an overwritten chunk's
		// old document is deleted as its new one is indexed, dropped
		// chunks are deleted.
		if len(b.Removes) > 0 {
			if err := x.applyTombstone(&log.Tombstone{Chunks: b.Removes}); err != nil {
				return err
			}
		}
		if b.Store.ChunkID == "" {
			return nil
		}
		seq, live, err := x.liveSeqLocked(b.Store.ChunkID)
		if err != nil {
			return err
		}
		return x.applyStore(&b.Store, ev.Seq, seq, live)
	}
	return nil
}

// noteChange records that the event at seq changed or hid an item
// (once, however often the event is redelivered).
func (x *Index) noteChange(seq uint64) {
	if n := len(x.changes); n == 0 || x.changes[n-1] < seq {
		x.changes = append(x.changes, seq)
	}
}

// applyStore indexes s, stored by the event at seq, as document
// DocID(seq); the chunk's live version, when it has one (live) at another
// seq (prev), leaves the index.
func (x *Index) applyStore(s *log.Store, seq, prev uint64, live bool) error {
	if live && prev != seq {
		x.batch.Delete(DocID(prev))
	}
	// Built directly (no reflection, no composite _all field); the fields
	// and analyzers are exactly those of newMapping, which queries use.
	doc := document.NewDocument(DocID(seq))
	doc.Fields = make([]document.Field, 0, 6+len(s.Meta)) // and the _id field scorch adds
	// A tool call is found by its name and arguments too.
	text := s.SearchText()
	x.batchBytes += len(text)
	cf := newContentField([]byte(text), x.enAnalyzer)
	doc.AddField(cf)
	for i, kv := range [...][2]string{{fieldSession, s.Session}, {fieldKind, s.Kind.String()}, {fieldRole, s.Role}, {fieldChunkParent, s.ChunkParent}} {
		x.batchBytes += len(kv[1])
		if kv[1] == "" {
			continue
		}
		f := x.kw[i][kv[1]]
		if f == nil {
			if x.kw[i] == nil || len(x.kw[i]) >= maxSharedKeywords {
				x.kw[i] = map[string]*keywordField{}
			}
			f = newKeywordField(kv[0], []byte(kv[1]))
			x.kw[i][kv[1]] = f
		}
		doc.AddField(f)
	}
	for _, k := range sortedMeta(s.Meta) {
		// Never shared: bleve merges a chunk's several meta fields into
		// the first one's frequencies.
		x.batchBytes += len(k) + len(s.Meta[k])
		doc.AddField(newKeywordField(fieldMeta, []byte(metaTerm(k, s.Meta[k]))))
	}
	if err := x.batch.IndexAdvanced(doc); err != nil {
		return fmt.Errorf("index chunk %q: %w", s.ChunkID, err)
	}
	x.contents = append(x.contents, cf)
	m := &docMeta{session: s.Session, time: s.Time, tokens: textutil.CountContentWords(text),
		mentions: timephrase.Mentions(s.Content, time.UnixMilli(s.Time).UTC()), seq: seq}
	m.hash, x.hashBuf = fieldHash(x.hashBuf, s, text)
	if cap(x.hashBuf) > 64<<10 {
		x.hashBuf = nil // a large chunk's copy is not kept
	}
	x.sideOps[s.ChunkID] = m
	return x.maybeFlush()
}

// maxSharedKeywords bounds the keyword fields Index.kw keeps per field:
// kinds and roles are a handful of values, the sessions in flight a few.
const maxSharedKeywords = 256

// maybeFlush starts executing the pending batch once it is full, in the
// background: bleve builds a batch's segment on the goroutine that calls
// Batch (40% of a bulk build's CPU), so executing it while Apply fills
// the next batch lets a build use both cores. One batch runs at a time
// and batches execute in order, so the index receives exactly the batches
// it received when each executed in Apply. A batch's error is returned by
// the next call that waits for it (Apply's next full batch, Commit,
// Digest) and by every change after it (waitBatch).
func (x *Index) maybeFlush() error {
	if x.batch.Size() < x.opts.BatchSize && x.batchBytes < x.opts.BatchBytes {
		return nil
	}
	if err := x.waitBatch(); err != nil {
		return err
	}
	x.releaseSegments() // see ReleaseMemory
	x.batch.SetInternal(internalAhead, []byte{1})
	size := x.batchBytes
	x.startBatch()
	if size > maxBackgroundBytes {
		// A batch of large chunks: Apply does not fill a second one
		// while it executes, so they are not in memory twice.
		return x.waitBatch()
	}
	return nil
}

// startBatch executes the pending batch in the background (x.running)
// and starts a new one; the caller has waited for the one before
// (waitBatch), so one batch runs at a time, in order.
func (x *Index) startBatch() {
	b, contents, idx := x.batch, x.contents, x.idx
	x.batch, x.batchBytes, x.contents = x.idx.NewBatch(), 0, make([]*contentField, 0, cap(contents))
	r := &runningBatch{done: make(chan struct{})}
	x.running = r
	go func() {
		defer close(r.done)
		// Guard: a panic here would otherwise end the process, not the
		// call that queued the batch.
		r.err = projections.Guard(Name, func() error { return executeBatch(idx, b, contents) })
	}()
}

// maxBackgroundBytes is the most text a full batch may hold and still let
// Apply return before it has executed (maybeFlush): a batch of chat turns
// holds about 1 MB, one of large documents up to Options.BatchBytes. A
// variable for the tests.
var maxBackgroundBytes = 8 << 20

// waitBatch waits for the batch executing in the background, if any, and
// returns the first error a batch returned: the index then lacks
// documents the pending side-table changes name, so no later change or
// Commit may go on. Callers hold x.mu for writing.
func (x *Index) waitBatch() error {
	if r := x.running; r != nil {
		<-r.done
		x.running = nil
		if r.err != nil && x.batchErr == nil {
			x.batchErr = r.err
		}
	}
	return x.batchErr
}

// settle waits until the batch executing in the background has executed,
// so a search sees every batch queued before it (the package doc).
// Callers hold x.mu for reading; the error is the writer's (waitBatch).
func (x *Index) settle() {
	if r := x.running; r != nil {
		<-r.done
	}
}

// flush executes the pending batch (with whatever internal keys it holds)
// after the one running in the background, and starts a new one.
func (x *Index) flush() error {
	if err := x.waitBatch(); err != nil {
		return err
	}
	b, contents := x.batch, x.contents
	x.batch, x.batchBytes, x.contents = x.idx.NewBatch(), 0, contents[:0]
	if err := executeBatch(x.idx, b, contents); err != nil {
		x.batchErr = err
		return err
	}
	return nil
}

// executeBatch executes b and gives the analysis memory of its content
// fields back (contents' entries are cleared). The executed batch is never
// reused: scorch's Batch returns once every document is analysed, but the
// goroutine that queued them may still be ranging over the batch's
// operations (Reset raced with it under the race detector).
func executeBatch(idx bleve.Index, b *bleve.Batch, contents []*contentField) error {
	if err := idx.Batch(b); err != nil {
		// Not given back: the batch may not have been analysed.
		clear(contents)
		return fmt.Errorf("execute fts batch: %w", err)
	}
	for i, f := range contents {
		f.release()
		contents[i] = nil
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
		// Committed chunks not changed since the last Commit. A session and
		// a range together select their intersection.
		err := x.view(func(tx *bolt.Tx) error {
			if t.Session != "" {
				// No session index (format 3): one pass over the chunks.
				c := tx.Bucket(bucketDocs).Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					key, side, err := splitRecord(v)
					if err != nil {
						return fmt.Errorf("chunk record %x: %w", k, err)
					}
					session, tm, err := sideSessionTime(side)
					if err != nil {
						return fmt.Errorf("chunk record %x: %w", k, err)
					}
					if string(session) != t.Session || hasRange && (tm < t.From || tm >= t.To) {
						continue
					}
					id, ok := projections.IDOfKey(key)
					if !ok {
						return fmt.Errorf("chunk record %x: %w", k, ErrCorrupt)
					}
					if _, changed := x.sideOps[id]; !changed {
						targets[id] = struct{}{}
					}
				}
				return nil
			}
			c := tx.Bucket(bucketByTime).Cursor()
			lo, hi := timeKey(t.From), timeKey(t.To)
			for k, _ := c.Seek(lo[:]); k != nil && bytes.Compare(k[:8], hi[:]) < 0; k, _ = c.Next() {
				id, ok := projections.IDOfKey(k[8:])
				if !ok {
					return fmt.Errorf("time key %x: %w", k, ErrCorrupt)
				}
				if _, changed := x.sideOps[id]; !changed {
					targets[id] = struct{}{}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("resolve tombstone: %w", err)
		}
		// Chunks changed since the last Commit, by their current state.
		for id, m := range x.sideOps {
			if m != nil && projections.TombstoneMatches(t, id, m.session, m.time) {
				targets[id] = struct{}{}
			}
		}
	}
	for id := range targets {
		seq, live, err := x.liveSeqLocked(id)
		if err != nil {
			return fmt.Errorf("resolve tombstone: %w", err)
		}
		if live {
			x.batch.Delete(DocID(seq))
		}
		x.sideOps[id] = nil
		x.purge = true
	}
	return x.maybeFlush()
}

// DocID is the bleve document id of the chunk version stored by the event
// at seq: 8 bytes, big-endian (format 8). Ids that count up keep bleve's
// "_id" term dictionaries small and cheap to build and merge, and let a
// batch skip the old segments when it looks up the ids it replaces (a
// segment is searched only for ids up to its largest): with random chunk
// ids as document ids, a 100K-document build took 18-21% more CPU and a
// 1M store's rebuild 37-45% more (same-time pairs, stop 40).
func DocID(seq uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return string(b[:])
}

// timeKey orders signed times as big-endian unsigned keys.
func timeKey(t int64) [8]byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(t)^(1<<63))
	return k
}

// encodeSide encodes a side-table value: hash ‖ uvarint tokens ‖
// mentions ‖ uvarint seq ‖ time ‖ session, where mentions is uvarint
// count ‖ count × (since, until as 8 bytes BE each).
func encodeSide(m *docMeta) []byte {
	b := make([]byte, 0, hashSize+3*binary.MaxVarintLen64+16*len(m.mentions)+8+len(m.session))
	b = append(b, m.hash[:]...)
	b = binary.AppendUvarint(b, uint64(m.tokens))
	b = appendMentions(b, m.mentions)
	b = binary.AppendUvarint(b, m.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(m.time))
	return append(b, m.session...)
}

// encodeRecord encodes a "docs" record (format 7): uvarint len(key) ‖
// key (IDKey of the chunk id, for the passes over the records) ‖
// encodeSide(m).
func encodeRecord(key []byte, m *docMeta) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(key))
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(append(b, key...), encodeSide(m)...)
}

// splitRecord returns the chunk key and the side-table value of a "docs"
// record (not copied).
func splitRecord(v []byte) (key, side []byte, err error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, nil, fmt.Errorf("decode side record: %w: bad key length", ErrCorrupt)
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}

// seqKey is the "docs" key of the record stored by the event at seq.
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq) }

// liveSide returns the side-table value of chunk key's live version (nil
// when it has none), checking that its "ids" entry and its record agree.
// The value is valid while tx is.
func (x *Index) liveSide(tx *bolt.Tx, key []byte) ([]byte, error) {
	sk, err := x.liveEntry(tx, key)
	if err != nil || sk == nil {
		return nil, err
	}
	seq, err := entrySeq(key, sk)
	if err != nil {
		return nil, err
	}
	return recordAt(tx.Bucket(bucketDocs), key, seq)
}

// entrySeq decodes chunk key's "ids" entry v: the seq of its record.
func entrySeq(key, v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("chunk key %x: %w: seq of %d bytes", key, ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// recordAt returns the side-table value of the record at seq, which must
// be chunk key's.
func recordAt(docs *bolt.Bucket, key []byte, seq uint64) ([]byte, error) {
	v := docs.Get(seqKey(seq))
	if v == nil {
		return nil, fmt.Errorf("chunk key %x: %w: no record at seq %d", key, ErrCorrupt, seq)
	}
	k, side, err := splitRecord(v)
	if err != nil {
		return nil, fmt.Errorf("chunk key %x: %w", key, err)
	}
	if _, _, _, err := sideFields(side); err != nil {
		return nil, fmt.Errorf("chunk key %x: %w", key, err)
	}
	if !bytes.Equal(k, key) || sideSeq(side) != seq {
		return nil, fmt.Errorf("chunk key %x: %w: record of chunk key %x, seq %d at seq %d", key, ErrCorrupt, k, sideSeq(side), seq)
	}
	return side, nil
}

func appendMentions(b []byte, ms []timephrase.Range) []byte {
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for _, r := range ms {
		b = binary.BigEndian.AppendUint64(b, uint64(r.Since))
		b = binary.BigEndian.AppendUint64(b, uint64(r.Until))
	}
	return b
}

// decodeRanges decodes the mentions part of a side-table value.
func decodeRanges(b []byte) []timephrase.Range {
	var out []timephrase.Range
	for i := 0; i+16 <= len(b); i += 16 {
		out = append(out, timephrase.Range{Since: int64(binary.BigEndian.Uint64(b[i:])), Until: int64(binary.BigEndian.Uint64(b[i+8:]))})
	}
	return out
}

// decodeSide parses a side-table value.
func decodeSide(b []byte) (*docMeta, error) {
	tok, ms, rest, err := sideFields(b)
	if err != nil {
		return nil, err
	}
	m := &docMeta{tokens: int(tok), time: int64(binary.BigEndian.Uint64(rest)), session: string(rest[8:]), seq: sideSeq(b)}
	copy(m.hash[:], b)
	m.mentions = decodeRanges(ms)
	return m, nil
}

// sideSessionTime is the session and time of a side-table value, the
// session not copied (valid while the transaction is).
func sideSessionTime(b []byte) (session []byte, t int64, err error) {
	_, _, rest, err := sideFields(b)
	if err != nil {
		return nil, 0, err
	}
	return rest[8:], int64(binary.BigEndian.Uint64(rest)), nil
}

// sideFields checks a side-table value and returns its token count, its
// mentions' ranges (16 bytes each) and what follows them (time ‖ session).
func sideFields(b []byte) (tokens uint64, mentions, rest []byte, err error) {
	if len(b) < hashSize {
		return 0, nil, nil, fmt.Errorf("decode side entry: %w: %d bytes", ErrCorrupt, len(b))
	}
	tok, n := binary.Uvarint(b[hashSize:])
	if n <= 0 || tok > math.MaxInt32 {
		return 0, nil, nil, fmt.Errorf("decode side entry: %w: bad token count", ErrCorrupt)
	}
	rest = b[hashSize+n:]
	nm, n := binary.Uvarint(rest)
	if n <= 0 || nm > timephrase.MaxMentions || len(rest[n:]) < 16*int(nm) {
		return 0, nil, nil, fmt.Errorf("decode side entry: %w: bad mentions", ErrCorrupt)
	}
	mentions, rest = rest[n:n+16*int(nm)], rest[n+16*int(nm):]
	if _, n = binary.Uvarint(rest); n <= 0 {
		return 0, nil, nil, fmt.Errorf("decode side entry: %w: bad seq", ErrCorrupt)
	}
	rest = rest[n:]
	if len(rest) < 8 {
		return 0, nil, nil, fmt.Errorf("decode side entry: %w: short time", ErrCorrupt)
	}
	return tok, mentions, rest, nil
}

// BeginBulk implements projections.BulkBuilder: when side.db's "ids" is
// empty (a first build), until EndBulk the index remembers the keys it
// puts there (stored) and looks up only those.
func (x *Index) BeginBulk() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed || x.db == nil {
		x.stored, x.deferIDs = nil, nil
		return
	}
	if x.deferIDs != nil && x.deferIDs.from != 0 {
		return // a bulk build that did not end: its window and filter go on
	}
	x.stored, x.deferIDs = projections.AbsentKeysFor(Name, x.db, bucketIDs), nil
	if x.stored != nil {
		x.deferIDs = &deferredIDs{}
	}
}

// EndBulk implements projections.BulkBuilder: it settles the "ids"
// entries the build deferred (idsbulk.go) and drops the filter.
func (x *Index) EndBulk() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var err error
	if !x.closed {
		err = x.settleWindow()
	}
	x.stored, x.deferIDs = nil, nil
	return err
}

// Commit executes the pending batch together with cp and commits the side
// table.
func (x *Index) Commit(cp projections.Checkpoint) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if err := x.writable(); err != nil {
		return err
	}
	cpb, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	x.batch.SetInternal(internalCP, cpb)
	x.batch.DeleteInternal(internalAhead)
	if err := x.waitBatch(); err != nil {
		return err
	}
	x.endLookup()
	// The batch executes while the side-table changes are written, and
	// the side table commits only once it has (the order the package
	// doc's crash argument needs).
	x.startBatch()
	ids := sortedKeys(x.sideOps) // sequential keys make bbolt writes cheap
	nDocs, nWords := x.nDocs, x.nWords
	d := x.deferIDs
	opened := false // this Commit opens d's window
	err = x.db.Update(func(tx *bolt.Tx) error {
		if d != nil && d.from == 0 && len(ids) > 0 {
			// Every seq this Commit and later ones put is above the last
			// checkpoint (a redelivered event's too).
			if err := openWindow(tx, x.cp.Seq+1); err != nil {
				return err
			}
			d.from, opened = x.cp.Seq+1, true
		}
		// Time keys come in chunk-id order: applied in key order, each
		// insert appends to its node (projections.SortedWrites).
		idx, byTime := tx.Bucket(bucketIDs), projections.NewSortedWrites(tx.Bucket(bucketByTime))
		// Records are put in seq order after the loop, which in a bulk
		// build appends them: pages filled, not split in half. One event
		// stores at most one chunk, so no two puts share a seq, and no
		// record deleted in the loop is at a seq put after it other than
		// a redelivered version of the same chunk.
		docs := tx.Bucket(bucketDocs)
		docs.FillPercent = 1
		type record struct {
			seq uint64
			v   []byte
		}
		records := make([]record, 0, len(ids))
		for _, sk := range ids {
			id, key := sk.id, sk.key
			var old []byte
			var oldEntry uint64 // its deferred entry, when it is one
			oldDeferred := false
			if x.stored == nil || x.stored.Has(key) {
				v, err := idsGet(idx, key)
				if err != nil {
					return err
				}
				old = v
				if v == nil {
					seq, e, ok, err := d.find(docs, key)
					if err != nil {
						return err
					}
					if ok {
						old, oldEntry, oldDeferred = seqKey(seq), e, true
					}
				}
			}
			if old != nil {
				seq, err := entrySeq(key, old)
				if err != nil {
					return err
				}
				side, err := recordAt(docs, key, seq)
				if err != nil {
					return err
				}
				m, err := decodeSide(side)
				if err != nil {
					return err
				}
				tk := timeKey(m.time)
				if err := byTime.Delete(append(tk[:], key...)); err != nil {
					return err
				}
				if err := docs.Delete(seqKey(seq)); err != nil {
					return err
				}
				nDocs--
				nWords -= uint64(m.tokens)
			}
			m := x.sideOps[id]
			if oldDeferred {
				d.dels = append(d.dels, oldEntry)
			}
			if m == nil {
				if old != nil && !oldDeferred {
					if err := idsDelete(idx, key); err != nil {
						return err
					}
				}
				continue
			}
			tk := timeKey(m.time)
			if d != nil && (old == nil || oldDeferred) && d.fits(m.seq) {
				// Settled later from its record (idsbulk.go).
				d.adds = append(d.adds, d.entry(key, m.seq))
			} else if err := idsPut(idx, key, m.seq); err != nil {
				return err
			}
			if x.stored != nil {
				// Added before the transaction commits: a commit that
				// fails leaves a key the filter need not hold, which
				// only costs a lookup.
				x.stored.Add(key)
			}
			records = append(records, record{m.seq, encodeRecord(key, m)})
			if err := byTime.Put(append(tk[:], key...), nil); err != nil {
				return err
			}
			nDocs++
			nWords += uint64(m.tokens)
		}
		if err := byTime.Flush(); err != nil {
			return err
		}
		slices.SortFunc(records, func(a, b record) int { return cmp.Compare(a.seq, b.seq) })
		for _, r := range records {
			if err := docs.Put(seqKey(r.seq), r.v); err != nil {
				return err
			}
		}
		ch := tx.Bucket(bucketChanges)
		for _, seq := range x.changes {
			if err := ch.Put(binary.BigEndian.AppendUint64(nil, seq), nil); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		st := binary.BigEndian.AppendUint64(nil, nDocs)
		if err := meta.Put(keyStats, binary.BigEndian.AppendUint64(st, nWords)); err != nil {
			return err
		}
		if err := meta.Put(keyCP, cpb); err != nil {
			return err
		}
		return x.waitBatch() // an error rolls the side table back
	})
	if d != nil {
		if err == nil {
			d.commit()
		} else {
			d.unstage()
			if opened {
				d.from = 0
			}
		}
	}
	if berr := x.waitBatch(); berr != nil {
		return berr
	}
	if err != nil {
		return fmt.Errorf("commit fts side table: %w", err)
	}
	x.nDocs, x.nWords = nDocs, nWords
	clear(x.sideOps)
	x.changes = x.changes[:0]
	x.cp = cp
	if d != nil && d.from != 0 && cp.Seq+1-d.from >= uint64(maxDeferredIDs) {
		if err := x.settleWindow(); err != nil {
			return err
		}
	}
	if x.purge {
		return x.purgeDeleted()
	}
	return nil
}

// purgeDeleted makes deleted documents leave the disk: scorch only marks
// them deleted in their segment, whose term dictionary keeps their words,
// and keeps superseded segment files while old snapshots reference them.
// So: force-merge everything into one segment (a throw-away document makes
// a lone segment eligible; merges drop deleted documents), copy the
// current snapshot alone into a fresh directory, swap it in for the old
// index directory and compact the side table. A crash in between leaves
// either the old index (purged again by the next Commit that deletes) or
// no index directory, which Open treats as one half missing: it rebuilds.
func (x *Index) purgeDeleted() error {
	b := x.idx.NewBatch()
	doc := document.NewDocument(purgeID)
	doc.AddField(document.NewTextFieldCustom(fieldContent, nil, []byte("purge"), index.IndexField, x.enAnalyzer))
	if err := b.IndexAdvanced(doc); err != nil {
		return fmt.Errorf("purge deleted documents: %w", err)
	}
	if err := x.idx.Batch(b); err != nil {
		return fmt.Errorf("purge deleted documents: %w", err)
	}
	adv, err := x.idx.Advanced()
	if err != nil {
		return fmt.Errorf("purge deleted documents: %w", err)
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return fmt.Errorf("purge deleted documents: index is %T, not scorch", adv)
	}
	if err := sc.ForceMerge(context.Background(), &mergeplan.SingleSegmentMergePlanOptions); err != nil {
		return fmt.Errorf("purge deleted documents: merge: %w", err)
	}
	b = x.idx.NewBatch()
	b.Delete(purgeID)
	if err := x.idx.Batch(b); err != nil {
		return fmt.Errorf("purge deleted documents: %w", err)
	}
	cp, ok := x.idx.(bleve.IndexCopyable)
	if !ok {
		return fmt.Errorf("purge deleted documents: index cannot be copied")
	}
	fresh, old := x.indexPath()+".purge", x.indexPath()+".old"
	os.RemoveAll(fresh)
	os.RemoveAll(old)
	if err := cp.CopyTo(bleve.FileSystemDirectory(fresh)); err != nil {
		os.RemoveAll(fresh)
		return fmt.Errorf("purge deleted documents: copy: %w", err)
	}
	if err := x.closeAll(); err != nil {
		x.closed = true
		return fmt.Errorf("purge deleted documents: %w", err)
	}
	swap := func() error {
		if err := os.Rename(x.indexPath(), old); err != nil {
			return err
		}
		if err := os.Rename(fresh, x.indexPath()); err != nil {
			return err
		}
		if err := fsutil.SyncDir(x.dir); err != nil {
			return err
		}
		if err := os.RemoveAll(old); err != nil {
			return err
		}
		return projections.CompactBolt(x.sidePath(), &bolt.Options{})
	}
	serr := swap()
	// Reopen whatever is there; open() rebuilds from zero if the swap
	// left one half missing.
	if err := x.open(); err != nil {
		x.closed = true
		return errors.Join(serr, err)
	}
	if serr != nil {
		return fmt.Errorf("purge deleted documents: %w", serr)
	}
	x.purge = false
	return nil
}

// Compact implements projections.Compacter: side.db is rewritten tight
// after a bulk load (the bleve index merges its own segments).
func (x *Index) Compact() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	x.endLookup()
	if err := x.db.Close(); err != nil {
		x.closed = true
		return fmt.Errorf("close fts side table for compaction: %w", err)
	}
	err := projections.CompactBolt(x.sidePath(), &bolt.Options{})
	db, oerr := projections.OpenBolt(x.sidePath(), nil)
	if oerr != nil {
		x.closed = true
		return errors.Join(err, fmt.Errorf("reopen fts side table: %w", oerr))
	}
	x.db = db
	return err
}

// ReleaseMemory implements projections.MemoryReleaser: side.db's mapped
// pages and those of the index's segment files leave the resident set
// (the next read maps them again from the page cache). Scorch maps every
// segment file and its merger reads whole segments through the mapping,
// so during a bulk build the pages of every segment merged so far stayed
// resident: at 1M documents half of the build's peak RSS was mapped
// segment files. A full batch (maybeFlush, only a bulk load fills one)
// drops the segments' pages too: the merger goes on reading between
// commits.
func (x *Index) ReleaseMemory() {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return
	}
	projections.ReleaseBolt(x.db)
	x.releaseSegments()
}

// segmentReleases counts releaseSegments calls (the tests see that a full
// batch releases: what is resident afterwards depends on the merger,
// which goes on reading segments meanwhile).
var segmentReleases atomic.Int64

// releaseSegments drops the resident pages of the current snapshot's
// segment files, held open (mapped) meanwhile; in-memory segments (not
// persisted yet) are Go memory and are left alone. Callers hold x.mu.
func (x *Index) releaseSegments() {
	segmentReleases.Add(1)
	adv, err := x.idx.Advanced()
	if err != nil {
		return // advice only: nothing is released
	}
	r, err := adv.Reader()
	if err != nil {
		return
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return
	}
	var segs []mappedFile
	for _, ss := range snap.Segments() {
		// A persisted zap segment: Data is its file's mapping.
		if m, ok := ss.Segment().(interface {
			Path() string
			Data() []byte
		}); ok && m.Path() != "" {
			segs = append(segs, mappedFile{m.Path(), m.Data()})
		}
	}
	dropSegmentPages(segs)
}

// mappedFile is a file and the memory it is mapped at.
type mappedFile struct {
	path string
	data []byte
}

// Digest returns SHA-256 over the live chunk ids and their field hashes in
// id order, then over the ids of the documents the bleve index holds (what
// searches actually read), including uncommitted changes (the pending
// batch is executed first, without a checkpoint). See the package doc.
func (x *Index) Digest() ([32]byte, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return [32]byte{}, ErrClosed
	}
	if err := x.waitBatch(); err != nil {
		return [32]byte{}, err
	}
	if x.batch.Size() > 0 {
		if err := x.flush(); err != nil {
			return [32]byte{}, err
		}
	}
	// The digest walks "ids" in key order: a bulk build's deferred
	// entries go in first.
	if err := x.settleWindow(); err != nil {
		return [32]byte{}, err
	}
	over := sortedKeys(x.sideOps)
	h := sha256.New()
	fmt.Fprintf(h, "ucl-fts/%d\n", digestVersion)
	var lb [binary.MaxVarintLen64]byte
	emit := func(id string, hash []byte) {
		n := binary.PutUvarint(lb[:], uint64(len(id)))
		h.Write(lb[:n])
		h.Write([]byte(id))
		h.Write(hash)
	}
	emitOver := func(sk sideKey) {
		if m := x.sideOps[sk.id]; m != nil {
			emit(sk.id, appendMentions(m.hash[:hashSize:hashSize], m.mentions))
		}
	}
	err := x.view(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bucketDocs)
		c := newIDsCursor(tx.Bucket(bucketIDs))
		k, v := c.First()
		i := 0
		for k != nil || i < len(over) {
			cmp := -1 // which comes first: over[i] (< 0) or k (> 0)
			switch {
			case i == len(over):
				cmp = 1
			case k != nil:
				cmp = bytes.Compare(over[i].key, k)
			}
			switch {
			case cmp < 0:
				emitOver(over[i])
				i++
			case cmp == 0:
				emitOver(over[i])
				i++
				k, v = c.Next()
			default:
				id, ok := projections.IDOfKey(k)
				if !ok {
					return fmt.Errorf("chunk key %x: %w", k, ErrCorrupt)
				}
				seq, err := entrySeq(k, v)
				if err != nil {
					return err
				}
				side, err := recordAt(docs, k, seq)
				if err != nil {
					return err
				}
				_, ms, _, err := sideFields(side)
				if err != nil {
					return fmt.Errorf("chunk key %x: %w", k, err)
				}
				emit(id, appendMentions(append(make([]byte, 0, hashSize+1+len(ms)), side[:hashSize]...), decodeRanges(ms)))
				k, v = c.Next()
			}
		}
		return c.Err()
	})
	if err != nil {
		return [32]byte{}, fmt.Errorf("read fts side table: %w", err)
	}
	var ids []string
	err = x.view(func(tx *bolt.Tx) (err error) {
		ids, err = x.indexIDs(x.docChunks(tx, true))
		return err
	})
	if err != nil {
		return [32]byte{}, err
	}
	h.Write([]byte{0})
	for _, id := range ids {
		emit(id, nil)
	}
	// Format 4: then a one byte and the seqs of the changing events.
	// Committed and pending as one set: a redelivered event may be in
	// both.
	h.Write([]byte{1})
	seqs := map[uint64]bool{}
	for _, seq := range x.changes {
		seqs[seq] = true
	}
	err = x.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketChanges).ForEach(func(k, _ []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("change key %x: %w", k, ErrCorrupt)
			}
			seqs[binary.BigEndian.Uint64(k)] = true
			return nil
		})
	})
	if err != nil {
		return [32]byte{}, fmt.Errorf("read fts changes: %w", err)
	}
	order := make([]uint64, 0, len(seqs))
	for seq := range seqs {
		order = append(order, seq)
	}
	slices.Sort(order)
	for _, seq := range order {
		h.Write(binary.BigEndian.AppendUint64(nil, seq))
	}
	// Format 5: then a two byte and the indexed terms, what searches
	// match and score (see the package doc).
	h.Write([]byte{2})
	if err := x.view(func(tx *bolt.Tx) error { return x.hashPostings(h, x.docChunks(tx, true)) }); err != nil {
		return [32]byte{}, err
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// hashPostings writes to h, per indexed field in a fixed order, every term
// with the live documents that hold it (by chunk id, sorted) and its
// frequency in each: a document re-indexed with other text under the same
// id changes it. Terms come in byte order, merged over the segments, so it
// does not depend on segment layout. It reads the segments itself, in this
// goroutine: bleve's own FieldDict reads them in goroutines of its own,
// where a panic on a damaged segment could not be recovered (the caller
// turns one here into a damaged projection). Memory: the postings of one
// term, and one chunk id per document. dc maps document ids to chunk ids.
func (x *Index) hashPostings(h io.Writer, dc *docChunks) (err error) {
	adv, err := x.idx.Advanced()
	if err != nil {
		return fmt.Errorf("read fts index: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return fmt.Errorf("read fts index: %w", err)
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("read fts index: %w", cerr)
		}
	}()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return fmt.Errorf("read fts index: %w: not a scorch index", ErrCorrupt)
	}
	segs := snap.Segments()
	ids := make([]map[uint64]string, len(segs)) // per segment: doc number -> chunk id
	type posting struct {
		id   string
		freq uint64
	}
	// cursor is one segment's term dictionary of a field, at term.
	type cursor struct {
		term  string
		next  func() (*index.DictEntry, error)
		visit func(term []byte, fn func(num, freq uint64) error) error
		seg   int
	}
	var b []byte
	var ps []posting
	for _, field := range [...]string{fieldContent, fieldSession, fieldKind, fieldRole, fieldChunkParent, fieldMeta} {
		b = binary.AppendUvarint(b[:0], uint64(len(field)))
		h.Write(append(b, field...))
		var cs []*cursor
		for i, ss := range segs {
			dict, err := ss.Segment().Dictionary(field)
			if err != nil {
				return fmt.Errorf("read fts index terms of %s: %w", field, err)
			}
			itr := dict.AutomatonIterator(nil, nil, nil)
			deleted := ss.Deleted()
			c := &cursor{next: itr.Next, seg: i, visit: func(term []byte, fn func(num, freq uint64) error) error {
				pl, err := dict.PostingsList(term, deleted, nil)
				if err != nil {
					return err
				}
				it := pl.Iterator(true, false, false, nil)
				for {
					p, err := it.Next()
					if err != nil || p == nil {
						return err
					}
					if err := fn(p.Number(), p.Frequency()); err != nil {
						return err
					}
				}
			}}
			de, err := c.next()
			if err != nil {
				return fmt.Errorf("read fts index terms of %s: %w", field, err)
			}
			if de != nil {
				c.term = de.Term
				cs = append(cs, c)
			}
		}
		for len(cs) > 0 {
			term := cs[0].term
			for _, c := range cs[1:] {
				term = min(term, c.term)
			}
			ps = ps[:0]
			live := cs[:0]
			for _, c := range cs {
				if c.term == term {
					ss := segs[c.seg]
					err := c.visit([]byte(term), func(num, freq uint64) error {
						if ids[c.seg] == nil {
							ids[c.seg] = map[uint64]string{}
						}
						id, ok := ids[c.seg][num]
						if !ok {
							bid, err := ss.DocID(num)
							if err != nil {
								return err
							}
							if id, err = digestID(dc, string(bid)); err != nil {
								return err
							}
							ids[c.seg][num] = id
						}
						ps = append(ps, posting{id, freq})
						return nil
					})
					if err != nil {
						return fmt.Errorf("read fts index postings of %s: %w", field, err)
					}
					de, err := c.next()
					if err != nil {
						return fmt.Errorf("read fts index terms of %s: %w", field, err)
					}
					if de == nil {
						continue
					}
					c.term = de.Term
				}
				live = append(live, c)
			}
			cs = live
			if len(ps) == 0 {
				continue // only deleted documents hold it
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i].id < ps[j].id })
			b = append(b[:0], 1)
			b = binary.AppendUvarint(b, uint64(len(term)))
			b = append(b, term...)
			b = binary.AppendUvarint(b, uint64(len(ps)))
			for _, p := range ps {
				b = binary.AppendUvarint(b, uint64(len(p.id)))
				b = append(b, p.id...)
				b = binary.AppendUvarint(b, p.freq)
			}
			h.Write(b)
		}
		h.Write([]byte{0})
	}
	return nil
}

// digestID is the id the digest gives index document doc: the chunk id of
// the live version it holds (dc.live), else "\x00" then the document id,
// which no live chunk's version matches. Through the chunk ids, format 8's
// (and 9's) digest is format 6's.
func digestID(dc *docChunks, doc string) (string, error) {
	id, ok, err := dc.chunk(doc)
	if err != nil || ok {
		return id, err
	}
	return "\x00" + doc, nil
}

// indexIDs returns the ids (digestID) of every document in the bleve
// index, sorted.
func (x *Index) indexIDs(dc *docChunks) (ids []string, err error) {
	adv, err := x.idx.Advanced()
	if err != nil {
		return nil, fmt.Errorf("read fts index: %w", err)
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, fmt.Errorf("read fts index: %w", err)
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("read fts index: %w", cerr)
		}
	}()
	dr, err := r.DocIDReaderAll()
	if err != nil {
		return nil, fmt.Errorf("read fts index: %w", err)
	}
	defer dr.Close()
	for {
		iid, err := dr.Next()
		if err != nil {
			return nil, fmt.Errorf("read fts index: %w", err)
		}
		if iid == nil {
			break
		}
		doc, err := r.ExternalID(iid)
		if err != nil {
			return nil, fmt.Errorf("read fts index: %w", err)
		}
		id, err := digestID(dc, doc)
		if err != nil {
			return nil, fmt.Errorf("read fts index: %w", err)
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// Count returns the number of live chunks, uncommitted changes included
// (projtest.Counter).
func (x *Index) Count() (int, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return 0, ErrClosed
	}
	n := int(x.nDocs)
	err := x.view(func(tx *bolt.Tx) error {
		for id, m := range x.sideOps {
			v, err := x.liveEntry(tx, projections.IDKey(id))
			if err != nil {
				return err
			}
			was := v != nil
			switch {
			case was && m == nil:
				n--
			case !was && m != nil:
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count fts docs: %w", err)
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
	if m, ok := x.sideOps[id]; ok {
		return m != nil, nil
	}
	var found bool
	err := x.view(func(tx *bolt.Tx) error {
		v, err := x.liveEntry(tx, projections.IDKey(id))
		found = v != nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("look up fts doc: %w", err)
	}
	return found, nil
}

// Size returns the bytes on disk of the index and the side table
// (projections.Sizer).
func (x *Index) Size() int64 {
	var n int64
	filepath.WalkDir(x.dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Reset drops every document and sets the checkpoint to zero.
func (x *Index) Reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	x.waitBatch() // its error goes with the documents Reset drops
	if x.deferIDs != nil {
		x.deferIDs.clear() // the entries go with the side table
	}
	if err := x.closeAll(); err != nil {
		return fmt.Errorf("close fts for reset: %w", err)
	}
	if err := x.wipe(); err != nil {
		return err
	}
	if err := x.open(); err != nil {
		x.closed = true
		return err
	}
	return nil
}

// Close drops uncommitted changes and closes the index.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	x.waitBatch() // uncommitted: its error goes with the changes Close drops
	if err := x.closeAll(); err != nil {
		return fmt.Errorf("close fts: %w", err)
	}
	return nil
}

// Query is a full-text search with filters. Filters of one kind are OR-ed,
// different kinds AND-ed; an empty filter does not restrict.
type Query struct {
	Text     string   // free text, analyzed with the English analyzer (OR of terms)
	K        int      // number of hits, > 0
	Sessions []string // session ids
	Kinds    []string // kind names ("conversation", "document", ...)
	Roles    []string // roles ("user", "assistant", ...)
	Since    int64    // content time >= Since (unix ms); 0 = open
	Until    int64    // content time < Until (unix ms); 0 = open
	// MaxInTime, when positive, bounds the work of a time range: a range
	// holding more chunks is not searched (ErrWideTimeRange). The filter
	// costs about its chunk count (their document numbers are looked up
	// in every segment), whatever the text matches.
	MaxInTime int
	// Meta: only chunks whose meta holds every key with its value (AND).
	Meta map[string]string
	// NoFuzzy turns typo tolerance off (see fuzzyTerms).
	NoFuzzy bool
}

// Hit is one search result.
type Hit struct {
	ChunkID string
	Score   float64 // BM25
}

// Search returns the top q.K chunks for q.Text by BM25 score, ties broken by
// chunk id ascending. Filters do not change scores. Only executed batches
// are searched (see the package doc).
func (x *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if q.K <= 0 {
		return nil, fmt.Errorf("search fts: k %d: %w", q.K, ErrInvalidQuery)
	}
	if len(bytes.TrimSpace([]byte(q.Text))) == 0 {
		return nil, fmt.Errorf("search fts: empty text: %w", ErrInvalidQuery)
	}
	if q.Since != 0 && q.Until != 0 && q.Until <= q.Since {
		return nil, fmt.Errorf("search fts: until %d <= since %d: %w", q.Until, q.Since, ErrInvalidQuery)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, ErrClosed
	}
	x.settle()
	mq := bleve.NewMatchQuery(q.Text)
	mq.SetField(fieldContent)
	var textQ query.Query = mq
	if !q.NoFuzzy {
		fz, err := x.fuzzyTerms(ctx, q.Text)
		if err != nil {
			return nil, fmt.Errorf("search fts: %w", err)
		}
		if len(fz) > 0 {
			textQ = bleve.NewDisjunctionQuery(append([]query.Query{mq}, fz...)...)
		}
	}
	bq := bleve.NewBooleanQuery()
	bq.AddMust(textQ)
	if len(q.Sessions) > 0 {
		// Sessions are a conjunct, not a bleve filter: a filter is applied
		// after every text match is scored, while a conjunct lets the
		// conjunction leap from one chunk of the sessions to the next, so
		// a query restricted to one session of a large store scores only
		// that session's matches (the REST and proxy paths). Boost 0 keeps
		// the scores what the filter gave, bit for bit: the conjunct adds
		// 0 to every score and 0 to the query norm's sum of weights
		// (TestSessionConjunctKeepsScores).
		var ors []query.Query
		for _, v := range q.Sessions {
			tq := bleve.NewTermQuery(v)
			tq.SetField(fieldSession)
			tq.SetBoost(0)
			ors = append(ors, tq)
		}
		dq := bleve.NewDisjunctionQuery(ors...)
		dq.SetBoost(0)
		bq.AddMust(dq)
	}
	var filters []query.Query
	for _, f := range []struct {
		field  string
		values []string
	}{{fieldKind, q.Kinds}, {fieldRole, q.Roles}} {
		if len(f.values) == 0 {
			continue
		}
		var ors []query.Query
		for _, v := range f.values {
			tq := bleve.NewTermQuery(v)
			tq.SetField(f.field)
			ors = append(ors, tq)
		}
		filters = append(filters, bleve.NewDisjunctionQuery(ors...))
	}
	for _, k := range sortedMeta(q.Meta) {
		tq := bleve.NewTermQuery(metaTerm(k, q.Meta[k]))
		tq.SetField(fieldMeta)
		filters = append(filters, tq)
	}
	if q.Since != 0 || q.Until != 0 {
		docs, n, err := x.idsInTime(q.Since, q.Until, q.MaxInTime)
		if err != nil {
			return nil, fmt.Errorf("search fts: %w", err)
		}
		if q.MaxInTime > 0 && n > q.MaxInTime {
			return nil, fmt.Errorf("search fts: over %d chunks in the time range: %w", q.MaxInTime, ErrWideTimeRange)
		}
		if len(docs) == 0 {
			return []Hit{}, nil
		}
		filters = append(filters, bleve.NewDocIDQuery(docs))
	}
	if len(filters) > 0 {
		bq.AddFilter(bleve.NewConjunctionQuery(filters...))
	}
	// BM25 statistics from the side table, a pure function of the live set
	// (bleve's own use the term dictionary, which depends on segment layout).
	if x.nDocs > 0 {
		ctx = context.WithValue(ctx, search.BM25StatsKey, &search.BM25Stats{
			DocCount: float64(x.nDocs),
			FieldCardinality: map[string]int{
				fieldContent: int(min(x.nWords, math.MaxInt32)),
				// Filters are not scored; their searchers still want an entry.
				fieldSession: 1, fieldKind: 1, fieldRole: 1, fieldChunkParent: 1, fieldTime: 1, fieldMeta: 1, "*": 1, "_all": 1,
			},
		})
	}
	// The top K by (score desc, chunk id asc), kept as bleve's searcher
	// streams the matches (topK). bleve orders equal scores by its own
	// document numbers, and ties at the K-th score are the common case
	// (short turns sharing the query's words score the same), so its top n
	// by score gives the answer only when n holds the whole tie: common
	// words tie across a large part of the store, and a window that size
	// held a DocumentMatch and a loaded id per tied document. (bleve's own
	// sort by id cannot serve: document ids are seqs, format 8, and ties
	// go by chunk id.)
	// A lone text query is searched as it is: the boolean wrapper adds a
	// conjunction of one, which scores the same (its sum of one score and
	// the same query norm) at the cost of a layer per matching document.
	var top query.Query = bq
	if len(q.Sessions) == 0 && len(filters) == 0 {
		top = textQ
	}
	tk := &topK{k: q.K}
	err := x.view(func(tx *bolt.Tx) error {
		tk.dc = x.docChunks(tx, false)
		return tk.search(ctx, x.idx, top)
	})
	if err != nil {
		return nil, fmt.Errorf("search fts: %w", err)
	}
	return tk.hits, nil
}

// docChunks maps the index's document ids (DocID, format 8) back to chunk
// ids through the side table: the record at a seq names its chunk, and a
// version stored since the last Commit is found in the pending changes.
type docChunks struct {
	x    *Index
	docs *bolt.Bucket
	// live: only a chunk's live version maps (Digest), not a committed
	// record of a chunk changed since the last Commit. Search maps every
	// version a side-table record names, as the index holds the one its
	// executed batches left.
	live bool
	// pending: seq -> chunk id of the versions in sideOps, made on the
	// first document the committed records do not name.
	pending map[uint64]string
}

// docChunks reads the committed records in tx. Callers hold x.mu.
func (x *Index) docChunks(tx *bolt.Tx, live bool) *docChunks {
	return &docChunks{x: x, docs: tx.Bucket(bucketDocs), live: live}
}

// chunk returns the chunk id of index document doc; ok is false when no
// version in the side table (committed or pending) is that document: an
// index that ran ahead of the side table before a crash holds such
// documents until the replay converges.
func (d *docChunks) chunk(doc string) (id string, ok bool, err error) {
	if len(doc) != 8 {
		return "", false, nil // purgeID
	}
	seq := binary.BigEndian.Uint64([]byte(doc))
	if v := d.docs.Get([]byte(doc)); v != nil {
		key, _, err := splitRecord(v)
		if err != nil {
			return "", false, fmt.Errorf("record at seq %d: %w", seq, err)
		}
		id, ok := projections.IDOfKey(key)
		if !ok {
			return "", false, fmt.Errorf("record at seq %d: %w: chunk key %x", seq, ErrCorrupt, key)
		}
		if d.live {
			if m, changed := d.x.sideOps[id]; changed && (m == nil || m.seq != seq) {
				return "", false, nil
			}
		}
		return id, true, nil
	}
	if len(d.x.sideOps) == 0 {
		return "", false, nil
	}
	if d.pending == nil {
		d.pending = make(map[uint64]string, len(d.x.sideOps))
		for id, m := range d.x.sideOps {
			if m != nil {
				d.pending[m.seq] = id
			}
		}
	}
	id, ok = d.pending[seq]
	return id, ok, nil
}

// idsInTime returns the index documents (DocID) of the chunks whose
// content time is in [since, until) (0: unbounded on that side), and n,
// how many chunks it found: the committed ones from "by_time", and those
// changed since the last Commit by their pending state (an executed batch
// may hold them already). A chunk whose old and new times straddle the
// range is kept, both versions' documents: the index holds one of the
// two, and the filter only narrows what the text query matched. With
// limit > 0 it stops reading the committed ones after limit + 1, and
// when it found more than limit it returns no documents, only n.
func (x *Index) idsInTime(since, until int64, limit int) (docs []string, n int, err error) {
	in := func(t int64) bool { return (since == 0 || t >= since) && (until == 0 || t < until) }
	var ids []string
	err = x.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketByTime).Cursor()
		var k []byte
		if since != 0 {
			lo := timeKey(since)
			k, _ = c.Seek(lo[:])
		} else {
			k, _ = c.First()
		}
		hi := timeKey(until)
		for ; k != nil && len(k) >= 8 && (until == 0 || bytes.Compare(k[:8], hi[:]) < 0) && (limit <= 0 || len(ids) <= limit); k, _ = c.Next() {
			id, ok := projections.IDOfKey(k[8:])
			if !ok {
				return fmt.Errorf("time key %x: %w", k, ErrCorrupt)
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read time index: %w", err)
	}
	for id, m := range x.sideOps {
		if m != nil && in(m.time) {
			ids = append(ids, id)
		}
	}
	if limit > 0 && len(ids) > limit {
		// The caller refuses the range (Query.MaxInTime): the documents
		// are not looked up. Each is a read at a random place of "ids",
		// and a month of a 1M-event store read 501 of them for nothing
		// (6 MB of side.db mapped by a one-shot query).
		return nil, len(ids), nil
	}
	docs = make([]string, 0, len(ids))
	err = x.view(func(tx *bolt.Tx) error {
		for _, id := range ids {
			key := projections.IDKey(id)
			v, err := x.liveEntry(tx, key)
			if err != nil {
				return err
			}
			if v != nil {
				seq, err := entrySeq(key, v)
				if err != nil {
					return err
				}
				docs = append(docs, DocID(seq))
			}
			if m := x.sideOps[id]; m != nil {
				docs = append(docs, DocID(m.seq))
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read time index: %w", err)
	}
	return docs, len(ids), nil
}

// view runs fn in a read transaction of the side table; a panic of a
// damaged file becomes a *projections.DamagedError.
func (x *Index) view(fn func(tx *bolt.Tx) error) error {
	return projections.Guard(Name, func() error { return x.db.View(fn) })
}

// sideKey is a chunk id and its stored key (projections.IDKey).
type sideKey struct {
	id  string
	key []byte
}

// sortedKeys returns the ids of ops in stored-key order.
func sortedKeys(ops map[string]*docMeta) []sideKey {
	out := make([]sideKey, 0, len(ops))
	for id := range ops {
		out = append(out, sideKey{id, projections.IDKey(id)})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].key, out[j].key) < 0 })
	return out
}

// Mentioned returns the times the content of each of ids talks about
// (timephrase.Mentions against the chunk's own time, UTC days), for those
// that mention any: by their pending state for chunks changed since the
// last Commit, else from the side table. Ids the index does not hold are
// left out.
//
// seqs (nil, or one for each id) holds in seqs[i], when not 0, the seq the
// caller knows for the live version of ids[i] (timelines' Chunk.Seq): the
// record at that seq is read directly when it is that chunk's (the side
// table keeps a record only for a chunk's live version), and otherwise
// found through "ids". The lookup in "ids" is a read at a random place of
// side.db for each chunk; a question's 200 candidates at 1M events read
// ~200 pages of it that their records, which the search has just read,
// spare.
func (x *Index) Mentioned(ids []string, seqs []uint64) (map[string][]timephrase.Range, error) {
	if seqs != nil && len(seqs) != len(ids) {
		return nil, fmt.Errorf("read mentioned times: %d seqs for %d ids", len(seqs), len(ids))
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, ErrClosed
	}
	out := map[string][]timephrase.Range{}
	err := x.view(func(tx *bolt.Tx) error {
		docs := tx.Bucket(bucketDocs)
		for i, id := range ids {
			if m, changed := x.sideOps[id]; changed {
				if m != nil && len(m.mentions) > 0 {
					out[id] = m.mentions
				}
				continue
			}
			key := projections.IDKey(id)
			var v []byte
			if seqs != nil && seqs[i] != 0 {
				if rec := docs.Get(seqKey(seqs[i])); rec != nil {
					k, side, err := splitRecord(rec)
					if err == nil {
						_, _, _, err = sideFields(side) // sideSeq wants it whole
					}
					if err != nil {
						return fmt.Errorf("record at seq %d: %w", seqs[i], err)
					}
					if bytes.Equal(k, key) && sideSeq(side) == seqs[i] {
						v = side
					}
				}
			}
			if v == nil {
				var err error
				if v, err = x.liveSide(tx, key); err != nil {
					return err
				}
			}
			if v == nil {
				continue
			}
			_, ms, _, err := sideFields(v)
			if err != nil {
				return fmt.Errorf("chunk %q: %w", id, err)
			}
			if len(ms) > 0 {
				out[id] = decodeRanges(ms)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read mentioned times: %w", err)
	}
	return out, nil
}

// Typo tolerance. A word of the query that no live chunk holds (its
// analysed term has no posting) and that is at least fuzzyMinLen letters
// long also matches the nearest few terms within fuzzyEdits(len) edits
// of its lower-cased spelling (nearTerms), scored as terms but weighted
// fuzzyBoost/(1+edits). A word some chunk holds is never
// widened, so a query whose words all occur ranks exactly as without
// typo tolerance; only words that would match nothing contribute. The
// expansion reads the term dictionary, which holds the live set's terms
// only (Commit purges deleted documents), so it is deterministic.
const (
	fuzzyMinLen   = 4
	fuzzyBoost    = 0.5
	maxFuzzyTerms = 8 // words of one query widened at most
	// fuzzyExpansions is how many terms near a word it is widened to at
	// most (see nearTerms).
	fuzzyExpansions = 3
)

// fuzzyEdits is the edit distance a word of n letters tolerates: 1 up to
// seven letters, 2 from eight (bleve's maximum).
func fuzzyEdits(n int) int {
	if n >= 8 {
		return 2
	}
	return 1
}

// nearTerms is the query of word's fuzzyExpansions nearest terms: the
// terms within fuzzyEdits(len) edits of it, fewest edits first, then the
// most frequent (the likelier intended word), then in byte order; each
// weighted fuzzyBoost/(1+edits), as bleve's fuzzy query weights them. nil
// when no term is near. bleve's fuzzy query takes every term in reach: a
// misspelled short word is an edit from many common words, whose postings
// it scored (at 100K chunks a query with one such word cost 4× the CPU of
// the same query spelled right).
func nearTerms(ctx context.Context, r index.IndexReader, word string) (query.Query, error) {
	edits := fuzzyEdits(len([]rune(word)))
	fr, ok := r.(index.IndexReaderFuzzy)
	if !ok { // not scorch: bleve's own expansion
		fq := bleve.NewFuzzyQuery(word)
		fq.SetField(fieldContent)
		fq.SetFuzziness(edits)
		fq.SetBoost(fuzzyBoost)
		return fq, nil
	}
	type near struct {
		term  string
		edits uint8
		df    uint64
	}
	var ns []near
	d, _, err := fr.FieldDictFuzzyAutomaton(fieldContent, word, edits, "")
	if err != nil {
		return nil, err
	}
	for {
		e, err := d.Next()
		if err != nil {
			d.Close()
			return nil, err
		}
		if e == nil {
			break
		}
		ns = append(ns, near{term: e.Term, edits: e.EditDistance})
	}
	if err := d.Close(); err != nil {
		return nil, err
	}
	// The dictionary's counts may include deleted documents not merged
	// away yet; a term reader's count does not, so the choice depends on
	// the live set only.
	for i := range ns {
		tr, err := r.TermFieldReader(ctx, []byte(ns[i].term), fieldContent, false, false, false)
		if err != nil {
			return nil, err
		}
		ns[i].df = tr.Count()
		if err := tr.Close(); err != nil {
			return nil, err
		}
	}
	ns = slices.DeleteFunc(ns, func(n near) bool { return n.df == 0 })
	slices.SortFunc(ns, func(a, b near) int {
		if a.edits != b.edits {
			return cmp.Compare(a.edits, b.edits)
		}
		if a.df != b.df {
			return cmp.Compare(b.df, a.df)
		}
		return strings.Compare(a.term, b.term)
	})
	ns = ns[:min(len(ns), fuzzyExpansions)]
	if len(ns) == 0 {
		return nil, nil
	}
	qs := make([]query.Query, len(ns))
	for i, n := range ns {
		tq := bleve.NewTermQuery(n.term)
		tq.SetField(fieldContent)
		tq.SetBoost(fuzzyBoost / float64(n.edits+1))
		qs[i] = tq
	}
	if len(qs) == 1 {
		return qs[0], nil
	}
	return bleve.NewDisjunctionQuery(qs...), nil
}

// fuzzyTerms returns the fuzzy queries of the words of text that match
// nothing (nil when every word matches). Callers hold x.mu.
func (x *Index) fuzzyTerms(ctx context.Context, text string) ([]query.Query, error) {
	var out []query.Query
	err := projections.GuardStore(ctx, Name, func() error {
		ai, err := x.idx.Advanced()
		if err != nil {
			return err
		}
		r, err := ai.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		seen := map[string]bool{}
		src := []byte(text)
		for _, tok := range x.enAnalyzer.Analyze(src) {
			if tok.Start < 0 || tok.End > len(src) || tok.Start >= tok.End {
				continue
			}
			word := []rune(strings.ToLower(string(src[tok.Start:tok.End])))
			if len(word) < fuzzyMinLen || seen[string(word)] || len(out) == maxFuzzyTerms {
				continue
			}
			seen[string(word)] = true
			tr, err := r.TermFieldReader(ctx, tok.Term, fieldContent, false, false, false)
			if err != nil {
				return err
			}
			n := tr.Count()
			if err := tr.Close(); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			fq, err := nearTerms(ctx, r, string(word))
			if err != nil {
				return err
			}
			if fq != nil {
				out = append(out, fq)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("typo terms: %w", err)
	}
	return out, nil
}

// liveSeqLocked reports whether chunk id is live and the seq of the event
// that stored its version: by its pending state when changed since the
// last Commit, else in the side table. Callers hold x.mu.
func (x *Index) liveSeqLocked(id string) (uint64, bool, error) {
	if m, changed := x.sideOps[id]; changed {
		if m == nil {
			return 0, false, nil
		}
		return m.seq, true, nil
	}
	if x.nDocs == 0 {
		return 0, false, nil // nothing committed is live (a first build)
	}
	key := projections.IDKey(id)
	if x.stored != nil && !x.stored.Has(key) {
		return 0, false, nil // never stored in this first build
	}
	var seq uint64
	var live bool
	err := projections.Guard(Name, func() error {
		if x.lookup == nil {
			tx, err := x.db.Begin(false)
			if err != nil {
				return err
			}
			x.lookup = tx
		}
		// The "ids" entry is the live version's seq (format 7).
		v, err := x.liveEntry(x.lookup, key)
		if err != nil || v == nil {
			return err
		}
		seq, err = entrySeq(key, v)
		live = err == nil
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("look up chunk %q: %w", id, err)
	}
	return seq, live, nil
}

// sideSeq is the seq of a side-table value that sideFields accepted.
func sideSeq(b []byte) uint64 {
	_, n := binary.Uvarint(b[hashSize:])
	rest := b[hashSize+n:]
	nm, n := binary.Uvarint(rest)
	rest = rest[n+16*int(nm):]
	seq, _ := binary.Uvarint(rest)
	return seq
}

// ChangedAfter reports whether an event after seq changed or hid an item
// stored before it: a tombstone, an edit, a store that supersedes items
// or overwrites a live chunk (committed, or applied since). When it did
// not, the live projections restricted to seq ≤ seq are memory exactly as
// it stood at seq: what came after only added items.
func (x *Index) ChangedAfter(seq uint64) (bool, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return false, ErrClosed
	}
	if n := len(x.changes); n > 0 && x.changes[n-1] > seq {
		return true, nil
	}
	changed := false
	err := x.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketChanges).Cursor().Seek(binary.BigEndian.AppendUint64(nil, seq+1))
		changed = k != nil
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("read fts changes: %w", err)
	}
	return changed, nil
}

// WithMeta returns the ids of the live chunks whose meta holds every pair
// of meta (exact keys and values), sorted, at most limit of them; more
// reports that there were others. It reads the meta terms the index keeps
// for filters (format 4), so finding an item by name costs a term lookup,
// not a pass over the log.
func (x *Index) WithMeta(ctx context.Context, meta map[string]string, limit int) (ids []string, more bool, err error) {
	if len(meta) == 0 || limit <= 0 {
		return nil, false, fmt.Errorf("fts with meta: %w", ErrInvalidQuery)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, false, ErrClosed
	}
	x.settle()
	var qs []query.Query
	for _, k := range sortedMeta(meta) {
		tq := bleve.NewTermQuery(metaTerm(k, meta[k]))
		tq.SetField(fieldMeta)
		qs = append(qs, tq)
	}
	// Document ids are seqs (format 8), not chunk ids, so no search sorted
	// by id serves: the matches are read one by one from bleve's searcher,
	// mapped to chunk ids, and the limit+1 smallest kept (memory for about
	// twice that many ids, however many match).
	n := 0
	err = projections.GuardStore(ctx, Name, func() error {
		adv, err := x.idx.Advanced()
		if err != nil {
			return err
		}
		r, err := adv.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		sr, err := bleve.NewConjunctionQuery(qs...).Searcher(ctx, r, x.idx.Mapping(), search.SearcherOptions{})
		if err != nil {
			return err
		}
		defer sr.Close()
		sctx := &search.SearchContext{DocumentMatchPool: search.NewDocumentMatchPool(sr.DocumentMatchPoolSize(), 0)}
		return x.view(func(tx *bolt.Tx) error {
			dc := x.docChunks(tx, false)
			for {
				dm, err := sr.Next(sctx)
				if err != nil || dm == nil {
					return err
				}
				doc, err := r.ExternalID(dm.IndexInternalID)
				if err != nil {
					return err
				}
				sctx.DocumentMatchPool.Put(dm)
				id, ok, err := dc.chunk(doc)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				n++
				if ids = append(ids, id); len(ids) > 2*(limit+1) {
					sort.Strings(ids)
					ids = ids[:limit+1]
				}
			}
		})
	})
	if err != nil {
		return nil, false, fmt.Errorf("fts with meta: %w", err)
	}
	sort.Strings(ids)
	if n > limit {
		return ids[:limit], true, nil
	}
	return ids, false, nil
}
