// Package timephrase recognises English time expressions ("yesterday",
// "last week", "two days ago", "early June", "last summer", "Christmas",
// "on May 7", "in 2022", ...) and resolves them to windows of unix
// milliseconds relative to a reference time. The query side uses it for
// the time phrases of a question (Parse, relative to the request's now);
// the full-text projection uses it for the times an item's text talks
// about (Mentions, relative to the item's own time). Both are pure
// functions of their arguments: calendar days are those of the reference
// time's location.
package timephrase

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Match is one recognised time phrase and the window it stands for:
// content time in [Since, Until) in unix ms, 0 meaning open.
type Match struct {
	Phrase string `json:"phrase"`
	Since  int64  `json:"since_ms,omitempty"`
	Until  int64  `json:"until_ms,omitempty"`
}

// Parsed is the result of Parse.
type Parsed struct {
	Text    string  // the input with the phrases cut out (seasons and holidays kept), white space collapsed
	Since   int64   // intersection of every window (0 = open)
	Until   int64   // (0 = open); Until <= Since means no time matches
	Matches []Match // in order of appearance
}

// Parse finds time phrases in text and turns them into windows
// relative to now, using now's location for calendar days (pass a UTC now
// for UTC days). Recognised (case-insensitive, except month names, which
// must be capitalised — "may" and "march" are also ordinary words):
//
//	today, tonight, yesterday, last night, tomorrow, the day before
//	  yesterday, the day after tomorrow
//	this|last|next week|weekend|month|year (calendar; weeks start Monday;
//	  a weekend is Saturday 00:00 to Monday 00:00, the last one the one
//	  before this week), the week|month|year before last
//	N days|weeks|weekends|months|years ago (N a number, a word up to
//	  twelve, a/an, "a couple of", "a few"): that calendar unit
//	the past|last N days|weeks|months (rolling, from now − N units on)
//	the past week|month|year (rolling: 7 days, 1 month, 1 year)
//	Monday … Sunday, last Monday: the most recent such day before today;
//	  next Monday: the first after today; this Monday: in this week;
//	  abbreviations (Tues, Fri) only after last/this/next
//	May 2023, May 8, May 8 2023, 8 May 2023, the 8th of May, May (the
//	  latest May that has begun), in 2023 (a bare year needs
//	  in/during/since/before/after)
//	early|mid|late May (2023), the beginning|middle|end of May: days
//	  1-10, 11-20, 21-end; early|mid|late 2023: four-month thirds
//	last|this|next summer (spring, autumn/fall, winter: three months from
//	  March, June, September, December), summer 2022, the summer of 2022,
//	  in the summer (the latest that has begun; a bare season needs a
//	  preposition)
//	Christmas (Eve), New Year's (Eve|Day), Halloween, Valentine's Day,
//	  Thanksgiving (US), Easter, Independence Day, optionally with
//	  last/this/next or a year: the latest that has begun
//	2023-05-08
//
// Each may be preceded by in, on, at, during (the window itself), since, from
// (from its start on), after (from its end on) or before (up to its start).
// The phrase, with its preposition, is cut from Text, except seasons and
// holidays, whose words are kept: they also say what a text is about. Several phrases
// intersect. The result is a pure function of (text, now).
func Parse(text string, now time.Time) Parsed {
	spans := scan(text, now, false)
	out := Parsed{}
	var b strings.Builder
	pos := 0
	for _, sp := range spans {
		b.WriteString(text[pos:sp.lo])
		b.WriteByte(' ')
		if sp.keep {
			b.WriteString(text[sp.lo:sp.hi])
			b.WriteByte(' ')
		}
		pos = sp.hi
		s, u := applyPrep(sp.prep, sp.a, sp.b)
		m := Match{Phrase: strings.TrimSpace(text[sp.lo:sp.hi]), Since: s, Until: u}
		out.Matches = append(out.Matches, m)
		if len(out.Matches) == 1 {
			out.Since, out.Until = m.Since, m.Until
		} else {
			out.Since, out.Until = intersect(out.Since, out.Until, m.Since, m.Until)
		}
	}
	b.WriteString(text[pos:])
	out.Text = strings.Join(strings.Fields(b.String()), " ")
	if len(out.Matches) == 0 {
		out.Text = text
	}
	return out
}

// Range is a window of time [Since, Until) in unix ms.
type Range struct{ Since, Until int64 }

// UpTo reports whether r is a duration up to at, the time of writing
// ("I've had them for 3 years", "seven years now", "the past 3 days"):
// such a window ends 1 ms after at, where a calendar phrase ("today",
// "this month") ends at a day boundary. A question that asks how long
// is answered by a duration.
func (r Range) UpTo(at int64) bool { return r.Until == at+1 }

// MaxMentions caps the ranges Mentions returns for one text.
const MaxMentions = 8

// Mentions returns the windows the time expressions of text stand for,
// resolved against at (the time the text was written; pass it in UTC for
// UTC days): "yesterday" in a text written on 2023-10-04 is 2023-10-03.
// A preposition does not open the window ("since 2019" mentions 2019), and
// open or empty windows are dropped. Besides Parse's phrases, a text
// mentions durations up to the time of writing (Range.UpTo): "for N
// days|weeks|months|years" in the perfect ("I've had them for 3 years",
// "have known them for almost four years"; N as Parse reads it, after
// over, about, almost, nearly, around, roughly, at least, more than,
// close to, just over or under), "been N years" ("it's been two weeks")
// and "N years now|already": [at − N units, at + 1 ms). "Staying for two
// weeks" is a plan, not a time gone by: without have, has, had, been or
// 've earlier in its clause, a "for" duration is not read. Vague phrases
// place a time before the writing: "recently" the past month (to the end
// of the day), "the other day" the past week, "a while ago" the past
// year (both to the start of the day); "lately" is a state ("busy
// lately"), not when something happened, and is not read. A question
// does not ask for these as windows ("what did she do recently" asked
// today), so Parse skips them too. At most MaxMentions, in order of
// appearance, duplicates removed. A pure function of (text, at).
func Mentions(text string, at time.Time) []Range {
	var out []Range
	for _, sp := range scan(text, at, true) {
		if sp.a == 0 || sp.b <= sp.a {
			continue
		}
		r := Range{sp.a, sp.b}
		dup := false
		for _, o := range out {
			dup = dup || o == r
		}
		if !dup {
			out = append(out, r)
		}
		if len(out) == MaxMentions {
			break
		}
	}
	return out
}

// candidates is the set of rules (bit i: rules[i]) that can match text:
// every rule's match holds one of its words as a whole ASCII word (a
// maximal run of [0-9A-Za-z_], what \b delimits; rule.words,
// rule.casedWords, rule.year4). One pass over the bytes and a map
// look-up per word of 3 to 12 letters, so that a text without a time
// word costs no lower-casing and no expression. all: the text holds a
// rune that case-folds or lower-cases to an ASCII letter (the Kelvin
// sign, the long s, the dotted capital I): the case-insensitive
// expressions match it where a word scan does not, so every rule must
// run.
func candidates(text string) (mask uint32, all bool) {
	var buf [12]byte
	start := -1
	var h uint32
	nonASCII := false
	for i := 0; i <= len(text); i++ {
		if i < len(text) {
			c := text[i]
			if c >= 0x80 {
				nonASCII = true
			}
			if isWordByte(c) {
				if start < 0 {
					start, h = i, 0
				}
				h = wordHashStep(h, c)
				continue
			}
		}
		if start < 0 {
			continue
		}
		w := text[start:i]
		start = -1
		if len(w) < 3 || len(w) > len(buf) {
			continue
		}
		if len(w) == 4 && isDigit(w[0]) && isDigit(w[1]) && isDigit(w[2]) && isDigit(w[3]) {
			mask |= year4Rules
			continue
		}
		if wordHashes[h/64%uint32(len(wordHashes))]&(1<<(h%64)) == 0 {
			continue // no rule's word, in any case
		}
		mask |= casedWords[w]
		for j := 0; j < len(w); j++ {
			c := w[j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[j] = c
		}
		mask |= ruleWords[string(buf[:len(w)])]
	}
	if nonASCII {
		for _, r := range asciiFolding {
			if strings.Contains(text, r) {
				return 0, true
			}
		}
	}
	return mask, false
}

// wordHashStep hashes one more byte of a word, ignoring ASCII case (a
// letter's 0x20 bit), so that most words are told from every rule's words
// by one bit of wordHashes, before any map look-up.
func wordHashStep(h uint32, c byte) uint32 { return (h ^ uint32(c|0x20)) * 16777619 }

func wordHash(w string) (h uint32) {
	for i := 0; i < len(w); i++ {
		h = wordHashStep(h, w[i])
	}
	return h
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

var (
	// ruleWords: lower-cased word -> the rules that hold it (rule.words);
	// casedWords: the same for cased rules, word as written;
	// year4Rules: the rules with year4.
	ruleWords, casedWords map[string]uint32
	year4Rules            uint32
	// wordHashes has bit wordHash(w) mod 4096 set for every word of
	// ruleWords and casedWords.
	wordHashes [64]uint64
	// asciiFolding: the runes above ASCII that Go's case folding or case
	// mapping takes to an ASCII letter (dotted capital I, dotless i, long
	// s, Kelvin sign; TestASCIIFolding derives the list from the Unicode
	// tables).
	asciiFolding = []string{"\u0130", "\u0131", "\u017f", "\u212a"}
)

func init() {
	ruleWords, casedWords = map[string]uint32{}, map[string]uint32{}
	for i, r := range rules {
		for _, w := range r.words {
			ruleWords[w] |= 1 << i
		}
		for _, w := range r.casedWords {
			casedWords[w] |= 1 << i
		}
		for _, w := range append(r.words[:len(r.words):len(r.words)], r.casedWords...) {
			h := wordHash(w)
			wordHashes[h/64%uint32(len(wordHashes))] |= 1 << (h % 64)
		}
		if r.year4 {
			year4Rules |= 1 << i
		}
	}
}

// span is one match of a rule in a text: bytes [lo,hi), the anchor's
// window [a,b) and the preposition before it (lower case, "" for none).
type span struct {
	lo, hi int
	a, b   int64
	prep   string
	keep   bool // rule.keep
}

// scan finds the phrases of text, non-overlapping: earliest start first,
// then the longest. mentions: also the rules only a text's mentions read
// (rule.mention).
func scan(text string, now time.Time, mentions bool) []span {
	mask, all := candidates(text)
	return scanRules(text, now, mask, all, mentions)
}

// scanRules is scan running the rules in mask (all: every rule).
func scanRules(text string, now time.Time, mask uint32, all, mentions bool) []span {
	if mask == 0 && !all {
		return nil
	}
	var spans []span
	lower := strings.ToLower(text)
	for i := range rules {
		r := &rules[i]
		if !all && mask&(1<<i) == 0 || r.mention && !mentions || !containsAny(lower, r.also) {
			continue
		}
		if !all && r.pre != nil && usePre && !r.pre(lower) {
			continue
		}
		re, in := r.re, text
		if r.lre != nil && len(lower) == len(text) { // same offsets (ASCII case changes)
			re, in = r.lre, lower
		}
		for _, loc := range re.FindAllStringSubmatchIndex(in, -1) {
			lo, p := loc[0], strings.ToLower(text[loc[2]:loc[3]])
			if !r.ownPrep {
				p, lo = prepBefore(text[:loc[0]])
				if p == "" {
					lo = loc[0]
				}
			}
			sub := func(i int) string {
				if i == 1 {
					return p
				}
				if loc[2*i] < 0 {
					return ""
				}
				return text[loc[2*i]:loc[2*i+1]]
			}
			if r.perfect && strings.EqualFold(sub(2), "for") && !perfectBefore(text[:loc[0]]) {
				continue
			}
			a, b, ok := r.eval(sub, now)
			if !ok {
				continue
			}
			spans = append(spans, span{lo: lo, hi: loc[1], a: a, b: b, prep: p, keep: r.keep})
		}
	}
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].lo != spans[j].lo {
			return spans[i].lo < spans[j].lo
		}
		return spans[i].hi > spans[j].hi
	})
	out := spans[:0]
	pos := 0
	for _, sp := range spans {
		if sp.lo < pos {
			continue
		}
		out = append(out, sp)
		pos = sp.hi
	}
	return out
}

// intersect intersects [s1,u1) and [s2,u2) where 0 means open.
func intersect(s1, u1, s2, u2 int64) (int64, int64) {
	s, u := s1, u1
	if s2 != 0 && (s == 0 || s2 > s) {
		s = s2
	}
	if u2 != 0 && (u == 0 || u2 < u) {
		u = u2
	}
	return s, u
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

type rule struct {
	// words, casedWords, year4: every match of the rule holds one of
	// words as a whole word (case-insensitive), one of casedWords (as
	// written) or a word of four digits (see candidates: the expressions
	// are slow, so a rule runs only on a text that holds one). cased: the
	// rule needs a capitalised month name.
	words      []string
	casedWords []string
	year4      bool
	cased      bool
	// ownPrep: the expression matches its preposition itself (group 1).
	ownPrep bool
	// keep: the phrase stays in Parsed.Text: a season or a holiday is
	// also what a text talks about ("pictures from last summer", "the
	// Christmas market"), so its words still search.
	keep bool
	// mention: the rule reads what a text mentions (Mentions) but a
	// question does not ask for as a window (a duration up to the time
	// of writing, "I've had them for 3 years"; "recently"): Parse skips
	// it. perfect: when group 2 is "for", the clause before the phrase
	// must be in the perfect ("have", "'ve", "has", "had", "been"): "I'm
	// going there for two weeks" is a plan, not the time since something
	// happened.
	mention, perfect bool
	// also: the lower-cased text must contain one of these too (nil:
	// no such need), a cheap test before a slow expression; every match
	// holds one.
	also []string
	// lre is re without case folding, run on the lower-cased text (about
	// ten times faster here); nil for rules that need capitals (months).
	lre *regexp.Regexp
	re  *regexp.Regexp
	// pre, when set, is a condition on the lower-cased text that every
	// match needs (a cheaper test than the expression, which tries every
	// word boundary; see numberBefore). Only valid when no rune of the
	// text folds to an ASCII letter (candidates' all is false).
	pre  func(lower string) bool
	eval func(sub func(int) string, now time.Time) (since, until int64, ok bool)
}

// prep opens every rule's expression with an empty group 1 where the
// preposition goes: scan looks for one just before the match (an optional
// preposition inside the expressions made each of them try every
// position of the text the slow way).
const prep = `\b()`

// prepBefore returns the preposition (lower case) that ends text, with
// the white space after it, and where it starts; "" when none.
func prepBefore(text string) (string, int) {
	end := len(text)
	i := end
	for i > 0 && (text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n') {
		i--
	}
	if i == end {
		return "", end
	}
	j := i
	for j > 0 && (text[j-1] >= 'a' && text[j-1] <= 'z' || text[j-1] >= 'A' && text[j-1] <= 'Z') {
		j--
	}
	if j > 0 && isWordByte(text[j-1]) {
		return "", end
	}
	switch w := strings.ToLower(text[j:i]); w {
	case "in", "on", "at", "during", "since", "from", "after", "before":
		return w, j
	}
	return "", end
}

// containsAny reports whether s contains one of subs (true for none).
func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return len(subs) == 0
}

// perfectBefore reports whether the clause that ends text (back to the
// last sentence or clause mark, at most 80 bytes) holds a perfect
// auxiliary: "have", "has", "had", "been" or a contracted "'ve" (also with
// a typographic apostrophe), in any case.
func perfectBefore(text string) bool {
	if len(text) > 80 {
		text = text[len(text)-80:]
	}
	text = strings.ToLower(text)
	if i := strings.LastIndexAny(text, ".!?;:\n"); i >= 0 {
		text = text[i+1:]
	}
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '\'' || r == '’') }) {
		switch {
		case f == "have" || f == "has" || f == "had" || f == "been",
			strings.HasSuffix(f, "'ve") || strings.HasSuffix(f, "’ve"):
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// usePre turns the rules' pre conditions off in a test that checks
// they never drop a match.
var usePre = true

// isRESpace is \s of the expressions (RE2: no \v).
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// forEachWord calls fn with each whole word of s (a maximal run of
// [0-9A-Za-z_], what \b delimits) and where it starts and ends, until fn
// returns true; it reports whether fn did.
func forEachWord(s string, fn func(w string, lo, hi int) bool) bool {
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isWordByte(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && fn(s[start:i], start, i) {
			return true
		}
		start = -1
	}
	return false
}

// wordBefore is the whole word that ends where the white space ending at
// i starts ("" if another byte is there); ok is false when no white space
// ends at i.
func wordBefore(s string, i int) (w string, ok bool) {
	j := i
	for j > 0 && isRESpace(s[j-1]) {
		j--
	}
	k := j
	for k > 0 && isWordByte(s[k-1]) {
		k--
	}
	return s[k:j], j < i
}

// wordAfter is the whole word that starts where the white space starting
// at i ends; ok is false when no white space starts at i.
func wordAfter(s string, i int) (w string, ok bool) {
	j := i
	for j < len(s) && isRESpace(s[j]) {
		j++
	}
	k := j
	for k < len(s) && isWordByte(s[k]) {
		k++
	}
	return s[j:k], j > i
}

// Words a numWord can end with ("a couple of", "a few"): the word before
// a unit in every match of the rules with a count.
var numWordEnds = map[string]bool{"a": true, "an": true, "one": true, "two": true, "three": true, "four": true, "five": true,
	"six": true, "seven": true, "eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true, "of": true, "few": true}

var countUnits = map[string]bool{"day": true, "days": true, "week": true, "weeks": true, "month": true, "months": true, "year": true, "years": true}

var agoUnits = map[string]bool{"day": true, "days": true, "week": true, "weeks": true, "weekend": true, "weekends": true,
	"month": true, "months": true, "year": true, "years": true}

// numberBefore is the pre condition of the rules of a count and one of
// units ("for 3 years", "the past two weeks", "3 days ago"): their
// matches hold numWord, white space and a whole unit word, and numWord
// starts at a word boundary, so the word before the unit's white space is
// a number word or ends in a digit (\d{1,3}).
func numberBefore(units map[string]bool) func(lower string) bool {
	return func(lower string) bool {
		return forEachWord(lower, func(w string, lo, _ int) bool {
			if !units[w] {
				return false
			}
			p, ok := wordBefore(lower, lo)
			return ok && p != "" && (isDigit(p[len(p)-1]) || numWordEnds[p])
		})
	}
}

// wordAfterSpace reports whether the whole word before the white space
// that ends at lo is want.
func wordAfterSpace(lower string, lo int, want string) bool {
	p, ok := wordBefore(lower, lo)
	return ok && p == want
}

// dayWordRule is the pre condition of "yesterday", "last night", "this
// morning": every match holds yesterday, today, tonight or tomorrow as a
// whole word, or night after "last", or morning, afternoon or evening
// after "this".
func dayWordRule(lower string) bool {
	return forEachWord(lower, func(w string, lo, _ int) bool {
		switch w {
		case "yesterday", "today", "tonight", "tomorrow":
			return true
		case "night":
			return wordAfterSpace(lower, lo, "last")
		case "morning", "afternoon", "evening":
			return wordAfterSpace(lower, lo, "this")
		}
		return false
	})
}

// vagueRule is the pre condition of "recently", "the other day", "a
// while ago".
func vagueRule(lower string) bool {
	return forEachWord(lower, func(w string, lo, _ int) bool {
		switch w {
		case "recently":
			return true
		case "day":
			return wordAfterSpace(lower, lo, "other")
		case "ago":
			return wordAfterSpace(lower, lo, "while")
		}
		return false
	})
}

// holidayRule is the pre condition of the holidays: every match holds one
// of their names as a whole word, or year(s) after "new".
func holidayRule(lower string) bool {
	return forEachWord(lower, func(w string, lo, _ int) bool {
		switch w {
		case "christmas", "xmas", "halloween", "valentine", "valentines", "thanksgiving", "easter", "independence", "fourth":
			return true
		case "year", "years":
			return wordAfterSpace(lower, lo, "new")
		}
		return false
	})
}

var (
	relativeUnits = map[string]bool{"weekend": true, "week": true, "month": true, "year": true}
	relativeWords = map[string]bool{"this": true, "last": true, "past": true, "previous": true, "next": true}
)

// relativeUnit is the pre condition of "this/last/next week": every match
// holds a whole unit word with one of relativeWords as the word before
// its white space, or "before"/"after" as the word after it.
func relativeUnit(lower string) bool {
	return forEachWord(lower, func(w string, lo, hi int) bool {
		if !relativeUnits[w] {
			return false
		}
		if p, ok := wordBefore(lower, lo); ok && relativeWords[p] {
			return true
		}
		n, ok := wordAfter(lower, hi)
		return ok && (n == "before" || n == "after")
	})
}

const numWord = `(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|couple of|few)`

const months = `(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)`

// monthNames are the words of months.
var monthNames = strings.Split(months[1:len(months)-1], "|")

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

// weekdayNum is the weekday of a name or an abbreviation of at least
// three letters ("tues", "fri").
func weekdayNum(s string) time.Weekday {
	s = strings.ToLower(s)
	if len(s) < 3 {
		return -1
	}
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.HasPrefix(strings.ToLower(d.String()), s) {
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

var rules = []rule{
	{ // the day before yesterday, yesterday, last night, today, tomorrow
		words: []string{"yesterday", "night", "today", "tonight", "tomorrow", "morning", "afternoon", "evening"},
		re:    regexp.MustCompile(prep + `(?i:(the day before yesterday|the day after tomorrow|yesterday|last night|today|tonight|tomorrow|this morning|this afternoon|this evening))\b`),
		pre:   dayWordRule,
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			d := dayStart(now)
			switch strings.ToLower(sub(2)) {
			case "the day before yesterday":
				d = d.AddDate(0, 0, -2)
			case "yesterday", "last night":
				d = d.AddDate(0, 0, -1)
			case "tomorrow":
				d = d.AddDate(0, 0, 1)
			case "the day after tomorrow":
				d = d.AddDate(0, 0, 2)
			}
			return ms(d, d.AddDate(0, 0, 1))
		},
	},
	{ // this/last/next week|month|year|weekend, the past week|month|year, the week before last
		words: []string{"weekend", "week", "month", "year"},
		re:    regexp.MustCompile(prep + `(?i:(?:the\s+)?(?:(this|last|past|previous|next)\s+(weekend|week|month|year)|(weekend|week|month|year)\s+(before\s+last|after\s+next)))\b`),
		pre:   relativeUnit,
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			which, unit := strings.ToLower(sub(2)), strings.ToLower(sub(3))
			back := 1
			switch {
			case sub(4) != "":
				unit, back = strings.ToLower(sub(4)), 2
				if strings.HasPrefix(strings.ToLower(sub(5)), "after") {
					back = -2
				}
			case which == "this":
				back = 0
			case which == "next":
				back = -1
			case which == "past" && unit != "weekend":
				switch unit {
				case "week":
					return ms(now.AddDate(0, 0, -7), now.Add(time.Millisecond))
				case "month":
					return ms(now.AddDate(0, -1, 0), now.Add(time.Millisecond))
				default:
					return ms(now.AddDate(-1, 0, 0), now.Add(time.Millisecond))
				}
			}
			return unitBack(unit, back, now)
		},
	},
	{ // N days|weeks|weekends|months|years ago
		words: []string{"ago"},
		re:    regexp.MustCompile(prep + `(?i:` + numWord + `\s+(days?|weeks?|weekends?|months?|years?)\s+ago)\b`),
		pre:   numberBefore(agoUnits),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			n, ok := parseNum(sub(2))
			if !ok {
				return 0, 0, false
			}
			unit := strings.TrimSuffix(strings.ToLower(sub(3)), "s")
			if unit == "day" {
				d := dayStart(now).AddDate(0, 0, -n)
				return ms(d, d.AddDate(0, 0, 1))
			}
			return unitBack(unit, n, now)
		},
	},
	{ // the past/last N days|weeks|months (rolling)
		words: []string{"day", "days", "week", "weeks", "month", "months"},
		re:    regexp.MustCompile(prep + `(?i:(?:the\s+)?(?:past|last)\s+` + numWord + `\s+(days?|weeks?|months?))\b`),
		pre:   numberBefore(countUnits),
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
	{ // (have had them) for 3 years, (it's been) two months, seven years now, 5 years already: a duration up to the time of writing
		words:   []string{"day", "days", "week", "weeks", "month", "months", "year", "years"},
		mention: true,
		perfect: true,
		also:    []string{"for", "been", "now", "already"},
		re:      regexp.MustCompile(prep + `(?i:(?:(for|been)\s+(?:(?:over|about|almost|nearly|around|roughly|at\s+least|more\s+than|close\s+to|just\s+over|under)\s+)?)?` + numWord + `\s+(days?|weeks?|months?|years?)(\s+(?:now|already))?)\b`),
		pre:     numberBefore(countUnits),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			if sub(2) == "" && sub(5) == "" {
				return 0, 0, false // "3 years" alone says no time
			}
			return durationBack(sub(3), sub(4), now)
		},
	},
	{ // recently, the other day, a while ago: vague, but a time the text places before its writing
		words:   []string{"recently", "day", "ago"}, // not "other", "while": too common to run the rule for
		mention: true,
		re:      regexp.MustCompile(prep + `(?i:(just\s+recently|recently|the\s+other\s+day|a\s+while\s+ago))\b`),
		pre:     vagueRule,
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			d := dayStart(now)
			switch w := strings.ToLower(sub(2)); {
			case strings.HasPrefix(w, "the"):
				return ms(d.AddDate(0, 0, -7), d)
			case strings.HasPrefix(w, "a"):
				return ms(now.AddDate(-1, 0, 0), d)
			}
			return ms(now.AddDate(0, -1, 0), d.AddDate(0, 0, 1))
		},
	},
	{ // (last|this|next) Monday; abbreviations (Tues, Fri) only after last/this/next
		words: []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
			"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"},
		re: regexp.MustCompile(prep + `(?i:(?:(last|this|next)\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(last|this|next)\s+(mon|tues?|wed|thu|thurs?|fri|sat|sun)\.?)\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			which, day := strings.ToLower(sub(2)), sub(3)
			if day == "" {
				which, day = strings.ToLower(sub(4)), sub(5)
			}
			wd := weekdayNum(day)
			if wd < 0 {
				return 0, 0, false
			}
			var d time.Time
			switch which {
			case "next": // the first such day after today
				d = dayStart(now).AddDate(0, 0, 1)
				for d.Weekday() != wd {
					d = d.AddDate(0, 0, 1)
				}
			case "this": // that day of the current week
				d = weekStart(now).AddDate(0, 0, (int(wd)+6)%7)
			default: // the most recent such day before today
				d = dayStart(now).AddDate(0, 0, -1)
				for d.Weekday() != wd {
					d = d.AddDate(0, 0, -1)
				}
			}
			return ms(d, d.AddDate(0, 0, 1))
		},
	},
	{ // 2023-05-08
		year4: true,
		re:    regexp.MustCompile(prep + `(\d{4})-(\d{2})-(\d{2})\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			return dateWindow(sub(2), sub(3), sub(4), now)
		},
	},
	{ // May 8(th)(,) (2023) | May 2023 | May
		cased:      true,
		casedWords: monthNames,
		re:         regexp.MustCompile(prep + `\b` + months + `\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{4}))?\b`),
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
					year = latestYear(now, m, 1)
				}
				a := time.Date(year, m, 1, 0, 0, 0, 0, now.Location())
				return ms(a, a.AddDate(0, 1, 0))
			}
			day, _ := strconv.Atoi(sub(3))
			if year == 0 {
				year = latestYear(now, m, day)
			}
			return dateWindow(strconv.Itoa(year), strconv.Itoa(int(m)), sub(3), now)
		},
	},
	{ // 8 May 2023
		cased:      true,
		casedWords: monthNames,
		re:         regexp.MustCompile(prep + `\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + months + `\.?(?:,?\s+(\d{4}))?\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			m := monthNum(sub(3))
			if m == 0 {
				return 0, 0, false
			}
			day, _ := strconv.Atoi(sub(2))
			year := latestYear(now, m, day)
			if sub(4) != "" {
				year, _ = strconv.Atoi(sub(4))
			}
			return dateWindow(strconv.Itoa(year), strconv.Itoa(int(m)), sub(2), now)
		},
	},
	{ // early|mid|late May (2023), the beginning|end of May; early|mid|late 2023
		casedWords: monthNames,
		year4:      true,
		re:         regexp.MustCompile(prep + `(?i:(early|mid|late|the\s+(?:beginning|start|middle|end)\s+of)[\s-]+)(?:` + months + `(?:,?\s+(\d{4}))?|((?:19|20)\d\d))\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			part := strings.ToLower(strings.Fields(sub(2))[0])
			if part == "the" {
				part = strings.ToLower(strings.Fields(sub(2))[1])
			}
			third := map[string]int{"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}[part]
			if sub(5) != "" { // a year, in thirds of four months
				y, _ := strconv.Atoi(sub(5))
				a := time.Date(y, time.Month(1+4*third), 1, 0, 0, 0, 0, now.Location())
				return ms(a, a.AddDate(0, 4, 0))
			}
			m := monthNum(sub(3))
			if m == 0 {
				return 0, 0, false
			}
			year := latestYear(now, m, 1)
			if sub(4) != "" {
				year, _ = strconv.Atoi(sub(4))
			}
			a := time.Date(year, m, 1+10*third, 0, 0, 0, 0, now.Location())
			b := a.AddDate(0, 0, 10)
			if third == 2 {
				b = time.Date(year, m+1, 1, 0, 0, 0, 0, now.Location())
			}
			return ms(a, b)
		},
	},
	{ // last|this|next summer, summer 2022, the summer of 2022, (in) the summer
		words: []string{"spring", "summer", "autumn", "fall", "winter"},
		keep:  true,
		re:    regexp.MustCompile(prep + `(?i:(?:(last|this|next|past)\s+|the\s+)?(spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?((?:19|20)\d\d))?)\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			which, season, ys := strings.ToLower(sub(2)), strings.ToLower(sub(3)), sub(4)
			if which == "" && ys == "" && sub(1) == "" {
				return 0, 0, false // "fall", "spring" alone are too often verbs
			}
			start := map[string]time.Month{"spring": time.March, "summer": time.June, "autumn": time.September, "fall": time.September, "winter": time.December}[season]
			at := func(y int) time.Time { return time.Date(y, start, 1, 0, 0, 0, 0, now.Location()) }
			if ys != "" {
				y, _ := strconv.Atoi(ys)
				return ms(at(y), at(y).AddDate(0, 3, 0))
			}
			// The latest such season that has begun.
			y := now.Year()
			if at(y).After(now) {
				y--
			}
			switch which {
			case "last", "past":
				if !at(y).AddDate(0, 3, 0).After(now) { // ended: it is the last one
					break
				}
				y--
			case "next":
				y++
			case "this":
				if season != "winter" {
					y = now.Year()
				}
			}
			return ms(at(y), at(y).AddDate(0, 3, 0))
		},
	},
	{ // Christmas (Eve), New Year's (Eve|Day), Halloween, Valentine's Day, Thanksgiving, Easter, the Fourth of July
		words: []string{"christmas", "xmas", "year", "years", "halloween", "valentine", "valentines", "thanksgiving", "easter", "independence", "fourth"},
		keep:  true,
		re:    regexp.MustCompile(prep + `(?i:(?:(last|this|next)\s+)?(christmas\s+eve|christmas|xmas|new\s+year'?s(?:\s+eve|\s+day)?|halloween|valentine'?s(?:\s+day)?|thanksgiving|easter|independence\s+day|the\s+fourth\s+of\s+july)(?:,?\s+((?:19|20)\d\d))?)\b`),
		pre:   holidayRule,
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			which, name := strings.ToLower(sub(2)), strings.Join(strings.Fields(strings.ToLower(sub(3))), " ")
			day := func(y int) time.Time { return holiday(name, y, now.Location()) }
			if sub(4) != "" {
				y, _ := strconv.Atoi(sub(4))
				d := day(y)
				return ms(d, d.AddDate(0, 0, 1))
			}
			y := now.Year()
			today := dayStart(now)
			switch which {
			case "next":
				if !day(y).After(today) {
					y++
				}
			case "this":
			case "last":
				if !day(y).Before(today) {
					y--
				}
			default: // the latest that has begun
				if day(y).After(now) {
					y--
				}
			}
			d := day(y)
			return ms(d, d.AddDate(0, 0, 1))
		},
	},
	{ // in 2023 (a bare year needs a preposition)
		year4:   true,
		ownPrep: true,
		re:      regexp.MustCompile(`(?i:\b(in|during|since|from|after|before)\s+)((?:19|20)\d\d)\b`),
		eval: func(sub func(int) string, now time.Time) (int64, int64, bool) {
			y, _ := strconv.Atoi(sub(2))
			a := time.Date(y, 1, 1, 0, 0, 0, 0, now.Location())
			return ms(a, a.AddDate(1, 0, 0))
		},
	},
}

// durationBack is the duration of n units (a number word) up to now:
// [now − n units, now + 1 ms), a window that ends where a duration ends
// (Range.UpTo).
func durationBack(n, unit string, now time.Time) (int64, int64, bool) {
	k, ok := parseNum(n)
	if !ok {
		return 0, 0, false
	}
	var from time.Time
	switch strings.TrimSuffix(strings.ToLower(unit), "s") {
	case "day":
		from = now.AddDate(0, 0, -k)
	case "week":
		from = now.AddDate(0, 0, -7*k)
	case "month":
		from = now.AddDate(0, -k, 0)
	default:
		from = now.AddDate(-k, 0, 0)
	}
	return ms(from, now.Add(time.Millisecond))
}

// unitBack is the calendar week|weekend|month|year n units before now's
// (negative n: after it). A weekend is Saturday 00:00 to Monday 00:00;
// the last weekend is the one that ended before today's week began.
func unitBack(unit string, n int, now time.Time) (int64, int64, bool) {
	switch unit {
	case "weekend":
		w := weekStart(now).AddDate(0, 0, 5-7*n)
		return ms(w, w.AddDate(0, 0, 2))
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
}

// latestYear is the year of the latest month m, day d that has begun by
// now.
func latestYear(now time.Time, m time.Month, d int) int {
	y := now.Year()
	if time.Date(y, m, d, 0, 0, 0, 0, now.Location()).After(now) {
		y--
	}
	return y
}

// holiday is the day of a named holiday in year y (the names of the
// holiday rule, lower case, spaces collapsed; Thanksgiving is the US one,
// Easter the Western one).
func holiday(name string, y int, loc *time.Location) time.Time {
	d := func(m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, loc) }
	switch {
	case name == "christmas eve":
		return d(time.December, 24)
	case name == "christmas" || name == "xmas":
		return d(time.December, 25)
	case strings.HasSuffix(name, "eve"): // new year's eve
		return d(time.December, 31)
	case strings.HasPrefix(name, "new year"):
		return d(time.January, 1)
	case name == "halloween":
		return d(time.October, 31)
	case strings.HasPrefix(name, "valentine"):
		return d(time.February, 14)
	case name == "thanksgiving": // the fourth Thursday of November
		t := d(time.November, 1)
		for t.Weekday() != time.Thursday {
			t = t.AddDate(0, 0, 1)
		}
		return t.AddDate(0, 0, 21)
	case name == "easter": // anonymous Gregorian algorithm
		a, b, c := y%19, y/100, y%100
		dd, e := b/4, b%4
		f := (b + 8) / 25
		g := (b - f + 1) / 3
		h := (19*a + b - dd - g + 15) % 30
		i, k := c/4, c%4
		l := (32 + 2*e + 2*i - h - k) % 7
		m := (a + 11*h + 22*l) / 451
		return d(time.Month((h+l-7*m+114)/31), (h+l-7*m+114)%31+1)
	}
	return d(time.July, 4) // independence day, the fourth of july
}

func init() {
	for i := range rules {
		r := &rules[i]
		if r.cased || strings.Contains(r.re.String(), months) {
			continue
		}
		r.lre = regexp.MustCompile(strings.ReplaceAll(r.re.String(), "(?i:", "(?:"))
	}
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
