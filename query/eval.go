package query

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrBadQuestion is returned (wrapped) by ReadQuestions for a line that is
// not a valid question.
var ErrBadQuestion = errors.New("query: bad evaluation question")

// Question is one retrieval evaluation question (one JSONL line):
//
//	{"q":"…","now":"2023-06-12T09:00:00Z","evidence":["eid…"],"session":"…"}
//
// Evidence names chunks by the value of their meta key (EvalOptions.IDKey,
// default "eid"). Session, when set, is the active session.
type Question struct {
	Q        string   `json:"q"`
	Now      string   `json:"now"`
	Evidence []string `json:"evidence"`
	Session  string   `json:"session,omitempty"`
	Note     string   `json:"note,omitempty"` // free text, e.g. what the question exercises
}

// ReadQuestions parses JSONL questions (blank lines and lines starting
// with '#' are skipped). Every question needs text, a parseable now (RFC
// 3339) and at least one evidence id.
func ReadQuestions(r io.Reader) ([]Question, error) {
	var out []Question
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var q Question
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("read question line %d: %w: %v", line, ErrBadQuestion, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("read question line %d: %w: more than one JSON value", line, ErrBadQuestion)
		}
		if strings.TrimSpace(q.Q) == "" || len(q.Evidence) == 0 {
			return nil, fmt.Errorf("read question line %d: %w: needs q and evidence", line, ErrBadQuestion)
		}
		if _, err := time.Parse(time.RFC3339, q.Now); err != nil {
			return nil, fmt.Errorf("read question line %d: %w: now: %v", line, ErrBadQuestion, err)
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read questions: %w", err)
	}
	return out, nil
}

// EvalOptions tune Evaluate.
type EvalOptions struct {
	Modes []Mode // default hybrid, bm25, vector
	K     int    // results per question (default 10)
	IDKey string // meta key naming evidence (default "eid")
}

// ModeReport is the score of one mode over every question.
type ModeReport struct {
	Mode      Mode    `json:"mode"`
	Questions int     `json:"questions"`
	Hit1      float64 `json:"hit@1"`  // share of questions with evidence at rank 1
	Hit5      float64 `json:"hit@5"`  // ... within the top 5
	Hit10     float64 `json:"hit@10"` // ... within the top 10 (top K if K < 10)
	MRR       float64 `json:"mrr"`    // mean of 1/rank of the first evidence (0 if absent from the top K)
	Recall    float64 `json:"recall"` // mean share of a question's evidence found in the top K
	// Ranks is, per question in input order, the rank of the first
	// evidence (0: not found).
	Ranks []int `json:"ranks"`
}

// Report is the result of Evaluate.
type Report struct {
	K     int          `json:"k"`
	Modes []ModeReport `json:"modes"`
}

// Mode returns the report of mode m (zero if it was not run).
func (r Report) Mode(m Mode) ModeReport {
	for _, x := range r.Modes {
		if x.Mode == m {
			return x
		}
	}
	return ModeReport{}
}

// Evaluate runs every question in every mode and scores where the evidence
// lands. Questions are answered with their own Now, so time phrases in them
// resolve as they would have when asked.
func Evaluate(ctx context.Context, e *Engine, qs []Question, opts EvalOptions) (Report, error) {
	if len(opts.Modes) == 0 {
		opts.Modes = []Mode{ModeHybrid, ModeBM25, ModeVector}
	}
	if opts.K <= 0 {
		opts.K = 10
	}
	if opts.IDKey == "" {
		opts.IDKey = "eid"
	}
	rep := Report{K: opts.K}
	for _, m := range opts.Modes {
		mr := ModeReport{Mode: m, Questions: len(qs), Ranks: make([]int, len(qs))}
		for i, q := range qs {
			now, err := time.Parse(time.RFC3339, q.Now)
			if err != nil {
				return Report{}, fmt.Errorf("evaluate question %d: now: %w", i+1, ErrBadTimeRange)
			}
			resp, err := e.Search(ctx, Request{Text: q.Q, K: opts.K, Now: now, Mode: m, Session: q.Session})
			if err != nil {
				return Report{}, fmt.Errorf("evaluate question %d (%s): %w", i+1, m, err)
			}
			want := map[string]bool{}
			for _, id := range q.Evidence {
				want[id] = true
			}
			found := map[string]bool{}
			for rank, r := range resp.Results {
				id := r.Meta[opts.IDKey]
				if !want[id] {
					continue
				}
				if mr.Ranks[i] == 0 {
					mr.Ranks[i] = rank + 1
				}
				found[id] = true
			}
			if rk := mr.Ranks[i]; rk > 0 {
				mr.MRR += 1 / float64(rk)
				if rk <= 1 {
					mr.Hit1++
				}
				if rk <= 5 {
					mr.Hit5++
				}
				if rk <= 10 {
					mr.Hit10++
				}
			}
			mr.Recall += float64(len(found)) / float64(len(want))
		}
		if n := float64(len(qs)); n > 0 {
			mr.Hit1 /= n
			mr.Hit5 /= n
			mr.Hit10 /= n
			mr.MRR /= n
			mr.Recall /= n
		}
		rep.Modes = append(rep.Modes, mr)
	}
	return rep, nil
}
