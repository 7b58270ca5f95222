package summary

import (
	"fmt"
	"sort"
)

// readContent analyses the content of cs, committed chunks whose blocks a
// Commit rebuilds, reading it from the event at each chunk's seq (format
// 3 keeps no copy of chunk text). The reads go in seq order, so the log
// loads each segment once per Commit; a chunk in both a session and a
// document group is read once. It returns the number of events read.
func (x *Index) readContent(cs []*chunk) (int, error) {
	if len(cs) == 0 {
		return 0, nil
	}
	if x.events == nil {
		return 0, fmt.Errorf("read chunk %q: %w", cs[0].id, ErrNoEvents)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].seq < cs[j].seq })
	read := 0
	var prev *chunk
	for _, c := range cs {
		if prev != nil && prev.seq == c.seq && prev.id == c.id {
			c.sents = prev.sents
			continue
		}
		ev, err := x.events.EventAt(c.seq)
		if err != nil {
			return read, fmt.Errorf("read content of chunk %q at seq %d: %w", c.id, c.seq, err)
		}
		read++
		st := ev.Chunk()
		if st == nil || st.ChunkID != c.id {
			return read, fmt.Errorf("chunk %q names seq %d, which does not hold it: %w", c.id, c.seq, ErrCorrupt)
		}
		c.sents = split([]string{st.Content})
		prev = c
	}
	return read, nil
}
