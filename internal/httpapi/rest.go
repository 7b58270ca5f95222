package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
	"github.com/unlimitedcontext/ucl/projections/timelines"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes     = 32 << 20
	DefaultMaxContextTokens = 2000
	DefaultRecencyWindow    = 6
	DefaultSimilarityTopK   = 8
	DefaultSession          = "proxy"
	DefaultUpstreamTimeout  = 5 * time.Minute
	DefaultBodyReadTimeout  = time.Minute
	// maxReplyBytes bounds a non-streamed upstream reply kept in memory.
	maxReplyBytes = 64 << 20
)

// Values of Options.InjectAs.
const (
	InjectSystem = "system"
	InjectUser   = "user"
)

// ErrBadOption is returned by New when an option has a value it does not
// know.
var ErrBadOption = errors.New("httpapi: bad option")

// ErrNoToken is returned by New without a bearer token.
var ErrNoToken = errors.New("httpapi: a TCP server needs a bearer token")

// Options configure New. Zero fields take the defaults above.
type Options struct {
	// Token is the bearer token every route requires (required).
	Token string
	// MCP, when set, is mounted at /mcp behind the same token.
	MCP http.Handler
	// MaxBodyBytes caps a request body (413 beyond).
	MaxBodyBytes int64
	// Upstream is the OpenAI-compatible base URL the proxy forwards to,
	// e.g. https://api.openai.com/v1 ("" : the proxy answers 503).
	Upstream string
	// UpstreamKey is sent upstream as the bearer token. It never appears
	// in logs, errors or the store.
	UpstreamKey string
	// UpstreamTimeout bounds the wait for the upstream's response headers,
	// and then for each read of its body: an upstream that sends its
	// headers and then nothing for that long is cut off (a stream is then
	// broken and stores nothing).
	UpstreamTimeout time.Duration
	// BodyReadTimeout bounds reading a request's body (a client that
	// sends its headers, with a valid token, and then stalls); default
	// DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// Transport carries upstream requests (default: a clone of
	// http.DefaultTransport).
	Transport http.RoundTripper
	// MaxContextTokens is the budget of the injected memory.
	MaxContextTokens int
	// RecencyWindow is how many of the session's last turns are considered.
	RecencyWindow int
	// SimilarityTopK is how many ranked chunks are considered.
	SimilarityTopK int
	// DefaultSession is the session of requests naming none.
	DefaultSession string
	// InjectAs is where memory goes: InjectSystem (default, a system
	// message) or InjectUser (prepended to the last user message, for
	// models that weigh system messages little or refuse several).
	InjectAs string
	// Log receives one line per request (default: discarded).
	Log io.Writer
}

// Server serves the REST API and the proxy over one ucl.API.
type Server struct {
	api  ucl.API
	opts Options
	log  *slog.Logger
	hc   *http.Client
	mux  *http.ServeMux
}

// New returns the server; Handler is what a listener serves.
func New(api ucl.API, o Options) (*Server, error) {
	if o.Token == "" {
		return nil, ErrNoToken
	}
	switch o.InjectAs {
	case "":
		o.InjectAs = InjectSystem
	case InjectSystem, InjectUser:
	default:
		return nil, fmt.Errorf("inject as %q: %w: want %s or %s", o.InjectAs, ErrBadOption, InjectSystem, InjectUser)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxContextTokens <= 0 {
		o.MaxContextTokens = DefaultMaxContextTokens
	}
	if o.RecencyWindow < 0 {
		o.RecencyWindow = 0
	} else if o.RecencyWindow == 0 {
		o.RecencyWindow = DefaultRecencyWindow
	}
	if o.SimilarityTopK <= 0 {
		o.SimilarityTopK = DefaultSimilarityTopK
	}
	if o.DefaultSession == "" {
		o.DefaultSession = DefaultSession
	}
	if o.UpstreamTimeout <= 0 {
		o.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = DefaultBodyReadTimeout
	}
	o.Upstream = strings.TrimRight(o.Upstream, "/")
	if o.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = o.UpstreamTimeout
		o.Transport = t
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	s := &Server{api: api, opts: o, log: slog.New(slog.NewTextHandler(logw, nil)),
		hc: &http.Client{Transport: o.Transport}, mux: http.NewServeMux()}
	s.routes()
	return s, nil
}

// Handler is the whole TCP API behind the bearer token.
func (s *Server) Handler() http.Handler {
	return RequireToken(s.opts.Token, bodyDeadline(s.opts.BodyReadTimeout, s.mux))
}

// bodyDeadline gives every request (REST, the proxy, /mcp) BodyReadTimeout
// to deliver its body. The deadline is lifted once the body is read to its
// end, so that a long streamed answer is not cut by it (the server's
// background read would hit it and cancel the request).
func bodyDeadline(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody && rc.SetReadDeadline(time.Now().Add(d)) == nil {
			r.Body = &liftOnEOF{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
		}
		h.ServeHTTP(w, r)
	})
}

// liftOnEOF calls lift once, when its body has been read to the end.
type liftOnEOF struct {
	io.ReadCloser
	lift func()
	done bool
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.lift()
	}
	return n, err
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.api.Status(r.Context(), ucl.StatusRequest{})
		s.answer(w, r, res, err)
	})
	m.HandleFunc("POST /v1/store", jsonRoute(s, s.api.Remember))
	m.HandleFunc("POST /v1/append", s.appendRoute)
	m.HandleFunc("POST /v1/query", jsonRoute(s, s.api.Search))
	m.HandleFunc("POST /v1/context", jsonRoute(s, s.api.Context))
	m.HandleFunc("POST /v1/index", jsonRoute(s, s.api.Index))
	m.HandleFunc("POST /v1/tombstone", jsonRoute(s, s.api.Tombstone))
	m.HandleFunc("GET /v1/sessions", s.sessions)
	m.HandleFunc("GET /v1/sessions/{id}", s.session)
	m.HandleFunc("GET /v1/documents/{id}", s.document)
	m.HandleFunc("POST /v1/items/{id}/edit", s.edit)
	m.HandleFunc("GET /v1/items/{id}/thread", s.thread)
	m.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	m.HandleFunc("GET /v1/models", s.models)
	if s.opts.MCP != nil {
		m.Handle("/mcp", s.opts.MCP)
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// A pattern with a method does not catch other methods when this
		// catch-all exists, so 405 is decided here.
		if m := methodOf(r.URL.Path); m != "" {
			w.Header().Set("Allow", m)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes %s, not %s", r.URL.Path, m, r.Method), nil)
			return
		}
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path), nil)
	})
}

// methodOf returns the method a REST path takes ("" : no such path).
func methodOf(path string) string {
	switch path {
	case "/v1/health", "/v1/status", "/v1/sessions", "/v1/models":
		return http.MethodGet
	case "/v1/store", "/v1/append", "/v1/query", "/v1/context", "/v1/tombstone", "/v1/chat/completions":
		return http.MethodPost
	}
	for _, p := range []string{"/v1/sessions/", "/v1/documents/"} {
		if rest, ok := strings.CutPrefix(path, p); ok && rest != "" && !strings.Contains(rest, "/") {
			return http.MethodGet
		}
	}
	if rest, ok := strings.CutPrefix(path, "/v1/items/"); ok {
		if id, verb, ok := strings.Cut(rest, "/"); ok && id != "" {
			switch verb {
			case "edit":
				return http.MethodPost
			case "thread":
				return http.MethodGet
			}
		}
	}
	return ""
}

// apiError is the JSON error body.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Codes   []string `json:"codes,omitempty"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // a client that went away has nothing to read it
}

func writeError(w http.ResponseWriter, status int, code, msg string, codes []string) {
	var e apiError
	e.Error.Code, e.Error.Message, e.Error.Codes = code, msg, codes
	writeJSON(w, status, e)
}

// statusOf maps an engine error to an HTTP status and an error code.
func statusOf(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, log.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, log.ErrIDConflict), errors.Is(err, ucl.ErrTombstoned):
		return http.StatusConflict, "conflict"
	case errors.Is(err, timelines.ErrNotFound), errors.Is(err, ucl.ErrNoDocument), errors.Is(err, ucl.ErrNoMatch),
		errors.Is(err, ucl.ErrUnknownItem):
		return http.StatusNotFound, "not_found"
	case isBadRequest(err):
		return http.StatusBadRequest, "bad_request"
	}
	return http.StatusInternalServerError, "internal"
}

// isBadRequest reports whether err blames the request (every sentinel the
// engine returns for input it refuses).
func isBadRequest(err error) bool {
	for _, c := range ucl.ErrorCodes(err) {
		switch {
		case c == "bad_request", c == "no_input", c == "no_targets", c == "ingest_bad_input", c == "edit_chunk",
			strings.HasPrefix(c, "query_") && c != "query_no_source":
			return true
		}
	}
	return false
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, res any, err error) {
	if err != nil {
		status, code := statusOf(err)
		if status == http.StatusInternalServerError {
			s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		writeError(w, status, code, err.Error(), ucl.ErrorCodes(err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// readBody reads a request body of at most MaxBodyBytes; a larger one is
// refused from its Content-Length before anything is read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large",
			fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, s.opts.MaxBodyBytes), nil)
		return nil, false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body is over the limit of %d bytes", s.opts.MaxBodyBytes), nil)
		} else if errors.As(err, &ne) && ne.Timeout() {
			writeError(w, http.StatusRequestTimeout, "body_timeout", fmt.Sprintf("the request body did not arrive within %s", s.opts.BodyReadTimeout), nil)
		} else {
			writeError(w, http.StatusBadRequest, "bad_request", "read request body: "+err.Error(), nil)
		}
		return nil, false
	}
	return b, true
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b)) // not a string copy of a body up to MaxBodyBytes
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON body")
	}
	return nil
}

// jsonRoute answers a POST whose body is the engine request as JSON.
func jsonRoute[Req, Res any](s *Server, f func(context.Context, Req) (*Res, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, ok := s.readBody(w, r)
		if !ok {
			return
		}
		var req Req
		if err := decodeStrict(b, &req); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "decode request: "+err.Error(), nil)
			return
		}
		res, err := f(r.Context(), req)
		s.answer(w, r, res, err)
	}
}

func (s *Server) appendRoute(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	req := ucl.AppendRequest{JSONL: string(b)}
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		if err := decodeStrict(b, &req); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "decode request: "+err.Error(), nil)
			return
		}
	}
	res, err := s.api.Append(r.Context(), req)
	s.answer(w, r, res, err)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	st, err := s.api.Status(r.Context(), ucl.StatusRequest{})
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "head_seq": st.HeadSeq})
}

// intParam reads a non-negative integer query parameter ("" is 0).
func intParam(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("query parameter %s=%q: want a non-negative integer: %w", name, v, ucl.ErrBadRequest)
	}
	return n, nil
}

func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit")
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	res, err := s.api.Sessions(r.Context(), ucl.SessionsRequest{Limit: limit})
	s.answer(w, r, res, err)
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	offset, err := intParam(r, "offset")
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	limit, err := intParam(r, "limit")
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	last, err := intParam(r, "last")
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	res, err := s.api.Session(r.Context(), ucl.SessionRequest{ID: r.PathValue("id"), Offset: offset, Limit: limit, Last: last})
	s.answer(w, r, res, err)
}

func (s *Server) document(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res, err := s.api.Get(r.Context(), ucl.GetRequest{IDs: []string{id}})
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	if len(res.Items) != 1 || !res.Items[0].Found {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no live chunk or document %q", id), nil)
		return
	}
	writeJSON(w, http.StatusOK, res.Items[0])
}

// edit appends a new version of the item named in the path; the body is
// the engine's EditRequest, whose id may be left out (it must match the
// path when given).
func (s *Server) edit(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req ucl.EditRequest
	if err := decodeStrict(b, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "decode request: "+err.Error(), nil)
		return
	}
	id := r.PathValue("id")
	if req.ID != "" && req.ID != id {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("body id %q differs from the path's %q", req.ID, id), nil)
		return
	}
	req.ID = id
	res, err := s.api.Edit(r.Context(), req)
	s.answer(w, r, res, err)
}

func (s *Server) thread(w http.ResponseWriter, r *http.Request) {
	depth, err := intParam(r, "depth")
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	res, err := s.api.Thread(r.Context(), ucl.ThreadRequest{ID: r.PathValue("id"), Depth: depth})
	s.answer(w, r, res, err)
}
