package fts

import (
	"math/rand"
	"reflect"
	"strings"
	"sync"
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

// The term cache (stems) gives every word the term the "en" analyzer
// gives it: words first seen and then answered from the cache, more
// distinct words than it has slots (each slot overwritten many times),
// from several goroutines at once as bleve's analysis workers call it.
func TestStemCacheKeepsTerms(t *testing.T) {
	a := enAnalyzer(t)
	const words = 2 * len(stems)
	var texts []string
	for i := 0; i < words; i += 200 {
		var b strings.Builder
		for j := i; j < i+200; j++ {
			w := projtest.ZipfWord(j)
			if j%3 == 0 {
				w = strings.ToUpper(w[:1]) + w[1:] + "ing"
			}
			b.WriteString(w + " the " + w[:len(w)/2+1] + "s ")
		}
		texts = append(texts, b.String())
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			// Cold, then a text another goroutine analysed (cached where
			// not overwritten since).
			for round := 0; round < 2; round++ {
				for i := (g + round) % 4; i < len(texts); i += 4 {
					text := texts[i]
					want := document.NewTextFieldCustom(fieldContent, nil, []byte(text), index.IndexField, a)
					want.Analyze()
					got := newContentField([]byte(text), a)
					got.Analyze()
					wf, gf := want.AnalyzedTokenFrequencies(), got.AnalyzedTokenFrequencies()
					ok := got.AnalyzedLength() == want.AnalyzedLength() && len(gf) == len(wf)
					for term, w := range wf {
						ok = ok && gf[term] != nil && gf[term].Frequency() == w.Frequency()
					}
					got.release()
					if !ok {
						errs <- text[:min(len(text), 80)]
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("terms differ from the en analyzer's on %q...", e)
	}
}
