package projstd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

const secret = "zanzibarquokka"

// grepTree returns the files under dir whose raw bytes contain s.
func grepTree(t *testing.T, dir, s string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// secretLog returns a chain with a secret chunk among others, and the
// same chain followed by a tombstone of that chunk.
func secretLog(t *testing.T) (before, after []*log.Event) {
	t.Helper()
	var bodies []log.Body
	for i := 0; i < 300; i++ {
		content := fmt.Sprintf("turn %d about ordinary things like lunch and code", i)
		session := fmt.Sprintf("s%d", i%7)
		if i == 150 {
			// A session of its own: its summary quotes it, so the
			// text is on disk (no projection copies chunk content).
			content = "my bank pin is hidden in the " + secret + " notebook"
			session = "secret"
		}
		bodies = append(bodies, &log.Store{ChunkID: fmt.Sprintf("c%03d", i), Session: session, Role: "user", Kind: log.KindConversation, Content: content})
	}
	before, err := projtest.Chain(bodies...)
	if err != nil {
		t.Fatal(err)
	}
	after, err = projtest.Chain(append(bodies, &log.Tombstone{Chunks: []string{"c150"}, Reason: "user asked"})...)
	if err != nil {
		t.Fatal(err)
	}
	return before, after
}

// TestTombstonedPlaintextStaysOnDisk: after a tombstone the removed text
// stayed in bbolt free pages of timelines.db and summary.db (and in the
// bleve segments) and survived `project rebuild`. Now no file under the
// projections directory holds it, after the catch-up that applies the
// tombstone and after a rebuild.
func TestTombstonedPlaintextStaysOnDisk(t *testing.T) {
	before, after := secretLog(t)
	src := projtest.NewMemSource(before)
	dir := filepath.Join(t.TempDir(), "projections")
	s, err := Open(dir, src, Options{Vectors: VectorOptions{GraphEvery: 50}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if hits := grepTree(t, dir, secret); len(hits) == 0 {
		t.Fatal("fixture: the secret is not on disk before the tombstone")
	}
	src.Set(after)
	if err := s.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if hits := grepTree(t, dir, secret); len(hits) > 0 {
		t.Fatalf("tombstoned text still on disk after catch-up in %v", hits)
	}
	// A rebuild (reset of every projection, then replay) leaves nothing
	// either, before and after closing.
	if err := s.Projector.Rebuild(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if hits := grepTree(t, dir, secret); len(hits) > 0 {
		t.Fatalf("tombstoned text on disk after rebuild in %v", hits)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := grepTree(t, dir, secret); len(hits) > 0 {
		t.Fatalf("tombstoned text on disk after close in %v", hits)
	}
}
