package projstd

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/unlimitedcontext/ucl/internal/vector"
	"github.com/unlimitedcontext/ucl/projections"
	"github.com/unlimitedcontext/ucl/projections/projtest"
)

// tinyStatic builds a 4-dimensional static model whose vocabulary is a few
// letters as WordPiece pieces; config differs between the two models.
func tinyStatic(t *testing.T, config string) *vector.StaticEmbedder {
	t.Helper()
	vocab := map[string]int{"[UNK]": 0}
	for i, c := range "abcdefghijklmnopqrstuvwxyz" {
		vocab[string(c)] = 1 + 2*i
		vocab["##"+string(c)] = 2 + 2*i
	}
	tok, err := json.Marshal(map[string]any{
		"normalizer":    map[string]any{"type": "Lowercase"},
		"pre_tokenizer": map[string]any{"type": "WhitespaceSplit"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "vocab": vocab},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := len(vocab)
	data := make([]byte, 4*4*rows)
	for i := 0; i < 4*rows; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(math.Sin(float64(i)))))
	}
	hdr, err := json.Marshal(map[string]any{"embeddings": map[string]any{"dtype": "F32", "shape": []int{rows, 4}, "data_offsets": []int{0, len(data)}}})
	if err != nil {
		t.Fatal(err)
	}
	st := append(binary.LittleEndian.AppendUint64(nil, uint64(len(hdr))), hdr...)
	e, err := vector.NewStatic(tok, append(st, data...), []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The embedder's name, which for a static model carries the model's hash,
// is part of the vector projection's digest.
func TestVectorDigestBindsEmbedder(t *testing.T) {
	evs := projtest.Events(3, 200)
	digest := func(e vector.Embedder) [32]byte {
		v, err := OpenVectors(t.TempDir(), VectorOptions{Embedder: e})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if e != nil && v.EmbedderName() != e.Name() {
			t.Errorf("EmbedderName %q, want %q", v.EmbedderName(), e.Name())
		}
		for _, ev := range evs {
			if err := v.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		last := evs[len(evs)-1]
		if err := v.Commit(projections.Checkpoint{Seq: last.Seq, Hash: last.Hash}); err != nil {
			t.Fatal(err)
		}
		d, err := v.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a1, a2 := digest(tinyStatic(t, `{"normalize": true}`)), digest(tinyStatic(t, `{"normalize": true}`))
	b := digest(tinyStatic(t, `{"normalize": true }`)) // same vectors, other bytes
	h := digest(nil)                                   // the default hash embedder
	if a1 != a2 {
		t.Error("same static model, different digests")
	}
	if a1 == b || a1 == h {
		t.Error("digest does not depend on the embedder's model")
	}
}
