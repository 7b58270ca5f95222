package eventhash

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// TestRule pins both rules: formats 1-3 hash the bytes, 4 the header with
// the body's digest, and Finish agrees with Sum.
func TestRule(t *testing.T) {
	raw := make([]byte, HeaderSize+50)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	for v := byte(1); v <= 5; v++ {
		raw[0] = v
		got := Sum(raw)
		want := sha256.Sum256(raw)
		if v >= SplitVersion {
			body := sha256.Sum256(raw[HeaderSize:])
			want = sha256.Sum256(append(bytes.Clone(raw[:HeaderSize]), body[:]...))
			if f := Finish(raw[:HeaderSize], &body); f != got {
				t.Errorf("format %d: Finish %x, Sum %x", v, f, got)
			}
		}
		if got != want {
			t.Errorf("format %d: hash %x, want %x", v, got, want)
		}
	}
	// A header changed anywhere, or the body, changes a format-4 hash.
	raw[0] = SplitVersion
	h := Sum(raw)
	for _, i := range []int{1, 2, 77, 78, HeaderSize - 1, HeaderSize, len(raw) - 1} {
		c := bytes.Clone(raw)
		c[i] ^= 1
		if Sum(c) == h {
			t.Errorf("byte %d changed, hash unchanged", i)
		}
	}
	if Sum(raw[:10]) != sha256.Sum256(raw[:10]) {
		t.Error("a short raw is not hashed whole")
	}
}
