package mirror

import (
	"errors"
	"github.com/unlimitedcontext/ucl/arweave"
	"testing"
)

func TestFindGrants(t *testing.T) {
	a := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	b := fundedClient(t, "", "wallet-b.json", arweave.Options{})
	ctx := testCtx(t)
	m := SegmentMeta{Kind: KindGrant, LogID: newLogID(t), FirstSeq: 7, LastSeq: 7, Grantee: a.Wallet().Address()}
	id, err := b.Upload(ctx, []byte("wrapped share key"), m.Tags())
	if err != nil {
		t.Fatal(err)
	}
	found, err := FindGrants(ctx, a, a.Address())
	if err != nil {
		t.Fatal(err)
	}
	var hit *arweave.TxInfo
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
	if _, err := a.FetchPublicKey(ctx, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, arweave.ErrNotFound) {
		t.Fatalf("unknown address: %v", err)
	}
}
