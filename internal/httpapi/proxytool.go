package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"

	"github.com/unlimitedcontext/ucl"
)

// toolLine is an assistant's tool call as an ingest tool_call line: the
// one shape every front end writes (name, args, status; the result comes
// later, in the client's next request, so the call is stored pending).
type toolLine struct {
	Type    string            `json:"type"`
	Session string            `json:"session"`
	Role    string            `json:"role"`
	Name    string            `json:"name"`
	Args    json.RawMessage   `json:"args,omitempty"`
	Status  string            `json:"status"`
	ID      string            `json:"id"`
	ChunkID string            `json:"chunk_id"`
	Parent  string            `json:"parent,omitempty"`
	Meta    map[string]string `json:"meta"`
}

// unnamedTool names a call the upstream sent without a name: storing the
// exchange must not fail on it, and the line must still be a valid call.
const unnamedTool = "(unnamed)"

func toolCallLine(session, id, parent string, tc *toolCall, meta map[string]string) (toolLine, error) {
	l := toolLine{Type: "tool_call", Session: session, Role: "assistant", Name: tc.Function.Name, Status: "pending",
		ID: id, ChunkID: id, Parent: parent, Meta: maps.Clone(meta)}
	if strings.TrimSpace(l.Name) == "" {
		l.Name = unnamedTool
	}
	if tc.ID != "" {
		l.Meta["tool_call_id"] = tc.ID
	}
	switch args := tc.Function.Arguments; {
	case max(len(args), tc.argsTotal) > maxStoredArgs:
		// Cut (a plain reply's; a stream's are cut as they arrive, and
		// then are not JSON either): kept as a JSON string, like a
		// cut-off one.
		b, err := json.Marshal(bounded(args, tc.argsTotal, maxStoredArgs))
		if err != nil {
			return l, err
		}
		l.Args = b
	case strings.TrimSpace(args) == "":
	case json.Valid([]byte(args)):
		l.Args = json.RawMessage(args)
	default:
		// A cut-off or malformed argument string is kept as a JSON string.
		b, err := json.Marshal(args)
		if err != nil {
			return l, err
		}
		l.Args = b
	}
	return l, nil
}

type toolResult struct{ callID, text string }

// toolItemID is the item id of a tool call the upstream named callID in a
// session: the same on every request, so the result that arrives in a
// later request finds its call.
func toolItemID(session, callID string) string {
	h := sha256.Sum256([]byte("ucl proxy tool call\x00" + session + "\x00" + callID))
	return "t-" + hex.EncodeToString(h[:12])
}

// completeToolCalls gives every stored call that is still pending the
// result the client sent back (an edit: the pending version stays in the
// history). Clients resend the whole conversation, so a call already
// completed is left alone. A failure is logged; the reply is not affected.
func (s *Server) completeToolCalls(ctx context.Context, ex *exchange) {
	if len(ex.results) == 0 {
		return
	}
	ids := make([]string, len(ex.results))
	for i, r := range ex.results {
		ids[i] = toolItemID(ex.session, r.callID)
	}
	got, err := s.api.Get(ctx, ucl.GetRequest{IDs: ids})
	if err != nil {
		s.log.Error("read tool calls", "session", ex.session, "err", err)
		return
	}
	for i, it := range got.Items {
		if !it.Found || len(it.Chunks) == 0 || it.Chunks[0].Tool == nil || it.Chunks[0].Tool.Status != "pending" {
			continue
		}
		_, err := s.api.Edit(ctx, ucl.EditRequest{ID: it.ID, Content: ex.results[i].text, Status: "ok", By: "ucl-proxy"})
		if err != nil {
			s.log.Error("complete tool call", "session", ex.session, "id", it.ID, "err", err)
		}
	}
}
