package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/unlimitedcontext/ucl"
	"github.com/unlimitedcontext/ucl/log"
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
	// e.g. https://api.openai.com/v1 ("" : the proxy answers 503); New
	// normalises it (NormalizeUpstream: a bare host gets /v1).
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
	// TZ is the IANA time zone of the days of time phrases ("yesterday")
	// for a query, context request or proxied chat that names none: the
	// server's [retrieval] timezone, as the CLI's ("": UTC; "Local": the
	// machine's). New refuses a zone it cannot load.
	TZ string
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
	up, err := NormalizeUpstream(o.Upstream)
	if err != nil {
		return nil, err
	}
	o.Upstream = up
	if _, err := time.LoadLocation(o.TZ); err != nil {
		return nil, fmt.Errorf("time zone %q: %w: want an IANA name such as Europe/Lisbon, UTC or Local", o.TZ, ErrBadOption)
	}
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

// ownRoutes are the TCP routes that are not engine methods: the health
// check, the proxy, and a read view over Get. Everything else comes from
// ucl.Methods.
var ownRoutes = []string{
	"GET /v1/health",
	"GET /v1/documents/{id}",
	"POST /v1/chat/completions",
	"GET /v1/models",
}

// Routes lists every REST route, "VERB /path", in the order the docs list
// them: the engine methods' (ucl.Methods) and then this package's own.
func Routes() []string {
	var out []string
	for i := range ucl.Methods {
		if r := ucl.Methods[i].REST; r != "" {
			out = append(out, r)
		}
	}
	return append(out, ownRoutes...)
}

func (s *Server) routes() {
	m := s.mux
	for i := range ucl.Methods {
		if ucl.Methods[i].REST != "" {
			m.HandleFunc(ucl.Methods[i].REST, s.methodRoute(&ucl.Methods[i]))
		}
	}
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/documents/{id}", s.document)
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

// methodOf returns the method a REST path takes ("" : no such path),
// matching it against Routes.
func methodOf(path string) string {
	for _, r := range Routes() {
		verb, pattern, _ := strings.Cut(r, " ")
		if matchPath(pattern, path) {
			return verb
		}
	}
	return ""
}

// matchPath reports whether path matches a route pattern whose {name}
// segments match any one non-empty segment.
func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") {
			if xs[i] == "" {
				return false
			}
		} else if p != xs[i] {
			return false
		}
	}
	return true
}

// rawBodyField names, per method, the request field a non-JSON body fills
// whole: POST /v1/append takes JSONL as it is.
var rawBodyField = map[string]string{"append": "jsonl"}

// methodRoute answers one engine method: a POST decodes its body as the
// method's request (strictly: an unknown field is refused), a GET starts
// from a zero request; then path wildcards and, for a GET, query
// parameters fill the fields of their JSON names. A path value and a body
// field of the same name must agree.
func (s *Server) methodRoute(m *ucl.Method) http.HandlerFunc {
	verb, pattern := m.RESTRoute()
	var wildcards []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, "{") {
			wildcards = append(wildcards, strings.Trim(seg, "{}"))
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		req := m.NewRequest()
		params := map[string][]string{}
		if verb == http.MethodPost {
			b, ok := s.readBody(w, r)
			if !ok {
				return
			}
			if field, raw := rawBodyField[m.Name]; raw && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				params[field] = []string{string(b)}
			} else if err := decodeStrict(b, req); err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", "decode request: "+err.Error(), nil)
				return
			}
		} else {
			for k, v := range r.URL.Query() {
				params[k] = v
			}
		}
		for _, name := range wildcards {
			params[name] = []string{r.PathValue(name)}
		}
		if err := ucl.FillRequest(req, params); err != nil {
			s.answer(w, r, nil, err)
			return
		}
		s.defaultTZ(req)
		res, err := m.Call(r.Context(), s.api, req, nil)
		s.answer(w, r, res, err)
	}
}

// defaultTZ gives a query or context request that names no time zone the
// server's (Options.TZ); the engine alone would read its days in UTC.
func (s *Server) defaultTZ(req any) {
	var sr *ucl.SearchRequest
	switch r := req.(type) {
	case *ucl.SearchRequest:
		sr = r
	case *ucl.ContextRequest:
		sr = &r.SearchRequest
	default:
		return
	}
	if sr.TZ == "" {
		sr.TZ = s.opts.TZ
	}
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

// statusOf maps an engine error to an HTTP status and an error code: the
// error's class (ucl.ClassOf) decides, and the code is the class's name.
func statusOf(err error) (int, string) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, log.ErrTooLarge) {
		return http.StatusRequestEntityTooLarge, "too_large"
	}
	c := ucl.ClassOf(err)
	switch c {
	case ucl.ClassBadRequest:
		return http.StatusBadRequest, string(c)
	case ucl.ClassNotFound:
		return http.StatusNotFound, string(c)
	case ucl.ClassConflict:
		return http.StatusConflict, string(c)
	case ucl.ClassForbidden:
		return http.StatusForbidden, string(c)
	case ucl.ClassUnavailable:
		return http.StatusServiceUnavailable, string(c)
	}
	return http.StatusInternalServerError, "internal"
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

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	st, err := s.api.Status(r.Context(), ucl.StatusRequest{})
	if err != nil {
		s.answer(w, r, nil, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "head_seq": st.HeadSeq})
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
