package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/proof"
)

// The store's Merkle tree follows the log lazily, and a proof built from
// it is refused by VerifyProof for what can be checked offline before any
// gateway call; a proof whose transaction the gateway does not have is an
// error, never a success, and not a rejection.
func TestVerifyProofOffline(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	tree, err := s.merkle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Log().Head()
	if tree.Size() != head || head != 3 {
		t.Fatalf("tree of %d, head %d", tree.Size(), head)
	}
	if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL, AllowDuplicate: true}); err != nil {
		t.Fatal(err)
	}
	if tree, err = s.merkle(ctx); err != nil || tree.Size() != 6 {
		t.Fatalf("tree did not catch up: %v", err)
	}

	w, err := s.wallet()
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := crypto.NoteKey(w.PrivateKey(), w.Address())
	if err != nil {
		t.Fatal(err)
	}
	root, err := tree.Root(6)
	if err != nil {
		t.Fatal(err)
	}
	note, err := log.SignCheckpoint(log.Checkpoint{Origin: log.CheckpointOrigin(s.st.Meta.LogID), Size: 6, Root: root}, skey)
	if err != nil {
		t.Fatal(err)
	}
	p, err := log.ProveEvent(s.Log(), tree, 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	p.LogID, p.Checkpoint, p.NoteKey, p.Owner = s.st.Meta.LogID, string(note), vkey, w.Address()
	p.CheckpointTx = strings.Repeat("A", 43)

	var calls atomic.Int32
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.NotFound(w, r)
	}))
	defer gw.Close()
	verify := func(p log.Proof) error {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = VerifyProof(ctx, proof.VerifyRequest{Proof: b, Gateway: gw.URL})
		return err
	}

	other, _, err := arweave.GenerateWallet()
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(p *log.Proof){
		"owner of another wallet": func(p *log.Proof) { p.Owner = other.Address() },
		"transaction id":          func(p *log.Proof) { p.CheckpointTx = "not-an-id" },
		"seq":                     func(p *log.Proof) { p.Seq = 5 },
		"tree size":               func(p *log.Proof) { p.TreeSize = 7 },
		"log id":                  func(p *log.Proof) { p.LogID = strings.Repeat("0", 32) },
		"inclusion node":          func(p *log.Proof) { p.Inclusion[0] = strings.Repeat("0", 64) },
		"note key":                func(p *log.Proof) { p.NoteKey = strings.Replace(p.NoteKey, "+", "x+", 1) },
	}
	for name, change := range bad {
		q := *p
		q.Inclusion = append([]string{}, p.Inclusion...)
		change(&q)
		if err := verify(q); !errors.Is(err, proof.ErrProofRejected) {
			t.Errorf("%s changed: err = %v, want proof.ErrProofRejected", name, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("offline rejections asked the gateway %d times", n)
	}
	err = verify(*p)
	if err == nil || errors.Is(err, proof.ErrProofRejected) || !errors.Is(err, arweave.ErrNotFound) {
		t.Fatalf("unknown transaction: err = %v, want a not-found error that is not a rejection", err)
	}
}
