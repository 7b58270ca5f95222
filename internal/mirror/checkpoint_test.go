package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/unlimitedcontext/ucl/arweave"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

func anchorFor(logID [16]byte, size uint64, prev string, fill byte) CheckpointAnchor {
	return CheckpointAnchor{LogID: logID, Size: size, Root: bytes.Repeat([]byte{fill}, 32), Prev: prev,
		NoteKey: "example+00000000+AQ", Data: []byte("note of size " + string(rune('0'+size)) + "\n")}
}

func TestCheckpointPostFindVerify(t *testing.T) {
	g := gateway(t)
	ctx := testCtx(t)
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	other := fundedClient(t, "", "wallet-b.json", arweave.Options{})
	logID := newLogID(t)

	// Posted out of size order: the list is ordered by size all the same.
	id2, err := PostCheckpoint(ctx, c, anchorFor(logID, 2, "", 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	id5, err := PostCheckpoint(ctx, c, anchorFor(logID, 5, id2, 5))
	if err != nil {
		t.Fatal(err)
	}
	id1, err := PostCheckpoint(ctx, c, anchorFor(logID, 1, "", 1))
	if err != nil {
		t.Fatal(err)
	}
	// Another wallet's checkpoint of the same log id is not this owner's.
	if _, err := PostCheckpoint(ctx, other, anchorFor(logID, 3, "", 3)); err != nil {
		t.Fatal(err)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	cps, err := FindCheckpoints(ctx, c, c.Wallet().Address(), logID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cp := range cps {
		got = append(got, cp.ID)
	}
	if want := []string{id1, id2, id5}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
	if cps[2].Prev != id2 || cps[2].Size != 5 || cps[2].Root[0] != 5 || cps[2].Height == 0 {
		t.Fatalf("checkpoint 5: %+v", cps[2])
	}

	vt, err := c.FetchVerifiedTx(ctx, id5, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if vt.Owner != c.Wallet().Address() || string(vt.Data) != "note of size 5\n" || vt.Height == 0 {
		t.Fatalf("verified tx: %+v", vt)
	}
	ct, err := ParseCheckpointTags(logID, vt.Tags)
	if err != nil || ct.Size != 5 || ct.Prev != id2 {
		t.Fatalf("tags %+v: %v", ct, err)
	}
}

// A gateway that alters a transaction's tags, owner or data is caught by
// FetchVerifiedTx.
func TestFetchVerifiedTxRejectsTampering(t *testing.T) {
	g := gateway(t)
	ctx := testCtx(t)
	c := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	other := testWallet(t, "wallet-b.json")
	logID := newLogID(t)
	id, err := PostCheckpoint(ctx, c, anchorFor(logID, 7, "", 7))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Mine(1); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(path string, body []byte) []byte{
		"tag": func(path string, body []byte) []byte {
			if !strings.HasPrefix(path, "/tx/") || strings.HasSuffix(path, "/status") {
				return body
			}
			var m map[string]any
			json.Unmarshal(body, &m)
			tags := m["tags"].([]any)
			tags[5].(map[string]any)["value"] = "OQ" // UC-Tree-Size "9"
			b, _ := json.Marshal(m)
			return b
		},
		"owner": func(path string, body []byte) []byte {
			if !strings.HasPrefix(path, "/tx/") || strings.HasSuffix(path, "/status") {
				return body
			}
			var m map[string]any
			json.Unmarshal(body, &m)
			m["owner"] = other.Owner()
			b, _ := json.Marshal(m)
			return b
		},
		"data": func(path string, body []byte) []byte {
			if path != "/"+id {
				return body
			}
			return bytes.Replace(body, []byte("7"), []byte("8"), 1)
		},
	}
	for name, alter := range cases {
		t.Run(name, func(t *testing.T) {
			u, _ := url.Parse(g.URL())
			rp := httputil.NewSingleHostReverseProxy(u)
			rp.ModifyResponse = func(r *http.Response) error {
				var b bytes.Buffer
				b.ReadFrom(r.Body)
				r.Body.Close()
				nb := alter(r.Request.URL.Path, b.Bytes())
				r.Body = io.NopCloser(bytes.NewReader(nb))
				r.ContentLength = int64(len(nb))
				r.Header.Del("Content-Length")
				return nil
			}
			srv := httptest.NewServer(rp)
			defer srv.Close()
			pc, err := arweave.NewClient(srv.URL, nil, arweave.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pc.FetchVerifiedTx(ctx, id, 1<<16); !errors.Is(err, arweave.ErrTxSignature) {
				t.Fatalf("tampered %s: err = %v, want ErrTxSignature", name, err)
			}
		})
	}
}

// A node answers 202 "Pending" for a transaction it has not mined: that
// is not a bad signature, and not a pass.
func TestFetchVerifiedTxPending(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "Pending")
	}))
	defer srv.Close()
	c, err := arweave.NewClient(srv.URL, nil, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.FetchVerifiedTx(context.Background(), strings.Repeat("A", 43), 1<<16)
	if !errors.Is(err, arweave.ErrTxPending) || errors.Is(err, arweave.ErrTxSignature) {
		t.Fatalf("err = %v, want ErrTxPending", err)
	}
}
