package httpapi

import (
	"encoding/json"
	"maps"
	"strings"
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
