package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
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
	var wallet *ucl.Wallet
	apis := make([]ucl.API, stores)
	for i := range apis {
		dir := filepath.Join(root, fmt.Sprintf("s%03d", i))
		// One wallet for all: generating one per store costs a second.
		s, err := ucl.Init(dir, ucl.InitOptions{Wallet: wallet, Options: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if wallet == nil {
			if wallet, err = ucl.LoadWallet(filepath.Join(dir, "wallet.json")); err != nil {
				b.Fatal(err)
			}
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
