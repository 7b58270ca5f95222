package test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The figures of docs/cluster.md through `ucl serve` REST (built binary,
// real processes): appends/s and p50/p99 latency of POST /v1/store with
// 16 writers on one store and across many stores, one `ucl serve
// --stores` node against three `--cluster-embed` nodes (replicas 3, each
// request sent to a random node, so two of three are forwarded), the CPU
// all ucl processes spent per append, and the time until a store is
// written again after kill -9 of its owner. Measured, not asserted: it
// runs only with UCL_CLUSTER_FIGURES=1, without -race:
//
//	UCL_CLUSTER_FIGURES=1 go test ./test/ -run 'TestClusterRESTFigures$' -v -timeout 30m
//
// UCL_CLUSTER_FIGURES_STORES (default 200), _APPENDS (per case, default
// 1600) and _LEASE (the lease TTL, default 10s) change the run. The CPU
// per append is net of what the processes spend idle (measured for 5 s
// before each mode's runs: a cluster node renews the lease of every
// store it holds four times a TTL, and JetStream keeps each store's
// stream group alive).
func TestClusterRESTFigures(t *testing.T) {
	if os.Getenv("UCL_CLUSTER_FIGURES") == "" {
		t.Skip("figures, not a check: UCL_CLUSTER_FIGURES=1 runs it")
	}
	if raceEnabled {
		t.Skip("figures of the race detector's build would mislead")
	}
	envInt := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	nStores := envInt("UCL_CLUSTER_FIGURES_STORES", 200)
	nAppends := envInt("UCL_CLUSTER_FIGURES_APPENDS", 1600)
	lease := os.Getenv("UCL_CLUSTER_FIGURES_LEASE")
	if lease == "" {
		lease = "10s" // the default: above JetStream's election time
	}
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "node0"), filepath.Join(root, "node1"), filepath.Join(root, "node2")}
	names := make([]string, nStores)
	for i := range names {
		names[i] = fmt.Sprintf("s%03d", i)
	}
	toks := map[string]string{names[0]: storesCreate(t, dirs[0], names[0])}
	if nStores > 1 {
		out := must(t, "", "", append([]string{"stores", "create", "--stores", dirs[0], "--json", "--wallet",
			filepath.Join(dirs[0], names[0], "wallet.json")}, names[1:]...)...)
		var made struct {
			Stores []struct{ Name, Token string } `json:"stores"`
		}
		if err := json.Unmarshal([]byte(out), &made); err != nil {
			t.Fatalf("stores create: %v %s", err, out)
		}
		for _, s := range made.Stores {
			toks[s.Name] = s.Token
		}
	}
	// A pristine copy for the cluster's nodes (the single node writes to
	// node0's).
	single := filepath.Join(root, "single")
	for _, d := range append([]string{single}, dirs[1:]...) {
		if out, err := exec.Command("cp", "-r", dirs[0], d).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	hc := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(base, tok, body string) (int, error) {
		req, err := http.NewRequest("POST", base+"/v1/store", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	limits := []string{"--rate", "1000000", "--burst", "1000000"}

	type figure struct {
		label             string
		perSec, p50, p99  float64
		cpuPerAppend      time.Duration
		failed, attempted int
		why               map[string]int
	}
	var figs []figure
	// idle is the CPU the processes spend a second doing nothing asked.
	var idle float64
	measureIdle := func(label string, nodes []*served) {
		c0, t0 := procsCPU(nodes), time.Now()
		time.Sleep(5 * time.Second)
		idle = float64(procsCPU(nodes)-c0) / float64(time.Since(t0))
		t.Logf("%-40s idle CPU %.3f s a second (all ucl processes)", label, idle)
	}
	// run appends nAppends facts with 16 writers; pick gives a writer's
	// k-th append its base URL and store.
	run := func(label string, nodes []*served, pick func(w, k int) (base, name string)) {
		cpu0 := procsCPU(nodes)
		var mu sync.Mutex
		var lat []time.Duration
		var failed atomic.Int64
		why := map[string]int{}
		var wg sync.WaitGroup
		t0 := time.Now()
		per := nAppends / 16
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < per; k++ {
					base, name := pick(w, k)
					a := time.Now()
					// Distinct in every case: a repeated content is a
					// duplicate the store answers without appending.
					code, err := post(base, toks[name], fmt.Sprintf(`{"content":"%s figure fact %d-%d-%d about plums and kiwis"}`, name, len(figs), w, k))
					d := time.Since(a)
					if err != nil || code != 200 {
						failed.Add(1)
						mu.Lock()
						if err != nil {
							why[err.Error()]++
						} else {
							why[strconv.Itoa(code)]++
						}
						mu.Unlock()
						continue
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		cpu := procsCPU(nodes) - cpu0 - time.Duration(idle*float64(wall))
		slices.Sort(lat)
		f := figure{label: label, attempted: 16 * per, failed: int(failed.Load()), why: why}
		if len(lat) > 0 {
			f.perSec = float64(len(lat)) / wall.Seconds()
			f.p50 = float64(lat[len(lat)/2]) / 1e6
			f.p99 = float64(lat[min(len(lat)-1, len(lat)*99/100)]) / 1e6
			f.cpuPerAppend = cpu / time.Duration(len(lat))
		}
		t.Logf("%-40s %7.1f appends/s  p50 %7.1f ms  p99 %7.1f ms  CPU %6.2f ms/append (all ucl processes, net of idle)  failed %d of %d",
			f.label, f.perSec, f.p50, f.p99, float64(f.cpuPerAppend)/1e6, f.failed, f.attempted)
		figs = append(figs, f)
	}
	// warm opens every store once (the first request opens it, or places
	// its lease): not part of the figures.
	warm := func(bases []string) {
		var wg sync.WaitGroup
		work := make(chan int)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					base := bases[i%len(bases)]
					for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
						code, err := post(base, toks[names[i]], `{"content":"warm up"}`)
						if err == nil && code == 200 {
							break
						}
						if time.Since(t0) > 120*time.Second {
							t.Errorf("warm %s through %s: %d %v", names[i], base, code, err)
							return
						}
					}
				}
			}()
		}
		for i := range names {
			work <- i
		}
		close(work)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}

	// One node, no cluster.
	s, a := startNode(t, append([]string{"--stores", single, "--idle-timeout", "1h"}, limits...)...)
	sa := <-a
	if sa == "" {
		t.Fatalf("the single node did not come up: %s", s.stderr.String())
	}
	sb := "http://" + sa
	warm([]string{sb})
	measureIdle("single node", []*served{s})
	run("single node, 1 store", []*served{s}, func(w, k int) (string, string) { return sb, names[0] })
	run(fmt.Sprintf("single node, %d stores", nStores), []*served{s}, func(w, k int) (string, string) {
		return sb, names[(w*7919+k*16+w)%nStores]
	})
	s.cmd.Process.Signal(os.Interrupt)
	err := <-s.done
	s.done <- err // for startNode's cleanup

	// Three nodes, embedded JetStream, replicas 3.
	routes := make([]string, 3)
	for i := range routes {
		routes[i] = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	}
	nodes := make([]*served, 3)
	bases := make([]string, 3)
	addrs := make([]chan string, 3)
	for i := range nodes {
		nodes[i], addrs[i] = startNode(t, append([]string{"--stores", dirs[i], "--cluster-embed", "--node-id", fmt.Sprintf("n%d", i),
			"--cluster-route-listen", routes[i], "--cluster-routes", strings.Join(routes, ","), "--replicas", "3",
			"--lease-ttl", lease, "--idle-timeout", "1h"}, limits...)...)
	}
	for i := range nodes {
		a := <-addrs[i]
		if a == "" {
			t.Fatalf("node %d did not come up: %s", i, nodes[i].stderr.String())
		}
		bases[i] = "http://" + a
	}
	warm(bases)
	measureIdle(fmt.Sprintf("cluster R3, %d stores held", nStores), nodes)
	owner := -1
	for i, n := range nodes {
		if strings.Contains(n.stderr.String(), "owning store "+names[0]+" ") {
			owner = i
		}
	}
	if owner < 0 {
		t.Fatalf("no node owns %s", names[0])
	}
	rngs := make([]*rand.Rand, 16)
	for w := range rngs {
		rngs[w] = rand.New(rand.NewSource(int64(w)))
	}
	run("cluster R3, 1 store, through its owner", nodes, func(w, k int) (string, string) { return bases[owner], names[0] })
	run("cluster R3, 1 store, random nodes", nodes, func(w, k int) (string, string) {
		return bases[rngs[w].Intn(3)], names[0]
	})
	run(fmt.Sprintf("cluster R3, %d stores, random nodes", nStores), nodes, func(w, k int) (string, string) {
		return bases[rngs[w].Intn(3)], names[(w*7919+k*16+w)%nStores]
	})

	// kill -9 of the owner of the first store: until a write through
	// another node succeeds.
	other := bases[(owner+1)%3]
	nodes[owner].cmd.Process.Kill()
	killed := time.Now()
	for {
		code, err := post(other, toks[names[0]], `{"content":"after the kill"}`)
		if err == nil && code == 200 {
			break
		}
		if time.Since(killed) > 180*time.Second {
			t.Fatalf("%s not written again within 180 s of kill -9 of its owner: %d %v", names[0], code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("kill -9 of the owner of %s (lease TTL %s): written again through another node after %s",
		names[0], lease, time.Since(killed).Round(time.Millisecond))
	for _, f := range figs {
		if f.failed > 0 {
			t.Logf("note: %s had %d failed appends of %d: %v", f.label, f.failed, f.attempted, f.why)
		}
	}
}

// procsCPU is the CPU time (user + system) the running processes have
// used so far, from /proc (0 for one that cannot be read).
func procsCPU(ps []*served) time.Duration {
	var sum time.Duration
	for _, p := range ps {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces) in
		// parentheses: utime and stime are the 14th and 15th fields of
		// the line, in clock ticks (100 a second on Linux).
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		sum += time.Duration(u+st) * 10 * time.Millisecond
	}
	return sum
}
