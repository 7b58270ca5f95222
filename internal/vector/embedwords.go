package vector

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// contentWords appends to out the words textutil.ContentWords(s) returns,
// the same strings in the same order, without its allocations for ASCII
// words: a word that needs lower-casing is lower-cased into arena
// (returned, grown) when useArena, and a word already in lower case is a
// substring of s. Non-ASCII words go through strings.ToLower, as Words
// does. The arena is sized once to len(s), enough for every ASCII word, so
// it never moves while its words are in use; a string in it is valid until
// the arena is next used.
func contentWords(s string, out []string, arena []byte, useArena bool) ([]string, []byte) {
	if useArena && cap(arena) < len(s) {
		arena = make([]byte, 0, len(s))
	}
	add := func(w string) {
		if len(w) > 1 && (w[0] < utf8.RuneSelf || utf8.RuneCountInString(w) > 1) && !textutil.IsStopword(w) {
			out = append(out, w)
		}
	}
	flush := func(w string, ascii, upper bool) {
		// Words trims "'’" from both ends; a word starts with a letter or
		// digit, so only its end can hold them.
		for {
			if strings.HasSuffix(w, "'") {
				w = w[:len(w)-1]
			} else if strings.HasSuffix(w, "’") {
				w = w[:len(w)-len("’")]
			} else {
				break
			}
		}
		switch {
		case !ascii:
			add(strings.ToLower(w))
		case !upper:
			add(w)
		case useArena:
			at := len(arena)
			for i := 0; i < len(w); i++ {
				c := w[i]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				arena = append(arena, c)
			}
			add(unsafe.String(&arena[at], len(w)))
		default:
			add(strings.ToLower(w))
		}
	}
	textutil.EachWord(s, flush)
	return out, arena
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stemRules are Stem's derivational endings and their replacements, in
// the order they are tried.
var stemRules = []struct{ s, r string }{
	{"ational", "at"}, {"ization", "iz"}, {"fulness", "ful"}, {"iveness", "iv"},
	{"ation", ""}, {"ement", ""}, {"ment", ""}, {"ness", ""}, {"ingly", ""},
	{"edly", ""}, {"ing", ""}, {"ed", ""}, {"ly", ""}, {"er", ""}, {"est", ""}, {"e", ""},
}

// stemRulesByLast lists, for each last byte, the stemRules ending in it,
// in stemRules' order: the rules a word can match, tried in the same
// order (the first that applies wins).
var stemRulesByLast = func() (by [256][]uint8) {
	for k, r := range stemRules {
		c := r.s[len(r.s)-1]
		by[c] = append(by[c], uint8(k))
	}
	return by
}()

// stemInto returns Stem(w) in dst's memory (grown as needed), without
// Stem's allocations: the embedder hashes the bytes.
func stemInto(dst []byte, w string) []byte {
	dst = append(dst[:0], w...)
	if len(w) <= 3 || !isASCIILower(w) {
		return dst
	}
	b := dst
	if bytes.HasSuffix(b, []byte("'s")) {
		b = b[:len(b)-2]
	}
	switch {
	case bytes.HasSuffix(b, []byte("sses")):
		b = b[:len(b)-2]
	case bytes.HasSuffix(b, []byte("ies")) && len(b) > 4:
		b = append(b[:len(b)-3], 'y')
	case bytes.HasSuffix(b, []byte("ss")), bytes.HasSuffix(b, []byte("us")), bytes.HasSuffix(b, []byte("is")):
	case bytes.HasSuffix(b, []byte("s")) && len(b) > 3:
		b = b[:len(b)-1]
	}
	for _, k := range stemRulesByLast[b[len(b)-1]] {
		suf := stemRules[k]
		if len(b) >= len(suf.s) && string(b[len(b)-len(suf.s):]) == suf.s && len(b)-len(suf.s)+len(suf.r) >= 3 {
			b = append(b[:len(b)-len(suf.s)], suf.r...)
			if suf.r == "" {
				b = undoubleBytes(b)
			}
			break
		}
	}
	return b
}

// undoubleBytes is undouble on bytes.
func undoubleBytes(w []byte) []byte {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
