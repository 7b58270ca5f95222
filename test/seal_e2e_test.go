package test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealEnv runs ucl with the passphrase variables cleared, then env (the
// later value of a variable wins).
func sealEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return uclEnv(t, dir, append([]string{"UCL_PASSPHRASE=", "UCL_NEW_PASSPHRASE="}, env...), args...)
}

// TestSealedVaultKey: `ucl keys seal` leaves no key bytes in vault.key; a
// sealed store opens only with its passphrase (a clear error without it or
// with a wrong one, no terminal here); a key rotation keeps the file
// sealed; a passphrase change and `ucl keys unseal` work.
func TestSealedVaultKey(t *testing.T) {
	dir := newStore(t)
	must(t, dir, "", "store", "--session", "s", "the grey cat sleeps on the red sofa")
	keyFile := filepath.Join(dir, "vault.key")
	plain, _ := os.ReadFile(keyFile)
	pw := []string{"UCL_PASSPHRASE=correct horse battery"}

	if r := sealEnv(t, dir, nil, "keys", "seal"); r.code == 0 || !strings.Contains(r.err, "UCL_PASSPHRASE") {
		t.Fatalf("seal without a passphrase: %s", r)
	}
	if r := sealEnv(t, dir, pw, "keys", "seal", "--json"); r.code != 0 || !strings.Contains(r.out, `"sealed":true`) {
		t.Fatalf("seal: %s", r)
	}
	sealed, _ := os.ReadFile(keyFile)
	if !bytes.HasPrefix(sealed, []byte("UCLSEAL\x01")) || bytes.Contains(sealed, []byte(`"keys"`)) || bytes.Equal(sealed, plain) {
		t.Fatalf("vault.key is not sealed: %q", sealed)
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}

	r := sealEnv(t, dir, nil, "query", "cat")
	if r.code == 0 || !strings.Contains(r.err, "sealed") || !strings.Contains(r.err, "UCL_PASSPHRASE") {
		t.Fatalf("query without the passphrase: %s", r)
	}
	r = sealEnv(t, dir, []string{"UCL_PASSPHRASE=wrong"}, "query", "cat")
	if r.code == 0 || !strings.Contains(r.err, "wrong passphrase") {
		t.Fatalf("query with a wrong passphrase: %s", r)
	}
	if r := sealEnv(t, dir, pw, "query", "cat", "--json"); r.code != 0 || !strings.Contains(r.out, "grey cat") {
		t.Fatalf("query with the passphrase: %s", r)
	}

	// A rotation rewrites the key file: still sealed, same passphrase.
	if r := sealEnv(t, dir, pw, "keys", "rotate", "--yes"); r.code != 0 {
		t.Fatalf("rotate: %s", r)
	}
	after, _ := os.ReadFile(keyFile)
	if !bytes.HasPrefix(after, []byte("UCLSEAL\x01")) {
		t.Fatalf("rotation unsealed the key file: %q", after)
	}
	if r := sealEnv(t, dir, pw, "query", "cat", "--json"); r.code != 0 || !strings.Contains(r.out, "grey cat") {
		t.Fatalf("query after rotation: %s", r)
	}

	// Change the passphrase, then unseal.
	if r := sealEnv(t, dir, append(pw, "UCL_NEW_PASSPHRASE=second"), "keys", "seal"); r.code != 0 {
		t.Fatalf("change passphrase: %s", r)
	}
	if r := sealEnv(t, dir, pw, "status"); r.code == 0 {
		t.Fatalf("the old passphrase still opens: %s", r)
	}
	if r := sealEnv(t, dir, []string{"UCL_PASSPHRASE=second"}, "keys", "unseal", "--json"); r.code != 0 || !strings.Contains(r.out, `"sealed":false`) {
		t.Fatalf("unseal: %s", r)
	}
	if r := sealEnv(t, dir, nil, "query", "cat", "--json"); r.code != 0 || !strings.Contains(r.out, "grey cat") {
		t.Fatalf("query after unseal: %s", r)
	}
}

// TestKeysSealKeyringUnreachable: the binary with the real keyring library
// on a machine without one (no D-Bus session bus, as here and in CI):
// `ucl keys seal --keyring` seals and says the passphrase was not kept,
// a sealed store still opens with UCL_PASSPHRASE, and without it the error
// names the three sources. The keyring path itself is tested in cmd/ucl
// with go-keyring's mock provider (no keyring service here).
func TestKeysSealKeyringUnreachable(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		t.Skip("a D-Bus session bus is set: a real keyring may answer (this test is for machines without one)")
	}
	dir := newStore(t)
	must(t, dir, "", "store", "--session", "s", "the grey cat sleeps on the red sofa")
	pw := []string{"UCL_PASSPHRASE=correct horse battery", "UCL_NO_KEYRING="}
	r := sealEnv(t, dir, pw, "keys", "seal", "--keyring", "--json")
	if r.code != 0 || !strings.Contains(r.out, `"sealed":true`) || !strings.Contains(r.out, `"keyring":false`) || !strings.Contains(r.out, `"keyring_error"`) {
		t.Fatalf("seal --keyring without a keyring: %s", r)
	}
	if r := sealEnv(t, dir, pw, "query", "cat", "--json"); r.code != 0 || !strings.Contains(r.out, "grey cat") {
		t.Fatalf("query with UCL_PASSPHRASE: %s", r)
	}
	r = sealEnv(t, dir, []string{"UCL_NO_KEYRING="}, "query", "cat")
	if r.code == 0 || !strings.Contains(r.err, "UCL_PASSPHRASE") || !strings.Contains(r.err, "OS keyring") {
		t.Fatalf("query without a passphrase: %s", r)
	}
}
