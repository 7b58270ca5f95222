package ucl

import (
	"context"
	"fmt"
	"sort"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/dedup"
	"github.com/unlimitedcontext/ucl/projections/projstd"
)

// dupPlan is what an append writes after near-duplicates are taken out:
// kept are the entries to write; for every input entry, dup says what it
// duplicates (nil: it is kept).
type dupPlan struct {
	n    int
	kept []log.Entry
	dup  []*dupRef
	// Document is the chunk parent of the existing document a Remember
	// duplicated.
	document string
}

// dupRef is what one input entry duplicates: a live item already in the
// store (item), or an earlier entry of the same input (entry >= 0).
type dupRef struct {
	item  *dedup.Item
	id    log.ID   // of the event at item.Seq (the projection keeps no copy)
	hash  log.Hash // of the event at item.Seq
	entry int
}

// group is one item of an input: a store entry, or the consecutive
// chunks of one document.
type group struct{ first, n int }

func storeOf(e log.Entry) *log.Store { st, _ := e.Body.(*log.Store); return st }

// groups splits entries into items; tombstones are no item.
func groups(entries []log.Entry) []group {
	var out []group
	for i := 0; i < len(entries); {
		st := storeOf(entries[i])
		if st == nil {
			i++
			continue
		}
		j := i + 1
		if st.ChunkParent != "" {
			for j < len(entries) {
				nx := storeOf(entries[j])
				if nx == nil || nx.ChunkParent != st.ChunkParent {
					break
				}
				j++
			}
		}
		out = append(out, group{i, j - i})
		i = j
	}
	return out
}

// chunkIDOf is the chunk id an entry will be stored under, "" when the log
// picks a random one.
func chunkIDOf(e log.Entry) string {
	if st := storeOf(e); st != nil && st.ChunkID != "" {
		return st.ChunkID
	}
	if !e.ID.IsZero() {
		return e.ID.String()
	}
	return ""
}

// groupKey identifies an item's normalized content within the input.
func groupKey(entries []log.Entry, g group) string {
	st := storeOf(entries[g.first])
	k := fmt.Sprintf("%q/%q/%d/%d", st.Session, st.Role, st.Kind, g.n)
	for i := g.first; i < g.first+g.n; i++ {
		h := dedup.Hash(storeOf(entries[i]).Content)
		k += "/" + string(h[:])
	}
	return k
}

// planDuplicates finds, for every item of entries, a live item of the same
// session, role and kind with the same normalized content (the oldest one,
// by seq), or an earlier item of the same input. Items whose first entry
// is allowed (allow[i]; nil: none) are written as they are. It catches up the dedup
// projection first; the caller holds s.dedupMu until its append is done, so
// that two concurrent stores of the same text cannot both pass.
func (s *Store) planDuplicates(ctx context.Context, entries []log.Entry, allow []bool) (*dupPlan, error) {
	p := &dupPlan{n: len(entries), dup: make([]*dupRef, len(entries))}
	gs := groups(entries)
	if len(gs) == 0 {
		p.kept = entries
		return p, nil
	}
	s.lockProj() // catching the dedup projection up changes it
	defer s.projMu.Unlock()
	x, err := s.dedupIndexLocked(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]group{}
	for _, g := range gs {
		key := groupKey(entries, g)
		if allow != nil && allow[g.first] {
			if _, ok := seen[key]; !ok {
				seen[key] = g
			}
			continue
		}
		if prev, ok := seen[key]; ok {
			for i := 0; i < g.n; i++ {
				p.dup[g.first+i] = &dupRef{entry: prev.first + i}
			}
			continue
		}
		match, err := findLive(x, entries, g)
		if err != nil {
			return nil, err
		}
		if match == nil {
			seen[key] = g
			continue
		}
		for i := 0; i < g.n; i++ {
			it := match[i]
			ev, err := s.st.Log.EventAt(it.Seq)
			if err != nil {
				return nil, fmt.Errorf("read duplicated event: %w", err)
			}
			p.dup[g.first+i] = &dupRef{item: &it, id: ev.ID, hash: ev.Hash, entry: -1}
		}
		if g.n > 1 {
			p.document = match[0].ChunkParent
		}
	}
	for i, e := range entries {
		if p.dup[i] == nil {
			p.kept = append(p.kept, e)
		}
	}
	return p, nil
}

// findLive returns the live chunks (in order) of the oldest live item
// that g duplicates, nil when there is none.
func findLive(x *dedup.Index, entries []log.Entry, g group) ([]dedup.Item, error) {
	st := storeOf(entries[g.first])
	if g.n == 1 && st.ChunkParent != "" {
		return nil, nil // one chunk of a document given line by line: no item of its own
	}
	for i := 0; i < g.n; i++ {
		if storeOf(entries[g.first+i]).ChunkIndex != i {
			return nil, nil // not a whole document from its first chunk on
		}
	}
	cands, err := x.Find(st.Session, st.Role, st.Kind, dedup.Hash(st.Content))
	if err != nil {
		return nil, fmt.Errorf("look up duplicates: %w", err)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Seq < cands[j].Seq })
	for _, c := range cands {
		if g.n == 1 {
			// A chunk of a document is no item of its own; the same chunk id
			// again is the log's idempotency (or a re-store), not a duplicate.
			if c.ChunkParent != "" || c.ChunkID == chunkIDOf(entries[g.first]) {
				continue
			}
			return []dedup.Item{c}, nil
		}
		if c.ChunkParent == "" || c.ChunkIndex != 0 || c.ChunkParent == st.ChunkParent {
			continue
		}
		doc, err := x.Document(c.ChunkParent)
		if err != nil {
			return nil, fmt.Errorf("look up duplicates: %w", err)
		}
		if len(doc) != g.n {
			continue
		}
		same := true
		for i, d := range doc {
			if d.ChunkIndex != i || d.Content != dedup.Hash(storeOf(entries[g.first+i]).Content) {
				same = false
				break
			}
		}
		if same {
			return doc, nil
		}
	}
	return nil, nil
}

// dedupIndexLocked returns the dedup projection caught up to the log
// head. Only it is caught up (a store must not wait for embeddings); when
// that fails, the whole set is caught up, which resets a damaged
// projection.
func (s *Store) dedupIndexLocked(ctx context.Context) (*dedup.Index, error) {
	if s.set != nil && s.set.Dedup != nil {
		pr, err := projections.NewProjector(s.st.Log, []projections.Projection{s.set.Dedup}, projections.Options{})
		if err == nil && pr.CatchUp(ctx, nil) == nil {
			return s.set.Dedup, nil
		}
	}
	if s.set == nil {
		// Only the dedup projection: opening the set would load every
		// projection (the vector graph among them) for one lookup.
		if s.dedupSet == nil {
			if s.shut.Load() { // as in setLocked
				return nil, log.ErrClosed
			}
			ds, err := projstd.Open(s.st.Path(store.ProjectionsDir), s.st.Log, projstd.Options{Only: []string{dedup.Name}})
			if err != nil {
				return nil, err
			}
			ds.OnNotice(func(n projstd.Notice) { s.opts.Warn(n.String()) })
			s.dedupSet = ds
		}
		if err := s.dedupSet.CatchUp(ctx, nil); err != nil {
			return nil, fmt.Errorf("catch up the dedup projection: %w", err)
		}
		return s.dedupSet.Dedup, nil
	}
	set, err := s.caughtUpLocked(ctx, nil)
	if err != nil {
		return nil, err
	}
	if set.Dedup == nil {
		return nil, fmt.Errorf("look up duplicates: the dedup projection is not open")
	}
	return set.Dedup, nil
}

// merge puts the results of the kept entries (written, in order) and the
// duplicates back into input order.
func (p *dupPlan) merge(written []EventResult, entries []log.Entry) []EventResult {
	out := make([]EventResult, p.n)
	k := 0
	for i := 0; i < p.n; i++ {
		d := p.dup[i]
		switch {
		case d == nil:
			if k < len(written) {
				out[i] = written[k]
			}
			k++
		case d.item != nil:
			it := d.item
			out[i] = EventResult{Seq: it.Seq, ID: d.id, Hash: d.hash, ChunkParent: it.ChunkParent, DuplicateOf: it.ChunkID}
			if it.ChunkID != d.id.String() {
				out[i].ChunkID = it.ChunkID
			}
		default:
			r := out[d.entry]
			r.Existed = false
			r.DuplicateOf = r.ChunkID
			if r.DuplicateOf == "" {
				r.DuplicateOf = r.ID.String()
			}
			out[i] = r
		}
	}
	return out
}
