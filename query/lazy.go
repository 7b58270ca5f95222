package query

import (
	"errors"
	"fmt"
	"sort"

	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// BareChunkStore is an optional ChunkStore capability (the timelines have
// it): lookups without content, and the content filled in later. Content
// is in the log, encrypted, and reading it is most of a lookup's cost; a
// query ranks a few hundred candidates (both channels' hits and their
// neighbours) and returns k, and the ranking reads content only to tell
// questions (QuestionDamp, ReplyWeight). With this capability the engine
// reads the content of the neighbour sources and of the candidates that
// can still reach the top k (settle), and the answer is the same.
type BareChunkStore interface {
	ChunkBare(id string) (timelines.Chunk, bool, error)
	AroundBare(id string, before, after int) ([]timelines.Chunk, error)
	FillContent(cs []*timelines.Chunk) error
}

// fill reads the content of the bare candidates of cs.
func (e *Engine) fill(cs []*cand) error {
	bs, ok := e.src.Chunks.(BareChunkStore)
	if !ok {
		return nil
	}
	var need []*timelines.Chunk
	var cands []*cand
	for _, c := range cs {
		if c != nil && c.bare {
			need = append(need, &c.chunk)
			cands = append(cands, c)
		}
	}
	if len(need) == 0 {
		return nil
	}
	if err := bs.FillContent(need); err != nil {
		if errors.Is(err, timelines.ErrCorrupt) {
			return e.damaged(fmt.Errorf("look up chunks: %w", err))
		}
		return fmt.Errorf("look up chunks: %w", err)
	}
	for _, c := range cands {
		c.bare = false
	}
	return nil
}

// settle makes the first n of cs (by better) exact: score computed a bare
// candidate's Final as if it were no question, an upper bound (the
// question damping only lowers it). Until the first n are all read, the
// bare ones among them are read and rescored, and cs re-sorted; a
// candidate left bare then ranks after the first n whatever its content,
// so the first n, their scores and order are those of reading every
// candidate.
func (e *Engine) settle(cs []*cand, n int) error {
	for {
		sort.SliceStable(cs, func(i, j int) bool { return better(cs[i], cs[j]) })
		top := cs[:min(n, len(cs))]
		bare := make([]*cand, 0, len(top))
		for _, c := range top {
			if c.bare {
				bare = append(bare, c)
			}
		}
		if len(bare) == 0 {
			return nil
		}
		if err := e.fill(bare); err != nil {
			return err
		}
		for _, c := range bare {
			e.final(c)
		}
	}
}
