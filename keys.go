package ucl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/unlimitedcontext/ucl/crypto"
	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/log"
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
	return store.LoadKeys(dir, m, store.OpenOptions{Keys: o.Keys, VaultKeyPath: p})
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
