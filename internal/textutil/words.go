package textutil

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// AppendContentWords appends ContentWords(s) to dst (EachContentWord:
// no intermediate list of every word, and a word already in lower case is
// a substring of s). Summaries analyse every sentence of every chunk with
// it; ContentWords' list and lowered copies were a fifth of a summary
// build's CPU.
func AppendContentWords(dst []string, s string) []string {
	EachContentWord(s, func(w string, lowered []byte) {
		if lowered != nil {
			w = string(lowered)
		}
		dst = append(dst, w)
	})
	return dst
}

// EachContentWord calls fn with each of ContentWords(s), in order, without
// ContentWords' allocations for ASCII words: such a word is trimmed, and
// lowered into a scratch buffer when it holds capitals, before it is
// checked against the stopwords. Such a word comes as lowered, in that
// buffer and valid only during the call (w is then ""); any other as w, a
// substring of s or a string of its own. (Two parameters, not one string
// that may be in the buffer: a caller keeping w would then make the
// buffer escape, an allocation a call.) Other words take Words' path
// (strings.Trim, strings.ToLower).
// It is the one definition of a content word's trimming, lower-casing and
// filtering beside ContentWords, behind AppendContentWords,
// CountContentWords and the hash embedder.
func EachContentWord(s string, fn func(w string, lowered []byte)) {
	var buf [32]byte
	EachWord(s, func(w string, ascii, upper bool) {
		if !ascii || len(w) > len(buf) {
			if w = strings.Trim(w, "'’"); w == "" {
				return
			}
			if w = strings.ToLower(w); utf8.RuneCountInString(w) > 1 && !IsStopword(w) {
				fn(w, nil)
			}
			return
		}
		for len(w) > 0 && w[len(w)-1] == '\'' {
			w = w[:len(w)-1] // a word starts with a letter or digit: only its end is trimmed
		}
		if len(w) < 2 {
			return
		}
		if !upper {
			if !IsStopword(w) {
				fn(w, nil)
			}
			return
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		if !isStopwordBytes(buf[:len(w)]) {
			fn("", buf[:len(w)])
		}
	})
}

// EachWord calls word for each word of s by Words' rule: a word is a run
// of letters and digits, with ' and ’ kept inside it once it has begun
// (so only its end can hold them; the callers trim it). ascii reports that
// the word is all ASCII; upper, that it holds an ASCII capital (meaningful
// only when ascii). It is the one scanner of word boundaries behind
// AppendContentWords, CountContentWords and the hash embedder, which each
// must find exactly ContentWords' words.
func EachWord(s string, word func(w string, ascii, upper bool)) {
	start := -1
	ascii, upper := true, false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				if start < 0 {
					start, ascii, upper = i, true, false
				}
			case c >= 'A' && c <= 'Z':
				if start < 0 {
					start, ascii = i, true
				}
				upper = true
			case c == '\'' && start >= 0:
			default:
				if start >= 0 {
					word(s[start:i], ascii, upper)
					start = -1
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '’' && start >= 0 {
			if start < 0 {
				start, upper = i, false
			}
			ascii = false
		} else if start >= 0 {
			word(s[start:i], ascii, upper)
			start = -1
		}
		i += size
	}
	if start >= 0 {
		word(s[start:], ascii, upper)
	}
}
