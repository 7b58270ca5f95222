package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
)

// BenchmarkAppend measures one Remember (sync durability) on stores alone
// and on stores owned through a three-server JetStream cluster (R3: the
// append returns once the stream has it), with 1 and 16 writers, on one
// store and across 200 (each writer's appends go round the stores).
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []string{"local", "jetstream-R3"} {
		for _, stores := range []int{1, 200} {
			for _, writers := range []int{1, 16} {
				if stores > 1 && writers == 1 {
					continue
				}
				b.Run(fmt.Sprintf("%s/stores=%d/writers=%d", mode, stores, writers), func(b *testing.B) {
					if stores > 1 && b.N == 1 {
						return // the framework's first run: setting up 200 stores twice is not worth it
					}
					benchAppend(b, mode, stores, writers)
				})
			}
		}
	}
}

func benchAppend(b *testing.B, mode string, stores, writers int) {
	ctx := context.Background()
	root := b.TempDir()
	var n *Node
	if mode != "local" {
		srvs := startClusterB(b)
		n = connectB(b, srvs[0].ClientURL(), "a")
		defer n.Close()
	}
	// One wallet for all, made once per process: generating an RSA
	// wallet costs a second of CPU, at random, which would drown the
	// appends' CPU time.
	wallet := benchWallet(b)
	apis := make([]ucl.API, stores)
	for i := range apis {
		dir := filepath.Join(root, fmt.Sprintf("s%03d", i))
		s, err := ucl.Init(dir, ucl.InitOptions{Wallet: wallet, Options: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if n == nil {
			defer s.Close()
			apis[i] = s
			continue
		}
		s.Close()
		o, err := n.Own(ctx, fmt.Sprintf("s%03d", i), dir, quiet)
		if err != nil {
			b.Fatal(err)
		}
		defer o.Close()
		apis[i] = o.Store
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + writers - 1) / writers
	lat := make([][]time.Duration, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				api := apis[(w*per+i)%stores]
				t0 := time.Now()
				if _, err := api.Remember(ctx, ucl.RememberRequest{Content: fmt.Sprintf("writer %d fact %d", w, i)}); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(per*writers)/b.Elapsed().Seconds(), "appends/s")
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	}
}

var (
	benchWalletOnce sync.Once
	benchWalletV    *ucl.Wallet
	benchWalletErr  error
)

func benchWallet(b *testing.B) *ucl.Wallet {
	benchWalletOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ucl-bench-wallet-")
		if err != nil {
			benchWalletErr = err
			return
		}
		defer os.RemoveAll(dir)
		s, err := ucl.Init(filepath.Join(dir, "s"), ucl.InitOptions{Options: quiet})
		if err != nil {
			benchWalletErr = err
			return
		}
		s.Close()
		benchWalletV, benchWalletErr = ucl.LoadWallet(filepath.Join(dir, "s", "wallet.json"))
	})
	if benchWalletErr != nil {
		b.Fatal(benchWalletErr)
	}
	return benchWalletV
}

func startClusterB(b *testing.B) []*serverT {
	b.Helper()
	var ports []int
	for i := 0; i < 3; i++ {
		ports = append(ports, freePortB(b))
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var srvs []*serverT
	for i, p := range ports {
		s, err := StartEmbedded(EmbedConfig{Name: fmt.Sprintf("n%d", i), Port: -1, ClusterName: "ucl-bench",
			ClusterPort: p, Routes: routes, StoreDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		srvs = append(srvs, s)
		b.Cleanup(s.Shutdown)
	}
	return srvs
}

func connectB(b *testing.B, url, id string) *Node {
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := Connect(Config{URL: url, NodeID: id, Replicas: 3, LeaseTTL: 10 * time.Second})
		if err == nil {
			return n
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkStreamRead reads a 2000-event stream (500-byte events, one
// JetStream server) the way a takeover imports it: one direct get per
// event (as before) and one ordered consumer (readStream). ns/op is per
// event.
func BenchmarkStreamRead(b *testing.B) {
	s, err := StartEmbedded(EmbedConfig{Name: "solo", Port: -1, StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	n, err := Connect(Config{URL: s.ClientURL(), NodeID: "a", Replicas: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	const events = 2000
	logID := "0123456789abcdef0123456789abcdef"
	if err := n.EnsureStream(logID); err != nil {
		b.Fatal(err)
	}
	raw := make([]byte, 500)
	for i := 0; i < events; i++ {
		if _, err := n.js.PublishAsync(Subject(logID), raw); err != nil {
			b.Fatal(err)
		}
	}
	<-n.js.PublishAsyncComplete()
	ctx := context.Background()
	b.Run("get-per-event", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			seq := uint64(i%events) + 1
			if _, err := n.StreamRaw(logID, seq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ordered-consumer", func(b *testing.B) {
		for done := 0; done < b.N; done += events {
			if err := n.readStream(ctx, logID, 1, events, func([][]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		// ns/op per event: the loop read whole streams.
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(((b.N+events-1)/events)*events), "ns/event")
	})
}

// BenchmarkTakeoverSnapshot measures a takeover by a node with nothing of
// a 3000-event store, up to its first search answered (the projections
// caught up): with the newest snapshot in the object store (the
// projections restored, nothing replayed) and without (every event
// projected). One JetStream server; ns/op is one takeover.
func BenchmarkTakeoverSnapshot(b *testing.B) {
	ctx := context.Background()
	s, err := StartEmbedded(EmbedConfig{Name: "solo", Port: -1, StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	n, err := Connect(Config{URL: s.ClientURL(), NodeID: "a", Replicas: 1, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	root := b.TempDir()
	pristine := filepath.Join(root, "pristine")
	st, err := ucl.Init(pristine, ucl.InitOptions{Options: quiet})
	if err != nil {
		b.Fatal(err)
	}
	sr, err := st.Status(ctx, ucl.StatusRequest{})
	if err != nil {
		b.Fatal(err)
	}
	logID := sr.LogID
	st.Close()
	first := filepath.Join(root, "first")
	copyDirB(b, pristine, first)
	o, err := n.Own(ctx, "bench", first, quiet)
	if err != nil {
		b.Fatal(err)
	}
	var jl strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&jl, `{"kind":"knowledge","content":"fact number %d about the orchard, its pears and its plums"}`+"\n", i)
	}
	if _, err := o.Store.Append(ctx, ucl.AppendRequest{JSONL: jl.String()}); err != nil {
		b.Fatal(err)
	}
	if _, err := o.PutSnapshot(ctx); err != nil {
		b.Fatal(err)
	}
	if err := o.Close(); err != nil {
		b.Fatal(err)
	}
	runs := 0
	takeover := func(b *testing.B, wantSnap bool) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			runs++
			dir := filepath.Join(root, fmt.Sprintf("t%d", runs))
			copyDirB(b, pristine, dir)
			b.StartTimer()
			o, err := n.Own(ctx, "bench", dir, quiet)
			if err != nil {
				b.Fatal(err)
			}
			if o.Snapshot.Used != wantSnap || o.Imported != 3000 {
				b.Fatalf("takeover: snapshot %+v, imported %d", o.Snapshot, o.Imported)
			}
			if _, err := o.Store.Search(ctx, ucl.SearchRequest{Text: "pears", K: 5}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			o.Close()
			b.StartTimer()
		}
	}
	b.Run("with-snapshot", func(b *testing.B) { takeover(b, true) })
	if err := n.obs.Delete(manifestObject(logID)); err != nil {
		b.Fatal(err)
	}
	b.Run("without-snapshot", func(b *testing.B) { takeover(b, false) })
}

func copyDirB(b *testing.B, src, dst string) {
	b.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
}
