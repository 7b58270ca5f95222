package mirror

import (
	"bytes"
	"errors"
	"github.com/unlimitedcontext/ucl/arweave"
	"testing"
)

// TestRebuildVerifiesSegmentSignatures (arlocal): the gateway passes off
// wallet B's segment, an L1 transaction or a bundled data item, as wallet
// A's by reporting A's address and public key for it. Before segments'
// own signatures were checked this rebuilt 20 records; now the segment is
// refused by id. A tag of A's own item altered by the gateway is refused
// too, and the honest gateway rebuilds everything.
func TestRebuildVerifiesSegmentSignatures(t *testing.T) {
	g := gateway(t)
	a := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	b := fundedClient(t, "", "wallet-b.json", arweave.Options{})
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
				_, ids, err := a.UploadBundle(ctx, []arweave.BundleItem{{Data: d1, Tags: m1.Tags()}}, BundleTags())
				if err != nil {
					t.Fatal(err)
				}
				idA = ids[0]
				if _, ids, err = b.UploadBundle(ctx, []arweave.BundleItem{{Data: d2, Tags: m2.Tags()}}, BundleTags()); err != nil {
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
			c, _ := arweave.NewClient(p.srv.URL, nil, arweave.Options{})
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
			if !errors.As(err, &rej) || rej.TxID != idB || !errors.Is(err, arweave.ErrTxSignature) {
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
			if !errors.As(err, &rej) || rej.TxID != idA || !errors.Is(err, arweave.ErrTxSignature) {
				t.Fatalf("altered tag: err = %v, want %s rejected for its signature", err, idA)
			}
		})
	}
}
