// Package textutil holds the text primitives every part of ucl must agree on:
// how content splits into words and sentences, which words are stopwords, and
// how many tokens a string is estimated to cost. Projections (full-text
// summaries, the default embedder) and query (budget packing, key-sentence
// trimming) share them so that a summary's token bound and a context budget
// count the same way.
//
// Everything here is a pure function of its input: no locale, no map
// iteration order, no time. Changing any of it changes projection digests, so
// treat the behaviour as part of the projection format version.
package textutil

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words splits s into lower-cased words: maximal runs of letters and digits
// (an apostrophe inside a word is kept, "don't" is one word). Punctuation and
// symbols separate words.
func Words(s string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			w := strings.Trim(s[start:end], "'’")
			if w != "" {
				out = append(out, strings.ToLower(w))
			}
			start = -1
		}
	}
	for i, r := range s {
		inWord := unicode.IsLetter(r) || unicode.IsDigit(r) || ((r == '\'' || r == '’') && start >= 0)
		if inWord {
			if start < 0 {
				start = i
			}
		} else {
			flush(i)
		}
	}
	flush(len(s))
	return out
}

// ContentWords is Words without stopwords and one-character words.
func ContentWords(s string) []string {
	ws := Words(s)
	out := ws[:0]
	for _, w := range ws {
		if utf8.RuneCountInString(w) > 1 && !IsStopword(w) {
			out = append(out, w)
		}
	}
	return out
}

// Sentences splits s into sentences. A sentence ends at '.', '!' or '?'
// followed by white space (or the end), or at a blank line; a newline that
// starts a list item ("- ", "* ", "1. ") also ends one. Leading and trailing
// white space is removed; empty sentences are dropped. Abbreviations are not
// special-cased: the split must be predictable more than it must be clever.
func Sentences(s string) []string {
	var out []string
	add := func(x string) {
		x = strings.TrimSpace(x)
		if x != "" {
			out = append(out, x)
		}
	}
	start := 0
	rs := []rune(s)
	// Work on byte offsets for slicing while iterating runes.
	offs := make([]int, len(rs)+1)
	o := 0
	for i, r := range rs {
		offs[i] = o
		o += utf8.RuneLen(r)
	}
	offs[len(rs)] = o
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '.' || r == '!' || r == '?':
			j := i + 1
			for j < len(rs) && (rs[j] == '.' || rs[j] == '!' || rs[j] == '?' || rs[j] == '"' || rs[j] == '\'' || rs[j] == ')' || rs[j] == '’' || rs[j] == '”') {
				j++
			}
			if j == len(rs) || unicode.IsSpace(rs[j]) {
				add(s[offs[start]:offs[j]])
				start = j
				i = j - 1
			}
		case r == '\n':
			j := i + 1
			for j < len(rs) && (rs[j] == ' ' || rs[j] == '\t' || rs[j] == '\r') {
				j++
			}
			if j < len(rs) && (rs[j] == '\n' || isListStart(rs[j:])) {
				add(s[offs[start]:offs[i]])
				start = i + 1
			}
		}
	}
	add(s[offs[start]:])
	return out
}

func isListStart(rs []rune) bool {
	if len(rs) >= 2 && (rs[0] == '-' || rs[0] == '*' || rs[0] == '•') && rs[1] == ' ' {
		return true
	}
	i := 0
	for i < len(rs) && i < 3 && unicode.IsDigit(rs[i]) {
		i++
	}
	return i > 0 && i+1 < len(rs) && (rs[i] == '.' || rs[i] == ')') && rs[i+1] == ' '
}

// EstimateTokens estimates how many tokens an LLM tokenizer (BPE, GPT/Llama
// class) spends on s: the larger of one token per 4 bytes and 4 tokens per 3
// words, which is within about 15% of cl100k on English prose and errs on the
// side of overcounting. It is the default for every budget in ucl; a real
// tokenizer can be plugged in where a budget is packed (query.Tokenizer).
func EstimateTokens(s string) int {
	if s == "" {
		return 0
	}
	byBytes := (len(s) + 3) / 4
	words := 0
	in := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			words++
		}
	}
	byWords := (words*4 + 2) / 3
	if byWords > byBytes {
		return byWords
	}
	return byBytes
}

// IsStopword reports whether w (lower case) is an English stopword.
func IsStopword(w string) bool {
	_, ok := stopwords[w]
	return ok
}

var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren't as at be
because been before being below between both but by can can't cannot could couldn't did didn't do does
doesn't doing don't down during each few for from further had hadn't has hasn't have haven't having he
he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is
isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only or other
ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such
than that that's the their theirs them themselves then there there's these they they'd they'll they're
they've this those through to too under until up very was wasn't we we'd we'll we're we've were weren't
what what's when when's where where's which while who who's whom why why's with won't would wouldn't you
you'd you'll you're you've your yours yourself yourselves also just will yes ok okay`) {
		m[w] = struct{}{}
	}
	return m
}()
