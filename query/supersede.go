package query

import (
	"sort"

	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// SupersedeStore is implemented by chunk stores that know which items
// supersede which (*timelines.Timelines). Without it nothing is demoted.
type SupersedeStore interface {
	SupersededByEach(cs []*timelines.Chunk) ([][]string, error)
}

// supersede marks every candidate that a live item supersedes and,
// unless include, moves those below every current candidate (keeping
// the order within both groups): an outdated fact never outranks the
// fact that replaced it.
func (e *Engine) supersede(cs []*cand, include bool) ([]*cand, error) {
	ss, ok := e.src.Chunks.(SupersedeStore)
	if !ok || len(cs) == 0 {
		return cs, nil
	}
	chunks := make([]*timelines.Chunk, len(cs))
	for i, c := range cs {
		chunks[i] = &c.chunk
	}
	bys, err := ss.SupersededByEach(chunks)
	if err != nil {
		return nil, err
	}
	any := false
	for i, c := range cs {
		c.supersededBy = bys[i]
		any = any || len(bys[i]) > 0
	}
	if !any || include {
		return cs, nil
	}
	sort.SliceStable(cs, func(i, j int) bool { return len(cs[i].supersededBy) == 0 && len(cs[j].supersededBy) > 0 })
	return cs, nil
}

// withoutSupersededPairs drops each candidate whose successor is also a
// candidate: a context never holds a fact next to the fact replacing it.
func withoutSupersededPairs(cs []*cand) []*cand {
	items := make(map[string]bool, len(cs))
	for _, c := range cs {
		items[c.chunk.ItemID()] = true
	}
	out := cs[:0:0]
	for _, c := range cs {
		drop := false
		for _, s := range c.supersededBy {
			drop = drop || items[s]
		}
		if !drop {
			out = append(out, c)
		}
	}
	return out
}
