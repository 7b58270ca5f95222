package mirror

import (
	"bytes"
	"errors"
	"github.com/unlimitedcontext/ucl/arweave"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy is a loopback reverse proxy in front of arlocal that injects
// faults into the requests that match.
type faultProxy struct {
	srv  *httptest.Server
	stop chan struct{}

	mu       sync.Mutex
	match    func(*http.Request) bool // which requests are faulted (default: all)
	fault    string                   // "503", "400", "hang", "drop", "alter" or ""
	times    int                      // faults left; < 0 means forever
	injected int                      // faults injected
	reqBody  func(path string, b []byte) []byte
	respBody func(path string, b []byte) []byte
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{stop: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		p.mu.Lock()
		rb := p.respBody
		alter := p.take(resp.Request) == "alter"
		p.mu.Unlock()
		if rb == nil && !alter {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if rb != nil {
			b = rb(resp.Request.URL.Path, b)
		}
		if alter && len(b) > 0 {
			b = bytes.Clone(b)
			b[len(b)/2] ^= 0x40
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		var f string
		if p.fault != "alter" {
			f = p.take(r)
		}
		qb := p.reqBody
		p.mu.Unlock()
		switch f {
		case "503":
			http.Error(w, "injected", http.StatusServiceUnavailable)
			return
		case "400":
			http.Error(w, "injected", http.StatusBadRequest)
			return
		case "hang":
			// Consume the body so the server notices the client leaving.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-p.stop:
			}
			return
		case "drop":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if qb != nil && r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			b = qb(r.URL.Path, b)
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(p.stop); p.srv.Close() })
	return p
}

// take decides whether r gets the fault; p.mu is held.
func (p *faultProxy) take(r *http.Request) string {
	if p.fault == "" || p.times == 0 || (p.match != nil && !p.match(r)) {
		return ""
	}
	if p.times > 0 {
		p.times--
	}
	p.injected++
	return p.fault
}

func (p *faultProxy) set(fault string, times int, match func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.times, p.match, p.injected = fault, times, match, 0
}

func (p *faultProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected
}

func isData(r *http.Request) bool {
	return r.Method == http.MethodGet && len(strings.Trim(r.URL.Path, "/")) == 43
}

var fastRetry = arweave.Options{RequestTimeout: 2 * time.Second, MaxAttempts: 4, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}

// uploadTestSegment uploads records 1..n of l as one segment.
func uploadTestSegment(t *testing.T, c *arweave.Client, logID [16]byte, l *memLog) (string, []byte) {
	t.Helper()
	data, err := EncodeSegment(logID, Hash{}, l.recs)
	if err != nil {
		t.Fatal(err)
	}
	m := SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: l.head(), HeadHash: l.recs[len(l.recs)-1].Hash()}
	id, err := c.Upload(testCtx(t), data, m.Tags())
	if err != nil {
		t.Fatal(err)
	}
	return id, data
}

// TestRetriesRecover: 503s, dropped connections and a hung first attempt
// are retried until the call succeeds, for uploads and fetches.
func TestRetriesRecover(t *testing.T) {
	g := gateway(t)
	for _, tc := range []struct {
		fault string
		times int
	}{{"503", 3}, {"drop", 2}, {"hang", 1}} {
		t.Run(tc.fault, func(t *testing.T) {
			p := newFaultProxy(t, g.URL())
			opt := fastRetry
			opt.RequestTimeout = 500 * time.Millisecond
			c := fundedClient(t, p.srv.URL, "wallet-a.json", opt)
			ctx := testCtx(t)
			logID := newLogID(t)
			l := newMemLog(10, 100)
			p.set(tc.fault, tc.times, func(r *http.Request) bool { return r.URL.Path == "/tx" })
			id, data := uploadTestSegment(t, c, logID, l)
			if p.count() != tc.times {
				t.Fatalf("%d faults injected on POST /tx, want %d", p.count(), tc.times)
			}
			p.set(tc.fault, tc.times, isData)
			got, err := c.FetchData(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) || p.count() != tc.times {
				t.Fatalf("fetch after %d faults: equal=%v", p.count(), bytes.Equal(got, data))
			}
			// The retried POST did not create a second transaction.
			if n := countSegments(t, c, logID); n != 1 {
				t.Fatalf("%d transactions after retried post, want 1", n)
			}
		})
	}
}

// TestL1PostStopsAfterFailure: once the gateway fails, an L1 batch stops
// starting posts (each would spend its own retries) and reports the
// accepted prefix.
func TestL1PostStopsAfterFailure(t *testing.T) {
	g := gateway(t)
	p := newFaultProxy(t, g.URL())
	opt := fastRetry
	opt.MaxAttempts = 2
	c := fundedClient(t, p.srv.URL, "wallet-a.json", opt)
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(40, 100)
	var segs []arweave.Upload
	prev := Hash{}
	for i := 0; i < 40; i += 2 {
		recs := l.recs[i : i+2]
		data, err := EncodeSegment(logID, prev, recs)
		if err != nil {
			t.Fatal(err)
		}
		prev = recs[1].Hash()
		segs = append(segs, SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: recs[0].Seq, LastSeq: recs[1].Seq, HeadHash: prev}.Upload(data))
	}
	u := &arweave.L1Uploader{C: c, Concurrency: 2}
	signed, err := u.Sign(ctx, segs)
	if err != nil {
		t.Fatal(err)
	}
	var posts atomic.Int32
	p.set("503", -1, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/tx" && posts.Add(1) > 3
	})
	n, err := u.Post(ctx, signed)
	if !errors.Is(err, arweave.ErrUnavailable) || n < 1 || n > 3 {
		t.Fatalf("accepted %d, err %v; want 1..3 and ErrUnavailable", n, err)
	}
	// Without the stop every one of the 20 posts would be tried (and
	// retried); with it at most the ones already in flight are.
	if got := int(posts.Load()); got > 3+2*2*opt.MaxAttempts {
		t.Fatalf("%d POST /tx attempts after the failure started", got)
	}
	if found := countSegments(t, c, logID); found < n || found > 3 {
		t.Fatalf("%d transactions on the gateway, accepted prefix %d, 3 posts let through", found, n)
	}
}

// TestFailuresSurface: persistent faults end in clear, typed errors after
// the configured attempts; 4xx is not retried.
func TestFailuresSurface(t *testing.T) {
	g := gateway(t)
	p := newFaultProxy(t, g.URL())
	opt := fastRetry
	opt.RequestTimeout = 200 * time.Millisecond
	opt.MaxAttempts = 3
	c := fundedClient(t, p.srv.URL, "wallet-a.json", opt)
	ctx := testCtx(t)
	id, _ := uploadTestSegment(t, c, newLogID(t), newMemLog(3, 10))

	for _, tc := range []struct {
		fault    string
		want     error
		attempts int
		text     string
	}{
		{"hang", arweave.ErrTimeout, 3, "no answer within 200ms"},
		{"503", arweave.ErrUnavailable, 3, "HTTP 503"},
		{"drop", arweave.ErrUnavailable, 3, "EOF"},
		{"400", arweave.ErrRejected, 1, "HTTP 400"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			p.set(tc.fault, -1, isData)
			_, err := c.FetchData(ctx, id)
			var ge *arweave.GatewayError
			if !errors.Is(err, tc.want) || !errors.As(err, &ge) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			// net/http itself retries a GET once when a reused connection
			// drops before answering, so faults may exceed attempts.
			if ge.Attempts != tc.attempts || p.count() < tc.attempts {
				t.Fatalf("%d attempts (%d faults), want %d", ge.Attempts, p.count(), tc.attempts)
			}
			if !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), id) {
				t.Fatalf("error %q does not say %q and name the id", err, tc.text)
			}
		})
	}
	p.set("", 0, nil)

	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		c2, _ := arweave.NewClient("http://"+addr, nil, opt)
		_, err = c2.FetchData(ctx, id)
		var ge *arweave.GatewayError
		if !errors.Is(err, arweave.ErrUnavailable) || !errors.As(err, &ge) || ge.Attempts != opt.MaxAttempts {
			t.Fatalf("err = %v, want unavailable after %d attempts", err, opt.MaxAttempts)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		p.set("hang", -1, isData)
		defer p.set("", 0, nil)
		slow := opt
		slow.RequestTimeout = time.Minute
		c3, _ := arweave.NewClient(p.srv.URL, nil, slow)
		ctx2, cancel := contextWithTimeout(300 * time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c3.FetchData(ctx2, id)
		if err == nil || time.Since(start) > 10*time.Second {
			t.Fatalf("err = %v after %s; want the caller's deadline to end the call", err, time.Since(start))
		}
	})
}

// TestAlteredBytesDetected: a gateway that alters data is caught by
// DecodeSegment, and Rebuild names the transaction; a one-off alteration is
// survived by Rebuild's re-fetch.
func TestAlteredBytesDetected(t *testing.T) {
	g := gateway(t)
	p := newFaultProxy(t, g.URL())
	c := fundedClient(t, p.srv.URL, "wallet-a.json", fastRetry)
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(50, 100)
	id, data := uploadTestSegment(t, c, logID, l)

	p.set("alter", -1, isData)
	got, err := c.FetchData(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, data) {
		t.Fatal("proxy did not alter the bytes")
	}
	var se *SegmentError
	if _, err := DecodeSegment(got); !errors.As(err, &se) {
		t.Fatalf("altered segment decoded: %v", err)
	}
	_, _, err = rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
	var rej *TxRejectedError
	if !errors.As(err, &rej) || rej.TxID != id || !errors.As(err, &se) {
		t.Fatalf("rebuild err = %v, want %s rejected as a bad segment", err, id)
	}

	p.set("alter", 1, isData)
	recs, _, err := rebuildAll(t, c, c.Wallet().Address(), logID, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, recs, l.recs)
}

// TestRebuildRejectsOtherWallet: a segment signed by another wallet is
// refused by id, whether the gateway reports its real owner or lies about
// the owner's address.
func TestRebuildRejectsOtherWallet(t *testing.T) {
	g := gateway(t)
	a := fundedClient(t, "", "wallet-a.json", arweave.Options{})
	b := fundedClient(t, "", "wallet-b.json", arweave.Options{})
	addrA, addrB := a.Wallet().Address(), b.Wallet().Address()
	ctx := testCtx(t)
	logID := newLogID(t)
	l := newMemLog(20, 60)
	d1, _ := EncodeSegment(logID, Hash{}, l.recs[:10])
	d2, _ := EncodeSegment(logID, l.recs[9].Hash(), l.recs[10:])
	if _, err := a.Upload(ctx, d1, SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 1, LastSeq: 10, HeadHash: l.recs[9].Hash()}.Tags()); err != nil {
		t.Fatal(err)
	}
	// B uploads the continuation (even with correct bytes it is not A's).
	idB, err := b.Upload(ctx, d2, SegmentMeta{Kind: KindSegment, LogID: logID, FirstSeq: 11, LastSeq: 20, HeadHash: l.recs[19].Hash()}.Tags())
	if err != nil {
		t.Fatal(err)
	}
	// An honest gateway never returns B's segment for owner A: gap.
	_, _, err = rebuildAll(t, a, addrA, logID, RebuildOptions{})
	var gap *GapError
	if !errors.As(err, &gap) {
		// no later segment exists, so the log simply ends at 10
		if err != nil {
			t.Fatalf("honest gateway: %v", err)
		}
	}
	for _, tc := range []struct {
		name    string
		lieAddr bool
	}{{"gateway adds other owner", false}, {"gateway lies about address", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFaultProxy(t, g.URL())
			p.reqBody = func(path string, body []byte) []byte {
				if path != "/graphql" {
					return body
				}
				return bytes.ReplaceAll(body, []byte(`"owners":["`+addrA+`"]`), []byte(`"owners":["`+addrA+`","`+addrB+`"]`))
			}
			if tc.lieAddr {
				p.respBody = func(path string, body []byte) []byte {
					if path != "/graphql" {
						return body
					}
					return bytes.ReplaceAll(body, []byte(`"address":"`+addrB+`"`), []byte(`"address":"`+addrA+`"`))
				}
			}
			c, _ := arweave.NewClient(p.srv.URL, nil, arweave.Options{})
			_, _, err := rebuildAll(t, c, addrA, logID, RebuildOptions{})
			var rej *TxRejectedError
			if !errors.As(err, &rej) || rej.TxID != idB || !errors.Is(err, arweave.ErrOwnerMismatch) {
				t.Fatalf("err = %v, want %s rejected for its owner", err, idB)
			}
		})
	}
}
