package query_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// A question whose words match little besides a name finds the turn of
// its time window: 60 shorter turns of other months match "Joanna" better
// than the turn of July that answers, so BM25's 50 candidates hold
// none of July; the window's own BM25 list brings it in, and its boost
// ranks it first; so does a turn of early August that says "last week",
// while one of August that says no time stays out. Without the window's
// list neither is returned at all.
func TestWindowCandidates(t *testing.T) {
	ms := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 10, 0, 0, 0, time.UTC).UnixMilli() }
	var bodies []log.Body
	for i := range 60 {
		bodies = append(bodies, &log.Store{
			ChunkID: fmt.Sprintf("other%02d", i), Kind: log.KindConversation, Session: fmt.Sprintf("s%d", i/6), Role: "user",
			Content: fmt.Sprintf("Joanna: nice, see you soon and take care, %d!", i), Time: ms(2022, time.Month(1+i/6%5), 1+i%6) + int64(i)*1000,
		})
	}
	bodies = append(bodies,
		&log.Store{ChunkID: "before", Kind: log.KindConversation, Session: "july", Role: "user", Content: "Nate: How was your week off? Anything fun?", Time: ms(2022, time.July, 12)},
		&log.Store{ChunkID: "answer", Kind: log.KindConversation, Session: "july", Role: "user", Content: "Joanna: Thanks Nate! I went to Woodhaven, a small town by a lake.", Time: ms(2022, time.July, 12) + 30000},
		// Stored after July, one says when in July (last week: July
		// 25-31), the other nothing.
		&log.Store{ChunkID: "lastweek", Kind: log.KindConversation, Session: "august", Role: "user", Content: "Joanna: Last week I hiked up to the falls by Lake Erie with my cousins.", Time: ms(2022, time.August, 3)},
		&log.Store{ChunkID: "later", Kind: log.KindConversation, Session: "august2", Role: "user", Content: "Joanna: The library by the lake opened a new reading room for the town.", Time: ms(2022, time.August, 4)},
	)
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, bodies...))
	now := time.Date(2022, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		opts query.Options
		mode query.Mode
		want map[string]int // 1: in the top 2, 0: absent
	}{
		{query.Options{}, query.ModeHybrid, map[string]int{"answer": 1, "lastweek": 1, "later": 0}},
		{query.Options{}, query.ModeBM25, map[string]int{"answer": 1, "lastweek": 1, "later": 0}},
		{query.Options{NoWindowCandidates: true}, query.ModeHybrid, map[string]int{"answer": 0, "lastweek": 0, "later": 0}},
	} {
		resp, err := f.engine(tc.opts).Search(context.Background(), query.Request{Text: "Where did Joanna travel to in July 2022?", Now: now, K: 5, Mode: tc.mode, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		var ids []string
		for i, r := range resp.Results {
			ids = append(ids, r.ChunkID)
			if _, ok := tc.want[r.ChunkID]; ok {
				got[r.ChunkID] = min(i+1, 2) - i // 1 in the top 2, else ≤ 0
			}
		}
		for id, want := range tc.want {
			if (got[id] == 1) != (want == 1) || want == 0 && slices.Contains(ids, id) {
				t.Errorf("%s NoWindowCandidates %v: %s in the top 2: %v, want %v, returned: %v; results %v", tc.mode, tc.opts.NoWindowCandidates, id, got[id] == 1, want == 1, slices.Contains(ids, id), ids)
			}
		}
	}
	// A window that holds nothing the words match, and is mentioned by
	// nothing, adds nothing.
	resp, err := f.engine(query.Options{}).Search(context.Background(), query.Request{Text: "Where did Joanna travel to in March 2021?", Now: now, K: 5, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ChunkID == "answer" || r.ChunkID == "lastweek" {
			t.Errorf("March 2021: %s returned: %+v", r.ChunkID, r)
		}
	}
}

// A window holding more chunks than the window's own BM25 list may read
// (the full-text filter costs its chunk count) is searched as before: the
// query succeeds and ranks as without the list.
func TestWindowCandidatesWideWindow(t *testing.T) {
	at := time.Date(2022, time.July, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	var bodies []log.Body
	for i := range 520 {
		bodies = append(bodies, &log.Store{
			ChunkID: fmt.Sprintf("t%03d", i), Kind: log.KindConversation, Session: fmt.Sprintf("s%d", i/20), Role: "user",
			Content: fmt.Sprintf("Joanna: day %d by the lake", i), Time: at + int64(i)*60000,
		})
	}
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, bodies...))
	now := time.Date(2022, 11, 1, 12, 0, 0, 0, time.UTC)
	var got [2][]string
	for i, off := range []bool{false, true} {
		resp, err := f.engine(query.Options{NoWindowCandidates: off}).Search(context.Background(), query.Request{Text: "Where did Joanna travel to in July 2022?", Now: now, K: 5})
		if err != nil {
			t.Fatalf("NoWindowCandidates %v: %v", off, err)
		}
		for _, r := range resp.Results {
			got[i] = append(got[i], r.ChunkID)
		}
	}
	if !slices.Equal(got[0], got[1]) || len(got[0]) != 5 {
		t.Errorf("a window of 520 chunks: results %v, without the window's list %v", got[0], got[1])
	}
}
