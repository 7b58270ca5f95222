package crypto

import (
	"bytes"
	"crypto/aes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The derivation of a format-2 event key is frozen by a golden file
// (regenerate only on a deliberate format change:
// UCL_UPDATE_GOLDEN=1 go test ./crypto -run BatchKeyGolden) and checked
// against the formula of the package doc, written out again here.
func TestBatchKeyGolden(t *testing.T) {
	bk := bytes.Repeat([]byte{0x42}, KeySize)
	b, err := NewBatchKey(bk)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, id := range [][16]byte{{}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {0xff}} {
		var dek [KeySize]byte
		b.EventKey(dek[:], id[:])
		fmt.Fprintf(&got, "%x %x\n", id, dek)
		// The formula, step by step.
		c, _ := aes.NewCipher(bk)
		var k [64]byte
		for j := 0; j < 4; j++ {
			in := append([]byte("ucl/event-key/2"), byte(j))
			c.Encrypt(k[16*j:], in)
		}
		c1, _ := aes.NewCipher(k[:32])
		c2, _ := aes.NewCipher(k[32:])
		var want [KeySize]byte
		c1.Encrypt(want[:16], id[:])
		c2.Encrypt(want[16:], id[:])
		if want != dek {
			t.Fatalf("id %x: EventKey %x, formula %x", id, dek, want)
		}
	}
	path := filepath.Join("testdata", "batch-key.golden")
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("event key derivation changed:\n got %s\nwant %s", got.Bytes(), want)
	}
}

// Event keys of one batch differ from each other, from the batch key and
// from another batch's.
func TestBatchKeyDistinct(t *testing.T) {
	bk1, bk2 := bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, KeySize)
	b1, _ := NewBatchKey(bk1)
	b2, _ := NewBatchKey(bk2)
	seen := map[string]bool{hex.EncodeToString(bk1): true, hex.EncodeToString(bk2): true}
	for i := 0; i < 1000; i++ {
		id := [16]byte{byte(i), byte(i >> 8)}
		for _, b := range []*BatchKey{b1, b2} {
			var dek [KeySize]byte
			b.EventKey(dek[:], id[:])
			k := hex.EncodeToString(dek[:])
			if seen[k] {
				t.Fatalf("event key %d repeats", i)
			}
			seen[k] = true
		}
	}
	if _, err := NewBatchKey(bk1[:16]); err == nil {
		t.Fatal("a 16-byte batch key was accepted")
	}
}
