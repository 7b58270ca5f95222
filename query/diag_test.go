package query_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/query"
)

func TestLoCoMoDiag(t *testing.T) {
	if os.Getenv("UCL_DIAG") == "" {
		t.Skip()
	}
	fs, qss := loadLocomo(t)
	ctx := context.Background()
	hist := map[string]int{}
	for ci, f := range fs {
		e := f.engine(query.Options{})
		for _, q := range qss[ci] {
			rk := map[query.Mode]int{}
			for _, m := range []query.Mode{query.ModeBM25, query.ModeVector, query.ModeHybrid} {
				resp, err := e.Search(ctx, query.Request{Text: q.q, K: 200, Now: q.now, Mode: m, Explain: true})
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range resp.Results {
					if q.evidence[r.Meta["dia_id"]] {
						rk[m] = i + 1
						break
					}
				}
				if m == query.ModeHybrid && len(resp.Temporal) > 0 {
					t.Logf("TEMPORAL %q -> %+v evrank=%d", q.q, resp.Temporal, rk[m])
				}
			}
			b := func(r int) string {
				switch {
				case r == 0:
					return "none"
				case r <= 10:
					return "top10"
				case r <= 50:
					return "top50"
				}
				return "top200"
			}
			hist["bm25:"+b(rk[query.ModeBM25])+" vec:"+b(rk[query.ModeVector])+" hyb:"+b(rk[query.ModeHybrid])]++
			if os.Getenv("UCL_DIAG_V") != "" && rk[query.ModeHybrid] > 10 || rk[query.ModeHybrid] == 0 {
				var ev []string
				for k := range q.evidence {
					ev = append(ev, k)
				}
				t.Logf("c%d bm25=%d vec=%d hyb=%d %q ev=%s", q.cat, rk[query.ModeBM25], rk[query.ModeVector], rk[query.ModeHybrid], q.q, strings.Join(ev, ","))
			}
		}
	}
	for k, v := range hist {
		t.Logf("%4d %s", v, k)
	}
}

func TestLoCoMoGrid(t *testing.T) {
	if os.Getenv("UCL_GRID") == "" {
		t.Skip()
	}
	fs, qss := loadLocomo(t)
	hf, hqs := loadEval(t)
	type v struct {
		name string
		o    query.Options
	}
	var vs []v
	for _, rw := range []float64{0, 0.7, 0.9, 1.0} {
		for _, qd := range []float64{0, 0.7, 0.5} {
			o := query.Options{SessionWeight: 0.5, NeighbourSpan: 2, ReplyWeight: rw, QuestionDamp: qd}
			vs = append(vs, v{fmt.Sprintf("rw%.1f qd%.1f", rw, qd), o})
		}
	}
	for _, x := range vs {
		s := scoreLocomo(t, fs, qss, x.o, query.ModeHybrid, nil)
		rep, err := query.Evaluate(context.Background(), hf.engine(x.o), hqs, query.EvalOptions{Modes: []query.Mode{query.ModeHybrid}})
		if err != nil {
			t.Fatal(err)
		}
		h := rep.Mode(query.ModeHybrid)
		t.Logf("%-14s %s | hand hit@10=%.3f mrr=%.3f", x.name, s, h.Hit10, h.MRR)
		if os.Getenv("UCL_GRID_ALL") != "" {
			for _, m := range []query.Mode{query.ModeBM25, query.ModeVector} {
				s := scoreLocomo(t, fs, qss, x.o, m, nil)
				rep, err := query.Evaluate(context.Background(), hf.engine(x.o), hqs, query.EvalOptions{Modes: []query.Mode{m}})
				if err != nil {
					t.Fatal(err)
				}
				h := rep.Mode(m)
				t.Logf("  %-12s %s | hand hit@10=%.3f mrr=%.3f", m, s, h.Hit10, h.MRR)
			}
		}
	}
}

func TestLoCoMoTop(t *testing.T) {
	if os.Getenv("UCL_TOP") == "" {
		t.Skip()
	}
	fs, qss := loadLocomo(t)
	o := query.Options{SessionWeight: 0.5, NeighbourSpan: 2}
	n := 0
	for ci, f := range fs {
		e := f.engine(o)
		for _, q := range qss[ci] {
			resp, err := e.Search(context.Background(), query.Request{Text: q.q, K: 10, Now: q.now, Explain: true})
			if err != nil {
				t.Fatal(err)
			}
			rk := 0
			for i, r := range resp.Results {
				if q.evidence[r.Meta["dia_id"]] {
					rk = i + 1
					break
				}
			}
			if rk < 2 || rk > 5 || n > 40 {
				continue
			}
			n++
			t.Logf("Q %q rank %d", q.q, rk)
			for i, r := range resp.Results[:rk] {
				x := r.Explain
				mark := " "
				if i == rk-1 {
					mark = "*"
				}
				t.Logf("  %s %s b%d/%.2f a%d/%.2f rel%.2f nb%.2f s%.2f f%.2f %.110q", mark, r.Meta["dia_id"], x.BM25Rank, x.BM25Score, x.ANNRank, x.ANNScore, x.RRF, x.Neighbour, x.SessionSc, x.Final, r.Content)
			}
		}
	}
}
