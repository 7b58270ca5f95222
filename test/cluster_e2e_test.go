package test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		t.Fatalf("store after takeover: %d %v", code, m)
	}
	if code, st := restGet(t, base[1], tok, "/v1/status"); code != 200 || st["head_seq"].(float64) != 7 {
		t.Fatalf("status after takeover append: %d %v", code, st)
	}
}

// Many stores on three nodes: clients append through random nodes and
// read their writes from other nodes; kill -9 of one node loses no
// acknowledged event of any store, and every store is served again.
func TestClusterServeManyStores(t *testing.T) {
	t.Parallel()
	const nStores, perStore = 12, 3
	root := t.TempDir()
	var dirs []string
	for i := 0; i < 3; i++ {
		dirs = append(dirs, filepath.Join(root, fmt.Sprintf("node%d", i)))
	}
	toks := map[string]string{}
	for i := 0; i < nStores; i++ {
		name := fmt.Sprintf("user%02d", i)
		toks[name] = storesCreate(t, dirs[0], name)
	}
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
	// A cluster that has just formed may not place a three-replica stream
	// yet (503, nothing written): wait for the first store to open.
	for t0 := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		code, m := restGet(t, base[0], toks["user00"], "/v1/status")
		if code == 200 {
			break
		}
		if code != 503 || time.Since(t0) > 60*time.Second {
			t.Fatalf("first request: %d %v\n%s", code, m, nodes[0].stderr.String())
		}
	}
	// Writes through node (store+k)%3, reads of one's own write through
	// the next node: ownership spreads over the nodes.
	for k := 0; k < perStore; k++ {
		for i := 0; i < nStores; i++ {
			name := fmt.Sprintf("user%02d", i)
			w := (i + k) % 3
			fact := fmt.Sprintf("%s fact %d about plums", name, k)
			if code, _, m := restPost(t, base[w], toks[name], "/v1/store", `{"content":"`+fact+`"}`); code != 200 {
				t.Fatalf("%s via node %d: %d %v", name, w, code, m)
			}
			if got := searchTexts(t, base[(w+1)%3], toks[name], fact); !strings.Contains(got, fact) {
				t.Fatalf("%s: own write not read from node %d: %s", name, (w+1)%3, got)
			}
		}
	}
	owned0 := strings.Count(nodes[0].stderr.String(), "owning store")
	if owned0 == 0 {
		t.Fatalf("node 0 owns no store: %s", nodes[0].stderr.String())
	}
	nodes[0].cmd.Process.Kill()
	t0 := time.Now()
	for i := 0; i < nStores; i++ {
		name := fmt.Sprintf("user%02d", i)
		var st map[string]any
		for {
			var code int
			code, st = restGet(t, base[1+i%2], toks[name], "/v1/status")
			if code == 200 {
				break
			}
			if time.Since(t0) > 120*time.Second {
				t.Fatalf("%s not served again: %d %v", name, code, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st["head_seq"].(float64) != perStore {
			t.Fatalf("%s after kill -9: head %v, want %d", name, st["head_seq"], perStore)
		}
		got := searchTexts(t, base[2-i%2], toks[name], "plums")
		for k := 0; k < perStore; k++ {
			if fact := fmt.Sprintf("%s fact %d about plums", name, k); !strings.Contains(got, fact) {
				t.Fatalf("%s lost %q: %s", name, fact, got)
			}
		}
	}
	t.Logf("node 0 owned %d of %d stores; all served again with every acked event %s after kill -9 (lease TTL 2s)",
		owned0, nStores, time.Since(t0).Round(time.Millisecond))

	// The killed node rejoins (same directory, same JetStream files): it
	// reaches every store through its new owner, a write through it lands
	// on the one chain, and the heads agree from every node.
	s0, a0 := startNode(t, "--stores", dirs[0], "--cluster-embed", "--cluster-route-listen", routes[0],
		"--cluster-routes", strings.Join(routes, ","), "--node-id", "n0",
		"--lease-ttl", "2s", "--replicas", "3", "--rate", "1000", "--burst", "1000")
	if a := <-a0; a == "" {
		t.Fatalf("node 0 did not come back: %s", s0.stderr.String())
	} else {
		base[0] = "http://" + a
	}
	for i := 0; i < nStores; i++ {
		name := fmt.Sprintf("user%02d", i)
		if code, _, m := restPost(t, base[0], toks[name], "/v1/store", `{"content":"after the rejoin"}`); code != 200 {
			t.Fatalf("%s via the rejoined node: %d %v", name, code, m)
		}
		var hash any
		for n := 0; n < 3; n++ {
			code, st := restGet(t, base[n], toks[name], "/v1/status")
			if code != 200 || st["head_seq"].(float64) != perStore+1 {
				t.Fatalf("%s via node %d after the rejoin: %d %v", name, n, code, st)
			}
			if n > 0 && st["head_hash"] != hash {
				t.Fatalf("%s: node %d sees head %v, node 0 %v", name, n, st["head_hash"], hash)
			}
			hash = st["head_hash"]
		}
	}
}
