package textutil

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// CountContentWords counts what ContentWords returns.
func TestCountContentWords(t *testing.T) {
	pieces := []string{"a", "I", "the", "The", "can't", "CAN'T", "don’t", "it's", "'", "''", "’", "x", "42", "7",
		"Zoë", "naïve", "ÉCOLE", "İstanbul", "K", "東京", "٣", "garden", "Garden's", "rock'n'roll", "o'", "ab''",
		strings.Repeat("long", 10), strings.Repeat("é", 20), "\xff", "\xe2\x80", " ", "  ", ".", ",", "-", "\n", "_", "'s"}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.Intn(12); n > 0; n-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
			if rng.Intn(3) > 0 {
				b.WriteByte(" .,\n"[rng.Intn(4)])
			}
		}
		s := b.String()
		if got, want := CountContentWords(s), len(ContentWords(s)); got != want {
			t.Fatalf("%q: %d content words, ContentWords has %d: %q", s, got, want, ContentWords(s))
		}
	}
}

func FuzzCountContentWords(f *testing.F) {
	for _, s := range []string{"", "I can't say it's a Garden's end", "Zoë’s naïve café, 東京 42", "rock'n'roll '' ’’ x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := CountContentWords(s), len(ContentWords(s)); got != want {
			t.Fatalf("%d content words, ContentWords has %d", got, want)
		}
	})
}

// sentencesRunes is Sentences as it was before it walked bytes: the
// reference the byte walk must equal on valid UTF-8.
func sentencesRunes(s string) []string {
	var out []string
	add := func(x string) {
		x = strings.TrimSpace(x)
		if x != "" {
			out = append(out, x)
		}
	}
	isListStart := func(rs []rune) bool {
		if len(rs) >= 2 && (rs[0] == '-' || rs[0] == '*' || rs[0] == '•') && rs[1] == ' ' {
			return true
		}
		i := 0
		for i < len(rs) && i < 3 && unicode.IsDigit(rs[i]) {
			i++
		}
		return i > 0 && i+1 < len(rs) && (rs[i] == '.' || rs[i] == ')') && rs[i+1] == ' '
	}
	start := 0
	rs := []rune(s)
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

// textPieces are the words, marks and spaces the equivalence tests join at
// random: ASCII and not, stopwords in both cases, apostrophes of both
// kinds, sentence ends with closing quotes, list starts, odd white space.
var textPieces = []string{"a", "I", "the", "The", "THE", "can't", "CAN'T", "Can't", "don’t", "it's", "'", "''", "’", "x", "42", "7",
	"Zoë", "naïve", "ÉCOLE", "İstanbul", "K", "東京", "٣", "garden", "Garden's", "rock'n'roll", "o'", "ab''",
	strings.Repeat("long", 10), strings.Repeat("LoNg", 9), strings.Repeat("é", 20), " ", "  ", ".", ",", "-", "\n", "_", "'s",
	"!", "?", "...", ".\"", ".’", ".”", "?)", "\n\n", "\n- ", "\n* ", "\n• ", "\n1. ", "\n12) ", "\n٣. ", "\n \t\r\n", "\t", "\u00a0", "\u2003", "\u0085", "1.2", "e.g."}

func randomText(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.Intn(16); n > 0; n-- {
		b.WriteString(textPieces[rng.Intn(len(textPieces))])
		if rng.Intn(3) > 0 {
			b.WriteByte(" .,\n"[rng.Intn(4)])
		}
	}
	return b.String()
}

func TestAppendContentWordsMatchesContentWords(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20000; i++ {
		s := randomText(rng)
		got, want := AppendContentWords(nil, s), ContentWords(s)
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: AppendContentWords %q, ContentWords %q", s, got, want)
		}
	}
	if got := AppendContentWords([]string{"kept"}, "Gardens grow"); !reflect.DeepEqual(got, []string{"kept", "gardens", "grow"}) {
		t.Fatalf("appended to a list: %q", got)
	}
}

func TestSentencesMatchesRuneWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 20000; i++ {
		s := randomText(rng)
		if got, want := Sentences(s), sentencesRunes(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Sentences %q, the rune walk %q", s, got, want)
		}
	}
}

func FuzzAppendContentWords(f *testing.F) {
	for _, s := range []string{"", "I can't say it's a Garden's end", "Zoë’s naïve café, 東京 42", "rock'n'roll '' ’’ x THE The"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := AppendContentWords(nil, s), ContentWords(s)
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("AppendContentWords %q, ContentWords %q", got, want)
		}
	})
}

func FuzzSentences(f *testing.F) {
	for _, s := range []string{"", "One. Two! Three?", "a.” b\n\n- c\n٣. d", "Version 1.2 is out.\u00a0Yes\u2003done."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // log content is valid UTF-8; the rune walk mis-sliced other text
		}
		if got, want := Sentences(s), sentencesRunes(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("Sentences %q, the rune walk %q", got, want)
		}
	})
}
