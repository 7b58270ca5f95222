package arweave

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/everFinance/goar"
)

// signedInfos signs data with tags as wallet-a, once as an ANS-104 data
// item and once as an L1 transaction, and returns what GraphQL reports
// for each.
func signedInfos(t *testing.T, data []byte, tags []Tag) map[string]TxInfo {
	t.Helper()
	w := testWallet(t, "wallet-a.json")
	is, err := goar.NewItemSigner(w.signer)
	if err != nil {
		t.Fatal(err)
	}
	it, err := is.CreateAndSignItem(data, "", "", tags)
	if err != nil {
		t.Fatal(err)
	}
	// signTx asks the gateway for a price only.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("12345")) }))
	defer srv.Close()
	c, err := NewClient(srv.URL, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.signTx(context.Background(), data, tags, "zhqyily8x0lf89cl9ge3vhgz9u27meymo4mz1j3hoc4u8oetl6lww92aj26l91n9")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]TxInfo{
		"item": {ID: it.Id, Owner: w.Address(), OwnerKey: w.Owner(), Tags: tags, Signature: it.Signature, Fee: "0", Quantity: "0"},
		"l1": {ID: tx.ID, Owner: w.Address(), OwnerKey: w.Owner(), Tags: tags, Signature: tx.tx.Signature,
			Anchor: tx.tx.LastTx, Fee: tx.tx.Reward, Quantity: tx.tx.Quantity},
	}
}

// TestVerifySigned: a data item and an L1 transaction verify as signed;
// every change a gateway could make to what it reports (data, a tag, the
// anchor, the fee, the owner, the signature) is rejected.
func TestVerifySigned(t *testing.T) {
	data := bytes.Repeat([]byte("segment bytes "), 50)
	tags := []Tag{{Name: "App-Name", Value: "UnlimitedContext"}, {Name: "UC-Kind", Value: "segment"}}
	b := testWallet(t, "wallet-b.json")
	for kind, ti := range signedInfos(t, data, tags) {
		if err := VerifySigned(ti, data); err != nil {
			t.Fatalf("%s: honest: %v", kind, err)
		}
		other := signedInfos(t, []byte("other"), tags)[kind]
		cases := map[string]func(ti *TxInfo, d []byte) []byte{
			"data byte":     func(ti *TxInfo, d []byte) []byte { d[7] ^= 1; return d },
			"data appended": func(ti *TxInfo, d []byte) []byte { return append(d, 'x') },
			"tag value": func(ti *TxInfo, d []byte) []byte {
				ti.Tags = []Tag{tags[0], {Name: "UC-Kind", Value: "snapshot"}}
				return d
			},
			"tag dropped":     func(ti *TxInfo, d []byte) []byte { ti.Tags = tags[:1]; return d },
			"anchor":          func(ti *TxInfo, d []byte) []byte { ti.Anchor = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"; return d },
			"fee":             func(ti *TxInfo, d []byte) []byte { ti.Fee = "1"; return d },
			"other owner":     func(ti *TxInfo, d []byte) []byte { ti.Owner, ti.OwnerKey = b.Address(), b.Owner(); return d },
			"address only":    func(ti *TxInfo, d []byte) []byte { ti.Owner = b.Address(); return d },
			"other signature": func(ti *TxInfo, d []byte) []byte { ti.Signature = other.Signature; return d },
			"other id":        func(ti *TxInfo, d []byte) []byte { ti.ID = other.ID; return d },
			"no signature":    func(ti *TxInfo, d []byte) []byte { ti.Signature = ""; return d },
		}
		for name, edit := range cases {
			x := ti
			x.Tags = append([]Tag(nil), ti.Tags...)
			d := edit(&x, bytes.Clone(data))
			if kind == "item" && name == "fee" {
				continue // an item has no fee
			}
			if err := VerifySigned(x, d); !errors.Is(err, ErrTxSignature) {
				t.Errorf("%s, %s: %v", kind, name, err)
			}
		}
	}
}
