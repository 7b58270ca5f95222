package query_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/query"
)

// TestLoCoMoShow prints, for the dev-set questions containing
// UCL_EVAL_SHOW, the top 10 of each mode with the score breakdown and
// whether each result is evidence: the tool for finding out why one mode
// loses a question another finds.
func TestLoCoMoShow(t *testing.T) {
	sub := os.Getenv("UCL_EVAL_SHOW")
	if sub == "" {
		t.Skip("set UCL_EVAL_SHOW=<part of a question> to print its rankings")
	}
	fs, qss := loadLocomo(t)
	for ci, f := range fs {
		e := f.engine(showOpts(t))
		for _, q := range qss[ci] {
			if !strings.Contains(q.q, sub) {
				continue
			}
			t.Logf("conv%d c%d %q evidence %v", ci, q.cat, q.q, q.evidence)
			for _, m := range []query.Mode{query.ModeHybrid, query.ModeBM25, query.ModeVector} {
				resp, err := e.Search(context.Background(), query.Request{Text: q.q, K: 10, Now: q.now, Mode: m, Explain: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("  %s (search text %q)", m, resp.SearchText)
				for i, r := range resp.Results {
					mark := " "
					if q.evidence[r.Meta["dia_id"]] {
						mark = "*"
					}
					x := r.Explain
					t.Logf("   %s%2d %-7s b%d/%.2f a%d/%.3f rel=%.3f nb=%.3f ss=%.2f fin=%.3f %.90s", mark, i+1, r.Meta["dia_id"],
						x.BM25Rank, x.BM25Score, x.ANNRank, x.ANNScore, x.RRF, x.Neighbour, x.SessionSc, x.Final, r.Content)
					if x.Temporal != 1 {
						t.Logf("      temporal %.2f mentioned %v", x.Temporal, x.Mentioned)
					}
				}
			}
		}
	}
}

func showOpts(t *testing.T) query.Options {
	var opts query.Options
	if env := os.Getenv("UCL_EVAL_OPTS"); env != "" {
		if err := json.Unmarshal([]byte(env), &opts); err != nil {
			t.Fatalf("UCL_EVAL_OPTS: %v", err)
		}
	}
	return opts
}
