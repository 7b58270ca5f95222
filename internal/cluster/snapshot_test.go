package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/snapshot"
)

// startOne starts one JetStream server (streams with one replica): the
// object store and the stream behave as in a cluster, faster.
func startOne(t *testing.T) *serverT {
	t.Helper()
	s, err := StartEmbedded(EmbedConfig{Name: "solo", Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connectCfg(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Connect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// twoNodes starts one JetStream server and connects nodes a and b to it
// (lease TTL 2 s), and makes store alice: dirs[0] for a, an identical
// copy in dirs[1] for b.
func twoNodes(t *testing.T) (cfg Config, na, nb *Node, dirs []string, logID string) {
	t.Helper()
	srv := startOne(t)
	cfg = Config{URL: srv.ClientURL(), Replicas: 1, LeaseTTL: 2 * time.Second, Timeout: 5 * time.Second}
	ca, cb := cfg, cfg
	ca.NodeID, cb.NodeID = "a", "b"
	na, nb = connectCfg(t, ca), connectCfg(t, cb)
	root := t.TempDir()
	dirs = []string{filepath.Join(root, "a", "alice"), filepath.Join(root, "b", "alice")}
	s, err := ucl.Init(dirs[0], ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	logID = status(t, s).LogID
	s.Close()
	copyDir(t, dirs[0], dirs[1])
	return cfg, na, nb, dirs, logID
}

// takeOver has n own store name from dir as soon as the lease another
// node holds is gone (at most 60 s), and says after how long.
func takeOver(t *testing.T, n *Node, name, dir string) (*Owned, time.Duration) {
	t.Helper()
	t0 := time.Now()
	for {
		o, err := n.Own(context.Background(), name, dir, quiet)
		if err == nil {
			t.Cleanup(func() { o.Close() })
			return o, time.Since(t0)
		}
		if !errors.Is(err, ErrLeaseHeld) || time.Since(t0) > 60*time.Second {
			t.Fatalf("node %s taking %s over: %v", n.ID(), name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A node taking over a store it has nothing of imports the whole log from
// the stream and restores the projections from the newest snapshot the
// owner put in the object store, replaying only the events after it; a
// snapshot that does not match its manifest is refused and the
// projections are built from the log instead.
func TestClusterSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	srv := startOne(t)
	cfg := Config{URL: srv.ClientURL(), Replicas: 1, LeaseTTL: 2 * time.Second, Timeout: 5 * time.Second, SnapshotEvery: 20}
	ca, cb := cfg, cfg
	ca.NodeID, cb.NodeID = "a", "b"
	na, nb := connectCfg(t, ca), connectCfg(t, cb)

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

	// A snapshot that fails says why in the test's log.
	logged := ucl.Options{Warn: func(m string) { t.Log(m) }}
	oa, err := na.Own(ctx, "alice", dirs[0], logged)
	if err != nil {
		t.Fatal(err)
	}
	const events = 45
	for i := 0; i < events; i++ {
		if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: fmt.Sprintf("fact number %d about figs", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The owner snapshots every 20 events, in the background: wait
	// (bounded) for the one at or after seq 40.
	var snapSeq uint64
	for t0 := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if man, _, err := na.FetchSnapshot(logID); err == nil {
			m, err := snapshot.ParseManifest(man)
			if err != nil {
				t.Fatal(err)
			}
			if snapSeq = m.Seq; snapSeq >= 40 {
				break
			}
		}
		if time.Since(t0) > 60*time.Second {
			t.Fatalf("no snapshot at seq >= 40 in the object store (newest %d)", snapSeq)
		}
	}
	if err := oa.Close(); err != nil {
		t.Fatal(err)
	}
	// The snapshotter may have put a newer one meanwhile (Close waits for
	// it): the newest is the one a takeover uses.
	man, _, err := na.FetchSnapshot(logID)
	if err != nil {
		t.Fatal(err)
	}
	m0, err := snapshot.ParseManifest(man)
	if err != nil {
		t.Fatal(err)
	}
	snapSeq = m0.Seq

	ob, err := nb.Own(ctx, "alice", dirs[1], quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("takeover: %d events imported, snapshot %+v", ob.Imported, ob.Snapshot)
	if ob.Imported != events || !ob.Snapshot.Used || ob.Snapshot.Seq != snapSeq || ob.Snapshot.Replayed != events-snapSeq {
		t.Fatalf("takeover imported %d, snapshot %+v; want %d imported, snapshot at %d used, %d replayed",
			ob.Imported, ob.Snapshot, events, snapSeq, events-snapSeq)
	}
	res, err := ob.Store.Search(ctx, ucl.SearchRequest{Text: "figs", K: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != events {
		t.Fatalf("after the restore a search finds %d items, want %d", len(res.Results), events)
	}
	if _, err := ob.Store.Remember(ctx, ucl.RememberRequest{Content: "after the restore"}); err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}

	// An archive that does not match its manifest: refused, and the
	// projections come from the log.
	man, _, err = nb.FetchSnapshot(logID)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := snapshot.ParseManifest(man)
	if _, err := nb.obs.PutBytes(archiveObject(logID, m.Name), []byte("not the archive")); err != nil {
		t.Fatal(err)
	}
	cc := cfg
	cc.NodeID = "c"
	nc := connectCfg(t, cc)
	oc, err := nc.Own(ctx, "alice", dirs[2], quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if oc.Imported != events+1 || oc.Snapshot.Used || !strings.Contains(oc.Snapshot.Reason, "does not match") {
		t.Fatalf("with a bad archive: imported %d, snapshot %+v", oc.Imported, oc.Snapshot)
	}
	res, err = oc.Store.Search(ctx, ucl.SearchRequest{Text: "figs", K: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != events {
		t.Fatalf("without the snapshot a search finds %d items, want %d", len(res.Results), events)
	}
}

// An owner whose lease another node took stops being valid (so a server
// drops its copy and forwards instead of answering stale reads) and
// refuses appends.
func TestClusterLeaseLostInvalid(t *testing.T) {
	ctx := context.Background()
	_, na, nb, dirs, _ := twoNodes(t)
	oa, err := na.Own(ctx, "alice", dirs[0], quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: "first"}); err != nil {
		t.Fatal(err)
	}
	if !oa.Valid() {
		t.Fatal("a fresh owner is not valid")
	}
	// The lease taken from under a (as after a pause longer than the TTL).
	if err := nb.kv.Delete("alice"); err != nil {
		t.Fatal(err)
	}
	ob, err := nb.Own(ctx, "alice", dirs[1], quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	for t0 := time.Now(); oa.Valid(); time.Sleep(20 * time.Millisecond) {
		if time.Since(t0) > 30*time.Second {
			t.Fatal("the old owner is still valid after another node took its lease")
		}
	}
	if _, err := oa.Store.Remember(ctx, ucl.RememberRequest{Content: "stale"}); !errors.Is(err, log.ErrNotReplicated) {
		t.Fatalf("an append on the old owner: %v, want ErrNotReplicated", err)
	}
	if _, err := ob.Store.Remember(ctx, ucl.RememberRequest{Content: "second"}); err != nil {
		t.Fatal(err)
	}
}

// A snapshot the object store refuses is tried again, without waiting for
// more appends: the replicate hook signals only while events arrive, and a
// store that goes quiet after a failed snapshot must still get one.
func TestClusterSnapshotRetried(t *testing.T) {
	ctx := context.Background()
	srv := startOne(t)
	cfg := Config{URL: srv.ClientURL(), Replicas: 1, LeaseTTL: 2 * time.Second, Timeout: 5 * time.Second,
		SnapshotEvery: 5, NodeID: "a"}
	n := connectCfg(t, cfg)
	// The bucket's stream refuses anything larger than 64 bytes.
	stream := "OBJ_" + SnapshotsBucket
	si, err := n.js.StreamInfo(stream)
	if err != nil {
		t.Fatal(err)
	}
	sc := si.Config
	sc.MaxBytes = 64
	if _, err := n.js.UpdateStream(&sc); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "alice")
	s, err := ucl.Init(dir, ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	logID := status(t, s).LogID
	s.Close()
	warned := make(chan string, 16)
	o, err := n.Own(ctx, "alice", dir, ucl.Options{Warn: func(m string) {
		select {
		case warned <- m:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// Exactly SnapshotEvery events: the hook signals once, at the last.
	for i := 0; i < 5; i++ {
		if _, err := o.Store.Remember(ctx, ucl.RememberRequest{Content: fmt.Sprintf("fact %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-warned:
		if !strings.Contains(m, "snapshot for the cluster") {
			t.Fatalf("warned %q", m)
		}
		t.Logf("warned: %s", m)
	case <-time.After(60 * time.Second):
		t.Fatal("no warning of a failed snapshot")
	}
	if _, _, err := n.FetchSnapshot(logID); err == nil {
		t.Fatal("a snapshot is in a bucket that refuses it")
	}
	// The bucket takes snapshots again; nothing more is appended.
	sc.MaxBytes = -1
	if _, err := n.js.UpdateStream(&sc); err != nil {
		t.Fatal(err)
	}
	for t0 := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		man, _, err := n.FetchSnapshot(logID)
		if err == nil {
			m, err := snapshot.ParseManifest(man)
			if err != nil {
				t.Fatal(err)
			}
			if m.Seq != 5 {
				t.Fatalf("snapshot at seq %d, want 5", m.Seq)
			}
			break
		}
		if time.Since(t0) > 60*time.Second {
			t.Fatalf("no snapshot 60 s after the bucket took them again: %v", err)
		}
	}
}
