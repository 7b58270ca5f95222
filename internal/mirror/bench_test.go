package mirror

import (
	"github.com/unlimitedcontext/ucl/arweave"
	"net/http"
	"sync/atomic"
	"testing"
)

const (
	benchEvents    = 10_000
	benchEventSize = 700 - 32 // raw = 32-byte prev hash + body ≈ 700 B
)

// countingTransport counts request body bytes sent to the gateway.
type countingTransport struct{ sent atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ContentLength > 0 {
		c.sent.Add(r.ContentLength)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func benchUploader(b *testing.B, mode string, ct *countingTransport) arweave.Uploader {
	c := fundedClient(b, "", "wallet-a.json", arweave.Options{HTTPClient: &http.Client{Transport: ct}})
	if mode == "bundle" {
		return arweave.NewBundleUploader(c, BundleTags())
	}
	return arweave.NewL1Uploader(c)
}

// BenchmarkSyncArlocal pushes 10K ~700 B events to arlocal per iteration.
// Metrics: events/s, segment bytes per event and HTTP request bytes per
// event (base64 + JSON overhead included).
func BenchmarkSyncArlocal(b *testing.B) {
	for _, mode := range []string{"L1", "bundle"} {
		b.Run(mode, func(b *testing.B) {
			l := newMemLog(benchEvents, benchEventSize)
			ct := &countingTransport{}
			u := benchUploader(b, mode, ct)
			var segBytes int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st, err := OpenState(b.TempDir() + "/m.db")
				if err != nil {
					b.Fatal(err)
				}
				s, err := NewSyncer(SyncConfig{LogID: newLogID(b), Records: l.source, Gateway: clientOf(u), Uploader: u, State: st})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := s.Push(testCtx(b), l.head())
				if err != nil {
					b.Fatal(err)
				}
				segBytes += res.BytesPosted
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
			n := float64(b.N * benchEvents)
			b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(segBytes)/n, "seg-B/event")
			b.ReportMetric(float64(ct.sent.Load())/n, "wire-B/event")
		})
	}
}

// BenchmarkFetchArlocal rebuilds 10K ~700 B events from arlocal per
// iteration (GraphQL scan, fetch, verify).
func BenchmarkFetchArlocal(b *testing.B) {
	for _, mode := range []string{"L1", "bundle"} {
		b.Run(mode, func(b *testing.B) {
			g := gateway(b)
			l := newMemLog(benchEvents, benchEventSize)
			u := benchUploader(b, mode, &countingTransport{})
			st, err := OpenState(b.TempDir() + "/m.db")
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			logID := newLogID(b)
			s, err := NewSyncer(SyncConfig{LogID: logID, Records: l.source, Gateway: clientOf(u), Uploader: u, State: st})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Push(testCtx(b), l.head()); err != nil {
				b.Fatal(err)
			}
			if err := g.Mine(1); err != nil {
				b.Fatal(err)
			}
			c := clientOf(u)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var n uint64
				res, err := Rebuild(testCtx(b), RebuildOptions{Gateway: c, Owner: c.Wallet().Address(), LogID: logID, VerifyRecord: verifyChain},
					func(r Record) error { n++; return nil })
				if err != nil || n != benchEvents {
					b.Fatalf("rebuild: %d records, %v (%+v)", n, err, res)
				}
			}
			b.ReportMetric(float64(b.N*benchEvents)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
