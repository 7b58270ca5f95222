package textutil

import (
	"math/rand"
	"strings"
	"testing"
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
