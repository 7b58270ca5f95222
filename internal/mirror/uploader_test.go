package mirror

import (
	"bytes"
	"github.com/unlimitedcontext/ucl/arweave"
	"testing"
	"time"
)

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUploaderConformance runs one suite against every Uploader, with data
// inline in the transaction and posted as chunks.
func TestUploaderConformance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inline int
		mk     func(*arweave.Client) arweave.Uploader
	}{
		{"L1", 0, func(c *arweave.Client) arweave.Uploader { return arweave.NewL1Uploader(c) }},
		{"L1-chunked", 1000, func(c *arweave.Client) arweave.Uploader { return arweave.NewL1Uploader(c) }},
		{"bundle", 0, func(c *arweave.Client) arweave.Uploader { return arweave.NewBundleUploader(c, BundleTags()) }},
		{"bundle-chunked", 1000, func(c *arweave.Client) arweave.Uploader { return arweave.NewBundleUploader(c, BundleTags()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runUploaderSuite(t, tc.mk(fundedClient(t, "", "wallet-a.json", arweave.Options{MaxInlineBytes: tc.inline})))
		})
	}
}

func runUploaderSuite(t *testing.T, u arweave.Uploader) {
	g := gateway(t)
	c := clientOf(u)
	ctx := testCtx(t)
	logID := newLogID(t)
	// Three contiguous segments, the middle one larger than a 256 KiB chunk.
	var ups []arweave.Upload
	var metas []SegmentMeta
	prev := Hash{}
	for _, r := range [][3]int{{1, 3, 300}, {4, 400, 700}, {404, 2, 10}} {
		recs := makeRecords(uint64(r[0]), r[1], r[2])
		data, err := EncodeSegment(logID, prev, recs)
		if err != nil {
			t.Fatal(err)
		}
		head := recs[len(recs)-1].Hash()
		m := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: recs[0].Seq, LastSeq: recs[len(recs)-1].Seq, HeadHash: head}
		ups, metas = append(ups, m.Upload(data)), append(metas, m)
		prev = head
	}
	signed, err := u.Sign(ctx, ups)
	if err != nil {
		t.Fatal(err)
	}
	if len(signed.Receipts) != len(ups) {
		t.Fatalf("%d receipts for %d segments", len(signed.Receipts), len(ups))
	}
	n, err := u.Post(ctx, signed)
	if err != nil || n != len(ups) {
		t.Fatalf("post: accepted %d, %v", n, err)
	}
	for _, r := range signed.Receipts {
		id := r.TxID
		if r.BundleID != "" {
			id = r.BundleID
		}
		st, err := c.Status(ctx, id)
		if err != nil || st.State != arweave.StatePending {
			t.Fatalf("before mining %s: %+v %v; want pending", id, st, err)
		}
	}
	// Pending uploads are visible to GraphQL before mining. (arlocal
	// unbundles a chunked bundle asynchronously after its last chunk;
	// mining before that has finished fails with a UNIQUE constraint, so
	// wait for the items first.)
	waitFor(t, func() bool {
		found, err := FindSegments(ctx, c, c.Address(), logID, KindSegment, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			if !f.Pending {
				t.Fatalf("%s confirmed before mining", f.ID)
			}
		}
		return len(found) == len(ups)
	})
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	found, err := FindSegments(ctx, c, c.Address(), logID, KindSegment, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(ups) {
		t.Fatalf("GraphQL found %d segments, want %d", len(found), len(ups))
	}
	byID := map[string]arweave.TxInfo{}
	for _, f := range found {
		byID[f.ID] = f
	}
	for i, r := range signed.Receipts {
		f, ok := byID[r.TxID]
		if !ok {
			t.Fatalf("receipt %s not found by GraphQL", r.TxID)
		}
		if f.Pending || f.Height <= 0 {
			t.Fatalf("%s still pending after mining: %+v", r.TxID, f)
		}
		if err := arweave.VerifyOwner(f.OwnerKey, c.Wallet().Address()); err != nil || f.Owner != c.Wallet().Address() {
			t.Fatalf("owner of %s: %v", r.TxID, err)
		}
		m, err := ParseTags(f.Tags)
		if err != nil || m != metas[i] {
			t.Fatalf("tags of %s: %+v %v", r.TxID, m, err)
		}
		st, err := c.Status(ctx, r.TxID)
		if err != nil || st.State != arweave.StateConfirmed || st.Height != f.Height {
			t.Fatalf("status of %s: %+v %v", r.TxID, st, err)
		}
		got, err := c.FetchData(ctx, r.TxID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, ups[i].Data) {
			t.Fatalf("%s: fetched %d bytes differ from the %d uploaded", r.TxID, len(got), len(ups[i].Data))
		}
		if _, err := DecodeSegment(got); err != nil {
			t.Fatal(err)
		}
	}
}
