package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl"
)

// TestRESTAsOfAndTZ: as_of on GET /v1/sessions/{id} and POST /v1/get
// (the store's items as they stood at a seq) and tz on POST /v1/query
// (the day "yesterday" names).
func TestRESTAsOfAndTZ(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := context.Background()
	store := func(content, tm string) ucl.EventResult {
		t.Helper()
		r, err := e.store.Remember(ctx, ucl.RememberRequest{Content: content, Session: "faro", Time: tm})
		if err != nil {
			t.Fatal(err)
		}
		return r.Results[0]
	}
	left := store("The ferry to Faro left.", "2023-05-09T20:00:00Z")
	back := store("The ferry from Faro came back.", "2023-05-08T16:00:00Z")
	if _, err := e.store.Edit(ctx, ucl.EditRequest{ID: left.ID.String(), Content: "The ferry to Faro was cancelled."}); err != nil {
		t.Fatal(err)
	}
	// The session as of the first store: one turn, as it was then.
	resp, body := e.do(http.MethodGet, "/v1/sessions/faro?as_of="+strconv.FormatUint(left.Seq, 10), "", nil)
	var sess ucl.SessionResult
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &sess) != nil || len(sess.Chunks) != 1 || sess.Chunks[0].Content != "The ferry to Faro left." {
		t.Fatalf("session as of %d: %d %s", left.Seq, resp.StatusCode, body)
	}
	resp, body = e.post("/v1/get", ucl.GetRequest{IDs: []string{left.ID.String()}, AsOf: strconv.FormatUint(back.Seq, 10)})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "The ferry to Faro left.") {
		t.Fatalf("get as of %d: %d %s", back.Seq, resp.StatusCode, body)
	}
	resp, body = e.do(http.MethodGet, "/v1/sessions/faro?as_of=99", "", nil)
	wantError(t, resp, body, http.StatusBadRequest, "bad_request")
	// Now is 2023-05-10T12:00Z: yesterday is May 9 in UTC, and
	// 2023-05-08T15:00Z..2023-05-09T15:00Z in Tokyo.
	first := func(tz string) string {
		resp, body := e.post("/v1/query", ucl.SearchRequest{Text: "ferry Faro yesterday", K: 1, Now: "2023-05-10T12:00:00Z", TZ: tz})
		var res ucl.SearchResult
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Results) != 1 {
			t.Fatalf("query in %s: %d %s", tz, resp.StatusCode, body)
		}
		return res.Results[0].Content
	}
	if utc, tokyo := first("UTC"), first("Asia/Tokyo"); !strings.Contains(utc, "cancelled") || !strings.Contains(tokyo, "came back") {
		t.Fatalf("yesterday in UTC: %q, in Tokyo: %q", utc, tokyo)
	}
}

// TestRESTServerTZDefault: a query or context request without tz reads
// its time phrases in the server's zone (Options.TZ, from [retrieval]
// timezone), not in UTC; the request's own tz still wins; New refuses a
// zone it cannot load.
func TestRESTServerTZDefault(t *testing.T) {
	ctx := context.Background()
	// Now is 2023-05-10T12:00Z: in UTC yesterday is May 9, in Tokyo (+9)
	// it is 2023-05-08T15:00Z to 2023-05-09T15:00Z.
	for _, c := range []struct{ serverTZ, reqTZ, want string }{
		{"", "", "left"},
		{"Asia/Tokyo", "", "came back"},
		{"Asia/Tokyo", "UTC", "left"},
	} {
		e := newEnv(t, Options{TZ: c.serverTZ})
		for _, s := range []struct{ content, tm string }{
			{"The ferry to Faro left.", "2023-05-09T20:00:00Z"},
			{"The ferry from Faro came back.", "2023-05-08T16:00:00Z"},
		} {
			if _, err := e.store.Remember(ctx, ucl.RememberRequest{Content: s.content, Session: "faro", Time: s.tm}); err != nil {
				t.Fatal(err)
			}
		}
		sr := ucl.SearchRequest{Text: "ferry Faro yesterday", K: 1, Now: "2023-05-10T12:00:00Z", TZ: c.reqTZ}
		resp, body := e.post("/v1/query", sr)
		var res ucl.SearchResult
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Results) != 1 || !strings.Contains(res.Results[0].Content, c.want) {
			t.Fatalf("query, server zone %q, request zone %q: %d %s, want %q first", c.serverTZ, c.reqTZ, resp.StatusCode, body, c.want)
		}
		resp, body = e.post("/v1/context", ucl.ContextRequest{SearchRequest: sr, Budget: 1000, Format: "text"})
		var cx ucl.ContextResult
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &cx) != nil || len(cx.Included) == 0 || cx.Included[0] != res.Results[0].ChunkID {
			t.Fatalf("context, server zone %q, request zone %q: %d %s, want %s first", c.serverTZ, c.reqTZ, resp.StatusCode, body, res.Results[0].ChunkID)
		}
	}
	if _, err := New(&countingAPI{}, Options{Token: "x", TZ: "Mars/Olympus"}); !errors.Is(err, ErrBadOption) {
		t.Fatalf("New with zone Mars/Olympus: %v, want ErrBadOption", err)
	}
}
