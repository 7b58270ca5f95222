package vector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// Protocol selects the wire protocol of an HTTPEmbedder.
type Protocol string

const (
	// ProtocolOllama is Ollama's POST {base}/api/embed:
	// {"model","input":[...]} -> {"embeddings":[[...],...]}.
	ProtocolOllama Protocol = "ollama"
	// ProtocolOpenAI is the OpenAI-style POST {base}/v1/embeddings:
	// {"model","input":[...]} -> {"data":[{"index":i,"embedding":[...]}]}.
	ProtocolOpenAI Protocol = "openai"
)

// HTTPOptions configures an HTTPEmbedder.
type HTTPOptions struct {
	Protocol Protocol
	// BaseURL is the server root, e.g. "http://127.0.0.1:11434" (Ollama) or
	// "https://api.openai.com" (the "/v1/embeddings" path is appended).
	BaseURL string
	Model   string
	// Dim is the model's output dimension. It is part of Name (and so of the
	// cache key); every response is checked against it. Use DetectDim to ask
	// the server once.
	Dim int
	// APIKey, if set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Timeout bounds each request (default 60s).
	Timeout time.Duration
	// BatchSize is the number of texts per request (default 64).
	BatchSize int
	// Client is the HTTP client (default: a fresh http.Client).
	Client *http.Client
}

// HTTPEmbedder calls a remote embedding model. Remote models are not
// guaranteed deterministic; wrap it in a CachedEmbedder so a rebuild reuses
// the vectors computed the first time.
type HTTPEmbedder struct {
	o HTTPOptions
}

// maxResponse bounds a response body (a batch of 64 × 4096-d floats as JSON
// is ~5 MB).
const maxResponse = 256 << 20

// NewHTTPEmbedder validates opts and returns the embedder.
func NewHTTPEmbedder(opts HTTPOptions) (*HTTPEmbedder, error) {
	if opts.Protocol != ProtocolOllama && opts.Protocol != ProtocolOpenAI {
		return nil, fmt.Errorf("new http embedder: protocol %q: %w", opts.Protocol, ErrInvalidOptions)
	}
	if opts.BaseURL == "" || opts.Model == "" {
		return nil, fmt.Errorf("new http embedder: base URL and model are required: %w", ErrInvalidOptions)
	}
	if opts.Dim <= 0 || opts.Dim > MaxDim {
		return nil, fmt.Errorf("new http embedder: dim %d (use DetectDim): %w", opts.Dim, ErrInvalidOptions)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	return &HTTPEmbedder{o: opts}, nil
}

// DetectDim embeds one short probe text with opts (Dim ignored) and returns
// the dimension the server answers with.
func DetectDim(ctx context.Context, opts HTTPOptions) (int, error) {
	opts.Dim = 1
	e, err := NewHTTPEmbedder(opts)
	if err != nil {
		return 0, err
	}
	vs, err := e.call(ctx, []string{"dimension probe"}, false)
	if err != nil {
		return 0, err
	}
	return len(vs[0]), nil
}

// Name returns "<protocol>/<model>/<dim>".
func (e *HTTPEmbedder) Name() string {
	return fmt.Sprintf("%s/%s/%d", e.o.Protocol, e.o.Model, e.o.Dim)
}

// Dim returns the configured dimension.
func (e *HTTPEmbedder) Dim() int { return e.o.Dim }

// Embed sends texts in batches of BatchSize and returns one vector per text.
// Every failure wraps ErrEmbedder.
func (e *HTTPEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for lo := 0; lo < len(texts); lo += e.o.BatchSize {
		hi := min(lo+e.o.BatchSize, len(texts))
		vs, err := e.call(ctx, texts[lo:hi], true)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type ollamaResponse struct {
	Embeddings [][]float32 `json:"embeddings"`
}

type openAIResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (e *HTTPEmbedder) call(ctx context.Context, texts []string, checkDim bool) ([][]float32, error) {
	url := e.o.BaseURL + "/api/embed"
	if e.o.Protocol == ProtocolOpenAI {
		url = e.o.BaseURL + "/v1/embeddings"
	}
	body, err := json.Marshal(embedRequest{Model: e.o.Model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("encode embed request: %w: %w", ErrEmbedder, err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build embed request: %w: %w", ErrEmbedder, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.o.APIKey)
	}
	resp, err := e.o.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("post %s: timed out after %v: %w: %w", url, e.o.Timeout, ErrEmbedder, err)
		}
		return nil, fmt.Errorf("post %s: %w: %w", url, ErrEmbedder, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("read embed response from %s: %w: %w", url, ErrEmbedder, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("post %s: status %d: %.200s: %w", url, resp.StatusCode, bytes.TrimSpace(raw), ErrEmbedder)
	}
	if len(raw) > maxResponse {
		return nil, fmt.Errorf("read embed response from %s: larger than %d bytes: %w", url, maxResponse, ErrEmbedder)
	}
	var vs [][]float32
	switch e.o.Protocol {
	case ProtocolOllama:
		var r ollamaResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode embed response from %s: %w: %w", url, ErrEmbedder, err)
		}
		vs = r.Embeddings
	case ProtocolOpenAI:
		var r openAIResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode embed response from %s: %w: %w", url, ErrEmbedder, err)
		}
		vs = make([][]float32, len(r.Data))
		for _, d := range r.Data {
			if d.Index < 0 || d.Index >= len(vs) || vs[d.Index] != nil {
				return nil, fmt.Errorf("decode embed response from %s: bad or repeated index %d: %w", url, d.Index, ErrEmbedder)
			}
			vs[d.Index] = d.Embedding
		}
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("decode embed response from %s: got %d vectors for %d texts: %w", url, len(vs), len(texts), ErrEmbedder)
	}
	want := e.o.Dim
	if !checkDim {
		want = len(vs[0])
	}
	for i, v := range vs {
		if len(v) != want || want == 0 {
			return nil, fmt.Errorf("decode embed response from %s: vector %d has %d values, want %d: %w: %w", url, i, len(v), want, ErrEmbedder, ErrDimension)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("decode embed response from %s: vector %d: %w: %w", url, i, ErrEmbedder, ErrInvalidVector)
			}
		}
	}
	return vs, nil
}
