package timephrase

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
)

func day(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse("2006-01-02", s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

// The phrases issue 28 found missing, each against a fixed now.
func TestParseMorePhrases(t *testing.T) {
	now := time.Date(2023, 6, 8, 15, 0, 0, 0, time.UTC) // a Thursday
	for _, tc := range []struct{ in, since, until, text string }{
		{"what did I do last Tues", "2023-06-06", "2023-06-07", "what did I do"},
		{"last Fri", "2023-06-02", "2023-06-03", ""},
		{"next Friday", "2023-06-09", "2023-06-10", ""},
		{"this Monday", "2023-06-05", "2023-06-06", ""},
		{"gifts at Christmas", "2022-12-25", "2022-12-26", "gifts at Christmas"},
		{"last Christmas", "2022-12-25", "2022-12-26", ""},
		{"Christmas 2021", "2021-12-25", "2021-12-26", ""},
		{"on Christmas Eve", "2022-12-24", "2022-12-25", ""},
		{"New Year's Eve party", "2022-12-31", "2023-01-01", "New Year's Eve party"},
		{"Thanksgiving", "2022-11-24", "2022-11-25", ""},
		{"Easter", "2023-04-09", "2023-04-10", ""},
		{"Halloween costume", "2022-10-31", "2022-11-01", "Halloween costume"},
		{"trip last summer", "2022-06-01", "2022-09-01", "trip last summer"},
		{"this summer", "2023-06-01", "2023-09-01", ""},
		{"last winter", "2022-12-01", "2023-03-01", ""},
		{"in the spring", "2023-03-01", "2023-06-01", ""},
		{"summer of 2021", "2021-06-01", "2021-09-01", ""},
		{"early June", "2023-06-01", "2023-06-11", ""},
		{"mid-May", "2023-05-11", "2023-05-21", ""},
		{"late February 2022", "2022-02-21", "2022-03-01", ""},
		{"the end of May", "2023-05-21", "2023-06-01", ""},
		{"early 2022", "2022-01-01", "2022-05-01", ""},
		{"the week before last", "2023-05-22", "2023-05-29", ""},
		{"the month before last", "2023-04-01", "2023-05-01", ""},
		{"next week", "2023-06-12", "2023-06-19", ""},
		{"next month", "2023-07-01", "2023-08-01", ""},
		{"last night", "2023-06-07", "2023-06-08", ""},
		{"tomorrow", "2023-06-09", "2023-06-10", ""},
		{"two weekends ago", "2023-05-27", "2023-05-29", ""},
		{"the 3rd of May", "2023-05-03", "2023-05-04", ""},
	} {
		p := Parse(tc.in, now)
		if len(p.Matches) != 1 || p.Since != day(t, tc.since) || p.Until != day(t, tc.until) {
			t.Errorf("%q: %+v, want [%s, %s)", tc.in, p, tc.since, tc.until)
			continue
		}
		if tc.text != "" && p.Text != tc.text {
			t.Errorf("%q: text %q, want %q", tc.in, p.Text, tc.text)
		}
	}
	// Words that only look like time phrases.
	for _, in := range []string{"the fall of Rome", "I sat down", "spring cleaning tips", "wed the bride", "we may go", "May I ask", "Tuesdays are quiet"} {
		if p := Parse(in, now); len(p.Matches) != 0 {
			t.Errorf("%q: matched %+v", in, p.Matches)
		}
	}
}

// Calendar days are those of now's location: the same instant is another
// day in Tokyo.
func TestParseLocation(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	now := time.Date(2023, 6, 8, 20, 0, 0, 0, time.UTC) // 2023-06-09 05:00 in Tokyo
	p := Parse("yesterday", now.In(tokyo))
	if want := time.Date(2023, 6, 8, 0, 0, 0, 0, tokyo).UnixMilli(); p.Since != want {
		t.Fatalf("yesterday in Tokyo from %v: since %d, want %d", now, p.Since, want)
	}
}

// Mentions resolve a text's phrases against the time it was written.
func TestMentions(t *testing.T) {
	at := time.Date(2023, 10, 4, 9, 0, 0, 0, time.UTC) // a Wednesday
	for _, tc := range []struct {
		text string
		want []Range
	}{
		{"Yesterday I finally sold the old piano", []Range{{day(t, "2023-10-03"), day(t, "2023-10-04")}}},
		{"I went to an LGBTQ conference two days ago", []Range{{day(t, "2023-10-02"), day(t, "2023-10-03")}}},
		{"We had a picnic last week!", []Range{{day(t, "2023-09-25"), day(t, "2023-10-02")}}},
		{"This book I read last year", []Range{{day(t, "2022-01-01"), day(t, "2023-01-01")}}},
		{"I'm going to a conference this month", []Range{{day(t, "2023-10-01"), day(t, "2023-11-01")}}},
		{"Last Fri I took my kids to a workshop", []Range{{day(t, "2023-09-29"), day(t, "2023-09-30")}}},
		{"I've known them since 2019", []Range{{day(t, "2019-01-01"), day(t, "2020-01-01")}}},
		{"Camping next month; back on October 2", []Range{{day(t, "2023-11-01"), day(t, "2023-12-01")}, {day(t, "2023-10-02"), day(t, "2023-10-03")}}},
		{"nothing about time here", nil},
		{"the past 3 days", []Range{{at.AddDate(0, 0, -3).UnixMilli(), at.UnixMilli() + 1}}},
		// A duration up to the time of writing: since then, until then.
		{"I've had them for 3 years now and they bring me joy", []Range{{at.AddDate(-3, 0, 0).UnixMilli(), at.UnixMilli() + 1}}},
		{"I have known these friends for almost four years, since I moved", []Range{{at.AddDate(-4, 0, 0).UnixMilli(), at.UnixMilli() + 1}}},
		{"We've been together for a couple of months", []Range{{at.AddDate(0, -2, 0).UnixMilli(), at.UnixMilli() + 1}}},
		{"It's been two weeks since the move", []Range{{at.AddDate(0, 0, -14).UnixMilli(), at.UnixMilli() + 1}}},
		{"Seven years now, and I've finally found my muses", []Range{{at.AddDate(-7, 0, 0).UnixMilli(), at.UnixMilli() + 1}}},
		{"5 years already! Time flies", []Range{{at.AddDate(-5, 0, 0).UnixMilli(), at.UnixMilli() + 1}}},
		// Vague, but before the time of writing: the past month, the past
		// week, the past year. "Lately" is a state ("busy lately"), not when
		// something happened.
		{"I recently adopted a pup", []Range{{at.AddDate(0, -1, 0).UnixMilli(), day(t, "2023-10-05")}}},
		{"I saw him the other day", []Range{{day(t, "2023-09-27"), day(t, "2023-10-04")}}},
		{"you recommended it a while ago", []Range{{at.AddDate(-1, 0, 0).UnixMilli(), day(t, "2023-10-04")}}},
		{"I've been so busy lately", nil},
		// Not in the perfect: a plan or a habit, not a time gone by.
		{"I'm going to Spain for two weeks", nil},
		{"I had fun. We stay for 3 days", nil},
	} {
		got := Mentions(tc.text, at)
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
			}
		}
	}
}

func FuzzMentions(f *testing.F) {
	for _, s := range []string{"yesterday", "last Tues", "early June 2022", "Christmas Eve 1999", "the 31st of February", "99999 days ago", "since 2019", "I've had them for 3 years now", "been 999 years", "recently, the other day"} {
		f.Add(s, int64(1696410000000))
	}
	f.Fuzz(func(t *testing.T, s string, at int64) {
		tm := time.UnixMilli(at % (1 << 45)).UTC()
		ms := Mentions(s, tm)
		if len(ms) > MaxMentions {
			t.Fatalf("%d mentions", len(ms))
		}
		for _, r := range ms {
			if r.Until <= r.Since {
				t.Fatalf("empty range %v", r)
			}
		}
		p := Parse(s, tm)
		if len(p.Matches) == 0 && p.Text != s {
			t.Fatalf("text changed without a match")
		}
	})
}

// BenchmarkMentions: what resolving mentioned times adds to indexing a
// chunk, for a turn without time words (the common case, cut short by
// candidates) and one with.
func BenchmarkMentions(b *testing.B) {
	at := time.Date(2023, 10, 4, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, text string }{
		{"none", "I think the garden needs more compost and the roses want pruning soon, says the gardener"},
		{"some", "Yesterday I finally sold the old piano; the buyer comes back next Friday for the bench"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Mentions(tc.text, at)
			}
		})
	}
}

// The word filter (candidates) only skips rules that cannot match: scan
// finds what running every rule finds, on texts built from the rules'
// own words and their neighbours (case, suffixes, digits, punctuation,
// runes that fold to ASCII letters).
func TestCandidatesSkipNoMatch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	vocab := []string{"the", "a", "an", "of", "in", "on", "at", "since", "before", "after", "from", "during",
		"two", "few", "couple of", "3", "12", "2023", "1999", "05", "8th", "31st", "day", "days", "weeks",
		"weekends", "months", "years", "eve", "july", "ago", "tues", "fri", "thurs", "sept", "mon", "sat", "sun", "wed", "thu", "tue", "last", "this", "next",
		"past", "early", "mid", "late", "end", "start", "middle", "beginning", "new", "last night",
		"the day before yesterday", "the past 3 days", "last two weeks", "the last few months", "3 days ago", "new year's", "the fourth of july", "mid-May", "the end of", "the middle of", "the beginning of", "2023-05-08",
		"22-1-1", "for", "been", "now", "already", "recently", "the other day", "a while ago", "while ago", "other", "I've", "have", "over", "ſummer", "\u212aristmas", "İn", "é", "’", "—"}
	for _, r := range rules {
		vocab = append(vocab, r.words...)
		vocab = append(vocab, r.casedWords...)
	}
	variant := func(w string) string {
		switch rng.Intn(12) {
		case 0:
			return strings.ToUpper(w[:1]) + w[1:]
		case 1:
			return strings.ToUpper(w)
		case 2:
			return w + "s"
		case 3:
			return "x" + w
		case 4:
			return w[:len(w)-1]
		case 5:
			return w + "'s"
		}
		return w
	}
	seps := []string{" ", " ", " ", " ", " ", " ", "  ", "\n", "-", ", ", ". ", "'", "_", "é", ""}
	now := time.Date(2023, 6, 8, 15, 0, 0, 0, time.UTC)
	ran := 0
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := 1 + rng.Intn(8); n > 0; n-- {
			b.WriteString(variant(vocab[rng.Intn(len(vocab))]))
			b.WriteString(seps[rng.Intn(len(seps))])
		}
		text := b.String()
		mask, all := candidates(text)
		got, want := scanRules(text, now, mask, all, true), scanRules(text, now, 0, true, true)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: filtered scan %+v, every rule %+v (mask %b)", text, got, want, mask)
		}
		if len(want) > 0 {
			ran++
		}
	}
	if ran < 5000 {
		t.Fatalf("only %d of the texts mention a time: the test does not exercise the rules", ran)
	}
}

func FuzzCandidates(f *testing.F) {
	for _, s := range []string{"yesterday", "last Tues", "early June 2022", "mid-May", "Christmas Eve 1999", "New Year's Day",
		"valentines day", "the 31st of February", "3 days ago", "since 2019", "2023-05-08", "ſummer of 2020", "\u212aristmas", "nothing here"} {
		f.Add(s)
	}
	now := time.Date(2023, 6, 8, 15, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		mask, all := candidates(s)
		if got, want := scanRules(s, now, mask, all, true), scanRules(s, now, 0, true, true); !reflect.DeepEqual(got, want) {
			t.Fatalf("filtered scan %+v, every rule %+v", got, want)
		}
	})
}

func TestASCIIFolding(t *testing.T) {
	var want []string
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		ascii := unicode.ToLower(r) < 0x80 || unicode.ToUpper(r) < 0x80
		for f := unicode.SimpleFold(r); f != r && !ascii; f = unicode.SimpleFold(f) {
			ascii = f < 0x80
		}
		if ascii {
			want = append(want, string(r))
		}
	}
	if !reflect.DeepEqual(asciiFolding, want) {
		t.Fatalf("asciiFolding %q, the Unicode tables give %q", asciiFolding, want)
	}
}

// A duration or a vague "recently" is something a text mentions, not a
// window a question asks for.
func TestDurationNotParsed(t *testing.T) {
	now := time.Date(2023, 10, 4, 9, 0, 0, 0, time.UTC)
	for _, q := range []string{"Has she had the dog for 3 years?", "It's been two weeks", "What did she adopt recently?", "the other day"} {
		if p := Parse(q, now); len(p.Matches) != 0 || p.Text != q {
			t.Errorf("%q: %+v, want no phrase", q, p)
		}
	}
}
