package eventhash

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// TestRule pins both rules: formats 1-3 hash header ‖ body, 4 and later
// body ‖ header, and Body then Finish agree with Sum.
func TestRule(t *testing.T) {
	var h Hasher
	for _, n := range []int{0, 1, 18, 63, 64, 65, 552, 4096} {
		raw := make([]byte, HeaderSize+n)
		for i := range raw {
			raw[i] = byte(i*7 + n)
		}
		for v := byte(1); v <= 5; v++ {
			raw[0] = v
			got := Sum(raw)
			want := sha256.Sum256(raw)
			if v >= SplitVersion {
				want = sha256.Sum256(append(bytes.Clone(raw[HeaderSize:]), raw[:HeaderSize]...))
				var st State
				h.Body(raw[HeaderSize:], &st)
				if f := h.Finish(&st, raw[:HeaderSize]); f != got {
					t.Errorf("format %d, body %d: Finish %x, Sum %x", v, n, f, got)
				}
			}
			if got != want {
				t.Errorf("format %d, body %d: hash %x, want %x", v, n, got, want)
			}
		}
		// A header changed anywhere, or the body, changes a format-4 hash.
		raw[0] = SplitVersion
		sum := Sum(raw)
		for _, i := range []int{1, 2, 77, 78, HeaderSize - 1, HeaderSize, len(raw) - 1} {
			if i >= len(raw) {
				continue
			}
			c := bytes.Clone(raw)
			c[i] ^= 1
			if Sum(c) == sum {
				t.Errorf("body %d: byte %d changed, hash unchanged", n, i)
			}
		}
	}
	if Sum(make([]byte, 10)) != sha256.Sum256(make([]byte, 10)) {
		t.Error("a short raw is not hashed whole")
	}
}

// TestStatesInterleave: states made by one Hasher finish right in any
// order, by another Hasher (the appender's pieces are hashed on other
// goroutines than the commit's).
func TestStatesInterleave(t *testing.T) {
	var a, b Hasher
	hdr := bytes.Repeat([]byte{SplitVersion}, HeaderSize)
	var sts [3]State
	bodies := [][]byte{[]byte("one"), bytes.Repeat([]byte("two"), 50), nil}
	for i, body := range bodies {
		a.Body(body, &sts[i])
	}
	for i := len(bodies) - 1; i >= 0; i-- {
		want := Sum(append(bytes.Clone(hdr), bodies[i]...))
		if got := b.Finish(&sts[i], hdr); got != want {
			t.Errorf("body %d: %x, want %x", i, got, want)
		}
	}
}

func BenchmarkSum(b *testing.B) {
	raw := make([]byte, 662)
	raw[0] = SplitVersion
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		Sum(raw)
	}
}
