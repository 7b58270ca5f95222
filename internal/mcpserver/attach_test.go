package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl"
)

// Two long-lived front ends on one store: the first owns it, the second
// attaches; both see each other's writes; when the owner closes, the
// other takes over on its next call and keeps every acknowledged write.
func TestSharedOwnerAttachTakeover(t *testing.T) {
	// A short path: unix socket paths are limited to ~100 bytes.
	dir, err := os.MkdirTemp("", "uclmcp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dir = filepath.Join(dir, "s")
	st := initStore(t, dir)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := OpenShared(dir, ucl.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenShared(dir, ucl.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !(a.Owner() != nil) || (b.Owner() != nil) {
		t.Fatalf("owner: a %v, b %v", (a.Owner() != nil), (b.Owner() != nil))
	}
	if _, err := b.Remember(ctx, ucl.RememberRequest{Content: "written through the attached one", Session: "x", ChunkID: "c1"}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(ctx, ucl.GetRequest{IDs: []string{"c1"}})
	if err != nil || !got.Items[0].Found {
		t.Fatalf("owner does not see the attached write: %v %+v", err, got)
	}
	if _, err := a.Remember(ctx, ucl.RememberRequest{Content: "written by the owner", Session: "x", ChunkID: "c2"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The owner is gone: b's next call takes over.
	got, err = b.Get(ctx, ucl.GetRequest{IDs: []string{"c1", "c2"}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Items[0].Found || !got.Items[1].Found {
		t.Fatalf("after takeover: %+v", got.Items)
	}
	if !(b.Owner() != nil) {
		t.Fatal("b did not take over")
	}
	if _, err := os.Stat(ucl.SocketPath(dir)); err != nil {
		t.Fatalf("the new owner does not serve: %v", err)
	}
}
