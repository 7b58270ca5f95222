package vector

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Hit is one search result: the id and its cosine similarity to the query.
type Hit struct {
	ID    string
	Score float32
}

// Index is an in-memory nearest-neighbour index over L2-normalised vectors
// of a fixed dimension. Implementations are safe for concurrent use: any
// number of Search/Len/Digest/MarshalBinary calls may run alongside each
// other; Add, Delete and UnmarshalBinary are serialised with them.
//
// Shared contract (checked by the conformance suite):
//   - Add(id, v) stores a normalised copy of v; re-adding an id replaces its
//     vector (re-adding the identical vector is a no-op). A zero vector is
//     stored (it counts in Len and Digest) but is never a search hit.
//   - Delete of an unknown id is a no-op returning nil, so replaying a
//     tombstone twice is harmless.
//   - Search returns at most k hits ordered by score descending, ties by ID
//     ascending. An empty index, or a zero query, yields no hits and no
//     error. k <= 0, a wrong dimension or NaN/Inf are errors.
//   - Digest is SHA-256 over the logical content (see ContentDigest); two
//     implementations holding the same (id, vector) pairs agree on it.
//   - MarshalBinary output is a pure function of the sequence of Add/Delete
//     calls (and the options); UnmarshalBinary rejects malformed input with
//     ErrCorrupt and leaves the index unchanged on error.
type Index interface {
	Add(id string, v []float32) error
	Delete(id string) error
	Search(q []float32, k int) ([]Hit, error)
	Len() int
	Dim() int
	Digest() [32]byte
	MarshalBinary() ([]byte, error)
	UnmarshalBinary(data []byte) error
}

// digestTag starts every content digest; bump it if the digested form
// changes (do not change otherwise: digests are compared across devices).
const digestTag = "ucl/vector-index/v1\x00"

// ContentDigest is the logical digest of an index holding the given ids
// (each with its stored, normalised vector from vec). It hashes, in order:
// digestTag, dim (uint32 LE), count (uint64 LE), then for each id in
// ascending byte order: len(id) (uint32 LE), id, and the vector as dim
// float32 little-endian IEEE-754 values. Graph layout, insertion order and
// deleted slots do not enter it.
func ContentDigest(dim int, ids []string, vec func(id string) []float32) [32]byte {
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	h := sha256.New()
	var b [8]byte
	h.Write([]byte(digestTag))
	binary.LittleEndian.PutUint32(b[:4], uint32(dim))
	h.Write(b[:4])
	binary.LittleEndian.PutUint64(b[:], uint64(len(sorted)))
	h.Write(b[:])
	buf := make([]byte, 4*dim)
	for _, id := range sorted {
		binary.LittleEndian.PutUint32(b[:4], uint32(len(id)))
		h.Write(b[:4])
		h.Write([]byte(id))
		for i, x := range vec(id) {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		h.Write(buf)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// better reports whether (sa, ida) ranks before (sb, idb): higher score
// first, then smaller id.
func better(sa float32, ida string, sb float32, idb string) bool {
	if sa != sb {
		return sa > sb
	}
	return ida < idb
}

// topK keeps the k best (score, id) pairs seen; the root of the heap is the
// worst kept entry.
type topK struct {
	k int
	h []Hit
}

func (t *topK) worse(i, j int) bool { // i ranks after j
	return better(t.h[j].Score, t.h[j].ID, t.h[i].Score, t.h[i].ID)
}

func (t *topK) offer(id string, s float32) {
	if len(t.h) < t.k {
		t.h = append(t.h, Hit{ID: id, Score: s})
		i := len(t.h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !t.worse(i, p) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !better(s, id, t.h[0].Score, t.h[0].ID) {
		return
	}
	t.h[0] = Hit{ID: id, Score: s}
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.worse(l, m) {
			m = l
		}
		if r < len(t.h) && t.worse(r, m) {
			m = r
		}
		if m == i {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

func sortHits(h []Hit) {
	sort.Slice(h, func(i, j int) bool { return better(h[i].Score, h[i].ID, h[j].Score, h[j].ID) })
}

// Load decodes a serialized Exact or HNSW index, choosing by its magic.
// opts supplies the HNSW EfSearch (the only setting not serialized).
func Load(data []byte, opts HNSWOptions) (Index, error) {
	switch {
	case len(data) >= len(exactMagic) && string(data[:len(exactMagic)]) == exactMagic:
		x := &Exact{dim: 1, pos: map[string]int{}}
		if err := x.UnmarshalBinary(data); err != nil {
			return nil, err
		}
		return x, nil
	case len(data) >= len(hnswMagic) && string(data[:len(hnswMagic)]) == hnswMagic:
		g, err := NewHNSW(1, HNSWOptions{EfSearch: opts.EfSearch})
		if err != nil {
			return nil, err
		}
		if err := g.UnmarshalBinary(data); err != nil {
			return nil, err
		}
		return g, nil
	}
	return nil, fmt.Errorf("load index: unknown magic: %w", ErrCorrupt)
}

// scanTopK scores items 0..n-1 (score returns ok=false to skip one) and
// returns the k best in (score, id) order. From exactParallelMin items on it
// scans two halves concurrently; the merge keeps the same order, so results
// do not depend on the split.
func scanTopK(n, k int, score func(i int) (string, float32, bool)) []Hit {
	scan := func(lo, hi int, t *topK) {
		for i := lo; i < hi; i++ {
			if id, s, ok := score(i); ok {
				t.offer(id, s)
			}
		}
	}
	a := &topK{k: k}
	if n < exactParallelMin {
		scan(0, n, a)
	} else {
		b := &topK{k: k}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); scan(0, n/2, a) }()
		scan(n/2, n, b)
		wg.Wait()
		for _, h := range b.h {
			a.offer(h.ID, h.Score)
		}
	}
	sortHits(a.h)
	return a.h
}
