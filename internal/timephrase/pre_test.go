package timephrase

import (
	"bufio"
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// scanWithoutPre is scanRules with the rules' pre conditions off.
func scanWithoutPre(text string, now time.Time, mask uint32, all bool) []span {
	usePre = false
	defer func() { usePre = true }()
	return scanRules(text, now, mask, all, true)
}

// The rules' pre conditions only skip expressions that cannot match: on
// texts built from counts, units and the words around them, joined by
// every kind of white space the expressions know (and \v, which they do
// not), scan finds what it finds without them.
func TestPreConditionsKeepMatches(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	vocab := []string{"a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
		"twelve", "a couple of", "a few", "couple of", "few", "of", "1", "12", "123", "1234", "x3", "3x", "_3", "3_",
		"day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "year", "years",
		"this", "last", "past", "previous", "next", "the", "before", "after", "before last", "after next",
		"for", "been", "over", "about", "at least", "more than", "now", "already", "ago", "I've", "have", "had",
		"garden", "roses", "in", "since", "é", "İ", "\u212a"}
	other := []string{"yesterday", "today", "tonight", "tomorrow", "night", "morning", "afternoon", "evening", "just",
		"recently", "other", "day", "a", "while", "ago", "new", "year", "year's", "years", "eve", "christmas", "xmas",
		"halloween", "valentine", "valentine's", "valentines", "thanksgiving", "easter", "independence", "fourth", "of", "july", "2023"}
	phrases := []string{"the other day", "a while ago", "last night", "this morning", "this afternoon", "this evening",
		"new year's eve", "new years day", "just recently", "the day before yesterday", "the day after tomorrow",
		"the fourth of july", "independence day", "christmas eve 2022", "valentine's day"}
	variant := func(w string) string {
		if w == "" {
			return w
		}
		switch rng.Intn(10) {
		case 0:
			return strings.ToUpper(w[:1]) + w[1:]
		case 1:
			return strings.ToUpper(w)
		case 2:
			return w + "s"
		case 3:
			return "x" + w
		}
		return w
	}
	seps := []string{" ", " ", " ", " ", " ", "  ", "\t", "\n", "\r", "\f", "\v", " \t ", ",", ", ", ". ", "-", "_", "é", "'", ""}
	now := time.Date(2023, 6, 8, 15, 0, 0, 0, time.UTC)
	matched, skipped := 0, 0
	for i := 0; i < 1500; i++ {
		var b strings.Builder
		pick := func(ws []string) string { return variant(ws[rng.Intn(len(ws))]) + seps[rng.Intn(len(seps))] }
		for n := 1 + rng.Intn(5); n > 0; n-- {
			switch rng.Intn(4) {
			case 0: // a count and a unit, and what may surround them
				b.WriteString(pick([]string{"for", "been", "the past", "last", "past", "over", "at least", "in", ""}))
				b.WriteString(pick(vocab[:27]))
				b.WriteString(pick(vocab[27:37]))
				b.WriteString(pick([]string{"now", "already", "ago", "", "later"}))
			case 1: // this/last/next week, the week before last
				b.WriteString(pick(vocab[37:46]))
				b.WriteString(pick(vocab[27:37]))
				b.WriteString(pick(vocab[44:51]))
			case 2: // yesterday, this morning, the other day, new year's
				if rng.Intn(2) == 0 {
					b.WriteString(pick(other))
					b.WriteString(pick(other))
					break
				}
				for _, w := range strings.Fields(phrases[rng.Intn(len(phrases))]) {
					b.WriteString(pick([]string{w}))
				}
			default:
				b.WriteString(pick(vocab))
			}
		}
		text := b.String()
		mask, all := candidates(text)
		got, want := scanRules(text, now, mask, all, true), scanWithoutPre(text, now, mask, all)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: with pre conditions %+v, without %+v", text, got, want)
		}
		lower := strings.ToLower(text)
		for _, r := range rules {
			if r.pre != nil && !r.pre(lower) {
				skipped++
			}
		}
		if len(want) > 0 {
			matched++
		}
	}
	t.Logf("%d texts mention a time, %d expressions skipped", matched, skipped)
	if matched < 300 || skipped < 3000 {
		t.Fatalf("%d texts mention a time, %d expressions skipped: the test does not exercise the pre conditions", matched, skipped)
	}
}

// UCL_TIMEPHRASE_CORPUS=FILE (JSON lines with a "content" field, as
// `ucl` exports events) compares Mentions with and without the pre
// conditions over a real corpus and prints both times.
func TestPreConditionsCorpus(t *testing.T) {
	p := os.Getenv("UCL_TIMEPHRASE_CORPUS")
	if p == "" {
		t.Skip("UCL_TIMEPHRASE_CORPUS not set")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, e.Content)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2023, 6, 8, 15, 0, 0, 0, time.UTC)
	with := make([][]Range, len(texts))
	t0 := time.Now()
	for i, s := range texts {
		with[i] = Mentions(s, now)
	}
	dWith := time.Since(t0)
	usePre = false
	defer func() { usePre = true }()
	t0 = time.Now()
	n := 0
	for i, s := range texts {
		without := Mentions(s, now)
		if !reflect.DeepEqual(with[i], without) {
			t.Fatalf("%q: with pre conditions %v, without %v", s, with[i], without)
		}
		n += len(without)
	}
	t.Logf("%d texts, %d mentions, identical; Mentions %v with pre conditions, %v without", len(texts), n, dWith, time.Since(t0))
}
