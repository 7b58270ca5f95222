package arweave

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/everFinance/goar/utils"
)

// The Turbo upload API as far as Bundler relies on it; the end-to-end
// tests (test/bundler_e2e_test.go) run the real protocol against a bundler
// that verifies items with arbundles and bundles them into arlocal.
func TestBundlerPost(t *testing.T) {
	w := testWallet(t, "wallet-a.json")
	c, err := NewClient("http://127.0.0.1:1", w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := c.SignDataItem([]byte("segment bytes"), []Tag{{Name: "App-Name", Value: "UnlimitedContext"}})
	if err != nil {
		t.Fatal(err)
	}
	// The item is a well-formed ANS-104 item under the wallet's signature.
	dec, err := utils.DecodeBundleItem(it.Binary)
	if err != nil || dec.Id != it.ID || utils.VerifyBundleItem(*dec) != nil {
		t.Fatalf("decoded item: %+v %v", dec, err)
	}
	if n, err := DataItemSize(len("segment bytes"), []Tag{{Name: "App-Name", Value: "UnlimitedContext"}}); err != nil || n != len(it.Binary) {
		t.Fatalf("DataItemSize = %d, %v; the item is %d bytes", n, err, len(it.Binary))
	}
	mode := "ok"
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tx":
			body, _ := io.ReadAll(r.Body)
			if r.Header.Get("Content-Type") != "application/octet-stream" || string(body) != string(it.Binary) {
				http.Error(rw, "bad upload", 400)
				return
			}
			switch mode {
			case "402":
				http.Error(rw, "Insufficient balance", http.StatusPaymentRequired)
			case "wrong-id":
				json.NewEncoder(rw).Encode(map[string]string{"id": strings.Repeat("b", 43)})
			default:
				json.NewEncoder(rw).Encode(map[string]string{"id": it.ID})
			}
		case r.URL.Path == "/v1/tx/"+it.ID+"/status" && mode == "ok":
			rw.Write([]byte(`{"status":"confirmed","bundleId":"` + strings.Repeat("c", 43) + `"}`))
		default:
			http.NotFound(rw, r)
		}
	}))
	defer srv.Close()
	b, err := NewBundler(srv.URL+"/", fastOpt)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Post(ctx, it); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Status(ctx, it.ID); err != nil || st.Status != "CONFIRMED" || !st.Known() || st.BundleID != strings.Repeat("c", 43) {
		t.Fatalf("status %+v %v", st, err)
	}
	mode = "402"
	if err := b.Post(ctx, it); !errors.Is(err, ErrPaymentRequired) || !errors.Is(err, ErrRejected) {
		t.Fatalf("402: %v", err)
	}
	if st, err := b.Status(ctx, it.ID); err != nil || st.Known() {
		t.Fatalf("status of an unknown item: %+v %v", st, err)
	}
	mode = "wrong-id"
	if err := b.Post(ctx, it); !errors.Is(err, ErrBundlerAnswer) {
		t.Fatalf("wrong id: %v", err)
	}
}

// FetchVerifiedTx checks a data item, which /tx/{id} does not serve, by
// its own signature (what proofs and share disclosures posted through a
// bundler need).
func TestFetchVerifiedItem(t *testing.T) {
	g := gateway(t)
	c := fundedClient(t, "", "wallet-a.json", Options{})
	ctx := testCtx(t)
	tags := []Tag{{Name: "App-Name", Value: "ucl-test"}, {Name: "Test-Run", Value: newRunID(t)}}
	_, ids, err := c.UploadBundle(ctx, []BundleItem{{Data: []byte("a checkpoint note"), Tags: tags}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	vt, err := c.FetchVerifiedTx(ctx, ids[0], 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if vt.Owner != c.Address() || string(vt.Data) != "a checkpoint note" || vt.Pending || vt.Height < 1 || len(vt.Tags) != 2 {
		t.Fatalf("verified item: %+v", vt)
	}
	if _, err := c.FetchVerifiedTx(ctx, strings.Repeat("Q", 43), 1<<20); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func FuzzParseBundlerStatus(f *testing.F) {
	for _, s := range []string{`{"status":"FINALIZED","bundleId":"` + strings.Repeat("c", 43) + `","info":"permanent","winc":"0"}`,
		`{"status":"new"}`, `{"status":""}`, `{"bundleId":"x"}`, `[]`, `null`, `{"status":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseBundlerStatus(b)
		if err != nil {
			if !errors.Is(err, ErrBundlerAnswer) {
				t.Fatalf("error %v is not ErrBundlerAnswer", err)
			}
			return
		}
		if st.Status == "" || st.Status != strings.ToUpper(st.Status) || len(st.Status) > 4*maxStatusWord || (st.BundleID != "" && !ValidID(st.BundleID)) {
			t.Fatalf("accepted %+v from %q", st, b)
		}
	})
}
