package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/snapgw"
	"github.com/unlimitedcontext/ucl/projections/projtest"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// fundedClient starts arlocal and returns a client with a minted test
// wallet.
func fundedClient(t *testing.T) (*arlocaltest.Gateway, *arweave.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping arlocal test in -short mode")
	}
	g := arlocaltest.Start(t)
	w, err := arweave.LoadWallet(filepath.Join("..", "arweave", "testdata", "wallet-a.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Mint(w.Address(), 1e15); err != nil {
		t.Fatal(err)
	}
	c, err := arweave.NewClient(g.URL(), w, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

func TestPushFindFetchRestore(t *testing.T) {
	g, c := fundedClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owner := c.Wallet().Address()
	gw := snapgw.New(c)

	te := snapshot.NewTestEnv(t, 20, 60)
	older, err := snapshot.Create(ctx, te.Env, snapshot.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	te.AppendEvents(t, projtest.Events(21, 20))
	newer, err := snapshot.Create(ctx, te.Env, snapshot.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const part = 64 << 10
	var posted []uint64
	r1, err := snapshot.Push(ctx, gw, older.Dir, snapshot.PushOptions{PartSize: part})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := snapshot.Push(ctx, gw, newer.Dir, snapshot.PushOptions{PartSize: part, Progress: func(d, _ uint64) { posted = append(posted, d) }})
	if err != nil {
		t.Fatal(err)
	}
	wantParts := (r2.Bytes + part - 1) / part
	if wantParts < 2 || len(r2.TxIDs) != wantParts || len(posted) != wantParts {
		t.Fatalf("%d bytes pushed in %d parts (progress %v), want %d parts", r2.Bytes, len(r2.TxIDs), posted, wantParts)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	// A third upload: a part of a snapshot whose other part never came.
	m, _ := snapshot.ReadManifest(newer.Dir)
	if err := upload(ctx, gw, []byte("half"), snapshot.PartUpload(m, 0, 2, snapshot.SHA256Hex([]byte("x")))); err != nil {
		t.Fatal(err)
	}
	g.Mine(1)

	found, err := snapshot.FindPublished(ctx, gw, owner, te.LogID)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[0].ID != r2.ID || found[1].ID != r1.ID || found[0].Seq != 80 || found[1].Seq != 60 {
		t.Fatalf("found %+v", found)
	}
	if other, err := snapshot.FindPublished(ctx, gw, owner, snapshot.NewLogID(t)); err != nil || len(other) != 0 {
		t.Fatalf("another log's snapshots: %v %v", other, err)
	}
	// Pushing again uploads nothing.
	again, err := snapshot.Push(ctx, gw, newer.Dir, snapshot.PushOptions{PartSize: part})
	if err != nil || !again.Existed {
		t.Fatalf("re-push: %+v %v", again, err)
	}

	// The newest complete snapshot on the gateway is garbage whose tags
	// claim seq 999: snapshot.FetchNewest refuses it and takes the next one.
	junk := []byte("not a snapshot at all")
	fake := *m
	fake.Seq, fake.ID = 999, "ffffffffffffffffffffffffffffffff"
	if err := upload(ctx, gw, junk, snapshot.PartUpload(&fake, 0, 1, snapshot.SHA256Hex(junk))); err != nil {
		t.Fatal(err)
	}
	g.Mine(1)
	p, refused, err := snapshot.FetchNewest(ctx, gw, owner, te.LogID)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || refused[0].Name != fake.ID || !errors.Is(refused[0].Err, snapshot.ErrCorrupt) {
		t.Fatalf("refused %+v", refused)
	}
	ab, _ := os.ReadFile(filepath.Join(newer.Dir, snapshot.ArchiveFile))
	if p.Manifest.ID != r2.ID || !bytes.Equal(p.Archive, ab) {
		t.Fatal("fetched snapshot differs from the pushed one")
	}
	// snapshot.Restore from the fetched copy into a store that has only the log.
	env := te.Env
	env.ProjDir = filepath.Join(t.TempDir(), "projections")
	env.SnapDir = filepath.Join(t.TempDir(), "snapshots")
	in, err := snapshot.Import(env.SnapDir, p.ManifestJSON, p.Archive)
	if err != nil {
		t.Fatal(err)
	}
	te.AppendEvents(t, projtest.Events(22, 10))
	res, err := snapshot.Restore(ctx, env, snapshot.RestoreOptions{Name: in.Name})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq != 80 || res.Replayed != 10 || !snapshot.SameDigests(res.Digests, snapshot.RebuildDigests(t, te.Env)) {
		t.Fatalf("restore of a published snapshot: %+v", res)
	}

	// A snapshot whose bytes on the gateway do not match its tags is
	// refused, and snapshot.FetchNewest falls back to the older one.
	bad := found[0]
	bad.TxIDs = append([]string(nil), bad.TxIDs...)
	bad.TxIDs[0], bad.TxIDs[1] = bad.TxIDs[1], bad.TxIDs[0]
	if _, err := snapshot.FetchPublished(ctx, gw, bad); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("fetch of reordered parts: %v", err)
	}
}

// upload signs and posts one transaction through g.
func upload(ctx context.Context, g snapshot.Gateway, data []byte, u snapshot.Upload) error {
	s, err := g.Sign(ctx, data, u)
	if err != nil {
		return err
	}
	return g.Post(ctx, s)
}
