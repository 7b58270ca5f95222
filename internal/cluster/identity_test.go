package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unlimitedcontext/ucl"
)

// A store's identity published under the cluster key is fetched by its
// token hash into another node's empty stores directory, byte for byte;
// another key, another name's identity or an unknown token are refused.
func TestClusterIdentity(t *testing.T) {
	srv := startOne(t)
	n := connectCfg(t, Config{URL: srv.ClientURL(), NodeID: "a", Replicas: 1, LeaseTTL: 2 * time.Second, Timeout: 5 * time.Second})
	key := bytes.Repeat([]byte{7}, 32)
	src := filepath.Join(t.TempDir(), "alice")
	s, err := ucl.Init(src, ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	h := sha256.Sum256([]byte("alice.secret"))
	hash := hex.EncodeToString(h[:])
	if err := os.WriteFile(filepath.Join(src, "token.sha256"), []byte(hash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.PublishIdentity("alice", src, key); err != nil {
		t.Fatal(err)
	}
	if err := n.PublishIdentity("alice", src, key); err != nil {
		t.Fatalf("publishing the same identity again: %v", err)
	}
	if _, err := n.FetchIdentity(hash, t.TempDir(), bytes.Repeat([]byte{8}, 32)); !errors.Is(err, ErrClusterKey) {
		t.Fatalf("fetch with another key: %v, want ErrClusterKey", err)
	}
	zero := sha256.Sum256([]byte("nobody"))
	if _, err := n.FetchIdentity(hex.EncodeToString(zero[:]), t.TempDir(), key); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("fetch of an unknown token: %v, want ErrNoIdentity", err)
	}
	dst := t.TempDir()
	name, err := n.FetchIdentity(hash, dst, key)
	if err != nil || name != "alice" {
		t.Fatalf("fetch: %q %v", name, err)
	}
	for _, f := range identityFiles {
		a, _ := os.ReadFile(filepath.Join(src, f))
		b, err := os.ReadFile(filepath.Join(dst, "alice", f))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs after the fetch (%v)", f, err)
		}
		if fi, _ := os.Stat(filepath.Join(dst, "alice", f)); fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v", f, fi.Mode().Perm())
		}
	}
	// The fetched store opens with its own vault key.
	s2, err := ucl.Open(filepath.Join(dst, "alice"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	// By name (a node taking over a store whose owner stopped): the same
	// files; an unknown name is ErrNoIdentity, another key ErrClusterKey.
	byName := t.TempDir()
	if err := n.FetchStore("alice", byName, key); err != nil {
		t.Fatalf("fetch by name: %v", err)
	}
	for _, f := range identityFiles {
		a, _ := os.ReadFile(filepath.Join(src, f))
		if b, err := os.ReadFile(filepath.Join(byName, "alice", f)); err != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs after the fetch by name (%v)", f, err)
		}
	}
	if err := n.FetchStore("carol", t.TempDir(), key); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("fetch of an unknown name: %v, want ErrNoIdentity", err)
	}
	if err := n.FetchStore("alice", t.TempDir(), bytes.Repeat([]byte{8}, 32)); !errors.Is(err, ErrClusterKey) {
		t.Fatalf("fetch by name with another key: %v, want ErrClusterKey", err)
	}
	if err := n.FetchStore("../alice", t.TempDir(), key); err == nil {
		t.Fatal("a name with a path in it was fetched")
	}
	// A different store under the same name is refused, not overwritten.
	other := filepath.Join(t.TempDir(), "alice")
	s3, err := ucl.Init(other, ucl.InitOptions{Options: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s3.Close()
	os.WriteFile(filepath.Join(other, "token.sha256"), []byte(hash+"\n"), 0o600)
	if err := n.PublishIdentity("alice", other, key); !errors.Is(err, ErrIdentityDiffers) {
		t.Fatalf("another store named alice: %v, want ErrIdentityDiffers", err)
	}
	// A sealed identity moved under another name does not open.
	e, _ := n.ids.Get("store.alice")
	n.ids.Put("store.bob", e.Value())
	n.ids.Put("token."+strings.Repeat("ab", 32), []byte("bob"))
	if _, err := n.FetchIdentity(strings.Repeat("ab", 32), t.TempDir(), key); !errors.Is(err, ErrClusterKey) {
		t.Fatalf("alice's identity under bob's name: %v, want ErrClusterKey", err)
	}
}

// Whatever the bucket holds, opening it never panics, and only a value
// sealed under the key for the name opens.
func FuzzOpenIdentity(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	good, err := sealIdentity("alice", map[string][]byte{"ucl.json": []byte("{}"), "vault.key": []byte("k"),
		"wallet.json": []byte("{}"), "token.sha256": []byte("00")}, key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := openIdentity("alice", b, key)
		if err == nil && !bytes.Equal(b, good) {
			t.Fatalf("a value that is not the sealed one opened: %v", files)
		}
	})
}
