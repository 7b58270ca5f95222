package ucl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
)

// A pull whose grant is rejected (here a gateway that serves the grantor's
// disclosure altered) keeps what the last pull verified: it does not wipe
// the shared chunks B already holds.
func TestSharePullRejectedKeepsLastGoodState(t *testing.T) {
	gw := arlocaltest.Start(t)
	ctx := context.Background()
	a, wb, keyB := shareStore(t)
	if err := gw.Mint(a.st.Meta.WalletAddress, 1e15); err != nil {
		t.Fatal(err)
	}
	b, err := Init(filepath.Join(t.TempDir(), "b"), InitOptions{Wallet: wb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := a.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "s1", Key: keyB}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Push(ctx, PushRequest{Gateway: gw.URL()}); err != nil {
		t.Fatal(err)
	}
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	first, err := b.SharePull(ctx, SharePullRequest{Gateway: gw.URL()})
	if err != nil || first.Chunks != 2 || len(first.Grants) != 1 {
		t.Fatalf("first pull: %+v %v", first, err)
	}
	before, err := b.ShareList(ctx, ShareListRequest{})
	if err != nil {
		t.Fatal(err)
	}

	// The second pull goes through a gateway that flips a byte of the
	// disclosure's data.
	cl, err := arweave.NewClient(gw.URL(), nil, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	txs, err := mirror.FindGrants(ctx, cl, wb.Address())
	if err != nil || len(txs) != 1 {
		t.Fatalf("find grants: %v %d", err, len(txs))
	}
	u, err := url.Parse(gw.URL())
	if err != nil {
		t.Fatal(err)
	}
	tampered := 0
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != "/"+txs[0].ID || r.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		body[len(body)-1] ^= 1
		tampered++
		r.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	bad := httptest.NewServer(rp)
	t.Cleanup(bad.Close)
	second, err := b.SharePull(ctx, SharePullRequest{Gateway: bad.URL})
	if !errors.Is(err, ErrShareRejected) || tampered == 0 {
		t.Fatalf("pull of an altered disclosure: %v (%d tampered)", err, tampered)
	}
	if second.Chunks != 2 || len(second.Grants) != 1 {
		t.Fatalf("a rejected pull wiped the verified shares: %d chunks, %d grants", second.Chunks, len(second.Grants))
	}
	after, err := b.ShareList(ctx, ShareListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if asJSON(t, before) != asJSON(t, after) {
		t.Fatalf("a rejected pull changed what B holds:\n%s\n%s", asJSON(t, before), asJSON(t, after))
	}
	qr, err := b.Search(ctx, SearchRequest{Text: "cello", Origin: "shared", K: 10})
	if err != nil || !strings.Contains(asJSON(t, qr), "cello every morning") {
		t.Fatalf("shared search after a rejected pull: %v %v", qr, err)
	}
}
