package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

// Each test here pins one rule the kill tests exercise only by chance:
// the rule is forced on purpose instead of waited for.

// A request forwarded to an owner whose lease is stale (not renewed
// within half the TTL: another node may own the store by now) answers
// "unavailable" instead of serving it from a copy that may be stale.
func TestClusterForwardStaleOwner(t *testing.T) {
	ctx := context.Background()
	srv := startOne(t)
	// A long TTL: no renewal runs during the test; staleness is set by hand.
	cfg := Config{URL: srv.ClientURL(), Replicas: 1, LeaseTTL: time.Hour, Timeout: 5 * time.Second}
	ca, cb := cfg, cfg
	ca.NodeID, cb.NodeID = "a", "b"
	na, nb := connectCfg(t, ca), connectCfg(t, cb)
	dir := filepath.Join(t.TempDir(), "alice")
	s, err := ucl.Init(dir, ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	oa, err := na.Own(ctx, "alice", dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: "first"}); err != nil {
		t.Fatal(err)
	}
	cl := nb.Client("alice")
	defer cl.Close()
	if st, err := cl.Status(ctx, ucl.StatusRequest{}); err != nil || st.HeadSeq != 1 {
		t.Fatalf("a forwarded status while the lease is fresh: %v %v", st, err)
	}
	// The lease last renewed a whole TTL ago, as after a pause or a cut
	// from NATS: the owner is alive but must not answer.
	oa.mu.Lock()
	oa.renewed = time.Now().Add(-cfg.LeaseTTL)
	oa.mu.Unlock()
	st, err := cl.Status(ctx, ucl.StatusRequest{})
	if err == nil {
		t.Fatalf("a forwarded status to an owner whose lease is stale was answered: head %d", st.HeadSeq)
	}
	if ucl.ClassOf(err) != ucl.ClassUnavailable || !strings.Contains(err.Error(), "lease on the store lapsed") {
		t.Fatalf("a forwarded status to a stale owner: %v (class %s), want unavailable", err, ucl.ClassOf(err))
	}
	if _, err := cl.Remember(ctx, ucl.RememberRequest{Content: "through a stale owner"}); ucl.ClassOf(err) != ucl.ClassUnavailable {
		t.Fatalf("a forwarded append to a stale owner: %v, want unavailable", err)
	}
	if h, _ := oa.Store.Log().Head(); h != 1 {
		t.Fatalf("the stale owner's log head is %d, want 1 (nothing written)", h)
	}
}

// cutProxy is a TCP relay between a NATS client and its server that the
// test can cut (every connection closed, nothing accepted) and restore on
// the same address: a node cut off from NATS while the others are not.
type cutProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() { p.listen(p.addr) }

// A node cut off from NATS gets no lease updates, so every lease would
// look stale to it: its watcher names no store while cut off (the owner
// is alive and renewing elsewhere), nor right after it reconnects (what
// it missed is unknown), and names a store again once its owner really
// stops renewing.
func TestClusterWatchCutOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startOne(t)
	ttl := time.Second
	cfg := Config{Replicas: 1, LeaseTTL: ttl, Timeout: 5 * time.Second}
	ca, cb := cfg, cfg
	ca.NodeID, cb.NodeID = "a", "b"
	ca.URL = srv.ClientURL()
	px := newCutProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	cb.URL = "nats://" + px.addr
	na, nb := connectCfg(t, ca), connectCfg(t, cb)
	dir := filepath.Join(t.TempDir(), "alice")
	s, err := ucl.Init(dir, ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	oa, err := na.Own(ctx, "alice", dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() { done <- nb.WatchLeases(ctx, func(name string) { got <- name }) }()
	// The watcher has seen alice's lease and its renewals.
	time.Sleep(ttl)

	px.cut()
	for t0 := time.Now(); nb.Connected() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Since(t0) > 30*time.Second {
			t.Fatal("node b still connected through a cut relay")
		}
	}
	// Three TTLs cut off while a renews: without the rule alice looks
	// stale to b after one.
	select {
	case name := <-got:
		t.Fatalf("the watcher of a node cut off from NATS named %q (its owner is alive)", name)
	case <-time.After(3 * ttl):
	}
	if !oa.Valid() {
		t.Fatal("node a lost alice while only b was cut off")
	}
	px.restore()
	for t0 := time.Now(); nb.Connected() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("node b did not reconnect: %v", nb.Connected())
		}
	}
	select {
	case name := <-got:
		t.Fatalf("the watcher named %q after its node reconnected (its owner is alive)", name)
	case <-time.After(3 * ttl):
	}
	// Not a watcher that stopped: when a really stops renewing, b names
	// alice.
	if err := oa.Abandon(); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-got:
		if name != "alice" {
			t.Fatalf("the watcher named %q, want alice", name)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("after the reconnect the watcher never named alice, whose owner stopped")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A publish that gets no answer (the stream's leader being elected, or
// gone: the request reaches no stream that answers) is tried again
// within Publish's budget, and lands once the stream answers; an
// append is not failed on the first silence.
func TestClusterPublishRetriesUnanswered(t *testing.T) {
	srv := startOne(t)
	n := connectCfg(t, Config{URL: srv.ClientURL(), NodeID: "a", Replicas: 1, LeaseTTL: time.Minute, Timeout: 5 * time.Second})
	spy, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	const logID = "retry"
	// Until the stream exists, the spy is the only subscriber of the
	// subject: it takes the first attempt and does not answer it.
	sub, err := spy.SubscribeSync(Subject(logID))
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	raw := []byte("event one")
	done := make(chan error, 1)
	go func() { done <- n.Publish(logID, 1, [][]byte{raw}) }()
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("the first attempt never came: %v", err)
	}
	if got := m.Header.Get(nats.ExpectedLastSeqHdr); got != "0" {
		t.Fatalf("the first attempt expects last seq %q, want 0", got)
	}
	// Now the stream answers, and the spy is gone.
	if err := n.EnsureStream(logID); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a publish whose first attempt got no answer: %v", err)
	}
	if h, err := n.StreamHead(logID); err != nil || h != 1 {
		t.Fatalf("stream head %d %v, want 1", h, err)
	}
	if got, err := n.StreamRaw(logID, 1); err != nil || string(got) != string(raw) {
		t.Fatalf("stream event 1: %q %v", got, err)
	}
	// The retry keeps the expected-sequence rule: a second writer at seq 1
	// is refused, not retried into success.
	if err := n.Publish(logID, 1, [][]byte{[]byte("another event one")}); err == nil {
		t.Fatal("a second event at seq 1 was acknowledged")
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a refused publish was retried until its budget ran out: %v", err)
	}
}

// A publish retried after an attempt without an answer stops once its
// owner's lease is no longer valid: an event a stale owner lands after a
// new owner read the stream's head would be acknowledged to its client
// and missing from what the new owner serves. Nothing reaches the
// stream, and the error is ErrLeaseLost.
func TestClusterPublishStopsWhenInvalid(t *testing.T) {
	srv := startOne(t)
	n := connectCfg(t, Config{URL: srv.ClientURL(), NodeID: "a", Replicas: 1, LeaseTTL: time.Minute, Timeout: 5 * time.Second})
	spy, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	const logID = "stale"
	sub, err := spy.SubscribeSync(Subject(logID))
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	var valid atomic.Bool
	valid.Store(true)
	done := make(chan error, 1)
	go func() { done <- n.PublishWhile(logID, 1, [][]byte{[]byte("event one")}, valid.Load) }()
	if _, err := sub.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the first attempt never came: %v", err)
	}
	// While the first attempt waits for an answer, the lease lapses and
	// the stream answers again (a new owner may read its head now).
	valid.Store(false)
	if err := n.EnsureStream(logID); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a publish retried after its lease lapsed: %v, want ErrLeaseLost", err)
	}
	if h, err := n.StreamHead(logID); err != nil || h != 0 {
		t.Fatalf("stream head %d %v, want 0: a stale owner's retry reached the stream", h, err)
	}
}

// An owner's validity is counted from when it sent the request that took
// or renewed its lease, never from when the answer came back: the bucket
// stored the lease in between, and counts the TTL from there. Counted
// from the answer, a slow answer (a loaded machine, an election) would
// stretch the owner's validity past the moment another node may take the
// store.
func TestClusterLeaseClockStartsAtRequest(t *testing.T) {
	ctx := context.Background()
	srv := startOne(t)
	n := connectCfg(t, Config{URL: srv.ClientURL(), NodeID: "a", Replicas: 1, LeaseTTL: 2 * time.Second, Timeout: 5 * time.Second})
	dir := filepath.Join(t.TempDir(), "alice")
	s, err := ucl.Init(dir, ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	o, err := n.Own(ctx, "alice", dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// The lease as taken, then after renewals (every TTL/4).
	for checked := 0; checked < 3; {
		e, err := n.kv.Get("alice")
		if err != nil {
			t.Fatal(err)
		}
		o.mu.Lock()
		rev, renewed := o.rev, o.renewed
		o.mu.Unlock()
		if rev != e.Revision() {
			continue // renewed meanwhile: read both again
		}
		if renewed.After(e.Created()) {
			t.Fatalf("lease revision %d stored at %s, but the owner counts it from %s (after)",
				rev, e.Created().Format(time.RFC3339Nano), renewed.Format(time.RFC3339Nano))
		}
		checked++
		for t0 := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			o.mu.Lock()
			moved := o.rev != rev
			o.mu.Unlock()
			if moved {
				break
			}
			if time.Since(t0) > 30*time.Second {
				t.Fatal("the lease was not renewed")
			}
		}
	}
}

// An owner whose replicate failed (its log takes no more appends) gives
// its lease up instead of renewing it: another node takes the store over
// from the stream and serves it, where forwarding to the broken owner
// could only ever be answered "try again".
func TestClusterBrokenOwnerGivesUpLease(t *testing.T) {
	ctx := context.Background()
	cfg, na, nb, dirs, logID := twoNodes(t)
	oa, err := na.Own(ctx, "alice", dirs[0], quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: "acknowledged"}); err != nil {
		t.Fatal(err)
	}
	// The stream refuses the next event (over its message size limit),
	// then takes events again: a's log is broken, NATS is fine.
	si, err := na.js.StreamInfo(StreamName(logID))
	if err != nil {
		t.Fatal(err)
	}
	sc := si.Config
	sc.MaxMsgSize = 16
	if _, err := na.js.UpdateStream(&sc); err != nil {
		t.Fatal(err)
	}
	if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: "refused by the stream"}); !errors.Is(err, log.ErrNotReplicated) {
		t.Fatalf("an append the stream refuses: %v, want ErrNotReplicated", err)
	}
	sc.MaxMsgSize = -1
	if _, err := na.js.UpdateStream(&sc); err != nil {
		t.Fatal(err)
	}
	ob, took := takeOver(t, nb, "alice", dirs[1])
	t.Logf("taken over %s after the failed append (lease TTL %s)", took.Round(time.Millisecond), cfg.LeaseTTL)
	if ob.Imported != 1 || oa.Valid() {
		t.Fatalf("imported %d events (want 1); the broken owner valid: %v", ob.Imported, oa.Valid())
	}
	if _, err := nb.Client("alice").Remember(ctx, ucl.RememberRequest{Content: "after the takeover"}); err != nil {
		t.Fatal(err)
	}
}
