package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
)

// maxRequestBytes bounds one request body. Decoding a request costs a
// few times its size (the JSON text, the strings it holds, the events
// built from them), so it is refused from its declared length before it
// is read, and cut where it runs over; a Client sends a larger append in
// pieces (appendPieceBytes).
const maxRequestBytes = 64 << 20

// SocketPath returns the owner's socket path of the store in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// Handler returns the JSON API of api over HTTP (package doc: routes and
// bodies). Serve mounts it on the store's socket; other servers may mount
// it elsewhere.
func Handler(api API) http.Handler {
	mux := http.NewServeMux()
	for i := range Methods {
		m := &Methods[i]
		mux.HandleFunc("POST /v1/"+m.Name, func(w http.ResponseWriter, r *http.Request) {
			req := m.NewRequest()
			if !decodeRequest(w, r, req) {
				return
			}
			if m.Stream != "" {
				serveStream(w, r, api, m, req)
				return
			}
			res, err := m.Call(r.Context(), api, req, nil)
			writeJSON(w, response{Result: res, Error: toWire(err)})
		})
	}
	return mux
}

// serveStream answers a streamed method as NDJSON: one {field: item} line
// per item, then {"done": true} or {"error": …}.
func serveStream(w http.ResponseWriter, r *http.Request, api API, m *Method, req any) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_, err := m.Call(r.Context(), api, req, func(v any) error { return enc.Encode(map[string]any{m.Stream: v}) })
	if err != nil {
		enc.Encode(map[string]any{"error": toWire(err)})
		return
	}
	enc.Encode(map[string]any{"done": true})
}

type response struct {
	Result any        `json:"result"`
	Error  *wireError `json:"error,omitempty"`
}

func decodeRequest(w http.ResponseWriter, r *http.Request, req any) bool {
	if r.ContentLength > maxRequestBytes {
		writeJSON(w, response{Error: toWire(badRequest("request of %d bytes is over the limit of %d", r.ContentLength, maxRequestBytes))})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err := dec.Decode(req); err != nil {
		writeJSON(w, response{Error: toWire(badRequest("decode request: %v", err))})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // a client that went away has nothing to read it
}

// Serve answers the API on the store's socket (DIR/ucl.sock, mode 0600)
// to processes of this user only until ctx is done, then removes the
// socket. Only the owner serves: the
// Store holds the store lock, so a socket file already there was left by
// a dead owner and is replaced.
func (s *Store) Serve(ctx context.Context) error {
	path := SocketPath(s.st.Dir)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Mode 0600 from its first moment, and only this user's connections
	// (sockperm.go).
	ln, err := listenOwner(path)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: Handler(s)}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			srv.Shutdown(context.Background())
		case <-done:
		}
	}()
	err = srv.Serve(ln)
	close(done)
	<-stopped
	os.Remove(path)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// StartServing serves the API on the store's socket in the background,
// as Serve does, and returns the function that stops it: it stops
// accepting, waits for the requests in flight and returns Serve's error.
// Every owner that serves while doing something else (ucl serve, ucl mcp,
// sync push --watch) starts this way.
func (s *Store) StartServing() (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}
