package arweave

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
)

// One arlocal is shared by the package's tests; it starts on first use.
var (
	gwOnce sync.Once
	gw     *arlocaltest.Gateway
	gwErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if gw != nil {
		gw.Stop()
	}
	os.Exit(code)
}

// gateway returns the shared arlocal, skipping only when node is missing.
func gateway(t testing.TB) *arlocaltest.Gateway {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping arlocal test in -short mode")
	}
	gwOnce.Do(func() {
		opt := arlocaltest.Options{}
		if os.Getenv("UCL_ARLOCAL_LOG") == "1" {
			opt.Log = os.Stderr // arlocal's own log, for debugging
		}
		gw, gwErr = arlocaltest.StartProcess(context.Background(), opt)
	})
	if gwErr == arlocaltest.ErrNoNode {
		t.Skipf("skipping: %v", gwErr)
	}
	if gwErr != nil {
		t.Fatal(gwErr)
	}
	return gw
}

func testWallet(t testing.TB, name string) *Wallet {
	t.Helper()
	w, err := LoadWallet("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// fundedClient returns a client on url for the named testdata wallet, minted
// on the shared gateway.
func fundedClient(t testing.TB, url, wallet string, opt Options) *Client {
	t.Helper()
	g := gateway(t)
	w := testWallet(t, wallet)
	if err := g.Mint(w.Address(), 1e15); err != nil {
		t.Fatal(err)
	}
	if url == "" {
		url = g.URL()
	}
	c, err := NewClient(url, w, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newLogID returns a log id unique to this test run.
func newLogID(t testing.TB) [16]byte {
	var id [16]byte
	copy(id[:], fmt.Sprintf("%-16.16s", fmt.Sprintf("%x", time.Now().UnixNano())))
	return id
}

// newRunID returns a tag value no earlier test used.
func newRunID(t testing.TB) string {
	id := newLogID(t)
	return fmt.Sprintf("%x", id[:])
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
