package fts

import (
	"context"
	"fmt"

	"github.com/unlimitedcontext/ucl/projections"
)

// DocFreqs returns the number of live documents and, for each word, how
// many of them hold it in their content: the word as the content field's
// analyzer sees it (lower-cased, stemmed), the rarest term when it yields
// several, and n (every document) when it yields none (a stopword), so a
// caller computing IDFs gives such a word the lowest weight. The counts
// are the ones BM25 scoring reads (deleted documents leave the index at
// Commit), so they depend only on the live set.
func (x *Index) DocFreqs(ctx context.Context, words []string) (n int, dfs []int, err error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return 0, nil, ErrClosed
	}
	x.settle()
	n = int(x.nDocs)
	dfs = make([]int, len(words))
	err = projections.Guard(Name, func() error {
		ai, err := x.idx.Advanced()
		if err != nil {
			return err
		}
		r, err := ai.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		for i, w := range words {
			dfs[i] = n
			for _, tok := range x.enAnalyzer.Analyze([]byte(w)) {
				tr, err := r.TermFieldReader(ctx, tok.Term, fieldContent, false, false, false)
				if err != nil {
					return err
				}
				c := int(tr.Count())
				if err := tr.Close(); err != nil {
					return err
				}
				dfs[i] = min(dfs[i], c)
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("document frequencies: %w", err)
	}
	return n, dfs, nil
}
