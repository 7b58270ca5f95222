package ucl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/unlimitedcontext/ucl/log"
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

// keepRejected keeps an old grant only when this pull rejected what it
// found of it, and never over events this pull verified differently.
func TestKeepRejectedScope(t *testing.T) {
	g1, g2 := log.ID{1}, log.ID{2}
	old := func() []*receivedLog {
		return []*receivedLog{{Grantor: "A", LogID: "L", raws: map[uint64][]byte{3: []byte("three"), 4: []byte("four")}, Grants: []receivedGrant{
			{ReceivedShare: ReceivedShare{Grant: g1, Seq: 5}, Keys: []receivedKey{{Seq: 3}}},
			{ReceivedShare: ReceivedShare{Grant: g2, Seq: 6}, Keys: []receivedKey{{Seq: 4}}},
		}}}
	}
	grants := func(logs []*receivedLog) (out []string) {
		for _, rl := range logs {
			for _, g := range rl.Grants {
				out = append(out, rl.Grantor+":"+g.Grant.String()[:2])
			}
		}
		return out
	}
	cases := []struct {
		name     string
		logs     []*receivedLog
		rejected []RejectedShare
		want     string
		kept     int
	}{
		{"nothing rejected: a grant no longer found is dropped", nil, nil, "[]", 0},
		{"another grantor rejected", nil, []RejectedShare{{Grantor: "C", Reason: "x"}}, "[]", 0},
		{"one grant rejected", nil, []RejectedShare{{Grantor: "A", Grant: g2.String(), Reason: "x"}}, "[A:02]", 1},
		{"the grantor's log rejected", nil, []RejectedShare{{Grantor: "A", Reason: "x"}}, "[A:01 A:02]", 2},
		{"a disclosure of unknown grantor rejected", nil, []RejectedShare{{TxID: "t", Reason: "x"}}, "[A:01 A:02]", 2},
		{"received again: the new state wins", []*receivedLog{{Grantor: "A", LogID: "L", raws: map[uint64][]byte{3: []byte("three")},
			Grants: []receivedGrant{{ReceivedShare: ReceivedShare{Grant: g1, Seq: 5, Status: "revoked"}, Keys: []receivedKey{{Seq: 3}}}}}},
			[]RejectedShare{{Grantor: "A", Reason: "x"}}, "[A:01 A:02]", 1},
		{"a forked grantor log: the old grant is not kept", []*receivedLog{{Grantor: "A", LogID: "L", raws: map[uint64][]byte{4: []byte("other")},
			Grants: []receivedGrant{{ReceivedShare: ReceivedShare{Grant: g1, Seq: 5}, Keys: []receivedKey{{Seq: 4}}}}}},
			[]RejectedShare{{Grantor: "A", Grant: g2.String(), Reason: "x"}}, "[A:01]", 0},
	}
	for _, tc := range cases {
		got, kept := keepRejected(tc.logs, old(), tc.rejected)
		if fmt.Sprint(grants(got)) != tc.want || kept != tc.kept {
			t.Errorf("%s: %v kept %d, want %s kept %d", tc.name, grants(got), kept, tc.want, tc.kept)
		}
	}
}
