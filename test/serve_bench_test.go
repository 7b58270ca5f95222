package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	engine "github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/internal/httpapi"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// serveBenchSizes are the store sizes of the serve benchmarks; 100K with
// UCL_BENCH_100K=1.
func serveBenchSizes() []int {
	if os.Getenv("UCL_BENCH_100K") != "" {
		return []int{10_000, 100_000}
	}
	return []int{10_000}
}

var serveBenchWords = strings.Fields(`cello bow rosin scales suite teacher lesson practice morning evening database cutover
rollback orders friday migration schema index replica backup restore lisbon trip hotel flight museum tram
budget invoice client meeting deadline release build test deploy kernel memory cache latency throughput
garden tomato basil water soil compost recipe bread flour yeast oven salt family birthday gift party`)

func benchSentence(r *rand.Rand, n int) string {
	var c strings.Builder
	for c.Len() < n {
		c.WriteString(serveBenchWords[r.Intn(len(serveBenchWords))])
		c.WriteByte(' ')
	}
	return strings.TrimSpace(c.String())
}

// serveCorpus is the text of a serve benchmark store, its chat messages
// and REST queries.
type serveCorpus struct {
	name string
	// sentence returns about n bytes of text.
	sentence func(r *rand.Rand, n int) string
	// question is the last user message of a chat request.
	question func(r *rand.Rand) string
	queries  []string
	// query draws one REST query like those of queries (the distinct-
	// query runs).
	query func(r *rand.Rand) string
}

// serveCorpora: "uniform100" draws every word uniformly from 100 words,
// so each query term is in about a third of all chunks (the worst case
// for BM25: every query scores most of the store); "zipf30k" is text
// like real text (a Zipf law over 30K words, projtest.TextZipf, the query
// package's benchmark corpus) with questions and queries of moderately
// common words.
var serveCorpora = []serveCorpus{
	{"uniform100", benchSentence, func(r *rand.Rand) string { return benchSentence(r, 60) + "?" },
		[]string{"cello rosin practice", "database cutover rollback", "lisbon hotel tram", "tomato basil compost", "release deploy latency"},
		func(r *rand.Rand) string { return benchSentence(r, 20) }},
	{"zipf30k", func(r *rand.Rand, n int) string { return projtest.TextZipf(r, n/6, 30_000) },
		func(r *rand.Rand) string { return "What about the " + projtest.QueryText(r) + "?" },
		func() []string {
			r := rand.New(rand.NewSource(99))
			qs := make([]string, 16)
			for i := range qs {
				qs[i] = projtest.QueryText(r)
			}
			return qs
		}(), projtest.QueryText},
}

// serveBenchStore returns the benchmark store of n chunks of ~300 bytes
// over 100 sessions, opened with durability sync: the exchanges the
// benchmarks store pay their fsync, as in production. The store is built
// once per test binary (bulk load with durability none, projections
// caught up) next to the built ucl binary, and shared by the benchmarks.
// With UCL_BENCH_STORES=DIR it is kept in DIR and reused by later runs (a
// 100K build takes minutes here); each run adds its stored exchanges to
// it (about 200 events, noise next to the chunks).
func serveBenchStore(b *testing.B, c serveCorpus, n int) *engine.Store {
	b.Helper()
	dir := filepath.Join(filepath.Dir(uclBin), fmt.Sprintf("bench-store-%s-%d", c.name, n))
	done := ""
	if keep := os.Getenv("UCL_BENCH_STORES"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("serve-%s-%d", c.name, n))
		done = filepath.Join(dir, "bench-complete")
		if _, err := os.Stat(done); err != nil {
			if err := os.RemoveAll(dir); err != nil { // an interrupted build
				b.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(dir); err != nil {
		buildServeBenchStore(b, c, dir, n)
		if done != "" {
			if err := os.WriteFile(done, nil, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	sync := log.Sync
	s, err := engine.Open(dir, engine.Options{Durability: &sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func buildServeBenchStore(b *testing.B, c serveCorpus, dir string, n int) {
	s, err := engine.Init(dir, engine.InitOptions{Durability: log.None})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewSource(1))
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for i := 0; i < n; i += 5000 {
		var sb strings.Builder
		for j := i; j < min(i+5000, n); j++ {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			fmt.Fprintf(&sb, `{"session":"s%03d","role":%q,"content":%q,"time":%q}`+"\n",
				j%100, role, c.sentence(r, 300), base.Add(time.Duration(j)*time.Minute).Format(time.RFC3339))
		}
		if _, err := s.Append(ctx, engine.AppendRequest{JSONL: sb.String()}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.CatchUp(ctx, engine.CatchUpRequest{}); err != nil {
		b.Fatal(err)
	}
}

func percentile(ds []time.Duration, p float64) float64 {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(float64(len(ds)-1) * p)
	return float64(ds[i].Microseconds()) / 1000
}

const benchToken = "bench-token-0123456789abcdef"

// BenchmarkServeProxyOverhead measures what ucl adds to a chat completion
// (memory assembly, splice, forwarding, storing the exchange with fsync,
// relaying the reply): the client's round trip minus the upstream's own
// time for the same request, over loopback TCP, 200 sequential requests
// per run after 3 warm-up exchanges. Figures: overhead-p50-ms,
// overhead-p99-ms, cold-ms (the slowest warm-up exchange).
func BenchmarkServeProxyOverhead(b *testing.B) {
	for _, c := range serveCorpora {
		for _, n := range serveBenchSizes() {
			benchProxyOverhead(b, c, n)
		}
	}
}

func benchProxyOverhead(b *testing.B, corpus serveCorpus, n int) {
	b.Run(fmt.Sprintf("corpus=%s/chunks=%d", corpus.name, n), func(b *testing.B) {
		s := serveBenchStore(b, corpus, n)
		var mu sync.Mutex
		upTime := map[string]time.Duration{}
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-b","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The cutover runs on friday with a rollback plan."},"finish_reason":"stop"}]}`)
			mu.Lock()
			upTime[r.Header.Get("X-Bench-Id")] = time.Since(start)
			mu.Unlock()
		}))
		defer up.Close()
		srv, err := httpapi.New(s, httpapi.Options{Token: benchToken, Upstream: up.URL + "/v1"})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer hs.Close()
		r := rand.New(rand.NewSource(2))
		const perRun = 200
		// exchange sends one chat request in session i%100 and returns
		// ucl's overhead on it.
		exchange := func(id string, i int) time.Duration {
			body, _ := json.Marshal(map[string]any{"model": "m", "temperature": 0.2, "messages": []any{
				map[string]string{"role": "system", "content": "You are terse."},
				map[string]string{"role": "user", "content": corpus.sentence(r, 80)},
				map[string]string{"role": "assistant", "content": corpus.sentence(r, 80)},
				map[string]string{"role": "user", "content": corpus.question(r)},
			}})
			req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+benchToken)
			req.Header.Set("X-UCL-Session", fmt.Sprintf("s%03d", i%100))
			req.Header.Set("X-Bench-Id", id)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			total := time.Since(start)
			if resp.StatusCode != 200 || resp.Header.Get("X-UCL-Context-Tokens") == "0" {
				b.Fatalf("status %d, context tokens %s", resp.StatusCode, resp.Header.Get("X-UCL-Context-Tokens"))
			}
			mu.Lock()
			ut, ok := upTime[id]
			mu.Unlock()
			if !ok {
				b.Fatal("the upstream did not see the request")
			}
			return total - ut
		}
		// The first exchanges of a process pay one-time loads (the vector
		// projection's flat index on the first search, its growth on the
		// first stored exchange): reported apart as cold-ms, the slowest
		// of them, so that p99 is the steady state's.
		var cold time.Duration
		for i := 0; i < 3; i++ {
			cold = max(cold, exchange(fmt.Sprintf("warm-%d", i), i))
		}
		var over []time.Duration
		cpu0 := cpuTime()
		b.ResetTimer()
		for it := 0; it < b.N; it++ {
			for i := 0; i < perRun; i++ {
				over = append(over, exchange(fmt.Sprintf("%d-%d", it, i), i))
			}
		}
		b.StopTimer()
		b.ReportMetric(percentile(over, 0.50), "overhead-p50-ms")
		b.ReportMetric(percentile(over, 0.99), "overhead-p99-ms")
		b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
		// The process's CPU time per request (client, ucl and the fake
		// upstream together): what a request costs on an idle machine.
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(over)), "cpu-ms/req")
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkServeRESTQuery measures POST /v1/query over loopback TCP under
// 16 concurrent clients: 50 queries each per run, bounded to 2 minutes.
// Figures: p50-ms, p99-ms, qps, cpu-ms/query (after two warm-up queries) and
// cold-ms (the slower warm-up query). Each client asks in its own session
// (the affinity boost). With queries=fixed the clients cycle through the
// corpus's few query texts, as an agent asking about the same things
// again does: a long-running server then reads its hot chunks from the
// timelines' read cache. With queries=distinct every request draws new
// words (a repeat is chance), the worst case for that cache.
func BenchmarkServeRESTQuery(b *testing.B) {
	for _, c := range serveCorpora {
		for _, n := range serveBenchSizes() {
			for _, distinct := range []bool{false, true} {
				benchRESTQuery(b, c, n, distinct)
			}
		}
	}
}

func benchRESTQuery(b *testing.B, corpus serveCorpus, n int, distinct bool) {
	name := "fixed"
	if distinct {
		name = "distinct"
	}
	b.Run(fmt.Sprintf("corpus=%s/chunks=%d/clients=16/queries=%s", corpus.name, n, name), func(b *testing.B) {
		s := serveBenchStore(b, corpus, n)
		srv, err := httpapi.New(s, httpapi.Options{Token: benchToken})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer hs.Close()
		tr := &http.Transport{MaxIdleConnsPerHost: 16}
		hc := &http.Client{Transport: tr}
		defer tr.CloseIdleConnections()
		queries := corpus.queries
		var mu sync.Mutex
		var lat []time.Duration
		// As in the proxy benchmark, the one-time loads of a process are
		// reported apart (cold-ms, the slowest of two warm-up queries):
		// the first vector search scans the stored vectors in place, the
		// second loads them into memory. The warm-up texts are none of the
		// measured queries.
		var cold time.Duration
		for i, text := range []string{"warm up the store", "warm up the index"} {
			body, _ := json.Marshal(engine.SearchRequest{Text: text, Session: fmt.Sprintf("s%03d", 99-i)})
			req, _ := http.NewRequest("POST", hs.URL+"/v1/query", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+benchToken)
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("warm-up: status %d", resp.StatusCode)
			}
			cold = max(cold, time.Since(t0))
		}
		deadline := time.Now().Add(2 * time.Minute)
		cpu0 := cpuTime()
		b.ResetTimer()
		start := time.Now()
		for it := 0; it < b.N; it++ {
			var wg sync.WaitGroup
			for c := 0; c < 16; c++ {
				wg.Add(1)
				go func(c int) {
					defer wg.Done()
					for i := 0; i < 50 && time.Now().Before(deadline); i++ {
						text := queries[(c+i)%len(queries)]
						if distinct {
							// One seed per request, within a run
							// and across runs.
							text = corpus.query(rand.New(rand.NewSource(int64(((it*16+c)*50 + i) + 1_000_000))))
						}
						body, _ := json.Marshal(engine.SearchRequest{Text: text, Session: fmt.Sprintf("s%03d", c)})
						req, _ := http.NewRequest("POST", hs.URL+"/v1/query", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+benchToken)
						t0 := time.Now()
						resp, err := hc.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						d := time.Since(t0)
						if resp.StatusCode != 200 {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				}(c)
			}
			wg.Wait()
		}
		elapsed := time.Since(start)
		b.StopTimer()
		if len(lat) == 0 {
			b.Fatal("no query answered")
		}
		b.ReportMetric(percentile(lat, 0.50), "p50-ms")
		b.ReportMetric(percentile(lat, 0.99), "p99-ms")
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "qps")
		b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
		// The process's CPU time per query (the 16 clients and ucl
		// together): 16 clients on 2 idle cores wait about 8 times this.
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(lat)), "cpu-ms/query")
		// What the server process keeps in memory once warm (the vector
		// index, the timelines' read cache, bleve's caches), after a GC.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
		b.ReportMetric(0, "ns/op")
	})
}
