package cluster

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
)

// The lease watcher names a store whose owner stopped renewing (Abandon:
// as a crash leaves it) once its lease has expired, and not a store whose
// owner gave its lease back.
func TestClusterWatchLeases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startOne(t)
	cfg := Config{URL: srv.ClientURL(), Replicas: 1, LeaseTTL: time.Second, Timeout: 5 * time.Second}
	ca, cb := cfg, cfg
	ca.NodeID, cb.NodeID = "a", "b"
	na, nb := connectCfg(t, ca), connectCfg(t, cb)
	root := t.TempDir()
	own := func(name string) *Owned {
		dir := filepath.Join(root, name)
		s, err := ucl.Init(dir, ucl.InitOptions{Options: quiet})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		o, err := na.Own(ctx, name, dir, quiet)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	bob, alice := own("bob"), own("alice")
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() { done <- nb.WatchLeases(ctx, func(name string) { got <- name }) }()
	if err := bob.Close(); err != nil { // gives its lease back
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := alice.Abandon(); err != nil { // keeps it until it expires
		t.Fatal(err)
	}
	select {
	case name := <-got:
		if name != "alice" {
			t.Fatalf("the watcher named %q first, want alice (bob's lease was given back)", name)
		}
		t.Logf("alice's stale lease noticed %s after its owner stopped (TTL %s)", time.Since(t0).Round(time.Millisecond), cfg.LeaseTTL)
	case <-time.After(60 * time.Second):
		t.Fatal("the watcher never named alice")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
