package query_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/unlimitedcontext/ucl/query"
)

func TestParseTemporal(t *testing.T) {
	// Thursday 2023-06-08 15:00 UTC.
	now := time.Date(2023, 6, 8, 15, 0, 0, 0, time.UTC)
	d := func(s string) int64 {
		tm, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	nowMS := now.UnixMilli()
	for _, tc := range []struct {
		in           string
		since, until int64
		text         string // search text left ("" = check not)
		none         bool
	}{
		{in: "what did I say yesterday", since: d("2023-06-07"), until: d("2023-06-08"), text: "what did I say"},
		{in: "notes from today", since: d("2023-06-08"), text: "notes"},
		{in: "notes today", since: d("2023-06-08"), until: d("2023-06-09"), text: "notes"},
		{in: "the day before yesterday we talked", since: d("2023-06-06"), until: d("2023-06-07"), text: "we talked"},
		{in: "what did I decide last week about the cutover", since: d("2023-05-29"), until: d("2023-06-05"), text: "what did I decide about the cutover"},
		{in: "this week", since: d("2023-06-05"), until: d("2023-06-12")},
		{in: "Last Month budget", since: d("2023-05-01"), until: d("2023-06-01"), text: "budget"},
		{in: "this year", since: d("2023-01-01"), until: d("2024-01-01")},
		{in: "last year", since: d("2022-01-01"), until: d("2023-01-01")},
		{in: "two days ago", since: d("2023-06-06"), until: d("2023-06-07")},
		{in: "2 days ago", since: d("2023-06-06"), until: d("2023-06-07")},
		{in: "3 weeks ago", since: d("2023-05-15"), until: d("2023-05-22")},
		{in: "a month ago", since: d("2023-05-01"), until: d("2023-06-01")},
		{in: "a couple of years ago", since: d("2021-01-01"), until: d("2022-01-01")},
		{in: "plans in May 2023", since: d("2023-05-01"), until: d("2023-06-01"), text: "plans"},
		{in: "in May", since: d("2023-05-01"), until: d("2023-06-01")},
		{in: "during July", since: d("2022-07-01"), until: d("2022-08-01")},
		{in: "May 8", since: d("2023-05-08"), until: d("2023-05-09")},
		{in: "on May 8th, 2022", since: d("2022-05-08"), until: d("2022-05-09")},
		{in: "on 2023-05-08", since: d("2023-05-08"), until: d("2023-05-09")},
		{in: "8 May 2023", since: d("2023-05-08"), until: d("2023-05-09")},
		{in: "since Monday", since: d("2023-06-05")},
		{in: "last Thursday", since: d("2023-06-01"), until: d("2023-06-02")},
		{in: "before 2023-05-08", until: d("2023-05-08")},
		{in: "after May 2023", since: d("2023-06-01")},
		{in: "from last week on", since: d("2023-05-29"), text: "on"},
		{in: "in 2022", since: d("2022-01-01"), until: d("2023-01-01")},
		{in: "the past 3 days", since: nowMS - 3*86400000, until: nowMS + 1},
		{in: "the past week", since: nowMS - 7*86400000, until: nowMS + 1},
		{in: "last weekend", since: d("2023-06-03"), until: d("2023-06-05")},
		{in: "in May 2023 in 2019", since: d("2023-05-01"), until: d("2020-01-01")}, // contradictory dates: empty
		// A relative phrase that contradicts a date is read relative to it
		// (TestParseTemporalAnchored).
		{in: "in May 2023 yesterday", since: d("2023-05-31"), until: d("2023-06-01")},
		{in: "May I ask about the garden", none: true},
		{in: "we march forward", none: true},
		{in: "on 2023-02-30", none: true},
		{in: "2023 was a good year", none: true},
		{in: "", none: true},
	} {
		got := query.ParseTemporal(tc.in, now)
		if tc.none {
			if len(got.Matches) != 0 || got.Text != tc.in {
				t.Errorf("%q: want no match, got %+v", tc.in, got)
			}
			continue
		}
		if len(got.Matches) == 0 {
			t.Errorf("%q: no match", tc.in)
			continue
		}
		if got.Since != tc.since || got.Until != tc.until {
			t.Errorf("%q: window [%s, %s), want [%s, %s)", tc.in, fmtMS(got.Since), fmtMS(got.Until), fmtMS(tc.since), fmtMS(tc.until))
		}
		if tc.text != "" && got.Text != tc.text {
			t.Errorf("%q: text %q, want %q", tc.in, got.Text, tc.text)
		}
	}
	// Local calendar days follow now's location.
	ny, err := time.LoadLocation("America/New_York")
	if err == nil {
		got := query.ParseTemporal("yesterday", time.Date(2023, 6, 8, 1, 0, 0, 0, ny))
		want := time.Date(2023, 6, 7, 0, 0, 0, 0, ny).UnixMilli()
		if got.Since != want {
			t.Errorf("New York yesterday starts %s, want %s", fmtMS(got.Since), fmtMS(want))
		}
	}
}

func fmtMS(ms int64) string {
	if ms == 0 {
		return "open"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func FuzzParseTemporal(f *testing.F) {
	for _, s := range []string{"yesterday", "in May 2023", "since Monday", "3 weeks ago", "on 2023-05-08", "the past 12 months",
		"May 99, 2023", "99 May", "last last week", "before before 2020", "\xff in 2023", "on 9999-99-99", "a few days ago yesterday"} {
		f.Add(s, int64(1686236400000))
	}
	f.Fuzz(func(t *testing.T, s string, nowMS int64) {
		if nowMS < -1e14 || nowMS > 1e14 {
			return
		}
		now := time.UnixMilli(nowMS).UTC()
		a := query.ParseTemporal(s, now)
		b := query.ParseTemporal(s, now)
		if a.Text != b.Text || a.Since != b.Since || a.Until != b.Until || len(a.Matches) != len(b.Matches) {
			t.Fatalf("not deterministic: %+v vs %+v", a, b)
		}
		if len(a.Matches) == 0 && a.Text != s {
			t.Fatalf("no match but text changed: %q -> %q", s, a.Text)
		}
		if len(a.Matches) > 0 {
			if utf8.ValidString(s) && !utf8.ValidString(a.Text) {
				t.Fatalf("invalid UTF-8 from valid input %q", s)
			}
			if len(strings.Fields(a.Text)) > len(strings.Fields(s)) {
				t.Fatalf("text grew: %q -> %q", s, a.Text)
			}
			for _, m := range a.Matches {
				if !strings.Contains(s, m.Phrase) {
					t.Fatalf("phrase %q not in %q", m.Phrase, s)
				}
			}
		}
	})
}

// TestParseTemporalAnchored: a relative phrase beside a date with its
// year is read relative to that date when, read relative to now, the two
// would leave no window (the question had no time window at all).
func TestParseTemporalAnchored(t *testing.T) {
	now := time.Date(2023, 9, 14, 15, 0, 0, 0, time.UTC) // a Thursday
	d := func(s string) int64 {
		tm, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	for _, tc := range []struct {
		in           string
		since, until int64
	}{
		// The Monday before a Monday: a week earlier.
		{"What did Andrew do on the Monday before July 24, 2023?", d("2023-07-17"), d("2023-07-18")},
		// The calendar week before the week of January 23 (a Monday).
		{"What project did Jolene finish last week before 23 January, 2023?", d("2023-01-16"), d("2023-01-23")},
		{"Which country was Jolene in during the last week of August 2023?", d("2023-08-21"), d("2023-08-28")},
		// Last Friday is not on the 23rd: the day it was said stands.
		{"What did Joanna finish last Friday on 23 January, 2022?", d("2022-01-23"), d("2022-01-24")},
		// Unchanged: phrases that meet, and dates that disagree.
		{"What did I do last week in 2023?", d("2023-09-04"), d("2023-09-11")},
	} {
		got := query.ParseTemporal(tc.in, now)
		if got.Since != tc.since || got.Until != tc.until {
			t.Errorf("%q: window %s..%s, want %s..%s", tc.in, time.UnixMilli(got.Since).UTC(), time.UnixMilli(got.Until).UTC(),
				time.UnixMilli(tc.since).UTC(), time.UnixMilli(tc.until).UTC())
		}
	}
	if got := query.ParseTemporal("in May 2022 and in June 2023", now); got.Until > got.Since {
		t.Errorf("two dates that disagree: window %d..%d, want none", got.Since, got.Until)
	}
}
