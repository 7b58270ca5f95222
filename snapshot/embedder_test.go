package snapshot

import (
	"errors"
	"strings"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// modelEmbedder is a hash embedder that claims to load model files: it
// reports a model hash, as the static embedder does.
type modelEmbedder struct {
	*vector.HashEmbedder
	model [32]byte
}

func (m modelEmbedder) Name() string        { return "model-test-v1/384" }
func (m modelEmbedder) ModelHash() [32]byte { return m.model }

// TestManifestRecordsEmbedder: Create writes the embedder's name and model
// hash into the manifest; Restore with another model (same name) refuses
// with ErrEmbedder, naming both, and changes nothing; with the same one it
// restores.
func TestManifestRecordsEmbedder(t *testing.T) {
	h, err := vector.NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	te := newTestEnv(t, 11, 60)
	if in, err := Create(ctx, te.Env, CreateOptions{}); err != nil {
		t.Fatal(err)
	} else if e := in.Manifest.Embedder; e == nil || e.Name != "hash-v1/384" || e.ModelHash != "" {
		t.Fatalf("default embedder recorded as %+v", e)
	}

	te = newTestEnv(t, 12, 60)
	te.Set.Vectors.Embedder = modelEmbedder{h, [32]byte{1, 2, 3}}
	in, err := Create(ctx, te.Env, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := in.Manifest.Embedder; e == nil || e.Name != "model-test-v1/384" || e.ModelHash != "0102030000000000000000000000000000000000000000000000000000000000" {
		t.Fatalf("embedder recorded as %+v", e)
	}
	m, err := ReadManifest(in.Dir)
	if err != nil || m.Embedder == nil || *m.Embedder != *in.Manifest.Embedder {
		t.Fatalf("manifest on disk: %+v, %v", m, err)
	}

	other := te.Env
	other.Set.Vectors.Embedder = modelEmbedder{h, [32]byte{9}}
	before := liveDigests(t, other)
	_, err = Restore(ctx, other, RestoreOptions{Name: in.Manifest.Name})
	if !errors.Is(err, ErrEmbedder) {
		t.Fatalf("restore with another model: %v", err)
	}
	for _, want := range []string{`"model-test-v1/384" (model 0102030000000000)`, `(model 0900000000000000)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	t.Logf("refused: %v", err)
	if got := liveDigests(t, other); !sameDigests(got, before) {
		t.Fatalf("a refused restore changed the projections")
	}
	if _, err := Restore(ctx, te.Env, RestoreOptions{Name: in.Manifest.Name}); err != nil {
		t.Fatalf("restore with the same model: %v", err)
	}
}
