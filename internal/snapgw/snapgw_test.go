package snapgw

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/snapshot"
)

func walletAt(t *testing.T, name string) *arweave.Wallet {
	t.Helper()
	w, err := arweave.LoadWallet(filepath.Join("..", "..", "arweave", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func client(t *testing.T, g *arlocaltest.Gateway, w *arweave.Wallet) *arweave.Client {
	t.Helper()
	if w != nil {
		if err := g.Mint(w.Address(), 1e15); err != nil {
			t.Fatal(err)
		}
	}
	c, err := arweave.NewClient(g.URL(), w, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func post(ctx context.Context, t *testing.T, g snapshot.Gateway, data []byte, u snapshot.Upload) string {
	t.Helper()
	s, err := g.Sign(ctx, data, u)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Post(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s.TxID()
}

// TestConformance checks the snapshot.Gateway contract of the adapter
// against arlocal: what Sign tags is what Find reports, Find keeps only
// the owner's well-tagged transactions of the log asked for, Fetch returns
// the bytes, and without a wallet there is no owner and nothing is signed.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping arlocal test in -short mode")
	}
	ar := arlocaltest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	wa, wb := walletAt(t, "wallet-a.json"), walletAt(t, "wallet-b.json")
	ga, gb := New(client(t, ar, wa)), New(client(t, ar, wb))
	if ga.Owner() != wa.Address() || gb.Owner() != wb.Address() {
		t.Fatalf("owners %q %q", ga.Owner(), gb.Owner())
	}
	var logID, otherLog [16]byte
	rand.Read(logID[:])
	rand.Read(otherLog[:])
	head := sha256.Sum256([]byte("head"))
	u := snapshot.Upload{ContentType: "application/x-test", SchemaVersion: "7", LogID: logID, FirstSeq: 1, LastSeq: 42, HeadHash: head,
		Tags: []snapshot.Tag{{Name: "UC-Test", Value: "one"}, {Name: "UC-Test-2", Value: "two"}}}
	data := []byte("part of a snapshot")
	id := post(ctx, t, ga, data, u)

	// What must not be found under (owner a, logID): b's upload of the
	// same log, a's upload of another log, a's upload whose common tags do
	// not parse.
	post(ctx, t, gb, []byte("b's"), u)
	other := u
	other.LogID = otherLog
	post(ctx, t, ga, []byte("other log"), other)
	bad := mirror.SegmentMeta{Kind: mirror.KindSnapshot, LogID: logID, FirstSeq: 1, LastSeq: 42, HeadHash: head}.Tags()
	for i := range bad {
		if bad[i].Name == mirror.TagSeqLast {
			bad[i].Value = "forty-two"
		}
	}
	if _, err := ga.c.Upload(ctx, []byte("bad tags"), bad); err != nil {
		t.Fatal(err)
	}
	if err := ar.Mine(1); err != nil {
		t.Fatal(err)
	}

	found, err := ga.Find(ctx, wa.Address(), logID)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("found %d transactions, want only %s: %+v", len(found), id, found)
	}
	f := found[0]
	if f.ID != id || f.LastSeq != 42 || f.HeadHash != head || f.Pending || f.DataSize != int64(len(data)) {
		t.Fatalf("found %+v", f)
	}
	for _, want := range []snapshot.Tag{
		{Name: mirror.TagContentType, Value: "application/x-test"}, {Name: mirror.TagSchemaVersion, Value: "7"},
		{Name: mirror.TagKind, Value: string(mirror.KindSnapshot)}, {Name: mirror.TagSeqFirst, Value: "1"},
		{Name: "UC-Test", Value: "one"}, {Name: "UC-Test-2", Value: "two"},
	} {
		if !slices.Contains(f.Tags, want) {
			t.Errorf("tag %s=%s missing from %+v", want.Name, want.Value, f.Tags)
		}
	}
	if i, j := slices.Index(f.Tags, u.Tags[0]), slices.Index(f.Tags, u.Tags[1]); i < 0 || j != i+1 || j != len(f.Tags)-1 {
		t.Errorf("u.Tags not last and in order: %+v", f.Tags)
	}
	// b's own view of the same log holds b's upload only.
	if fb, err := gb.Find(ctx, wb.Address(), logID); err != nil || len(fb) != 1 || fb[0].ID == id {
		t.Fatalf("b's uploads: %+v %v", fb, err)
	}
	got, err := ga.Fetch(ctx, id)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch: %q %v", got, err)
	}

	// Without a wallet: no owner, no signature; finding and fetching work.
	ro := New(client(t, ar, nil))
	if ro.Owner() != "" {
		t.Fatalf("owner without a wallet: %q", ro.Owner())
	}
	if _, err := ro.Sign(ctx, data, u); !errors.Is(err, arweave.ErrNoWallet) {
		t.Fatalf("sign without a wallet: %v", err)
	}
	if fr, err := ro.Find(ctx, wa.Address(), logID); err != nil || len(fr) != 1 || fr[0].ID != id {
		t.Fatalf("find without a wallet: %+v %v", fr, err)
	}
	if err := ga.Post(ctx, foreign{}); err == nil {
		t.Fatal("Post took a transaction another gateway signed")
	}
}

type foreign struct{}

func (foreign) TxID() string { return "x" }
