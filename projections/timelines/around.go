package timelines

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
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
	var prev, next []Chunk
	err := t.read(func(tx *bolt.Tx) error {
		c, err := getChunk(tx, id)
		if err != nil || c == nil || c.Session == "" {
			return err
		}
		key := ordKey(c.Time, c.OrderSeq())
		cur := sessionCursor(tx, c.Session)
		k, _ := cur.Seek(key)
		if k == nil || !bytes.Equal(k, key) {
			return fmt.Errorf("chunk %q missing from its session index: %w", id, ErrCorrupt)
		}
		collect := func(n int, step func() ([]byte, []byte), out *[]Chunk) error {
			for k, v := step(); k != nil && len(*out) < n; k, v = step() {
				iv, err := decodeIndexValue(v)
				if err != nil {
					return err
				}
				if iv.kind != log.KindConversation {
					continue
				}
				ch, err := chunkFromIndex(tx, v)
				if err != nil {
					return err
				}
				*out = append(*out, *ch)
			}
			return nil
		}
		if err := collect(before, cur.Prev, &prev); err != nil {
			return err
		}
		cur.Seek(key)
		return collect(after, cur.Next, &next)
	})
	if err == nil && content {
		err = errors.Join(t.fill(prev), t.fill(next))
	}
	if err != nil {
		return nil, fmt.Errorf("turns around %q: %w", id, err)
	}
	out := make([]Chunk, 0, len(prev)+len(next))
	for i := len(prev) - 1; i >= 0; i-- {
		out = append(out, prev[i])
	}
	return append(out, next...), nil
}
