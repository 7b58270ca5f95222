package dedup

import (
	"math/rand"
	"strings"
	"testing"
	"unicode"
)

// normalizeRunes is Normalize as it was before its byte path: the
// reference the byte path must equal.
func normalizeRunes(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch r {
		case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff':
			continue
		}
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

var normalizePieces = []string{"a", "Hello", "WORLD", "É", "école", "Straße", "ﬁ", "İ", "\u200b", "\u2060", "\ufeff", " ", "  ", "\t", "\n", "\r\n", "\v", "\f",
	"\u00a0", "\u0085", "\u2003", "\u3000", "42", ".", "東京", "\xff", "\xe2\x80", "Z", "@", "[", "`", "{"}

func TestNormalizeMatchesRuneWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.Intn(12); n > 0; n-- {
			b.WriteString(normalizePieces[rng.Intn(len(normalizePieces))])
		}
		s := b.String()
		if got, want := Normalize(s), normalizeRunes(s); got != want {
			t.Fatalf("%q: Normalize %q, the rune walk %q", s, got, want)
		}
	}
	long := strings.Repeat("Long Text ", 300) // past Hash's stack buffer
	if Hash(long) != Hash(strings.ToLower(long)) || Normalize(long) != normalizeRunes(long) {
		t.Fatal("a text longer than Hash's buffer")
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "Hello  World", "zero\u200bwidth non\u00a0breaking ÉCOLE", " \t lead and trail \r\n", "\xff\xe2\x80 x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Normalize(s), normalizeRunes(s); got != want {
			t.Fatalf("Normalize %q, the rune walk %q", got, want)
		}
	})
}
