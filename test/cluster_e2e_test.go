package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNode runs one `ucl serve --stores` cluster node; its address
// arrives on the returned channel ("" if it did not come up).
func startNode(t *testing.T, args ...string) (*served, chan string) {
	cmd := exec.Command(uclBin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "UCL_VAULT_KEY=")
	pr, pw := io.Pipe()
	s := &served{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-s.done
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				io.Copy(io.Discard, pr)
				return
			}
		}
		addr <- ""
	}()
	return s, addr
}

// Three `ucl serve --stores --cluster-embed` processes whose embedded
// JetStream servers form one cluster: appends through any node reach the
// store's owner; after kill -9 of the owner another node takes the store
// over from the stream with every acknowledged event, and appends go on.
func TestClusterServeKillOwner(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var dirs []string
	for i := 0; i < 3; i++ {
		dirs = append(dirs, filepath.Join(root, fmt.Sprintf("node%d", i)))
	}
	tok := storesCreate(t, dirs[0], "alice")
	// The store's identity on every node (package cluster's doc).
	for _, d := range dirs[1:] {
		if out, err := exec.Command("cp", "-r", dirs[0], d).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	ports := []int{freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", p))
	}
	var nodes []*served
	var addrs []chan string
	for i := range dirs {
		s, a := startNode(t, "--stores", dirs[i], "--cluster-embed", "--cluster-route-listen", routes[i],
			"--cluster-routes", strings.Join(routes, ","), "--node-id", fmt.Sprintf("n%d", i),
			"--lease-ttl", "2s", "--replicas", "3", "--rate", "1000", "--burst", "1000")
		nodes, addrs = append(nodes, s), append(addrs, a)
	}
	base := make([]string, 3)
	for i := range nodes {
		a := <-addrs[i]
		if a == "" {
			t.Fatalf("node %d did not come up: %s", i, nodes[i].stderr.String())
		}
		base[i] = "http://" + a
	}

	// Node 0 is asked first: it takes the lease. A cluster that has just
	// formed may not place a three-replica stream yet: the store cannot be
	// opened (503, nothing written) until it can.
	for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		code, m := restGet(t, base[0], tok, "/v1/status")
		if code == 200 {
			break
		}
		if code != 503 || time.Since(t0) > 60*time.Second {
			t.Fatalf("first request to node 0: %d %v\n%s", code, m, nodes[0].stderr.String())
		}
	}
	for i := 0; i < 5; i++ {
		if code, _, m := restPost(t, base[0], tok, "/v1/store", fmt.Sprintf(`{"content":"acked kiwi fact %d"}`, i)); code != 200 {
			t.Fatalf("store via node 0: %d %v\n%s", code, m, nodes[0].stderr.String())
		}
	}
	if code, _, m := restPost(t, base[1], tok, "/v1/store", `{"content":"acked kiwi fact via node 1"}`); code != 200 {
		t.Fatalf("store via node 1: %d %v %s", code, m, nodes[1].stderr.String())
	}
	if code, st := restGet(t, base[2], tok, "/v1/status"); code != 200 || st["head_seq"].(float64) != 6 {
		t.Fatalf("status via node 2: %d %v", code, st)
	}
	if !strings.Contains(nodes[0].stderr.String(), "owning store alice") {
		t.Fatalf("node 0 does not own alice: %s", nodes[0].stderr.String())
	}

	// kill -9 the owner.
	nodes[0].cmd.Process.Kill()
	t0 := time.Now()
	var st map[string]any
	for {
		var code int
		code, st = restGet(t, base[1], tok, "/v1/status")
		if code == 200 {
			break
		}
		if time.Since(t0) > 90*time.Second {
			t.Fatalf("no takeover: %d %v\nnode1: %s\nnode2: %s", code, st, nodes[1].stderr.String(), nodes[2].stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("served again %s after kill -9 (lease TTL 2s)", time.Since(t0).Round(time.Millisecond))
	if st["head_seq"].(float64) != 6 {
		t.Fatalf("after takeover: %v", st)
	}
	got := searchTexts(t, base[2], tok, "acked kiwi fact")
	for i := 0; i < 5; i++ {
		if !strings.Contains(got, fmt.Sprintf("acked kiwi fact %d", i)) {
			t.Fatalf("after takeover fact %d is missing: %s", i, got)
		}
	}
	if !strings.Contains(got, "via node 1") {
		t.Fatalf("after takeover the forwarded fact is missing: %s", got)
	}
	if code, _, m := restPost(t, base[2], tok, "/v1/store", `{"content":"after the takeover"}`); code != 200 {
		t.Fatalf("store after takeover: %d %v\nnode1: %s\nnode2: %s", code, m, nodes[1].stderr.String(), nodes[2].stderr.String())
	}
	if code, st := restGet(t, base[1], tok, "/v1/status"); code != 200 || st["head_seq"].(float64) != 7 {
		t.Fatalf("status after takeover append: %d %v\nnode1: %s\nnode2: %s", code, st, nodes[1].stderr.String(), nodes[2].stderr.String())
	}
}

// clusterStores is how many stores TestClusterServeStores runs:
// UCL_CLUSTER_STORES, or the 200 (under -race on 2 shared cores:
// about 2 to 4 minutes and 60 to 180 s of CPU depending on the load,
// against about 70 s and 18 s of CPU for 12 stores; UCL_CLUSTER_STORES=12
// for a quick run).
func clusterStores(t *testing.T) int {
	if v := os.Getenv("UCL_CLUSTER_STORES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			t.Fatalf("UCL_CLUSTER_STORES=%q: want a number >= 4", v)
		}
		return n
	}
	return 200
}

// httpCall is one REST call that may fail (a killed node refuses it): no
// t.Fatal, so writers in goroutines can use it.
func httpCall(base, token, method, path, body string) (int, map[string]any, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := clusterHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m, nil
}

var clusterHTTP = &http.Client{Timeout: 90 * time.Second}

// storeFact appends one fact; id is its event id when acknowledged.
func storeFact(base, token, fact string) (code int, id string, err error) {
	code, m, err := httpCall(base, token, "POST", "/v1/store", `{"content":`+strconvQuote(fact)+`}`)
	if err != nil || code != 200 {
		return code, "", err
	}
	rs, _ := m["results"].([]any)
	if len(rs) != 1 {
		return code, "", fmt.Errorf("store answered %v", m)
	}
	id, _ = rs[0].(map[string]any)["id"].(string)
	return code, id, nil
}

// getFound returns which of ids the store (through base) holds. A 503
// ("try again": an owner whose lease lapsed under load, a store moving)
// is asked again, for up to a minute.
func getFound(base, token string, ids []string) (map[string]bool, error) {
	b, _ := json.Marshal(map[string]any{"ids": ids})
	var code int
	var m map[string]any
	var err error
	for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		code, m, err = httpCall(base, token, "POST", "/v1/get", string(b))
		if err != nil || code != 503 || time.Since(t0) > time.Minute {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("get: %d %v", code, m)
	}
	found := map[string]bool{}
	items, _ := m["items"].([]any)
	for _, it := range items {
		im, _ := it.(map[string]any)
		if f, _ := im["found"].(bool); f {
			found[im["id"].(string)] = true
		}
	}
	return found, nil
}

// The end-to-end case: three `ucl serve --cluster-embed` nodes
// (three clustered JetStream servers) serving many stores (200; fewer
// with UCL_CLUSTER_STORES=N), and a fourth ucl node that reaches the cluster
// only through node 0's JetStream server. Clients append through random
// nodes and read their own writes from other nodes. kill -9 of node 0
// while writers keep appending to every store: every acknowledged event
// survives, the lease watchers of nodes 1 and 2 take node 0's stores over
// without waiting for a request, chains verify, and the fourth node, cut
// off from NATS with its server gone, refuses writes with a clear error.
// Node 0 rejoins; when node 1 stops, node 0 takes back stores from its
// old local copies: heads agree everywhere, nothing forks.
func TestClusterServeStores(t *testing.T) {
	t.Parallel()
	nStores := clusterStores(t)
	tStart := time.Now()
	var tEnd time.Time
	// Registered first, so it runs last: after the nodes ended and their
	// directories were removed.
	t.Cleanup(func() {
		if !tEnd.IsZero() {
			t.Logf("cleanup (processes reaped, directories removed) took %s", time.Since(tEnd).Round(time.Millisecond))
		}
	})
	root := t.TempDir()
	// Runs before the directories' removal, after the nodes' cleanups.
	t.Cleanup(func() {
		if !tEnd.IsZero() {
			t.Logf("processes reaped %s after the test", time.Since(tEnd).Round(time.Millisecond))
		}
	})
	var dirs []string
	for i := 0; i < 4; i++ {
		dirs = append(dirs, filepath.Join(root, fmt.Sprintf("node%d", i)))
	}
	names := make([]string, nStores)
	for i := range names {
		names[i] = fmt.Sprintf("s%03d", i)
	}
	toks := map[string]string{}
	toks[names[0]] = storesCreate(t, dirs[0], names[0])
	// One wallet for all (one payer): a wallet per store costs a second
	// of key generation each.
	out := must(t, "", "", append([]string{"stores", "create", "--stores", dirs[0], "--json", "--wallet",
		filepath.Join(dirs[0], names[0], "wallet.json")}, names[1:]...)...)
	var made struct {
		Stores []struct{ Name, Token string } `json:"stores"`
	}
	if err := json.Unmarshal([]byte(out), &made); err != nil || len(made.Stores) != nStores-1 {
		t.Fatalf("stores create: %v %s", err, out)
	}
	for _, s := range made.Stores {
		toks[s.Name] = s.Token
	}
	for _, d := range dirs[1:] {
		if out, err := exec.Command("cp", "-r", dirs[0], d).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	t.Logf("%d stores created and copied to 4 nodes in %s", nStores, time.Since(tStart).Round(time.Millisecond))

	routes := []string{}
	for i := 0; i < 3; i++ {
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)))
	}
	client0 := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	// Under -race on a loaded machine a renewal can lag by seconds: with
	// the default lease (10 s) owners keep the stores they still serve,
	// instead of all of them moving whenever renewals fall behind by half
	// a shorter lease (6 s: up to 197 of 200 stores moved after the kill).
	ttl := "2s"
	if raceEnabled {
		ttl = "10s"
	}
	common := []string{"--lease-ttl", ttl, "--replicas", "3", "--rate", "100000", "--burst", "100000"}
	nodeArgs := func(i int) []string {
		a := []string{"--stores", dirs[i], "--node-id", fmt.Sprintf("n%d", i)}
		if i == 3 {
			return append(append(a, "--cluster", "nats://"+client0), common...)
		}
		a = append(a, "--cluster-embed", "--cluster-route-listen", routes[i], "--cluster-routes", strings.Join(routes, ","))
		if i == 0 {
			a = append(a, "--cluster-listen", client0)
		}
		return append(a, common...)
	}
	nodes := make([]*served, 4)
	addrs := make([]chan string, 4)
	for i := 0; i < 3; i++ {
		nodes[i], addrs[i] = startNode(t, nodeArgs(i)...)
	}
	base := make([]string, 4)
	up := func(i int) {
		a := <-addrs[i]
		if a == "" {
			t.Fatalf("node %d did not come up: %s", i, nodes[i].stderr.String())
		}
		base[i] = "http://" + a
	}
	for i := 0; i < 3; i++ {
		up(i)
	}
	logs := func() string {
		var b strings.Builder
		for i, n := range nodes {
			if n != nil {
				fmt.Fprintf(&b, "--- node %d:\n%s\n", i, tail(n.stderr.String(), 4000))
			}
		}
		return b.String()
	}
	// A cluster that has just formed may not place a three-replica stream
	// yet (503, nothing written): wait (bounded) for the first store.
	for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		code, m, err := httpCall(base[0], toks[names[0]], "GET", "/v1/status", "")
		if err == nil && code == 200 {
			break
		}
		if (err == nil && code != 503) || time.Since(t0) > 60*time.Second {
			t.Fatalf("first request: %d %v %v\n%s", code, m, err, logs())
		}
	}
	nodes[3], addrs[3] = startNode(t, nodeArgs(3)...)
	up(3)

	var mu sync.Mutex
	acked := map[string][]string{} // store -> acknowledged event ids
	unknown := map[string]int{}    // store -> appends whose outcome is unknown
	// Store s001 is node 3's (asked there first); the others spread over
	// nodes 0..2 by where their first write goes.
	if code, id, err := storeFact(base[3], toks[names[1]], "s001 fact via the node behind node 0's server"); err != nil || code != 200 {
		t.Fatalf("s001 via node 3: %d %v\n%s", code, err, logs())
	} else {
		acked[names[1]] = append(acked[names[1]], id)
	}
	tSpread := time.Now()
	work := make(chan int)
	errs := make(chan error, nStores)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := names[i]
				if i == 1 {
					continue
				}
				wn := i % 3
				// 503 is "unavailable, try again" (e.g. an owner that lost
				// its lease while slow): its outcome is unknown.
				var code int
				var id string
				var err error
				for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
					code, id, err = storeFact(base[wn], toks[name], name+" first fact about plums")
					if err != nil || code != 503 || time.Since(t0) > 60*time.Second {
						break
					}
					mu.Lock()
					unknown[name]++
					mu.Unlock()
				}
				if err != nil || code != 200 {
					errs <- fmt.Errorf("%s via node %d: %d %v", name, wn, code, err)
					continue
				}
				found, err := getFound(base[(wn+1)%3], toks[name], []string{id})
				if err != nil || !found[id] {
					errs <- fmt.Errorf("%s: own write not read through node %d: %v", name, (wn+1)%3, err)
					continue
				}
				mu.Lock()
				acked[name] = append(acked[name], id)
				mu.Unlock()
			}
		}()
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\n%s", err, logs())
	}
	owned := map[int][]string{}
	for _, name := range names {
		for i := 0; i < 4; i++ {
			if strings.Contains(nodes[i].stderr.String(), "owning store "+name+" ") {
				owned[i] = append(owned[i], name)
			}
		}
	}
	t.Logf("%d stores opened and written through 3 nodes, each read back through another, in %s; owners: node0 %d, node1 %d, node2 %d, node3 %d",
		nStores, time.Since(tSpread).Round(time.Millisecond), len(owned[0]), len(owned[1]), len(owned[2]), len(owned[3]))
	if len(owned[0]) == 0 || len(owned[3]) != 1 {
		t.Fatalf("owners: %v", owned)
	}

	// Busy: 16 writers append to random stores through random nodes while
	// node 0 is killed; then until every store of node 0 took writes again.
	stopW := make(chan struct{})
	var served0 sync.Map // node 0's stores that took a write after the kill
	var next0 atomic.Int64
	isServed0 := func(name string) bool { _, ok := served0.Load(name); return ok }
	var killed time.Time
	var killMu sync.RWMutex
	var wg2 sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg2.Add(1)
		go func(w int) {
			defer wg2.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for k := 0; ; k++ {
				select {
				case <-stopW:
					return
				default:
				}
				killMu.RLock()
				after := !killed.IsZero()
				killMu.RUnlock()
				var name string
				switch {
				case k%2 == 0 && after:
					// Node 0's stores that took no write since the kill, in
					// turn: the time printed is when each was served again,
					// not when a random pick happened to reach it.
					name = owned[0][rng.Intn(len(owned[0]))]
					for j, start := 0, int(next0.Add(1)); j < len(owned[0]); j++ {
						if c := owned[0][(start+j)%len(owned[0])]; !isServed0(c) {
							name = c
							break
						}
					}
				case k%2 == 0 && len(owned[0]) > 0: // busy: node 0's stores
					name = owned[0][rng.Intn(len(owned[0]))]
				default:
					name = names[rng.Intn(nStores)]
				}
				if name == names[1] {
					continue // node 3's, checked below
				}
				n := rng.Intn(3)
				if after {
					n = 1 + rng.Intn(2)
				}
				code, id, err := storeFact(base[n], toks[name], fmt.Sprintf("%s busy fact %d-%d", name, w, k))
				mu.Lock()
				if err == nil && code == 200 {
					acked[name] = append(acked[name], id)
				} else if !(err != nil && strings.Contains(err.Error(), "connection refused")) {
					unknown[name]++ // not refused before sending: may be in the log or not
				}
				mu.Unlock()
				if after && err == nil && code == 200 {
					served0.Store(name, time.Now())
				}
				if err != nil || code != 200 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}(w)
	}
	time.Sleep(time.Second) // appends in flight everywhere
	killMu.Lock()
	nodes[0].cmd.Process.Kill()
	killed = time.Now()
	killMu.Unlock()
	// Node 0's stores are taken over by the lease watchers of nodes 1 and
	// 2, and the writers' next appends to them succeed.
	for {
		n := 0
		for _, name := range owned[0] {
			if _, ok := served0.Load(name); ok {
				n++
			}
		}
		if n == len(owned[0]) {
			break
		}
		if time.Since(killed) > 120*time.Second {
			close(stopW)
			wg2.Wait()
			t.Fatalf("%d of node 0's %d stores took writes again within 120 s\n%s", n, len(owned[0]), logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stopW)
	wg2.Wait()
	var times []time.Duration
	for _, name := range owned[0] {
		at, _ := served0.Load(name)
		times = append(times, at.(time.Time).Sub(killed))
	}
	slices.Sort(times)
	taken := strings.Count(nodes[1].stderr.String(), "owning store") + strings.Count(nodes[2].stderr.String(), "owning store") -
		len(owned[1]) - len(owned[2])
	t.Logf("kill -9 of node 0 (owner of %d stores, lease TTL %s): its stores took writes again after %s (first) %s (median) %s (last); nodes 1 and 2 took %d stores over",
		len(owned[0]), ttl, times[0].Round(time.Millisecond), times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), taken)

	// Node 3 reaches NATS only through node 0's server, now gone: it
	// refuses a write to its store with a clear error, and the store is
	// served by another node with its acknowledged event.
	code, m, err := httpCall(base[3], toks[names[1]], "POST", "/v1/store", `{"content":"while cut off"}`)
	if err != nil || code != 503 || !strings.Contains(fmt.Sprint(m), "cut off from NATS") && !strings.Contains(fmt.Sprint(m), "not_replicated") {
		t.Fatalf("a write through the node cut off from NATS: %d %v %v\n%s", code, m, err, logs())
	}
	t.Logf("node 3, cut off: %d %v", code, m["error"])

	// Every acknowledged event of every store is there; nothing else but
	// appends whose outcome was unknown.
	tCheck := time.Now()
	var total atomic.Int64
	// Store by store, 16 at once (a check is a few requests; one after
	// another, 200 stores took 90 s under -race).
	if err := eachParallel(len(names), 16, func(i int) error {
		name := names[i]
		mu.Lock()
		ids, unk := acked[name], unknown[name]
		mu.Unlock()
		total.Add(int64(len(ids)))
		n := 1 + i%2
		var found map[string]bool
		var st map[string]any
		var err error
		for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			found, err = getFound(base[n], toks[name], ids)
			var code int
			if err == nil {
				code, st, err = httpCall(base[n], toks[name], "GET", "/v1/status", "")
				if err == nil && code != 200 {
					err = fmt.Errorf("status %d %v", code, st)
				}
			}
			if err == nil || time.Since(t0) > 60*time.Second {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("%s through node %d: %v\n%s", name, n, err, logs())
		}
		for _, id := range ids {
			if !found[id] {
				return fmt.Errorf("%s lost acknowledged event %s (node %d, head %v)\n%s", name, id, n, st["head_seq"], storeLines(nodes, name))
			}
		}
		if h := int(st["head_seq"].(float64)); h < len(ids) || h > len(ids)+unk {
			return fmt.Errorf("%s: head %d, %d acknowledged, %d unknown\n%s", name, h, len(ids), unk, storeLines(nodes, name))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d acknowledged events of %d stores found after the kill (checked in %s)", total.Load(), nStores, time.Since(tCheck).Round(time.Millisecond))
	// Chains verify on the new owners' copies (the CLI attaches to the
	// owner's socket): a few of node 0's former stores.
	for _, name := range owned[0][:min(3, len(owned[0]))] {
		var sd string
		for _, i := range []int{1, 2} {
			if strings.Contains(nodes[i].stderr.String(), "owning store "+name+" ") {
				sd = filepath.Join(dirs[i], name)
			}
		}
		if out := must(t, "", "", "--dir", sd, "audit", "verify", "--json"); !strings.Contains(out, `"ok":true`) {
			t.Fatalf("%s: audit verify: %s", name, out)
		}
	}

	// Node 0 rejoins (same directory, same JetStream files). Node 1 stops
	// (giving its leases back); a write through node 0 to each store node
	// 1 held lets node 0 take it from its own older copy: imported, or its
	// unacknowledged tail cut. Heads agree through every node.
	nodes[0], addrs[0] = startNode(t, nodeArgs(0)...)
	up(0)
	stopNode := func(i int) time.Duration {
		t0 := time.Now()
		nodes[i].cmd.Process.Signal(syscall.SIGTERM)
		// Gone once reaped (startNode's goroutine waits for it); bounded.
		for nodes[i].cmd.Process.Signal(syscall.Signal(0)) == nil {
			if time.Since(t0) > 60*time.Second {
				t.Fatalf("node %d did not stop on SIGTERM\n%s", i, logs())
			}
			time.Sleep(100 * time.Millisecond)
		}
		return time.Since(t0)
	}
	openStores := func(i int) int {
		l := nodes[i].stderr.String()
		return strings.Count(l, "opened store") - strings.Count(l, "closed store")
	}
	open1 := openStores(1)
	stopped := stopNode(1)
	t.Logf("node 1 (%d stores open) stopped on SIGTERM in %s", open1, stopped.Round(time.Millisecond))
	tBack := time.Now()
	if err := eachParallel(len(names), 16, func(i int) error {
		name := names[i]
		if i == 1 {
			return nil
		}
		var code int
		var m map[string]any
		var err error
		for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			code, m, err = httpCall(base[0], toks[name], "POST", "/v1/store", `{"content":`+strconvQuote(name+" after the rejoin")+`}`)
			if (err == nil && code == 200) || time.Since(t0) > 60*time.Second {
				break
			}
		}
		if err != nil || code != 200 {
			// The last answer and every node's lines about the store say
			// which node held it and why it refused.
			return fmt.Errorf("%s via the rejoined node: %d %v %v\n%s\n%s", name, code, m, err, storeLines(nodes, name), logs())
		}
		// Both answer (503 is "try again": under load a lease can lapse
		// and move), then agree.
		var st0, st2 map[string]any
		var err0, err2 error
		for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			var c0, c2 int
			c0, st0, err0 = httpCall(base[0], toks[name], "GET", "/v1/status", "")
			c2, st2, err2 = httpCall(base[2], toks[name], "GET", "/v1/status", "")
			if (err0 == nil && err2 == nil && c0 == 200 && c2 == 200) || time.Since(t0) > 60*time.Second {
				break
			}
		}
		if err0 != nil || err2 != nil || st0["head_hash"] == nil || st0["head_hash"] != st2["head_hash"] {
			return fmt.Errorf("%s after the rejoin: node 0 %v %v, node 2 %v %v\n%s", name, st0, err0, st2, err2, storeLines(nodes, name))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UCL_CLUSTER_LOGS") != "" { // every node's log, for a look at what moved
		t.Log(logs())
	}
	back := strings.Count(nodes[0].stderr.String(), "owning store")
	t.Logf("node 0 rejoined and took back %d stores in %s; heads agree; cut tails: %d",
		back, time.Since(tBack).Round(time.Millisecond), strings.Count(nodes[0].stderr.String(), "log repaired: cut"))
	// Node 2 stops while nodes 0 and 2 still make JetStream's quorum (its
	// leases are given back).
	open2 := openStores(2)
	stopped = stopNode(2)
	t.Logf("node 2 (%d stores open) stopped on SIGTERM in %s; whole test %s", open2, stopped.Round(time.Millisecond),
		time.Since(tStart).Round(time.Millisecond))
	// Node 0 alone cannot give its leases back (each try waits for a
	// JetStream quorum that is gone): it ends as a crash would.
	nodes[0].cmd.Process.Kill()
	nodes[3].cmd.Process.Kill()
	tEnd = time.Now()
}

// eachParallel calls f(0..n-1) from up to workers goroutines and returns
// the first error (the others still run to the end).
func eachParallel(n, workers int, f func(i int) error) error {
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// storeLines is every node's log lines about store name.
func storeLines(nodes []*served, name string) string {
	var b strings.Builder
	for i, n := range nodes {
		if n == nil {
			continue
		}
		fmt.Fprintf(&b, "--- node %d about %s:\n", i, name)
		for _, l := range strings.Split(n.stderr.String(), "\n") {
			if strings.Contains(l, "store "+name+" ") || strings.Contains(l, "store="+name+" ") || strings.HasSuffix(l, "store "+name) {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// Provisioning through the cluster: a store created on node A with
// --cluster and --cluster-key is served by node B, which was never given
// its directory (it fetches the store's identity, sealed under the
// cluster key, on the token's first request), and a write through B is
// read through A. A node without the key answers 401.
func TestClusterServeProvision(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	key := filepath.Join(root, "cluster.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	a, aa := startNode(t, "--stores", filepath.Join(root, "a"), "--cluster-embed", "--cluster-listen", client,
		"--node-id", "a", "--replicas", "1", "--cluster-key", key)
	addrA := <-aa
	if addrA == "" {
		t.Fatalf("node a did not come up: %s", a.stderr.String())
	}
	out := must(t, "", "", "stores", "create", "--stores", filepath.Join(root, "a"), "--json",
		"--cluster", "nats://"+client, "--cluster-key", key, "alice")
	tok, _ := jsonDoc(t, out)["token"].(string)
	if tok == "" {
		t.Fatalf("stores create: %s", out)
	}
	b, ba := startNode(t, "--stores", filepath.Join(root, "b"), "--cluster", "nats://"+client,
		"--node-id", "b", "--replicas", "1", "--cluster-key", key)
	addrB := <-ba
	if addrB == "" {
		t.Fatalf("node b did not come up: %s", b.stderr.String())
	}
	code, id, err := storeFact("http://"+addrB, tok, "provisioned through the cluster")
	if err != nil || code != 200 {
		t.Fatalf("a write through node b: %d %v\n%s", code, err, b.stderr.String())
	}
	if !strings.Contains(b.stderr.String(), "store alice provisioned from the cluster") {
		t.Fatalf("node b did not fetch alice: %s", b.stderr.String())
	}
	found, err := getFound("http://"+addrA, tok, []string{id})
	if err != nil || !found[id] {
		t.Fatalf("the write through b, read through a: %v %v", found, err)
	}
	// Without the key a node does not know the token.
	c, ca := startNode(t, "--stores", filepath.Join(root, "c"), "--cluster", "nats://"+client,
		"--node-id", "c", "--replicas", "1")
	addrC := <-ca
	if addrC == "" {
		t.Fatalf("node c did not come up: %s", c.stderr.String())
	}
	if code, _, err := httpCall("http://"+addrC, tok, "GET", "/v1/status", ""); err != nil || code != 401 {
		t.Fatalf("node c without the cluster key: %d %v, want 401", code, err)
	}
}

// A node with the cluster key takes over a store whose owner died even
// when it was never given the store's directory nor asked for it: its
// lease watcher fetches the store's identity by name from the cluster.
// Node b serves alice (fetched by token on its first request) and is
// killed; node a (JetStream's server) or node c, which never saw alice,
// takes alice over before any request, and serves b's acknowledged
// write.
func TestClusterServeTakeoverByName(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	key := filepath.Join(root, "cluster.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("6b", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	common := []string{"--replicas", "1", "--lease-ttl", "2s", "--cluster-key", key}
	a, aa := startNode(t, append([]string{"--stores", filepath.Join(root, "a"), "--cluster-embed", "--cluster-listen", client,
		"--node-id", "a"}, common...)...)
	addrA := <-aa
	if addrA == "" {
		t.Fatalf("node a did not come up: %s", a.stderr.String())
	}
	// Created where no node serves it: only the cluster has it.
	out := must(t, "", "", "stores", "create", "--stores", filepath.Join(root, "made"), "--json",
		"--cluster", "nats://"+client, "--cluster-key", key, "alice")
	tok, _ := jsonDoc(t, out)["token"].(string)
	if tok == "" {
		t.Fatalf("stores create: %s", out)
	}
	start := func(id string) (*served, string) {
		s, ch := startNode(t, append([]string{"--stores", filepath.Join(root, id), "--cluster", "nats://" + client,
			"--node-id", id}, common...)...)
		addr := <-ch
		if addr == "" {
			t.Fatalf("node %s did not come up: %s", id, s.stderr.String())
		}
		return s, "http://" + addr
	}
	b, baseB := start("b")
	code, id, err := storeFact(baseB, tok, "acknowledged through b")
	if err != nil || code != 200 {
		t.Fatalf("a write through node b: %d %v\n%s", code, err, b.stderr.String())
	}
	if !strings.Contains(b.stderr.String(), "owning store alice ") {
		t.Fatalf("node b does not own alice: %s", b.stderr.String())
	}
	c, _ := start("c")
	b.cmd.Process.Kill()
	killed := time.Now()
	var taker *served
	for taker == nil {
		for _, n := range []*served{a, c} {
			if l := n.stderr.String(); strings.Contains(l, "owning store alice ") &&
				strings.Contains(l, "store alice provisioned from the cluster (its owner stopped)") {
				taker = n
			}
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("nobody took alice over by name within 60 s of kill -9 of its owner\n--- a:\n%s\n--- c:\n%s", a.stderr.String(), c.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("alice taken over by name %s after kill -9 of its owner (lease TTL 2s)", time.Since(killed).Round(time.Millisecond))
	found, err := getFound("http://"+addrA, tok, []string{id})
	if err != nil || !found[id] {
		t.Fatalf("b's acknowledged write after the takeover: %v %v", found, err)
	}
}
