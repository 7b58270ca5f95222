package arweave

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseEndpoints(t *testing.T) {
	ep, err := ParseEndpoints(" https://a.example/ , http://127.0.0.1:1984,graphql=https://g.example/graphql,https://a.example")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ep.Gateways) != "[https://a.example http://127.0.0.1:1984]" || ep.GraphQL != "https://g.example/graphql" {
		t.Fatalf("parsed %+v", ep)
	}
	if back, err := ParseEndpoints(ep.String()); err != nil || back.String() != ep.String() {
		t.Fatalf("round trip %q: %+v %v", ep.String(), back, err)
	}
	for _, bad := range []string{"", " , ", "ftp://x", "graphql=https://g", "https://a,graphql=https://g,graphql=https://h", "https://a b",
		strings.Repeat("https://a.example,", 0) + "http://1,http://2,http://3,http://4,http://5,http://6,http://7,http://8,http://9"} {
		if _, err := ParseEndpoints(bad); !errors.Is(err, ErrEndpoint) {
			t.Errorf("ParseEndpoints(%q) = %v, want ErrEndpoint", bad, err)
		}
	}
}

func FuzzParseEndpoints(f *testing.F) {
	for _, s := range []string{"https://arweave.net", "http://127.0.0.1:1984,https://ar-io.dev,graphql=https://g/graphql", ",,", "graphql=", "http://[::1]:80/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseEndpoints(s)
		if err != nil {
			return
		}
		if len(ep.Gateways) == 0 || len(ep.Gateways) > maxEndpoints {
			t.Fatalf("%q: %d gateways", s, len(ep.Gateways))
		}
		back, err := ParseEndpoints(ep.String())
		if err != nil || back.String() != ep.String() {
			t.Fatalf("%q: round trip %q: %v", s, ep.String(), err)
		}
	})
}

// fastOpt keeps fallover tests quick: short attempts, little backoff.
var fastOpt = Options{RequestTimeout: 300 * time.Millisecond, CallTimeout: 5 * time.Second, MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}

func TestFalloverToNextGateway(t *testing.T) {
	var hits1 atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits1.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"network":"test","height":7}`)
	}))
	defer up.Close()
	c, err := NewClient(down.URL+","+hang.URL+","+up.URL, nil, fastOpt)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Info(context.Background())
	if err != nil || in.Height != 7 {
		t.Fatalf("info through the third gateway: %+v %v", in, err)
	}
	if got := c.Answered(); fmt.Sprint(got) != "["+up.URL+"]" {
		t.Fatalf("answered %v, want only %s", got, up.URL)
	}
	if hits1.Load() != 1 {
		t.Fatalf("the failing gateway was asked %d times; the next one answered at once", hits1.Load())
	}
}

func TestFalloverErrors(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "x", 503) }))
	defer down.Close()
	ctx := context.Background()
	// Every gateway says not found: not found.
	c, _ := NewClient(notFound.URL+","+notFound.URL+"/", nil, fastOpt)
	if _, err := c.FetchData(ctx, strings.Repeat("a", 43)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("all not found: %v", err)
	}
	// One lags (not found), one is down: unavailable, not "not found",
	// and the error names both.
	c, _ = NewClient(notFound.URL+","+down.URL, nil, fastOpt)
	_, err := c.FetchData(ctx, strings.Repeat("a", 43))
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), notFound.URL) || !strings.Contains(err.Error(), down.URL) {
		t.Fatalf("lagging + down: %v", err)
	}
}

func TestGraphQLEndpointFirst(t *testing.T) {
	var gq, gw atomic.Int32
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gq.Add(1)
		fmt.Fprint(w, `{"data":{"transactions":{"pageInfo":{"hasNextPage":false},"edges":[]}}}`)
	}))
	defer index.Close()
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gw.Add(1); http.Error(w, "x", 500) }))
	defer gateway.Close()
	c, err := NewClient(gateway.URL+",graphql="+index.URL+"/graphql", nil, fastOpt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindTxs(context.Background(), TxQuery{Owners: []string{strings.Repeat("a", 43)}}); err != nil {
		t.Fatal(err)
	}
	if gq.Load() != 1 || gw.Load() != 0 {
		t.Fatalf("graphql endpoint asked %d times, gateway %d", gq.Load(), gw.Load())
	}
}
