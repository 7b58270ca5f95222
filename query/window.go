package query

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/unlimitedcontext/ucl/projections/fts"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// A time phrase's window is a boost, applied when the candidates are
// scored; BM25's candidates are cut before that, by their words alone. A
// question whose words match little besides a name ("Where did Joanna
// travel to in July 2022?": the answer says "I went to Woodhaven") then
// has its candidates spread over the whole store, each matching the name
// as well as the turns of July do, and the turns inside the window never
// reach the boost that would have ranked them first. So BM25 also ranks
// the turns stored inside the window (the same query, filtered to it: a
// filter does not change a score) and those whose boosted score
// ((1 + the window's boost) × their BM25 score) reaches the k-th best
// score of BM25's list join the candidates: the ones the boost could lift
// onto the page. LoCoMo (hybrid, in process): development set temporal
// questions 116 → 117 of 130 (that question 0 → rank 6); see
// Options.NoWindowCandidates for the rest.

// windowCandidates adds the BM25 matches stored inside p's window to
// order through get (see above), at most nc of them, ranked after BM25's
// own candidates; joined is called for each one that joins.
func (e *Engine) windowCandidates(ctx context.Context, p *plan, nc int, order []*cand,
	get func(id string, sessions map[string]bool, scope func(*timelines.Chunk) bool) (*cand, error), joined func(*cand)) error {
	since, until := intersect(p.since, p.until, p.window[0], p.window[1])
	if since == 0 && until == 0 || since != 0 && until != 0 && until <= since {
		return nil // no window, or none the filters leave
	}
	rank := 0
	var bs []float64
	for _, c := range order {
		if c.ex.BM25Rank > 0 {
			rank = max(rank, c.ex.BM25Rank)
			bs = append(bs, c.ex.BM25Score)
		}
	}
	// Fewer than k candidates: every match inside the window may reach
	// the page.
	thr := 0.0
	if len(bs) >= p.k {
		sort.Sort(sort.Reverse(sort.Float64Slice(bs)))
		thr = bs[p.k-1]
	}
	q := fts.Query{Text: p.text, K: nc, Kinds: p.req.Kinds, Roles: p.req.Roles, Since: since, Until: until, Meta: p.req.Meta, NoFuzzy: e.opts.NoFuzzy}
	q.Sessions = sortedKeys(p.sessions)
	if p.req.AsOf != 0 {
		q.K = min(4*nc, 4*MaxCandidates) // the index knows no seqs: post-filtered by get
	}
	hits, err := e.src.Text.Search(ctx, q)
	if err != nil {
		return fmt.Errorf("bm25 search in the time window: %w", err)
	}
	for _, h := range hits {
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
			continue // as in retrieve
		}
		if h.Score*(1+p.tboost) < thr {
			break // hits come best first
		}
		c, err := get(h.ChunkID, p.sessions, nil)
		if err != nil {
			return err
		}
		if c == nil || c.ex.BM25Rank != 0 {
			continue
		}
		rank++
		c.ex.BM25Rank, c.ex.BM25Score = rank, h.Score
		joined(c)
	}
	return nil
}
