package fts

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/unlimitedcontext/ucl/projections/projtest"
)

func enAnalyzer(t testing.TB) analysis.Analyzer {
	a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkContentField compares contentField's analysis of text with
// document.TextField's under the "en" analyzer.
func checkContentField(t testing.TB, a analysis.Analyzer, text string) {
	t.Helper()
	want := document.NewTextFieldCustom(fieldContent, nil, []byte(text), index.IndexField, a)
	want.Analyze()
	got := newContentField([]byte(text), a)
	got.Analyze()
	wf, gf := want.AnalyzedTokenFrequencies(), got.AnalyzedTokenFrequencies()
	ok := want.AnalyzedLength() == got.AnalyzedLength() && len(wf) == len(gf)
	for term, w := range wf {
		g := gf[term]
		ok = ok && g != nil && string(g.Term) == term && g.Frequency() == w.Frequency()
	}
	// The size bleve counts for the batch is the one its own walk of the
	// frequencies gives.
	if got.Size() != 64+len(text)+gf.Size() {
		t.Fatalf("%q: contentField size %d, walked %d", text, got.Size(), 64+len(text)+gf.Size())
	}
	if !ok {
		show := func(f index.TokenFrequencies) map[string]int {
			m := map[string]int{}
			for k, v := range f {
				m[k] = v.Frequency()
			}
			return m
		}
		t.Fatalf("%q:\ncontentField length %d %v\nTextField    length %d %v", text, got.AnalyzedLength(), show(gf),
			want.AnalyzedLength(), show(wf))
	}
}

// contentField indexes what document.TextField with the "en" analyzer
// indexes: on texts of ASCII punctuation around words and numbers (every
// class of the word boundary rules), with non-ASCII runes mixed in, and
// on the synthetic corpus of the benchmarks.
func TestContentFieldMatchesTextField(t *testing.T) {
	a := enAnalyzer(t)
	for _, s := range []string{"", " ", "The garden's roses", "can't won't O'Neil's", "3.14 1,000 1;2 a;b a:b a::b",
		"e.g. U.S.A. x.", "a_b _ __ _1 1_ a._b", "rock'n'roll", "HELLO World's END'S", "Zoë’s naïve café",
		"mixed é word x'é", "東京 tower", "tab\tnew\nline\r\nend", "a \u0301b", "x\u200dy", "a\u00adb c",
		"ſummer \u212aelvin", "Ⱥpple ȺB", "ΣΑΣ", "\xff\xfe bad utf8", "running runs ran easily"} {
		checkContentField(t, a, s)
	}
	pieces := []string{"a", "B", "z", "ab", "Word", "the", "and", "1", "42", "2023", "'", "'s", "'S", ".", ",", ";", ":",
		"_", "-", "/", "!", "?", "(", ")", "\"", "$", "%", "@", "#", "\x00", "\x7f", " ", " ", " ", "  ", "\t", "\n", "\r\n",
		"é", "’", "ß", "東", "\u0301", "\u200d", "\u00ad", "😀", "İ", "ing", "ed", "ation", "ness", "ies", "sses"}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.Intn(16); n > 0; n-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		checkContentField(t, a, b.String())
	}
	for i := 0; i < 300; i++ {
		checkContentField(t, a, projtest.TextZipf(rng, 60, 50_000))
	}
}

func FuzzContentField(f *testing.F) {
	for _, s := range []string{"The garden's roses can't 3.14 1,000", "e.g. a_b _1 a:b", "Zoë’s naïve café 東京", "a \u0301b x\u200dy"} {
		f.Add(s)
	}
	a := enAnalyzer(f)
	f.Fuzz(func(t *testing.T, s string) { checkContentField(t, a, s) })
}

func TestKeywordFieldMatchesTextField(t *testing.T) {
	a, err := registry.NewCache().AnalyzerNamed(keyword.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"s1", "conversation", "user", "Tool Call", "k\x00v", "é 東京", "\xff", "x"} {
		want := document.NewTextFieldCustom(fieldRole, nil, []byte(v), index.IndexField|index.SkipFreqNorm, a)
		want.Analyze()
		got := newKeywordField(fieldRole, []byte(v))
		got.Analyze()
		if got.Name() != want.Name() || got.Options() != want.Options() || got.AnalyzedLength() != want.AnalyzedLength() ||
			got.EncodedFieldType() != want.EncodedFieldType() || !reflect.DeepEqual(got.AnalyzedTokenFrequencies(), want.AnalyzedTokenFrequencies()) {
			t.Fatalf("%q: keywordField %s %v %d %v, TextField %s %v %d %v", v, got.Name(), got.Options(), got.AnalyzedLength(),
				got.AnalyzedTokenFrequencies(), want.Name(), want.Options(), want.AnalyzedLength(), want.AnalyzedTokenFrequencies())
		}
	}
}

// isEnStop answers as enStop's map for each stop word, each of them cut
// or grown by a byte, other words and the empty word.
func TestIsEnStop(t *testing.T) {
	words := []string{"", "x", "cat", "theirselves", "yourselvesx"}
	for w := range enStop {
		words = append(words, w, w+"s", w[1:], "a"+w)
	}
	stops := 0
	for _, w := range words {
		_, want := enStop[w]
		if got := isEnStop([]byte(w)); got != want {
			t.Fatalf("isEnStop(%q) = %v, want %v", w, got, want)
		}
		if want {
			stops++
		}
	}
	if stops < len(enStop) {
		t.Fatalf("%d stop words seen, want at least %d", stops, len(enStop))
	}
}
