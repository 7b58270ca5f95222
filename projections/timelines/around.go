package timelines

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Around returns the conversation turns next to chunk id in its session's
// content-time order: up to before turns preceding it and up to after
// turns following it, oldest first, the chunk itself excluded. Tool calls
// and documents are skipped, as in RecentTurns. An unknown id or a chunk
// without a session gives nothing and no error.
//
// Query uses it to rank a turn by the turns around it: in a conversation
// the answer is often the reply to the turn that matches the words. It
// costs one cursor seek per call, whatever the session's length.
func (t *Timelines) Around(id string, before, after int) ([]Chunk, error) {
	return t.around(id, before, after, true)
}

func (t *Timelines) around(id string, before, after int, content bool) ([]Chunk, error) {
	if before <= 0 && after <= 0 {
		return nil, nil
	}
	var list []*Chunk
	err := projections.Guard(Name, func() error {
		s, err := t.snapshot()
		if err != nil {
			return err
		}
		key := aroundKey{id: id, before: before, after: after}
		if l, ok := t.cache.aroundList(s.gen, key); ok {
			list = l
			return nil
		}
		return s.db.View(func(tx *bolt.Tx) error {
			var err error
			list, err = t.aroundTx(tx, s, id, before, after)
			if err == nil && s.at(tx) {
				t.cache.putAround(s.gen, key, list)
			}
			return err
		})
	})
	out := make([]Chunk, len(list))
	for i, c := range list {
		out[i] = *c
	}
	if err == nil && content {
		err = t.fill(out)
	}
	if err != nil {
		return nil, fmt.Errorf("turns around %q: %w", id, err)
	}
	return out, nil
}

// aroundTx returns the turns around id, oldest first.
func (t *Timelines) aroundTx(tx *bolt.Tx, s snap, id string, before, after int) ([]*Chunk, error) {
	c, err := t.cachedChunk(tx, s, id)
	if err != nil || c == nil || c.Session == "" {
		return nil, err
	}
	key := ordKey(c.Time, c.OrderSeq())
	cur := sessionCursor(tx, c.Session)
	k, _ := cur.Seek(key)
	if k == nil || !bytes.Equal(k, key) {
		return nil, fmt.Errorf("chunk %q missing from its session index: %w", id, ErrCorrupt)
	}
	var prev, next []*Chunk
	collect := func(n int, step func() ([]byte, []byte), out *[]*Chunk) error {
		for k, v := step(); k != nil && len(*out) < n; k, v = step() {
			iv, err := decodeIndexValue(v)
			if err != nil {
				return err
			}
			if iv.kind != log.KindConversation {
				continue
			}
			ch, err := t.cachedChunk(tx, s, iv.id)
			if err != nil {
				return err
			}
			if ch == nil {
				return fmt.Errorf("index names missing chunk %q: %w", iv.id, ErrCorrupt)
			}
			*out = append(*out, ch)
		}
		return nil
	}
	if err := collect(before, cur.Prev, &prev); err != nil {
		return nil, err
	}
	cur.Seek(key)
	if err := collect(after, cur.Next, &next); err != nil {
		return nil, err
	}
	out := make([]*Chunk, 0, len(prev)+len(next))
	for i := len(prev) - 1; i >= 0; i-- {
		out = append(out, prev[i])
	}
	return append(out, next...), nil
}
