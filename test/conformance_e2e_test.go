package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	uclpkg "github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/mcpserver"
)

// conformanceJSONL is a small store of several sessions whose queries rank
// many items with distinct scores.
const conformanceJSONL = `{"type":"store","session":"trip","role":"user","content":"We land in Lisbon on Friday and take the tram to Alfama.","time":"2023-05-08T10:00:00Z"}
{"type":"store","session":"trip","role":"assistant","content":"The 28 tram to Alfama is crowded; go early in the morning.","time":"2023-05-08T10:01:00Z"}
{"type":"store","session":"trip","role":"user","content":"Book the fado dinner in Alfama for Saturday night.","time":"2023-05-08T10:02:00Z"}
{"type":"store","session":"work","role":"user","content":"The database cutover to Postgres is planned for Friday night.","time":"2023-05-09T09:00:00Z"}
{"type":"store","session":"work","role":"assistant","content":"Freeze writes an hour before the cutover and keep the old primary.","time":"2023-05-09T09:01:00Z"}
{"type":"store","session":"work","role":"user","content":"Lisbon office joins the cutover call from the tram depot meeting room.","time":"2023-05-09T09:02:00Z"}
{"type":"store","kind":"knowledge","content":"The user prefers aisle seats and trams over taxis in Lisbon.","time":"2023-05-07T08:00:00Z"}
{"type":"store","kind":"knowledge","content":"Fado houses in Alfama take bookings by phone only.","time":"2023-05-07T08:01:00Z"}
`

const (
	conformanceQuery = "tram in Lisbon Alfama cutover Friday"
	conformanceNow   = "2023-05-10T12:00:00Z"
	conformanceK     = 6
)

// One scenario through all four ways in — the CLI, the Go client over the
// owner's socket, REST and MCP — on the same store with the same query and
// --now: the same ranked ids, and the same error class for the same bad
// input. Every face is a rendering of one engine call (ucl.Methods).
func TestFourFacesAgree(t *testing.T) {
	dir := newStore(t)
	must(t, dir, conformanceJSONL, "append")

	// The CLI, owning the store for one command.
	var cli struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	out := must(t, dir, "", "query", "--json", "--now", conformanceNow, "--k", "6", conformanceQuery)
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatalf("query --json: %v\n%s", err, out)
	}
	var cliIDs []string
	for _, r := range cli.Results {
		cliIDs = append(cliIDs, r.ID)
	}
	if len(cliIDs) < 4 {
		t.Fatalf("the CLI ranked %d items; the scenario needs several: %s", len(cliIDs), out)
	}
	badCLI := ucl(t, dir, "", "query", "--json", "--mode", "sideways", conformanceQuery)
	var cliErr struct {
		Error struct {
			Class string `json:"class"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(lastLine(badCLI.err)), &cliErr); err != nil || badCLI.code != 2 {
		t.Fatalf("bad mode through the CLI: %s", badCLI)
	}

	// `ucl serve` owns the store now: the socket, REST and MCP over it.
	srv := startServe(t, dir, nil)
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))

	// The Go client over the owner's socket.
	// serve prints its line as its socket starts listening: wait for it.
	var c *uclpkg.Client
	// A generous bound: a busy 2-core machine under -race may be slow to
	// start listening; this is a wait, not a timing assertion.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		if c, err = uclpkg.Dial(dir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial the owner: %v", err)
		}
	}
	defer c.Close()
	ctx := context.Background()
	sres, err := c.Search(ctx, uclpkg.SearchRequest{Text: conformanceQuery, K: conformanceK, Now: conformanceNow})
	if err != nil {
		t.Fatal(err)
	}
	var sockIDs []string
	for _, r := range sres.Results {
		sockIDs = append(sockIDs, r.ChunkID)
	}
	_, sockErr := c.Search(ctx, uclpkg.SearchRequest{Text: conformanceQuery, Mode: "sideways"})

	// REST.
	post := func(path, body string) (int, []byte) {
		req, _ := http.NewRequest("POST", "http://"+srv.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	status, b := post("/v1/query", `{"text":"`+conformanceQuery+`","k":6,"now":"`+conformanceNow+`"}`)
	if status != 200 {
		t.Fatalf("REST query: %d %s", status, b)
	}
	var rest struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &rest); err != nil {
		t.Fatal(err)
	}
	var restIDs []string
	for _, r := range rest.Results {
		restIDs = append(restIDs, r.ID)
	}
	status, b = post("/v1/query", `{"text":"`+conformanceQuery+`","mode":"sideways"}`)
	var restErr struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &restErr) != nil || status != 400 {
		t.Fatalf("bad mode over REST: %d %s", status, b)
	}

	// MCP: `ucl mcp` attaches to the owner.
	p := startMCP(t, dir)
	defer p.cs.Close()
	q := callOK[mcpserver.QueryOut](t, p, "uc_query", map[string]any{"query": conformanceQuery, "k": conformanceK, "now": conformanceNow})
	mcpIDs := hitIDs(q.Hits)
	bad, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: "uc_query", Arguments: map[string]any{"query": conformanceQuery, "mode": "sideways"}})
	if err != nil {
		t.Fatal(err)
	}

	for face, ids := range map[string][]string{"socket": sockIDs, "REST": restIDs, "MCP": mcpIDs} {
		if !slices.Equal(ids, cliIDs) {
			t.Errorf("%s ranked %v, the CLI %v", face, ids, cliIDs)
		}
	}
	classes := map[string]string{
		"CLI":    cliErr.Error.Class,
		"socket": string(uclpkg.ClassOf(sockErr)),
		"REST":   restErr.Error.Code,
		"MCP":    mcpClass(bad),
	}
	for face, class := range classes {
		if class != string(uclpkg.ClassBadRequest) {
			t.Errorf("a bad mode through %s: class %q, want %s (all: %v)", face, class, uclpkg.ClassBadRequest, classes)
		}
	}
	if !errors.Is(sockErr, uclpkg.ErrBadRequest) && uclpkg.ClassOf(sockErr) != uclpkg.ClassBadRequest {
		t.Errorf("socket error %v", sockErr)
	}
}

// mcpClass reads the class of an MCP tool error from its text: the MCP
// face renders bad_request as "bad argument" and not_found as "not found".
func mcpClass(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError || len(res.Content) == 0 {
		return ""
	}
	text := res.Content[0].(*mcp.TextContent).Text
	switch {
	case strings.HasPrefix(text, "bad argument"):
		return string(uclpkg.ClassBadRequest)
	case strings.HasPrefix(text, "not found"):
		return string(uclpkg.ClassNotFound)
	}
	return string(uclpkg.ClassInternal)
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
