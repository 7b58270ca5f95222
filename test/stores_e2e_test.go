package test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func storesCreate(t *testing.T, stores, name string) string {
	t.Helper()
	out := must(t, "", "", "stores", "create", "--stores", stores, "--json", name)
	tok, _ := jsonDoc(t, out)["token"].(string)
	if tok == "" {
		t.Fatalf("stores create printed no token: %s", out)
	}
	return tok
}

func restPost(t *testing.T, base, token, path, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, resp.Header, m
}

// searchTexts returns the text of every hit of a query.
func searchTexts(t *testing.T, base, token, q string) string {
	t.Helper()
	code, _, m := restPost(t, base, token, "/v1/query", `{"text":`+strconvQuote(q)+`}`)
	if code != 200 {
		t.Fatalf("query: %d %v", code, m)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// Two tenant stores behind one `ucl serve --stores`: each token reaches
// its own store only, a wrong token gets 401, an idle store is closed
// (its lock and socket released) and opened again by the next request,
// and a store over its request rate gets 429 with Retry-After.
func TestServeStores(t *testing.T) {
	t.Parallel()
	stores := filepath.Join(t.TempDir(), "stores")
	tokA := storesCreate(t, stores, "alice")
	tokB := storesCreate(t, stores, "bob")
	if r := ucl(t, "", "", "stores", "create", "--stores", stores, "alice"); r.code == 0 {
		t.Fatalf("creating alice twice succeeded: %s", r)
	}
	storesCreate(t, stores, "carol")
	must(t, "", "", "stores", "rm", "--stores", stores, "carol")
	if r := ucl(t, "", "", "stores", "rm", "--stores", stores, "carol"); r.code == 0 {
		t.Fatalf("removing carol twice succeeded: %s", r)
	}
	list := jsonDoc(t, must(t, "", "", "stores", "list", "--stores", stores, "--json"))
	if n := len(list["stores"].([]any)); n != 2 {
		t.Fatalf("stores list: %v", list)
	}
	if _, err := os.Stat(filepath.Join(stores, "alice", "token")); err == nil {
		t.Fatal("the plain token was kept on disk")
	}

	s := startServe(t, t.TempDir(), nil, "--stores", stores, "--idle-timeout", "300ms", "--rate", "2", "--burst", "30")
	base := "http://" + s.addr
	for _, c := range []struct{ tok, text string }{{tokA, "alice likes the aubergine recipe"}, {tokB, "bob prefers the blueberry pie"}} {
		if code, _, m := restPost(t, base, c.tok, "/v1/store", `{"content":`+strconvQuote(c.text)+`}`); code != 200 {
			t.Fatalf("store: %d %v", code, m)
		}
	}
	if got := searchTexts(t, base, tokA, "aubergine blueberry"); !strings.Contains(got, "aubergine recipe") || strings.Contains(got, "blueberry pie") {
		t.Fatalf("alice's query sees: %s", got)
	}
	if got := searchTexts(t, base, tokB, "aubergine blueberry"); !strings.Contains(got, "blueberry pie") || strings.Contains(got, "aubergine recipe") {
		t.Fatalf("bob's query sees: %s", got)
	}
	// MCP over HTTP, per store: bob's uc_query sees bob's memory only.
	mcp := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"uc_query","arguments":{"query":"aubergine blueberry"}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(mcp))
	req.Header.Set("Authorization", "Bearer "+tokB)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(mb), "blueberry pie") || strings.Contains(string(mb), "aubergine recipe") {
		t.Fatalf("bob's MCP uc_query: %d %s", resp.StatusCode, mb)
	}
	for _, tok := range []string{"", "alice.00", tokA + "x"} {
		if code, _ := restGet(t, base, tok, "/v1/status"); code != 401 {
			t.Fatalf("token %q: status %d, want 401", tok, code)
		}
	}

	// Idle close: the store's socket goes away and the CLI opens the store
	// itself (it could not while the server held its lock). The server
	// removes the socket first, then closes the store (releasing its
	// lock), then logs the close: wait for the log line, not the socket
	// alone, or the CLI below can meet a lock still held.
	sock := filepath.Join(stores, "alice", "ucl.sock")
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(sock)
		if os.IsNotExist(err) && strings.Contains(s.stderr.String(), `msg="closed store" store=alice`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice was not closed when idle (socket gone: %v): %s", os.IsNotExist(err), s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := jsonDoc(t, must(t, filepath.Join(stores, "alice"), "", "status", "--json"))
	if st["events"].(float64) < 1 {
		t.Fatalf("alice's events after idle close: %v", st)
	}
	// Reopened on use, with its data.
	if got := searchTexts(t, base, tokA, "aubergine"); !strings.Contains(got, "aubergine recipe") {
		t.Fatalf("after reopen alice sees: %s", got)
	}

	// Rate: burst 30 at 2/s; 40 quick requests must hit the limit.
	limited := 0
	for i := 0; i < 40 && limited == 0; i++ {
		code, h, _ := restPost(t, base, tokB, "/v1/query", `{"text":"pie"}`)
		if code == 429 {
			limited++
			if h.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	if limited == 0 {
		t.Fatal("40 requests over a burst of 30 were never limited")
	}
	// Another store's bucket is its own.
	if code, _ := restGet(t, base, tokA, "/v1/status"); code != 200 {
		t.Fatalf("alice limited by bob's rate: %d", code)
	}
	// Over the body limit: 413, nothing stored.
	big := `{"content":"` + strings.Repeat("x", 40<<20) + `"}`
	if code, _, _ := restPost(t, base, tokA, "/v1/store", big); code != 413 {
		t.Fatalf("a 40 MiB body: %d, want 413", code)
	}
}
