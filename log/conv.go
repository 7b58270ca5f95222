package log

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
)

// The conversation model: tool calls and supersedes (store v2) and edits
// (event type 6). See the package doc for the encodings.

const (
	storeBodyV2     = 2
	editBodyVersion = 1
)

// ToolCall is what makes a store body a first-class tool call. The
// result is the store's Content; the message that triggered the call is
// its Parent.
type ToolCall struct {
	Name   string `json:"name"`
	Args   string `json:"args,omitempty"` // JSON text, kept byte for byte
	Status string `json:"status,omitempty"`
}

// Edit replaces one chunk of an item with its new version. An edit of a
// chunked item (a document, a long tool result) is one Edit per new chunk,
// appended as one batch; the first carries Prev and Removes.
type Edit struct {
	// Target is the item's id: the chunk id of an unchunked item, the
	// chunk parent of a chunked one.
	Target string `json:"target"`
	// Prev is the seq of the first event of the version this one replaces
	// (0 on every chunk but the first), so history is a walk back.
	Prev uint64 `json:"prev_seq,omitempty"`
	// By names who edited (a user, an agent, a front end).
	By string `json:"by,omitempty"`
	// Removes lists chunk ids of the previous version that the new
	// version does not overwrite (a re-chunk into fewer chunks).
	Removes []string `json:"removes,omitempty"`
	// Store is the new chunk; its ChunkID is Target or Target#i.
	Store Store `json:"store"`
}

func (*Edit) Type() Type { return TypeEdit }

// Edit returns the body as *Edit, or nil.
func (e *Event) Edit() *Edit { ed, _ := e.Body.(*Edit); return ed }

// Chunk returns the chunk an event puts in place: the body of a store,
// the new version of an edit, else nil.
func (e *Event) Chunk() *Store {
	switch b := e.Body.(type) {
	case *Store:
		return b
	case *Edit:
		return &b.Store
	}
	return nil
}

// SearchText is the text an index should find a chunk by: its content,
// and for a tool call also its name and arguments.
func (s *Store) SearchText() string {
	if s.Tool == nil {
		return s.Content
	}
	parts := []string{s.Tool.Name}
	if s.Tool.Args != "" {
		parts = append(parts, s.Tool.Args)
	}
	if s.Content != "" {
		parts = append(parts, s.Content)
	}
	return strings.Join(parts, "\n")
}

func (s *Store) validateConv() error {
	if t := s.Tool; t != nil {
		if strings.TrimSpace(t.Name) == "" {
			return fmt.Errorf("field tool.name: %w: a tool call needs a name", ErrMalformed)
		}
		if s.Kind != KindToolCall {
			return fmt.Errorf("field kind: %w: tool fields on a %s", ErrMalformed, s.Kind)
		}
		if t.Args != "" && !json.Valid([]byte(t.Args)) {
			return fmt.Errorf("field tool.args: %w: not JSON", ErrMalformed)
		}
		for _, f := range [...]struct{ name, v string }{{"tool.name", t.Name}, {"tool.args", t.Args}, {"tool.status", t.Status}} {
			if err := checkUTF8(f.name, f.v); err != nil {
				return err
			}
		}
	}
	seen := make(map[string]bool, len(s.Supersedes))
	for _, id := range s.Supersedes {
		if id == "" || seen[id] {
			return fmt.Errorf("field supersedes: %w: empty or repeated id", ErrMalformed)
		}
		if id == s.ChunkID && id != "" {
			return fmt.Errorf("field supersedes: %w: an item cannot supersede itself", ErrMalformed)
		}
		if err := checkUTF8("supersedes", id); err != nil {
			return err
		}
		seen[id] = true
	}
	return nil
}

// appendConv appends the v2 fields selected by flags.
func (s *Store) appendConv(b []byte, flags byte) []byte {
	if flags&flagTool != 0 {
		b = appendStr(b, s.Tool.Name)
		b = appendStr(b, s.Tool.Args)
		b = appendStr(b, s.Tool.Status)
	}
	if flags&flagSupersedes != 0 {
		b = appendStrs(b, s.Supersedes)
	}
	return b
}

func (d *dec) conv(s *Store, flags byte) {
	if flags&flagTool != 0 {
		s.Tool = &ToolCall{Name: d.str(), Args: d.str(), Status: d.str()}
		if d.err == nil && s.Tool.Name == "" {
			d.fail("tool call without a name")
		}
	}
	if flags&flagSupersedes != 0 {
		if s.Supersedes = d.strs(); d.err == nil && len(s.Supersedes) == 0 {
			d.fail("non-canonical empty supersedes")
		}
	}
}

func (e *Edit) appendTo(b []byte, hdr *Header) ([]byte, error) {
	if e.Target == "" {
		return nil, fmt.Errorf("field target: %w: empty", ErrMalformed)
	}
	if e.Store.ChunkID != e.Target && e.Store.ChunkParent != e.Target {
		return nil, fmt.Errorf("field store.chunk_id: %w: %q is not the target %q or one of its chunks", ErrMalformed, e.Store.ChunkID, e.Target)
	}
	for _, f := range [...]struct{ name, v string }{{"target", e.Target}, {"by", e.By}} {
		if err := checkUTF8(f.name, f.v); err != nil {
			return nil, err
		}
	}
	b = append(b, editBodyVersion)
	b = appendStr(b, e.Target)
	b = binary.AppendUvarint(b, e.Prev)
	b = appendStr(b, e.By)
	b = appendStrs(b, e.Removes)
	return e.Store.appendTo(b, hdr)
}

func (d *dec) edit(hdr *Header) *Edit {
	e := &Edit{}
	d.version(editBodyVersion)
	e.Target = d.str()
	e.Prev = d.uvarint()
	e.By = d.str()
	e.Removes = d.strs()
	if d.err != nil {
		return e
	}
	e.Store = *d.store(hdr)
	if d.err == nil && (e.Target == "" || (e.Store.ChunkID != e.Target && e.Store.ChunkParent != e.Target)) {
		d.fail("edit of %q carries chunk %q", e.Target, e.Store.ChunkID)
	}
	return e
}

// editJSON is an edit's replay line body: the edit's own fields, then the
// new version's like a store's.
func editJSON(e *Edit) any {
	s := &e.Store
	return struct {
		Target      string            `json:"target"`
		Prev        uint64            `json:"prev_seq,omitempty"`
		By          string            `json:"by,omitempty"`
		Removes     []string          `json:"removes,omitempty"`
		ChunkID     string            `json:"chunk_id"`
		Session     string            `json:"session,omitempty"`
		Role        string            `json:"role,omitempty"`
		Kind        Kind              `json:"kind"`
		ContentTime string            `json:"content_time"`
		Content     string            `json:"content"`
		Meta        map[string]string `json:"meta,omitempty"`
		Parent      string            `json:"parent,omitempty"`
		ChunkParent string            `json:"chunk_parent,omitempty"`
		ChunkIndex  *int              `json:"chunk_index,omitempty"`
		Tool        *ToolCall         `json:"tool,omitempty"`
		Supersedes  []string          `json:"supersedes,omitempty"`
	}{e.Target, e.Prev, e.By, e.Removes, s.ChunkID, s.Session, s.Role, s.Kind, FormatTime(s.Time), s.Content, s.Meta,
		s.Parent, s.ChunkParent, chunkIndexPtr(s), s.Tool, s.Supersedes}
}
