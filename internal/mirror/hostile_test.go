package mirror

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/unlimitedcontext/ucl/arweave"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/everFinance/goar"
)

// hostileGateway is a fake gateway in the tests' own process: GraphQL and
// GET /{id} misbehave on demand (endless or cyclic pages, huge, dripping or
// truncated bodies), or serve forked segments honestly. It needs no
// arlocal: Rebuild and Push trust the owner key GraphQL reports only after
// checking that it hashes to the owner's address, so the test wallet's
// public key is all it needs.
type hostileGateway struct {
	t    *testing.T
	srv  *httptest.Server
	stop chan struct{}
	w    *arweave.Wallet

	mu      sync.Mutex
	pages   string // "segments" (honest), "endless", "cycle", "repeat"
	data    string // "honest", "huge", "huge-declared", "drip", "truncated", "truncated-close"
	segs    []hostileSeg
	served  int   // GraphQL pages served
	written int64 // data bytes written
}

type hostileSeg struct {
	id       string
	sig      string // the item's signature (base64url)
	meta     SegmentMeta
	data     []byte
	declared int64 // data.size reported by GraphQL
}

func newHostileGateway(t *testing.T) *hostileGateway {
	h := &hostileGateway{t: t, stop: make(chan struct{}), w: testWallet(t, "wallet-a.json"), pages: "segments", data: "honest"}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() { close(h.stop); h.srv.Close() })
	return h
}

func (h *hostileGateway) set(pages, data string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pages, h.data, h.served, h.written = pages, data, 0, 0
}

func fakeID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// addSegment encodes recs of l (seqs from..to) as a segment of logID.
func (h *hostileGateway) addSegment(logID [16]byte, l *memLog, from, to uint64) string {
	h.t.Helper()
	recs := l.recs[from-1 : to]
	var prev Hash
	if from > 1 {
		prev = l.recs[from-2].Hash()
	}
	data, err := EncodeSegment(logID, prev, recs)
	if err != nil {
		h.t.Fatal(err)
	}
	m := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: from, LastSeq: to, HeadHash: recs[len(recs)-1].Hash()}
	// Served as a data item the wallet signed, as the bundle uploader
	// makes them: Rebuild checks each segment's own signature.
	is, err := goar.NewItemSigner(goar.NewSignerByPrivateKey(h.w.PrivateKey()))
	if err != nil {
		h.t.Fatal(err)
	}
	it, err := is.CreateAndSignItem(data, "", "", m.Tags())
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.segs = append(h.segs, hostileSeg{id: it.Id, sig: it.Signature, meta: m, data: data, declared: int64(len(data))})
	return it.Id
}

type gqlNode struct {
	ID    string `json:"id"`
	Owner struct {
		Address string `json:"address"`
		Key     string `json:"key"`
	} `json:"owner"`
	Tags  []arweave.Tag `json:"tags"`
	Block struct {
		Height int64 `json:"height"`
	} `json:"block"`
	Data struct {
		Size string `json:"size"`
	} `json:"data"`
	Signature string `json:"signature"`
}

type gqlEdge struct {
	Cursor string  `json:"cursor"`
	Node   gqlNode `json:"node"`
}

func (h *hostileGateway) node(id string, tags []arweave.Tag, size int64) gqlNode {
	var n gqlNode
	n.ID, n.Tags, n.Block.Height, n.Data.Size = id, tags, 1, strconv.FormatInt(size, 10)
	n.Owner.Address, n.Owner.Key = h.w.Address(), h.w.Owner()
	return n
}

func (h *hostileGateway) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/graphql" {
		h.graphql(w, r)
		return
	}
	id := strings.Trim(r.URL.Path, "/")
	h.mu.Lock()
	mode := h.data
	var seg *hostileSeg
	for i := range h.segs {
		if h.segs[i].id == id {
			seg = &h.segs[i]
		}
	}
	h.mu.Unlock()
	if seg == nil {
		http.NotFound(w, r)
		return
	}
	count := func(n int) {
		h.mu.Lock()
		h.written += int64(n)
		h.mu.Unlock()
	}
	fl := w.(http.Flusher)
	switch mode {
	case "honest":
		n, _ := w.Write(seg.data)
		count(n)
	case "huge", "huge-declared":
		if mode == "huge-declared" {
			w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		}
		zero := make([]byte, 32<<10)
		for sent := 0; sent < 1<<30; sent += len(zero) {
			n, err := w.Write(zero)
			count(n)
			if err != nil {
				return
			}
		}
	case "drip":
		for i := 0; ; i++ {
			n, err := w.Write(seg.data[i%len(seg.data) : i%len(seg.data)+1])
			count(n)
			if err != nil {
				return
			}
			fl.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-h.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	case "truncated", "truncated-close":
		w.Header().Set("Content-Length", strconv.Itoa(len(seg.data)))
		n, _ := w.Write(seg.data[:len(seg.data)/2])
		count(n)
		fl.Flush()
		if mode == "truncated-close" {
			panic(http.ErrAbortHandler) // the connection is cut mid-body
		}
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
	}
}

func (h *hostileGateway) graphql(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Variables struct {
			After string `json:"after"`
		} `json:"variables"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.served++
	page, mode := h.served, h.pages
	segs := append([]hostileSeg(nil), h.segs...)
	h.mu.Unlock()
	var edges []gqlEdge
	more := true
	switch mode {
	case "segments":
		for i, s := range segs {
			n := h.node(s.id, s.meta.Tags(), s.declared)
			n.Signature = s.sig
			edges = append(edges, gqlEdge{Cursor: strconv.Itoa(i), Node: n})
		}
		more = false
	case "endless", "cycle", "repeat":
		for i := 0; i < pageSize; i++ {
			id := fakeID(fmt.Sprintf("page-%d-%d", page, i))
			if mode == "repeat" {
				id = fakeID(fmt.Sprintf("same-%d", i))
			}
			edges = append(edges, gqlEdge{Cursor: fmt.Sprintf("p%d-%d", page, i), Node: h.node(id, []arweave.Tag{{Name: TagAppName, Value: AppName}}, 100)})
		}
		if mode == "cycle" {
			edges[len(edges)-1].Cursor = []string{"even", "odd"}[page%2]
		}
	}
	var out struct {
		Data struct {
			Transactions struct {
				PageInfo struct {
					HasNextPage bool `json:"hasNextPage"`
				} `json:"pageInfo"`
				Edges []gqlEdge `json:"edges"`
			} `json:"transactions"`
		} `json:"data"`
	}
	out.Data.Transactions.PageInfo.HasNextPage = more
	out.Data.Transactions.Edges = edges
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

func (h *hostileGateway) stats() (pages int, written int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served, h.written
}

func (h *hostileGateway) client(t *testing.T, opt arweave.Options) *arweave.Client {
	t.Helper()
	c, err := arweave.NewClient(h.srv.URL, h.w, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allocated returns the bytes allocated (by the whole process) while f ran.
// TotalAlloc only grows, so it bounds what f can have held at any moment.
func allocated(f func()) uint64 {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// hostileOpt: quick retries, a short per-attempt timeout.
var hostileOpt = arweave.Options{RequestTimeout: 300 * time.Millisecond, MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}

// steadyOpt is hostileOpt for a gateway that never stalls, where a
// bound other than a timeout must end each call: 300 ms per attempt ran
// out on a loaded -race run (a page retried and counted twice; three
// attempts timed out before the size cap could answer ErrTooLarge).
var steadyOpt = func() arweave.Options {
	o := hostileOpt
	o.RequestTimeout = 30 * time.Second
	return o
}()

// TestHostileGatewayEndlessPagination: a gateway that always says
// hasNextPage (fresh cursors and ids, a cycle of cursors, or the same page
// under new cursors) hung rebuild and sync push forever while memory grew.
// Both must stop with ErrPagination after a bounded number of pages and
// bounded allocation, before the test's own deadline.
func TestHostileGatewayEndlessPagination(t *testing.T) {
	const perPage = 3 << 20
	h := newHostileGateway(t)
	logID := newLogID(t)
	for _, mode := range []string{"endless", "cycle", "repeat"} {
		t.Run(mode, func(t *testing.T) {
			opt := steadyOpt // 101 pages served for 100 with hostileOpt
			opt.MaxPages = 50
			c := h.client(t, opt)
			ctx := testCtx(t)

			h.set(mode, "honest")
			var err error
			mem := allocated(func() {
				_, err = Rebuild(ctx, RebuildOptions{Gateway: c, Owner: c.Wallet().Address(), LogID: logID}, func(Record) error { return nil })
			})
			pages, _ := h.stats()
			t.Log(err)
			if !errors.Is(err, arweave.ErrPagination) || ctx.Err() != nil {
				t.Fatalf("rebuild: %v after %d pages, want ErrPagination", err, pages)
			}
			// A page of 100 entries costs under 1 MiB to fetch and decode
			// (more under -race): the allocation is bounded by the budget.
			if pages > opt.MaxPages || mem > uint64(opt.MaxPages)*perPage {
				t.Fatalf("rebuild: %d pages, %d MiB allocated; want <= %d pages, < %d MiB", pages, mem>>20, opt.MaxPages, uint64(opt.MaxPages)*perPage>>20)
			}
			t.Logf("rebuild: %d pages, %d KiB allocated", pages, mem>>10)

			h.set(mode, "honest")
			l := newMemLog(50, 10)
			s := newSyncer(t, arweave.NewL1Uploader(c), l, logID, openTestState(t), 0)
			mem = allocated(func() { _, err = s.Push(ctx, l.head()) })
			pages, _ = h.stats()
			if !errors.Is(err, arweave.ErrPagination) || ctx.Err() != nil {
				t.Fatalf("push: %v after %d pages, want ErrPagination", err, pages)
			}
			// The push derives its budget from its head (at least 100 pages).
			if pages > 100 || mem > 100*perPage {
				t.Fatalf("push: %d pages, %d MiB allocated; want <= 100 pages, < %d MiB", pages, mem>>20, 100*perPage>>20)
			}
			t.Logf("push: %d pages, %d KiB allocated", pages, mem>>10)
		})
	}
}

// TestHostileGatewayHugeBody: GET /{id} answering 1 GiB was buffered whole.
// The read is bounded by the transaction's data size (or, when the gateway
// lies about that too, by the segment cap) and fails with ErrTooLarge
// having read and allocated a bounded amount.
func TestHostileGatewayHugeBody(t *testing.T) {
	h := newHostileGateway(t)
	logID := newLogID(t)
	l := newMemLog(20, 100)
	h.addSegment(logID, l, 1, 20)
	c := h.client(t, steadyOpt) // the size cap must end each call
	for _, tc := range []struct {
		mode     string
		declared int64 // data.size GraphQL reports; 0 keeps the true size
		maxSeg   int64
	}{
		{"huge", 0, 0},
		{"huge-declared", 0, 0},
		{"huge", 1 << 40, 1 << 20}, // data.size lies as well: the cap bounds
	} {
		t.Run(fmt.Sprintf("%s declared=%d", tc.mode, tc.declared), func(t *testing.T) {
			h.mu.Lock()
			if tc.declared > 0 {
				h.segs[0].declared = tc.declared
			} else {
				h.segs[0].declared = int64(len(h.segs[0].data))
			}
			h.mu.Unlock()
			h.set("segments", tc.mode)
			ctx := testCtx(t)
			var err error
			mem := allocated(func() {
				_, err = Rebuild(ctx, RebuildOptions{Gateway: c, Owner: c.Wallet().Address(), LogID: logID, MaxSegmentBytes: tc.maxSeg}, func(Record) error { return nil })
			})
			_, written := h.stats()
			if !errors.Is(err, arweave.ErrTooLarge) || ctx.Err() != nil {
				t.Fatalf("rebuild: %v, want ErrTooLarge", err)
			}
			if mem > 32<<20 {
				t.Fatalf("%d MiB allocated for a 1 GiB body (%d MiB sent); want < 32 MiB", mem>>20, written>>20)
			}
			t.Logf("%d KiB allocated, %d KiB sent before the client stopped reading", mem>>10, written>>10)
		})
	}
	// The honest body still works.
	h.mu.Lock()
	h.segs[0].declared = int64(len(h.segs[0].data))
	h.mu.Unlock()
	h.set("segments", "honest")
	var got []Record
	if _, err := Rebuild(testCtx(t), RebuildOptions{Gateway: c, Owner: c.Wallet().Address(), LogID: logID}, func(r Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, got, l.recs)
}

// TestHostileGatewaySlowDripAndTruncatedBody: a body that drips a byte at a
// time, stops halfway under a longer Content-Length, or is cut mid-body,
// fails within the client's own bounds with a typed error: per-attempt
// timeouts, the per-call budget, and the per-operation budget. The test
// checks which bound ended each call, never how long it took.
func TestHostileGatewaySlowDripAndTruncatedBody(t *testing.T) {
	h := newHostileGateway(t)
	logID := newLogID(t)
	l := newMemLog(200, 100)
	id := h.addSegment(logID, l, 1, 200)
	for _, tc := range []struct {
		name, mode string
		opt        arweave.Options
		want       error
		text       string
	}{
		{"drip, per-attempt timeout", "drip", hostileOpt, arweave.ErrTimeout, "no answer within 300ms"},
		{"stall after half, per-attempt timeout", "truncated", hostileOpt, arweave.ErrTimeout, "no answer within 300ms"},
		{"cut mid-body", "truncated-close", hostileOpt, arweave.ErrUnavailable, "unexpected EOF"},
		{"drip, call budget", "drip", arweave.Options{RequestTimeout: time.Hour, MaxAttempts: 3, CallTimeout: 400 * time.Millisecond}, arweave.ErrTimeout, "call budget of 400ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.set("segments", tc.mode)
			c := h.client(t, tc.opt)
			ctx := testCtx(t)
			var err error
			mem := allocated(func() { _, err = c.FetchData(ctx, id) })
			var ge *arweave.GatewayError
			t.Log(err)
			if !errors.Is(err, tc.want) || !errors.As(err, &ge) || ctx.Err() != nil {
				t.Fatalf("fetch: %v, want %v from the client's own bound", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("error %q does not say %q", err, tc.text)
			}
			if mem > 16<<20 {
				t.Fatalf("%d MiB allocated", mem>>20)
			}
		})
	}
	t.Run("drip, rebuild budget", func(t *testing.T) {
		h.set("segments", "drip")
		c := h.client(t, arweave.Options{RequestTimeout: time.Hour, CallTimeout: time.Hour})
		ctx := testCtx(t)
		_, err := Rebuild(ctx, RebuildOptions{Gateway: c, Owner: c.Wallet().Address(), LogID: logID, Timeout: 500 * time.Millisecond}, func(Record) error { return nil })
		if !errors.Is(err, arweave.ErrTimeout) || !strings.Contains(err.Error(), "time budget of 500ms") || ctx.Err() != nil {
			t.Fatalf("rebuild: %v, want the rebuild's own time budget", err)
		}
	})
	t.Run("drip, push budget", func(t *testing.T) {
		h.set("segments", "drip")
		c := h.client(t, arweave.Options{RequestTimeout: time.Hour, CallTimeout: time.Hour})
		ctx := testCtx(t)
		st := openTestState(t)
		// A posting left by a crash makes Push ask the gateway first; the
		// fake answers that status by dripping.
		if err := st.MarkPosting(SegmentState{LogID: logID, FirstSeq: 1, LastSeq: 200, TxID: id, HeadHash: l.recs[199].Hash()}); err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		h.segs = append(h.segs, hostileSeg{id: "tx/" + id + "/status", data: []byte("Pending")})
		h.mu.Unlock()
		s, err := NewSyncer(SyncConfig{LogID: logID, Records: l.source, Gateway: c, Uploader: arweave.NewL1Uploader(c), State: st, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Push(ctx, l.head())
		if !errors.Is(err, arweave.ErrTimeout) || !strings.Contains(err.Error(), "time budget of 500ms") || ctx.Err() != nil {
			t.Fatalf("push: %v, want the push's own time budget", err)
		}
	})
}

// TestHostileGatewayForkedSegments: two histories for seqs 26.. on top of
// a shared 1..25, the original continuing to 80, served by the fake gateway
// with the other branch first. Rebuild names the fork; with a branch chosen
// it follows that one and lists what it set aside, whether the other
// branch's later segments start after a hole (B ends inside A's range) or
// fail to link (B ends where A does).
func TestHostileGatewayForkedSegments(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bLast uint64
	}{{"B ends inside A", 55}, {"B ends with A", 60}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostileGateway(t)
			logID := newLogID(t)
			a := newMemLog(80, 40)
			b := a.forkAt(25, int(tc.bLast)-25)
			idB := h.addSegment(logID, b, 26, tc.bLast)
			h.addSegment(logID, a, 1, 25)
			idA := h.addSegment(logID, a, 26, 60)
			idA2 := h.addSegment(logID, a, 61, 80)
			c := h.client(t, steadyOpt)
			ctx := testCtx(t)
			rebuild := func(branch string) ([]Record, RebuildResult, error) {
				var got []Record
				res, err := Rebuild(ctx, RebuildOptions{Gateway: c, Owner: c.Wallet().Address(), LogID: logID, Branch: branch, VerifyRecord: verifyChain},
					func(r Record) error { got = append(got, r); return nil })
				return got, res, err
			}
			_, _, err := rebuild("")
			t.Log(err)
			var fe *ForkError
			if !errors.As(err, &fe) || fe.From != 26 || fe.To != tc.bLast || !strings.Contains(err.Error(), idA) || !strings.Contains(err.Error(), idB) {
				t.Fatalf("rebuild: %v, want a fork over 26..%d naming %s and %s", err, tc.bLast, idA, idB)
			}
			got, res, err := rebuild(idB)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got, b.recs)
			var aside []string
			for _, br := range res.SetAside {
				aside = append(aside, br.TxID)
			}
			slices.Sort(aside)
			want := []string{idA, idA2}
			slices.Sort(want)
			if !slices.Equal(aside, want) {
				t.Fatalf("branch B: set aside %v, want %v", aside, want)
			}
			got, res, err = rebuild(idA)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, got, a.recs)
			if len(res.SetAside) != 1 || res.SetAside[0].TxID != idB {
				t.Fatalf("branch A: set aside %+v, want %s", res.SetAside, idB)
			}
		})
	}
}
