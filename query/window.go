package query

import (
	"context"
	"errors"
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
// onto the page. The boost also goes to turns that mention a time in the
// window ("Yesterday I went to a Weight Watchers meeting", stored the day
// after "December 4, 2023"), stored after it: the turns of the two weeks
// after the window are ranked the same way, and those that mention a time
// meeting it join. See Options.NoWindowCandidates for what it gained.

// mentionLag is how long after a window windowCandidates looks for turns
// that talk about it (ms): two weeks, as far back as the usual relative
// phrases reach ("yesterday", "last Friday", "two days ago", "the other
// day", "last week"). On LoCoMo, 7, 14 and 31 days gave the same figures;
// 62 days lost two questions that 14 finds (the window's own BM25 list of
// nc hits then fills with the many later turns that only share a name,
// and the one that says "yesterday" is cut).
const mentionLag = 14 * 24 * 3600 * 1000

// windowMaxChunks bounds the work of windowCandidates: a window (or the
// two weeks after it) holding more chunks is not searched. The full-text
// filter costs about its chunk count whatever the words match
// (BenchmarkSearch/10K/hybrid-window, a window holding all 10,000 chunks
// searched: 15 ms of CPU a query against 1.5 without), and a window that
// holds that many is a large share of a store, whose turns compete in
// BM25's own list. On LoCoMo a cap of 250 or 500 changed no figure (a
// month of a conversation there holds fewer).
const windowMaxChunks = 500

// windowCandidates adds to order through get (see above) the BM25 matches
// stored inside p's window, and those stored in the mentionLag after it
// whose text mentions a time that meets it, at most nc of each, ranked
// after BM25's own candidates; joined is called for each one that joins.
func (e *Engine) windowCandidates(ctx context.Context, p *plan, nc int, order []*cand,
	get func(id string, sessions map[string]bool, scope func(*timelines.Chunk) bool) (*cand, error), joined func(*cand)) error {
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
	// search returns the hits stored in [since, until) (within the
	// request's own filters) whose boosted score reaches thr.
	search := func(since, until int64) ([]fts.Hit, error) {
		since, until = intersect(p.since, p.until, since, until)
		if since == 0 && until == 0 || since != 0 && until != 0 && until <= since {
			return nil, nil // no window, or none the filters leave
		}
		q := fts.Query{Text: p.text, K: nc, Kinds: p.req.Kinds, Roles: p.req.Roles, Since: since, Until: until, Meta: p.req.Meta, NoFuzzy: e.opts.NoFuzzy, MaxInTime: windowMaxChunks}
		q.Sessions = sortedKeys(p.sessions)
		if p.req.AsOf != 0 {
			q.K = min(4*nc, 4*MaxCandidates) // the index knows no seqs: post-filtered by get
		}
		hits, err := e.src.Text.Search(ctx, q)
		if errors.Is(err, fts.ErrWideTimeRange) {
			return nil, nil // see windowMaxChunks
		}
		if err != nil {
			return nil, fmt.Errorf("bm25 search in the time window: %w", err)
		}
		out := hits[:0]
		for _, h := range hits {
			if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
				continue // as in retrieve
			}
			if h.Score*(1+p.tboost) < thr {
				break // hits come best first
			}
			out = append(out, h)
		}
		return out, nil
	}
	join := func(hits []fts.Hit, scope func(*timelines.Chunk) bool) error {
		for _, h := range hits {
			c, err := get(h.ChunkID, p.sessions, scope)
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
	hits, err := search(p.window[0], p.window[1])
	if err != nil {
		return err
	}
	if err := join(hits, nil); err != nil {
		return err
	}
	// The turns of the two weeks after the window that talk about it.
	mt, ok := e.src.Text.(MentionTimer)
	if !ok || p.window[1] == 0 {
		return nil
	}
	if hits, err = search(p.window[1], p.window[1]+mentionLag); err != nil || len(hits) == 0 {
		return err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ChunkID
	}
	ms, err := mt.Mentioned(ids, nil)
	if err != nil {
		return fmt.Errorf("mentioned times: %w", err)
	}
	return join(hits, func(ch *timelines.Chunk) bool { return meetsWindow(p.window, ch.Time, ms[ch.ID]) })
}
