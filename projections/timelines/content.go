package timelines

import (
	"fmt"
	"sort"
)

// Chunk content is not stored in the timelines (version 4): a chunk
// record names the seq of the event that put it in place (a store, or an
// edit), and reads that return chunks take the content from that event.
// The log keeps the text once; the timelines keep what orders and finds
// it. Reads fill their chunks in seq order, so the log loads each of its
// segments once per read.

// fill sets the Content of every chunk of cs from its event.
func (t *Timelines) fill(cs []Chunk) error {
	if len(cs) == 0 {
		return nil
	}
	if t.events == nil {
		return ErrNoEvents
	}
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return cs[order[a]].Seq < cs[order[b]].Seq })
	for _, i := range order {
		content, err := t.content(&cs[i])
		if err != nil {
			return err
		}
		cs[i].Content = content
	}
	return nil
}

// content reads the content of c from the event at c.Seq.
func (t *Timelines) content(c *Chunk) (string, error) {
	if t.events == nil {
		return "", ErrNoEvents
	}
	gen := t.cache.current()
	if s, ok := t.cache.contentOf(gen, c.Seq, c.ID); ok {
		return s, nil
	}
	ev, err := t.events.EventAt(c.Seq)
	if err != nil {
		return "", fmt.Errorf("read content of chunk %q at seq %d: %w", c.ID, c.Seq, err)
	}
	s := ev.Chunk()
	if s == nil || s.ChunkID != c.ID {
		return "", fmt.Errorf("chunk %q names seq %d, which does not hold it: %w", c.ID, c.Seq, ErrCorrupt)
	}
	t.cache.putContent(gen, c.Seq, c.ID, s.Content)
	return s.Content, nil
}
