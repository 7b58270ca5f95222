package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zalando/go-keyring"
)

// The OS keyring as a source of a sealed vault key's passphrase: the
// Secret Service over the D-Bus session bus on Linux (GNOME Keyring,
// KWallet), the Keychain on macOS, the Credential Manager on Windows
// (github.com/zalando/go-keyring, pure Go). `ucl keys seal --keyring`
// stores the passphrase there under service "ucl" and the store's
// absolute directory; `ucl keys unseal` removes it. Opening a sealed
// store takes UCL_PASSPHRASE first, then the keyring, then the terminal.
// Where no keyring is reachable (no session bus: servers, containers,
// CI) it is skipped silently, and UCL_NO_KEYRING=1 skips it always.
const (
	keyringService = "ucl"
	noKeyringEnv   = "UCL_NO_KEYRING"
)

// keyringTimeout bounds one keyring call: a session bus that accepts the
// connection but never answers (or a keyring waiting to be unlocked by a
// user who is not there) must not hang a command.
var keyringTimeout = 5 * time.Second

// errKeyringTimeout is returned when the keyring did not answer in time.
var errKeyringTimeout = errors.New("the OS keyring did not answer in time")

// keyringUser is the account a store's passphrase is kept under: its
// directory, absolute and cleaned, so each store has its own.
func keyringUser(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return filepath.Clean(abs)
	}
	return filepath.Clean(dir)
}

// keyringCall runs fn with keyringTimeout (the call itself goes on in the
// background if it overruns; its answer is dropped).
func keyringCall[T any](fn func() (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		v, err := fn()
		ch <- answer{v, err}
	}()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-time.After(keyringTimeout):
		var zero T
		return zero, errKeyringTimeout
	}
}

// keyringGet returns the passphrase kept for the store in dir, and
// whether there was one. Any failure (no keyring reachable, no entry,
// UCL_NO_KEYRING set) is "none": the caller falls back to the terminal.
func keyringGet(dir string) ([]byte, bool) {
	if os.Getenv(noKeyringEnv) != "" {
		return nil, false
	}
	p, err := keyringCall(func() (string, error) { return keyring.Get(keyringService, keyringUser(dir)) })
	if err != nil || p == "" {
		return nil, false
	}
	return []byte(p), true
}

// keyringSet keeps the passphrase of the store in dir in the OS keyring.
func keyringSet(dir string, pass []byte) error {
	if os.Getenv(noKeyringEnv) != "" {
		return fmt.Errorf("the OS keyring is off (%s is set)", noKeyringEnv)
	}
	_, err := keyringCall(func() (struct{}, error) {
		return struct{}{}, keyring.Set(keyringService, keyringUser(dir), string(pass))
	})
	if err != nil {
		return fmt.Errorf("keep the passphrase in the OS keyring: %w", err)
	}
	return nil
}

// keyringDelete removes the passphrase kept for the store in dir; none
// kept, or no keyring reachable, is not an error (there is nothing to
// remove that anything could read).
func keyringDelete(dir string) (removed bool) {
	if os.Getenv(noKeyringEnv) != "" {
		return false
	}
	_, err := keyringCall(func() (struct{}, error) {
		return struct{}{}, keyring.Delete(keyringService, keyringUser(dir))
	})
	return err == nil
}
