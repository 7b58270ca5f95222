package mirror

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
)

// TestGatewayConformance holds *arweave.Client, on arlocal, to the Gateway
// contract the mirror relies on (runGatewayConformance).
func TestGatewayConformance(t *testing.T) {
	g := gateway(t)
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	ro, err := arweave.NewClient(g.URL(), nil, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runGatewayConformance(t, c, ro, c.Wallet().Address(), func() {
		if err := g.Mine(1); err != nil {
			t.Fatal(err)
		}
	})
}

// runGatewayConformance checks a Gateway g signing as address (and a
// read-only one, ro, on the same network): Upload's transaction is found
// by FindTxs with its owner, owner key, tags, size and signed fields
// (VerifySigned passes on them); Status moves from pending to confirmed
// at the height FindTxs then reports; FetchDataLimit returns the exact
// bytes and refuses more than its limit; FetchVerifiedTx verifies the
// owner, tags and data itself; unknown ids are not found; a read-only
// gateway has no address and cannot push.
func runGatewayConformance(t *testing.T, g, ro Gateway, address string, mine func()) {
	ctx := testCtx(t)
	if g.Address() != address || ro.Address() != "" {
		t.Fatalf("addresses %q and %q, want %q and none", g.Address(), ro.Address(), address)
	}
	logID := newLogID(t)
	recs := makeRecords(1, 7, 200)
	data, err := EncodeSegment(logID, Hash{}, recs)
	if err != nil {
		t.Fatal(err)
	}
	meta := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: 7, HeadHash: recs[6].Hash()}
	id, err := g.Upload(ctx, data, meta.Tags())
	if err != nil {
		t.Fatal(err)
	}
	if !arweave.ValidID(id) {
		t.Fatalf("upload id %q", id)
	}
	if _, err := ro.Upload(ctx, data, meta.Tags()); !errors.Is(err, arweave.ErrNoWallet) {
		t.Fatalf("read-only upload: %v, want ErrNoWallet", err)
	}

	st, err := g.Status(ctx, id)
	if err != nil || st.State != arweave.StatePending {
		t.Fatalf("status before mining: %+v %v, want pending", st, err)
	}
	find := func(gw Gateway) arweave.TxInfo {
		t.Helper()
		txs, err := FindSegments(ctx, gw, address, logID, KindSegment, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(txs) != 1 || txs[0].ID != id {
			t.Fatalf("found %d transactions (%+v), want %s alone", len(txs), txs, id)
		}
		return txs[0]
	}
	ti := find(g)
	if !ti.Pending || ti.Owner != address || arweave.VerifyOwner(ti.OwnerKey, address) != nil || ti.DataSize != int64(len(data)) {
		t.Fatalf("pending transaction reported as %+v", ti)
	}
	if got, err := ParseTags(ti.Tags); err != nil || got != meta {
		t.Fatalf("tags read back as %+v %v, want %+v", got, err, meta)
	}
	if err := arweave.VerifySigned(ti, data); err != nil {
		t.Fatalf("signed fields reported: %v", err)
	}
	if err := arweave.VerifySigned(ti, append(bytes.Clone(data), 0)); !errors.Is(err, arweave.ErrTxSignature) {
		t.Fatalf("other data verified: %v", err)
	}

	mine()
	st, err = g.Status(ctx, id)
	if err != nil || st.State != arweave.StateConfirmed || st.Height <= 0 {
		t.Fatalf("status after mining: %+v %v, want confirmed", st, err)
	}
	for _, gw := range []Gateway{g, ro} {
		if ti := find(gw); ti.Pending || ti.Height != st.Height {
			t.Fatalf("mined transaction reported as %+v, want height %d", ti, st.Height)
		}
	}
	// Tags are ANDed: another kind of the same log finds nothing.
	if txs, err := FindSegments(ctx, g, address, logID, KindSnapshot, 0); err != nil || len(txs) != 0 {
		t.Fatalf("snapshots of the log: %d %v, want none", len(txs), err)
	}

	got, err := ro.FetchDataLimit(ctx, id, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch: %d bytes %v, want the %d uploaded", len(got), err, len(data))
	}
	if _, err := g.FetchDataLimit(ctx, id, int64(len(data))-1); !errors.Is(err, arweave.ErrTooLarge) {
		t.Fatalf("fetch under the size: %v, want ErrTooLarge", err)
	}
	vt, err := ro.FetchVerifiedTx(ctx, id, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if vt.ID != id || vt.Owner != address || !bytes.Equal(vt.Data, data) || vt.Pending || vt.Height != st.Height ||
		!slices.Equal(vt.Tags, meta.Tags()) {
		t.Fatalf("verified transaction %+v", vt)
	}
	if _, err := g.FetchVerifiedTx(ctx, id, int64(len(data))-1); err == nil {
		t.Fatal("verified fetch over its limit succeeded")
	}

	unknown := strings.Repeat("A", 43)
	if st, err := g.Status(ctx, unknown); err != nil || st.State != arweave.StateNotFound {
		t.Fatalf("status of an unknown id: %+v %v", st, err)
	}
	if _, err := g.FetchDataLimit(ctx, unknown, 1<<10); !errors.Is(err, arweave.ErrNotFound) {
		t.Fatalf("data of an unknown id: %v, want ErrNotFound", err)
	}

	// What the mirror builds on it: a read-only gateway cannot push, and
	// the segment uploaded above rebuilds.
	if _, err := NewSyncer(SyncConfig{LogID: logID, Records: newMemLog(1, 10).source, Gateway: ro,
		Uploader: noUpload{}, State: openTestState(t)}); !errors.Is(err, arweave.ErrNoWallet) {
		t.Fatalf("syncer on a read-only gateway: %v, want ErrNoWallet", err)
	}
	var n int
	res, err := Rebuild(context.Background(), RebuildOptions{Gateway: ro, Owner: address, LogID: logID}, func(r Record) error {
		if r.Seq != recs[n].Seq || !bytes.Equal(r.Raw, recs[n].Raw) {
			t.Fatalf("rebuilt record %d differs", r.Seq)
		}
		n++
		return nil
	})
	if err != nil || n != len(recs) || res.LastSeq != 7 || res.HeadHash != meta.HeadHash {
		t.Fatalf("rebuild: %d records, %+v, %v", n, res, err)
	}
}

// noUpload refuses every upload.
type noUpload struct{}

func (noUpload) Sign(context.Context, []arweave.Upload) (*arweave.SignedUpload, error) {
	return nil, errors.New("no upload")
}
func (noUpload) Post(context.Context, *arweave.SignedUpload) (int, error) {
	return 0, errors.New("no upload")
}
