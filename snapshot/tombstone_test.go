package snapshot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/unlimitedcontext/ucl/log"
)

// TestTombstonedPlaintextCopiedIntoLaterSnapshots: the removed text stayed
// in free pages of the projection files and so was archived by every later
// snapshot. A snapshot taken after the tombstone, extracted, holds it in no
// file.
func TestTombstonedPlaintextCopiedIntoLaterSnapshots(t *testing.T) {
	const secret = "zanzibarquokka"
	te := newTestEnv(t, 3, 300)
	ctx := context.Background()
	if _, err := te.l.AppendBatch(ctx, []log.Entry{{Time: 1, Body: &log.Store{ChunkID: "secret", Session: "s1", Role: "user", Kind: log.KindConversation, Time: 1, Content: "the " + secret + " notebook holds my pin"}}}); err != nil {
		t.Fatal(err)
	}
	extract := func(res *CreateResult) string {
		dir := t.TempDir()
		if err := decryptArchive(ctx, filepath.Join(res.Dir, ArchiveFile), res.Manifest, te.Keys, nil, func() string { return dir }); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	grep := func(dir string) []string {
		var hits []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
					hits = append(hits, p)
				}
			}
			return nil
		})
		return hits
	}
	first, err := Create(ctx, te.Env, CreateOptions{Keep: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(grep(extract(first))) == 0 {
		t.Fatal("fixture: the snapshot before the tombstone does not hold the secret")
	}
	if _, err := te.l.Append(ctx, log.Entry{Time: 2, Body: &log.Tombstone{Chunks: []string{"secret"}}}); err != nil {
		t.Fatal(err)
	}
	second, err := Create(ctx, te.Env, CreateOptions{Keep: -1})
	if err != nil {
		t.Fatal(err)
	}
	if hits := grep(extract(second)); len(hits) > 0 {
		t.Fatalf("snapshot after the tombstone holds the removed text in %v", hits)
	}
	if hits := grep(te.ProjDir); len(hits) > 0 {
		t.Fatalf("projections hold the removed text in %v", hits)
	}
}
