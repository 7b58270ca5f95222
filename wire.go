package ucl

import (
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/summary"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// The API's own types for what it reads out of projections and the
// mirror state. A projection's record keeps fields of its own (a chunk's
// integrity sum, its sort order) that are not the API's business; these
// types are what crosses the socket, REST and MCP, so a projection's
// format can change without changing the wire.

// Item is one stored chunk: a turn, a fact, a piece of a document or a
// tool call.
type Item struct {
	ID         string            `json:"id"`
	Seq        uint64            `json:"seq"`
	EventID    string            `json:"event_id"`
	AppendTime int64             `json:"append_ms"`
	Time       int64             `json:"time_ms"` // content time, unix ms
	Kind       log.Kind          `json:"kind"`
	Session    string            `json:"session,omitempty"`
	Role       string            `json:"role,omitempty"`
	Content    string            `json:"content"`
	Meta       map[string]string `json:"meta,omitempty"`
	// Parent is the item this one replies to.
	Parent string `json:"parent,omitempty"`
	// ChunkParent is the document this chunk is part of, ChunkIndex its
	// place in it.
	ChunkParent string        `json:"chunk_parent,omitempty"`
	ChunkIndex  int           `json:"chunk_index,omitempty"`
	Tool        *log.ToolCall `json:"tool,omitempty"`
	Supersedes  []string      `json:"supersedes,omitempty"`
	// EditedBy names who made this version (an edit); Seq, EventID and
	// AppendTime are then the edit's.
	EditedBy string `json:"edited_by,omitempty"`
	Edited   bool   `json:"edited,omitempty"`
}

func itemOf(c timelines.Chunk) Item {
	return Item{ID: c.ID, Seq: c.Seq, EventID: c.EventID, AppendTime: c.AppendTime, Time: c.Time, Kind: c.Kind,
		Session: c.Session, Role: c.Role, Content: c.Content, Meta: c.Meta, Parent: c.Parent, ChunkParent: c.ChunkParent,
		ChunkIndex: c.ChunkIndex, Tool: c.Tool, Supersedes: c.Supersedes, EditedBy: c.EditedBy, Edited: c.Edited}
}

func itemsOf(cs []timelines.Chunk) []Item {
	out := make([]Item, len(cs))
	for i, c := range cs {
		out[i] = itemOf(c)
	}
	return out
}

// SessionInfo describes one session.
type SessionInfo struct {
	ID        string         `json:"id"`
	First     int64          `json:"first_ms"` // earliest content time
	Last      int64          `json:"last_ms"`  // latest content time
	Chunks    int            `json:"chunks"`
	Kinds     map[string]int `json:"kinds"`           // kind name → chunks
	Roles     map[string]int `json:"roles,omitempty"` // role → chunks (chunks with a role)
	Documents int            `json:"documents"`       // distinct documents (by chunk_parent)
	// Title is the first sentence of the first user turn, else of the
	// first chunk, shortened.
	Title string `json:"title"`
}

func sessionInfoOf(si timelines.SessionInfo) SessionInfo {
	return SessionInfo{ID: si.ID, First: si.First, Last: si.Last, Chunks: si.Chunks, Kinds: si.Kinds, Roles: si.Roles,
		Documents: si.Documents, Title: si.Title}
}

// Summary is the extractive summary of a session or a document.
type Summary struct {
	Kind     string   `json:"kind"`              // "session" or "document"
	ID       string   `json:"id"`                // session id or document id
	Session  string   `json:"session,omitempty"` // documents: the session of the first chunk
	Text     string   `json:"text"`              // key sentences in original order
	KeyTerms []string `json:"key_terms"`         // heaviest content words
	First    int64    `json:"first_ms"`          // earliest content time (unix ms)
	Last     int64    `json:"last_ms"`           // latest content time (unix ms)
	Chunks   int      `json:"chunks"`            // live chunks in the group
	Tokens   int      `json:"tokens"`            // estimated tokens of Text
}

func summaryOf(s summary.Summary) Summary {
	return Summary{Kind: s.Kind, ID: s.ID, Session: s.Session, Text: s.Text, KeyTerms: s.KeyTerms, First: s.First,
		Last: s.Last, Chunks: s.Chunks, Tokens: s.Tokens}
}

// segmentView is a mirror segment as the API shows it (without
// confirmations, which need the gateway's height).
func segmentView(seg mirror.SegmentState) SegmentView {
	return SegmentView{First: seg.FirstSeq, Last: seg.LastSeq, Status: string(seg.Status), TxID: seg.TxID,
		BundleID: seg.BundleID, Height: seg.Height, Size: seg.Size, Adopted: seg.Adopted}
}
