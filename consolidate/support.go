package consolidate

import (
	"fmt"
	"strings"
	"unicode"
)

// MinTermShare is the share of a fact's plain key terms (not names, not
// numbers) that must occur in its sources; names and numbers must all
// occur. 3 of 4 lets a fact say "moved" where the turn said "moving".
const MinTermShare = 0.75

// stopwords and generic words carry no claim a source must support: a
// fact about "the user" is grounded by a turn that says "I".
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but nor of to in on at by for from with without into onto
	about as is are was were be been being am has have had do does did will would shall should can could may might must
	not no yes this that these those it its it's they them their theirs he him his she her hers we us our ours you your
	yours i me my mine who whom whose which what when where why how than then there here so too very also just only
	some any all each every both either neither other another such same more most less least much many few own
	user user's users assistant person people someone they're i'm i've i'd i'll he's she's don't doesn't didn't
	now still currently usually often always never sometimes likes like said says say tells told mentions mentioned
	states stated wants wanted`) {
		stopwords[w] = true
	}
}

// Support is the verdict of the support check on one fact.
type Support struct {
	OK bool `json:"ok"`
	// Missing lists the fact's names, numbers and terms its sources lack.
	Missing []string `json:"missing,omitempty"`
	// Reason says why it failed, in words.
	Reason string `json:"reason,omitempty"`
}

// word is one token of a text: letters and digits (and inner apostrophes,
// dots and commas of numbers), with whether it is a name or a number.
type word struct {
	text   string // lowered
	name   bool   // starts with an upper-case letter (not the first word)
	number bool   // has a digit
}

func words(s string) []word {
	var out []word
	first := true
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == '.' || r == ',' || r == '-' || r == '/' || r == ':')
	}) {
		f = strings.Trim(f, "'’.,-/:")
		f = strings.TrimSuffix(strings.TrimSuffix(f, "'s"), "’s")
		if f == "" {
			continue
		}
		w := word{text: strings.ToLower(f)}
		for _, r := range f {
			if unicode.IsDigit(r) {
				w.number = true
				break
			}
		}
		r0 := []rune(f)[0]
		w.name = !first && unicode.IsUpper(r0) && !w.number
		first = false
		out = append(out, w)
	}
	return out
}

// stem drops one common English ending, leaving at least three letters
// ("moving" and "moved" are both "mov").
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s", "ly", "er"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			return strings.TrimSuffix(w, suf)
		}
	}
	return w
}

// sameWord reports whether a fact's word and a source's word are the same
// word up to its ending: equal, equal stems, or sharing a prefix of at least 4 letters
// that is all of the shorter word or at least 5 letters long ("moved" and
// "move", "allergic" and "allergy"). Numbers must be equal.
func sameWord(a, b string) bool {
	if a == b || stem(a) == stem(b) {
		return true
	}
	ra, rb := []rune(a), []rune(b)
	n := 0
	for n < len(ra) && n < len(rb) && ra[n] == rb[n] {
		n++
	}
	short := min(len(ra), len(rb))
	return n >= 4 && (n == short || n >= 5)
}

// Check is the deterministic support check: every number and every name
// (a capitalised word after the first) of fact must occur among the words
// of sources, and at least MinTermShare of its other words of three or
// more letters that are not stop words must too (a word matches up to its
// ending, sameWord). A fact with no key term at all is not supported.
func Check(fact string, sources []string) Support {
	var src []word
	for _, s := range sources {
		src = append(src, words(s)...)
	}
	has := func(w word) bool {
		for _, s := range src {
			if w.number {
				if numberEq(w.text, s.text) {
					return true
				}
			} else if sameWord(w.text, s.text) {
				return true
			}
		}
		return false
	}
	var missing []string
	terms, found := 0, 0
	seen := map[string]bool{}
	for i, w := range words(fact) {
		if seen[w.text] {
			continue
		}
		seen[w.text] = true
		if stopwords[w.text] && !w.name && !w.number {
			continue
		}
		// The first word is a name if the sources spell it capitalised.
		if i == 0 && !w.number && capitalisedIn(w.text, sources) {
			w.name = true
		}
		switch {
		case w.number || w.name:
			terms++
			if !has(w) {
				missing = append(missing, w.text)
				return Support{Missing: missing, Reason: fmt.Sprintf("%q is not in the cited turns", w.text)}
			}
			found++
		case len([]rune(w.text)) >= 3:
			terms++
			if has(w) {
				found++
			} else {
				missing = append(missing, w.text)
			}
		}
	}
	if terms == 0 {
		return Support{Reason: "the fact has no key term to check"}
	}
	if float64(found) < MinTermShare*float64(terms) {
		return Support{Missing: missing, Reason: fmt.Sprintf("%d of %d key terms are in the cited turns (at least %.0f%% needed)", found, terms, MinTermShare*100)}
	}
	return Support{OK: true, Missing: missing}
}

// numberEq compares numbers ignoring thousands separators ("1,000" and
// "1000").
func numberEq(a, b string) bool {
	clean := func(s string) string { return strings.ReplaceAll(s, ",", "") }
	return a == b || clean(a) == clean(b)
}

func capitalisedIn(lower string, sources []string) bool {
	for _, s := range sources {
		for _, w := range words(s) {
			if w.name && w.text == lower {
				return true
			}
		}
	}
	return false
}
