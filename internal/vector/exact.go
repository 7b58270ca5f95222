package vector

import (
	"fmt"
	"sort"
	"sync"
)

// exactParallelMin is the collection size from which Exact.Search scans with
// two goroutines (each keeps its own top-k; the merge is order-independent
// because the ranking is a total order).
const exactParallelMin = 16384

// Exact is a brute-force Index: every search scans every vector (their
// 8-bit codes, then re-ranks the best by the float vectors: q8.go). It is
// the oracle for HNSW in tests and the right choice for small collections
// (top-10 over 100K×384 takes a few milliseconds on two cores). Beside the
// float32 vectors it holds a byte per dimension of codes.
//
// Serialized form (little-endian; do not change without bumping the version):
//
//	magic   "UCLVEXAC"          8 bytes
//	version uint16 = 1
//	dim     uint32
//	count   uint32
//	count × { idLen uvarint, id bytes, dim × float32 (normalised) }
//	        in ascending id byte order
//	sha256  32 bytes over everything above
//
// The records are sorted, so the bytes depend only on the logical content.
type Exact struct {
	mu   sync.RWMutex
	dim  int
	ids  []string
	vecs []float32 // len(ids)*dim
	zero []bool
	pos  map[string]int
	// codes and steps: each vector's 8-bit codes (len(ids)*dim) and step,
	// what Search scans (q8.go)
	codes []int8
	steps []float64
	// layout counts the changes that move or drop a position (a new id,
	// a delete, a load): positions read under one layout stay valid while
	// it lasts (Positions, SearchPositions).
	layout uint64
}

const (
	exactMagic   = "UCLVEXAC"
	exactVersion = 1
)

// NewExact returns an empty brute-force index for vectors of dimension dim.
func NewExact(dim int) (*Exact, error) {
	if dim <= 0 || dim > MaxDim {
		return nil, fmt.Errorf("new exact index: dim %d: %w", dim, ErrInvalidOptions)
	}
	return &Exact{dim: dim, pos: map[string]int{}}, nil
}

// Reserve makes room for n more vectors, so a bulk load grows the vector
// array once instead of doubling it (and leaving the old copies to the
// collector) as it goes.
func (x *Exact) Reserve(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ids = append(make([]string, 0, len(x.ids)+n), x.ids...)
	x.vecs = append(make([]float32, 0, (len(x.ids)+n)*x.dim), x.vecs...)
	x.zero = append(make([]bool, 0, len(x.ids)+n), x.zero...)
	x.codes = append(make([]int8, 0, (len(x.ids)+n)*x.dim), x.codes...)
	x.steps = append(make([]float64, 0, len(x.ids)+n), x.steps...)
}

// Dim returns the vector dimension.
func (x *Exact) Dim() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dim
}

// Len returns the number of stored ids (zero vectors included).
func (x *Exact) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Add stores a normalised copy of v under id, replacing any previous vector.
func (x *Exact) Add(id string, v []float32) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("add vector: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	nv, zero, err := normalized(v, x.dim)
	if err != nil {
		return fmt.Errorf("add vector %q: %w", id, err)
	}
	if p, ok := x.pos[id]; ok {
		copy(x.vecs[p*x.dim:(p+1)*x.dim], nv)
		x.zero[p] = zero
		x.steps[p] = quantizeVec(nv, x.codes[p*x.dim:(p+1)*x.dim])
		return nil
	}
	x.layout++
	x.pos[id] = len(x.ids)
	x.ids = append(x.ids, id)
	x.vecs = append(x.vecs, nv...)
	x.zero = append(x.zero, zero)
	x.codes = append(x.codes, make([]int8, x.dim)...)
	x.steps = append(x.steps, quantizeVec(nv, x.codes[len(x.codes)-x.dim:]))
	return nil
}

// Delete removes id; an unknown id is a no-op.
func (x *Exact) Delete(id string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := x.pos[id]
	if !ok {
		return nil
	}
	x.layout++
	last := len(x.ids) - 1
	if p != last {
		x.ids[p] = x.ids[last]
		x.zero[p] = x.zero[last]
		copy(x.vecs[p*x.dim:(p+1)*x.dim], x.vecs[last*x.dim:])
		copy(x.codes[p*x.dim:(p+1)*x.dim], x.codes[last*x.dim:])
		x.steps[p] = x.steps[last]
		x.pos[x.ids[p]] = p
	}
	x.ids = x.ids[:last]
	x.zero = x.zero[:last]
	x.vecs = x.vecs[:last*x.dim]
	x.codes = x.codes[:last*x.dim]
	x.steps = x.steps[:last]
	delete(x.pos, id)
	return nil
}

// Search returns the k most similar stored vectors to q: the k best by
// float score among the rerank(k) best approximations (q8.go).
func (x *Exact) Search(q []float32, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, fmt.Errorf("search: k=%d: %w", k, ErrInvalidK)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	nq, zero, err := normalized(q, x.dim)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if zero {
		return nil, nil
	}
	return x.searchQ8(nq, k, nil), nil
}

// searchQ8 scans the positions in pos (every position when pos is nil)
// by their codes and re-ranks the best approximations by the float dot
// product. Caller holds mu.
func (x *Exact) searchQ8(nq []float32, k int, pos []int) []Hit {
	cq, qs := quantizeQuery(nq)
	dim := x.dim
	n := len(x.ids)
	if pos != nil {
		n = len(pos)
	}
	// One loop with no call but the kernel's per vector: at 100K vectors
	// a closure call per vector costs a tenth of the scan.
	scan := func(lo, hi int, t *topR) {
		for i := lo; i < hi; i++ {
			p := i
			if pos != nil {
				p = pos[i]
			}
			if x.zero[p] {
				continue
			}
			s := approx(dotQ8(cq, x.codes[p*dim:(p+1)*dim]), qs, x.steps[p])
			if t.admits(s) {
				t.offer(q8Cand{id: x.ids[p], s: s, pos: p})
			}
		}
	}
	cands := scanTopR(n, rerank(k), scan)
	t := &topK{k: k}
	for _, c := range cands {
		t.offer(c.id, dot(nq, x.vecs[c.pos*dim:(c.pos+1)*dim]))
	}
	sortHits(t.h)
	return t.h
}

// vector returns the stored vector of id (nil if absent). Caller holds mu.
func (x *Exact) vector(id string) []float32 {
	p, ok := x.pos[id]
	if !ok {
		return nil
	}
	return x.vecs[p*x.dim : (p+1)*x.dim]
}

// Digest returns ContentDigest of the stored content.
func (x *Exact) Digest() [32]byte {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return ContentDigest(x.dim, x.ids, x.vector)
}

// MarshalBinary encodes the index in the documented, canonical form.
func (x *Exact) MarshalBinary() ([]byte, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ids := append([]string(nil), x.ids...)
	sort.Strings(ids)
	e := &encoder{b: make([]byte, 0, 24+len(ids)*(4*x.dim+16))}
	e.b = append(e.b, exactMagic...)
	e.u16(exactVersion)
	e.u32(uint32(x.dim))
	e.u32(uint32(len(ids)))
	for _, id := range ids {
		e.str(id)
		e.vec(x.vector(id))
	}
	return e.seal(), nil
}

// UnmarshalBinary replaces the index content with data's. On error the index
// is unchanged.
func (x *Exact) UnmarshalBinary(data []byte) error {
	d, err := openSealed(data, exactMagic, exactVersion)
	if err != nil {
		return err
	}
	dim := int(d.u32("dim"))
	n := int(d.u32("count"))
	if d.err == nil && (dim <= 0 || dim > MaxDim) {
		return fmt.Errorf("decode index: dim %d: %w", dim, ErrCorrupt)
	}
	if d.err == nil && n > len(d.b)/(1+1+4*dim) {
		return fmt.Errorf("decode index: count %d exceeds data: %w", n, ErrCorrupt)
	}
	if d.err != nil {
		return d.err
	}
	nx := &Exact{dim: dim, pos: make(map[string]int, n), ids: make([]string, 0, n),
		vecs: make([]float32, n*dim), zero: make([]bool, n), codes: make([]int8, n*dim), steps: make([]float64, n)}
	prev := ""
	for i := 0; i < n; i++ {
		id := d.str("id")
		if d.err != nil {
			return d.err
		}
		if checkID(id) != nil || (i > 0 && id <= prev) {
			return fmt.Errorf("decode index: id %d not sorted or invalid: %w", i, ErrCorrupt)
		}
		prev = id
		v := nx.vecs[i*dim : (i+1)*dim]
		d.vec(v)
		if d.err != nil {
			return d.err
		}
		if !checkStoredVector(v) {
			return fmt.Errorf("decode index: vector %d not normalised: %w", i, ErrCorrupt)
		}
		nx.zero[i] = isZero(v)
		nx.steps[i] = quantizeVec(v, nx.codes[i*dim:(i+1)*dim])
		nx.pos[id] = i
		nx.ids = append(nx.ids, id)
	}
	if err := d.end(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dim, x.ids, x.vecs, x.zero, x.pos = nx.dim, nx.ids, nx.vecs, nx.zero, nx.pos
	x.layout++
	x.codes, x.steps = nx.codes, nx.steps
	return nil
}

var _ Index = (*Exact)(nil)
