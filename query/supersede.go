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

// withoutSupersededContext drops, from a context's recent turns and
// retrieved candidates alike, each item whose successor is also in the
// context (recent or retrieved): a context never holds a fact next to the
// fact replacing it, whichever part each came from. The successor stays.
// Candidates carry their supersededBy already (supersede); the turns'
// links are read here. Order within both parts is kept.
func (e *Engine) withoutSupersededContext(turns []timelines.Chunk, cs []*cand) ([]timelines.Chunk, []*cand, error) {
	var turnBy [][]string
	if ss, ok := e.src.Chunks.(SupersedeStore); ok && len(turns) > 0 {
		ptrs := make([]*timelines.Chunk, len(turns))
		for i := range turns {
			ptrs[i] = &turns[i]
		}
		var err error
		if turnBy, err = ss.SupersededByEach(ptrs); err != nil {
			return nil, nil, err
		}
	}
	items := make(map[string]bool, len(turns)+len(cs))
	for i := range turns {
		items[turns[i].ItemID()] = true
	}
	for _, c := range cs {
		items[c.chunk.ItemID()] = true
	}
	present := func(by []string) bool {
		for _, s := range by {
			if items[s] {
				return true
			}
		}
		return false
	}
	outT := turns[:0:0]
	for i := range turns {
		if turnBy == nil || !present(turnBy[i]) {
			outT = append(outT, turns[i])
		}
	}
	outC := cs[:0:0]
	for _, c := range cs {
		if !present(c.supersededBy) {
			outC = append(outC, c)
		}
	}
	return outT, outC, nil
}
