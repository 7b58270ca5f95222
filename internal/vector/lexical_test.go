package vector

import "testing"

// TestLexical: the hash embedder is lexical, through a cache too; a
// learned model (static, HTTP) is not.
func TestLexical(t *testing.T) {
	h, err := NewHashEmbedder(0)
	if err != nil {
		t.Fatal(err)
	}
	st := safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)})
	s, err := LoadStatic(writeModel(t, wpTokenizer, st, `{"normalize": true, "model_type": "model2vec"}`))
	if err != nil {
		t.Fatal(err)
	}
	ht, err := NewHTTPEmbedder(HTTPOptions{Protocol: ProtocolOllama, BaseURL: "http://127.0.0.1:1", Model: "m", Dim: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		e    Embedder
		want bool
	}{
		{"hash", h, true},
		{"cached hash", NewCachedEmbedder(h, NewMemCache()), true},
		{"static", s, false},
		{"cached static", NewCachedEmbedder(s, NewMemCache()), false},
		{"http", ht, false},
	} {
		if got := IsLexical(tc.e); got != tc.want {
			t.Errorf("%s: IsLexical = %v, want %v", tc.name, got, tc.want)
		}
	}
}
