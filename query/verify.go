package query

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// EventReader is the log as the result check reads it (*log.Log
// implements it): the event id index when it is in memory, and one event's
// raw bytes (checked by the log on read) and their decryption.
type EventReader interface {
	LookupLoaded(id log.ID) (seq uint64, ok, loaded bool)
	Raw(seq uint64) ([]byte, error)
	Decrypt(raw []byte) (*log.Event, error)
}

// Checking results against the log.
//
// The projections are derived state on disk that anything with write
// access can change; the log is verified on read. When Sources.Log is set,
// every chunk a response carries (search results, the context's recent
// turns and ranked chunks) is checked on the way out, in two steps:
//
//   - always (no I/O, about a microsecond a chunk): the timelines record
//     carries Chunk.Sum, SHA-256 of all its fields cut to 16 bytes, computed
//     when the event was applied; it is recomputed from the fields returned (Sum
//     covers the seq and event id too). When the log's id index is in
//     memory (a process that has appended with ids; a fresh process opens
//     the log without reading its history, see log.Open), it must also
//     place the chunk's event id at the chunk's seq. Damage to any returned
//     byte fails here.
//   - with Sources.FullCheck: the event at that seq is also read from the
//     log, decrypted, and every returned field (id, event id, session,
//     role, kind, time, content, meta, parent, chunk parent and index)
//     compared with the store event's. This catches a deliberate edit that
//     also recomputed Sum, at the cost of log reads: the log has no random
//     access and loads a whole 8 MiB segment per miss (measured over 50K
//     chunks, BM25 k=10: 1.3 ms a query unchecked, 1.3 ms with the default
//     check, 12-14 ms with FullCheck; BenchmarkSearchCheckedAgainstLog), so
//     it is not the default. `project verify`, which rebuilds from the log and
//     compares digests covering every record, catches such an edit too.
//
// A chunk that fails is not returned and nothing is guessed: the request
// fails with a *projections.DamagedError naming the timelines and the
// chunk, and Sources.OnDamaged is called so the owner can flag the
// projection for a rebuild (projstd.Set.FlagDamaged; the next open, or
// Heal, rebuilds it from the log). A log read that fails is an error of
// its own (the log is the source of truth and its errors are never hidden).

// checkChunk checks c against the log (see above).
func (e *Engine) checkChunk(c *timelines.Chunk) error {
	if c.Sum != c.ContentSum() {
		return e.damaged(fmt.Errorf("chunk %q: record does not match its content sum", c.ID))
	}
	id, err := log.ParseID(c.EventID)
	if err != nil {
		return e.damaged(fmt.Errorf("chunk %q: %w", c.ID, err))
	}
	if seq, ok, loaded := e.src.Log.LookupLoaded(id); loaded && (!ok || seq != c.Seq) {
		return e.damaged(fmt.Errorf("chunk %q: the log does not hold its event %s at seq %d", c.ID, c.EventID, c.Seq))
	}
	if !e.src.FullCheck {
		return nil
	}
	raw, err := e.src.Log.Raw(c.Seq)
	if errors.Is(err, log.ErrNotFound) {
		return e.damaged(fmt.Errorf("chunk %q names seq %d, which is not in the log", c.ID, c.Seq))
	}
	if err != nil {
		return fmt.Errorf("check chunk %q against the log: %w", c.ID, err)
	}
	ev, err := e.src.Log.Decrypt(raw)
	if err != nil {
		return fmt.Errorf("check chunk %q against the log: %w", c.ID, err)
	}
	s := ev.Chunk() // a store, or the new version an edit put in place
	if s == nil {
		return e.damaged(fmt.Errorf("chunk %q names seq %d, a %s event", c.ID, c.Seq, ev.Type))
	}
	if field := differs(c, ev, s); field != "" {
		return e.damaged(fmt.Errorf("chunk %q: %s differs from the log at seq %d", c.ID, field, c.Seq))
	}
	return nil
}

// differs names the first field of c that is not what the event stored.
func differs(c *timelines.Chunk, ev *log.Event, s *log.Store) string {
	switch {
	case c.ID != s.ChunkID:
		return "id"
	case c.EventID != ev.ID.String():
		return "event id"
	case c.Content != s.Content:
		return "content"
	case c.Session != s.Session:
		return "session"
	case c.Role != s.Role:
		return "role"
	case c.Kind != s.Kind:
		return "kind"
	case c.Time != s.Time:
		return "time"
	case c.Parent != s.Parent:
		return "parent"
	case c.ChunkParent != s.ChunkParent || c.ChunkIndex != s.ChunkIndex:
		return "chunk parent"
	case !(len(c.Meta) == 0 && len(s.Meta) == 0) && !maps.Equal(c.Meta, s.Meta):
		return "meta"
	case (c.Tool == nil) != (s.Tool == nil) || c.Tool != nil && *c.Tool != *s.Tool:
		return "tool"
	case !slices.Equal(c.Supersedes, s.Supersedes):
		return "supersedes"
	}
	return ""
}

func (e *Engine) damaged(err error) error {
	if e.src.OnDamaged != nil {
		e.src.OnDamaged(timelines.Name, err.Error())
	}
	return &projections.DamagedError{Projection: timelines.Name, Err: err}
}

func (e *Engine) checkCands(cs []*cand) error {
	ps := make([]*timelines.Chunk, len(cs))
	for i, c := range cs {
		ps[i] = &c.chunk
	}
	return e.checkAll(ps)
}

func (e *Engine) checkChunks(cs []timelines.Chunk) error {
	ps := make([]*timelines.Chunk, len(cs))
	for i := range cs {
		ps[i] = &cs[i]
	}
	return e.checkAll(ps)
}

// checkAll checks cs in seq order: the log reads whole segments into a
// small cache, so reading in order loads each segment at most once.
func (e *Engine) checkAll(cs []*timelines.Chunk) error {
	if e.src.Log == nil {
		return nil
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Seq < cs[j].Seq })
	for _, c := range cs {
		if err := e.checkChunk(c); err != nil {
			return err
		}
	}
	return nil
}
