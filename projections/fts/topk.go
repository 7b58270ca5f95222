package fts

import (
	"context"
	"fmt"
	"sort"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/unlimitedcontext/ucl/projections"
)

// topKHeld bounds the candidates topK's first pass holds: ~60 bytes each
// (a score, bleve's 8-byte document number, a chunk id once read), so a
// few hundred kB however many documents match. A tie at the k-th score
// larger than that costs a second pass instead.
const topKHeld = 4096

// topK keeps Search's answer as bleve's searcher streams the matches: the
// k best by (score desc, chunk id asc) among the matches the side table
// maps, scoring at least the k-th best score of all matches (a document
// the side table does not map yet, in an index that ran ahead of it before
// a crash, takes its place among the scores and is then left out, as it
// was when bleve's top n came first).
//
// A match's chunk id costs a stored-field read in bleve and a side-table
// lookup, so ids are read only for the matches that end at or above the
// k-th score: the first pass keeps every match that scores at least the
// k-th best score so far, unread, and reads the ids of those left when the
// search ends. When more than topKHeld of them tie, it keeps only the
// scores, and a second pass (tieK) reads the ids of the matches scoring
// exactly the k-th score, now known, keeping the k smallest.
type topK struct {
	k      int
	held   int // topKHeld, or a test's (at least 4(k+1))
	dc     *docChunks
	reader index.IndexReader
	pool   *search.DocumentMatchPool
	// best: min-heap of the k best scores of all matches so far; once it
	// holds k, a match scoring below best[0] cannot be in the answer.
	best     []float64
	cands    []topCand
	overflow bool // the first pass dropped its candidates: tieK follows
	hits     []Hit
	err      error // the side table's, kept apart from bleve's errors
	peak     int   // the most candidates held (a test's bound)
}

type topCand struct {
	score float64
	doc   []byte // bleve's internal id, copied (its DocumentMatch is reused)
	id    string
}

// search runs q through idx with t's handlers (a second pass when the
// first overflowed), leaving the answer in t.hits. t.dc reads the side
// table.
func (t *topK) search(ctx context.Context, idx bleve.Index, q query.Query) error {
	for _, h := range []search.MakeDocumentMatchHandler{t.handler, t.tieK} {
		// No hit goes to bleve's collector (the handler keeps them), so
		// the request asks for none.
		hctx := context.WithValue(ctx, search.MakeDocumentMatchHandlerKey, h)
		err := projections.GuardStore(ctx, Name, func() error {
			_, err := idx.SearchInContext(hctx, bleve.NewSearchRequestOptions(q, 0, 0, false))
			return err
		})
		if t.err != nil {
			return t.err // the side table's, not bleve's damage
		}
		if err != nil || !t.overflow {
			return err
		}
	}
	return nil
}

// handler is the search.MakeDocumentMatchHandler of the first pass.
func (t *topK) handler(sctx *search.SearchContext) (search.DocumentMatchHandler, bool, error) {
	t.reader, t.pool = sctx.IndexReader, sctx.DocumentMatchPool
	if t.held == 0 {
		t.held = topKHeld
	}
	// Room for more than twice k: an overflow then means k matches were
	// seen, so the k-th score tieK reads is known.
	t.held = max(t.held, 4*(t.k+1))
	return t.add, false, nil
}

// add takes one match; nil ends the pass (bleve calls it once more, with
// the reader still open, for handlers that flush).
func (t *topK) add(dm *search.DocumentMatch) error {
	if dm == nil {
		if t.overflow {
			return nil
		}
		var err error
		t.hits, err = t.answer(t.cands)
		return err
	}
	s := dm.Score
	if len(t.best) < t.k {
		t.best = append(t.best, s)
		for i := len(t.best) - 1; i > 0; {
			p := (i - 1) / 2
			if t.best[p] <= t.best[i] {
				break
			}
			t.best[p], t.best[i] = t.best[i], t.best[p]
			i = p
		}
	} else if s > t.best[0] {
		t.best[0] = s
		for i := 0; ; {
			m, l, r := i, 2*i+1, 2*i+2
			if l < len(t.best) && t.best[l] < t.best[m] {
				m = l
			}
			if r < len(t.best) && t.best[r] < t.best[m] {
				m = r
			}
			if m == i {
				break
			}
			t.best[m], t.best[i] = t.best[i], t.best[m]
			i = m
		}
	} else if s < t.best[0] {
		t.pool.Put(dm)
		return nil
	}
	if !t.overflow {
		t.cands = append(t.cands, topCand{score: s, doc: append([]byte(nil), dm.IndexInternalID...)})
		t.peak = max(t.peak, len(t.cands))
		if len(t.cands) >= t.held {
			// Drop what the k-th best score has passed; if the tie at it
			// still fills half the room, the ids must decide: tieK.
			floor, _ := t.floor()
			kept := t.cands[:0]
			for _, c := range t.cands {
				if c.score >= floor {
					kept = append(kept, c)
				}
			}
			t.cands = kept
			if len(kept) > t.held/2 {
				t.overflow, t.cands = true, nil
			}
		}
	}
	t.pool.Put(dm)
	return nil
}

// floor returns the k-th best score so far, and whether k matches were
// seen (if not, every match is in the answer).
func (t *topK) floor() (float64, bool) {
	if len(t.best) < t.k {
		return 0, false
	}
	return t.best[0], true
}

// answer reads the ids of those of cands that score at least the k-th
// score and returns the mapped ones by (score desc, chunk id asc), at
// most k.
func (t *topK) answer(cands []topCand) ([]Hit, error) {
	floor, full := t.floor()
	out := make([]Hit, 0, min(len(cands), t.k))
	for i := range cands {
		c := &cands[i]
		if full && c.score < floor {
			continue
		}
		if c.id == "" {
			id, ok, err := t.mapID(c.doc)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			c.id = id
		}
		out = append(out, Hit{ChunkID: c.id, Score: c.score})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ChunkID < out[j].ChunkID
	})
	return out[:min(len(out), t.k)], nil
}

// tieK is the handler of the second pass, after a first that overflowed:
// the k-th score is known, so only the matches scoring it need their ids
// read, and of them only the k smallest are kept.
func (t *topK) tieK(sctx *search.SearchContext) (search.DocumentMatchHandler, bool, error) {
	t.reader, t.pool = sctx.IndexReader, sctx.DocumentMatchPool
	floor, _ := t.floor()
	var above, tied []topCand
	return func(dm *search.DocumentMatch) error {
		if dm == nil {
			var err error
			t.hits, err = t.answer(append(above, tied...))
			return err
		}
		switch s := dm.Score; {
		case s > floor: // fewer than k
			above = append(above, topCand{score: s, doc: append([]byte(nil), dm.IndexInternalID...)})
		case s == floor:
			id, ok, err := t.mapID(dm.IndexInternalID)
			if err != nil {
				return err
			}
			if ok {
				tied = append(tied, topCand{score: s, id: id})
				if len(tied) > 2*(t.k+1) {
					sort.Slice(tied, func(i, j int) bool { return tied[i].id < tied[j].id })
					tied = tied[:t.k]
				}
			}
		}
		t.peak = max(t.peak, len(above)+len(tied))
		t.pool.Put(dm)
		return nil
	}, false, nil
}

// mapID reads the chunk id of bleve's document doc: its external id (a
// seq, format 8) through the side table; ok is false when no side-table
// record names it.
func (t *topK) mapID(doc []byte) (id string, ok bool, err error) {
	ext, err := t.reader.ExternalID(doc)
	if err != nil {
		return "", false, fmt.Errorf("read document id: %w", err)
	}
	id, ok, err = t.dc.chunk(ext)
	if err != nil {
		t.err = err
	}
	return id, ok, err
}
