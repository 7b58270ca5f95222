package arweave

import (
	"bytes"
	"testing"
)

func TestClientUploadFindFetch(t *testing.T) {
	g := gateway(t)
	c := fundedClient(t, "", "wallet-a.json", Options{})
	ctx := testCtx(t)
	data := bytes.Repeat([]byte("find me "), 60)
	tags := []Tag{{Name: "App-Name", Value: "ucl-test"}, {Name: "Test-Run", Value: newRunID(t)}}
	id, err := c.Upload(ctx, data, tags)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, id)
	if err != nil || st.State != StatePending {
		t.Fatalf("status before mine = %+v, %v; want pending", st, err)
	}
	found, err := c.FindTxs(ctx, TxQuery{Owners: []string{c.Address()}, Tags: tags})
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
	found, err = c.FindTxs(ctx, TxQuery{Owners: []string{c.Address()}, Tags: tags})
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
			id, err := c.Upload(testCtx(t), data, []Tag{{Name: "App-Name", Value: "ucl-test"}})
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
