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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/mirror"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/share"
)

// shareStore is a store with testJSONL, its wallet wallet-a; the grantee
// is wallet-b (keys from arweave/testdata: no RSA key generation).
func shareStore(t *testing.T) (*Store, *arweave.Wallet, string) {
	t.Helper()
	wa, err := arweave.LoadWallet("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Init(filepath.Join(t.TempDir(), "store"), InitOptions{Wallet: wa})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Append(context.Background(), AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	wb, err := arweave.LoadWallet("arweave/testdata/wallet-b.json")
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := os.ReadFile("arweave/testdata/wallet-b.json")
	if err != nil {
		t.Fatal(err)
	}
	return s, wb, string(jwk)
}

// Bad grants are clear errors and write nothing.
func TestShareGrantBadInput(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	head, _ := s.Log().Head()
	keyA, err := os.ReadFile("arweave/testdata/wallet-a.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  ShareGrantRequest
		want error
	}{
		{"malformed address", ShareGrantRequest{To: "abc", Session: "s1", Key: keyB}, share.ErrBadAddress},
		{"address of 43 non-base64url", ShareGrantRequest{To: "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", Session: "s1", Key: keyB}, share.ErrBadAddress},
		{"empty scope", ShareGrantRequest{To: wb.Address(), Key: keyB}, share.ErrEmptyScope},
		{"scope matching nothing", ShareGrantRequest{To: wb.Address(), Session: "nope", Key: keyB}, share.ErrEmptyScope},
		{"unknown document", ShareGrantRequest{To: wb.Address(), Documents: []string{"nope"}, Key: keyB}, share.ErrEmptyScope},
		{"key of another address", ShareGrantRequest{To: wb.Address(), Session: "s1", Key: string(keyA)}, share.ErrNoGranteeKey},
		{"key that is no JWK", ShareGrantRequest{To: wb.Address(), Session: "s1", Key: "{}"}, ErrBadRequest},
		{"bad time", ShareGrantRequest{To: wb.Address(), Since: "yesterday-ish", Key: keyB}, ErrBadRequest},
	}
	for _, tc := range cases {
		if _, err := s.ShareGrant(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: "00112233445566778899aabbccddeeff"}); !errors.Is(err, share.ErrUnknownGrant) {
		t.Errorf("revoke of an unknown id: %v", err)
	}
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: "zz"}); !errors.Is(err, share.ErrUnknownGrant) {
		t.Errorf("revoke of a malformed id: %v", err)
	}
	_, err = s.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Since: "2030-01-01", Key: keyB})
	if !errors.Is(err, share.ErrEmptyScope) || !strings.Contains(err.Error(), "from 2030-01-01 on") || strings.Contains(err.Error(), "292277") {
		t.Errorf("since-only scope matching nothing: %v", err)
	}
	if h, _ := s.Log().Head(); h != head {
		t.Fatalf("bad input wrote events: head %d, was %d", h, head)
	}
	// A revoke of an event that is not a grant.
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: firstEventID(t, s)}); !errors.Is(err, share.ErrUnknownGrant) {
		t.Errorf("revoke of a store event: %v", err)
	}
}

func firstEventID(t *testing.T, s *Store) string {
	t.Helper()
	raw, err := s.Log().Raw(1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := log.DecodeHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	return h.ID.String()
}

// A grant appends a v3 grant event (its chunks' events, a share key only
// the grantee unwraps); it is listed as given, and revoked once.
func TestShareGrantWrapping(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	res, err := s.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "s1", Key: keyB, Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 2 || res.KeyFrom != "given" {
		t.Fatalf("grant: %+v", res)
	}
	raw, err := s.Log().Raw(res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.Log().Decrypt(raw)
	if err != nil {
		t.Fatal(err)
	}
	g := ev.Body.(*log.ShareGrant)
	if g.Grantee != wb.Address() || g.Note != "n" || len(g.Keys) != 0 || len(g.Seqs) != 2 || len(g.OwnKey) != log.ShareKeySize {
		t.Fatalf("grant body (v3: seqs, no keys): %+v", g)
	}
	// The share key only the grantee unwraps, bound to this grantor (the
	// formats and the grantee's checks are package share's tests).
	sk, err := crypto.UnwrapBoundShareKey(wb.PrivateKey(), g.ShareKey, share.Binding(s.shareEnv(), res.Grant))
	if err != nil || !bytes.Equal(sk, g.OwnKey) {
		t.Fatalf("the grantee's share key: %v", err)
	}

	// Listed as given, active, not sent; revoked once.
	l, err := s.ShareList(ctx, ShareListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Given) != 1 || l.Given[0].Status != "active" || l.Given[0].Sent || len(l.Received) != 0 {
		t.Fatalf("list: %+v", l)
	}
	rv, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: res.Grant.String()})
	if err != nil || rv.Grantee != wb.Address() {
		t.Fatalf("revoke: %v %+v", err, rv)
	}
	if _, err := s.ShareRevoke(ctx, ShareRevokeRequest{Grant: res.Grant.String()}); !errors.Is(err, share.ErrUnknownGrant) {
		t.Fatalf("second revoke: %v", err)
	}
	if l, err = s.ShareList(ctx, ShareListRequest{}); err != nil || l.Given[0].Status != "revoked" {
		t.Fatalf("list after revoke: %v %+v", err, l)
	}
}

// Through the owner's socket: the same grant, list and errors (sentinels
// survive the socket).
func TestShareThroughClient(t *testing.T) {
	s, wb, keyB := shareStore(t)
	ctx := context.Background()
	c := serve(t, s)
	res, err := c.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "s1", Key: keyB})
	if err != nil || len(res.Chunks) != 2 {
		t.Fatalf("grant via client: %+v %v", res, err)
	}
	a, e1 := s.ShareList(ctx, ShareListRequest{})
	b, e2 := c.ShareList(ctx, ShareListRequest{})
	if e1 != nil || e2 != nil || asJSON(t, a) != asJSON(t, b) || len(a.Given) != 1 {
		t.Fatalf("list: %v %v\n%s\n%s", e1, e2, asJSON(t, a), asJSON(t, b))
	}
	if _, err := c.ShareGrant(ctx, ShareGrantRequest{To: "nope", Session: "s1", Key: keyB}); !errors.Is(err, share.ErrBadAddress) {
		t.Fatalf("bad address via client: %v", err)
	}
	if _, err := c.ShareGrant(ctx, ShareGrantRequest{To: wb.Address(), Session: "none", Key: keyB}); !errors.Is(err, share.ErrEmptyScope) {
		t.Fatalf("empty scope via client: %v", err)
	}
	if _, err := c.ShareRevoke(ctx, ShareRevokeRequest{Grant: "00112233445566778899aabbccddeeff"}); !errors.Is(err, share.ErrUnknownGrant) {
		t.Fatalf("unknown grant via client: %v", err)
	}
	if _, err := c.ShareRevoke(ctx, ShareRevokeRequest{Grant: res.Grant.String()}); err != nil {
		t.Fatal(err)
	}
}

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
	if !errors.Is(err, share.ErrShareRejected) || tampered == 0 {
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
