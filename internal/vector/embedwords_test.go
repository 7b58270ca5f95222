package vector

import (
	"slices"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/textutil"
)

// TestContentWordsSame: the embedder's word splitter returns exactly
// textutil.ContentWords' words, with and without its arena, on the
// embedding corpus and on texts built to hit each of Words' rules
// (apostrophes inside, around and alone, curly quotes, case changes of
// non-ASCII letters, invalid UTF-8, digits, one-letter words), and a
// reused arena does not change the words.
func TestContentWordsSame(t *testing.T) {
	texts := append(embedCorpus(400),
		"don't 'quoted' ’curly’ it’s O'Brien's '' ' ’ a' 'a rock'n'roll''",
		"ÉCOLE École İSTANBUL Straße STRASSE ǅEMAL Σίσυφος ΣΊΣΥΦΟΣ",
		"bad \xff\xfe bytes\xc3 mid\xe2\x80word end\xe2",
		"x y z 1 22 a1 1a I'M ME MYSELF I",
		"UPPERCASE Words MiXeD 42nd 8th k8s",
		"日本語のテキスト と English, émigré café",
		strings.Repeat("Long TEXT of Many WORDS ", 500),
	)
	var arena []byte
	var out []string
	for i, s := range texts {
		want := textutil.ContentWords(s)
		for _, useArena := range []bool{false, true} {
			out, arena = contentWords(s, out[:0], arena[:0], useArena)
			if !slices.Equal(out, want) {
				t.Fatalf("text %d %q (arena %v):\n got %q\nwant %q", i, s, useArena, out, want)
			}
		}
	}
}

// TestStemIntoSame: stemInto gives Stem's stem for every word of the
// embedding corpus and for words hitting each rule.
func TestStemIntoSame(t *testing.T) {
	words := strings.Fields(`relational organization hopefulness effectiveness creation agreement
payment kindness surprisingly reportedly running stopped hopping filled buzzing tries flies ies
sses caresses ponies caress status analysis cats it's o'brien's supplies replies lies dies
national nationalization hoped hope agreed feed fed bed bedded
ation ement ment ness ingly edly ing ed ly er est e aaa aaaa ab's x's ssses
sizes size zzing llly shopping stopping thinness happiness`)
	for _, s := range embedCorpus(300) {
		words = append(words, textutil.Words(s)...)
	}
	var buf []byte
	for _, w := range words {
		buf = stemInto(buf, w)
		if got, want := string(buf), Stem(w); got != want {
			t.Errorf("stemInto(%q) = %q, Stem gives %q", w, got, want)
		}
	}
}
