package textutil

import (
	"reflect"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"don't stop 'quoted' x2", []string{"don't", "stop", "quoted", "x2"}},
		{"", nil},
		{"Zürich café", []string{"zürich", "café"}},
	} {
		if got := Words(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"One. Two! Three?", []string{"One.", "Two!", "Three?"}},
		{"Version 1.2 is out. Yes.", []string{"Version 1.2 is out.", "Yes."}},
		{"Title\n\nBody text", []string{"Title", "Body text"}},
		{"Items:\n- a\n- b", []string{"Items:", "- a", "- b"}},
		{"He said \"stop.\" Then left", []string{"He said \"stop.\"", "Then left"}},
		{"  ", nil},
	} {
		if got := Sentences(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Sentences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hi", 2},
		{"the quick brown fox", 6},
		{"abcdefghijklmnopqrstuvwxyz", 7},
	} {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestContentWords(t *testing.T) {
	got := ContentWords("The cat and I are on a mat")
	want := []string{"cat", "mat"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

// TestIsStopwordMatchesSet: the index by length and first letter finds
// exactly the listed words: each of them, and none of their neighbours
// (cut, extended, one byte changed, capitalised, non-ASCII), as a string
// and as bytes.
func TestIsStopwordMatchesSet(t *testing.T) {
	set := map[string]bool{}
	for _, w := range strings.Fields(stopwordList) {
		set[w] = true
	}
	if len(set) < 150 {
		t.Fatalf("%d stopwords", len(set))
	}
	var probes []string
	for w := range set {
		probes = append(probes, w, w[1:], w[:len(w)-1], w+"s", "x"+w, strings.ToUpper(w), w+"’", "é"+w)
		for i := 0; i < len(w); i++ {
			for _, c := range []byte{'a', 'z', '\'', 'e' + 1, 0xc3} {
				b := []byte(w)
				b[i] = c
				probes = append(probes, string(b))
			}
		}
	}
	probes = append(probes, "", "a", "z", "yourselvess", "{the", "`the")
	for _, p := range probes {
		if got := IsStopword(p); got != set[p] {
			t.Fatalf("IsStopword(%q) = %v, want %v", p, got, set[p])
		}
		if got := isStopwordBytes([]byte(p)); got != set[p] {
			t.Fatalf("isStopwordBytes(%q) = %v, want %v", p, got, set[p])
		}
	}
}
