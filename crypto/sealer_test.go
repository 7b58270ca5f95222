package crypto

import (
	"bytes"
	"testing"
)

// TestSealerMatchesSeal: a Sealer made ahead seals exactly what Seal does
// with the same key, and Open reads it.
func TestSealerMatchesSeal(t *testing.T) {
	dek, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	aad, plain := []byte("header bytes"), []byte("the body of an event")
	want, err := Seal([]byte("pre"), dek, aad, plain)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSealer(dek)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Seal([]byte("pre"), aad, plain); !bytes.Equal(got, want) {
		t.Fatalf("sealer %x, Seal %x", got, want)
	}
	if out, err := Open(nil, dek, aad, want[3:]); err != nil || !bytes.Equal(out, plain) {
		t.Fatalf("open: %q %v", out, err)
	}
	if _, err := NewSealer(dek[:16]); err == nil {
		t.Fatal("a 16-byte key accepted")
	}
}
