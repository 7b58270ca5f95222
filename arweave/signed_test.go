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
	tags := []Tag{{Name: TagAppName, Value: AppName}, {Name: TagKind, Value: string(KindSegment)}}
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
				ti.Tags = []Tag{tags[0], {Name: TagKind, Value: string(KindSnapshot)}}
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

// TestRebuildVerifiesSegmentSignatures (arlocal): the gateway passes off
// wallet B's segment, an L1 transaction or a bundled data item, as wallet
// A's by reporting A's address and public key for it. Before segments'
// own signatures were checked this rebuilt 20 records; now the segment is
// refused by id. A tag of A's own item altered by the gateway is refused
// too, and the honest gateway rebuilds everything.
func TestRebuildVerifiesSegmentSignatures(t *testing.T) {
	g := gateway(t)
	a := fundedClient(t, "", "wallet-a.json", Options{})
	b := fundedClient(t, "", "wallet-b.json", Options{})
	ctx := testCtx(t)
	addrA, addrB := a.Wallet().Address(), b.Wallet().Address()
	keyA, keyB := a.Wallet().Owner(), b.Wallet().Owner()
	for _, mode := range []string{"item", "l1"} {
		t.Run(mode, func(t *testing.T) {
			logID := newLogID(t)
			l := newMemLog(20, 100)
			d1, _ := EncodeSegment(logID, Hash{}, l.recs[:10])
			d2, _ := EncodeSegment(logID, l.recs[9].Hash(), l.recs[10:])
			m1 := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: 10, HeadHash: l.recs[9].Hash()}
			m2 := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 11, LastSeq: 20, HeadHash: l.recs[19].Hash()}
			var idA, idB string
			if mode == "item" {
				_, ids, err := a.UploadBundle(ctx, []BundleItem{{Data: d1, Tags: m1.Tags()}})
				if err != nil {
					t.Fatal(err)
				}
				idA = ids[0]
				if _, ids, err = b.UploadBundle(ctx, []BundleItem{{Data: d2, Tags: m2.Tags()}}); err != nil {
					t.Fatal(err)
				}
				idB = ids[0]
			} else {
				var err error
				if idA, err = a.Upload(ctx, d1, m1.Tags()); err != nil {
					t.Fatal(err)
				}
				if idB, err = b.Upload(ctx, d2, m2.Tags()); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.Mine(1); err != nil {
				t.Fatal(err)
			}

			p := newFaultProxy(t, g.URL())
			c, _ := NewClient(p.srv.URL, nil, Options{})
			recs, _, err := rebuildAll(t, c, addrA, logID, RebuildOptions{})
			if err != nil || len(recs) != 10 {
				t.Fatalf("honest gateway: %d records, %v", len(recs), err)
			}

			p.reqBody = func(path string, body []byte) []byte {
				if path != "/graphql" {
					return body
				}
				return bytes.ReplaceAll(body, []byte(`"owners":["`+addrA+`"]`), []byte(`"owners":["`+addrA+`","`+addrB+`"]`))
			}
			p.respBody = func(path string, body []byte) []byte {
				if path != "/graphql" {
					return body
				}
				body = bytes.ReplaceAll(body, []byte(addrB), []byte(addrA))
				return bytes.ReplaceAll(body, []byte(keyB), []byte(keyA))
			}
			_, _, err = rebuildAll(t, c, addrA, logID, RebuildOptions{})
			var rej *TxRejectedError
			if !errors.As(err, &rej) || rej.TxID != idB || !errors.Is(err, ErrTxSignature) {
				t.Fatalf("B's segment as A's: err = %v, want %s rejected for its signature", err, idB)
			}
			t.Logf("refused: %v", err)

			p.reqBody = nil
			p.respBody = func(path string, body []byte) []byte {
				if path != "/graphql" {
					return body
				}
				return bytes.ReplaceAll(body, []byte(`"value":"`+AppVersion+`"`), []byte(`"value":"9.9.9"`))
			}
			_, _, err = rebuildAll(t, c, addrA, logID, RebuildOptions{})
			if !errors.As(err, &rej) || rej.TxID != idA || !errors.Is(err, ErrTxSignature) {
				t.Fatalf("altered tag: err = %v, want %s rejected for its signature", err, idA)
			}
		})
	}
}
