package query

import (
	"errors"
	"fmt"
	"maps"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// EventReader reads one event of the log by seq: its raw bytes (checked by
// the log on read) and their decryption. *log.Log implements it.
type EventReader interface {
	Raw(seq uint64) ([]byte, error)
	Decrypt(raw []byte) (*log.Event, error)
}

// Checking results against the log.
//
// The projections are derived state on disk that anything with write
// access can change; the log is verified on read. When Sources.Log is set,
// every chunk a response carries (search results, the context's recent
// turns and ranked chunks) is read back from the log at the seq the
// timelines recorded for it, and every field returned (id, event id,
// session, role, kind, time, content, meta, parent, chunk parent and
// index) must equal the store event's. That is one log read and one
// decryption per returned chunk, never per candidate.
//
// A chunk that does not match is not returned and nothing is guessed: the
// request fails with a *projections.DamagedError naming the timelines and
// the chunk, and Sources.OnDamaged is called so the owner can flag the
// projection for a rebuild (projstd.Set.MarkDamaged; the next open or
// Heal rebuilds it from the log). A log read that fails is an error of its
// own (the log is the source of truth and its errors are never hidden).

// checkChunk compares c with the event at c.Seq.
func (e *Engine) checkChunk(c *timelines.Chunk) error {
	if e.src.Log == nil {
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
	s, ok := ev.Body.(*log.Store)
	if !ok {
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
	for _, c := range cs {
		if err := e.checkChunk(&c.chunk); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) checkChunks(cs []timelines.Chunk) error {
	for i := range cs {
		if err := e.checkChunk(&cs[i]); err != nil {
			return err
		}
	}
	return nil
}
