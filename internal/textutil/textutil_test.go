package textutil

import (
	"reflect"
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
