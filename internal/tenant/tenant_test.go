package tenant

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The bucket, the token check and the idle close, on a fake clock and
// stand-in stores (the e2e test in test/ runs real ones).
func TestHostLimitsAndIdle(t *testing.T) {
	dir := t.TempDir()
	mk := func(sd string) error { return os.MkdirAll(sd, 0o700) }
	tok, err := Create(dir, "alice", mk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, "alice", mk); !errors.Is(err, ErrExists) {
		t.Fatalf("create twice: %v", err)
	}
	if _, err := Create(dir, "../x", mk); !errors.Is(err, ErrBadName) {
		t.Fatalf("bad name: %v", err)
	}
	clk := &clock{t: time.Unix(1000, 0)}
	var mu sync.Mutex
	opens, closes := 0, 0
	h, err := NewHost(Options{Dir: dir, Rate: 1, Burst: 2, IdleTimeout: time.Minute, Now: clk.now,
		Open: func(name, sd string) (Opened, error) {
			mu.Lock()
			opens++
			mu.Unlock()
			return Opened{Close: func() error { mu.Lock(); closes++; mu.Unlock(); return nil }}, nil
		},
		Handler: func(ucl.API, string) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	do := func(token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/v1/status", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do(tok + "x"); w.Code != 401 {
		t.Fatalf("wrong token: %d", w.Code)
	}
	for i := 0; i < 2; i++ {
		if w := do(tok); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := do(tok)
	if w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("over the burst: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	clk.add(time.Second)
	if w := do(tok); w.Code != 200 {
		t.Fatalf("after a second: %d", w.Code)
	}
	if _, open := h.Stores(); open != 1 {
		t.Fatalf("open stores %d, want 1", open)
	}
	clk.add(2 * time.Minute)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, open := h.Stores(); open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle store was not closed")
		}
	}
	if w := do(tok); w.Code != 200 {
		t.Fatalf("after the idle close: %d", w.Code)
	}
	mu.Lock()
	defer mu.Unlock()
	if opens != 2 || closes != 1 {
		t.Fatalf("opens %d closes %d, want 2 and 1", opens, closes)
	}
}

// An open store whose Valid turns false is closed and opened anew for the
// next request (a cluster owner that lost its lease must not go on
// answering from its own copy).
func TestHostReopensInvalid(t *testing.T) {
	dir := t.TempDir()
	tok, err := Create(dir, "alice", func(sd string) error { return os.MkdirAll(sd, 0o700) })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	opens, closes, valid := 0, 0, true
	h, err := NewHost(Options{Dir: dir, IdleTimeout: time.Hour,
		Open: func(name, sd string) (Opened, error) {
			mu.Lock()
			defer mu.Unlock()
			opens++
			return Opened{Close: func() error { mu.Lock(); closes++; mu.Unlock(); return nil },
				Valid: func() bool { mu.Lock(); defer mu.Unlock(); return valid }}, nil
		},
		Handler: func(ucl.API, string) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	do := func() {
		r := httptest.NewRequest("GET", "/v1/status", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("status %d", w.Code)
		}
	}
	do()
	do()
	mu.Lock()
	if opens != 1 || closes != 0 {
		t.Fatalf("while valid: %d opens, %d closes; want 1, 0", opens, closes)
	}
	valid = false
	mu.Unlock()
	do()
	mu.Lock()
	defer mu.Unlock()
	if opens != 2 || closes != 1 {
		t.Fatalf("after Valid turned false: %d opens, %d closes; want 2, 1", opens, closes)
	}
}

// Close closes the open stores side by side, at most closeWorkers at
// once: one after another, a node hosting 200 cluster stores (each close
// gives a lease back over the network) took over a minute to stop.
func TestHostClosesInParallel(t *testing.T) {
	dir := t.TempDir()
	n := 3 * closeWorkers
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("s%02d", i)
		if _, err := Create(dir, name, func(sd string) error { return os.MkdirAll(sd, 0o700) }); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	var mu sync.Mutex
	cur, most, closed := 0, 0, 0
	full := make(chan struct{}) // closed once closeWorkers closes run at once
	var once sync.Once
	h, err := NewHost(Options{Dir: dir, IdleTimeout: time.Hour,
		Open: func(name, sd string) (Opened, error) {
			return Opened{Close: func() error {
				mu.Lock()
				cur++
				most = max(most, cur)
				if cur == closeWorkers {
					once.Do(func() { close(full) })
				}
				mu.Unlock()
				defer func() { mu.Lock(); cur--; closed++; mu.Unlock() }()
				// Each close waits until closeWorkers run at once: closes
				// one after another never get there (the first gives up,
				// and lets the others through).
				select {
				case <-full:
					return nil
				case <-time.After(10 * time.Second):
					once.Do(func() { close(full) })
					return errors.New("no other close ran beside this one")
				}
			}}, nil
		},
		Handler: func(ucl.API, string) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := h.Warm(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, open := h.Stores(); open != n {
		t.Fatalf("%d stores open, want %d", open, n)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if closed != n || most != closeWorkers {
		t.Fatalf("%d stores closed, at most %d at once; want %d, %d", closed, most, n, closeWorkers)
	}
}
