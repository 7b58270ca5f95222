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

// ToolIn makes a uc_store call a tool call.
type ToolIn struct {
	Name   string `json:"name"`
	Args   any    `json:"args,omitempty" jsonschema:"any JSON value"`
	Status string `json:"status,omitempty" jsonschema:"ok, error, pending, ..."`
}

// ToolOut is a tool call as items show it.
type ToolOut struct {
	Name   string `json:"name"`
	Args   string `json:"args,omitempty"`
	Status string `json:"status,omitempty"`
}

// EditIn are the arguments of uc_edit.
type EditIn struct {
	ID      string            `json:"id"`
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta,omitempty" jsonschema:"replaces the meta; omit to keep it"`
	Status  string            `json:"status,omitempty" jsonschema:"a tool call's new status"`
}

// EditOut is the result of uc_edit.
type EditOut struct {
	ID   string   `json:"id"`
	Seqs []uint64 `json:"seqs"`
	Prev uint64   `json:"prev_seq"`
}

// Version is one version of an item.
type Version struct {
	Seq     uint64            `json:"seq"`
	Time    string            `json:"time"`
	By      string            `json:"by,omitempty"`
	Edit    bool              `json:"edit"`
	Current bool              `json:"current,omitempty"`
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta,omitempty"`
	// Size is the whole content's length when Content was cut to bound
	// the result (uc_get with offset reads the current version on).
	Size int `json:"size,omitempty"`
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

// fitVersions cuts the versions' contents to about budget bytes in all,
// each to an equal share at least.
func fitVersions(hs []ItemHistory, budget int) {
	n := 0
	for _, h := range hs {
		n += len(h.Versions)
	}
	if n == 0 {
		return
	}
	share := max(budget/n-itemOverhead, minContent)
	for i := range hs {
		for j := range hs[i].Versions {
			v := &hs[i].Versions[j]
			if len(v.Content) > share {
				v.Size = len(v.Content)
				v.Content = v.Content[:cutAt(v.Content, share)]
			}
		}
	}
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
			cut := ""
			if v.Size > 0 {
				cut = fmt.Sprintf("\n[cut at byte %d of %d]", len(v.Content), v.Size)
			}
			fmt.Fprintf(&b, "v%d [%s] %s by %s seq=%d%s\n%s%s\n\n", i+1, v.Time, what, orDash(v.By), v.Seq, cur, v.Content, cut)
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
	// Keep the anchor in a chain longer than the result bound: fit from
	// it onwards, then what precedes it in the room left.
	at := 0
	for i, it := range out.Items {
		if it.ID == in.ID {
			at = i
		}
	}
	var b strings.Builder
	tail := out.Items[at:]
	tail = tail[:fitItems(tail, itemsBudget)]
	used := 0
	for _, it := range tail {
		used += itemOverhead + len(it.Content)
	}
	head := out.Items[:at]
	keep := 0
	for keep < len(head) && used+itemOverhead+len(head[len(head)-1-keep].Content) <= itemsBudget {
		used += itemOverhead + len(head[len(head)-1-keep].Content)
		keep++
	}
	out.More = len(out.Items) - keep - len(tail)
	out.Items = append(append([]Item{}, head[len(head)-keep:]...), tail...)
	if out.More > 0 {
		fmt.Fprintf(&b, "[%d item(s) of this thread did not fit this result: ask for a smaller depth, or uc_get_thread on the first or last item shown]\n", out.More)
	}
	b.WriteString(renderItems(out.Items))
	return textResult(b.String()), out, nil
}
