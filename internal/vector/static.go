package vector

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// ErrBadModel is returned (wrapped) by LoadStatic when a model directory is
// missing a file, or a file is malformed or uses a feature this loader does
// not implement (the message names it).
var ErrBadModel = errors.New("vector: bad static model")

// Static model limits.
const (
	// StaticMaxTokens is how many tokens of a text are pooled (model2vec's
	// default max_length); the rest is ignored.
	StaticMaxTokens = 512
	// maxModelFile bounds what LoadStatic reads of one file.
	maxModelFile = 2 << 30
	// maxSafetensorsHeader bounds the JSON header of model.safetensors.
	maxSafetensorsHeader = 100 << 20
)

// StaticEmbedder embeds text with a static embedding model in the model2vec
// format ("static-v1"): a directory holding
//
//	tokenizer.json      a Hugging Face tokenizers file (WordPiece or Unigram model)
//	model.safetensors   tensor "embeddings" [vocab, dim] (F32, F16, BF16 or I8),
//	                    optional "weights" [vocab] (per-token scale) and
//	                    "mapping" [vocab] (token id → embedding row, I32/I64)
//	config.json         optional; {"normalize": bool}, default true
//
// A text is normalised and pre-tokenised as tokenizer.json says, split into
// token ids (no special tokens added), unknown tokens are dropped, the first
// StaticMaxTokens are kept, and the result is the mean of their embedding
// rows (each scaled by its weight when the model has weights), L2-normalised
// when the config says so. A text without known tokens embeds to the zero
// vector. This is what model2vec's StaticModel.encode computes.
//
// Supported tokenizer.json parts: normalizers BertNormalizer, Lowercase,
// Strip, StripAccents, NFC/NFKC/NFD/NFKD (see below), Replace (plain string
// pattern), Prepend and Sequence; pre-tokenizers BertPreTokenizer,
// Whitespace, WhitespaceSplit, Metaspace and Sequence; models WordPiece and
// Unigram. Anything else is an ErrBadModel, never a silent approximation,
// with two documented exceptions: Unicode normalisation forms are applied
// as identity (text is taken to be composed already) and accent stripping
// knows the Latin-1 and Latin Extended-A letters, since a pure-Go loader
// without golang.org/x/text has no Unicode decomposition tables.
//
// Determinism: pooling sums in float64 in token order with explicit
// rounding (no FMA), so vectors are bit-identical on every platform. Name is
// "static-v1/<first 16 hex digits of ModelHash>/<dim>", so the model's
// bytes enter the vector projection's digest: another model, or the same
// model changed by one byte, is another embedder.
type StaticEmbedder struct {
	dim       int
	rows      int
	emb       []float32 // rows × dim
	weights   []float32 // per token id, or nil
	mapping   []int64   // token id → row, or nil
	normalize bool
	tok       *hfTokenizer
	hash      [32]byte
}

// LoadStatic loads a model2vec model directory.
func LoadStatic(dir string) (*StaticEmbedder, error) {
	read := func(name string, optional bool) ([]byte, error) {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			if optional && errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			return nil, fmt.Errorf("load static model: %w: %v", ErrBadModel, err)
		}
		if fi.Size() > maxModelFile {
			return nil, fmt.Errorf("load static model: %w: %s is %d bytes", ErrBadModel, name, fi.Size())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("load static model: read %s: %w", name, err)
		}
		return b, nil
	}
	tj, err := read("tokenizer.json", false)
	if err != nil {
		return nil, err
	}
	st, err := read("model.safetensors", false)
	if err != nil {
		return nil, err
	}
	cj, err := read("config.json", true)
	if err != nil {
		return nil, err
	}
	return NewStatic(tj, st, cj)
}

// NewStatic builds a StaticEmbedder from the contents of tokenizer.json,
// model.safetensors and config.json (nil: defaults).
func NewStatic(tokenizerJSON, safetensors, configJSON []byte) (*StaticEmbedder, error) {
	s := &StaticEmbedder{normalize: true}
	h := sha256.New()
	for _, b := range [][]byte{tokenizerJSON, safetensors, configJSON} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	copy(s.hash[:], h.Sum(nil))
	if len(configJSON) > 0 {
		var cfg struct {
			Normalize *bool `json:"normalize"`
		}
		if err := json.Unmarshal(configJSON, &cfg); err != nil {
			return nil, fmt.Errorf("load static model: config.json: %w: %v", ErrBadModel, err)
		}
		if cfg.Normalize != nil {
			s.normalize = *cfg.Normalize
		}
	}
	ts, err := parseSafetensors(safetensors)
	if err != nil {
		return nil, err
	}
	e, ok := ts["embeddings"]
	if !ok {
		if e, ok = ts["0"]; !ok {
			return nil, fmt.Errorf("load static model: %w: no \"embeddings\" tensor in model.safetensors", ErrBadModel)
		}
	}
	if len(e.shape) != 2 || e.shape[0] <= 0 || e.shape[1] <= 0 || e.shape[1] > MaxDim {
		return nil, fmt.Errorf("load static model: %w: embeddings shape %v", ErrBadModel, e.shape)
	}
	s.rows, s.dim = int(e.shape[0]), int(e.shape[1])
	if s.emb, err = e.floats(); err != nil {
		return nil, err
	}
	for _, x := range s.emb {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("load static model: %w: embeddings hold NaN or Inf", ErrBadModel)
		}
	}
	if w, ok := ts["weights"]; ok {
		if len(w.shape) != 1 {
			return nil, fmt.Errorf("load static model: %w: weights shape %v", ErrBadModel, w.shape)
		}
		if s.weights, err = w.floats(); err != nil {
			return nil, err
		}
	}
	if m, ok := ts["mapping"]; ok {
		if len(m.shape) != 1 {
			return nil, fmt.Errorf("load static model: %w: mapping shape %v", ErrBadModel, m.shape)
		}
		if s.mapping, err = m.ints(); err != nil {
			return nil, err
		}
		for _, r := range s.mapping {
			if r < 0 || r >= int64(s.rows) {
				return nil, fmt.Errorf("load static model: %w: mapping row %d outside [0,%d)", ErrBadModel, r, s.rows)
			}
		}
	}
	if s.tok, err = parseTokenizer(tokenizerJSON); err != nil {
		return nil, err
	}
	// Every token id must have a row (directly or through the mapping).
	limit := s.rows
	if s.mapping != nil {
		limit = len(s.mapping)
	}
	if s.tok.maxID >= limit {
		return nil, fmt.Errorf("load static model: %w: tokenizer id %d but only %d embedding rows", ErrBadModel, s.tok.maxID, limit)
	}
	if s.weights != nil && s.tok.maxID >= len(s.weights) {
		return nil, fmt.Errorf("load static model: %w: tokenizer id %d but only %d weights", ErrBadModel, s.tok.maxID, len(s.weights))
	}
	return s, nil
}

// Name returns "static-v1/<hash16>/<dim>".
func (s *StaticEmbedder) Name() string {
	return fmt.Sprintf("static-v1/%s/%d", hex.EncodeToString(s.hash[:8]), s.dim)
}

// Dim returns the vector dimension.
func (s *StaticEmbedder) Dim() int { return s.dim }

// ModelHash is SHA-256 over the three model files, each prefixed by its
// length (uint64 little-endian; an absent config.json counts as empty).
func (s *StaticEmbedder) ModelHash() [32]byte { return s.hash }

// Tokenize returns the token ids of text as the embedder pools them
// (unknown tokens dropped, at most StaticMaxTokens).
func (s *StaticEmbedder) Tokenize(text string) []int {
	ids := s.tok.encode(text)
	out := ids[:0]
	for _, id := range ids {
		if id != s.tok.unk && len(out) < StaticMaxTokens {
			out = append(out, id)
		}
	}
	return out
}

// Local reports true (vector.LocalEmbedder): the model is read-only once
// loaded, and each call works in memory of its own.
func (s *StaticEmbedder) Local() bool { return true }

// Embed embeds each text; it fails only on a cancelled context.
func (s *StaticEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("embed texts: %w", err)
			}
		}
		out[i] = s.EmbedOne(t)
	}
	return out, nil
}

// EmbedOne embeds a single text.
func (s *StaticEmbedder) EmbedOne(text string) []float32 {
	ids := s.Tokenize(text)
	acc := make([]float64, s.dim)
	for _, id := range ids {
		row := int64(id)
		if s.mapping != nil {
			row = s.mapping[id]
		}
		scale := 1.0
		if s.weights != nil {
			scale = float64(s.weights[id])
		}
		r := s.emb[int(row)*s.dim : int(row+1)*s.dim]
		for j, x := range r {
			acc[j] += float64(float64(x) * scale) // explicit rounding: no FMA
		}
	}
	out := make([]float32, s.dim)
	if len(ids) == 0 {
		return out
	}
	n := float64(len(ids))
	for j := range acc {
		acc[j] /= n
	}
	if s.normalize {
		var ss float64
		for _, x := range acc {
			ss += float64(x * x)
		}
		if ss == 0 {
			return out
		}
		norm := math.Sqrt(ss)
		for j := range acc {
			acc[j] /= norm
		}
	}
	for j, x := range acc {
		out[j] = float32(x)
	}
	return out
}

// tensor is one entry of a safetensors file.
type tensor struct {
	name  string
	dtype string
	shape []int64
	data  []byte
}

var dtypeSize = map[string]int{"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1}

// parseSafetensors parses the safetensors format: an 8-byte little-endian
// header length N, N bytes of JSON {"name": {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data;
// offsets are relative to the end of the header.
func parseSafetensors(b []byte) (map[string]tensor, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("load static model: model.safetensors: %w: %s", ErrBadModel, fmt.Sprintf(format, a...))
	}
	if len(b) < 8 {
		return nil, bad("%d bytes", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxSafetensorsHeader || n > uint64(len(b)-8) {
		return nil, bad("header length %d of a %d-byte file", n, len(b))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		return nil, bad("header: %v", err)
	}
	data := b[8+n:]
	names := make([]string, 0, len(raw))
	for k := range raw {
		if k != "__metadata__" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := make(map[string]tensor, len(names))
	for _, k := range names {
		var ti struct {
			DType   string  `json:"dtype"`
			Shape   []int64 `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw[k], &ti); err != nil {
			return nil, bad("tensor %q: %v", k, err)
		}
		size, ok := dtypeSize[ti.DType]
		if !ok {
			return nil, bad("tensor %q: unsupported dtype %q", k, ti.DType)
		}
		if len(ti.Offsets) != 2 || ti.Offsets[0] < 0 || ti.Offsets[1] < ti.Offsets[0] || ti.Offsets[1] > int64(len(data)) {
			return nil, bad("tensor %q: data offsets %v outside %d data bytes", k, ti.Offsets, len(data))
		}
		count := int64(1)
		for _, d := range ti.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/d/int64(size)) {
				return nil, bad("tensor %q: shape %v", k, ti.Shape)
			}
			count *= d
		}
		if count*int64(size) != ti.Offsets[1]-ti.Offsets[0] {
			return nil, bad("tensor %q: shape %v of %s needs %d bytes, offsets give %d", k, ti.Shape, ti.DType, count*int64(size), ti.Offsets[1]-ti.Offsets[0])
		}
		out[k] = tensor{name: k, dtype: ti.DType, shape: ti.Shape, data: data[ti.Offsets[0]:ti.Offsets[1]]}
	}
	return out, nil
}

// floats decodes a float (or I8) tensor to float32.
func (t tensor) floats() ([]float32, error) {
	d := t.data
	switch t.dtype {
	case "F32":
		out := make([]float32, len(d)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		}
		return out, nil
	case "F64":
		out := make([]float32, len(d)/8)
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:])))
		}
		return out, nil
	case "F16":
		out := make([]float32, len(d)/2)
		for i := range out {
			out[i] = f16to32(binary.LittleEndian.Uint16(d[2*i:]))
		}
		return out, nil
	case "BF16":
		out := make([]float32, len(d)/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(d[2*i:])) << 16)
		}
		return out, nil
	case "I8":
		out := make([]float32, len(d))
		for i := range out {
			out[i] = float32(int8(d[i]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("load static model: tensor %q: %w: dtype %s is not a float type", t.name, ErrBadModel, t.dtype)
}

// ints decodes an integer tensor.
func (t tensor) ints() ([]int64, error) {
	d := t.data
	switch t.dtype {
	case "I32":
		out := make([]int64, len(d)/4)
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(d[4*i:])))
		}
		return out, nil
	case "I64":
		out := make([]int64, len(d)/8)
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(d[8*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("load static model: tensor %q: %w: dtype %s is not an integer type", t.name, ErrBadModel, t.dtype)
}

// f16to32 converts an IEEE 754 half-precision value exactly.
func f16to32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: frac × 2^-24, exact in float32.
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
