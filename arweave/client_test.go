package arweave

import (
	"bytes"
	"errors"
	"testing"
)

func TestClientUploadFindFetch(t *testing.T) {
	g := gateway(t)
	c := fundedClient(t, "", "wallet-a.json", Options{})
	ctx := testCtx(t)
	logID := newLogID(t)
	recs := makeRecords(1, 5, 100)
	data, err := EncodeSegment(logID, Hash{}, recs)
	if err != nil {
		t.Fatal(err)
	}
	meta := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: 5, HeadHash: recs[4].Hash()}
	id, err := c.Upload(ctx, data, meta.Tags())
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, id)
	if err != nil || st.State != StatePending {
		t.Fatalf("status before mine = %+v, %v; want pending", st, err)
	}
	found, err := c.FindSegments(ctx, c.Wallet().Address(), logID, KindSegment)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].ID != id || !found[0].Pending {
		t.Fatalf("found %+v, want one pending %s", found, id)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	st, err = c.Status(ctx, id)
	if err != nil || st.State != StateConfirmed || st.Height <= 0 {
		t.Fatalf("status after mine = %+v, %v; want confirmed", st, err)
	}
	got, err := c.FetchData(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("fetched %d bytes, differ from uploaded %d", len(got), len(data))
	}
	found, err = c.FindSegments(ctx, c.Wallet().Address(), logID, KindSegment)
	if err != nil || len(found) != 1 || found[0].Pending || found[0].Height != st.Height {
		t.Fatalf("found after mine %+v, %v", found, err)
	}
	if err := VerifyOwner(found[0].OwnerKey, c.Wallet().Address()); err != nil {
		t.Fatal(err)
	}
	pk, err := c.FetchPublicKey(ctx, c.Wallet().Address())
	if err != nil {
		t.Fatal(err)
	}
	if pk.Key.N.Cmp(c.Wallet().PublicKey().N) != 0 {
		t.Fatal("fetched public key differs from the wallet's")
	}
}

// TestUploadOddSizes: sizes where goar's own chunker disagrees with the
// node (see chunks.go) are accepted, inline and as chunks, and read back.
func TestUploadOddSizes(t *testing.T) {
	for _, inline := range []int{0, 1000} {
		c := fundedClient(t, "", "wallet-a.json", Options{MaxInlineBytes: inline})
		for _, n := range []int{maxChunkSize + 1, 2*maxChunkSize + 1001} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i * 29)
			}
			id, err := c.Upload(testCtx(t), data, []Tag{{Name: TagAppName, Value: "ucl-test"}})
			if err != nil {
				t.Fatalf("inline<=%d n=%d: %v", inline, n, err)
			}
			got, err := c.FetchData(testCtx(t), id)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("inline<=%d n=%d: fetch %v equal=%v", inline, n, err, bytes.Equal(got, data))
			}
		}
	}
}

func TestFindGrants(t *testing.T) {
	a := fundedClient(t, "", "wallet-a.json", Options{})
	b := fundedClient(t, "", "wallet-b.json", Options{})
	ctx := testCtx(t)
	m := SegmentMeta{Kind: KindGrant, LogID: newLogID(t), FirstSeq: 7, LastSeq: 7, Grantee: a.Wallet().Address()}
	id, err := b.Upload(ctx, []byte("wrapped share key"), m.Tags())
	if err != nil {
		t.Fatal(err)
	}
	found, err := a.FindGrants(ctx, a.Wallet().Address())
	if err != nil {
		t.Fatal(err)
	}
	var hit *TxInfo
	for i := range found {
		if found[i].ID == id {
			hit = &found[i]
		}
	}
	if hit == nil || hit.Owner != b.Wallet().Address() {
		t.Fatalf("grant %s not found for grantee (got %d)", id, len(found))
	}
	pk, err := a.FetchPublicKey(ctx, b.Wallet().Address())
	if err != nil || pk.Key.N.Cmp(b.Wallet().PublicKey().N) != 0 {
		t.Fatalf("grantor key: %v", err)
	}
	if _, err := a.FetchPublicKey(ctx, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown address: %v", err)
	}
}
