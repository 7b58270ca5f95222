package log

import "sort"

// Matches reports whether a tombstone targets a stored chunk. It is the one
// definition of tombstone semantics; every projection uses it:
//
//   - a chunk is targeted when its ChunkID is listed in Chunks (to remove a
//     chunked document, list its chunks: `ucl tombstone --document` does);
//   - when Session and/or a time range [From, To) is given, when the chunk
//     matches all of the given ones (session equal, content time in range).
//
// A tombstone applies to chunks appended before it (lower seq); a chunk
// stored later under the same session is not affected. Replay in seq order
// therefore gives the same result as incremental application.
func (t *Tombstone) Matches(s *Store) bool {
	for _, id := range t.Chunks {
		if id == s.ChunkID {
			return true
		}
	}
	hasRange := t.From != 0 || t.To != 0
	if t.Session == "" && !hasRange {
		return false
	}
	if t.Session != "" && s.Session != t.Session {
		return false
	}
	if hasRange && (s.Time < t.From || s.Time >= t.To) {
		return false
	}
	return true
}

// TombstoneTracker follows a log in seq order and knows which chunks are
// tombstoned, and by which event. It holds every live chunk's targeting
// fields in memory; it is for whole-log passes (replay, audit), not for
// projections, which keep their own state.
type TombstoneTracker struct {
	live map[string]*Store
	dead map[string]uint64
	// retired maps an item id to the chunk ids an edit dropped from it
	// (a re-chunk into fewer chunks): they die with the item.
	retired map[string][]string
}

// NewTombstoneTracker returns an empty tracker.
func NewTombstoneTracker() *TombstoneTracker {
	return &TombstoneTracker{live: map[string]*Store{}, dead: map[string]uint64{}, retired: map[string][]string{}}
}

// Observe feeds the next event and returns the chunk ids a tombstone removed.
func (tr *TombstoneTracker) Observe(e *Event) []string {
	switch b := e.Body.(type) {
	case *Store:
		tr.live[b.ChunkID] = &Store{ChunkID: b.ChunkID, ChunkParent: b.ChunkParent, Session: b.Session, Time: b.Time}
		delete(tr.dead, b.ChunkID) // re-stored after a tombstone: live again
	case *Edit:
		for _, id := range b.Removes {
			delete(tr.live, id)
			tr.retired[b.Target] = append(tr.retired[b.Target], id)
		}
		s := &b.Store
		tr.live[s.ChunkID] = &Store{ChunkID: s.ChunkID, ChunkParent: s.ChunkParent, Session: s.Session, Time: s.Time}
		delete(tr.dead, s.ChunkID)
	case *Tombstone:
		var removed []string
		for id, s := range tr.live {
			if b.Matches(s) {
				removed = append(removed, id)
			}
		}
		sort.Strings(removed)
		for _, id := range removed {
			item := tr.live[id].ChunkParent
			if item == "" {
				item = id
			}
			delete(tr.live, id)
			tr.dead[id] = e.Seq
			// Every version of the item dies with it.
			for _, old := range tr.retired[item] {
				if _, live := tr.live[old]; !live {
					tr.dead[old] = e.Seq
				}
			}
			delete(tr.retired, item)
		}
		return removed
	}
	return nil
}

// Dead maps tombstoned chunk ids to the seq of the tombstone that removed them.
func (tr *TombstoneTracker) Dead() map[string]uint64 { return tr.dead }
