package query_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// mentionFixture: a turn stored on 2023-10-04 that says what happened
// "yesterday", beside turns stored on 2023-10-03 and others, all about
// the same thing.
func mentionFixture(t *testing.T) *fixture {
	t.Helper()
	ms := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t,
		&log.Store{ChunkID: "sold", Kind: log.KindConversation, Session: "s2", Role: "user", Content: "Yesterday I finally sold the old piano to a neighbour.", Time: ms("2023-10-04T09:00:00Z")},
		&log.Store{ChunkID: "tuned", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "The piano tuner came by and the old piano sounds fine.", Time: ms("2023-10-03T18:00:00Z")},
		&log.Store{ChunkID: "lesson", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "Piano lesson went well, the old piano needs new felts.", Time: ms("2023-10-03T19:00:00Z")},
		&log.Store{ChunkID: "bought", Kind: log.KindConversation, Session: "s0", Role: "user", Content: "I bought an old piano at an auction.", Time: ms("2023-06-01T10:00:00Z")},
	))
	return f
}

// A turn is found by the date it mentions: "What did I sell on October 3,
// 2023?" boosts the turn of October 4 that says "yesterday" as it boosts
// the turns stored on October 3; and "last Tuesday", asked a week later,
// is the same day.
func TestMentionedTimeBoost(t *testing.T) {
	f := mentionFixture(t)
	e := f.engine(query.Options{})
	ctx := context.Background()
	now := time.Date(2023, 10, 10, 12, 0, 0, 0, time.UTC) // a Tuesday
	for _, q := range []string{"What about the old piano on October 3, 2023?", "what happened to the old piano last Tuesday"} {
		resp, err := e.Search(ctx, query.Request{Text: q, Now: now, K: 4, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		var sold *query.Result
		for i := range resp.Results {
			if resp.Results[i].ChunkID == "sold" {
				sold = &resp.Results[i]
			}
		}
		if sold == nil || !sold.Explain.Mentioned || !sold.MentionsWindow || sold.Explain.Temporal != 1+2*query.DefaultTemporalBoost { // a day: DayBoost
			t.Fatalf("%q: the turn that mentions the day is not boosted: %+v", q, resp.Results)
		}
		for _, r := range resp.Results {
			if r.ChunkID == "bought" && r.Explain.Temporal != 1 {
				t.Errorf("%q: a turn of June boosted: %+v", q, r.Explain)
			}
		}
		if last := resp.Results[len(resp.Results)-1]; last.ChunkID != "bought" {
			t.Errorf("%q: %v, want the June turn last", q, ids(resp.Results))
		}
	}
}

// A when-question ranks the turn that says when first: the three turns
// share the question's words, and only "sold" tells a time.
func TestWhenQuestionBoost(t *testing.T) {
	f := mentionFixture(t)
	ctx := context.Background()
	now := time.Date(2023, 10, 10, 12, 0, 0, 0, time.UTC)
	req := query.Request{Text: "When was the old piano sold?", Now: now, K: 4, Explain: true}
	resp, err := f.engine(query.Options{}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].ChunkID != "sold" || !resp.Results[0].Explain.Mentioned || resp.Results[0].Explain.Temporal != 1+query.DefaultWhenBoost {
		t.Fatalf("when-question: %+v", resp.Results[0])
	}
	off, err := f.engine(query.Options{WhenBoost: -1}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if off.Results[0].Explain.Temporal != 1 || off.Results[0].Explain.Mentioned {
		t.Fatalf("WhenBoost off: %+v", off.Results[0].Explain)
	}
	// Not a when-question: no boost.
	resp, err = f.engine(query.Options{}).Search(ctx, query.Request{Text: "who has the old piano", Now: now, K: 4, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.Explain.Temporal != 1 {
			t.Fatalf("boosted without a when-question: %+v", r)
		}
	}
}

// A window of a day is boosted more than a month's: "on October 3, 2023"
// and "last Tuesday" (asked a week later) name the day the turn of
// October 4 says "yesterday" about and the other turns were stored on;
// "in October 2023" holds most of the store. DayBoost: -1 is the boost
// of any window.
func TestDayBoost(t *testing.T) {
	f := mentionFixture(t)
	ctx := context.Background()
	now := time.Date(2023, 10, 10, 12, 0, 0, 0, time.UTC) // a Tuesday
	for _, tc := range []struct {
		opts query.Options
		q    string
		want float64
	}{
		{query.Options{}, "What about the old piano on October 3, 2023?", 1 + 2*query.DefaultTemporalBoost},
		{query.Options{}, "what happened to the old piano last Tuesday", 1 + 2*query.DefaultTemporalBoost},
		{query.Options{}, "the old piano in October 2023", 1 + query.DefaultTemporalBoost},
		{query.Options{DayBoost: -1}, "What about the old piano on October 3, 2023?", 1 + query.DefaultTemporalBoost},
		{query.Options{TemporalBoost: 1, DayBoost: 7}, "What about the old piano on October 3, 2023?", 8},
	} {
		resp, err := f.engine(tc.opts).Search(ctx, query.Request{Text: tc.q, Now: now, K: 4, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Results {
			want := tc.want
			if r.ChunkID == "bought" {
				want = 1
			}
			if r.Explain.Temporal != want {
				t.Errorf("%q %+v: %s temporal %g, want %g", tc.q, tc.opts, r.ChunkID, r.Explain.Temporal, want)
			}
		}
	}
}

// A duration meets a window by when it began: "for a year now", said on
// October 4, 2023, covers every week of that year, which tells nothing
// about August 2023; it does tell about October 2022, when it began.
func TestDurationMeetsWindowByStart(t *testing.T) {
	at := time.Date(2023, 10, 4, 9, 0, 0, 0, time.UTC).UnixMilli()
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t,
		&log.Store{ChunkID: "year", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "I've been playing the piano for a year now.", Time: at},
		&log.Store{ChunkID: "other", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "The piano needs tuning.", Time: at + 30000},
	))
	now := time.Date(2023, 10, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		q    string
		want bool
	}{{"the piano in August 2023", false}, {"the piano in October 2022", true}} {
		resp, err := f.engine(query.Options{}).Search(context.Background(), query.Request{Text: tc.q, Now: now, K: 4, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Results {
			if r.ChunkID == "year" && r.MentionsWindow != tc.want {
				t.Errorf("%q: the duration meets the window: %v, want %v (%+v)", tc.q, r.MentionsWindow, tc.want, r.Explain)
			}
		}
	}
}

// A how-long question ranks the turn that states a duration first: all
// four turns share the question's words, "yesterday" is a point in time,
// not an answer to how long, and "for four years" is.
func TestHowLongQuestionBoost(t *testing.T) {
	at := time.Date(2023, 6, 9, 19, 0, 0, 0, time.UTC).UnixMilli()
	f := newFixture(t, t.TempDir())
	f.apply(t, chain(t,
		&log.Store{ChunkID: "yesterday", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "Yesterday my friends and I went to the support group.", Time: at},
		&log.Store{ChunkID: "known", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "I've known my friends for four years, since I moved here.", Time: at + 30000},
		&log.Store{ChunkID: "lucky", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "My friends are great, I'm lucky to have my friends.", Time: at + 60000},
		&log.Store{ChunkID: "plan", Kind: log.KindConversation, Session: "s1", Role: "user", Content: "My friends are visiting for two weeks, my friends love it here.", Time: at + 90000},
	))
	ctx := context.Background()
	now := time.Date(2023, 10, 10, 12, 0, 0, 0, time.UTC)
	req := query.Request{Text: "How long has she had her friends?", Now: now, K: 4, Explain: true}
	resp, err := f.engine(query.Options{}).Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].ChunkID != "known" || !resp.Results[0].Explain.Mentioned || resp.Results[0].Explain.Temporal != 1+query.DefaultWhenBoost {
		t.Fatalf("how-long question: %v, first %+v", ids(resp.Results), resp.Results[0].Explain)
	}
	for _, r := range resp.Results[1:] {
		if r.Explain.Temporal != 1 {
			t.Errorf("how-long question boosted %s, which states no duration: %+v", r.ChunkID, r.Explain)
		}
	}
	// A plan or a past span is no duration up to now: no boost.
	for _, q := range []string{"How long do we keep her friends?", "How long did it take to make friends?"} {
		resp, err = f.engine(query.Options{}).Search(ctx, query.Request{Text: q, Now: now, K: 4, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Results {
			if r.Explain.Temporal != 1 {
				t.Errorf("%q boosted %s: %+v", q, r.ChunkID, r.Explain)
			}
		}
	}
	// "How long ago" asks when: every mention counts, as for "When…".
	resp, err = f.engine(query.Options{}).Search(ctx, query.Request{Text: "How long ago did she meet her friends?", Now: now, K: 4, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if want := r.ChunkID == "known" || r.ChunkID == "yesterday"; r.Explain.Mentioned != want {
			t.Errorf("how long ago: %s mentioned %v, want %v", r.ChunkID, r.Explain.Mentioned, want)
		}
	}
}

// The time zone of calendar days: at 01:00 UTC on October 4, "yesterday"
// in UTC is October 3, in Los Angeles (UTC−7) October 2.
func TestTemporalLocation(t *testing.T) {
	f := mentionFixture(t)
	la := time.FixedZone("PDT", -7*3600)
	now := time.Date(2023, 10, 4, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		loc  *time.Location
		want time.Time
	}{{nil, time.Date(2023, 10, 3, 0, 0, 0, 0, time.UTC)}, {la, time.Date(2023, 10, 2, 0, 0, 0, 0, la)}} {
		resp, err := f.engine(query.Options{Location: tc.loc}).Search(context.Background(), query.Request{Text: "piano yesterday", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Temporal[0].Since != tc.want.UnixMilli() {
			t.Errorf("location %v: window from %v, want %v", tc.loc, time.UnixMilli(resp.Temporal[0].Since).UTC(), tc.want.UTC())
		}
	}
}

// A when-question with a time phrase gives a turn inside the window that
// says when both boosts: for "When did I sell the old piano in October
// 2023?" the October turn that says "yesterday" counts more than the
// October turns that say no time. Without a question that asks when, the
// window's boost alone.
func TestWhenBoostInsideWindow(t *testing.T) {
	f := mentionFixture(t)
	ctx := context.Background()
	now := time.Date(2023, 10, 10, 12, 0, 0, 0, time.UTC)
	month := float64(1 + query.DefaultTemporalBoost)
	for _, tc := range []struct {
		q    string
		want map[string]float64
	}{
		{"When did I sell the old piano in October 2023?", map[string]float64{"sold": month * (1 + query.DefaultWhenBoost), "tuned": month, "lesson": month, "bought": 1}},
		{"the old piano in October 2023", map[string]float64{"sold": month, "tuned": month, "lesson": month, "bought": 1}},
	} {
		resp, err := f.engine(query.Options{}).Search(ctx, query.Request{Text: tc.q, Now: now, K: 4, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Results) != len(tc.want) {
			t.Fatalf("%q: %d results, want %d", tc.q, len(resp.Results), len(tc.want))
		}
		for _, r := range resp.Results {
			if got := r.Explain.Temporal; math.Abs(got-tc.want[r.ChunkID]) > 1e-9 {
				t.Errorf("%q: %s temporal %g, want %g", tc.q, r.ChunkID, got, tc.want[r.ChunkID])
			}
		}
	}
}
