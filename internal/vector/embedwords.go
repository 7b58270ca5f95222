package vector

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// contentWords appends to out the words textutil.ContentWords(s) returns,
// the same strings in the same order (textutil.EachContentWord), without
// its allocations for ASCII words: a word EachContentWord lowered in its
// scratch is copied into arena (returned, grown) when useArena, and a word
// already in lower case is a substring of s. The arena is sized once to
// len(s), enough for every ASCII word, so it never moves while its words
// are in use; a string in it is valid until the arena is next used.
func contentWords(s string, out []string, arena []byte, useArena bool) ([]string, []byte) {
	if useArena && cap(arena) < len(s) {
		arena = make([]byte, 0, len(s))
	}
	textutil.EachContentWord(s, func(w string, lowered []byte) {
		switch {
		case lowered == nil:
		case useArena:
			at := len(arena)
			arena = append(arena, lowered...)
			w = unsafe.String(&arena[at], len(lowered))
		default:
			w = string(lowered)
		}
		out = append(out, w)
	})
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
	// Every plural rule's suffix ends in 's': most words skip them on
	// one comparison instead of five suffix tests (~5% off embedding a
	// LoCoMo turn, same-time pairs).
	// After "'s" goes, the rules see the rest, as Stem's do.
	if b[len(b)-1] == 's' {
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
