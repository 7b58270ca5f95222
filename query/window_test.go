package query_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// A question whose words match little besides a name finds the turn of
// its time window: 60 shorter turns of other months match "Joanna" better
// than the turn of July that answers, so BM25's 50 candidates hold
// none of July; the window's own BM25 list brings it in, and its boost
// ranks it first. Without it the answer is not returned at all.
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
	)
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t, bodies...))
	now := time.Date(2022, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		opts query.Options
		mode query.Mode
		want int // rank of "answer", 0: absent
	}{
		{query.Options{}, query.ModeHybrid, 1},
		{query.Options{}, query.ModeBM25, 1},
		{query.Options{NoWindowCandidates: true}, query.ModeHybrid, 0},
	} {
		resp, err := f.engine(tc.opts).Search(context.Background(), query.Request{Text: "Where did Joanna travel to in July 2022?", Now: now, K: 5, Mode: tc.mode, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for i, r := range resp.Results {
			if r.ChunkID == "answer" {
				got = i + 1
			}
		}
		if got != tc.want {
			var ids []string
			for _, r := range resp.Results {
				ids = append(ids, r.ChunkID)
			}
			t.Errorf("%s %+v: the turn of July ranks %d, want %d (0: absent); results %v", tc.mode, tc.opts, got, tc.want, ids)
		}
	}
	// A phrase whose window holds nothing the words match adds nothing.
	resp, err := f.engine(query.Options{}).Search(context.Background(), query.Request{Text: "Where did Joanna travel to in March 2021?", Now: now, K: 5, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ChunkID == "answer" {
			t.Errorf("March 2021: the turn of July returned: %+v", r)
		}
	}
}
