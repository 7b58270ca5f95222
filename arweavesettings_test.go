package ucl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRememberedArweave(t *testing.T) {
	dir := t.TempDir()
	if got := RememberedArweave(dir); got != (ArweaveSettings{}) {
		t.Fatalf("nothing remembered yet: %+v", got)
	}
	want := ArweaveSettings{Gateway: "http://127.0.0.1:1984,graphql=http://127.0.0.1:1984/graphql", Bundler: "http://127.0.0.1:1985"}
	if err := rememberArweave(dir, want); err != nil {
		t.Fatal(err)
	}
	if got := RememberedArweave(dir); got != want {
		t.Fatalf("remembered %+v, want %+v", got, want)
	}
	// What does not parse is not remembered, and is no error.
	for _, bad := range []string{"{", `{"gateway":"ftp://x","bundler":"nope"}`, `{"gateway":"` + strings.Repeat("a", 70<<10) + `"}`} {
		if err := os.WriteFile(filepath.Join(dir, arweaveFile), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := RememberedArweave(dir); got != (ArweaveSettings{}) {
			t.Fatalf("%.40q: remembered %+v", bad, got)
		}
	}
}
