package vector

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// stTensor is a tensor the tests write into a safetensors file.
type stTensor struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

func f32bytes(xs ...float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func i32bytes(xs ...int32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// f16bytes encodes small integers exactly as IEEE half floats.
func f16bytes(xs ...int) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		var h uint16
		if x < 0 {
			h, x = 0x8000, -x
		}
		if x != 0 {
			e := 0
			for (1 << (e + 1)) <= x {
				e++
			}
			h |= uint16(e+15)<<10 | uint16((x<<10>>e)&0x3ff)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

func safetensorsFile(ts ...stTensor) []byte {
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, t := range ts {
		hdr[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{len(data), len(data) + len(t.data)}}
		data = append(data, t.data...)
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		panic(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// The tiny WordPiece model: 11 tokens, dimension 2, row i = (i, 1).
const wpTokenizer = `{
  "version": "1.0",
  "added_tokens": [],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[PAD]": 0, "[UNK]": 1, "hello": 2, "world": 3, "##s": 4, "un": 5, "##believ": 6, "##able": 7, ",": 8, "!": 9, "cafe": 10}}
}`

func wpRows() []float32 {
	var rows []float32
	for i := 0; i < 11; i++ {
		rows = append(rows, float32(i), 1)
	}
	return rows
}

func writeModel(t *testing.T, tok string, st []byte, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	must := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must("tokenizer.json", []byte(tok))
	must("model.safetensors", st)
	if cfg != "" {
		must("config.json", []byte(cfg))
	}
	return dir
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

func TestStaticWordPiece(t *testing.T) {
	st := safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)})
	e, err := LoadStatic(writeModel(t, wpTokenizer, st, `{"normalize": true, "model_type": "model2vec"}`))
	if err != nil {
		t.Fatal(err)
	}
	// "Hello, WORLDS! Unbelievable café zzz" normalises to "hello, worlds!
	// unbelievable cafe zzz"; the BERT pre-tokenizer splits off the
	// punctuation; WordPiece gives hello | , | world ##s | ! | un ##believ
	// ##able | cafe | [UNK], and the unknown token is dropped.
	text := "Hello, WORLDS! Unbelievable café zzz"
	if got, want := e.tok.encode(text), []int{2, 8, 3, 4, 9, 5, 6, 7, 10, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("encode = %v, want %v", got, want)
	}
	if got, want := e.Tokenize(text), []int{2, 8, 3, 4, 9, 5, 6, 7, 10}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Tokenize = %v, want %v", got, want)
	}
	// Mean of rows (i,1) over those ids: ((2+8+3+4+9+5+6+7+10)/9, 1) =
	// (6, 1); L2-normalised: (6, 1)/√37.
	r := float32(math.Sqrt(37))
	if got := e.EmbedOne(text); !near(got, []float32{6 / r, 1 / r}) {
		t.Errorf("EmbedOne = %v, want (6,1)/√37", got)
	}
	// A word longer than the pieces allow, or only unknown words: zero.
	if got := e.EmbedOne("zzz qqq"); !near(got, []float32{0, 0}) {
		t.Errorf("unknown words: %v", got)
	}
	if e.Dim() != 2 || !strings.HasPrefix(e.Name(), "static-v1/") || !strings.HasSuffix(e.Name(), "/2") {
		t.Errorf("dim %d name %q", e.Dim(), e.Name())
	}
	vs, err := e.Embed(context.Background(), []string{"hello", "world"})
	if err != nil || len(vs) != 2 || !near(vs[0], []float32{2 / float32(math.Sqrt(5)), 1 / float32(math.Sqrt(5))}) {
		t.Errorf("Embed = %v, %v", vs, err)
	}
	// Same model, one byte changed in the config: another name.
	e2, err := LoadStatic(writeModel(t, wpTokenizer, st, `{"normalize": true, "model_type": "model2vex"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e2.Name() == e.Name() {
		t.Error("name does not depend on the model bytes")
	}
	// Without config.json, normalisation is on.
	e3, err := LoadStatic(writeModel(t, wpTokenizer, st, ""))
	if err != nil || !near(e3.EmbedOne(text), []float32{6 / r, 1 / r}) {
		t.Errorf("no config: %v", err)
	}
}

func TestStaticNoNormalizeWeightsMapping(t *testing.T) {
	// normalize false: the plain mean.
	st := safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)})
	e, err := NewStatic([]byte(wpTokenizer), st, []byte(`{"normalize": false}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.EmbedOne("hello world"); !near(got, []float32{2.5, 1}) {
		t.Errorf("mean of (2,1),(3,1) = %v, want (2.5,1)", got)
	}
	// Per-token weights (2 for "hello", 0 for "world"): (2·(2,1) + 0)/2.
	w := make([]float32, 11)
	for i := range w {
		w[i] = 1
	}
	w[2], w[3] = 2, 0
	st = safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)}, stTensor{"weights", "F32", []int{11}, f32bytes(w...)})
	if e, err = NewStatic([]byte(wpTokenizer), st, []byte(`{"normalize": false}`)); err != nil {
		t.Fatal(err)
	}
	if got := e.EmbedOne("hello world"); !near(got, []float32{2, 1}) {
		t.Errorf("weighted = %v, want (2,1)", got)
	}
	// A mapping onto 3 rows: every token id i uses row i%3 of
	// (0,0),(1,0),(0,1); hello=2 → (0,1), world=3 → (0,0).
	m := make([]int32, 11)
	for i := range m {
		m[i] = int32(i % 3)
	}
	st = safetensorsFile(stTensor{"embeddings", "F32", []int{3, 2}, f32bytes(0, 0, 1, 0, 0, 1)}, stTensor{"mapping", "I32", []int{11}, i32bytes(m...)})
	if e, err = NewStatic([]byte(wpTokenizer), st, []byte(`{"normalize": false}`)); err != nil {
		t.Fatal(err)
	}
	if got := e.EmbedOne("hello world"); !near(got, []float32{0, 0.5}) {
		t.Errorf("mapped = %v, want (0,0.5)", got)
	}
}

func TestStaticF16(t *testing.T) {
	for _, tc := range []struct {
		h    uint16
		want float32
	}{{0x3C00, 1}, {0xC000, -2}, {0x0001, 1.0 / (1 << 24)}, {0x3555, 0.333251953125}, {0x8000, float32(math.Copysign(0, -1))}, {0x7BFF, 65504}} {
		if got := f16to32(tc.h); got != tc.want || math.Signbit(float64(got)) != math.Signbit(float64(tc.want)) {
			t.Errorf("f16to32(%#04x) = %v, want %v", tc.h, got, tc.want)
		}
	}
	if !math.IsInf(float64(f16to32(0x7C00)), 1) || !math.IsNaN(float64(f16to32(0x7E00))) {
		t.Error("f16 inf/nan")
	}
	var rows []int
	for i := 0; i < 11; i++ {
		rows = append(rows, i, 1)
	}
	a, err := NewStatic([]byte(wpTokenizer), safetensorsFile(stTensor{"embeddings", "F16", []int{11, 2}, f16bytes(rows...)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewStatic([]byte(wpTokenizer), safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hello world", "Unbelievable!", "cafes, cafe"} {
		if x, y := a.EmbedOne(s), b.EmbedOne(s); !reflect.DeepEqual(x, y) {
			t.Errorf("%q: f16 %v != f32 %v", s, x, y)
		}
	}
}

const ugTokenizer = `{
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
  "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false, "vocab": [
    ["<unk>", 0], ["▁", -2], ["▁he", -1], ["llo", -1], ["▁hello", -1.5], ["h", -3], ["e", -3], ["l", -3], ["o", -3], ["▁world", -2]]}
}`

func TestStaticUnigram(t *testing.T) {
	var rows []float32
	for i := 0; i < 10; i++ {
		rows = append(rows, float32(i), 0, 1)
	}
	e, err := NewStatic([]byte(ugTokenizer), safetensorsFile(stTensor{"embeddings", "F32", []int{10, 3}, f32bytes(rows...)}), []byte(`{"normalize": false}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []int
	}{
		// "▁hello" scores -1.5 whole, -2 as ▁he+llo: Viterbi takes it whole.
		{"Hello World", []int{4, 9}},
		// "▁hex": ▁he (-1) + unknown x (min -3 - 10) beats ▁+h+e+x.
		{"hex", []int{2, 0}},
		{"  hello", []int{1, 4}}, // ▁▁hello: no ▁ prepended, split before each ▁
		{"", nil},
	} {
		if got := e.tok.encode(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	// Mean of rows 4 and 9: ((4+9)/2, 0, 1).
	if got := e.EmbedOne("Hello World"); !near(got, []float32{6.5, 0, 1}) {
		t.Errorf("EmbedOne = %v", got)
	}
	if got := e.EmbedOne("hex"); !near(got, []float32{2, 0, 1}) { // unk dropped
		t.Errorf("EmbedOne(hex) = %v", got)
	}
}

func TestStaticBadModels(t *testing.T) {
	good := safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)})
	hdrLen := binary.LittleEndian.Uint64(good)
	corrupt := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	nan := wpRows()
	nan[5] = float32(math.NaN())
	for _, tc := range []struct {
		name string
		tok  string
		st   []byte
		cfg  string
	}{
		{"short file", wpTokenizer, good[:5], ""},
		{"header past end", wpTokenizer, corrupt(func(b []byte) []byte { binary.LittleEndian.PutUint64(b, 1<<20); return b }), ""},
		{"header not json", wpTokenizer, corrupt(func(b []byte) []byte { b[8] = '['; return b }), ""},
		{"data truncated", wpTokenizer, good[:8+hdrLen+10], ""},
		{"no embeddings", wpTokenizer, safetensorsFile(stTensor{"other", "F32", []int{11, 2}, f32bytes(wpRows()...)}), ""},
		{"shape/size mismatch", wpTokenizer, safetensorsFile(stTensor{"embeddings", "F32", []int{11, 3}, f32bytes(wpRows()...)}), ""},
		{"1-d embeddings", wpTokenizer, safetensorsFile(stTensor{"embeddings", "F32", []int{22}, f32bytes(wpRows()...)}), ""},
		{"unsupported dtype", wpTokenizer, safetensorsFile(stTensor{"embeddings", "U8", []int{11, 2}, make([]byte, 22)}), ""},
		{"integer embeddings", wpTokenizer, safetensorsFile(stTensor{"embeddings", "I32", []int{11, 2}, make([]byte, 88)}), ""},
		{"NaN", wpTokenizer, safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(nan...)}), ""},
		{"too few rows", wpTokenizer, safetensorsFile(stTensor{"embeddings", "F32", []int{10, 2}, f32bytes(wpRows()[:20]...)}), ""},
		{"mapping out of range", wpTokenizer, safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)}, stTensor{"mapping", "I32", []int{1}, i32bytes(11)}), ""},
		{"bad config", wpTokenizer, good, `{"normalize": "yes"}`},
		{"tokenizer not json", `{`, good, ""},
		{"BPE model", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`, good, ""},
		{"no model", `{"normalizer": null}`, good, ""},
		{"regex replace", strings.Replace(wpTokenizer, `{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true}`, `{"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}`, 1), good, ""},
		{"unknown pre-tokenizer", strings.Replace(wpTokenizer, `"BertPreTokenizer"`, `"ByteLevel"`, 1), good, ""},
		{"unk not in vocab", strings.Replace(wpTokenizer, `"unk_token": "[UNK]"`, `"unk_token": "<unk>"`, 1), good, ""},
		{"unigram unk out of range", strings.Replace(ugTokenizer, `"unk_id": 0`, `"unk_id": 99`, 1), good, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadStatic(writeModel(t, tc.tok, tc.st, tc.cfg)); !errors.Is(err, ErrBadModel) {
				t.Errorf("got %v, want ErrBadModel", err)
			}
		})
	}
	// Missing files.
	dir := t.TempDir()
	if _, err := LoadStatic(dir); !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("empty dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(wpTokenizer), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadStatic(dir); !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("no weights: %v", err)
	}
}

// TestStaticDeterministic: the same model and text give bit-identical
// vectors, and Embed agrees with EmbedOne.
func TestStaticDeterministic(t *testing.T) {
	var rows []float32
	for i := 0; i < 11*8; i++ {
		rows = append(rows, float32(math.Sin(float64(i)*1.7)))
	}
	e, err := NewStatic([]byte(wpTokenizer), safetensorsFile(stTensor{"embeddings", "F32", []int{11, 8}, f32bytes(rows...)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"hello world", "Unbelievable cafes!", "hello, hello, world"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if !reflect.DeepEqual(vs[i], e.EmbedOne(s)) {
			t.Errorf("%q differs between Embed and EmbedOne", s)
		}
		var ss float64
		for _, x := range vs[i] {
			ss += float64(x) * float64(x)
		}
		if math.Abs(ss-1) > 1e-6 {
			t.Errorf("%q: norm² %v", s, ss)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, texts); err == nil {
		t.Error("cancelled context accepted")
	}
}

func FuzzStaticSafetensors(f *testing.F) {
	f.Add(safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)}))
	f.Add(safetensorsFile(stTensor{"embeddings", "F16", []int{11, 2}, f16bytes(make([]int, 22)...)}, stTensor{"weights", "F32", []int{11}, f32bytes(make([]float32, 11)...)}))
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := NewStatic([]byte(wpTokenizer), b, nil)
		if err != nil {
			if !errors.Is(err, ErrBadModel) {
				t.Fatalf("error %v is not ErrBadModel", err)
			}
			return
		}
		v := e.EmbedOne("hello, unbelievable worlds")
		if len(v) != e.Dim() {
			t.Fatalf("len %d dim %d", len(v), e.Dim())
		}
	})
}

func FuzzStaticTokenizer(f *testing.F) {
	st := safetensorsFile(stTensor{"embeddings", "F32", []int{11, 2}, f32bytes(wpRows()...)})
	f.Add(wpTokenizer, "Hello, WORLDS!")
	f.Add(ugTokenizer, "hex hello")
	f.Add(`{"model":{"type":"Unigram","vocab":[["a",0]]}}`, "aaa b")
	f.Fuzz(func(t *testing.T, tok, text string) {
		e, err := NewStatic([]byte(tok), st, nil)
		if err != nil {
			if !errors.Is(err, ErrBadModel) {
				t.Fatalf("error %v is not ErrBadModel", err)
			}
			return
		}
		for _, id := range e.Tokenize(text) {
			if id < 0 || id > e.tok.maxID {
				t.Fatalf("id %d outside the vocab", id)
			}
		}
		_ = fmt.Sprint(e.EmbedOne(text))
	})
}
