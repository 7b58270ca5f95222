package query_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/query"
)

func loadEval(t testing.TB) (*fixture, []query.Question) {
	t.Helper()
	evs := loadLog(t, filepath.Join("testdata", "eval", "turns.jsonl"))
	f := newFixture(t, t.TempDir())
	f.apply(t, evs)
	fh, err := os.Open(filepath.Join("testdata", "eval", "questions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	qs, err := query.ReadQuestions(fh)
	if err != nil {
		t.Fatal(err)
	}
	return f, qs
}

// TestEvaluate runs the hand-made evaluation set through the real log and
// projections and checks that fusion is at least as good as either channel.
func TestEvaluate(t *testing.T) {
	f, qs := loadEval(t)
	if len(qs) < 25 {
		t.Fatalf("only %d questions", len(qs))
	}
	rep, err := query.Evaluate(context.Background(), f.engine(query.Options{}), qs, query.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Modes {
		t.Logf("%-7s hit@1 %.3f  hit@5 %.3f  hit@10 %.3f  MRR %.3f  recall@%d %.3f", m.Mode, m.Hit1, m.Hit5, m.Hit10, m.MRR, rep.K, m.Recall)
	}
	for i, q := range qs {
		var ranks []string
		for _, m := range rep.Modes {
			ranks = append(ranks, string(m.Mode)+"="+itoa(m.Ranks[i]))
		}
		t.Logf("q%02d %-55.55q %s", i+1, q.Q, strings.Join(ranks, " "))
	}
	h := rep.Mode(query.ModeHybrid)
	for _, m := range []query.Mode{query.ModeBM25, query.ModeVector} {
		if s := rep.Mode(m); h.MRR < s.MRR {
			t.Errorf("hybrid MRR %.3f < %s MRR %.3f", h.MRR, m, s.MRR)
		}
	}
	// A floor far below what the set gives, to catch a broken pipeline.
	if h.Hit10 < 0.5 {
		t.Errorf("hybrid hit@10 %.3f: retrieval is broken", h.Hit10)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "-"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
