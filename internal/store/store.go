// Package store is the on-disk layout of one ucl store directory and the
// code that creates and opens it. The layout:
//
//	DIR/ucl.json      metadata: format version, log id, durability, key fingerprint, wallet address
//	DIR/vault.key     the vault keyring (mode 0600); absent on an auditor's copy
//	DIR/wallet.json   the Arweave wallet JWK (mode 0600)
//	DIR/log/          the event log (package log)
//	DIR/corrupt/      bytes cut from a torn log tail, kept for inspection
//	DIR/projections/  derived state, always rebuildable from the log
//	DIR/mirror.db     Arweave mirror state
//	DIR/snapshots/    local snapshots
//	DIR/rotate.journal  present only while a vault-key rotation runs (see the ucl package doc)
//
// The log id is random, made by Init, and names the log on Arweave
// (UC-Log-Id); a store rebuilt from Arweave keeps the id of its source.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/unlimitedcontext/ucl/arweave"
	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/fsutil"
	"github.com/unlimitedcontext/ucl/log"
)

// File and directory names inside a store.
const (
	MetaFile       = "ucl.json"
	VaultFile      = "vault.key"
	WalletFile     = "wallet.json"
	LogDir         = "log"
	ProjectionsDir = "projections"
	MirrorFile     = "mirror.db"
	SnapshotsDir   = "snapshots"
)

var (
	// ErrNotInitialized is returned when the directory holds no store.
	ErrNotInitialized = errors.New("store: not initialized")
	// ErrExists is returned by Init when the directory already holds a store.
	ErrExists = errors.New("store: already initialized")
	// ErrWrongVaultKey is returned when the vault key given does not belong
	// to the store.
	ErrWrongVaultKey = errors.New("store: vault key does not belong to this store")
	// ErrCorruptWallet is returned (by Store.Wallet) when the wallet file
	// exists but is not a readable wallet.
	ErrCorruptWallet = errors.New("store: wallet file is corrupt")
)

// Meta is ucl.json.
type Meta struct {
	Version        int    `json:"version"`
	LogID          string `json:"log_id"`
	Created        string `json:"created"`
	Durability     string `json:"durability"`
	KeyFingerprint string `json:"key_fingerprint"`
	WalletAddress  string `json:"wallet_address"`
}

// LogIDBytes returns the log id as 16 bytes.
func (m Meta) LogIDBytes() [16]byte {
	var id [16]byte
	b, _ := hex.DecodeString(m.LogID)
	copy(id[:], b)
	return id
}

// Store is an open store.
type Store struct {
	Dir  string
	Meta Meta
	Keys *crypto.Keyring // nil when opened without the vault key
	Log  *log.Log
	// Tidied lists the staging leftovers of an earlier crash that Open
	// removed (see Tidy); TidyErr is why some could not be removed.
	Tidied  []string
	TidyErr error

	// The wallet is loaded on first use (Wallet): parsing and checking
	// an RSA-4096 key costs ~10 ms of CPU, and most commands never sign.
	walletOnce sync.Once
	wallet     *arweave.Wallet
	walletErr  error
}

// Wallet returns the store's Arweave wallet, loading it on the first
// call: nil and a nil error when the store has no wallet file, an error
// wrapping ErrCorruptWallet when the file does not load.
func (s *Store) Wallet() (*arweave.Wallet, error) {
	s.walletOnce.Do(func() {
		switch w, err := arweave.LoadWallet(filepath.Join(s.Dir, WalletFile)); {
		case err == nil:
			s.wallet = w
		case !errors.Is(err, fs.ErrNotExist):
			s.walletErr = fmt.Errorf("%w: %v", ErrCorruptWallet, err)
		}
	})
	return s.wallet, s.walletErr
}

// InitOptions configure Init.
type InitOptions struct {
	Keys       *crypto.Keyring // nil: a new vault key
	Wallet     *arweave.Wallet // nil: a new wallet
	LogID      string          // "": a new random id (rebuild passes the source's)
	Durability log.Durability
}

// Init creates a store in dir (which may exist but must not hold a store).
func Init(dir string, o InitOptions) (*Store, error) {
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err == nil {
		return nil, fmt.Errorf("init %s: %w; use another --dir, or remove it if it is really unwanted", dir, ErrExists)
	}
	if err := fsutil.MkdirAllSync(dir, 0o700); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	var err error
	if o.Keys == nil {
		if o.Keys, err = crypto.NewKeyring(); err != nil {
			return nil, err
		}
	}
	if o.Wallet == nil {
		if o.Wallet, _, err = arweave.GenerateWallet(); err != nil {
			return nil, err
		}
	}
	if o.LogID == "" {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return nil, err
		}
		o.LogID = hex.EncodeToString(id[:])
	} else if b, err := hex.DecodeString(o.LogID); err != nil || len(b) != 16 {
		return nil, fmt.Errorf("init: bad log id %q", o.LogID)
	}
	if err := o.Keys.Save(filepath.Join(dir, VaultFile)); err != nil {
		return nil, fmt.Errorf("init: write vault key: %w", err)
	}
	jwk, err := o.Wallet.MarshalJWK()
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, WalletFile), jwk, 0o600); err != nil {
		return nil, fmt.Errorf("init: write wallet: %w", err)
	}
	m := Meta{Version: 1, LogID: o.LogID, Created: time.Now().UTC().Format(time.RFC3339),
		Durability: o.Durability.String(), KeyFingerprint: o.Keys.Fingerprint(), WalletAddress: o.Wallet.Address()}
	b, _ := json.MarshalIndent(m, "", "  ")
	// ucl.json is written last: its presence marks a complete store.
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, MetaFile), append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("init: write metadata: %w", err)
	}
	return Open(dir, OpenOptions{Keys: o.Keys})
}

// OpenOptions configure Open.
type OpenOptions struct {
	// Keys overrides DIR/vault.key (e.g. --vault-key).
	Keys *crypto.Keyring
	// VaultKeyPath overrides where the vault key is read from.
	VaultKeyPath string
	// NoKeys opens without the vault key: raw reads and verification only.
	NoKeys bool
	// Durability overrides the store's durability mode when non-nil.
	Durability *log.Durability
	// Passphrase, when set, is asked for the passphrase of a sealed key
	// file (only then); without it a sealed file is crypto.ErrSealed.
	Passphrase func() ([]byte, error)
	// Replicate is the log's replication hook (log.Options.Replicate).
	Replicate func(first uint64, raws [][]byte) error
}

// ReadMeta reads DIR/ucl.json.
func ReadMeta(dir string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("open %s: %w; run `ucl init` (or `ucl rebuild`) first, or pass --dir", dir, ErrNotInitialized)
	}
	if err != nil {
		return m, fmt.Errorf("read metadata: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", MetaFile, err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("open %s: store format version %d is not supported by this build", dir, m.Version)
	}
	return m, nil
}

// LoadKeys reads the vault key for a store, checking it belongs to it.
func LoadKeys(dir string, m Meta, o OpenOptions) (*crypto.Keyring, error) {
	kr := o.Keys
	if kr == nil {
		p := o.VaultKeyPath
		if p == "" {
			p = filepath.Join(dir, VaultFile)
		}
		var err error
		kr, err = crypto.LoadKeyring(p)
		if errors.Is(err, crypto.ErrSealed) && o.Passphrase != nil {
			pass, perr := o.Passphrase()
			if perr != nil {
				return nil, fmt.Errorf("open vault key %s: %w: %w", p, crypto.ErrSealed, perr)
			}
			kr, err = crypto.LoadKeyringPassphrase(p, pass)
			clear(pass)
		}
		if errors.Is(err, crypto.ErrSealed) || errors.Is(err, crypto.ErrBadPassphrase) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%w; pass the store's vault key with --vault-key FILE (or import it with `ucl keys import`)", err)
		}
	}
	if m.KeyFingerprint != "" && !HoldsFingerprint(kr, m.KeyFingerprint) {
		if e, ok := fingerprintEpoch(m.KeyFingerprint); ok && kr.Current() < e {
			return nil, fmt.Errorf("open %s: %w: the key given is of vault-key epoch %d, and a key rotation moved this store to epoch %d (keys exported before a rotation cannot open the store); nothing was written", dir, ErrWrongVaultKey, kr.Current(), e)
		}
		return nil, fmt.Errorf("open %s: %w (key %s, store expects %s); nothing was written", dir, ErrWrongVaultKey, kr.Fingerprint(), m.KeyFingerprint)
	}
	return kr, nil
}

// HoldsFingerprint reports whether kr holds the key of fingerprint fp. The
// store's metadata names its current key; while a key rotation is under
// way the keyring holds that key and one other epoch.
func HoldsFingerprint(kr *crypto.Keyring, fp string) bool {
	for _, f := range kr.Fingerprints() {
		if f == fp {
			return true
		}
	}
	return false
}

// fingerprintEpoch reads the epoch a fingerprint ("EPOCH:hex") names.
func fingerprintEpoch(fp string) (uint32, bool) {
	var e uint32
	if _, err := fmt.Sscanf(fp, "%d:", &e); err != nil {
		return 0, false
	}
	return e, true
}

// WriteMeta replaces DIR/ucl.json atomically.
func WriteMeta(dir string, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, MetaFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write metadata: %w", err)
	}
	return nil
}

// Open opens an initialized store and its log.
func Open(dir string, o OpenOptions) (*Store, error) {
	m, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{Dir: dir, Meta: m}
	if !o.NoKeys {
		if s.Keys, err = LoadKeys(dir, m, o); err != nil {
			return nil, err
		}
	}
	d, err := log.ParseDurability(m.Durability)
	if err != nil {
		d = log.Sync
	}
	if o.Durability != nil {
		d = *o.Durability
	}
	s.Log, err = log.Open(filepath.Join(dir, LogDir), log.Options{Keys: s.Keys, Durability: d,
		CorruptDir: filepath.Join(dir, "corrupt"), Replicate: o.Replicate})
	if err != nil {
		return nil, err
	}
	// The log's lock is held: no staging of this store is in use.
	s.Tidied, s.TidyErr = Tidy(dir)
	return s, nil
}

// VaultKeyFile is the path of the vault key file of the store in dir.
func VaultKeyFile(dir string) string { return filepath.Join(dir, VaultFile) }

// Close closes the log.
func (s *Store) Close() error { return s.Log.Close() }

// Path joins a name to the store directory.
func (s *Store) Path(name ...string) string {
	return filepath.Join(append([]string{s.Dir}, name...)...)
}
