package timelines

import (
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/projections"
)

// Reads without content. A chunk's content is in the log, encrypted (see
// content.go): reading it costs a log read, a data-key unwrap and a
// decryption, most of what a chunk lookup costs. A query ranks a few
// hundred candidates and returns ten, and most candidates' ranking needs
// no content, so it looks them up bare and fills the few it needs.

// ChunkBare is Chunk without Content (Sum still names it). The returned
// chunk's Meta, Tool and Supersedes may be shared with later calls (see
// cache.go): do not modify them.
func (t *Timelines) ChunkBare(id string) (Chunk, bool, error) {
	var c *Chunk
	err := projections.Guard(Name, func() error {
		s, err := t.snapshot()
		if err != nil {
			return err
		}
		if cc, ok := t.cache.chunk(s.gen, id); ok {
			c = cc
			return nil
		}
		return s.db.View(func(tx *bolt.Tx) error {
			c, err = t.cachedChunk(tx, s, id)
			return err
		})
	})
	if err != nil {
		return Chunk{}, false, fmt.Errorf("read chunk: %w", err)
	}
	if c == nil {
		return Chunk{}, false, nil
	}
	return *c, true, nil
}

// AroundBare is Around without Content. As with ChunkBare, the chunks'
// Meta, Tool and Supersedes may be shared: do not modify them.
func (t *Timelines) AroundBare(id string, before, after int) ([]Chunk, error) {
	return t.around(id, before, after, false)
}

// FillContent sets the Content of every chunk of cs from its event, in
// seq order (the log then reads each segment once).
func (t *Timelines) FillContent(cs []*Chunk) error {
	if t.events == nil {
		return ErrNoEvents
	}
	order := append([]*Chunk(nil), cs...)
	sort.Slice(order, func(a, b int) bool { return order[a].Seq < order[b].Seq })
	for _, c := range order {
		content, err := t.content(c)
		if err != nil {
			return fmt.Errorf("read chunk: %w", err)
		}
		c.Content = content
	}
	return nil
}
