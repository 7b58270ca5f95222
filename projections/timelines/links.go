package timelines

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections"
)

// Link kinds in the links bucket. A link key is
//
//	kind byte ‖ uvarint(len(projections.IDKey(target))) ‖ projections.IDKey(target) ‖ projections.IDKey(source chunk id)
//
// so the links to one target are one prefix scan (ids as idKey since
// version 5: a target is a chunk or event id, hex as a rule).
const (
	linkReply      = 'p' // target: a chunk's parent (reply-to); source: the reply
	linkSupersedes = 's' // target: a superseded item id; source: the successor's chunk
)

func linkPrefix(kind byte, target string) []byte {
	t := projections.IDKey(target)
	b := []byte{kind}
	b = binary.AppendUvarint(b, uint64(len(t)))
	return append(b, t...)
}

func linkKey(kind byte, target, source string) []byte {
	return append(linkPrefix(kind, target), projections.IDKey(source)...)
}

func (c *Chunk) links() [][]byte {
	var out [][]byte
	if c.Parent != "" {
		out = append(out, linkKey(linkReply, c.Parent, c.ID))
	}
	for _, id := range c.Supersedes {
		out = append(out, linkKey(linkSupersedes, id, c.ID))
	}
	return out
}

func putLinks(w *projections.SortedWrites, c *Chunk) error {
	for _, k := range c.links() {
		if len(k) > bolt.MaxKeySize {
			continue // an id too long to index: the link is not followed
		}
		if err := w.Put(k, []byte{}); err != nil {
			return fmt.Errorf("index links of %q: %w", c.ID, err)
		}
	}
	return nil
}

func deleteLinks(w *projections.SortedWrites, c *Chunk) error {
	for _, k := range c.links() {
		if len(k) > bolt.MaxKeySize {
			continue
		}
		if err := w.Delete(k); err != nil {
			return fmt.Errorf("unindex links of %q: %w", c.ID, err)
		}
	}
	return nil
}

// appendConvSum extends ContentSum with the conversation-model fields,
// only when set, so a chunk without them sums as before.
func (c *Chunk) appendConvSum(b []byte) []byte {
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if c.Tool != nil {
		b = append(b, 't')
		str(c.Tool.Name)
		str(c.Tool.Args)
		str(c.Tool.Status)
	}
	if len(c.Supersedes) > 0 {
		b = append(b, 's')
		b = binary.AppendUvarint(b, uint64(len(c.Supersedes)))
		for _, id := range c.Supersedes {
			str(id)
		}
	}
	if c.Edited {
		b = append(b, 'e')
		str(c.EditedBy)
	}
	if c.Order != 0 {
		b = append(b, 'o')
		b = binary.BigEndian.AppendUint64(b, c.Order)
	}
	return b
}

// OrderSeq is the seq c sorts by (after its content time).
func (c *Chunk) OrderSeq() uint64 {
	if c.Order != 0 {
		return c.Order
	}
	return c.Seq
}

// keepPlace gives the new version c of an edited chunk the place of the
// version it replaces, when that one has the same content time.
func (t *Timelines) keepPlace(c *Chunk) error {
	return t.db.View(func(tx *bolt.Tx) error {
		old, err := t.current(tx, c.ID)
		if err != nil || old == nil || old.Time != c.Time {
			return err
		}
		if o := old.OrderSeq(); o != c.Seq {
			c.Order = o
		}
		return nil
	})
}

// applyEdit drops the chunks of the previous version that the new one
// does not overwrite, then stores the new chunk (which replaces the chunk
// with its id, index entries included).
func (t *Timelines) applyEdit(ev *log.Event, ed *log.Edit) error {
	err := t.db.View(func(tx *bolt.Tx) error {
		for _, id := range ed.Removes {
			c, err := t.current(tx, id)
			if err != nil {
				return err
			}
			if c == nil || c.Seq >= ev.Seq {
				continue
			}
			delete(t.puts, id)
			t.dels[id] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply edit: %w", err)
	}
	return t.applyStore(ev, &ed.Store)
}

// ItemID is the id a reader asks Get for: a chunk's document (chunk
// parent) if it has one, else its own id.
func (c *Chunk) ItemID() string {
	if c.ChunkParent != "" {
		return c.ChunkParent
	}
	return c.ID
}

func (t *Timelines) linked(kind byte, target string) ([]Chunk, error) {
	var out []Chunk
	err := t.read(func(tx *bolt.Tx) error {
		prefix := linkPrefix(kind, target)
		cur := tx.Bucket(bLinks).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			id, ok := projections.IDOfKey(k[len(prefix):])
			if !ok {
				return fmt.Errorf("link key %x: %w", k, ErrCorrupt)
			}
			c, err := getChunk(tx, id)
			if err != nil {
				return err
			}
			if c == nil {
				return fmt.Errorf("link names missing chunk %q: %w", k[len(prefix):], ErrCorrupt)
			}
			out = append(out, *c)
		}
		return nil
	})
	if err == nil {
		err = t.fill(out)
	}
	if err != nil {
		return nil, fmt.Errorf("read links of %q: %w", target, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Time != out[j].Time {
			return out[i].Time < out[j].Time
		}
		return out[i].Seq < out[j].Seq
	})
	return out, nil
}

// Replies returns the live chunks whose parent (reply-to) is id, in
// content-time order (ties by seq): the replies to a message and the tool
// calls it triggered.
func (t *Timelines) Replies(id string) ([]Chunk, error) { return t.linked(linkReply, id) }

// Successors returns the live chunks that supersede item id, in
// content-time order.
func (t *Timelines) Successors(id string) ([]Chunk, error) { return t.linked(linkSupersedes, id) }

// SupersededBy returns, for a chunk, the item ids of the live items that
// supersede it or its document, sorted; none when it is current.
func (t *Timelines) SupersededBy(c *Chunk) ([]string, error) {
	out, err := t.SupersededByEach([]*Chunk{c})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// SupersededByEach is SupersededBy for many chunks in one read (queries
// ask it for every result): nil entries when nothing supersedes them, and
// no per-chunk work at all in a store where nothing supersedes anything.
func (t *Timelines) SupersededByEach(cs []*Chunk) ([][]string, error) {
	out := make([][]string, len(cs))
	err := t.read(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bLinks).Cursor()
		if k, _ := cur.Seek([]byte{linkSupersedes}); k == nil || k[0] != linkSupersedes {
			return nil
		}
		for i, c := range cs {
			seen := map[string]bool{}
			targets := []string{c.ID}
			if c.ChunkParent != "" {
				targets = append(targets, c.ChunkParent)
			}
			for _, target := range targets {
				prefix := linkPrefix(linkSupersedes, target)
				for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
					id, ok := projections.IDOfKey(k[len(prefix):])
					if !ok {
						return fmt.Errorf("link key %x: %w", k, ErrCorrupt)
					}
					s, err := getChunk(tx, id)
					if err != nil {
						return err
					}
					if s == nil {
						return fmt.Errorf("link names missing chunk %q: %w", k[len(prefix):], ErrCorrupt)
					}
					if id := s.ItemID(); !seen[id] && id != c.ItemID() {
						seen[id] = true
						out[i] = append(out[i], id)
					}
				}
			}
			sort.Strings(out[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read successors: %w", err)
	}
	return out, nil
}

// WasRemoved reports whether a tombstone removed the chunk id, or a chunk
// of the item id (id#i): it tells an unknown id from a tombstoned one.
func (t *Timelines) WasRemoved(id string) (bool, error) {
	found := false
	err := t.read(func(tx *bolt.Tx) error {
		return tx.Bucket(bRemoved).ForEach(func(k, _ []byte) error {
			if len(k) < 8 {
				return fmt.Errorf("removal mark of %d bytes: %w", len(k), ErrCorrupt)
			}
			if c := string(k[8:]); c == id || strings.HasPrefix(c, id+"#") {
				found = true
			}
			return nil
		})
	})
	if err != nil {
		return false, fmt.Errorf("read removals: %w", err)
	}
	return found, nil
}
