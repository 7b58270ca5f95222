package arweave

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGenerateTestWallets rewrites testdata/wallet-*.json (test-only keys
// that hold nothing) when UCL_REGEN_WALLETS=1.
func TestGenerateTestWallets(t *testing.T) {
	if os.Getenv("UCL_REGEN_WALLETS") != "1" {
		t.Skip("set UCL_REGEN_WALLETS=1 to regenerate testdata wallets")
	}
	for _, name := range []string{"wallet-a.json", "wallet-b.json"} {
		_, b, err := GenerateWallet()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
