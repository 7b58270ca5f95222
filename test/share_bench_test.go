package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	engine "github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/arweave/arlocaltest"
	"github.com/unlimitedcontext/ucl/log"
)

// BenchmarkSharePull10K: A stores one session of 10K events (~250 B of
// text each), grants it to B and pushes to arlocal; each iteration is B's
// whole `share pull` into a fresh store: find the disclosure, fetch and
// verify A's segments (signatures, chain, checkpoint), decrypt the granted
// events and project them. The setup (10K appends, the push) is not
// timed. Also reported: opening the pulled store and one shared search
// (what the next CLI command pays), and a second pull that finds nothing
// new.
func BenchmarkSharePull10K(b *testing.B) {
	const n = 10_000
	gw := arlocaltest.Start(b)
	ctx := context.Background()
	wa, err := arweave.LoadWallet("../arweave/testdata/wallet-a.json")
	if err != nil {
		b.Fatal(err)
	}
	a, err := engine.Init(filepath.Join(b.TempDir(), "a"), engine.InitOptions{Wallet: wa, Durability: log.None})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	var in strings.Builder
	for i := 0; i < n; i++ {
		line, err := json.Marshal(map[string]any{"type": "store", "session": "big", "role": []string{"user", "assistant"}[i%2],
			"content": fmt.Sprintf("turn %d of the long session: the cello lesson covered scales, bow grip, rosin and the Bach suite, bar %d", i, i*3),
			"time":    time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)})
		if err != nil {
			b.Fatal(err)
		}
		in.Write(line)
		in.WriteByte('\n')
	}
	if _, err := a.Append(ctx, engine.AppendRequest{JSONL: in.String()}); err != nil {
		b.Fatal(err)
	}
	wbFile := "../arweave/testdata/wallet-b.json"
	jwk, err := os.ReadFile(wbFile)
	if err != nil {
		b.Fatal(err)
	}
	wb, err := arweave.LoadWallet(wbFile)
	if err != nil {
		b.Fatal(err)
	}
	for _, addr := range []string{wa.Address(), wb.Address()} {
		if err := gw.Mint(addr, 1e15); err != nil {
			b.Fatal(err)
		}
	}
	g, err := a.ShareGrant(ctx, engine.ShareGrantRequest{To: wb.Address(), Session: "big", Key: string(jwk)})
	if err != nil {
		b.Fatal(err)
	}
	if len(g.Chunks) != n {
		b.Fatalf("granted %d chunks", len(g.Chunks))
	}
	if _, err := a.Push(ctx, engine.PushRequest{Gateway: gw.URL()}); err != nil {
		b.Fatal(err)
	}
	if err := gw.Mine(1); err != nil {
		b.Fatal(err)
	}
	var last string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		last = filepath.Join(b.TempDir(), fmt.Sprintf("b%d", i))
		s, err := engine.Init(last, engine.InitOptions{Wallet: wb})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := s.SharePull(ctx, engine.SharePullRequest{Gateway: gw.URL()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if res.Chunks != n {
			b.Fatalf("pulled %d chunks, want %d", res.Chunks, n)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// What a pull leaves for the next process: open the store and search
	// the shared chunks once (a CLI `ucl query --origin shared`).
	b.StopTimer()
	t0 := time.Now()
	s, err := engine.Open(last, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r, err := s.Search(ctx, engine.SearchRequest{Text: "bow grip rosin", Origin: "shared"})
	if err != nil {
		b.Fatal(err)
	}
	if len(r.Results) == 0 || r.Results[0].From != wa.Address() {
		b.Fatalf("search after the pull: %d results", len(r.Results))
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "open+first-query-ms")
	// A pull that finds nothing new keeps the shared projections.
	t0 = time.Now()
	again, err := s.SharePull(ctx, engine.SharePullRequest{Gateway: gw.URL()})
	if err != nil || again.Chunks != n {
		b.Fatalf("second pull: %v", err)
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "repull-ms")
}
