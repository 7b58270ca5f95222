package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// goldenAnchor is a checkpoint of 42 events anchored after one of 40,
// with a three-node consistency proof.
func goldenAnchor(t testing.TB) (Anchor, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 32)), "ucl-golden")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := SignCheckpoint(Checkpoint{Origin: CheckpointOrigin("0123456789abcdef"), Size: 42, Root: make([]byte, 32)}, skey)
	if err != nil {
		t.Fatal(err)
	}
	return Anchor{Note: msg, PrevSize: 40, Consistency: [][]byte{bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)}}, vkey
}

func TestGoldenAnchor(t *testing.T) {
	a, vkey := goldenAnchor(t)
	b := a.Encode()
	path := filepath.Join("testdata", "golden", "checkpoint.anchor")
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("anchor encoding changed:\n%s\nwant\n%s", b, want)
	}
	got, err := DecodeAnchor(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Note, a.Note) || got.PrevSize != 40 || len(got.Consistency) != 3 || got.Consistency[2][0] != 3 {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := OpenCheckpoint(got.Note, vkey); err != nil {
		t.Fatalf("decoded note does not verify: %v", err)
	}
	// The first checkpoint carries no proof.
	first := Anchor{Note: a.Note}.Encode()
	if got, err := DecodeAnchor(first); err != nil || got.PrevSize != 0 || got.Consistency != nil {
		t.Fatalf("first anchor: %+v %v", got, err)
	}
}

// Every single-byte change of an anchor is refused by the decoder or, where
// it still parses, changes what it says (so a signature or proof check
// downstream fails).
func TestAnchorSingleByteChanges(t *testing.T) {
	a, vkey := goldenAnchor(t)
	b := a.Encode()
	for i := range b {
		for _, d := range []byte{1, 0x80} {
			c := bytes.Clone(b)
			c[i] ^= d
			got, err := DecodeAnchor(c)
			if err != nil {
				if !errors.Is(err, ErrBadProof) {
					t.Fatalf("byte %d: error %v is not ErrBadProof", i, err)
				}
				continue
			}
			if _, err := OpenCheckpoint(got.Note, vkey); err == nil && bytes.Equal(got.Encode(), b) {
				t.Fatalf("byte %d ^%#x: the change went unnoticed", i, d)
			}
			if _, err := OpenCheckpoint(got.Note, vkey); err == nil && got.PrevSize == a.PrevSize && len(got.Consistency) == 3 &&
				bytes.Equal(got.Consistency[0], a.Consistency[0]) && bytes.Equal(got.Consistency[1], a.Consistency[1]) && bytes.Equal(got.Consistency[2], a.Consistency[2]) {
				t.Fatalf("byte %d ^%#x: decodes to the same anchor", i, d)
			}
		}
	}
	for _, bad := range []string{"", "x\n\n", "x\n\n— k sig\n", "x\n\nconsistency 1\n", "x\n\n— k sig\nconsistency 01\n",
		"x\n\n— k sig\nconsistency 0\nAQ==\n", "x\n\n— k sig\nconsistency 1\nAQ==\n", "x\n\n— k sig\nconsistency 1"} {
		if _, err := DecodeAnchor([]byte(bad)); !errors.Is(err, ErrBadProof) {
			t.Errorf("%q: err %v, want ErrBadProof", bad, err)
		}
	}
}

func FuzzDecodeAnchor(f *testing.F) {
	a, _ := goldenAnchor(f)
	f.Add(a.Encode())
	f.Add(Anchor{Note: a.Note}.Encode())
	f.Add([]byte("x\n\n— k sig\nconsistency 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeAnchor(b)
		if err != nil {
			return
		}
		if !bytes.Equal(got.Encode(), b) {
			t.Fatalf("anchor does not round-trip:\n%q\n%q", got.Encode(), b)
		}
	})
}
