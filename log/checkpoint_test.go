package log

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/unlimitedcontext/ucl/crypto"
)

func testNoteKey(t testing.TB) (string, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := crypto.NoteKey(k, "ucl-test-wallet")
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := crypto.NoteKey(k, "ucl-test-wallet")
	if again != skey {
		t.Fatal("note key is not derived deterministically")
	}
	return skey, vkey
}

func TestProofRoundTripAndTamper(t *testing.T) {
	dir := t.TempDir()
	kr := testKeys(t)
	l := openT(t, filepath.Join(dir, "log"), kr, Options{})
	defer l.Close()
	appendN(t, l, 20)
	tr, err := OpenTree(filepath.Join(dir, "tree"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.CatchUp(ctx, l); err != nil {
		t.Fatal(err)
	}
	skey, vkey := testNoteKey(t)
	root, _ := tr.Root(20)
	note, err := SignCheckpoint(Checkpoint{Origin: CheckpointOrigin("abc123"), Size: 20, Root: root}, skey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ProveEvent(l, tr, 7, 20)
	if err != nil {
		t.Fatal(err)
	}
	p.LogID, p.Checkpoint, p.NoteKey = "abc123", string(note), vkey
	b, _ := json.Marshal(p)
	p2, err := DecodeProof(b)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := p2.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Header.Seq != 7 || ev.Checkpoint.Size != 20 {
		t.Fatalf("proven %+v", ev)
	}
	// Every single-character change of what the proof proves is rejected.
	mutate := func(name string, get func(*Proof) *string, skipTail int) {
		s := *get(p)
		for i := 0; i < len(s)-skipTail; i++ {
			q := *p
			q.Inclusion = append([]string(nil), p.Inclusion...)
			c := s[i]
			r := byte('0')
			if c == '0' {
				r = '1'
			}
			*get(&q) = s[:i] + string(r) + s[i+1:]
			if _, err := q.Verify(); err == nil {
				t.Fatalf("%s changed at %d verified", name, i)
			}
		}
	}
	mutate("header", func(p *Proof) *string { return &p.Header }, 0)
	mutate("event hash", func(p *Proof) *string { return &p.EventHash }, 0)
	mutate("body", func(p *Proof) *string { return &p.Body }, 3)
	for k := range p.Inclusion {
		mutate("inclusion", func(p *Proof) *string { return &p.Inclusion[k] }, 0)
	}
	sigAt := strings.Index(p.Checkpoint, "\n\n")
	q := *p
	for i := 0; i < len(p.Checkpoint)-3; i++ {
		if i == sigAt || p.Checkpoint[i] == '\n' {
			continue
		}
		c := p.Checkpoint[i]
		r := byte('A')
		if c == 'A' {
			r = 'B'
		}
		q.Checkpoint = p.Checkpoint[:i] + string(r) + p.Checkpoint[i+1:]
		if _, err := q.Verify(); err == nil {
			t.Fatalf("checkpoint changed at %d verified:\n%s", i, q.Checkpoint)
		}
	}
	q = *p
	q.Seq, q.TreeSize = 8, 20
	if _, err := q.Verify(); err == nil {
		t.Fatal("another seq verified")
	}
	q = *p
	q.LogID = "other"
	if _, err := q.Verify(); err == nil {
		t.Fatal("another log verified")
	}
	// A checkpoint signed by another wallet's key.
	otherS, _ := testNoteKey(t)
	forged, _ := SignCheckpoint(Checkpoint{Origin: CheckpointOrigin("abc123"), Size: 20, Root: root}, otherS)
	q = *p
	q.Checkpoint = string(forged)
	if _, err := q.Verify(); !errors.Is(err, ErrBadProof) {
		t.Fatalf("checkpoint of another key: %v", err)
	}
}

// The checkpoint's signed form is frozen.
func TestGoldenCheckpoint(t *testing.T) {
	skey, _, err := note.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 32)), "ucl-golden")
	if err != nil {
		t.Fatal(err)
	}
	cp := Checkpoint{Origin: CheckpointOrigin("0123456789abcdef"), Size: 42, Root: make([]byte, 32)}
	msg, err := SignCheckpoint(cp, skey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", "checkpoint.note")
	if os.Getenv("UCL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, msg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg) != string(want) {
		t.Fatalf("signed checkpoint changed:\n%s\nwant\n%s", msg, want)
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add("ucl/abc\n42\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	f.Add("x\n01\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCheckpoint(s)
		if err != nil {
			return
		}
		if c.Text() != s {
			t.Fatalf("checkpoint does not round-trip: %q vs %q", c.Text(), s)
		}
	})
}

func FuzzDecodeProof(f *testing.F) {
	f.Add([]byte(`{"version":1,"log_id":"a","seq":1,"header":"00","body":"","event_hash":"","tree_size":1,"inclusion":[],"checkpoint":"","note_key":"","checkpoint_tx":"","owner":"","anchored_height":0}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeProof(b)
		if err != nil {
			return
		}
		p.Verify() // must not panic
	})
}
