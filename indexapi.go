package ucl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl/index"
	"github.com/unlimitedcontext/ucl/projections/projstd"
	"github.com/unlimitedcontext/ucl/query"
)

// IndexRequest asks for a navigable map of the store (no Query) or of the
// items matching Query.
type IndexRequest struct {
	// Query selects the items whose text matches (full-text, any term;
	// time phrases such as "last week" become a time filter). Empty: every
	// live item.
	Query    string   `json:"query,omitempty"`
	Budget   int      `json:"budget,omitempty"` // tokens of Text (0: DefaultBudget; at least index.MinBudget)
	Now      string   `json:"now,omitempty"`    // reference time (default: now)
	Sessions []string `json:"sessions,omitempty"`
	Kinds    []string `json:"kinds,omitempty"`
	Since    string   `json:"since,omitempty"`
	Until    string   `json:"until,omitempty"`
	// Meta keeps only items whose meta holds every pair (AND).
	Meta map[string]string `json:"meta,omitempty"`
	// NoTemporal keeps time phrases in Query as words.
	NoTemporal bool     `json:"no_temporal,omitempty"`
	Progress   Progress `json:"-"`
}

// IndexResult is the index (package index): structured, and as Text under
// the budget. Each group's Open is the call that opens it as data (a
// method of Methods and its arguments); Text shows it in the engine's own
// form, METHOD {ARGS}, which a face rewrites in its syntax with
// index.Rewrite.
type IndexResult = index.Result

// Index builds a map of the store an LLM can navigate with the other
// calls, always within req.Budget tokens (index.Build says how).
func (s *Store) Index(ctx context.Context, req IndexRequest) (*IndexResult, error) {
	if req.Budget == 0 {
		req.Budget = DefaultBudget
	}
	if req.Budget < index.MinBudget {
		return nil, fmt.Errorf("index: budget %d: %w: want at least %d tokens", req.Budget, query.ErrBadBudget, index.MinBudget)
	}
	for _, k := range req.Kinds {
		switch k {
		case "conversation", "document", "knowledge", "tool_call", "profile":
		default:
			return nil, fmt.Errorf("unknown kind %q: %w", k, ErrBadRequest)
		}
	}
	if err := checkMetaFilter(req.Meta); err != nil {
		return nil, err
	}
	since, err := parseTime("since", req.Since)
	if err != nil {
		return nil, err
	}
	until, err := parseTime("until", req.Until)
	if err != nil {
		return nil, err
	}
	if since != 0 && until != 0 && until <= since {
		return nil, badRequest("empty time range")
	}
	now := time.Now().UTC()
	if req.Now != "" {
		ms, err := parseTime("now", req.Now)
		if err != nil {
			return nil, err
		}
		now = time.UnixMilli(ms).UTC()
	}
	text := strings.TrimSpace(req.Query)
	empty := false // the time phrases leave no window
	if text != "" && !req.NoTemporal {
		if t := query.ParseTemporal(text, now); len(t.Matches) > 0 {
			text = t.Text
			if t.Since != 0 && t.Since > since {
				since = t.Since
			}
			if t.Until != 0 && (until == 0 || t.Until < until) {
				until = t.Until
			}
			empty = since != 0 && until != 0 && until <= since
		}
	}
	ir := index.Request{Query: req.Query, Text: text, Empty: empty, Sessions: req.Sessions, Kinds: req.Kinds,
		Since: since, Until: until, Meta: req.Meta, Now: now, NowArg: req.Now, Budget: req.Budget}
	var res *IndexResult
	err = s.readProj(ctx, req.Progress, func(set *projstd.Set, _ bool) error {
		var err error
		res, err = index.Build(ctx, set, ir)
		return err
	})
	return res, err
}
