package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

const descEdit = `Correct or update a stored item: replace its content (and, if given, its meta) with a new version. Every search, context and read then sees the new version only; the earlier ones stay in the log and uc_get with history lists them with their time and author. A document or long tool result is edited as a whole by its id (the chunk_parent of its chunks), never chunk by chunk. A forgotten item cannot be edited. When a fact changed in the world (not a typo), prefer uc_store with supersedes, which keeps both.`

// ToolIn makes a uc_store call a tool call.
type ToolIn struct {
	Name   string `json:"name" jsonschema:"the tool's name"`
	Args   any    `json:"args,omitempty" jsonschema:"the call's arguments (any JSON value)"`
	Status string `json:"status,omitempty" jsonschema:"ok, error, pending, ..."`
}

// ToolOut is a tool call as items show it.
type ToolOut struct {
	Name   string `json:"name"`
	Args   string `json:"args,omitempty" jsonschema:"the arguments as JSON text"`
	Status string `json:"status,omitempty"`
}

// EditIn are the arguments of uc_edit.
type EditIn struct {
	ID      string            `json:"id" jsonschema:"the item's id (a document's id for a document)"`
	Content string            `json:"content" jsonschema:"the new content"`
	Meta    map[string]string `json:"meta,omitempty" jsonschema:"new meta (replaces the old meta); omit to keep it"`
	Status  string            `json:"status,omitempty" jsonschema:"for a tool call: its new status (ok, error); give its result as content"`
}

// EditOut is the result of uc_edit.
type EditOut struct {
	ID   string   `json:"id"`
	Seqs []uint64 `json:"seqs" jsonschema:"log sequence numbers of the new version, one per chunk"`
	Prev uint64   `json:"prev_seq" jsonschema:"sequence number of the version replaced"`
}

// Version is one version of an item.
type Version struct {
	Seq     uint64            `json:"seq"`
	Time    string            `json:"time" jsonschema:"when this version was written"`
	By      string            `json:"by,omitempty" jsonschema:"who wrote it: the editor, or the role of the original"`
	Edit    bool              `json:"edit"`
	Current bool              `json:"current,omitempty"`
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta,omitempty"`
}

// ItemHistory lists an item's versions, oldest first.
type ItemHistory struct {
	ID       string    `json:"id"`
	Versions []Version `json:"versions"`
}

func toolCallOf(in *ToolIn) (*log.ToolCall, error) {
	if in == nil {
		return nil, nil
	}
	tc := &log.ToolCall{Name: in.Name, Status: in.Status}
	if in.Args != nil {
		b, err := json.Marshal(in.Args)
		if err != nil {
			return nil, badArg("tool.args", "cannot be written as JSON: %v", err)
		}
		tc.Args = string(b)
	}
	return tc, nil
}

func toolOutOf(t *log.ToolCall) *ToolOut {
	if t == nil {
		return nil
	}
	return &ToolOut{Name: t.Name, Args: t.Args, Status: t.Status}
}

func compactJSON(s string) string {
	if s == "" {
		return "-"
	}
	return snippet(s, 200)
}

// convErr maps the conversation-model sentinels to the tool errors.
func convErr(what, id string, err error) error {
	switch {
	case errors.Is(err, ucl.ErrUnknownItem):
		return fmt.Errorf("%w: no item with id %q (never stored, or forgotten)", ErrNotFound, id)
	case errors.Is(err, ucl.ErrTombstoned):
		return fmt.Errorf("%w: item %q was forgotten: no version of it can be shown or edited", ErrNotFound, id)
	case errors.Is(err, ucl.ErrEditChunk):
		return fmt.Errorf("%w: %v", ErrBadArgument, err)
	}
	return engineErr(what, err)
}

func (s *server) toolEdit(ctx context.Context, _ *mcp.CallToolRequest, in EditIn) (*mcp.CallToolResult, EditOut, error) {
	var out EditOut
	if strings.TrimSpace(in.ID) == "" {
		return nil, out, badArg("id", "is empty")
	}
	if strings.TrimSpace(in.Content) == "" {
		return nil, out, badArg("content", "is empty: give the new text")
	}
	if len(in.Content) > maxContentSize {
		return nil, out, badArg("content", "is %d bytes; one call takes at most %d", len(in.Content), maxContentSize)
	}
	res, err := s.eng.Edit(ctx, ucl.EditRequest{ID: in.ID, Content: in.Content, Meta: in.Meta, By: "mcp", Status: in.Status})
	if err != nil {
		return nil, out, convErr("edit", in.ID, err)
	}
	out = EditOut{ID: res.ID, Prev: res.Prev}
	for _, r := range res.Results {
		out.Seqs = append(out.Seqs, r.Seq)
	}
	return textResult(fmt.Sprintf("edited %s: new version at seq %d (the previous one, seq %d, stays in its history).\n", res.ID, out.Seqs[0], res.Prev)), out, nil
}

func (s *server) histories(ctx context.Context, ids []string) ([]ItemHistory, error) {
	res, err := s.eng.Get(ctx, ucl.GetRequest{IDs: ids, History: true})
	if err != nil {
		return nil, engineErr("get history", err)
	}
	var out []ItemHistory
	for _, it := range res.Items {
		h := ItemHistory{ID: it.ID, Versions: []Version{}}
		for _, v := range it.History {
			h.Versions = append(h.Versions, Version{Seq: v.Seq, Time: v.Time, By: v.By, Edit: v.Edit, Current: v.Current, Content: v.Content, Meta: v.Meta})
		}
		out = append(out, h)
	}
	return out, nil
}

func renderHistories(hs []ItemHistory) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "history of %s (%d versions, oldest first):\n", h.ID, len(h.Versions))
		for i, v := range h.Versions {
			what := "stored"
			if v.Edit {
				what = "edited"
			}
			cur := ""
			if v.Current {
				cur = " (current)"
			}
			fmt.Fprintf(&b, "v%d [%s] %s by %s seq=%d%s\n%s\n\n", i+1, v.Time, what, orDash(v.By), v.Seq, cur, v.Content)
		}
	}
	return b.String()
}

// ---- uc_get_thread

func (s *server) toolThread(ctx context.Context, _ *mcp.CallToolRequest, in ThreadIn) (*mcp.CallToolResult, ThreadOut, error) {
	var out ThreadOut
	if strings.TrimSpace(in.ID) == "" {
		return nil, out, badArg("id", "is empty")
	}
	depth, err := checkRange("depth", in.Depth, DefaultDepth, MaxDepth)
	if err != nil {
		return nil, out, err
	}
	res, err := s.eng.Thread(ctx, ucl.ThreadRequest{ID: in.ID, Depth: depth})
	if err != nil {
		return nil, out, convErr("get thread", in.ID, err)
	}
	out = ThreadOut{Anchor: in.ID, Items: make([]Item, len(res.Items))}
	for i, it := range res.Items {
		out.Items[i] = itemOf(it.Item)
	}
	return textResult(renderItems(out.Items)), out, nil
}

// Edit implements Engine.
func (s *Shared) Edit(ctx context.Context, req ucl.EditRequest) (*ucl.EditResult, error) {
	return via(s, func(a ucl.API) (*ucl.EditResult, error) { return a.Edit(ctx, req) })
}

// Thread implements Engine.
func (s *Shared) Thread(ctx context.Context, req ucl.ThreadRequest) (*ucl.ThreadResult, error) {
	return via(s, func(a ucl.API) (*ucl.ThreadResult, error) { return a.Thread(ctx, req) })
}
