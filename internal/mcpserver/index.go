package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/ingest"
	"github.com/unlimitedcontext/ucl/query"
)

// IndexIn are the arguments of uc_index.
type IndexIn struct {
	Query    string   `json:"query,omitempty" jsonschema:"words to match (any); empty: everything"`
	Budget   int      `json:"budget,omitempty" jsonschema:"tokens, 100 to 100000 (default 4000)"`
	Sessions []string `json:"sessions,omitempty" jsonschema:"only these sessions"`
	Kinds    []string `json:"kinds,omitempty" jsonschema:"only these kinds"`
	Since    string   `json:"since,omitempty" jsonschema:"content time from"`
	Until    string   `json:"until,omitempty" jsonschema:"content time before"`
	Now      string   `json:"now,omitempty" jsonschema:"reference time (default now)"`
}

// IndexOut is the result of uc_index: the structure of the text answer.
type IndexOut struct {
	Matches  int               `json:"matches" jsonschema:"items matching"`
	Capped   bool              `json:"capped,omitempty" jsonschema:"true when matches is a lower bound"`
	Overview ucl.IndexOverview `json:"overview" jsonschema:"matches by content time: after now, today, earlier this week, earlier this month, older"`
	Items    []ucl.IndexItem   `json:"items" jsonschema:"matches shown in full"`
	Snippets []ucl.IndexItem   `json:"snippets" jsonschema:"matches shown as snippets (uc_get opens one)"`
	Sessions []ucl.IndexGroup  `json:"sessions" jsonschema:"session groups; open is the call that opens one"`
	Months   []ucl.IndexGroup  `json:"months"`
	Topics   []ucl.IndexGroup  `json:"topics"`
	Omitted  ucl.IndexOmitted  `json:"omitted" jsonschema:"what matched but did not fit the budget"`
	Tokens   int               `json:"tokens" jsonschema:"estimated tokens of the text answer"`
}

// maxIndexBudget bounds one uc_index answer.
const maxIndexBudget = 100_000

func (s *server) toolIndex(ctx context.Context, _ *mcp.CallToolRequest, in IndexIn) (*mcp.CallToolResult, IndexOut, error) {
	var out IndexOut
	budget, err := checkRange("budget", in.Budget, ucl.DefaultBudget, maxIndexBudget)
	if err != nil {
		return nil, out, err
	}
	if budget < ucl.MinIndexBudget {
		return nil, out, badArg("budget", "must be at least %d tokens, got %d", ucl.MinIndexBudget, budget)
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
		Since: since, Until: until, Now: now, For: "mcp"})
	if errors.Is(err, query.ErrBadBudget) {
		return nil, out, badArg("budget", "%v", err)
	}
	if err != nil {
		return nil, out, engineErr("index", err)
	}
	out = IndexOut{Matches: res.Matches, Capped: res.Capped, Overview: res.Overview, Items: res.Items, Snippets: res.Snippets,
		Sessions: res.Sessions, Months: res.Months, Topics: res.Topics, Omitted: res.Omitted, Tokens: res.Tokens}
	return textResult(res.Text), out, nil
}
