package query

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TemporalMatch is one recognised time phrase and the window it stands for:
// content time in [Since, Until) in unix ms, 0 meaning open.
type TemporalMatch struct {
	Phrase string `json:"phrase"`
	Since  int64  `json:"since_ms,omitempty"`
	Until  int64  `json:"until_ms,omitempty"`
}

// Temporal is the result of ParseTemporal.
type Temporal struct {
	Text    string          // the input with the phrases cut out, white space collapsed
	Since   int64           // intersection of every window (0 = open)
	Until   int64           // (0 = open); Until <= Since means no time matches
	Matches []TemporalMatch // in order of appearance
}

// ParseTemporal finds time phrases in text and turns them into windows
// relative to now, using now's location for calendar days (pass a UTC now
// for UTC days). Recognised (case-insensitive, except month names, which
// must be capitalised — "may" and "march" are also ordinary words):
//
//	today, yesterday, the day before yesterday
//	this week|month|year, last week|month|year (calendar; weeks start Monday)
//	last weekend (Saturday 00:00 to Monday 00:00 before today)
//	N days|weeks|months|years ago (N a number, a word up to twelve, a/an,
//	  "a couple of", "a few"): that calendar day|week|month|year
//	the past|last N days|weeks|months (rolling, from now − N units on)
//	the past week|month|year (rolling: 7 days, 1 month, 1 year)
//	Monday … Sunday, last Monday: the most recent such day before today
//	May 2023, May 8, May 8 2023, 8 May 2023, May (the latest May that has
//	  begun), in 2023 (a bare year needs in/during/since/before/after)
//	2023-05-08
//
// Each may be preceded by in, on, during (the window itself), since, from
// (from its start on), after (from its end on) or before (up to its start).
// The phrase, with its preposition, is cut from Text. Several phrases
// intersect. The result is a pure function of (text, now).
func ParseTemporal(text string, now time.Time) Temporal {
	type span struct {
		lo, hi int
		m      TemporalMatch
	}
	var spans []span
	for _, r := range temporalRules {
		for _, loc := range r.re.FindAllStringSubmatchIndex(text, -1) {
			sub := func(i int) string {
				if loc[2*i] < 0 {
					return ""
				}
				return text[loc[2*i]:loc[2*i+1]]
			}
			a, b, ok := r.eval(sub, now)
			if !ok {
				continue
			}
			s, u := applyPrep(strings.ToLower(sub(1)), a, b)
			spans = append(spans, span{loc[0], loc[1], TemporalMatch{
				Phrase: strings.TrimSpace(text[loc[0]:loc[1]]), Since: s, Until: u,
			}})
		}
	}
	// Keep non-overlapping spans: earliest start first, then the longest.
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].lo != spans[j].lo {
			return spans[i].lo < spans[j].lo
		}
		return spans[i].hi > spans[j].hi
	})
	out := Temporal{}
	var b strings.Builder
	pos := 0
	for _, sp := range spans {
		if sp.lo < pos {
			continue
		}
		b.WriteString(text[pos:sp.lo])
		b.WriteByte(' ')
		pos = sp.hi
		out.Matches = append(out.Matches, sp.m)
		if len(out.Matches) == 1 {
			out.Since, out.Until = sp.m.Since, sp.m.Until
		} else {
			out.Since, out.Until = intersect(out.Since, out.Until, sp.m.Since, sp.m.Until)
		}
	}
	b.WriteString(text[pos:])
	out.Text = strings.Join(strings.Fields(b.String()), " ")
	if len(out.Matches) == 0 {
		out.Text = text
	}
	return out
}

// applyPrep turns the window [a,b) of an anchor into the window of the
// phrase given its preposition.
func applyPrep(prep string, a, b int64) (int64, int64) {
	switch prep {
	case "since", "from":
		return a, 0
	case "after":
		return b, 0
	case "before":
		return 0, a
	}
	return a, b
}

type temporalRule struct {
	re   *regexp.Regexp
	eval func(sub func(int) string, now time.Time) (since, until int64, ok bool)
}

const prep = `(?i:\b(?:(in|on|during|since|from|after|before)\s+)?)`

const numWord = `(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|couple of|few)`

const months = `(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)`

var numWords = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
	"a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}

func parseNum(s string) (int, bool) {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	if n, ok := numWords[s]; ok {
		return n, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 500 {
		return 0, false
	}
	return n, true
}

func monthNum(s string) time.Month {
	if len(s) < 3 {
		return 0
	}
	for m := time.January; m <= time.December; m++ {
		if strings.HasPrefix(m.String(), s[:3]) {
			return m
		}
	}
	return 0
}

func weekdayNum(s string) time.Weekday {
	s = strings.ToLower(s)
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.ToLower(d.String()) == s {
			return d
		}
	}
	return -1
}

func dayStart(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func weekStart(t time.Time) time.Time {
	d := dayStart(t)
	off := (int(d.Weekday()) + 6) % 7 // days since Monday
	return d.AddDate(0, 0, -off)
}

func monthStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, t.Location())
}

func yearStart(t time.Time) time.Time {
	return time.Date(t.Year(), 1, 1, 0, 0, 0, 0, t.Location())
}

func ms(a, b time.Time) (int64, int64, bool) { return a.UnixMilli(), b.UnixMilli(), true }

var temporalRules = []temporalRule{
	{ // the day before yesterday, yesterday, today
		re: regexp.MustCompile(prep + `(?i:(the day before yesterday|yesterday|today|tonight|this morning|this afternoon|this evening))\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			d := dayStart(now)
			switch strings.ToLower(sub(2)) {
			case "the day before yesterday":
				d = d.AddDate(0, 0, -2)
			case "yesterday":
				d = d.AddDate(0, 0, -1)
			}
			return ms(d, d.AddDate(0, 0, 1))
		},
	},
	{ // this/last week|month|year, the past week|month|year, last weekend
		re: regexp.MustCompile(prep + `(?i:(?:the\s+)?(this|last|past|previous)\s+(weekend|week|month|year))\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			which, unit := strings.ToLower(sub(2)), strings.ToLower(sub(3))
			if unit == "weekend" {
				if which == "this" {
					w := weekStart(now).AddDate(0, 0, 5)
					return ms(w, w.AddDate(0, 0, 2))
				}
				// The last Saturday..Monday that ended before today.
				w := weekStart(now).AddDate(0, 0, -2)
				return ms(w, w.AddDate(0, 0, 2))
			}
			if which == "past" {
				switch unit {
				case "week":
					return ms(now.AddDate(0, 0, -7), now.Add(time.Millisecond))
				case "month":
					return ms(now.AddDate(0, -1, 0), now.Add(time.Millisecond))
				default:
					return ms(now.AddDate(-1, 0, 0), now.Add(time.Millisecond))
				}
			}
			back := 0
			if which != "this" {
				back = 1
			}
			switch unit {
			case "week":
				w := weekStart(now).AddDate(0, 0, -7*back)
				return ms(w, w.AddDate(0, 0, 7))
			case "month":
				m := monthStart(now).AddDate(0, -back, 0)
				return ms(m, m.AddDate(0, 1, 0))
			default:
				y := yearStart(now).AddDate(-back, 0, 0)
				return ms(y, y.AddDate(1, 0, 0))
			}
		},
	},
	{ // N days|weeks|months|years ago
		re: regexp.MustCompile(prep + `(?i:` + numWord + `\s+(days?|weeks?|months?|years?)\s+ago)\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			n, ok := parseNum(sub(2))
			if !ok {
				return 0, 0, false
			}
			switch strings.TrimSuffix(strings.ToLower(sub(3)), "s") {
			case "day":
				d := dayStart(now).AddDate(0, 0, -n)
				return ms(d, d.AddDate(0, 0, 1))
			case "week":
				w := weekStart(now).AddDate(0, 0, -7*n)
				return ms(w, w.AddDate(0, 0, 7))
			case "month":
				m := monthStart(now).AddDate(0, -n, 0)
				return ms(m, m.AddDate(0, 1, 0))
			default:
				y := yearStart(now).AddDate(-n, 0, 0)
				return ms(y, y.AddDate(1, 0, 0))
			}
		},
	},
	{ // the past/last N days|weeks|months (rolling)
		re: regexp.MustCompile(prep + `(?i:(?:the\s+)?(?:past|last)\s+` + numWord + `\s+(days?|weeks?|months?))\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			n, ok := parseNum(sub(2))
			if !ok {
				return 0, 0, false
			}
			var from time.Time
			switch strings.TrimSuffix(strings.ToLower(sub(3)), "s") {
			case "day":
				from = now.AddDate(0, 0, -n)
			case "week":
				from = now.AddDate(0, 0, -7*n)
			default:
				from = now.AddDate(0, -n, 0)
			}
			return ms(from, now.Add(time.Millisecond))
		},
	},
	{ // (last) Monday
		re: regexp.MustCompile(prep + `(?i:(?:last\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			wd := weekdayNum(sub(2))
			d := dayStart(now).AddDate(0, 0, -1)
			for d.Weekday() != wd {
				d = d.AddDate(0, 0, -1)
			}
			return ms(d, d.AddDate(0, 0, 1))
		},
	},
	{ // 2023-05-08
		re: regexp.MustCompile(prep + `(\d{4})-(\d{2})-(\d{2})\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			return dateWindow(sub(2), sub(3), sub(4), now)
		},
	},
	{ // May 8(th)(,) (2023) | May 2023 | May
		re: regexp.MustCompile(prep + `\b` + months + `\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{4}))?\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			m := monthNum(sub(2))
			if m == 0 {
				return 0, 0, false
			}
			year := 0
			if sub(4) != "" {
				year, _ = strconv.Atoi(sub(4))
			}
			if sub(3) == "" {
				if year == 0 && sub(1) == "" {
					return 0, 0, false // a bare "May" is too often the verb
				}
				if year == 0 {
					// The latest such month that has begun.
					year = now.Year()
					if time.Date(year, m, 1, 0, 0, 0, 0, now.Location()).After(now) {
						year--
					}
				}
				a := time.Date(year, m, 1, 0, 0, 0, 0, now.Location())
				return ms(a, a.AddDate(0, 1, 0))
			}
			if year == 0 {
				year = now.Year()
				day, _ := strconv.Atoi(sub(3))
				if time.Date(year, m, day, 0, 0, 0, 0, now.Location()).After(now) {
					year--
				}
			}
			return dateWindow(strconv.Itoa(year), strconv.Itoa(int(m)), sub(3), now)
		},
	},
	{ // 8 May 2023
		re: regexp.MustCompile(prep + `\b(\d{1,2})(?:st|nd|rd|th)?\s+` + months + `\.?(?:,?\s+(\d{4}))?\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			m := monthNum(sub(3))
			if m == 0 {
				return 0, 0, false
			}
			year := now.Year()
			if sub(4) != "" {
				year, _ = strconv.Atoi(sub(4))
			} else {
				day, _ := strconv.Atoi(sub(2))
				if time.Date(year, m, day, 0, 0, 0, 0, now.Location()).After(now) {
					year--
				}
			}
			return dateWindow(strconv.Itoa(year), strconv.Itoa(int(m)), sub(2), now)
		},
	},
	{ // in 2023 (a bare year needs a preposition)
		re: regexp.MustCompile(`(?i:\b(in|during|since|from|after|before)\s+)((?:19|20)\d\d)\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			y, _ := strconv.Atoi(sub(2))
			a := time.Date(y, 1, 1, 0, 0, 0, 0, now.Location())
			return ms(a, a.AddDate(1, 0, 0))
		},
	},
}

// dateWindow is the calendar day y-m-d (validated: 2023-02-30 is not a
// date).
func dateWindow(ys, mstr, ds string, now time.Time) (int64, int64, bool) {
	y, err1 := strconv.Atoi(ys)
	m, err2 := strconv.Atoi(mstr)
	d, err3 := strconv.Atoi(ds)
	if err1 != nil || err2 != nil || err3 != nil || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, 0, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, now.Location())
	if t.Day() != d || t.Month() != time.Month(m) {
		return 0, 0, false
	}
	return ms(t, t.AddDate(0, 0, 1))
}
