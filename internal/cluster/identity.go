package cluster

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/internal/store"
)

// IdentityBucket is the KV bucket of the stores' identities (package doc).
const IdentityBucket = "ucl-stores"

// identityFiles are the files of a store's directory that make its
// identity; everything else (the log, projections) comes from the stream.
// token.sha256 is package tenant's.
var identityFiles = []string{store.MetaFile, store.VaultFile, store.WalletFile, "token.sha256"}

// identityAAD binds a sealed identity to its store name.
func identityAAD(name string) []byte { return []byte("ucl-store-identity-v1\x00" + name) }

var (
	// ErrNoIdentity is returned by FetchIdentity and FetchStore when the
	// cluster holds no store for the token or name.
	ErrNoIdentity = errors.New("cluster: no store with that token in the cluster")
	// ErrIdentityDiffers is returned by PublishIdentity when the cluster
	// already holds a different store under the name.
	ErrIdentityDiffers = errors.New("cluster: another store of that name is in the cluster")
	// ErrClusterKey is returned when a sealed identity does not open with
	// the cluster key (another cluster's key, or damaged), and by
	// LoadClusterKey for a malformed key file.
	ErrClusterKey = errors.New("cluster: the cluster key does not open the store's identity")
)

// LoadClusterKey reads a cluster key file: 64 hex digits (32 bytes), as
// `openssl rand -hex 32` writes.
func LoadClusterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the cluster key: %w", err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("%w: %s does not hold 64 hex digits", ErrClusterKey, path)
	}
	return k, nil
}

func (n *Node) identityKV() (nats.KeyValue, error) {
	kv, err := n.js.KeyValue(IdentityBucket)
	if errors.Is(err, nats.ErrBucketNotFound) {
		kv, err = n.js.CreateKeyValue(&nats.KeyValueConfig{Bucket: IdentityBucket, Replicas: n.cfg.Replicas,
			Storage: nats.FileStorage})
	}
	if err != nil {
		return nil, fmt.Errorf("open the identity bucket: %w", err)
	}
	return kv, nil
}

// PublishIdentity seals the identity files of store name (in dir) under
// the cluster key (AES-256-GCM, the name bound as associated data) into
// the identity bucket, with its token hash pointing at it, so that any
// node with the key can serve the store. Publishing the same identity
// again is a no-op; a different one under the same name is
// ErrIdentityDiffers.
func (n *Node) PublishIdentity(name, dir string, key []byte) error {
	files := map[string][]byte{}
	for _, f := range identityFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("publish the identity of %s: %w", name, err)
		}
		files[f] = b
	}
	kv := n.ids
	if e, err := kv.Get("store." + name); err == nil {
		old, err := openIdentity(name, e.Value(), key)
		if err != nil {
			return fmt.Errorf("publish the identity of %s: %w", name, err)
		}
		for _, f := range identityFiles {
			if !bytes.Equal(old[f], files[f]) {
				return fmt.Errorf("publish the identity of %s: %w (%s differs)", name, ErrIdentityDiffers, f)
			}
		}
	} else if !errors.Is(err, nats.ErrKeyNotFound) {
		return fmt.Errorf("publish the identity of %s: %w", name, err)
	} else {
		sealed, err := sealIdentity(name, files, key)
		if err != nil {
			return err
		}
		if _, err := kv.Create("store."+name, sealed); err != nil {
			return fmt.Errorf("publish the identity of %s: %w", name, err)
		}
	}
	hash := strings.TrimSpace(string(files["token.sha256"]))
	if _, err := kv.Put("token."+hash, []byte(name)); err != nil {
		return fmt.Errorf("publish the token of %s: %w", name, err)
	}
	return nil
}

// FetchIdentity finds the store whose token hashes to tokenHash in the
// identity bucket and writes its identity files to storesDir/NAME (made
// whole in a staging directory, then renamed into place); it returns the
// name. A store already in storesDir is left as it is.
func (n *Node) FetchIdentity(tokenHash, storesDir string, key []byte) (string, error) {
	if _, err := hex.DecodeString(tokenHash); err != nil || len(tokenHash) != 64 {
		return "", fmt.Errorf("fetch a store identity: %w", ErrNoIdentity)
	}
	kv := n.ids
	e, err := kv.Get("token." + tokenHash)
	if errors.Is(err, nats.ErrKeyNotFound) {
		return "", fmt.Errorf("fetch a store identity: %w", ErrNoIdentity)
	}
	if err != nil {
		return "", fmt.Errorf("fetch a store identity: %w", err)
	}
	name := string(e.Value())
	return name, n.fetch(name, tokenHash, storesDir, key)
}

// FetchStore writes the identity files of store name from the identity
// bucket to storesDir/name, as FetchIdentity does: a node taking over a
// store whose owner stopped, without a request naming its token. A store
// already in storesDir is left as it is; ErrNoIdentity when the cluster
// holds no store of that name.
func (n *Node) FetchStore(name, storesDir string, key []byte) error {
	return n.fetch(name, "", storesDir, key)
}

// fetch writes store name's identity files; tokenHash, when not "", must
// be the token hash inside.
func (n *Node) fetch(name, tokenHash, storesDir string, key []byte) error {
	if strings.ContainsAny(name, "/\\.") || name == "" {
		return fmt.Errorf("fetch a store identity: bad store name %q", name)
	}
	final := filepath.Join(storesDir, name)
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	se, err := n.ids.Get("store." + name)
	if errors.Is(err, nats.ErrKeyNotFound) {
		return fmt.Errorf("fetch the identity of %s: %w", name, ErrNoIdentity)
	}
	if err != nil {
		return fmt.Errorf("fetch the identity of %s: %w", name, err)
	}
	files, err := openIdentity(name, se.Value(), key)
	if err != nil {
		return fmt.Errorf("fetch the identity of %s: %w", name, err)
	}
	if tokenHash != "" && strings.TrimSpace(string(files["token.sha256"])) != tokenHash {
		return fmt.Errorf("fetch the identity of %s: its token hash is not the one asked for", name)
	}
	if err := fsutil.MkdirAllSync(storesDir, 0o700); err != nil {
		return fmt.Errorf("fetch the identity of %s: %w", name, err)
	}
	stage, err := os.MkdirTemp(storesDir, "."+name+".fetch-")
	if err != nil {
		return fmt.Errorf("fetch the identity of %s: %w", name, err)
	}
	defer os.RemoveAll(stage) // gone after the rename; a leftover otherwise
	for _, f := range identityFiles {
		if err := fsutil.WriteFileAtomic(filepath.Join(stage, f), files[f], 0o600); err != nil {
			return fmt.Errorf("fetch the identity of %s: %w", name, err)
		}
	}
	if err := os.Rename(stage, final); err != nil {
		return fmt.Errorf("fetch the identity of %s: %w", name, err)
	}
	if err := fsutil.SyncDir(storesDir); err != nil {
		return fmt.Errorf("fetch the identity of %s: %w", name, err)
	}
	return nil
}

func sealIdentity(name string, files map[string][]byte, key []byte) ([]byte, error) {
	plain, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	g, err := identityAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal the identity of %s: %w", name, err)
	}
	return g.Seal(nonce, nonce, plain, identityAAD(name)), nil
}

func openIdentity(name string, sealed, key []byte) (map[string][]byte, error) {
	g, err := identityAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < g.NonceSize() {
		return nil, ErrClusterKey
	}
	plain, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], identityAAD(name))
	if err != nil {
		return nil, ErrClusterKey
	}
	var files map[string][]byte
	if err := json.Unmarshal(plain, &files); err != nil {
		return nil, fmt.Errorf("identity of %s: %w", name, err)
	}
	for _, f := range identityFiles {
		if len(files[f]) == 0 {
			return nil, fmt.Errorf("identity of %s: %s is missing", name, f)
		}
	}
	return files, nil
}

func identityAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: want 32 bytes", ErrClusterKey)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
