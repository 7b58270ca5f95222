package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

// TestRESTEditAndThread: the edit and thread routes call the engine and
// map its refusals (unknown 404, tombstoned 409, a chunk 400), writing
// nothing for a refused edit.
func TestRESTEditAndThread(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	for _, r := range []ucl.RememberRequest{
		{Content: "Where is the build log?", Session: "s", ChunkID: "m1"},
		{Content: "Let me look it up.", Session: "s", Role: "assistant", ChunkID: "m2", Parent: "m1"},
		{Content: "build.log in /tmp", Session: "s", ChunkID: "t1", Parent: "m2", Tool: &log.ToolCall{Name: "find", Args: `{"q":"build log"}`, Status: "ok"}},
		{Content: "This turn will be forgotten.", Session: "s", ChunkID: "gone"},
	} {
		if _, err := e.store.Remember(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var long strings.Builder
	for i := range 60 {
		fmt.Fprintf(&long, "Paragraph %d of the handbook says something about deployments and rollbacks. ", i)
	}
	doc, err := e.store.Remember(ctx, ucl.RememberRequest{Content: long.String(), Kind: "document", ChunkTokens: 64, ChunkID: "hb"})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) < 2 {
		t.Fatalf("the handbook was not chunked: %+v", doc.Results)
	}
	if _, err := e.store.Tombstone(ctx, ucl.TombstoneRequest{Chunks: []string{"gone"}, Reason: "test"}); err != nil {
		t.Fatal(err)
	}

	resp, b := e.post("/v1/items/m2/edit", ucl.EditRequest{Content: "Let me search for it.", By: "tester"})
	if resp.StatusCode != 200 {
		t.Fatalf("edit: %d %s", resp.StatusCode, b)
	}
	if r := decode[ucl.EditResult](t, b); r.ID != "m2" || len(r.Results) != 1 {
		t.Fatalf("edit result %s", b)
	}
	g, err := e.store.Get(ctx, ucl.GetRequest{IDs: []string{"m2"}})
	if err != nil || len(g.Items) != 1 || g.Items[0].Content != "Let me search for it." {
		t.Fatalf("after the edit: %+v %v", g, err)
	}

	resp, b = e.do("GET", "/v1/items/m2/thread?depth=1", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("thread: %d %s", resp.StatusCode, b)
	}
	th := decode[ucl.ThreadResult](t, b)
	var got []string
	for _, it := range th.Items {
		got = append(got, fmt.Sprintf("%s@%d", it.ID, it.Depth))
	}
	if th.Root != "m1" || strings.Join(got, " ") != "m1@-1 m2@0 t1@1" {
		t.Fatalf("thread of m2: root %q items %v", th.Root, got)
	}
	resp, b = e.do("GET", "/v1/items/m1/thread", "", nil)
	if th := decode[ucl.ThreadResult](t, b); resp.StatusCode != 200 || len(th.Items) != 3 {
		t.Fatalf("thread of m1 without a depth: %d %s", resp.StatusCode, b)
	}

	head := func() uint64 {
		s, err := e.store.Status(ctx, ucl.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return s.HeadSeq
	}
	before := head()
	chunk := doc.Results[1].ChunkID
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"edit unknown", "POST", "/v1/items/nope/edit", `{"content":"x"}`, 404, "not_found"},
		{"edit tombstoned", "POST", "/v1/items/gone/edit", `{"content":"x"}`, 409, "conflict"},
		{"edit a chunk", "POST", "/v1/items/" + url.PathEscape(chunk) + "/edit", `{"content":"x"}`, 400, "bad_request"},
		{"edit empty", "POST", "/v1/items/m1/edit", `{"content":" "}`, 400, "bad_request"},
		{"edit unknown field", "POST", "/v1/items/m1/edit", `{"content":"x","text":"y"}`, 400, "bad_request"},
		{"edit other id in body", "POST", "/v1/items/m1/edit", `{"id":"m2","content":"x"}`, 400, "bad_request"},
		{"edit by GET", "GET", "/v1/items/m1/edit", ``, 405, "method_not_allowed"},
		{"thread unknown", "GET", "/v1/items/nope/thread", ``, 404, "not_found"},
		{"thread tombstoned", "GET", "/v1/items/gone/thread", ``, 409, "conflict"},
		{"thread bad depth", "GET", "/v1/items/m1/thread?depth=-1", ``, 400, "bad_request"},
		{"thread by POST", "POST", "/v1/items/m1/thread", `{}`, 405, "method_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := e.do(tc.method, tc.path, "application/json", []byte(tc.body))
			wantError(t, resp, b, tc.status, tc.code)
		})
	}
	if h := head(); h != before {
		t.Fatalf("head %d after the refused requests, want %d", h, before)
	}
}
