package arlocaltest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestStartMineStop(t *testing.T) {
	g := Start(t)
	if err := g.Mint("Kiyn_D-QRJI0ulJCviI4NlYcdzWg2I1Q-ghyKFNpIQk", 1000); err != nil {
		t.Fatal(err)
	}
	if err := g.Mine(2); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(g.URL() + "/info")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	dir := g.dir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("db dir: %v", err)
	}
	g.Stop()
	g.Stop() // idempotent
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("db dir not removed: %v", err)
	}
	if _, err := http.Get(g.URL() + "/info"); err == nil {
		t.Fatal("arlocal still answers after Stop")
	}
}

func TestNotInstalled(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := StartProcess(context.Background(), Options{RepoRoot: root})
	if errors.Is(err, ErrNoNode) {
		t.Skip("node not installed")
	}
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}
