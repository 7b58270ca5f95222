package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
)

type serverT = server.Server

func freePortB(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startCluster starts three clustered JetStream servers on loopback.
func startCluster(t *testing.T) []*server.Server {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var srvs []*server.Server
	for i, p := range ports {
		s, err := StartEmbedded(EmbedConfig{Name: fmt.Sprintf("n%d", i), Port: -1, ClusterName: "ucl-test",
			ClusterPort: p, Routes: routes, StoreDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, s)
		t.Cleanup(s.Shutdown)
	}
	return srvs
}

// connect joins a node, waiting (bounded) for JetStream's meta leader.
func connect(t *testing.T, url, id string, ttl time.Duration) *Node {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := Connect(Config{URL: url, NodeID: id, Replicas: 3, LeaseTTL: ttl, Timeout: 5 * time.Second})
		if err == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: %v", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		if fi.Mode()&os.ModeSocket != 0 {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(f, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

var quiet = ucl.Options{Warn: func(string) {}}

func status(t *testing.T, api ucl.API) *ucl.StatusResult {
	t.Helper()
	st, err := api.Status(context.Background(), ucl.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Three JetStream servers, three nodes, one store: acked appends are in the
// stream, any node reaches the owner, a stale writer is refused, a node cut
// off from NATS refuses writes, and when the owner dies another node takes
// the lease and serves the store with every acknowledged event.
func TestClusterTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three JetStream servers")
	}
	ctx := context.Background()
	srvs := startCluster(t)
	const ttl = 2 * time.Second
	nodes := []*Node{connect(t, srvs[0].ClientURL(), "a", ttl), connect(t, srvs[1].ClientURL(), "b", ttl),
		connect(t, srvs[2].ClientURL(), "c", ttl)}
	defer nodes[1].Close()
	defer nodes[2].Close()

	// The store's identity on every node; its log travels by the stream.
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a", "alice"), filepath.Join(root, "b", "alice"), filepath.Join(root, "c", "alice")}
	s, err := ucl.Init(dirs[0], ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	logID := status(t, s).LogID
	s.Close()
	copyDir(t, dirs[0], dirs[1])
	copyDir(t, dirs[0], dirs[2])

	oa, err := nodes[0].Own(ctx, "alice", dirs[0], quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].Own(ctx, "alice", dirs[1], quiet); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("a second owner: %v, want ErrLeaseHeld", err)
	}
	for i := 0; i < 10; i++ {
		if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: fmt.Sprintf("acked fact number %d about kiwis", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Through other nodes: forwarded to the owner over request/reply.
	if _, err := nodes[1].Client("alice").Remember(ctx, ucl.RememberRequest{Content: "forwarded fact about kiwis"}); err != nil {
		t.Fatal(err)
	}
	st := status(t, nodes[2].Client("alice"))
	if st.HeadSeq != 11 {
		t.Fatalf("head seen through node c: %d, want 11", st.HeadSeq)
	}
	last, err := nodes[1].StreamHead(logID)
	if err != nil || last != st.HeadSeq {
		t.Fatalf("stream head %d (%v), log head %d", last, err, st.HeadSeq)
	}
	raw, err := nodes[1].StreamRaw(logID, last)
	if err != nil {
		t.Fatal(err)
	}
	if h := log.HashRaw(raw); h.String() != st.HeadHash {
		t.Fatalf("the stream's last event is not the log's head")
	}

	// A second writer that believes the stream ends one event earlier is
	// refused; the chain stays as it was. (The same event again is an
	// earlier try whose ack was lost, and succeeds.)
	if err := nodes[1].Publish(logID, last, [][]byte{raw}); err != nil {
		t.Fatalf("republishing the stream's own last event: %v", err)
	}
	other, err := nodes[1].StreamRaw(logID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Publish(logID, last, [][]byte{other}); err == nil || !strings.Contains(err.Error(), "wrong last sequence") {
		t.Fatalf("a stale publish: %v, want wrong last sequence", err)
	}
	if l2, _ := nodes[1].StreamHead(logID); l2 != last {
		t.Fatalf("stream head moved to %d after a refused publish", l2)
	}

	// Cut off from NATS: the owner refuses the write rather than keep it
	// alone (it stays in its WAL, unacknowledged).
	nodes[0].Close()
	_, err = oa.Store.Remember(ctx, ucl.RememberRequest{Content: "never acknowledged"})
	if !errors.Is(err, log.ErrNotReplicated) || ucl.ClassOf(err) != ucl.ClassUnavailable {
		t.Fatalf("a write cut off from NATS: %v (class %s), want ErrNotReplicated, unavailable", err, ucl.ClassOf(err))
	}
	oa.Abandon()
	srvs[0].Shutdown()

	// Node b takes over once the lease expires.
	ob, took := takeOver(t, nodes[1], "alice", dirs[1])
	t.Logf("takeover after %s (lease TTL %s); reconcile and open took %s, imported %d events", took, ttl, ob.Took, ob.Imported)
	if ob.Imported != 11 {
		t.Fatalf("imported %d events, want 11", ob.Imported)
	}
	st2 := status(t, nodes[2].Client("alice"))
	if st2.HeadSeq != 11 || st2.HeadHash != st.HeadHash {
		t.Fatalf("after takeover head %d %s, want 11 %s", st2.HeadSeq, st2.HeadHash, st.HeadHash)
	}
	res, err := nodes[2].Client("alice").Search(ctx, ucl.SearchRequest{Text: "kiwis", K: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 11 {
		t.Fatalf("after takeover a search finds %d items, want 11", len(res.Results))
	}
	// The new owner appends on the same chain.
	if _, err := nodes[2].Client("alice").Remember(ctx, ucl.RememberRequest{Content: "after takeover"}); err != nil {
		t.Fatal(err)
	}
	if l3, _ := nodes[2].StreamHead(logID); l3 != 12 {
		t.Fatalf("stream head after takeover append %d, want 12", l3)
	}
	// Node a's local log holds event 12 "never acknowledged", which the
	// stream now holds differently: taking the store again cuts that tail
	// (kept aside) and follows the stream, never forking it.
	na := connect(t, srvs[2].ClientURL(), "a", ttl)
	defer na.Close()
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	// (A lease node b could not give back, e.g. after a slow renewal,
	// expires within the TTL.)
	var oa2 *Owned
	for t1 := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		oa2, err = na.Own(ctx, "alice", dirs[0], quiet)
		if !errors.Is(err, ErrLeaseHeld) || time.Since(t1) > 60*time.Second {
			break
		}
	}
	if err != nil {
		t.Fatalf("the old owner with an unacknowledged tail: %v", err)
	}
	defer oa2.Close()
	if oa2.Cut == nil || oa2.Cut.FromSeq != 12 || oa2.Cut.ToSeq != 12 || oa2.Imported != 1 || len(oa2.Cut.SavedTo) != 1 {
		t.Fatalf("the old owner's takeover: cut %+v, imported %d; want seq 12 cut and 1 imported", oa2.Cut, oa2.Imported)
	}
	if _, err := os.Stat(oa2.Cut.SavedTo[0]); err != nil || !strings.HasPrefix(oa2.Cut.SavedTo[0], filepath.Join(dirs[0], CutDir)) {
		t.Fatalf("the cut event is not kept in %s: %v", filepath.Join(dirs[0], CutDir), oa2.Cut.SavedTo)
	}
	st3 := status(t, oa2.Store)
	raw12, err := na.StreamRaw(logID, 12)
	if err != nil {
		t.Fatal(err)
	}
	if h := log.HashRaw(raw12); st3.HeadSeq != 12 || st3.HeadHash != h.String() {
		t.Fatalf("after the cut the old owner's head is %d %s, want the stream's 12", st3.HeadSeq, st3.HeadHash)
	}
	res, err = oa2.Store.Search(ctx, ucl.SearchRequest{Text: "never acknowledged", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		if strings.Contains(r.Content, "never acknowledged") {
			t.Fatalf("the cut event is still searchable: %+v", r)
		}
	}
	if _, err := oa2.Store.Remember(ctx, ucl.RememberRequest{Content: "back on the one chain"}); err != nil {
		t.Fatal(err)
	}
}
