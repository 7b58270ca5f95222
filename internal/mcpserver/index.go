package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/index"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/query"
)

// IndexIn are the arguments of uc_index.
type IndexIn struct {
	Query    string            `json:"query,omitempty" jsonschema:"words to match (any); empty: everything"`
	Budget   int               `json:"budget,omitempty" jsonschema:"tokens, 100 to 100000 (default 4000)"`
	Sessions []string          `json:"sessions,omitempty" jsonschema:"only these sessions"`
	Kinds    []string          `json:"kinds,omitempty" jsonschema:"only these kinds"`
	Since    string            `json:"since,omitempty" jsonschema:"content time from"`
	Until    string            `json:"until,omitempty" jsonschema:"content time before"`
	Now      string            `json:"now,omitempty" jsonschema:"reference time (default now)"`
	Meta     map[string]string `json:"meta,omitempty"`
}

// IndexOut is the result of uc_index: the structure of the text answer.
type IndexOut struct {
	Matches  int            `json:"matches" jsonschema:"items matching"`
	Capped   bool           `json:"capped,omitempty" jsonschema:"true when matches is a lower bound"`
	Overview index.Overview `json:"overview" jsonschema:"matches by content time: after now, today, earlier this week, earlier this month, older"`
	Items    []index.Item   `json:"items" jsonschema:"matches shown in full"`
	Snippets []index.Item   `json:"snippets" jsonschema:"matches shown as snippets (uc_get opens one)"`
	Sessions []IndexGroup   `json:"sessions" jsonschema:"session groups; open is the call that opens one"`
	Months   []IndexGroup   `json:"months"`
	Topics   []IndexGroup   `json:"topics"`
	Omitted  index.Omitted  `json:"omitted" jsonschema:"what matched but did not fit the budget"`
	Tokens   int            `json:"tokens" jsonschema:"estimated tokens of the text answer"`
}

// IndexGroup is a group of uc_index's answer: the engine's group (package
// index) with the call that opens it as an MCP tool call.
type IndexGroup struct {
	Key      string   `json:"key"`
	Label    string   `json:"label,omitempty"`
	Matches  int      `json:"matches"`
	Sessions int      `json:"sessions,omitempty"`
	First    string   `json:"first"`
	Last     string   `json:"last"`
	Summary  string   `json:"summary,omitempty"`
	IDs      []string `json:"session_ids,omitempty"`
	Open     ToolCall `json:"open"`
}

// ToolCall is a call of one of this server's tools.
type ToolCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// String is the call as the text answers show it: the tool's name and its
// arguments as JSON.
func (c ToolCall) String() string { return c.Tool + " " + mustCompactJSON(c.Arguments) }

// linkArgs renames, per tool, the engine request fields a link carries to
// the tool's own argument names (the others are the same).
var linkArgs = map[string]map[string]string{
	"uc_get_session": {"id": "session"},
}

// toolCall renders an index link (an engine method and its request's
// fields) as the call of the tool that exposes that method.
func toolCall(l index.Link) ToolCall {
	m, ok := ucl.MethodByName(l.Method)
	if !ok || m.Tool == "" {
		// Every link names a method with a tool (TestIndexLinksAreToolCalls);
		// an unknown one is shown as the engine gives it.
		return ToolCall{Tool: l.Method, Arguments: l.Args}
	}
	args := make(map[string]any, len(l.Args))
	for k, v := range l.Args {
		if to, ok := linkArgs[m.Tool][k]; ok {
			k = to
		}
		args[k] = v
	}
	return ToolCall{Tool: m.Tool, Arguments: args}
}

func indexGroups(gs []index.Group) []IndexGroup {
	out := make([]IndexGroup, len(gs))
	for i, g := range gs {
		out[i] = IndexGroup{Key: g.Key, Label: g.Label, Matches: g.Matches, Sessions: g.Sessions, First: g.First, Last: g.Last,
			Summary: g.Summary, IDs: g.IDs, Open: toolCall(g.Open)}
	}
	return out
}

// maxIndexBudget bounds one uc_index answer.
const maxIndexBudget = 100_000

func (s *server) toolIndex(ctx context.Context, _ *mcp.CallToolRequest, in IndexIn) (*mcp.CallToolResult, IndexOut, error) {
	var out IndexOut
	budget, err := checkRange("budget", in.Budget, ucl.DefaultBudget, maxIndexBudget)
	if err != nil {
		return nil, out, err
	}
	if budget < index.MinBudget {
		return nil, out, badArg("budget", "must be at least %d tokens, got %d", index.MinBudget, budget)
	}
	if err := checkKinds(in.Kinds); err != nil {
		return nil, out, err
	}
	since, until, err := checkSpan("since", in.Since, "until", in.Until)
	if err != nil {
		return nil, out, err
	}
	now := in.Now
	if now == "" {
		now = s.now()
	} else if _, err := ingest.ParseTime(now); err != nil {
		return nil, out, badArg("now", "%v", err)
	}
	res, err := s.eng.Index(ctx, ucl.IndexRequest{Query: in.Query, Budget: budget, Sessions: in.Sessions, Kinds: in.Kinds,
		Since: since, Until: until, Now: now, Meta: in.Meta})
	if errors.Is(err, query.ErrBadBudget) {
		return nil, out, badArg("budget", "%v", err)
	}
	if err != nil {
		return nil, out, engineErr("index", err)
	}
	index.Rewrite(res, func(l index.Link) string { return toolCall(l).String() })
	out = IndexOut{Matches: res.Matches, Capped: res.Capped, Overview: res.Overview, Items: res.Items, Snippets: res.Snippets,
		Sessions: indexGroups(res.Sessions), Months: indexGroups(res.Months), Topics: indexGroups(res.Topics), Omitted: res.Omitted, Tokens: res.Tokens}
	return textResult(res.Text), out, nil
}
