package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/query"
)

// testWallet is one Arweave wallet for the stores of this package's tests
// (as internal/httpapi does): generating an RSA-4096 key costs seconds of
// CPU under -race, and no test here needs two stores with distinct
// wallets from newTestStore (those that do make their own).
var testWallet = sync.OnceValues(func() (*arweave.Wallet, error) {
	w, _, err := arweave.GenerateWallet()
	return w, err
})

func newTestStore(t *testing.T) *Store {
	t.Helper()
	w, err := testWallet()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Init(filepath.Join(t.TempDir(), "store"), InitOptions{Wallet: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// largeTests reports whether the largest sizes of this package's scale
// tests run: always without the race detector; under it (make test) only
// with UCL_TEST_LARGE=1, where they would cost minutes of CPU and repeat
// paths the smaller sizes already take.
func largeTests() bool { return !raceEnabled || os.Getenv("UCL_TEST_LARGE") != "" }

const testJSONL = `{"type":"store","session":"s1","role":"user","content":"I practise the cello every morning.","time":"2023-05-08T10:00:00Z"}
{"type":"store","session":"s1","role":"assistant","content":"Scales first, then the Bach suite.","time":"2023-05-08T10:01:00Z"}
{"type":"store","session":"s2","role":"user","content":"The database cutover is planned for Friday.","time":"2023-05-09T09:00:00Z"}
`

// serve runs s.Serve until the test ends and returns a Client.
func serve(t testing.TB, s *Store) *Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for {
		c, err := Dial(s.Dir())
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		default:
		}
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The owner and an attached Client answer every read identically, and
// errors keep their sentinels across the socket.
func TestClientMatchesStore(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	c := serve(t, s)
	if fi, err := os.Stat(SocketPath(s.Dir())); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi, err)
	}
	// Writes through the client land in the owner's log.
	r, err := c.Remember(ctx, RememberRequest{Content: "Rosin the bow before playing.", Session: "s1", Time: "2023-05-08T11:00:00Z"})
	if err != nil || len(r.Results) != 1 || r.Results[0].Seq != 4 {
		t.Fatalf("remember via client: %+v %v", r, err)
	}
	search := SearchRequest{Text: "cello bow", K: 5, Now: "2023-06-01T00:00:00Z"}
	same := func(name string, a, b any, errA, errB error) {
		t.Helper()
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v / %v", name, errA, errB)
		}
		if ja, jb := asJSON(t, a), asJSON(t, b); ja != jb {
			t.Fatalf("%s differs:\nstore  %s\nclient %s", name, ja, jb)
		}
	}
	a1, e1 := s.Search(ctx, search)
	b1, e2 := c.Search(ctx, search)
	same("search", a1, b1, e1, e2)
	if len(a1.Results) == 0 {
		t.Fatal("search found nothing")
	}
	creq := ContextRequest{SearchRequest: search, Budget: 300, Recent: 2, Format: "xml"}
	creq.Session = "s1"
	a2, e1 := s.Context(ctx, creq)
	b2, e2 := c.Context(ctx, creq)
	same("context", a2, b2, e1, e2)
	a3, e1 := s.Sessions(ctx, SessionsRequest{})
	b3, e2 := c.Sessions(ctx, SessionsRequest{})
	same("sessions", a3, b3, e1, e2)
	a4, e1 := s.Session(ctx, SessionRequest{ID: "s1", Offset: 1, Limit: 2})
	b4, e2 := c.Session(ctx, SessionRequest{ID: "s1", Offset: 1, Limit: 2})
	same("session", a4, b4, e1, e2)
	if a4.Total != 3 || len(a4.Chunks) != 2 {
		t.Fatalf("session page: total %d, %d chunks", a4.Total, len(a4.Chunks))
	}
	id := a1.Results[0].ChunkID
	a5, e1 := s.Get(ctx, GetRequest{IDs: []string{id, "nope"}})
	b5, e2 := c.Get(ctx, GetRequest{IDs: []string{id, "nope"}})
	same("get", a5, b5, e1, e2)
	if !a5.Items[0].Found || a5.Items[1].Found {
		t.Fatalf("get: %+v", a5.Items)
	}

	// Tombstone via the client; replay withholds the content either way.
	tr, err := c.Tombstone(ctx, TombstoneRequest{Chunks: []string{id}, Reason: "test"})
	if err != nil || len(tr.Removed) != 1 || tr.Removed[0] != id {
		t.Fatalf("tombstone: %+v %v", tr, err)
	}
	var la, lb []string
	if err := s.Replay(ctx, ReplayRequest{}, func(l json.RawMessage) error { la = append(la, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Replay(ctx, ReplayRequest{}, func(l json.RawMessage) error { lb = append(lb, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(la, lb) || len(la) != 5 {
		t.Fatalf("replay: %d vs %d lines", len(la), len(lb))
	}
	withheld := 0
	for _, l := range la {
		if strings.Contains(l, `"tombstoned":true`) {
			withheld++
			if strings.Contains(l, "content") {
				t.Fatalf("tombstoned content replayed: %s", l)
			}
		}
	}
	if withheld != 1 {
		t.Fatalf("%d lines withheld, want 1", withheld)
	}
	var ea, eb []AuditEntry
	s.AuditLog(ctx, AuditLogRequest{}, func(e AuditEntry) error { ea = append(ea, e); return nil })
	c.AuditLog(ctx, AuditLogRequest{}, func(e AuditEntry) error { eb = append(eb, e); return nil })
	if asJSON(t, ea) != asJSON(t, eb) || len(ea) != 5 || len(ea[4].Removed) != 1 {
		t.Fatalf("audit log: %s", asJSON(t, eb))
	}

	// Errors keep their identity.
	for _, tc := range []struct {
		name string
		err  func(API) error
		want error
	}{
		{"no targets", func(a API) error { _, err := a.Tombstone(ctx, TombstoneRequest{}); return err }, ErrNoTargets},
		{"tombstone of no chunk", func(a API) error {
			_, err := a.Tombstone(ctx, TombstoneRequest{Chunks: []string{"deadbeef"}})
			return err
		}, ErrNoMatch},
		{"tombstone of no session", func(a API) error { _, err := a.Tombstone(ctx, TombstoneRequest{Session: "nosuch"}); return err }, ErrNoMatch},
		{"tombstone of an empty range", func(a API) error {
			_, err := a.Tombstone(ctx, TombstoneRequest{Session: "s1", From: "1990-01-01", To: "1990-01-02"})
			return err
		}, ErrNoMatch},
		{"tombstone of a chunk already removed", func(a API) error {
			_, err := a.Tombstone(ctx, TombstoneRequest{Chunks: []string{id}})
			return err
		}, ErrNoMatch},
		{"empty query", func(a API) error { _, err := a.Search(ctx, SearchRequest{Text: " "}); return err }, query.ErrEmptyQuery},
		{"bad mode", func(a API) error { _, err := a.Search(ctx, SearchRequest{Text: "x", Mode: "psychic"}); return err }, query.ErrBadMode},
		{"bad input", func(a API) error { _, err := a.Append(ctx, AppendRequest{JSONL: "{not json\n"}); return err }, ErrBadInput},
		{"bad replay type", func(a API) error {
			return a.Replay(ctx, ReplayRequest{Type: "nope"}, func(json.RawMessage) error { return nil })
		}, ErrBadRequest},
	} {
		head, _ := s.st.Log.Head()
		es, ec := tc.err(s), tc.err(c)
		if !errors.Is(es, tc.want) || !errors.Is(ec, tc.want) || es.Error() != ec.Error() {
			t.Errorf("%s: store %v, client %v", tc.name, es, ec)
		}
		if after, _ := s.st.Log.Head(); after != head {
			t.Errorf("%s: the refused request wrote events %d..%d", tc.name, head+1, after)
		}
	}
}

// A second Open of an owned store is refused; Attach finds the owner; a
// socket left behind by a dead owner is removed and the store opens.
func TestAttachAndStaleSocket(t *testing.T) {
	s := newTestStore(t)
	dir := s.Dir()
	if _, err := Open(dir, Options{}); !errors.Is(err, log.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	serve(t, s)
	api, err := Attach(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := api.(*Client); !ok {
		t.Fatalf("attach gave %T, want a *Client", api)
	}
	api.Close()

	// A stale socket: a file nobody listens on, store lock free.
	dir2 := filepath.Join(t.TempDir(), "store2")
	s2, err := Init(dir2, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if err := os.WriteFile(SocketPath(dir2), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	api2, err := Attach(dir2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer api2.Close()
	if _, ok := api2.(*Store); !ok {
		t.Fatalf("attach with a stale socket gave %T, want a *Store", api2)
	}
	if _, err := os.Stat(SocketPath(dir2)); !os.IsNotExist(err) {
		t.Fatalf("stale socket not removed: %v", err)
	}
}

// Processes racing to own a store (editors starting `ucl mcp` at once):
// exactly one opens it, the others attach to its socket.
func TestRacingOwners(t *testing.T) {
	s := newTestStore(t)
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const n = 4
	type got struct {
		api API
		err error
	}
	results := make(chan got, n)
	start := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			<-start
			api, err := Attach(dir, Options{})
			if st, ok := api.(*Store); ok {
				go func() { served <- st.Serve(ctx) }()
			}
			results <- got{api, err}
		}()
	}
	close(start)
	owners, clients := 0, 0
	var all []API
	for i := 0; i < n; i++ {
		g := <-results
		if g.err != nil {
			t.Fatalf("attach: %v", g.err)
		}
		all = append(all, g.api)
		switch g.api.(type) {
		case *Store:
			owners++
		case *Client:
			clients++
		}
	}
	if owners != 1 || clients != n-1 {
		t.Fatalf("%d owners, %d clients; want 1 and %d", owners, clients, n-1)
	}
	for _, a := range all {
		if _, err := a.Remember(context.Background(), RememberRequest{Content: "racing"}); err != nil {
			t.Fatalf("%T: %v", a, err)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		a.Close()
	}
}

// Below the exact-search threshold the vector projection keeps no graph:
// neither a small nor a bulk catch-up writes graph.bin, the next open loads
// nothing it does not need, and digests and verify agree across reopens.
// (Above it, Close writes the graph after a bulk catch-up; projstd's tests
// cover the graph file.)
func TestNoVectorGraphBelowExactThreshold(t *testing.T) {
	s := newTestStore(t)
	dir := s.Dir()
	ctx := context.Background()
	graph := filepath.Join(dir, "projections", "vectors", "graph.bin")
	var sb strings.Builder
	for i := 0; i < flushVectorsAfter/2; i++ {
		fmt.Fprintf(&sb, `{"type":"store","session":"s%d","content":"note %d about cello practice"}`+"\n", i%7, i)
	}
	half := sb.String()
	if _, err := s.Append(ctx, AppendRequest{JSONL: half}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CatchUp(ctx, CatchUpRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(graph); !os.IsNotExist(err) {
		t.Fatalf("graph written after a small catch-up: %v", err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Append(ctx, AppendRequest{JSONL: half, AllowDuplicate: true}); err != nil {
			t.Fatal(err)
		}
	}
	live, err := s.CatchUp(ctx, CatchUpRequest{Digests: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(graph); !os.IsNotExist(err) {
		t.Fatalf("graph written after a bulk catch-up below the threshold: %v", err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	again, err := s.ProjectionStatus(ctx, ProjectionStatusRequest{Digests: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range live.Projections {
		q := again.Projections[i]
		if p.Digest != q.Digest || p.Checkpoint != q.Checkpoint {
			t.Fatalf("%s changed across the flush: %+v / %+v", p.Name, p, q)
		}
	}
	v, err := s.VerifyProjections(ctx, VerifyProjectionsRequest{})
	if err != nil || !v.OK {
		t.Fatalf("verify after reopening: %+v %v", v, err)
	}
}
