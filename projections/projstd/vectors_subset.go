package projstd

import (
	"context"
	"errors"
	"fmt"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// sessionChunks is the projection's in-memory view of which live chunks
// each session holds (chunks without a session under ""), kept beside
// meta so a session-restricted search finds its chunks without a walk
// over every live chunk.
type sessionChunks map[string]*idSet

// idSet is a set of ids with O(1) add and remove and a slice to read.
type idSet struct {
	ids []string
	at  map[string]int
	// pos: the ids' positions in the loaded exact index under its layout
	// posLayout, kept between searches (vector.Exact.Positions); posOK
	// false once the set changes.
	pos       []int32
	posLayout uint64
	posOK     bool
}

func (s sessionChunks) add(session, id string) {
	set := s[session]
	if set == nil {
		set = &idSet{at: map[string]int{}}
		s[session] = set
	}
	if _, ok := set.at[id]; ok {
		return
	}
	set.at[id] = len(set.ids)
	set.ids = append(set.ids, id)
	set.posOK = false
}

func (s sessionChunks) remove(session, id string) {
	set := s[session]
	if set == nil {
		return
	}
	i, ok := set.at[id]
	if !ok {
		return
	}
	last := len(set.ids) - 1
	set.ids[i] = set.ids[last]
	set.at[set.ids[i]] = i
	set.ids = set.ids[:last]
	set.posOK = false
	delete(set.at, id)
	if len(set.ids) == 0 {
		delete(s, session)
	}
}

// setMeta records a live chunk (Apply), keeping the session view current
// once it exists.
func (v *VectorProjection) setMeta(id string, m chunkMeta) {
	if v.bySession != nil {
		if old, ok := v.meta[id]; ok {
			v.bySession.remove(old.session, id)
		}
		v.bySession.add(m.session, id)
	}
	v.meta[id] = m
}

// delMeta forgets a chunk (Apply).
func (v *VectorProjection) delMeta(id string) {
	if v.bySession != nil {
		if old, ok := v.meta[id]; ok {
			v.bySession.remove(old.session, id)
		}
	}
	delete(v.meta, id)
}

// sessionView returns the session view, building it on first use from
// meta, or from the stored chunk records when Apply has not loaded meta
// (a process that only reads: meta is not loaded here, because
// ChunkSession reads it beside searches). Caller holds loadMu; Apply,
// which updates the view, never runs beside a search.
func (v *VectorProjection) sessionView() (sessionChunks, error) {
	if v.bySession != nil {
		return v.bySession, nil
	}
	s := sessionChunks{}
	if v.meta != nil {
		for id, m := range v.meta {
			s.add(m.session, id)
		}
	} else {
		err := v.forEachMeta(func(id string, cm chunkMeta) {
			s.add(cm.session, id)
		})
		if err != nil {
			return nil, fmt.Errorf("load vector chunks: %w", err)
		}
	}
	v.bySession = s
	return s, nil
}

// subsetMaxShare: a subset search costs an id lookup and a read out of
// order per vector, about three times a vector of the full scan (query
// benchmark at 100K chunks in 200 sessions: kept sessions holding a third
// of the store cost more than the scan); above a quarter of the store it
// declines.
const subsetMaxShare = 4

// SearchVectorIn returns the k nearest live chunks of q among the chunks
// of sessions ("" is the chunks without a session): an exact top-k over
// that subset, ranked as SearchVector ranks (cosine, ties by id), so the
// hits are the true top k within the sessions and cost what the subset
// costs (query.SessionVectorSearcher: the L0 pre-filter keeps a few
// sessions of a large store).
//
// ok is false, and the caller searches everything and filters, when the
// sessions hold more than 1/subsetMaxShare of the live vectors, or from
// ExactBelow live vectors (declinesSubsets): a subset search needs the
// exact index in memory, and from there it would cost more memory than
// a full scan of scan.bin costs time; with VectorOptions.Graph, once the
// graph serves, whose restriction to sessions would need a filtered
// graph walk that loses recall when the sessions are a small share.
//
// Whether it declines, and the hits it returns, are functions of the
// stored vectors and the request alone, never of what this process has
// loaded: a process's first search scans the stored vectors in place
// (as SearchText's does), skipping other sessions' records, and returns
// what the loaded index's subset search returns. An attached client and a
// process that opens the store itself then print the same results (before
// this, the first search declined and filtered the full top k, which drops
// the subset's chunks ranked below it store-wide).
func (v *VectorProjection) SearchVectorIn(ctx context.Context, q []float32, k int, sessions []string) (hits []vector.Hit, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("search vectors: %w", err)
	}
	if len(q) != v.opts.Embedder.Dim() {
		return nil, false, fmt.Errorf("search vectors: %d dimensions, want %d: %w", len(q), v.opts.Embedder.Dim(), vector.ErrDimension)
	}
	if k <= 0 {
		return nil, false, fmt.Errorf("search vectors: k=%d: %w", k, vector.ErrInvalidK)
	}
	// A session named twice counts once, in the share as in the hits.
	in := make(map[string]bool, len(sessions))
	for _, s := range sessions {
		in[s] = true
	}
	v.loadMu.Lock()
	if v.declinesSubsets() {
		v.loadMu.Unlock()
		return nil, false, nil
	}
	if v.idx == nil && v.scans == 0 {
		v.scans++
		v.loadMu.Unlock()
		return v.scanIn(q, k, in)
	}
	idx, err := v.index()
	if err != nil {
		v.loadMu.Unlock()
		return nil, false, err
	}
	x, isExact := idx.(*vector.Exact)
	if !isExact {
		v.loadMu.Unlock()
		return nil, false, nil
	}
	view, err := v.sessionView()
	var lists [][]int32
	var layout uint64
	declined := false
	if err == nil {
		// Counted first: a declined subset (most of the store) costs
		// nothing more.
		n := 0
		for s := range in {
			if set := view[s]; set != nil {
				n += len(set.ids)
			}
		}
		declined = n > v.live/subsetMaxShare
		if !declined {
			lists, layout = sessionPositions(x, view, in)
		}
	}
	v.loadMu.Unlock()
	if err != nil {
		return nil, false, err
	}
	if declined {
		return nil, false, nil
	}
	hits, err = x.SearchPositions(q, k, lists, layout)
	if err != nil {
		return nil, false, err
	}
	return hits, true, nil
}

// sessionPositions returns the positions of the chunks of the sessions in
// in, from each session's kept list while the index's layout lasts
// (re-read from the ids otherwise), and that layout. Caller holds loadMu
// (the lists are written here); Apply and Commit, which change the index
// and the sets, never run beside a search, so the layout read here is the
// one SearchPositions meets.
func sessionPositions(x *vector.Exact, view sessionChunks, in map[string]bool) ([][]int32, uint64) {
	layout := x.Layout()
	var lists [][]int32
	for s := range in {
		set := view[s]
		if set == nil {
			continue
		}
		if !set.posOK || set.posLayout != layout {
			set.pos, set.posLayout = x.Positions(set.ids)
			set.posOK = true
		}
		lists = append(lists, set.pos)
	}
	return lists, layout
}

// errSubsetDeclined stops scanIn's pass once the sessions hold more than
// the share SearchVectorIn takes.
var errSubsetDeclined = errors.New("session subset declined")

// scanIn is SearchVectorIn before the index is loaded: one pass over the
// stored values that scores the vectors of the sessions in in and skips
// the others before decoding them (vector.ScanSearch scores as the
// index's SearchIn does: the same hits). The share test is the loaded
// path's, on the same counts (the committed live count, which is what the
// loaded index holds); the pass stops as soon as it fails, and the
// caller's full search may then scan in place.
func (v *VectorProjection) scanIn(q []float32, k int, in map[string]bool) ([]vector.Hit, bool, error) {
	most, n := v.live/subsetMaxShare, 0
	hits, err := v.scanWhere(q, k, func(meta []byte) (bool, error) {
		_, _, session, err := splitMeta(meta)
		if err != nil || !in[string(session)] {
			return false, err
		}
		if n++; n > most {
			return false, errSubsetDeclined
		}
		return true, nil
	})
	if errors.Is(err, errSubsetDeclined) {
		v.loadMu.Lock()
		v.scans--
		v.loadMu.Unlock()
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return hits, true, nil
}

// DeclinesSubsets reports whether SearchVectorIn declines every session
// subset: it does from ExactBelow live vectors (see declinesSubsets),
// which depends only on the stored vectors, never on what is loaded.
func (v *VectorProjection) DeclinesSubsets() bool {
	v.loadMu.Lock()
	defer v.loadMu.Unlock()
	return v.declinesSubsets()
}

// declinesSubsets: once the graph serves, or, without a graph, from
// ExactBelow live vectors, where holding the exact index that a subset
// search needs would cost more memory than scanning scan.bin does time
// (1.9 GB at a million 384-d chunks). Caller holds loadMu.
func (v *VectorProjection) declinesSubsets() bool {
	return v.graphOn || (!v.opts.Graph && v.live >= v.opts.ExactBelow)
}
