package rotate

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// golden compares got with testdata/name (UCL_UPDATE_GOLDEN=1 rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s changed (file format):\n got %s\nwant %s", name, got, want)
	}
}

// The journal's encoding is frozen by a golden file.
func TestRotateJournalGolden(t *testing.T) {
	j := rotJournal{Phase: rotRekeyed, From: 3, To: 4, NewFP: [8]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}}
	b := j.encode()
	golden(t, "rotate.journal.golden", []byte(hex.EncodeToString(b)+"\n"))
	got, err := decodeRotJournal(b)
	if err != nil || got != j {
		t.Fatalf("decode: %+v %v", got, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if _, err := decodeRotJournal(c); !errors.Is(err, ErrBadJournal) {
			t.Fatalf("flipped byte %d accepted: %v", i, err)
		}
	}
	if _, err := decodeRotJournal(b[:len(b)-1]); !errors.Is(err, ErrBadJournal) {
		t.Fatalf("short journal accepted: %v", err)
	}
}

// FuzzRotateJournal: the decoder never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzRotateJournal(f *testing.F) {
	f.Add(rotJournal{Phase: rotBegun, From: 1, To: 2}.encode())
	f.Add(rotJournal{Phase: rotCleaned, From: 7, To: 8, NewFP: [8]byte{9}}.encode())
	f.Add([]byte("UCLROT\x00\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := decodeRotJournal(b)
		if err != nil {
			return
		}
		if !bytes.Equal(j.encode(), b) {
			t.Fatalf("accepted %x re-encodes to %x", b, j.encode())
		}
	})
}
