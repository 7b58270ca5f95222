package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/internal/mirror"
)

// Each subtest has its own arlocal and its own stores (so its own wallets
// and log ids) and runs in parallel with the others: the subtests mine
// blocks and read confirmation states, which a shared gateway would mix.
func TestArweave(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping arlocal end-to-end tests in -short mode")
	}
	for _, st := range []struct {
		name string
		fn   func(*testing.T, *arlocaltest.Gateway)
	}{
		{"RebuildSecondDevice", testRebuildSecondDevice},
		{"NoPlaintext", testNoPlaintext},
		{"Bundle", testBundle},
		{"GatewayDownMidSync", testGatewayDown},
		{"LostMirrorState", testLostState},
		{"KilledDuringPush", testKilledPush},
		{"TamperedGateway", testTampered},
		{"Watch", testWatch},
		{"Usage", testSyncUsage},
		{"ConvRebuild", testConvRebuild},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			st.fn(t, arlocaltest.Start(t))
		})
	}
}

// genEvents returns n JSONL store events over 10 sessions, with a tombstone
// of a single chunk every 97 lines and of a whole session once. Every
// content, meta value and session name is a unique secret (for the
// plaintext check).
func genEvents(n int, tag string) (jsonl string, secrets []string) {
	var b strings.Builder
	for i := 0; i < n; i++ {
		sess := fmt.Sprintf("sess-%s-secret-%02d", tag, i%10)
		content := fmt.Sprintf("content %s secret %06d about the cello, scales and bow grip number %d", tag, i, i*7)
		meta := fmt.Sprintf("metaval-%s-%06d", tag, i)
		ev := map[string]any{"type": "store", "session": sess, "role": []string{"user", "assistant"}[i%2],
			"kind": "conversation", "content": content, "meta": map[string]string{"k": meta},
			"chunk_id": fmt.Sprintf("c-%s-%d", tag, i), "time": time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339)}
		line, _ := json.Marshal(ev)
		b.Write(line)
		b.WriteByte('\n')
		secrets = append(secrets, content, meta)
		if i < 10 {
			secrets = append(secrets, sess)
		}
		if i%97 == 96 {
			fmt.Fprintf(&b, `{"type":"tombstone","chunks":["c-%s-%d"],"reason":"user asked"}`+"\n", tag, i-3)
		}
		if i == n/2 {
			fmt.Fprintf(&b, `{"type":"tombstone","session":"sess-%s-secret-03","reason":"privacy"}`+"\n", tag)
		}
	}
	return b.String(), secrets
}

// device is a store with a funded wallet.
type device struct {
	dir, addr, logID string
}

func newDevice(t *testing.T, gw *arlocaltest.Gateway, events int, tag string) (device, []string) {
	t.Helper()
	dir := newStore(t)
	st := jsonDoc(t, must(t, dir, "", "status", "--json"))
	d := device{dir: dir, addr: st["wallet_address"].(string), logID: st["log_id"].(string)}
	if err := gw.Mint(d.addr, 1e15); err != nil {
		t.Fatal(err)
	}
	var secrets []string
	if events > 0 {
		var in string
		in, secrets = genEvents(events, tag)
		must(t, dir, in, "append", "-")
	}
	return d, secrets
}

func headOf(t *testing.T, dir string) uint64 {
	t.Helper()
	return uint64(jsonDoc(t, must(t, dir, "", "status", "--json"))["head_seq"].(float64))
}

// remoteRanges lists the device's segments on arlocal (directly, not
// through any proxy) as first..last ranges with tx ids.
type remoteSeg struct {
	first, last uint64
	id          string
}

func remoteRanges(t *testing.T, gw *arlocaltest.Gateway, d device) []remoteSeg {
	t.Helper()
	cl, err := arweave.NewClient(gw.URL(), nil, arweave.Options{})
	if err != nil {
		t.Fatal(err)
	}
	txs, err := mirror.FindSegments(context.Background(), cl, d.addr, d.id(), mirror.KindSegment, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []remoteSeg
	for _, tx := range txs {
		m, err := mirror.ParseTags(tx.Tags)
		if err != nil {
			t.Fatalf("tx %s: %v", tx.ID, err)
		}
		out = append(out, remoteSeg{m.FirstSeq, m.LastSeq, tx.ID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out
}

func (d device) id() [16]byte {
	var id [16]byte
	b, _ := hex.DecodeString(d.logID)
	copy(id[:], b)
	return id
}

// checkOnce asserts the segments on the gateway cover 1..head exactly once
// each: no duplicate range, no overlap, no gap.
func checkOnce(t *testing.T, segs []remoteSeg, head uint64) {
	t.Helper()
	next := uint64(1)
	for _, s := range segs {
		if s.first != next {
			t.Fatalf("segments on the gateway do not tile 1..%d once: at %d found %d..%d (all: %v)", head, next, s.first, s.last, segs)
		}
		next = s.last + 1
	}
	if next != head+1 {
		t.Fatalf("segments on the gateway end at %d, head is %d", next-1, head)
	}
}

// rebuild runs `ucl rebuild` of src into a fresh dir through gateway url.
func rebuild(t *testing.T, url string, src device, extra ...string) (string, result) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "rebuilt")
	args := append([]string{"rebuild", "--gateway", url, "--wallet", filepath.Join(src.dir, "wallet.json"),
		"--vault-key", filepath.Join(src.dir, "vault.key"), "--dir", dst}, extra...)
	return dst, ucl(t, dst, "", args...)
}

func digests(t *testing.T, dir string) map[string]any {
	t.Helper()
	st := jsonDoc(t, must(t, dir, "", "project", "status", "--json", "--digests"))
	out := map[string]any{}
	for _, p := range st["projections"].([]any) {
		m := p.(map[string]any)
		out[m["name"].(string)] = m["digest"]
	}
	return out
}

func testRebuildSecondDevice(t *testing.T, gw *arlocaltest.Gateway) {
	a, _ := newDevice(t, gw, 2500, "a")
	head := headOf(t, a.dir)
	if head < 2500 {
		t.Fatalf("head %d", head)
	}
	push := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	if uint64(push["covered_seq"].(float64)) != head || push["uploaded"].(float64) < 2 || push["safe_seq"].(float64) != 0 {
		t.Fatalf("push: %v", push)
	}
	// Idempotent: a second push uploads nothing.
	again := jsonDoc(t, must(t, a.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	if again["uploaded"].(float64) != 0 || uint64(again["covered_seq"].(float64)) != head {
		t.Fatalf("second push: %v", again)
	}
	out := must(t, a.dir, "", "sync", "push", "--gateway", gw.URL())
	if !strings.Contains(out, "up to date") {
		t.Fatalf("third push: %s", out)
	}
	checkOnce(t, remoteRanges(t, gw, a), head)

	// Device B rebuilds while the segments are still pending (unmined).
	b, r := rebuild(t, gw.URL(), a, "--json")
	if r.code != 0 {
		t.Fatalf("rebuild: %s", r)
	}
	rb := jsonDoc(t, r.out)
	if uint64(rb["events"].(float64)) != head || rb["pending_segments"].(float64) != push["uploaded"].(float64) || rb["partial"] != false {
		t.Fatalf("rebuild result: %v", rb)
	}
	must(t, a.dir, "", "project")
	if got, want := must(t, b, "", "replay"), must(t, a.dir, "", "replay"); got != want {
		t.Fatalf("replay differs after rebuild (%d vs %d bytes)", len(got), len(want))
	}
	if got, want := must(t, b, "", "replay", "--include-tombstoned"), must(t, a.dir, "", "replay", "--include-tombstoned"); got != want {
		t.Fatal("replay --include-tombstoned differs after rebuild")
	}
	da, db := digests(t, a.dir), digests(t, b)
	if len(da) < 4 || fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("digests differ:\nA %v\nB %v", da, db)
	}
	for n, d := range rb["digests"].(map[string]any) {
		if da[n] != d {
			t.Fatalf("rebuild printed digest %s=%v, A has %v", n, d, da[n])
		}
	}
	sb := jsonDoc(t, must(t, b, "", "status", "--json"))
	// The rebuilt store knows its segments are on Arweave: its mirror
	// state covers the head, and a push uploads nothing.
	if rb["mirrored_seq"] != float64(head) || sb["mirror"] == nil || sb["mirror"].(map[string]any)["covered_seq"] != float64(head) {
		t.Fatalf("rebuilt store's mirror state: rebuild %v, status %v", rb["mirrored_seq"], sb["mirror"])
	}
	if out := must(t, b, "", "sync", "push", "--gateway", gw.URL(), "--json"); jsonDoc(t, out)["uploaded"] != 0.0 {
		t.Fatalf("push after rebuild uploaded: %s", out)
	}
	if sb["log_id"] != a.logID || sb["wallet_address"] != a.addr {
		t.Fatalf("B status: %v", sb)
	}
	must(t, b, "", "audit", "verify")

	// Status before and after mining.
	st := jsonDoc(t, must(t, a.dir, "", "sync", "status", "--json"))
	if uint64(st["covered_seq"].(float64)) != head || st["safe_seq"].(float64) != 0 || st["confirmed"].(float64) != 0 {
		t.Fatalf("sync status before mining: %v", st)
	}
	if err := gw.Mine(2); err != nil {
		t.Fatal(err)
	}
	st = jsonDoc(t, must(t, a.dir, "", "sync", "status", "--refresh", "--gateway", gw.URL(), "--json"))
	if uint64(st["safe_seq"].(float64)) != head || st["submitted"].(float64) != 0 {
		t.Fatalf("sync status after mining: %v", st)
	}
	for _, s := range st["segments"].([]any) {
		m := s.(map[string]any)
		if m["status"] != "confirmed" || m["confirmations"] == nil || m["confirmations"].(float64) < 1 || len(m["tx"].(string)) != 43 {
			t.Fatalf("segment after mining: %v", m)
		}
	}
	text := must(t, a.dir, "", "sync", "status")
	if !strings.Contains(text, fmt.Sprintf("all %d events are on Arweave, all confirmed", head)) {
		t.Fatalf("sync status text: %s", text)
	}
	ms := jsonDoc(t, must(t, a.dir, "", "status", "--json"))["mirror"].(map[string]any)
	if uint64(ms["safe_seq"].(float64)) != head {
		t.Fatalf("status mirror: %v", ms)
	}
	if !strings.Contains(must(t, a.dir, "", "status"), "confirmed up to") {
		t.Fatal("status text lacks the mirror line")
	}

	// Refusals: an existing store; a wrong vault key (nothing left behind).
	if r := ucl(t, b, "", "rebuild", "--gateway", gw.URL(), "--wallet", filepath.Join(a.dir, "wallet.json"), "--vault-key", filepath.Join(a.dir, "vault.key"), "--dir", b); r.code == 0 || !strings.Contains(r.err, "already initialized") {
		t.Fatalf("rebuild over a store: %s", r)
	}
	other := newStore(t)
	dst, r := rebuild(t, gw.URL(), device{dir: a.dir}, "--vault-key", filepath.Join(other, "vault.key"))
	if r.code == 0 || !strings.Contains(r.err, "vault key") {
		t.Fatalf("rebuild with another vault key: %s", r)
	}
	assertNoDir(t, dst)
}

func assertNoDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s exists after a failed rebuild", dir)
	}
	ents, _ := os.ReadDir(filepath.Dir(dir))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".rebuild-") {
			t.Fatalf("staging dir %s left behind", e.Name())
		}
	}
}

// encodings returns s and its base64 forms at each alignment (a substring
// of a longer encoded text shows up only as one of those), trimmed of the
// edge characters that depend on neighbours.
func encodings(s string) []string {
	out := []string{s}
	for off := 0; off < 3 && off < len(s); off++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			e := strings.TrimRight(enc.EncodeToString([]byte(s[off:])), "=")
			if len(e) > 4 {
				out = append(out, e[:len(e)-3])
			}
		}
	}
	return out
}

func testNoPlaintext(t *testing.T, gw *arlocaltest.Gateway) {
	d, secrets := newDevice(t, gw, 400, "np")
	must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "16384")
	if err := gw.Mine(1); err != nil {
		t.Fatal(err)
	}
	segs := remoteRanges(t, gw, d)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	// Every needle's 12-byte prefix in a set, then one pass over each
	// uploaded blob.
	const w = 12
	needles := map[string]string{}
	for _, s := range secrets {
		for _, e := range encodings(s) {
			if len(e) >= w {
				needles[e[:w]] = e
			}
		}
	}
	cl, _ := arweave.NewClient(gw.URL(), nil, arweave.Options{})
	txs, err := mirror.FindSegments(context.Background(), cl, d.addr, d.id(), mirror.KindSegment, 0)
	if err != nil {
		t.Fatal(err)
	}
	scan := func(what string, blob []byte) {
		for i := 0; i+w <= len(blob); i++ {
			if full, ok := needles[string(blob[i:i+w])]; ok && bytes.HasPrefix(blob[i:], []byte(full)) {
				t.Fatalf("%s contains secret %q", what, full)
			}
		}
	}
	total := 0
	for _, tx := range txs {
		resp, err := http.Get(gw.URL() + "/" + tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(data) < mirror.SegmentHeaderSize {
			t.Fatalf("GET /%s: %d, %d bytes", tx.ID, resp.StatusCode, len(data))
		}
		total += len(data)
		scan("data of "+tx.ID, data)
		var tags bytes.Buffer
		for _, tg := range tx.Tags {
			fmt.Fprintf(&tags, "%s=%s\n", tg.Name, tg.Value)
		}
		scan("tags of "+tx.ID, tags.Bytes())
		if tags.Len() > 512 {
			t.Fatalf("tags of %s are %d bytes", tx.ID, tags.Len())
		}
	}
	// The check can fail: the same scan finds the secrets in the input.
	in, _ := genEvents(400, "np")
	found := false
	for i := 0; i+w <= len(in) && !found; i++ {
		_, found = needles[in[i:i+w]]
	}
	if !found || total == 0 {
		t.Fatal("plaintext scan is blind")
	}
}

func testBundle(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 300, "bu")
	push := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--bundle", "--segment-bytes", "8192", "--json"))
	if push["mode"] != "bundle" || push["uploaded"].(float64) < 2 {
		t.Fatalf("bundle push: %v", push)
	}
	if err := gw.Mine(1); err != nil { // bundled items are indexed once mined
		t.Fatal(err)
	}
	b, r := rebuild(t, gw.URL(), d)
	if r.code != 0 {
		t.Fatalf("rebuild: %s", r)
	}
	if must(t, b, "", "replay") != must(t, d.dir, "", "replay") {
		t.Fatal("replay differs after a bundle rebuild")
	}
}

// proxy is a loopback reverse proxy in front of arlocal with switchable
// faults.
type proxy struct {
	t   *testing.T
	srv *httptest.Server
	rp  *httputil.ReverseProxy

	mu         sync.Mutex
	down       bool            // answer 503 to everything
	downAfter  int             // > 0: after this many more POST /tx, forward one more, drop its answer, go down
	onPosted   func(posts int) // called after each forwarded POST /tx (or a bundler's /v1/tx), with the count so far
	alterID    string          // flip a byte of GET /{alterID}
	hideID     string          // drop this tx (by its id) from GraphQL answers
	dropOwners bool            // ignore the owners filter of GraphQL queries
	posts      int
}

func newProxy(t *testing.T, target string) *proxy {
	u, _ := url.Parse(target)
	p := &proxy{t: t, rp: httputil.NewSingleHostReverseProxy(u)}
	p.rp.ModifyResponse = p.modify
	p.rp.ErrorLog = stdlog.New(io.Discard, "", 0) // cancelled fetch-ahead requests
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *proxy) URL() string { return p.srv.URL }

func (p *proxy) set(fn func(p *proxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down, dropOwners := p.down, p.dropOwners
	isPost := r.Method == http.MethodPost && (r.URL.Path == "/tx" || r.URL.Path == "/v1/tx") // a gateway's or a bundler's
	lose := false
	if isPost && !down && p.downAfter > 0 {
		p.downAfter--
		if p.downAfter == 0 {
			lose, p.down = true, true
		}
	}
	p.mu.Unlock()
	if down {
		http.Error(w, "injected outage", http.StatusServiceUnavailable)
		return
	}
	if dropOwners && r.URL.Path == "/graphql" {
		body, _ := io.ReadAll(r.Body)
		var q map[string]any
		if json.Unmarshal(body, &q) == nil {
			if v, ok := q["variables"].(map[string]any); ok {
				delete(v, "owners")
			}
			body, _ = json.Marshal(q)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if lose {
		// The gateway gets the transaction; the client never hears back.
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	if isPost && rec.Code == 200 {
		p.mu.Lock()
		p.posts++
		cb, n := p.onPosted, p.posts
		p.mu.Unlock()
		if cb != nil {
			cb(n)
		}
	}
}

func (p *proxy) modify(resp *http.Response) error {
	p.mu.Lock()
	alterID, hideID := p.alterID, p.hideID
	p.mu.Unlock()
	path := resp.Request.URL.Path
	alter := alterID != "" && path == "/"+alterID
	hide := hideID != "" && path == "/graphql"
	if !alter && !hide {
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if alter && len(b) > 0 {
		b = bytes.Clone(b)
		b[len(b)-1] ^= 0x01
	}
	if hide {
		var doc struct {
			Data struct {
				Transactions struct {
					PageInfo json.RawMessage `json:"pageInfo"`
					Edges    []struct {
						Cursor string          `json:"cursor"`
						Node   json.RawMessage `json:"node"`
					} `json:"edges"`
				} `json:"transactions"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &doc) == nil && doc.Data.Transactions.PageInfo != nil {
			edges := doc.Data.Transactions.Edges[:0]
			for _, e := range doc.Data.Transactions.Edges {
				// By the node's own id: a tag naming it (a checkpoint's
				// UC-Prev-Checkpoint) does not hide the node carrying it.
				var n struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(e.Node, &n) != nil || n.ID != hideID {
					edges = append(edges, e)
				}
			}
			doc.Data.Transactions.Edges = edges
			b, _ = json.Marshal(doc)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return nil
}

// A gateway that goes down mid-push (after accepting a transaction whose
// answer is lost): the push fails with a clear message and a hint; once the
// gateway is back a second push completes, each range on the gateway once,
// and a rebuild is exact.
func testGatewayDown(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 200, "gd")
	head := headOf(t, d.dir)
	p := newProxy(t, gw.URL())
	p.set(func(p *proxy) { p.downAfter = 6 })
	r := ucl(t, d.dir, "", "sync", "push", "--gateway", p.URL(), "--segment-bytes", "2048")
	if r.code == 0 || !strings.Contains(r.err, "gateway unavailable") || !strings.Contains(r.err, "nothing was lost") || !strings.Contains(r.err, "run `ucl sync push` again") {
		t.Fatalf("push into an outage: %s", r)
	}
	if strings.Count(strings.TrimSpace(r.err), "\n") != 1 {
		t.Fatalf("want one error line and one hint line: %q", r.err)
	}
	st := jsonDoc(t, must(t, d.dir, "", "sync", "status", "--json"))
	if uint64(st["covered_seq"].(float64)) >= head {
		t.Fatalf("status after a failed push claims everything: %v", st)
	}
	p.set(func(p *proxy) { p.down = false })
	push := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", p.URL(), "--segment-bytes", "2048", "--json"))
	if uint64(push["covered_seq"].(float64)) != head {
		t.Fatalf("resumed push: %v", push)
	}
	segs := remoteRanges(t, gw, d)
	if len(segs) < 10 {
		t.Fatalf("only %d segments: the fault hit too late to matter", len(segs))
	}
	checkOnce(t, segs, head)
	b, r := rebuild(t, gw.URL(), d)
	if r.code != 0 || must(t, b, "", "replay") != must(t, d.dir, "", "replay") {
		t.Fatalf("rebuild after the outage: %s", r)
	}
}

// Losing the mirror state after a push (a crash before bookkeeping, or a
// deleted mirror.db) uploads nothing twice: the next push adopts.
func testLostState(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 120, "ls")
	head := headOf(t, d.dir)
	first := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "4096", "--json"))
	if err := os.Remove(filepath.Join(d.dir, "mirror.db")); err != nil {
		t.Fatal(err)
	}
	again := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "4096", "--json"))
	if again["uploaded"].(float64) != 0 || again["adopted"] != first["uploaded"] || uint64(again["covered_seq"].(float64)) != head {
		t.Fatalf("push after losing mirror.db: %v (first %v)", again, first)
	}
	// More events, then a push with another segment size: the old segments
	// are still adopted, only the new events are uploaded.
	in, _ := genEvents(30, "ls2")
	must(t, d.dir, in, "append")
	head = headOf(t, d.dir)
	os.Remove(filepath.Join(d.dir, "mirror.db"))
	more := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
	if more["adopted"] != first["uploaded"] || more["uploaded"].(float64) != 1 {
		t.Fatalf("push of new events after losing mirror.db: %v", more)
	}
	checkOnce(t, remoteRanges(t, gw, d), head)

	// A second log under the same wallet: rebuild must be told which.
	two := filepath.Join(t.TempDir(), "two")
	must(t, two, "", "init", "--wallet", filepath.Join(d.dir, "wallet.json"))
	in, _ = genEvents(5, "two")
	must(t, two, in, "append")
	must(t, two, "", "sync", "push", "--gateway", gw.URL())
	twoID := jsonDoc(t, must(t, two, "", "status", "--json"))["log_id"].(string)
	dst, r := rebuild(t, gw.URL(), d)
	if r.code != 2 || !strings.Contains(r.err, "several logs") || !strings.Contains(r.err, d.logID) || !strings.Contains(r.err, twoID) || !strings.Contains(r.err, "--log-id") {
		t.Fatalf("rebuild of a wallet with two logs: %s", r)
	}
	assertNoDir(t, dst)
	dst, r = rebuild(t, gw.URL(), d, "--log-id", twoID, "--vault-key", filepath.Join(two, "vault.key"))
	if r.code != 0 || must(t, dst, "", "replay") != must(t, two, "", "replay") {
		t.Fatalf("rebuild --log-id: %s", r)
	}
}

// kill -9 of `ucl sync push` right after the gateway accepted a transaction:
// the next push settles the postings, uploads the rest, duplicates nothing.
func testKilledPush(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 200, "kp")
	head := headOf(t, d.dir)
	p := newProxy(t, gw.URL())
	cmd := exec.Command(uclBin, "sync", "push", "--gateway", p.URL(), "--segment-bytes", "2048")
	cmd.Env = append(os.Environ(), "UCL_DIR="+d.dir, "UCL_VAULT_KEY=")
	// The proxy's handler goroutines learn the process through started:
	// cmd.Process is written by Start, which they do not synchronise with.
	started := make(chan *os.Process, 1)
	var once sync.Once
	p.set(func(p *proxy) {
		p.onPosted = func(posts int) {
			if posts >= 5 {
				once.Do(func() { (<-started).Signal(syscall.SIGKILL) })
			}
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started <- cmd.Process
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("push was not killed: %v", err)
	}
	killedAt := len(remoteRanges(t, gw, d))
	push := jsonDoc(t, must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "2048", "--json"))
	// The killed run left its batch as postings; this run settled them.
	if uint64(push["covered_seq"].(float64)) != head || push["resolved"].(float64) < 1 {
		t.Fatalf("push after kill: %v", push)
	}
	segs := remoteRanges(t, gw, d)
	if killedAt == 0 || killedAt >= len(segs) {
		t.Fatalf("kill after %d of %d segments: not mid-push", killedAt, len(segs))
	}
	checkOnce(t, segs, head)
	b, r := rebuild(t, gw.URL(), d)
	if r.code != 0 || must(t, b, "", "replay") != must(t, d.dir, "", "replay") {
		t.Fatalf("rebuild after kill: %s", r)
	}
}

// A gateway that lies: altered bytes, another wallet's segment, a hidden
// segment. Rebuild refuses naming the transaction or the missing seqs and
// leaves nothing behind; --allow-partial keeps the prefix before a gap.
func testTampered(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 150, "tg")
	head := headOf(t, d.dir)
	must(t, d.dir, "", "sync", "push", "--gateway", gw.URL(), "--segment-bytes", "4096")
	segs := remoteRanges(t, gw, d)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	victim := segs[2]
	p := newProxy(t, gw.URL())

	t.Run("AlteredBytes", func(t *testing.T) {
		p.set(func(p *proxy) { p.alterID = victim.id })
		defer p.set(func(p *proxy) { p.alterID = "" })
		dst, r := rebuild(t, p.URL(), d)
		if r.code == 0 || !strings.Contains(r.err, "transaction "+victim.id+" rejected") || !strings.Contains(r.err, "nothing was written") {
			t.Fatalf("rebuild from altered bytes: %s", r)
		}
		assertNoDir(t, dst)
	})

	t.Run("ForeignWallet", func(t *testing.T) {
		// Another wallet posts a well-formed segment with this log's tags
		// for seqs 1..1; a gateway that ignores the owners filter shows it.
		w, err := arweave.LoadWallet("../arweave/testdata/wallet-b.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := gw.Mint(w.Address(), 1e15); err != nil {
			t.Fatal(err)
		}
		cl, _ := arweave.NewClient(gw.URL(), w, arweave.Options{})
		lid := d.id()
		raw := bytes.Repeat([]byte{7}, 200)
		data, err := mirror.EncodeSegment(lid, mirror.Hash{}, []mirror.Record{{Seq: 1, Raw: raw}})
		if err != nil {
			t.Fatal(err)
		}
		rec := mirror.Record{Seq: 1, Raw: raw}
		meta := mirror.SegmentMeta{Kind: mirror.KindSegment, LogID: lid, FirstSeq: 1, LastSeq: 1, HeadHash: rec.Hash()}
		id, err := cl.Upload(context.Background(), data, meta.Tags())
		if err != nil {
			t.Fatal(err)
		}
		p.set(func(p *proxy) { p.dropOwners = true })
		defer p.set(func(p *proxy) { p.dropOwners = false })
		dst, r := rebuild(t, p.URL(), d, "--log-id", d.logID)
		if r.code == 0 || !strings.Contains(r.err, "transaction "+id+" rejected") || !strings.Contains(r.err, "owner") {
			t.Fatalf("rebuild with a foreign segment: %s", r)
		}
		assertNoDir(t, dst)
		// Through an honest gateway the foreign segment is not even seen.
		if _, r := rebuild(t, gw.URL(), d); r.code != 0 {
			t.Fatalf("honest rebuild: %s", r)
		}
	})

	t.Run("MissingSegment", func(t *testing.T) {
		p.set(func(p *proxy) { p.hideID = victim.id })
		defer p.set(func(p *proxy) { p.hideID = "" })
		dst, r := rebuild(t, p.URL(), d)
		want := fmt.Sprintf("seqs %d..%d missing", victim.first, victim.last)
		if r.code == 0 || !strings.Contains(r.err, want) || !strings.Contains(r.err, "--allow-partial") {
			t.Fatalf("rebuild with a hidden segment (want %q): %s", want, r)
		}
		assertNoDir(t, dst)
		dst, r = rebuild(t, p.URL(), d, "--allow-partial", "--json")
		if r.code != 0 || !strings.Contains(r.err, "PARTIAL") || !strings.Contains(r.err, want) {
			t.Fatalf("partial rebuild: %s", r)
		}
		doc := jsonDoc(t, r.out)
		if uint64(doc["events"].(float64)) != victim.first-1 || doc["partial"] != true || headOf(t, dst) != victim.first-1 {
			t.Fatalf("partial rebuild kept %v events, want %d (head %d)", doc["events"], victim.first-1, head)
		}
		// The kept prefix is exactly the source's.
		// (Tombstones after the gap are not there, so compare with them ignored.)
		want1 := must(t, d.dir, "", "replay", "--include-tombstoned", "--to", strconv.FormatUint(victim.first-1, 10))
		if must(t, dst, "", "replay", "--include-tombstoned") != want1 {
			t.Fatal("partial rebuild's events differ from the source's prefix")
		}
	})
}

// --watch pushes as events arrive while other processes keep appending.
func testWatch(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 20, "wa")
	cmd := exec.Command(uclBin, "sync", "push", "--watch", "--gateway", gw.URL(), "--every-events", "10", "--every", "1s", "--json")
	cmd.Env = append(os.Environ(), "UCL_DIR="+d.dir, "UCL_VAULT_KEY=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The watcher holds the store for a moment at each check and flush; a
	// command that lands then is refused ("in use") and is retried.
	retry := func(stdin string, args ...string) result {
		t.Helper()
		var r result
		for try := 0; try < 50; try++ {
			if r = ucl(t, d.dir, stdin, args...); r.code == 0 || !strings.Contains(r.err, "in use") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r.code != 0 {
			t.Fatalf("ucl %v while watching: %s", args, r)
		}
		return r
	}
	headOf := func() uint64 {
		return uint64(jsonDoc(t, retry("", "status", "--json").out)["head_seq"].(float64))
	}
	waitCovered := func(head uint64) {
		t.Helper()
		// A guard against a hang, not a timing assertion: generous for a busy
		// machine running the other tests in parallel.
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if r := ucl(t, d.dir, "", "sync", "status", "--json"); r.code == 0 {
				if uint64(jsonDoc(t, r.out)["covered_seq"].(float64)) == head {
					return
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
		t.Fatalf("watch did not mirror up to %d; stderr: %s", head, errb.String())
	}
	waitCovered(headOf())
	// Appends from another process work while the watcher runs.
	for i := 0; i < 5; i++ {
		in, _ := genEvents(7, fmt.Sprintf("wa%d", i))
		retry(in, "append")
		time.Sleep(200 * time.Millisecond)
	}
	waitCovered(headOf())
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch exit: %v; stderr: %s", err, errb.String())
	}
	if lines := jsonLines(t, out.String()); len(lines) < 2 {
		t.Fatalf("watch printed %d flushes: %s", len(lines), out.String())
	}
	checkOnce(t, remoteRanges(t, gw, d), headOf())
}

func testSyncUsage(t *testing.T, gw *arlocaltest.Gateway) {
	d, _ := newDevice(t, gw, 0, "us")
	// A port nothing listens on.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad gateway", []string{"sync", "push", "--gateway", "ftp://x"}, 2, "http(s) URL"},
		{"bad segment size", []string{"sync", "push", "--segment-bytes", "10"}, 2, "--segment-bytes"},
		{"every without watch", []string{"sync", "push", "--every", "5s"}, 2, "--watch"},
		{"rebuild without wallet", []string{"rebuild", "--gateway", gw.URL()}, 2, "--wallet and --vault-key are required"},
		{"rebuild unknown wallet", []string{"rebuild", "--gateway", gw.URL(), "--wallet", filepath.Join(d.dir, "wallet.json"), "--vault-key", filepath.Join(d.dir, "vault.key"), "--dir", filepath.Join(t.TempDir(), "x")}, 1, "has no ucl segments"},
		{"rebuild dead gateway", []string{"rebuild", "--gateway", dead, "--wallet", filepath.Join(d.dir, "wallet.json"), "--vault-key", filepath.Join(d.dir, "vault.key"), "--dir", filepath.Join(t.TempDir(), "y")}, 1, "nothing was lost"},
	}
	for _, c := range cases {
		r := ucl(t, d.dir, "", c.args...)
		if r.code != c.code || !strings.Contains(r.err, c.want) {
			t.Errorf("%s: want exit %d and %q: %s", c.name, c.code, c.want, r)
		}
	}
	// Nothing to push is fine.
	if out := must(t, d.dir, "", "sync", "push", "--gateway", gw.URL()); !strings.Contains(out, "up to date") {
		t.Errorf("empty push: %s", out)
	}
}

// BenchmarkSyncRebuildE2E measures the built binary against a local
// arlocal: `ucl sync push` of 10K events (~500 B of content each) and
// `ucl rebuild` of them on a second device, log and all projections.
// Metrics: events/s each way (rebuild: whole command, and its log part
// alone: GraphQL, fetch, verify, decrypt-check, write) and uploaded segment
// bytes per event.
// Run: go test -run '^$' -bench SyncRebuildE2E -benchtime 1x ./test/
func BenchmarkSyncRebuildE2E(b *testing.B) {
	n := 10_000
	if os.Getenv("UCL_BENCH_100K") != "" {
		n = 100_000
	}
	gw := arlocaltest.Start(b)
	var in strings.Builder
	for i := 0; i < n; i++ {
		words := strings.Repeat(fmt.Sprintf("word%d practice bow scales ", i%97), 16)
		line, _ := json.Marshal(map[string]any{"type": "store", "session": fmt.Sprintf("s%d", i%50), "role": "user",
			"content": fmt.Sprintf("event %d: %s", i, words)})
		in.Write(line)
		in.WriteByte('\n')
	}
	var syncSec, rebuildSec, logSec float64
	var posted float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "a")
		must(b, dir, "", "init", "--durability", "group")
		st := jsonDoc(b, must(b, dir, "", "status", "--json"))
		if err := gw.Mint(st["wallet_address"].(string), 1e15); err != nil {
			b.Fatal(err)
		}
		must(b, dir, in.String(), "append", "-")
		b.StartTimer()
		t0 := time.Now()
		push := jsonDoc(b, must(b, dir, "", "sync", "push", "--gateway", gw.URL(), "--json"))
		syncSec += time.Since(t0).Seconds()
		posted += push["bytes_posted"].(float64)
		dst := filepath.Join(b.TempDir(), "b")
		t0 = time.Now()
		rb := jsonDoc(b, must(b, dst, "", "rebuild", "--gateway", gw.URL(), "--wallet", filepath.Join(dir, "wallet.json"),
			"--vault-key", filepath.Join(dir, "vault.key"), "--dir", dst, "--json"))
		rebuildSec += time.Since(t0).Seconds()
		logSec += rb["log_seconds"].(float64)
	}
	b.ReportMetric(float64(n*b.N)/syncSec, "sync-events/s")
	b.ReportMetric(float64(n*b.N)/rebuildSec, "rebuild-events/s")
	b.ReportMetric(float64(n*b.N)/logSec, "rebuild-log-events/s")
	b.ReportMetric(posted/float64(n*b.N), "uploaded-B/event")
}
