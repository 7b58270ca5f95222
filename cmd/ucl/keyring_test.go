package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
)

// Issue 29 item 7: the passphrase of a sealed vault key comes from
// UCL_PASSPHRASE, the OS keyring where one is reachable, or a prompt;
// before, no keyring was consulted. This machine has no keyring service
// (no D-Bus session bus), so the keyring path runs against go-keyring's
// in-memory mock provider (keyring.MockInit), which stands in for the
// Secret Service / Keychain behind the same Get/Set/Delete calls; the
// unreachable path is tested with the mock failing every call, and with
// the real library in TestKeysSealKeyringUnreachable (test/), where the
// binary finds no session bus.
func TestSealedStoreOpensWithPassphraseFromKeyring(t *testing.T) {
	keyring.MockInit()
	t.Setenv(noKeyringEnv, "")
	dir := filepath.Join(t.TempDir(), "s")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	t.Setenv(passphraseEnv, "correct horse")
	out, errs, code := runCLI(t, dir, "", "keys", "seal", "--keyring")
	if code != 0 || !strings.Contains(out, "kept in the OS keyring") {
		t.Fatalf("seal --keyring: %d %s %s", code, out, errs)
	}
	if p, err := keyring.Get(keyringService, keyringUser(dir)); err != nil || p != "correct horse" {
		t.Fatalf("keyring entry: %q %v", p, err)
	}
	// No UCL_PASSPHRASE, no terminal asked: the keyring's passphrase opens
	// the store.
	t.Setenv(passphraseEnv, "")
	asked := false
	p, err := passphraseFor(dir, func(string) ([]byte, error) { asked = true; return nil, errNoPassphrase })()
	if err != nil || string(p) != "correct horse" || asked {
		t.Fatalf("passphrase source: %q %v (asked %v)", p, err, asked)
	}
	if out, errs, code := runCLI(t, dir, "", "status", "--json"); code != 0 {
		t.Fatalf("status of the sealed store with the keyring's passphrase: %d %s %s", code, out, errs)
	}
	// UCL_PASSPHRASE comes first.
	t.Setenv(passphraseEnv, "from env")
	if p, _ := passphraseFor(dir, nil)(); string(p) != "from env" {
		t.Fatalf("env not first: %q", p)
	}
	// Another store's passphrase is not this one's.
	t.Setenv(passphraseEnv, "")
	if _, err := passphraseFor(filepath.Join(t.TempDir(), "other"), func(string) ([]byte, error) { return nil, errNoPassphrase })(); !errors.Is(err, errNoPassphrase) {
		t.Fatalf("another store: %v", err)
	}
	// UCL_NO_KEYRING skips it.
	t.Setenv(noKeyringEnv, "1")
	if _, err := passphraseFor(dir, func(string) ([]byte, error) { return nil, errNoPassphrase })(); !errors.Is(err, errNoPassphrase) {
		t.Fatalf("%s=1: %v", noKeyringEnv, err)
	}
	t.Setenv(noKeyringEnv, "")
	// Unsealing removes the entry.
	out, errs, code = runCLI(t, dir, "", "keys", "unseal")
	if code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("unseal: %d %s %s", code, out, errs)
	}
	if _, err := keyring.Get(keyringService, keyringUser(dir)); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("entry after unseal: %v", err)
	}
}

// Where no keyring is reachable, sealing still seals (and says the
// passphrase was not kept) and opening falls back to UCL_PASSPHRASE or the
// terminal, silently.
func TestKeyringUnreachableFallsBack(t *testing.T) {
	keyring.MockInitWithError(errors.New("no session bus"))
	t.Setenv(noKeyringEnv, "")
	dir := filepath.Join(t.TempDir(), "s")
	if _, errs, code := runCLI(t, dir, "", "init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	t.Setenv(passphraseEnv, "pw")
	out, errs, code := runCLI(t, dir, "", "keys", "seal", "--keyring")
	if code != 0 || !strings.Contains(out, "sealed") || !strings.Contains(out, "not kept in the OS keyring") {
		t.Fatalf("seal --keyring without a keyring: %d %s %s", code, out, errs)
	}
	if out, errs, code := runCLI(t, dir, "", "status", "--json"); code != 0 || errs != "" {
		t.Fatalf("status with UCL_PASSPHRASE: %d %s %s", code, out, errs)
	}
	t.Setenv(passphraseEnv, "")
	asked := ""
	if _, err := passphraseFor(dir, func(msg string) ([]byte, error) { asked = msg; return nil, errNoPassphrase })(); !errors.Is(err, errNoPassphrase) || asked == "" {
		t.Fatalf("fallback to the terminal: %v (asked %q)", err, asked)
	}
}
