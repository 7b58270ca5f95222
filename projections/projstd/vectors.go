package projstd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// VectorOptions configure the vector projection.
type VectorOptions struct {
	// Embedder turns content into vectors (default: vector.HashEmbedder,
	// offline and deterministic).
	Embedder vector.Embedder
	// HNSW shapes the ANN graph. Defaults: package vector's, except
	// EfConstruction 64 (not 128): it builds 100K chunks about a quarter
	// faster (recall@10 0.961 at 100K clustered vectors, EfSearch 128, in
	// package vector's benchmark), which keeps the full rebuild of every
	// projection at 100K near its one-minute target; and EfSearch 256.
	HNSW vector.HNSWOptions
	// Graph keeps the HNSW graph once the live count reaches ExactBelow,
	// and searches through it above that (the only layout before version
	// 6). Off by default: search is exact at every size, which costs no
	// graph insertion per vector on a catch-up (an insertion's cost grows
	// with the graph: at 200K it was over 90% of the build's CPU) and
	// keeps recall at 1 on the hash embedder's nearly orthogonal vectors.
	Graph bool
	// ExactBelow: with Graph, collections with fewer live vectors are
	// searched exactly (brute force, the oracle, recall 1); larger ones
	// through the HNSW graph. Default DefaultExactBelow.
	ExactBelow int
	// GraphEvery: before graph.bin first exists, it is written once this
	// many operations, and a quarter of the live vectors, have accumulated
	// (default 20000; until then operations are replayed from the database
	// on open). After that every Commit appends a delta record
	// (graph.delta) and graph.bin is rewritten when the records reach a
	// quarter of its size, which keeps a bulk load's rewrites linear in
	// total (see vectorgraph.go).
	GraphEvery int
	// ResidentBytes bounds the memory a long-lived process may spend to
	// keep scan.bin's slots and their records in memory (resident slots,
	// vectorresident.go): from its second full search on it scans them
	// there instead of reading the file. Default DefaultResidentBytes;
	// negative: never (every search reads the file).
	ResidentBytes int64
}

// DefaultExactBelow is where vector search switches from exact to the
// graph, with VectorOptions.Graph. Measured on this project's 2-core machine (make bench): an exact
// top-10 over 100K×384 took ~4-5 ms as a float32 scan, and the 8-bit scan
// it now is (package vector, q8.go) takes under a quarter of the float
// scan's time (k=200: 13.5 → 3.0 ms, BenchmarkExactScan100K), while
// the graph's recall@10 on the default hash embedder's vectors of Zipf-like
// text is only ~0.91 at 100K (EfSearch 512; those vectors are close to
// orthogonal, the worst case for any graph index) against ≥ 0.96 on
// clustered vectors like a neural embedder's. So exact search serves up to
// 120K vectors and the graph (always maintained, deterministic) beyond.
const DefaultExactBelow = 120_000

// vectorsVersion is the vector projection's state format. Version 2
// keeps one flat copy of every live vector and builds the graph only once
// the collection reaches ExactBelow (version 1 kept a graph at any size);
// version 3 stores that copy as 8-bit scalar-quantised values (quant.go)
// instead of binary16; version 4 keys "chunks" and "vecs" by the chunk
// id's 16 bytes when it is 32 lowercase hex digits (vectorkey.go); version
// 5 drops "chunks": its record follows the vector in "vecs" (one key and
// one bbolt element a chunk instead of two, a tenth of the file). A
// store of another version is rebuilt from the log
// on open (the state tag differs), and a snapshot of another version is
// refused and rebuilt. Version 6 builds no graph unless
// VectorOptions.Graph asks for one (the state tag says which). Version 7
// stores the vector records by slot in recs.bin, appended in order, and
// the chunks' metadata by slot in "slots", leaving only a small id → slot
// index ("ids") to take a catch-up's random inserts: version 6's "vecs",
// keyed by chunk id, had every bulk commit insert all over a file of
// 725–823 MB at a million chunks, which grew bbolt's commit and mapped
// ~600 MB of that file during the commits (vectorrecs.go).
const vectorsVersion = 7

// VectorProjection embeds every live chunk and indexes it for search.
//
// Every stored chunk has a slot, numbered in the order chunks are first
// stored (format 7). State:
//
//   - recs.bin: slot s's vector, scaled to unit length and quantised to 8
//     bits with a per-vector step (4 + dim bytes, quant.go), at a fixed
//     offset (vectorrecs.go). The indexes hold exactly these values.
//   - scan.bin: slot s's code slot, the form exact search scans
//     (vectorscan.go).
//   - vectors.db (bbolt): "meta" holds the version tag, the checkpoint,
//     the number of live vectors, the number of slots in the two files
//     ("slotnext"), their names when they are scan.1.bin and recs.1.bin
//     ("scanfile", vectorcompact.go), "ids_stale" while a bulk build
//     defers "ids" (vectorbulk.go) and, once a graph exists, the seq
//     and size of graph.bin; "slots" maps a slot (uint64 BE) to the
//     chunk's key and what tombstones and session filters need
//     (appendChunk: uvarint len(key) ‖ key ‖ varint time ‖ uvarint seq ‖
//     session, to the end); "ids" maps the chunk's key to its slot
//     (uvarint). A key is a chunk id as projections.IDKey makes it: tag
//     0 and the 16 bytes of a 32-lowercase-hex id, else tag 1 and the
//     id's bytes; no other key is valid.
//
// So a catch-up appends: its new chunks' records and slots go at the
// ends of the two files and of "slots", and only "ids", about 40 bytes
// a chunk, takes inserts at random places (at a million chunks, format
// 6's "vecs", keyed by chunk id and holding the vectors, was a 725–823
// MB file that every bulk commit inserted into all over); a bulk build
// makes those once, in key order, at its end (vectorbulk.go).
//
// Without a graph, search is exact at any size: each search scans
// scan.bin in blocks and scores its best candidates' records from
// recs.bin (vector.ScanSlots, vector.ScanSearch), with the hits the
// exact index would give (a long-lived process scans its resident copy
// of the slots from its second search, vectorresident.go); catch-up
// writes records, slots and the id index and nothing else, and
// opening reads nothing but the meta bucket. The in-memory exact index (a
// vector.Exact loaded from recs.bin) is loaded only by the session-subset
// search below ExactBelow live vectors (SearchVectorIn), so commands that
// do not search vectors (bm25 queries, session lists) never pay for it.
//
// By default (since version 6) no graph is built. With VectorOptions.Graph, at
// the operation that brings the live count to ExactBelow, the HNSW graph
// is started: every live vector is added in chunk id order, then every
// later operation in order. That point and that set are functions of
// the event sequence alone (never of commit boundaries), so an incremental
// build, a rebuild and a restore give the same graph bytes (the graph is a
// pure function of its operation sequence, package vector). From then on
// "ops" logs the graph's operations (add id+vector / delete id) keyed by
// seq, and graph.bin (mapped, never decoded whole) plus graph.delta's
// records hold the graph as of seq G; opening the graph maps graph.bin,
// applies the records and replays the operations after G (vectorgraph.go
// says when each file is written). The graph stays once started, even if
// deletions bring the count back below the threshold (search is exact
// there again, through the graph's own vectors).
//
// The digest is vector.ContentDigest of the live (id, normalised vector)
// pairs, bound to the version tag: the same whichever index holds them. A
// Commit that removed chunks compacts vectors.db (their session names
// would stay in bbolt's free pages; their records and slots are zeroed in
// the files); Reset creates new files.
type VectorProjection struct {
	dir  string
	opts VectorOptions
	db   *bolt.DB
	cp   projections.Checkpoint
	live int // committed live vectors

	sf       *os.File // scan.bin (vectorscan.go)
	rf       *os.File // recs.bin (vectorrecs.go)
	scanFile string   // scan.bin, or scan.1.bin (vectorcompact.go; recs.bin or recs.1.bin beside it)
	next     uint64   // committed slots in scan.bin and recs.bin

	graphOn    bool   // the graph exists (the live count reached ExactBelow)
	graph      uint64 // seq graph.bin is current to
	graphSize  int64  // graph.bin's size, checked at open
	deltaSize  int64  // bytes of graph.delta applied on top of graph.bin
	sinceGraph int    // operations logged after graph.bin

	// Loaded on first use. loadMu serialises the first-use decisions of
	// SearchText: the engine runs searches side by side (under its shared
	// lock), while Apply, Commit and Reset run alone.
	loadMu sync.Mutex
	scans  int                  // subset searches answered by scanning the stored records
	meta   map[string]chunkMeta // live chunks (Apply)
	// bySession: meta by session, built on first SearchVectorIn
	bySession sessionChunks
	idx       vector.Index // *vector.Exact, or *vector.HNSW once graphOn
	// Resident slots (vectorresident.go): loaded by the second full
	// search (fullScans counts them) when they fit, by one search at a
	// time (resLoading); kept in step by Commit.
	res        *resident
	fullScans  int
	resLoading bool

	// pending, since the last Commit, in apply order
	ops []vecOp
	// Embedding ahead (vectorahead.go): ahead is set when the embedder
	// allows it; queued are the ops waiting for a batch, jobs the batches
	// started since the last Commit, aheadSem bounds those running.
	ahead    bool
	queued   []int
	jobs     []*aheadJob
	aheadSem chan struct{}

	// The id index deferred during a bulk build (vectorbulk.go): bulk
	// holds the keys of the chunks stored new since BeginBulk (nil
	// outside one), idsStale says "ids" lacks some ("ids_stale" in meta).
	bulk     *projections.PendingKeys
	idsStale bool
}

type chunkMeta struct {
	session string
	time    int64
	seq     uint64
}

type vecOp struct {
	seq     uint64
	del     bool
	id      string
	content string
	vec     []float32 // once quantised, kept only while an index in memory needs it (opVecs)
	rec     []byte    // the stored record of vec, once quantised (quant.go)
	code    []byte    // vec's code slot in scan.bin (vector.EncodeSlot, by codeRec)
	meta    chunkMeta
}

var (
	bMeta   = []byte("meta")
	bIDs    = []byte("ids")
	bOps    = []byte("ops")
	kCP     = []byte("checkpoint")
	kVer    = []byte("version")
	kGraph  = []byte("graph")
	kLive   = []byte("live")
	buckets = [][]byte{bMeta, bIDs, bOps, bSlots}
)

// The freelist is synced: with NoFreelistSync, bbolt rebuilds it at open
// by walking every page, which would read every vector at every open.
var vectorBoltOptions = &bolt.Options{Timeout: 1e9}

// errVectorsCorrupt is returned (wrapped) when a stored vector record does
// not decode.
var errVectorsCorrupt = errors.New("vectors: corrupt record")

// OpenVectors opens (or creates) the vector projection in dir. It reads
// the meta bucket only; vectors and the graph are loaded on first use.
func OpenVectors(dir string, o VectorOptions) (*VectorProjection, error) {
	if o.Embedder == nil {
		e, err := vector.NewHashEmbedder(0)
		if err != nil {
			return nil, err
		}
		o.Embedder = e
	}
	if o.ExactBelow <= 0 {
		o.ExactBelow = DefaultExactBelow
	}
	if o.HNSW.EfConstruction == 0 {
		o.HNSW.EfConstruction = 64
	}
	if o.HNSW.EfSearch == 0 {
		o.HNSW.EfSearch = 256
	}
	if o.GraphEvery <= 0 {
		o.GraphEvery = 20000
	}
	if o.ResidentBytes == 0 {
		o.ResidentBytes = DefaultResidentBytes
	}
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return nil, err
	}
	db, err := projections.OpenBolt(filepath.Join(dir, "vectors.db"), vectorBoltOptions)
	if err != nil {
		return nil, fmt.Errorf("open vectors db: %w", err)
	}
	if err := projections.CheckBolt(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open vectors db: %w", err)
	}
	v := &VectorProjection{dir: dir, opts: o, db: db}
	v.ahead = v.aheadOK()
	if err := v.load(); err != nil {
		db.Close()
		return nil, err
	}
	return v, nil
}

// versionTag enters the digest: the format, the embedder and the graph's
// shape.
func (v *VectorProjection) versionTag() []byte {
	return []byte(fmt.Sprintf("%d/%s/M%d/efc%d", vectorsVersion, v.opts.Embedder.Name(), v.opts.HNSW.M, v.opts.HNSW.EfConstruction))
}

// DigestKey implements projections.DigestKeyer: the digest covers the
// version tag (the embedder's name among it).
func (v *VectorProjection) DigestKey() string { return string(v.versionTag()) }

// stateTag is what the stored state was built with: the version tag and
// whether a graph is kept and the threshold where it starts (the graph's
// bytes depend on it, the digest does not). A change rebuilds.
func (v *VectorProjection) stateTag() []byte {
	if !v.opts.Graph {
		return []byte(fmt.Sprintf("%s/nograph", v.versionTag()))
	}
	return []byte(fmt.Sprintf("%s/exact%d", v.versionTag(), v.opts.ExactBelow))
}

// load reads the meta bucket and checks graph.bin's size (its content is
// checked when the graph is loaded).
func (v *VectorProjection) load() error {
	var stale, fresh bool
	// Checked in a read transaction, written only when new: a process that
	// only reads writes nothing (a no-op bbolt commit still writes and
	// syncs two pages).
	err := v.db.View(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if tx.Bucket(b) == nil {
				fresh = true
				return nil
			}
		}
		ver := tx.Bucket(bMeta).Get(kVer)
		fresh = ver == nil
		stale = ver != nil && !bytes.Equal(ver, v.stateTag())
		return nil
	})
	if err == nil && fresh {
		err = v.db.Update(func(tx *bolt.Tx) error {
			for _, b := range buckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			m := tx.Bucket(bMeta)
			ver := m.Get(kVer)
			if ver == nil {
				return m.Put(kVer, v.stateTag())
			}
			stale = !bytes.Equal(ver, v.stateTag())
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("open vectors: %w", err)
	}
	if stale { // another format or another embedder: start over
		return v.Reset()
	}
	err = v.db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if b := m.Get(kCP); len(b) == 8+log.HashSize {
			v.cp.Seq = binary.BigEndian.Uint64(b)
			copy(v.cp.Hash[:], b[8:])
		}
		if b := m.Get(kLive); len(b) == 8 {
			v.live = int(binary.BigEndian.Uint64(b))
		}
		if b := m.Get(kNext); len(b) == 8 {
			v.next = binary.BigEndian.Uint64(b)
		}
		v.scanFile = scanFileName
		if b := m.Get(kScanFile); b != nil {
			if string(b) != scanFileAlt {
				return fmt.Errorf("vector scan file %q: %w", b, errVectorsCorrupt)
			}
			v.scanFile = scanFileAlt
		}
		if b := m.Get(kGraph); b != nil {
			if err := v.decodeGraphRecord(b); err != nil {
				return err
			}
		}
		v.sinceGraph = tx.Bucket(bOps).Stats().KeyN
		v.idsStale = m.Get(kIDsStale) != nil
		return nil
	})
	if err != nil {
		return fmt.Errorf("open vectors: %w", err)
	}
	if v.idsStale { // a bulk build did not end: "ids" lacks its chunks
		if err := v.rebuildIDs(); err != nil {
			return fmt.Errorf("open vectors: %w", err)
		}
	}
	if err := v.checkGraphFiles(); err != nil {
		return err
	}
	return v.openSlotFiles()
}

// loadMeta reads the live chunks' metadata (what Apply needs to resolve
// tombstones), once: the committed chunks, then the pending operations.
func (v *VectorProjection) loadMeta() error {
	if v.meta != nil {
		return nil
	}
	meta := map[string]chunkMeta{}
	err := v.forEachMeta(func(id string, cm chunkMeta) {
		meta[id] = cm
	})
	if err != nil {
		return fmt.Errorf("load vector chunks: %w", err)
	}
	for _, op := range v.ops {
		if op.del {
			delete(meta, op.id)
		} else {
			meta[op.id] = op.meta
		}
	}
	v.meta = meta
	return nil
}

// index returns the in-memory index, loading it on first use: the graph
// (graph.bin and the operations after it) once it exists, else every
// stored vector into an exact index. A load failure is damage: the
// projection is flagged for a reset and a *projections.DamagedError
// returned, which the engine answers by rebuilding it from the log.
func (v *VectorProjection) index() (vector.Index, error) {
	if v.idx != nil {
		return v.idx, nil
	}
	err := projections.Guard("vectors", v.loadIndex)
	if err == nil {
		return v.idx, nil
	}
	v.idx = nil
	if _, ok := projections.Damaged(err); !ok {
		err = &projections.DamagedError{Projection: "vectors", Err: err}
	}
	if merr := projections.MarkDamaged(v.dir, err.Error()); merr != nil {
		err = errors.Join(err, merr)
	}
	return nil, err
}

func (v *VectorProjection) loadIndex() error {
	if !v.graphOn {
		x, err := vector.NewExact(v.opts.Embedder.Dim())
		if err != nil {
			return err
		}
		x.Reserve(v.live)
		vec := make([]float32, v.opts.Embedder.Dim())
		err = v.forEachRec(func(id string, _ []byte, rec []byte) error {
			if err := decodeVec(rec, vec); err != nil {
				return err
			}
			return x.Add(id, vec)
		})
		if err != nil {
			return fmt.Errorf("load vectors: %w", err)
		}
		v.idx = x
		return nil
	}
	g, err := v.openGraph()
	if err != nil {
		return err
	}
	err = v.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bOps).Cursor()
		var from [8]byte
		binary.BigEndian.PutUint64(from[:], v.graph+1)
		if v.graphSize == 0 {
			from = [8]byte{}
		}
		for k, val := c.Seek(from[:]); k != nil; k, val = c.Next() {
			op, err := decodeOp(val)
			if err != nil {
				return err
			}
			if err := applyOp(g, op); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load vector graph operations: %w", err)
	}
	v.idx = g
	return nil
}

// Name implements projections.Projection.
func (v *VectorProjection) Name() string { return "vectors" }

// Version implements projections.Projection.
func (v *VectorProjection) Version() int { return vectorsVersion }

// Checkpoint implements projections.Projection.
func (v *VectorProjection) Checkpoint() (projections.Checkpoint, error) { return v.cp, nil }

// Apply implements projections.Projection. Embedding is deferred to Commit
// so HTTP embedders get batches; a local embedder embeds batches ahead,
// on goroutines of their own (vectorahead.go).
func (v *VectorProjection) Apply(ev *log.Event) error {
	switch b := ev.Body.(type) {
	case *log.Store:
		// A catch-up of stores alone never needs the metadata of every
		// chunk in memory (at a million chunks, a few hundred MB of
		// heap): it is loaded at the first edit or tombstone (loadMeta
		// adds the pending operations), or here when the session view,
		// which setMeta keeps current, exists.
		m := chunkMeta{session: b.Session, time: b.Time, seq: ev.Seq}
		if v.bySession != nil {
			if err := v.loadMeta(); err != nil {
				return err
			}
		}
		if v.meta != nil {
			v.setMeta(b.ChunkID, m)
		}
		v.ops = append(v.ops, vecOp{seq: ev.Seq, id: b.ChunkID, content: b.SearchText(), meta: m})
		v.queueEmbed(len(v.ops) - 1)
	case *log.Edit:
		if err := v.loadMeta(); err != nil {
			return err
		}
		for _, id := range b.Removes {
			if m, ok := v.meta[id]; ok && m.seq < ev.Seq {
				v.delMeta(id)
				v.ops = append(v.ops, vecOp{seq: ev.Seq, del: true, id: id})
			}
		}
		s := &b.Store
		m := chunkMeta{session: s.Session, time: s.Time, seq: ev.Seq}
		v.setMeta(s.ChunkID, m)
		v.ops = append(v.ops, vecOp{seq: ev.Seq, id: s.ChunkID, content: s.SearchText(), meta: m})
		v.queueEmbed(len(v.ops) - 1)
	case *log.Tombstone:
		if err := v.loadMeta(); err != nil {
			return err
		}
		var ids []string
		for id, m := range v.meta {
			if m.seq < ev.Seq && projections.TombstoneMatches(b, id, m.session, m.time) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			v.delMeta(id)
			v.ops = append(v.ops, vecOp{seq: ev.Seq, del: true, id: id})
		}
	}
	return nil
}

func applyOp(idx vector.Index, op vecOp) error {
	if op.del {
		return idx.Delete(op.id)
	}
	return idx.Add(op.id, op.vec)
}

// Commit embeds pending contents and writes the vectors, the graph's
// operations (once it exists) and the checkpoint in one transaction.
func (v *VectorProjection) Commit(cp projections.Checkpoint) error {
	if v.bulk == nil {
		// Outside a bulk build "ids" must be whole: its lookups decide
		// which chunks are new (a failed EndBulk left it behind).
		if err := v.settleIDs(); err != nil {
			return err
		}
	}
	v.collectAhead()
	if err := v.embedPending(context.Background()); err != nil {
		return err
	}
	if v.graphOn {
		if _, err := v.index(); err != nil {
			return err
		}
	}
	dim := v.opts.Embedder.Dim()
	if err := v.codePending(dim); err != nil {
		return err
	}
	if err := v.opVecs(dim); err != nil {
		return err
	}
	live, graphOn, crossed := v.live, v.graphOn, false
	next := v.next
	// A bulk build's changes to the keys kept in memory (slot, or -1:
	// removed), made there once the transaction commits.
	var staged map[string]int64
	stale := v.idsStale
	if v.bulk != nil {
		staged = map[string]int64{}
	}
	var logged int
	var newIdx vector.Index
	var writes []slotWrite
	err := v.db.Update(func(tx *bolt.Tx) error {
		ob, sb := tx.Bucket(bOps), tx.Bucket(bSlots)
		// New chunks take the next slots, so their "slots" records go
		// at the end of the bucket, in order: appends, which fill pages
		// whole (a re-stored or removed chunk's record is rare).
		sb.FillPercent = 1
		// The index's keys go in key order, not the ids' random order
		// (projections.SortedWrites): bbolt copies a node's tail for every
		// insert before its end, and a commit's inserts into a young
		// file all land in a few nodes.
		ibb := tx.Bucket(bIDs)
		ib := projections.NewSortedWrites(ibb)
		var graphOps []vecOp
		for _, op := range v.ops {
			key := projections.IDKey(op.id)
			slot, existed, err := v.lookupSlot(ib, staged, key)
			if err != nil {
				return err
			}
			if op.del {
				if existed {
					live--
					if err := sb.Delete(slotKey(slot)); err != nil {
						return err
					}
					writes = append(writes, slotWrite{slot: slot})
				}
				if v.bulk != nil {
					staged[string(key)] = -1
				}
				if err := ib.Delete(key); err != nil {
					return err
				}
			} else {
				if !existed {
					live++
					slot = next
					next++
					if v.bulk != nil {
						// Written at EndBulk (vectorbulk.go).
						staged[string(key)] = int64(slot)
					} else if err := ib.Put(key, slotRef(slot)); err != nil {
						return err
					}
				}
				writes = append(writes, slotWrite{slot: slot, b: op.code, rec: op.rec, key: key})
				if err := sb.Put(slotKey(slot), appendChunk(key, op.meta)); err != nil {
					return err
				}
			}
			switch {
			case graphOn:
				graphOps = append(graphOps, op)
			case v.opts.Graph && live >= v.opts.ExactBelow:
				// The graph starts here: every live vector, in id order.
				graphOn, crossed = true, true
				start := len(graphOps)
				var err error
				if graphOps, err = v.liveVectors(sb, writes, op.seq, graphOps); err != nil {
					return err
				}
				// Slot order is not id order; the graph's bytes follow
				// insertion order.
				tail := graphOps[start:]
				sort.Slice(tail, func(i, j int) bool { return tail[i].id < tail[j].id })
			}
		}
		if err := ib.Flush(); err != nil {
			return err
		}
		if len(graphOps) > 0 {
			g := v.idx
			if crossed {
				hg, err := vector.NewHNSW(dim, v.opts.HNSW)
				if err != nil {
					return err
				}
				g = hg
			}
			for i, op := range graphOps {
				if err := applyOp(g, op); err != nil {
					return fmt.Errorf("vectors: seq %d: %w", op.seq, err)
				}
				var k [12]byte
				binary.BigEndian.PutUint64(k[:], op.seq)
				binary.BigEndian.PutUint32(k[8:], uint32(i))
				if err := ob.Put(k[:], encodeOp(op)); err != nil {
					return err
				}
			}
			logged, newIdx = len(graphOps), g
		}
		m := tx.Bucket(bMeta)
		if crossed {
			if err := m.Put(kGraph, make([]byte, 16)); err != nil {
				return err
			}
		}
		if len(staged) > 0 && !stale {
			if err := m.Put(kIDsStale, []byte{1}); err != nil {
				return err
			}
			stale = true
		}
		// The slots are durable before the database says they exist.
		if err := v.writeSlots(writes); err != nil {
			return err
		}
		var nx [8]byte
		binary.BigEndian.PutUint64(nx[:], next)
		if err := m.Put(kNext, nx[:]); err != nil {
			return err
		}
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(live))
		if err := m.Put(kLive, n[:]); err != nil {
			return err
		}
		var b [8 + log.HashSize]byte
		binary.BigEndian.PutUint64(b[:], cp.Seq)
		copy(b[8:], cp.Hash[:])
		return m.Put(kCP, b[:])
	})
	if err != nil {
		// The graph may hold operations the database does not: reload.
		if v.graphOn || crossed {
			v.idx = nil
		}
		return fmt.Errorf("commit vectors: %w", err)
	}
	scrub := false
	for _, op := range v.ops {
		scrub = scrub || op.del
	}
	if v.idx != nil && !graphOn {
		for _, op := range v.ops {
			if err := applyOp(v.idx, op); err != nil {
				v.idx = nil // reloaded from the database on next use
				break
			}
		}
	}
	if newIdx != nil {
		v.idx = newIdx
	}
	v.live, v.graphOn, v.next = live, graphOn, next
	v.idsStale = stale
	for k, s := range staged {
		if s < 0 {
			v.bulk.Delete([]byte(k))
		} else {
			v.bulk.Set([]byte(k), uint64(s))
		}
	}
	if v.res != nil {
		if err := v.res.apply(writes); err != nil || !v.residentFits(next) {
			v.res = nil // the next searches read the file
		}
	}
	v.sinceGraph += logged
	clear(v.ops) // their vectors, records and codes are garbage now
	v.ops = v.ops[:0]
	v.cp = cp
	if err := v.persistGraph(false); err != nil {
		return err
	}
	if scrub {
		// Removed chunks' session names and vectors must not stay in
		// the free pages.
		return v.reopen(true)
	}
	return nil
}

// ReleaseMemory implements projections.MemoryReleaser (vectors.db; the
// slot and record files are read and written, not mapped).
func (v *VectorProjection) ReleaseMemory() {
	if v.db != nil {
		projections.ReleaseBolt(v.db)
	}
}

// Compact implements projections.Compacter: vectors.db is rewritten tight
// after a bulk load, and scan.bin and recs.bin without their dead slots
// (vectorcompact.go).
func (v *VectorProjection) Compact() error {
	if err := v.settleIDs(); err != nil {
		return err
	}
	done, err := v.compactSlots()
	if done || err != nil {
		return err
	}
	return v.reopen(true)
}

// reopen closes vectors.db, compacts it (when compact) and opens it again.
func (v *VectorProjection) reopen(compact bool) error {
	path := filepath.Join(v.dir, "vectors.db")
	if err := v.db.Close(); err != nil {
		return fmt.Errorf("close vectors db: %w", err)
	}
	var err error
	if compact {
		err = projections.CompactBolt(path, vectorBoltOptions)
	}
	db, oerr := projections.OpenBolt(path, vectorBoltOptions)
	if oerr != nil {
		return errors.Join(err, fmt.Errorf("reopen vectors db: %w", oerr))
	}
	v.db = db
	return err
}

// Flush writes the graph file if the graph exists and operations are
// pending since the last one, so the next open (after a snapshot, or a
// long rebuild) loads instead of replaying. Snapshot creation calls it.
func (v *VectorProjection) Flush() error {
	if !v.graphOn || (v.sinceGraph == 0 && v.deltaSize == 0) {
		return nil
	}
	if _, err := v.index(); err != nil {
		return err
	}
	return v.persistGraph(true)
}

// codePending checks, quantises and codes the pending vectors, split
// between up to GOMAXPROCS goroutines (each op's values depend on its
// vector alone; after embedding, this is the largest per-vector cost of
// a catch-up). The error is the first op's in order.
func (v *VectorProjection) codePending(dim int) error {
	sl := vector.SlotLen(dim)
	code := func(op *vecOp) error {
		if op.del || op.code != nil {
			return nil
		}
		if op.rec == nil {
			if err := checkVec(op.vec, dim); err != nil {
				return fmt.Errorf("commit vectors: seq %d: %w", op.seq, err)
			}
			op.vec, op.rec = quantize(op.vec)
		}
		c := make([]byte, sl)
		if err := codeRec(c, op.rec); err != nil {
			return fmt.Errorf("commit vectors: seq %d: %w", op.seq, err)
		}
		op.code = c
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), len(v.ops)/64, 8)
	if workers < 2 {
		for i := range v.ops {
			if err := code(&v.ops[i]); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(v.ops))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*len(v.ops)/workers, (w+1)*len(v.ops)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				errs[i] = code(&v.ops[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// opVecs gives the pending stores their float vectors when an index in
// memory takes them (the graph, or a loaded exact index), decoded from
// their records (the values quantize made), and drops them otherwise.
func (v *VectorProjection) opVecs(dim int) error {
	need := v.graphOn || v.opts.Graph || v.idx != nil
	for i := range v.ops {
		op := &v.ops[i]
		switch {
		case op.del:
		case !need:
			op.vec = nil
		case op.vec == nil:
			op.vec = make([]float32, dim)
			if err := decodeVec(op.rec, op.vec); err != nil {
				return fmt.Errorf("commit vectors: seq %d: %w", op.seq, err)
			}
		}
	}
	return nil
}

func (v *VectorProjection) embedPending(ctx context.Context) error {
	var texts []string
	var at []int
	for i, op := range v.ops {
		if !op.del && op.vec == nil && op.rec == nil {
			texts = append(texts, op.content)
			at = append(at, i)
		}
	}
	const batch = 256
	for s := 0; s < len(texts); s += batch {
		e := min(s+batch, len(texts))
		vs, err := v.opts.Embedder.Embed(ctx, texts[s:e])
		if err != nil {
			return fmt.Errorf("embed chunks (seq %d..): %w", v.ops[at[s]].seq, err)
		}
		for j, vec := range vs {
			v.ops[at[s+j]].vec = vec
			v.ops[at[s+j]].content = ""
		}
	}
	return nil
}

// Digest implements projections.Projection: the index's content digest
// (ids and vector bytes in id order) bound to the version tag.
//
// Without a graph and before the exact index is loaded, it is computed
// from the database and checks scan.bin on the way (storedDigest); the
// loaded index's digest is the same.
func (v *VectorProjection) Digest() ([32]byte, error) {
	var d [32]byte
	// Only a bulk build under way defers "ids", and nothing searches
	// meanwhile: this writes nothing otherwise.
	if err := v.settleIDs(); err != nil {
		return [32]byte{}, err
	}
	v.loadMu.Lock()
	loaded := v.idx != nil
	v.loadMu.Unlock()
	if !v.graphOn && !loaded {
		var err error
		if d, err = v.storedDigest(); err != nil {
			return [32]byte{}, err
		}
	} else {
		idx, err := v.index()
		if err != nil {
			return [32]byte{}, err
		}
		if err := v.verifyGraph(idx); err != nil {
			return [32]byte{}, err
		}
		d = idx.Digest()
	}
	h := sha256.New()
	h.Write(v.versionTag())
	h.Write(d[:])
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// Reset implements projections.Projection.
func (v *VectorProjection) Reset() error {
	// A new file, not dropped buckets (their pages would keep the data).
	path := filepath.Join(v.dir, "vectors.db")
	if err := v.db.Close(); err != nil {
		return fmt.Errorf("reset vectors: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reset vectors: %w", err)
	}
	if err := v.reopen(false); err != nil {
		return fmt.Errorf("reset vectors: %w", err)
	}
	err := v.db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if tx.Bucket(b) != nil {
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put(kVer, v.stateTag())
	})
	if err != nil {
		return fmt.Errorf("reset vectors: %w", err)
	}
	if err := v.closeSlotFiles(); err != nil {
		return fmt.Errorf("reset vectors: %w", err)
	}
	for _, f := range []string{"graph.bin", "graph.delta", scanFileName, scanFileAlt, recsFileName, recsFileAlt} {
		if err := os.Remove(filepath.Join(v.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	v.next, v.scanFile = 0, scanFileName
	if err := v.openSlotFiles(); err != nil {
		return fmt.Errorf("reset vectors: %w", err)
	}
	v.dropAhead()
	v.meta, v.ops, v.cp, v.live = nil, nil, projections.Checkpoint{}, 0
	v.bySession = nil
	v.res, v.fullScans = nil, 0
	v.graphOn, v.graph, v.graphSize, v.deltaSize, v.sinceGraph = false, 0, 0, 0, 0
	v.idsStale = false
	if v.bulk != nil {
		v.bulk.Clear()
	}
	// No in-memory index: a rebuild would keep every vector in it for
	// nothing (the first search scans the file in place, then loads).
	v.idx = nil
	return nil
}

// Close implements projections.Projection.
func (v *VectorProjection) Close() error {
	v.dropAhead()
	err := v.db.Close()
	return errors.Join(err, v.closeSlotFiles())
}

// Size reports the bytes on disk.
func (v *VectorProjection) Size() int64 {
	var n int64
	for _, f := range []string{"vectors.db", "graph.bin", "graph.delta", v.scanFile, recsFileFor(v.scanFile)} {
		if fi, err := os.Stat(filepath.Join(v.dir, f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// EmbedderName is the name of the embedder the projection was built with
// (for a static model it carries the model's hash): what a snapshot
// manifest should record next to the digest, which already covers it.
func (v *VectorProjection) EmbedderName() string { return v.opts.Embedder.Name() }

// EmbedderModelHash is the hex SHA-256 of the embedder's model files, or
// "" for an embedder without model files (the built-in hash embedder, a
// server): the name alone cannot tell two static models apart once it is
// abbreviated.
func (v *VectorProjection) EmbedderModelHash() string { return modelHash(v.opts.Embedder) }

// EmbedderID returns the name and model hash (see EmbedderModelHash) of
// the embedder o selects, the default one when o names none, without
// opening a projection.
func (o VectorOptions) EmbedderID() (name, model string, err error) {
	e := o.Embedder
	if e == nil {
		if e, err = vector.NewHashEmbedder(0); err != nil {
			return "", "", fmt.Errorf("default embedder: %w", err)
		}
	}
	return e.Name(), modelHash(e), nil
}

func modelHash(e vector.Embedder) string {
	if m, ok := e.(interface{ ModelHash() [32]byte }); ok {
		h := m.ModelHash()
		return hex.EncodeToString(h[:])
	}
	return ""
}

// Index exposes the in-memory index, loading it (tests, benchmarks,
// snapshot checks): a *vector.HNSW once the graph exists, else a
// *vector.Exact.
func (v *VectorProjection) Index() (vector.Index, error) { return v.index() }

// scan is an exact search over the stored vectors, read in place. A record
// that does not decode is damage (see index).
func (v *VectorProjection) scan(q []float32, k int) ([]vector.Hit, error) {
	return v.scanWhere(q, k, nil)
}

// scanDropEvery is how many chunk records a walk of the "slots" bucket
// reads between drops of the database's pages from the process's
// resident set (DropResident; a read transaction keeps the mapping in
// place). A one-shot process searching a session subset below ExactBelow
// walks every chunk record: the walk would leave the bucket's pages
// resident. A variable for tests.
var scanDropEvery = 4096

// scanWhere is scan over the stored records whose chunk metadata
// (appendMeta) keep accepts; a nil keep accepts all. The rest are
// skipped before their records are read.
func (v *VectorProjection) scanWhere(q []float32, k int, keep func(meta []byte) (bool, error)) ([]vector.Hit, error) {
	dim := v.opts.Embedder.Dim()
	var hits []vector.Hit
	err := projections.Guard("vectors", func() error {
		var err error
		hits, err = vector.ScanSearch(q, dim, k, func(fn func(string, []float32, []int8) error) error {
			vec := make([]float32, dim)
			return v.forEachChunk(keep == nil, func(id string, meta []byte, rec func() ([]byte, error)) error {
				if keep != nil {
					if ok, err := keep(meta); err != nil || !ok {
						return err
					}
				}
				b, err := rec()
				if err != nil {
					return err
				}
				if err := decodeVec(b, vec); err != nil {
					return err
				}
				return fn(id, vec, recCodes(b))
			})
		})
		return err
	})
	if err != nil {
		return nil, v.readDamage(err)
	}
	return hits, nil
}

// forEachChunk calls fn with every stored chunk's id, metadata
// (appendMeta) and a function reading its vector record, in slot order
// (the records are read in ~100 KB blocks when all is true, else one at
// a time: a walk that reads few). The walk drops the database's pages
// from the resident set as it goes (scanDropEvery).
func (v *VectorProjection) forEachChunk(all bool, fn func(id string, meta []byte, rec func() ([]byte, error)) error) error {
	block := 1
	if all {
		block = 256
	}
	recs := v.newRecReader(block)
	return v.db.View(func(tx *bolt.Tx) error {
		n := 0
		return tx.Bucket(bSlots).ForEach(func(k, val []byte) error {
			if n++; n%scanDropEvery == 0 {
				projections.DropResident(v.db, tx.Size())
			}
			s, id, meta, err := decodeSlotEntry(k, val)
			if err != nil {
				return err
			}
			return fn(id, meta, func() ([]byte, error) { return recs.rec(s) })
		})
	})
}

// decodeSlotEntry decodes one "slots" entry: the slot from its key, the
// chunk id and metadata from its value.
func decodeSlotEntry(k, val []byte) (slot uint64, id string, meta []byte, err error) {
	if len(k) != 8 {
		return 0, "", nil, fmt.Errorf("vector slot key %x: %w", k, errVectorsCorrupt)
	}
	key, meta, err := splitChunk(val)
	if err != nil {
		return 0, "", nil, err
	}
	id, ok := projections.IDOfKey(key)
	if !ok {
		return 0, "", nil, fmt.Errorf("vector key %x: %w", key, errVectorsCorrupt)
	}
	return binary.BigEndian.Uint64(k), id, meta, nil
}

// forEachRec calls fn with every stored chunk's id, metadata and vector
// record, in slot order.
func (v *VectorProjection) forEachRec(fn func(id string, meta, rec []byte) error) error {
	return v.forEachChunk(true, func(id string, meta []byte, rec func() ([]byte, error)) error {
		b, err := rec()
		if err != nil {
			return err
		}
		return fn(id, meta, b)
	})
}

// liveVectors appends to out an add of every live vector as of the
// current write transaction (sb is its "slots" bucket; writes, this
// Commit's slot writes so far, hold the records not yet in recs.bin),
// with seq, in slot order.
func (v *VectorProjection) liveVectors(sb *bolt.Bucket, writes []slotWrite, seq uint64, out []vecOp) ([]vecOp, error) {
	dim := v.opts.Embedder.Dim()
	pending := make(map[uint64][]byte, len(writes))
	for _, w := range writes {
		pending[w.slot] = w.rec
	}
	recs := v.newRecReader(256)
	err := sb.ForEach(func(k, val []byte) error {
		s, id, _, err := decodeSlotEntry(k, val)
		if err != nil {
			return err
		}
		rec, ok := pending[s]
		if !ok {
			if rec, err = recs.rec(s); err != nil {
				return err
			}
		}
		vec := make([]float32, dim)
		if err := decodeVec(rec, vec); err != nil {
			return err
		}
		out = append(out, vecOp{seq: seq, id: id, vec: vec})
		return nil
	})
	return out, err
}

// readDamage turns the error of a read of the stored vectors into damage
// when the state did not decode (errVectorsCorrupt, or a guarded panic),
// and flags the projection for a rebuild; other errors pass unchanged.
func (v *VectorProjection) readDamage(err error) error {
	if _, ok := projections.Damaged(err); !ok {
		if !errors.Is(err, errVectorsCorrupt) {
			return err
		}
		err = &projections.DamagedError{Projection: "vectors", Err: err}
	}
	if merr := projections.MarkDamaged(v.dir, err.Error()); merr != nil {
		err = errors.Join(err, merr)
	}
	return err
}

// exactSearcher is the exact scan of the graph's own vectors.
type exactSearcher interface {
	SearchExact(q []float32, k int) ([]vector.Hit, error)
}

// SearchText embeds text and returns the k nearest live chunks (cosine; a
// hit's ID is the chunk id): exactly, through the graph once one serves
// (VectorOptions.Graph). Without a graph every search scans scan.bin
// (the hits of the loaded exact index, without loading it), or searches
// the exact index if a subset search has loaded it.
func (v *VectorProjection) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	vs, err := v.opts.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	return v.searchVec(vs[0], k)
}

// searchVec returns the k nearest live chunks of the query vector q.
func (v *VectorProjection) searchVec(q []float32, k int) ([]vector.Hit, error) {
	var hits []vector.Hit
	var err error
	v.loadMu.Lock()
	scan := v.idx == nil && !v.graphOn
	var idx vector.Index
	var ierr error
	if !scan {
		idx, ierr = v.index()
	}
	res, load := v.res, false
	if scan && res == nil && !v.resLoading {
		// The second full search of a process loads the resident
		// slots: a one-shot command reads the file once.
		v.fullScans++
		if v.fullScans >= 2 && v.residentFits(v.next) {
			v.resLoading, load = true, true
		}
	}
	v.loadMu.Unlock()
	if load {
		r, lerr := v.loadResident()
		v.loadMu.Lock()
		v.resLoading = false
		if lerr == nil {
			v.res, res = r, r
		}
		v.loadMu.Unlock()
		if lerr != nil {
			return nil, lerr
		}
	}
	switch {
	case !scan:
		if ierr != nil {
			return nil, ierr
		}
		hits, err = v.searchIndex(idx, q, k)
	case res != nil:
		hits, err = v.residentSearch(res, q, k)
	default:
		hits, err = v.scanSearch(q, k)
	}
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// checkVec refuses what the indexes would refuse on load, before it is
// stored.
func checkVec(vec []float32, dim int) error {
	if len(vec) != dim {
		return fmt.Errorf("embedding has %d dimensions, want %d: %w", len(vec), dim, vector.ErrDimension)
	}
	for _, f := range vec {
		// f-f is 0 for every finite f and NaN for NaN and ±Inf: one
		// subtraction, where IsNaN and IsInf were 4% of a rebuild.
		if f-f != 0 {
			return fmt.Errorf("embedding holds NaN or Inf: %w", vector.ErrInvalidVector)
		}
	}
	return nil
}

// forEachMeta calls fn with every stored chunk's id and metadata, in slot
// order.
func (v *VectorProjection) forEachMeta(fn func(id string, cm chunkMeta)) error {
	return v.forEachChunk(false, func(id string, meta []byte, _ func() ([]byte, error)) error {
		cm, err := decodeMeta(meta)
		if err != nil {
			return err
		}
		fn(id, cm)
		return nil
	})
}

func encodeOp(op vecOp) []byte {
	b := []byte{'A'}
	if op.del {
		b[0] = 'D'
	}
	b = binary.AppendUvarint(b, op.seq)
	b = binary.AppendUvarint(b, uint64(len(op.id)))
	b = append(b, op.id...)
	for _, f := range op.vec {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func decodeOp(b []byte) (vecOp, error) {
	bad := fmt.Errorf("decode operation record: %w", errVectorsCorrupt)
	if len(b) < 1 || (b[0] != 'A' && b[0] != 'D') {
		return vecOp{}, bad
	}
	op := vecOp{del: b[0] == 'D'}
	b = b[1:]
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return op, bad
	}
	op.seq, b = seq, b[n:]
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return op, bad
	}
	op.id, b = string(b[n:n+int(l)]), b[n+int(l):]
	if len(b)%4 != 0 {
		return op, bad
	}
	if !op.del {
		op.vec = make([]float32, len(b)/4)
		for i := range op.vec {
			op.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return op, nil
}
