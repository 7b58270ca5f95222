package query

import (
	"context"
	"fmt"
)

// With lexical vectors (the default hash embedder), a hybrid query's ANN
// channel scores BM25's candidates instead of searching every vector
// (lexicalSubset): such vectors see the words BM25 sees, so the chunks
// only they would find add nothing to a hybrid top 10 (see the notes
// above DefaultNeighbourWeight), and their job is to re-score BM25's
// candidates where BM25 cannot separate them (Options.ANNGate). A full
// search costs a pass over every stored vector: at a million chunks
// ~100 ms of one query process's CPU, where scoring BM25's candidates
// costs their count. When BM25 finds fewer than annGateDepth candidates
// (a misspelt or rare word), the vectors are what finds the spelling
// variants: the channel then searches everything as before, after BM25.
// The L0 pre-filter, which only restricts the ANN channel, does not run
// for such queries. Options.LexicalANNSearch turns this off.

// lexicalSubset reports whether a query of plan p scores BM25's
// candidates only (see above).
func (e *Engine) lexicalSubset(p *plan) bool {
	if p.mode != ModeHybrid || e.opts.LexicalANNSearch || e.src.Text == nil || e.src.Vectors == nil || e.opts.PlainVectorQuery {
		return false
	}
	lv, ok := e.src.Vectors.(LexicalVectors)
	if !ok || !lv.Lexical() {
		return false
	}
	_, ok = e.src.Vectors.(VectorScorer)
	return ok
}

// runVecLexical is the ANN channel of a lexicalSubset query, run after
// BM25: BM25's candidates in order scored with the query vector (ranked
// by score, ties by id), or runVec's search when BM25 found fewer than
// annGateDepth or no query vector can be built.
func (e *Engine) runVecLexical(ctx context.Context, text string, order []*cand, fetch, k int, within map[string]bool, out chan<- vecResult) {
	var ids []string
	for _, c := range order {
		if c.ex.BM25Rank != 0 {
			ids = append(ids, c.chunk.ID)
		}
	}
	if len(ids) < annGateDepth {
		e.runVec(ctx, text, fetch, k, within, out)
		return
	}
	q, err := e.queryVector(ctx, text)
	if err != nil || q == nil {
		if err != nil {
			out <- vecResult{err: err}
			return
		}
		e.runVec(ctx, text, fetch, k, within, out)
		return
	}
	hits, err := e.src.Vectors.(VectorScorer).ScoreVectors(ctx, q, ids)
	if err != nil {
		err = fmt.Errorf("score candidates' vectors: %w", err)
	}
	out <- vecResult{hits: hits, q: q, err: err}
}
