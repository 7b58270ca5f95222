package query_test

import (
	"context"
	"errors"
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

func TestReadQuestionsRejects(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"not json", "{q:"},
		{"unknown field", `{"q":"x","now":"2023-05-08T00:00:00Z","evidence":["e1"],"extra":1}`},
		{"no evidence", `{"q":"x","now":"2023-05-08T00:00:00Z","evidence":[]}`},
		{"empty q", `{"q":" ","now":"2023-05-08T00:00:00Z","evidence":["e1"]}`},
		{"bad now", `{"q":"x","now":"yesterday","evidence":["e1"]}`},
		{"two values", `{"q":"x","now":"2023-05-08T00:00:00Z","evidence":["e1"]} {}`},
	} {
		if _, err := query.ReadQuestions(strings.NewReader(tc.in)); !errors.Is(err, query.ErrBadQuestion) {
			t.Errorf("%s: got %v, want ErrBadQuestion", tc.name, err)
		}
	}
	qs, err := query.ReadQuestions(strings.NewReader("# comment\n\n" + `{"q":"x","now":"2023-05-08T00:00:00Z","evidence":["e1"]}` + "\n"))
	if err != nil || len(qs) != 1 || qs[0].Evidence[0] != "e1" {
		t.Errorf("good input: %v %+v", err, qs)
	}
}

func FuzzReadQuestions(f *testing.F) {
	f.Add(`{"q":"x","now":"2023-05-08T00:00:00Z","evidence":["e1"]}`)
	f.Add(`{"q":"what did I decide last week","now":"2023-06-14T09:00:00Z","evidence":["e041","e039"],"note":"time"}` + "\n# c\n")
	f.Add(`{"q":1}`)
	f.Add("\xff\n{")
	f.Fuzz(func(t *testing.T, in string) {
		qs, err := query.ReadQuestions(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, query.ErrBadQuestion) && !strings.Contains(err.Error(), "read questions") {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		for _, q := range qs {
			if strings.TrimSpace(q.Q) == "" || len(q.Evidence) == 0 {
				t.Fatalf("accepted invalid question %+v", q)
			}
		}
	})
}

// TestEvaluateMetrics checks the metric arithmetic on a tiny store where
// the ranks are known.
func TestEvaluateMetrics(t *testing.T) {
	f := smallFixture(t)
	qs := []query.Question{
		{Q: "billing database migrate postgres", Now: "2023-06-08T00:00:00Z", Evidence: []string{"a1"}},
		{Q: "billing database migrate postgres", Now: "2023-06-08T00:00:00Z", Evidence: []string{"nope"}},
	}
	rep, err := query.Evaluate(context.Background(), f.engine(query.Options{}), qs, query.EvalOptions{Modes: []query.Mode{query.ModeBM25}})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Mode(query.ModeBM25)
	if m.Ranks[0] != 1 || m.Ranks[1] != 0 || m.Hit1 != 0.5 || m.Hit10 != 0.5 || m.MRR != 0.5 || m.Recall != 0.5 {
		t.Errorf("report %+v", m)
	}
	if _, err := query.Evaluate(context.Background(), f.engine(query.Options{}), []query.Question{{Q: "x", Now: "bad", Evidence: []string{"a"}}}, query.EvalOptions{}); err == nil {
		t.Error("bad now accepted")
	}
}
