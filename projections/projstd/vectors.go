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
	"sort"

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
	// ExactBelow: collections with fewer live vectors are searched exactly
	// (brute force, the oracle, recall 1); larger ones through the HNSW
	// graph. Default DefaultExactBelow.
	ExactBelow int
	// GraphEvery: the graph file is rewritten once this many operations
	// have accumulated since the last one (default 20000); operations after
	// it are replayed from the database on open.
	GraphEvery int
}

// DefaultExactBelow is where vector search switches from exact to the
// graph. Measured on this project's 2-core machine (make bench): an exact
// top-10 over 100K×384 takes ~4-5 ms, inside the 10 ms query budget, while
// the graph's recall@10 on the default hash embedder's vectors of Zipf-like
// text is only ~0.91 at 100K (EfSearch 512; those vectors are close to
// orthogonal, the worst case for any graph index) against ≥ 0.96 on
// clustered vectors like a neural embedder's. So exact search serves up to
// 120K vectors and the graph (always maintained, deterministic) beyond.
const DefaultExactBelow = 120_000

// vectorsVersion is the vector projection's state format.
const vectorsVersion = 1

// VectorProjection embeds every live chunk and indexes it in an HNSW graph.
//
// State: vectors.db (bbolt) holds the checkpoint, the chunk metadata needed
// to resolve tombstones, and an operation log (add id+vector / delete id)
// keyed by seq; graph.bin holds the HNSW graph as of seq G. Opening loads
// the graph and replays the operations after G, so a commit costs one bbolt
// transaction and the large graph file is rewritten only every GraphEvery
// operations. The HNSW graph is a pure function of the operation sequence
// (package vector), so an incremental build, a rebuild and a restore give
// the same bytes. A Commit that removed chunks compacts vectors.db (their
// session names and vectors would stay in bbolt's free pages); Reset
// creates a new file.
type VectorProjection struct {
	dir   string
	opts  VectorOptions
	db    *bolt.DB
	idx   *vector.HNSW
	meta  map[string]chunkMeta // live chunks
	cp    projections.Checkpoint
	graph uint64 // seq the graph file is current to
	// pending, since the last Commit, in apply order
	ops        []vecOp
	sinceGraph int
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
	vec     []float32
}

var (
	bMeta   = []byte("meta")
	bChunks = []byte("chunks")
	bOps    = []byte("ops")
	kCP     = []byte("checkpoint")
	kVer    = []byte("version")
	kGraph  = []byte("graph")
)

var vectorBoltOptions = &bolt.Options{Timeout: 1e9, NoFreelistSync: true}

// errVectorsCorrupt is returned (wrapped) when a stored vector record does
// not decode.
var errVectorsCorrupt = errors.New("vectors: corrupt record")

// OpenVectors opens (or creates) the vector projection in dir.
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
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "vectors.db"), 0o600, vectorBoltOptions)
	if err != nil {
		return nil, fmt.Errorf("open vectors db: %w", err)
	}
	if err := projections.CheckBolt(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open vectors db: %w", err)
	}
	v := &VectorProjection{dir: dir, opts: o, db: db}
	if err := v.load(); err != nil {
		db.Close()
		return nil, err
	}
	return v, nil
}

func (v *VectorProjection) versionTag() []byte {
	// The graph's shape parameters are part of the state: a change rebuilds.
	return []byte(fmt.Sprintf("%d/%s/M%d/efc%d", vectorsVersion, v.opts.Embedder.Name(), v.opts.HNSW.M, v.opts.HNSW.EfConstruction))
}

func (v *VectorProjection) load() error {
	var stale bool
	err := v.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bMeta, bChunks, bOps} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		m := tx.Bucket(bMeta)
		ver := m.Get(kVer)
		if ver == nil {
			return m.Put(kVer, v.versionTag())
		}
		stale = !bytes.Equal(ver, v.versionTag())
		return nil
	})
	if err != nil {
		return fmt.Errorf("open vectors: %w", err)
	}
	if stale { // another format or another embedder: start over
		return v.Reset()
	}
	v.meta = map[string]chunkMeta{}
	if v.idx, err = vector.NewHNSW(v.opts.Embedder.Dim(), v.opts.HNSW); err != nil {
		return err
	}
	return v.db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if b := m.Get(kCP); len(b) == 8+log.HashSize {
			v.cp.Seq = binary.BigEndian.Uint64(b)
			copy(v.cp.Hash[:], b[8:])
		}
		if b := m.Get(kGraph); len(b) == 8 {
			v.graph = binary.BigEndian.Uint64(b)
		}
		if v.graph > 0 {
			data, err := os.ReadFile(filepath.Join(v.dir, "graph.bin"))
			if err != nil {
				return fmt.Errorf("read vector graph: %w", err)
			}
			if err := v.idx.UnmarshalBinary(data); err != nil {
				return fmt.Errorf("load vector graph: %w", err)
			}
		}
		err := tx.Bucket(bChunks).ForEach(func(k, val []byte) error {
			cm, err := decodeMeta(val)
			if err != nil {
				return err
			}
			v.meta[string(k)] = cm
			return nil
		})
		if err != nil {
			return err
		}
		c := tx.Bucket(bOps).Cursor()
		var from [8]byte
		binary.BigEndian.PutUint64(from[:], v.graph+1)
		for k, val := c.Seek(from[:]); k != nil; k, val = c.Next() {
			op, err := decodeOp(val)
			if err != nil {
				return err
			}
			if err := v.applyOp(op); err != nil {
				return err
			}
			v.sinceGraph++
		}
		return nil
	})
}

// Name implements projections.Projection.
func (v *VectorProjection) Name() string { return "vectors" }

// Version implements projections.Projection.
func (v *VectorProjection) Version() int { return vectorsVersion }

// Checkpoint implements projections.Projection.
func (v *VectorProjection) Checkpoint() (projections.Checkpoint, error) { return v.cp, nil }

// Apply implements projections.Projection. Embedding is deferred to Commit
// so HTTP embedders get batches.
func (v *VectorProjection) Apply(ev *log.Event) error {
	switch b := ev.Body.(type) {
	case *log.Store:
		v.meta[b.ChunkID] = chunkMeta{session: b.Session, time: b.Time, seq: ev.Seq}
		v.ops = append(v.ops, vecOp{seq: ev.Seq, id: b.ChunkID, content: b.SearchText()})
	case *log.Edit:
		for _, id := range b.Removes {
			if m, ok := v.meta[id]; ok && m.seq < ev.Seq {
				delete(v.meta, id)
				v.ops = append(v.ops, vecOp{seq: ev.Seq, del: true, id: id})
			}
		}
		s := &b.Store
		v.meta[s.ChunkID] = chunkMeta{session: s.Session, time: s.Time, seq: ev.Seq}
		v.ops = append(v.ops, vecOp{seq: ev.Seq, id: s.ChunkID, content: s.SearchText()})
	case *log.Tombstone:
		var ids []string
		for id, m := range v.meta {
			if m.seq < ev.Seq && projections.TombstoneMatches(b, id, m.session, m.time) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			delete(v.meta, id)
			v.ops = append(v.ops, vecOp{seq: ev.Seq, del: true, id: id})
		}
	}
	return nil
}

func (v *VectorProjection) applyOp(op vecOp) error {
	if op.del {
		return v.idx.Delete(op.id)
	}
	return v.idx.Add(op.id, op.vec)
}

// Commit embeds pending contents, applies the operations to the graph and
// writes them with the checkpoint in one transaction.
func (v *VectorProjection) Commit(cp projections.Checkpoint) error {
	if err := v.embedPending(context.Background()); err != nil {
		return err
	}
	for _, op := range v.ops {
		if err := v.applyOp(op); err != nil {
			return fmt.Errorf("vectors: seq %d: %w", op.seq, err)
		}
	}
	err := v.db.Update(func(tx *bolt.Tx) error {
		ch, ob := tx.Bucket(bChunks), tx.Bucket(bOps)
		for i, op := range v.ops {
			var k [12]byte
			binary.BigEndian.PutUint64(k[:], op.seq)
			binary.BigEndian.PutUint32(k[8:], uint32(i))
			if err := ob.Put(k[:], encodeOp(op)); err != nil {
				return err
			}
			if op.del {
				if err := ch.Delete([]byte(op.id)); err != nil {
					return err
				}
			} else if err := ch.Put([]byte(op.id), encodeMeta(v.meta[op.id])); err != nil {
				return err
			}
		}
		var b [8 + log.HashSize]byte
		binary.BigEndian.PutUint64(b[:], cp.Seq)
		copy(b[8:], cp.Hash[:])
		return tx.Bucket(bMeta).Put(kCP, b[:])
	})
	if err != nil {
		return fmt.Errorf("commit vectors: %w", err)
	}
	v.sinceGraph += len(v.ops)
	scrub := false
	for _, op := range v.ops {
		scrub = scrub || op.del
	}
	v.ops = v.ops[:0]
	v.cp = cp
	if v.sinceGraph >= v.opts.GraphEvery {
		if err := v.saveGraph(); err != nil {
			return err
		}
	}
	if scrub {
		// Removed chunks' session names and vectors must not stay in
		// the free pages.
		return v.reopen(true)
	}
	return nil
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
	db, oerr := bolt.Open(path, 0o600, vectorBoltOptions)
	if oerr != nil {
		return errors.Join(err, fmt.Errorf("reopen vectors db: %w", oerr))
	}
	v.db = db
	return err
}

// Flush writes the graph file if operations are pending since the last
// one, so the next open (after a snapshot, or a long rebuild) loads instead
// of replaying. Snapshot creation calls it.
func (v *VectorProjection) Flush() error {
	if v.sinceGraph == 0 {
		return nil
	}
	return v.saveGraph()
}

// saveGraph writes graph.bin as of the checkpoint, then drops the
// operations it covers.
func (v *VectorProjection) saveGraph() error {
	data, err := v.idx.MarshalBinary()
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(v.dir, "graph.bin"), data, 0o600); err != nil {
		return fmt.Errorf("save vector graph: %w", err)
	}
	seq := v.cp.Seq
	err = v.db.Update(func(tx *bolt.Tx) error {
		var g [8]byte
		binary.BigEndian.PutUint64(g[:], seq)
		if err := tx.Bucket(bMeta).Put(kGraph, g[:]); err != nil {
			return err
		}
		ob := tx.Bucket(bOps)
		c := ob.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save vector graph: %w", err)
	}
	v.graph, v.sinceGraph = seq, 0
	return nil
}

func (v *VectorProjection) embedPending(ctx context.Context) error {
	var texts []string
	var at []int
	for i, op := range v.ops {
		if !op.del && op.vec == nil {
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
// (ids and vector bytes in id order) bound to the embedder's name.
func (v *VectorProjection) Digest() ([32]byte, error) {
	d := v.idx.Digest()
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
		for _, b := range [][]byte{bMeta, bChunks, bOps} {
			if tx.Bucket(b) != nil {
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put(kVer, v.versionTag())
	})
	if err != nil {
		return fmt.Errorf("reset vectors: %w", err)
	}
	if err := os.Remove(filepath.Join(v.dir, "graph.bin")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	v.meta, v.ops, v.cp, v.graph, v.sinceGraph = map[string]chunkMeta{}, nil, projections.Checkpoint{}, 0, 0
	v.idx, err = vector.NewHNSW(v.opts.Embedder.Dim(), v.opts.HNSW)
	return err
}

// Close implements projections.Projection.
func (v *VectorProjection) Close() error { return v.db.Close() }

// Size reports the bytes on disk.
func (v *VectorProjection) Size() int64 {
	var n int64
	for _, f := range []string{"vectors.db", "graph.bin"} {
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

// Index exposes the graph (tests, benchmarks, snapshot checks).
func (v *VectorProjection) Index() *vector.HNSW { return v.idx }

// SearchText embeds text and returns the k nearest live chunks (cosine; a
// hit's ID is the chunk id):
// exactly below ExactBelow vectors, through the graph above.
func (v *VectorProjection) SearchText(ctx context.Context, text string, k int) ([]vector.Hit, error) {
	vs, err := v.opts.Embedder.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	var hits []vector.Hit
	if v.idx.Len() < v.opts.ExactBelow {
		hits, err = v.idx.SearchExact(vs[0], k)
	} else {
		hits, err = v.idx.Search(vs[0], k)
	}
	if err != nil {
		return nil, err
	}
	return hits, nil
}

func encodeMeta(m chunkMeta) []byte {
	b := make([]byte, 0, 24+len(m.session))
	b = binary.BigEndian.AppendUint64(b, uint64(m.time))
	b = binary.BigEndian.AppendUint64(b, m.seq)
	return append(b, m.session...)
}

func decodeMeta(b []byte) (chunkMeta, error) {
	if len(b) < 16 {
		return chunkMeta{}, fmt.Errorf("decode chunk record: %w", errVectorsCorrupt)
	}
	return chunkMeta{time: int64(binary.BigEndian.Uint64(b)), seq: binary.BigEndian.Uint64(b[8:]), session: string(b[16:])}, nil
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
