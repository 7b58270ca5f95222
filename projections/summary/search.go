package summary

import (
	"math"
	"sort"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// BM25 parameters of the session search.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// keyTermBoost is how many extra occurrences a key term counts for.
	keyTermBoost = 2
)

// searchIndex is an in-memory inverted index over session summaries: each
// session is a document made of the content words of its summary text plus
// its key terms (each counted keyTermBoost more times).
type searchIndex struct {
	postings map[string]map[string]int // term -> session -> tf
	terms    map[string]map[string]int // session -> term -> tf
	lengths  map[string]int            // session -> document length
	total    int
}

func newSearchIndex() *searchIndex {
	return &searchIndex{postings: map[string]map[string]int{}, terms: map[string]map[string]int{}, lengths: map[string]int{}}
}

// set replaces the entry of session id (s == nil removes it).
func (si *searchIndex) set(id string, s *Summary) {
	for t := range si.terms[id] {
		delete(si.postings[t], id)
		if len(si.postings[t]) == 0 {
			delete(si.postings, t)
		}
	}
	si.total -= si.lengths[id]
	delete(si.terms, id)
	delete(si.lengths, id)
	if s == nil {
		return
	}
	tf := map[string]int{}
	n := 0
	for _, w := range textutil.ContentWords(s.Text) {
		tf[w]++
		n++
	}
	for _, w := range s.KeyTerms {
		tf[w] += keyTermBoost
		n += keyTermBoost
	}
	si.terms[id] = tf
	si.lengths[id] = n
	si.total += n
	for t, c := range tf {
		p := si.postings[t]
		if p == nil {
			p = map[string]int{}
			si.postings[t] = p
		}
		p[id] = c
	}
}

// query returns the k best sessions for the query words by BM25, ties by
// session id.
func (si *searchIndex) query(words []string, k int) []SessionHit {
	n := len(si.lengths)
	if n == 0 || len(words) == 0 {
		return nil
	}
	avg := float64(si.total) / float64(n)
	if avg == 0 {
		avg = 1
	}
	seen := map[string]bool{}
	scores := map[string]float64{}
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		p := si.postings[w]
		if len(p) == 0 {
			continue
		}
		df := float64(len(p))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		// Sessions in id order so that float sums do not depend on map order.
		ids := make([]string, 0, len(p))
		for id := range p {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			tf := float64(p[id])
			norm := tf + bm25K1*(1-bm25B+bm25B*float64(si.lengths[id])/avg)
			scores[id] += idf * tf * (bm25K1 + 1) / norm
		}
	}
	hits := make([]SessionHit, 0, len(scores))
	for id, s := range scores {
		hits = append(hits, SessionHit{Session: id, Score: s})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Session < hits[j].Session
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
