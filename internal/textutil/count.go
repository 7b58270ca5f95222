package textutil

import (
	"strings"
	"unicode/utf8"
)

// CountContentWords is len(ContentWords(s)) without building the words:
// the full-text projection counts every chunk's words for BM25's average
// length, and building them was 5% of its indexing CPU. A word of ASCII
// letters and digits (the common case) is lower-cased into a buffer; any
// other word goes through ContentWords' own steps.
func CountContentWords(s string) int {
	var buf [32]byte
	n := 0
	word := func(w string, ascii, _ bool) {
		if !ascii || len(w) > len(buf) {
			w = strings.Trim(w, "'’")
			if w != "" && utf8.RuneCountInString(w) > 1 && !IsStopword(strings.ToLower(w)) {
				n++
			}
			return
		}
		for len(w) > 0 && w[len(w)-1] == '\'' {
			w = w[:len(w)-1] // a word starts with a letter or digit: only its end is trimmed
		}
		if len(w) < 2 {
			return
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		if _, stop := stopwords[string(buf[:len(w)])]; !stop {
			n++
		}
	}
	EachWord(s, word)
	return n
}
