package ucl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/rotate"
)

// ErrNoVaultKey is returned by LoadVaultKey when the store has no vault key
// and none was given.
var ErrNoVaultKey = errors.New("ucl: this store has no vault key")

// LoadVaultKey reads the vault key of the store in dir (o.Keys, o.VaultKeyPath
// or DIR/vault.key), checking it belongs to the store, without opening the
// log (it works on a damaged log and while another process owns the store).
// It returns (nil, nil) when the store has no vault key and none was given.
func LoadVaultKey(dir string, o Options) (*crypto.Keyring, error) {
	m, err := store.ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	p := o.VaultKeyPath
	if o.Keys == nil && p == "" {
		p = filepath.Join(dir, store.VaultFile)
		if _, err := os.Stat(p); os.IsNotExist(err) {
			return nil, nil
		}
	}
	return store.LoadKeys(dir, m, store.OpenOptions{Keys: o.Keys, VaultKeyPath: p, Passphrase: o.Passphrase})
}

var (
	// ErrSealed is returned when the vault key file is sealed with a
	// passphrase and Options.Passphrase gave none.
	ErrSealed = crypto.ErrSealed
	// ErrBadPassphrase is returned when the passphrase does not open the
	// sealed vault key file (or the file was changed).
	ErrBadPassphrase = crypto.ErrBadPassphrase
	// ErrOwnerRunning is returned by SealVaultKey and UnsealVaultKey while
	// a process serves the store: it holds the key in memory and would
	// write the file back in its old form at its next key rotation.
	ErrOwnerRunning = errors.New("ucl: a process serves this store")
)

// SealVaultKey rewrites DIR/vault.key sealed under passphrase (scrypt,
// crypto.DefaultScrypt; crypto/doc.go has the format), overwriting the
// old file's bytes. A sealed file is opened with o.Passphrase first and
// sealed again under the new passphrase (a passphrase change). From then
// on opening the store needs the passphrase.
func SealVaultKey(dir string, o Options, passphrase []byte) error {
	kr, err := ownKeyFile(dir, o)
	if err != nil {
		return err
	}
	if err := kr.SealWith(passphrase, crypto.DefaultScrypt); err != nil {
		return fmt.Errorf("seal vault key: %w", err)
	}
	return rotate.SaveKeys(kr, VaultKeyPath(dir))
}

// UnsealVaultKey rewrites a sealed DIR/vault.key as the plain key file
// (opened with o.Passphrase).
func UnsealVaultKey(dir string, o Options) error {
	kr, err := ownKeyFile(dir, o)
	if err != nil {
		return err
	}
	kr.Unseal()
	return rotate.SaveKeys(kr, VaultKeyPath(dir))
}

// ownKeyFile loads DIR/vault.key (not o.Keys or o.VaultKeyPath: sealing
// is about the store's own file) when no owner serves the store.
func ownKeyFile(dir string, o Options) (*crypto.Keyring, error) {
	if c, err := Dial(dir); err == nil {
		c.Close()
		return nil, fmt.Errorf("seal vault key: %w; stop it first", ErrOwnerRunning)
	}
	kr, err := LoadVaultKey(dir, Options{Passphrase: o.Passphrase})
	if err != nil {
		return nil, err
	}
	if kr == nil {
		return nil, fmt.Errorf("seal vault key: %w", ErrNoVaultKey)
	}
	return kr, nil
}

// ImportVaultKey installs kr as the vault key of the store in dir, after
// checking it belongs to the store.
func ImportVaultKey(dir string, kr *crypto.Keyring) error {
	m, err := store.ReadMeta(dir)
	if err != nil {
		return err
	}
	if _, err := store.LoadKeys(dir, m, store.OpenOptions{Keys: kr}); err != nil {
		return fmt.Errorf("import key: %w", err)
	}
	return kr.Save(filepath.Join(dir, store.VaultFile))
}

// VaultKeyPath returns where the store in dir keeps its vault key.
func VaultKeyPath(dir string) string { return filepath.Join(dir, store.VaultFile) }

// RepairLog is the explicit repair of a store's log that Open refuses
// (log.Repair): it cuts at the first damage, keeps every cut byte in the
// store's corrupt/ directory and reports what it cut (nil: nothing to do).
// It needs the store to itself.
func RepairLog(dir string) (*log.RepairReport, error) {
	rep, err := log.Repair(filepath.Join(dir, store.LogDir), filepath.Join(dir, "corrupt"))
	if err != nil {
		return rep, fmt.Errorf("repair log: %w", err)
	}
	return rep, nil
}
